"""autopad.triton_launch: the compiled kernel's launcher after the JIT's first call, and every case that must
go back to the JIT (without a GPU: stand-ins for the JIT function, the compiled kernel and torch)."""

from __future__ import annotations

import pytest

from autopad.triton_launch import Desc, FastLaunch

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")


class _Tensor:
    def __init__(self, ptr: int) -> None:
        self.ptr = ptr

    def data_ptr(self) -> int:
        return self.ptr


class _Compiled:
    """Stands in for a CompiledKernel: ``run`` records the launcher's arguments."""

    def __init__(self) -> None:
        self.launches: list[tuple] = []
        self.function, self.packed_metadata = 0xF00, ("meta",)

    @property
    def run(self):
        return lambda *a: self.launches.append(a)


class _Jit:
    """Stands in for a JITFunction: ``kernel[grid](*args, **kw)`` records the call and returns the compiled
    kernel, as Triton 3.6 does."""

    def __init__(self, arg_names: list[str]) -> None:
        self.arg_names, self.calls, self.compiled = arg_names, [], _Compiled()

    def __getitem__(self, grid):
        def call(*args, **kw):
            self.calls.append((grid, args, kw))
            return self.compiled

        return call


@pytest.fixture
def cuda(monkeypatch):
    """torch's current-device and raw-stream entry points, and an empty launch-hook chain."""
    dev = {"d": 0}
    monkeypatch.setattr(torch._C, "_cuda_getDevice", lambda: dev["d"], raising=False)
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda d: 1000 + d, raising=False)
    monkeypatch.setattr(triton.knobs.runtime, "launch_enter_hook", triton.knobs.HookChain())
    monkeypatch.setattr(triton.knobs.runtime, "launch_exit_hook", triton.knobs.HookChain())
    return dev


NAMES = ["a", "b", "M", "K", "BLOCK", "num_warps"]


def test_first_call_goes_through_the_jit_and_later_calls_through_the_compiled_launcher(cuda):
    k = _Jit(NAMES)
    fl = FastLaunch(k, (7,), (33, 65, 128), {"num_warps": 4})
    a, b = _Tensor(4096), _Tensor(8192)
    assert not fl.ready and not fl.launch(a, b)
    fl.first(a, b)
    assert k.calls == [((7,), (a, b, 33, 65, 128), {"num_warps": 4})] and fl.ready
    a2 = _Tensor(1 << 20)
    assert fl.launch(a2, Desc(b, [65, 1], [1, 1]))
    (got,) = k.compiled.launches
    # grid, stream of the current device, function, metadata, no launch metadata or hooks, then the JIT's
    # bound arguments in the kernel's order: the tensors, the fixed integers, num_warps (a Gluon parameter)
    assert got[:9] == (7, 1, 1, 1000, 0xF00, ("meta",), None, None, None)
    assert got[9] is a2 and got[10].base is b and got[11:] == (33, 65, 128, 4)
    assert len(k.calls) == 1


@pytest.mark.parametrize("ptr", [4097, 4104])
def test_a_pointer_not_a_multiple_of_16_bytes_goes_to_the_jit(cuda, ptr):
    k = _Jit(NAMES)
    fl = FastLaunch(k, (1,), (1, 2, 3), {"num_warps": 4})
    fl.first(_Tensor(0), _Tensor(16))
    assert not fl.launch(_Tensor(0), Desc(_Tensor(ptr), [1], [1]))
    assert not k.compiled.launches


def test_unaligned_first_call_another_device_or_a_hook_never_use_the_fast_path(cuda, monkeypatch):
    k = _Jit(NAMES)
    fl = FastLaunch(k, (1,), (1, 2, 3), {"num_warps": 4})
    fl.first(_Tensor(8), _Tensor(16))  # compiled for an unaligned pointer: not adopted
    assert not fl.ready
    fl.first(_Tensor(16), _Tensor(32))
    assert fl.ready and fl.launch(_Tensor(0), _Tensor(0))
    cuda["d"] = 1
    assert not fl.launch(_Tensor(0), _Tensor(0))
    cuda["d"] = 0
    chain = triton.knobs.HookChain()
    chain.add(lambda *a: None)
    monkeypatch.setattr(triton.knobs.runtime, "launch_enter_hook", chain)
    assert not fl.launch(_Tensor(0), _Tensor(0))
    assert len(k.compiled.launches) == 1


def test_a_parameter_left_to_its_default_or_a_stand_in_kernel_is_not_adopted(cuda):
    k = _Jit(NAMES)
    fl = FastLaunch(k, (1,), (1, 2, 3), {})  # num_warps not passed: the JIT would fill it in
    fl.first(_Tensor(0), _Tensor(0))
    assert not fl.ready

    class _Rec:
        arg_names = NAMES

        def __getitem__(self, grid):
            return lambda *a, **kw: None  # an interpreter or recorder returns no compiled kernel

    fl = FastLaunch(_Rec(), (1,), (1, 2, 3), {"num_warps": 4})
    fl.first(_Tensor(0), _Tensor(0))
    assert not fl.ready
