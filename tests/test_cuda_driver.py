"""autopad.cuda_driver: the direct driver launch, libcuda replaced by a C stub that records what it was
given: ``prepare_fixed``, ``prepare_launch``'s driver fire, the overlap attribute, no cuLaunchKernelEx."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from cuda_fakes import fake_cuda_env

from autopad import cuda_driver, cuda_launch


@pytest.fixture
def fake_cuda(monkeypatch):
    yield from fake_cuda_env(monkeypatch)


STUB = r"""
typedef struct { unsigned id; char pad[4]; int value[16]; } Attr;
typedef struct { unsigned d[7]; void* stream; Attr* attrs; unsigned nattrs; } Cfg;
unsigned last_dims[7]; void* last_stream; void* last_fn; void* last_params[16]; int want, calls, plain_calls;
unsigned last_nattrs, last_attr_id; int last_attr_value;
static int keep(void* f, void* stream, void** params) {
  last_fn = f; last_stream = stream; calls++;
  for (int i = 0; i < want && i < 16; i++) last_params[i] = params[i];
  return 0; }
#ifndef NO_EX
int cuLaunchKernelEx(const Cfg* c, void* f, void** params, void** extra) {
  for (int i = 0; i < 7; i++) last_dims[i] = c->d[i];
  last_nattrs = c->nattrs; last_attr_id = c->nattrs ? c->attrs[0].id : 0;
  last_attr_value = c->nattrs ? c->attrs[0].value[0] : 0;
  return c->d[0] ? keep(f, c->stream, params) : 700; }
#endif
int cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned smem, void* stream, void** params, void** extra) {
  unsigned d[7] = {gx, gy, gz, bx, by, bz, smem}; plain_calls++;
  for (int i = 0; i < 7; i++) last_dims[i] = d[i];
  return gx ? keep(f, stream, params) : 700; }
