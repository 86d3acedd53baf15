"""autopad.triton_launch: the compiled kernel's launcher after the JIT's first call, and every case that must
go back to the JIT (without a GPU: stand-ins for the JIT function, the compiled kernel and torch)."""

from __future__ import annotations

import types

import pytest

from autopad.triton_launch import FastLaunch

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")


class _Tensor:
    def __init__(self, ptr: int, shape=(4, 8), stride=(8, 1)) -> None:
        self.ptr, self.shape, self._stride = ptr, shape, stride

    def data_ptr(self) -> int:
        return self.ptr

    def stride(self):
        return self._stride


class _TD:
    """A host TensorDescriptor as the JIT's first call gets it."""

    def __init__(self, t: _Tensor) -> None:
        self.base, self.shape, self.strides, self.block_shape = t, t.shape, t.stride(), [2, 8]


class _Launcher:
    """Triton's CudaLauncher: ``launch`` wraps the C launcher (``launcher``) for a kernel that takes
    descriptors; ``__call__`` is the wrapped path (with scratch buffers)."""

    def __init__(self, wrapped: bool, scratch: int = 0) -> None:
        self.raw_calls: list[tuple] = []
        self.calls: list[tuple] = []
        self.global_scratch_size = scratch
        self.profile_scratch_size = 0
        self.launch_cooperative_grid, self.launch_pdl = False, True
        launcher = lambda *a: self.raw_calls.append(a)  # noqa: E731

        def inner(*a):
            return launcher(*a)

        self.launch = inner if wrapped else launcher

    def __call__(self, *a):
        self.calls.append(a)


class _Compiled:
    """Stands in for a CompiledKernel."""

    def __init__(self, wrapped: bool, scratch: int = 0, metas=None) -> None:
        self.launcher = _Launcher(wrapped, scratch)
        self.function, self.packed_metadata = 0xF00, ("meta",)
        self.metadata = types.SimpleNamespace(tensordesc_meta=metas)

    @property
    def run(self):
        return self.launcher


class _Jit:
    """Stands in for a JITFunction: ``kernel[grid](*args, **kw)`` records the call and returns the compiled
    kernel, as Triton 3.6 does."""

    def __init__(self, arg_names: list[str], **compiled) -> None:
        self.arg_names, self.calls, self.compiled = arg_names, [], _Compiled(**compiled)

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
HEAD = (False, True, None, None, ("meta",), None, None, None)  # coop, pdl, scratch x2, metadata, no hooks


def test_first_call_goes_through_the_jit_and_later_calls_straight_to_the_c_launcher(cuda):
    k = _Jit(NAMES, wrapped=False)
    fl = FastLaunch(k, (7,), (33, 65, 128), {"num_warps": 4})
    a, b = _Tensor(4096), _Tensor(8192)
    assert not fl.ready and not fl.launch(a, b)
    fl.first(a, b)
    assert k.calls == [((7,), (a, b, 33, 65, 128), {"num_warps": 4})] and fl.ready
    a2 = _Tensor(1 << 20)
    assert fl.launch(a2, b)
    (got,) = k.compiled.launcher.raw_calls
    # grid, the current device's stream, function, the launcher's head, then the JIT's bound arguments in
    # the kernel's order: the tensors, the fixed integers, num_warps (a Gluon constexpr parameter)
    assert got == (7, 1, 1, 1000, 0xF00, *HEAD, a2, b, 33, 65, 128, 4)
    assert len(k.calls) == 1 and not k.compiled.launcher.calls


def test_descriptors_are_expanded_once_per_address_shape_and_strides(cuda, monkeypatch):
    from triton.backends.nvidia import driver

    made = []

    def expand(arg, meta):
        made.append((arg.base.data_ptr(), tuple(arg.shape), tuple(arg.strides), meta))
        return [f"map@{arg.base.data_ptr()}", *arg.shape, *arg.strides]

    monkeypatch.setattr(driver, "make_tensordesc_arg", expand)
    k = _Jit(["a_desc", "x", "N", "num_warps"], wrapped=True, metas=[{"swizzle": 3}])
    fl = FastLaunch(k, (2, 3), (99,), {"num_warps": 8})
    a, x = _Tensor(4096), _Tensor(8192)
    fl.first(_TD(a), x)
    for _ in range(3):
        assert fl.launch(a, x)
    a2 = _Tensor(1 << 16, shape=(4, 16), stride=(16, 1))
    assert fl.launch(a2, x)
    assert made == [(4096, (4, 8), (8, 1), {"swizzle": 3}), (1 << 16, (4, 16), (16, 1), {"swizzle": 3})]
    raw = k.compiled.launcher.raw_calls
    assert raw[0] == (2, 3, 1, 1000, 0xF00, *HEAD, "map@4096", 4, 8, 8, 1, x, 99, 8)
    assert raw[3][13:18] == ("map@65536", 4, 16, 16, 1) and len(raw) == 4


def test_a_kernel_with_scratch_buffers_takes_triton_s_wrapper_with_stand_in_descriptors(cuda):
    k = _Jit(["a_desc", "N"], wrapped=True, scratch=128, metas=[None])
    fl = FastLaunch(k, (1,), (5,), {})
    a = _Tensor(4096)
    fl.first(_TD(a))
    assert fl.launch(a)
    ((*head, d, n),) = k.compiled.launcher.calls
    assert tuple(head) == (1, 1, 1, 1000, 0xF00, ("meta",), None, None, None) and n == 5
    assert d.base is a and tuple(d.shape) == (4, 8) and tuple(d.strides) == (8, 1) and d.padding == "zero"
    assert not k.compiled.launcher.raw_calls


@pytest.mark.parametrize("ptr", [4097, 4104])
def test_a_pointer_not_a_multiple_of_16_bytes_goes_to_the_jit(cuda, ptr):
    k = _Jit(NAMES, wrapped=False)
    fl = FastLaunch(k, (1,), (1, 2, 3), {"num_warps": 4})
    fl.first(_Tensor(0), _Tensor(16))
    assert not fl.launch(_Tensor(0), _Tensor(ptr))
    assert not k.compiled.launcher.raw_calls


def test_unaligned_first_call_another_device_or_a_hook_never_use_the_fast_path(cuda, monkeypatch):
    k = _Jit(NAMES, wrapped=False)
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
    assert len(k.compiled.launcher.raw_calls) == 1


def test_a_parameter_left_to_its_default_or_a_stand_in_kernel_is_not_adopted(cuda):
    k = _Jit(NAMES, wrapped=False)
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