int cuKernelGetFunction(void** out, void* k) { *out = k; return 0; }
"""


class _Handle:
    def __init__(self, h):
        self.handle = h


def _build_stub(tmp_path, *flags):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("needs a C compiler for the driver stub")
    src, lib = tmp_path / "stub.c", tmp_path / f"libstub{len(flags)}.so"
    src.write_text(STUB)
    subprocess.run([cc, "-O1", "-shared", "-fPIC", *flags, str(src), "-o", str(lib)], check=True)
    return lib


@pytest.fixture
def stub_driver(fake_cuda, monkeypatch, tmp_path):
    """fake_cuda plus libcuda replaced by the recording stub: yields (view of the stub's records, state)."""
    import ctypes

    cc, state, torch = fake_cuda
    lib = _build_stub(tmp_path)
    monkeypatch.setattr(cuda_driver, "_LIBCUDA", str(lib))
    monkeypatch.setattr(cuda_driver, "_CU", None)
    monkeypatch.delenv("AUTOPAD_LAUNCH", raising=False)
    view = ctypes.CDLL(str(lib))

    def seen(kinds):
        """The last launch: (grid + block + smem, stream, function, argument values read as ``kinds``)."""
        dims = tuple((ctypes.c_uint * 7).in_dll(view, "last_dims"))
        ptrs = (ctypes.c_void_p * 16).in_dll(view, "last_params")
        vals = tuple(k.from_address(ptrs[i]).value for i, k in enumerate(kinds))
        stream = ctypes.c_void_p.in_dll(view, "last_stream").value or 0
        return dims, stream, ctypes.c_void_p.in_dll(view, "last_fn").value, vals

    ctypes.c_int.in_dll(view, "want").value = 16
    yield seen, state, view


def test_prepare_fixed_writes_only_pointers_and_stream_into_a_ready_block(stub_driver):
    import ctypes
    import threading

    seen, state, view = stub_driver
    kinds = (ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int32, ctypes.c_float)
    ctypes.c_int.in_dll(view, "want").value = len(kinds)
    go = cuda_driver.prepare_fixed(
        _Handle(0xABC0), (3, 2), 128, 1024, (0, 0, np.int32(7), np.float32(1.5)), device=0
    )
    assert go is not None and go.pointers == 2
    go(111, 222)
    assert seen(kinds) == ((3, 2, 1, 128, 1, 1, 1024), 1234, 0xABC0, (111, 222, 7, 1.5))
    state["stream"] = 99  # torch's current stream changed (torch.cuda.stream(s), graph capture)
    go(5, 6)
    assert seen(kinds)[1:] == (99, 0xABC0, (5, 6, 7, 1.5))
    mine = (ctypes.c_void_p * 16).in_dll(view, "last_params")[0]
    box = {}

    def other():
        go(9, 10)
        box["seen"] = seen(kinds)
        box["slot"] = (ctypes.c_void_p * 16).in_dll(view, "last_params")[0]

    th = threading.Thread(target=other)
    th.start()
    th.join()
    assert box["seen"][3] == (9, 10, 7, 1.5) and box["slot"] != mine  # each thread has its own block
    assert ctypes.c_uint64.from_address(mine).value == 5  # and this thread's is untouched
    bad = cuda_driver.prepare_fixed(_Handle(1), 0, 32, 0, (0,), device=0)  # the stub fails a launch of grid 0
    with pytest.raises(RuntimeError, match="700"):
        bad(1)


def test_prepare_fixed_switches_device_and_is_off_under_cudacore(stub_driver, monkeypatch):
    import ctypes

    torch = pytest.importorskip("torch")
    seen, state, view = stub_driver
    go = cuda_driver.prepare_fixed(_Handle(0x10), 1, 32, 0, (0, np.int64(3)), device=0)
    entered = []

    class Guard:
        def __init__(self, d):
            entered.append(d)
            self.d = d

        def __enter__(self):
            self.prev, state["dev"] = state["dev"], self.d

        def __exit__(self, *a):
            state["dev"] = self.prev

    monkeypatch.setattr(torch.cuda, "device", Guard)
    state["dev"] = 1
    go(77)
    assert entered == [0] and seen((ctypes.c_uint64, ctypes.c_int64))[3] == (77, 3) and state["dev"] == 1
    monkeypatch.setenv("AUTOPAD_LAUNCH", "cudacore")
    assert cuda_driver.prepare_fixed(_Handle(0x10), 1, 32, 0, (0,), device=0) is None


def test_prepare_launch_driver_fire_uses_the_stub_with_any_arguments(stub_driver):
    import ctypes

    torch = pytest.importorskip("torch")
    seen, state, view = stub_driver
    fire = cuda_launch.prepare_launch(_Handle(0x20), (4, 1, 1), 64, 0)
    assert fire.path == "driver"
    a, b = torch.zeros(4), torch.zeros(8)
    fire(a, b, np.int32(-5), np.float64(0.25))
    kinds = (ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int32, ctypes.c_double)
    assert seen(kinds) == ((4, 1, 1, 64, 1, 1, 0), 1234, 0x20, (a.data_ptr(), b.data_ptr(), -5, 0.25))
    fire((b, a, np.int32(6), np.float64(2.0)))  # one sequence argument is the argument list
    assert seen(kinds)[3] == (b.data_ptr(), a.data_ptr(), 6, 2.0)
    assert ctypes.c_int.in_dll(view, "plain_calls").value == 0  # cuLaunchKernelEx, not cuLaunchKernel
    with pytest.raises(TypeError, match="unsupported"):
        cuda_launch.prepare_launch(_Handle(0x20), 1, 32)("not a pointer")


def test_overlap_launches_carry_programmatic_stream_serialization(stub_driver):
    """``prepare_launch(..., overlap=True)``: one CUlaunchAttribute, id 6 (programmatic stream
    serialization), value 1, on every call; a plain launch carries none."""
    import ctypes

    torch = pytest.importorskip("torch")
    seen, state, view = stub_driver
    a = torch.zeros(4)

    def attrs():
        return tuple(ctypes.c_uint.in_dll(view, n).value for n in ("last_nattrs", "last_attr_id")) + (
            ctypes.c_int.in_dll(view, "last_attr_value").value,
        )

    over = cuda_launch.prepare_launch(_Handle(0x40), 8, 256, 0, overlap=True)
    plain = cuda_launch.prepare_launch(_Handle(0x41), 8, 256, 0)
    over(a, np.int32(3))
    assert attrs() == (1, 6, 1) and seen((ctypes.c_uint64, ctypes.c_int32))[2:] == (0x40, (a.data_ptr(), 3))
    plain(a, np.int32(4))
    assert attrs() == (0, 0, 0)
    over(a, np.int32(5))  # the attribute array lives as long as the launch state
    assert attrs() == (1, 6, 1)
    t = cuda_driver._attribute_type()  # cuda.h's layout: 72 bytes, the value union at offset 8
    assert ctypes.sizeof(t) == 72 and t.value.offset == 8 and t is cuda_driver._attribute_type()


def test_without_cuLaunchKernelEx_the_fire_uses_cuLaunchKernel_and_fixed_is_none(
    fake_cuda, monkeypatch, tmp_path
):
    import ctypes

    torch = fake_cuda[2]
    lib = _build_stub(tmp_path, "-DNO_EX")
    monkeypatch.setattr(cuda_driver, "_LIBCUDA", str(lib))
    monkeypatch.setattr(cuda_driver, "_CU", None)
    monkeypatch.delenv("AUTOPAD_LAUNCH", raising=False)
    assert cuda_driver.prepare_fixed(_Handle(0x30), 1, 32, 0, (0,), device=0) is None
    fire = cuda_launch.prepare_launch(_Handle(0x30), 2, 32, 0)
    x = torch.zeros(2)
    fire(x, np.int32(2))
    view = ctypes.CDLL(str(lib))
    assert ctypes.c_int.in_dll(view, "plain_calls").value == 1
    assert ctypes.c_void_p.in_dll(view, "last_fn").value == 0x30
