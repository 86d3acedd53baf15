"""autopad.cuda_runtime: cache keys, the checked on-disk cubin cache, compile errors, the prepared launch's
CPU-side path (cuda.core mocked), and (GPU) launches on torch's streams."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

from autopad import cuda_runtime as rt

HAVE_COMPILER = bool(shutil.which("nvcc"))
needs_nvcc = pytest.mark.skipif(not HAVE_COMPILER, reason="needs nvcc")

TINY = 'extern "C" __global__ void k(int* o) { o[threadIdx.x] = VALUE; }\n'


def test_import_autopad_does_not_load_cuda():
    code = "import sys, autopad; print(any(m.startswith(('cuda', 'torch')) for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_cache_dir_follows_env(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOPAD_CACHE_DIR", str(tmp_path))
    assert rt.cache_dir() == tmp_path / "cubin"


def test_cache_key_changes_with_every_input():
    base = rt.cache_key("src", {"A": 1}, "sm_90", "nvrtc-13.0")
    assert base == rt.cache_key("src", {"A": 1}, "sm_90", "nvrtc-13.0")
    assert base != rt.cache_key("src2", {"A": 1}, "sm_90", "nvrtc-13.0")
    assert base != rt.cache_key("src", {"A": 2}, "sm_90", "nvrtc-13.0")
    assert base != rt.cache_key("src", {"A": 1}, "sm_80", "nvrtc-13.0")
    assert base != rt.cache_key("src", {"A": 1}, "sm_90", "nvrtc-12.9")
    assert rt.cache_key("s", {"A": 1, "B": 2}, "sm_90", "v") == rt.cache_key(
        "s", {"B": 2, "A": 1}, "sm_90", "v"
    )


def test_expand_includes_inlines_common_header():
    src = rt.expand_includes('#include "common.cuh"\nint x;\n')
    assert "AP_SMEM_OFF" in src and '#include "common.cuh"' not in src


@needs_nvcc
def test_compile_caches_in_memory_and_on_disk(monkeypatch):
    monkeypatch.setenv("AUTOPAD_CUDA_COMPILER", "nvcc")
    cubin = rt.compile_cubin(TINY, {"VALUE": 7}, "sm_90", name="k")
    assert cubin[:4] == b"\x7fELF"
    files = list(rt.cache_dir().glob("*.cubin"))
    assert len(files) == 1 and rt.read_cubin(files[0]) == cubin
    assert files[0].read_bytes().startswith(rt.CUBIN_MAGIC)  # stored under the checked header
    assert files[0].stat().st_mode & 0o777 == 0o600 and rt.cache_dir().stat().st_mode & 0o077 == 0
    assert not list(rt.cache_dir().glob("*.tmp"))
    rt._MEM_CUBINS.clear()  # a fresh process: the disk copy must serve it without compiling

    def boom(*a, **k):
        raise AssertionError("compiled again despite the disk cache")

    monkeypatch.setattr(rt, "_compile_nvcc", boom)
    assert rt.compile_cubin(TINY, {"VALUE": 7}, "sm_90", name="k") == cubin


@needs_nvcc
def test_compile_error_carries_log_and_defines(monkeypatch):
    monkeypatch.setenv("AUTOPAD_CUDA_COMPILER", "nvcc")
    with pytest.raises(rt.CompileError) as info:
        rt.compile_cubin(TINY.replace("VALUE;", "VALUE +;"), {"VALUE": 3}, "sm_90", name="k")
    err = info.value
    assert err.defines == {"VALUE": 3}
    assert "error" in err.log.lower()
    assert "VALUE=3" in str(err)


@pytest.mark.gpu
def test_nvrtc_launch_on_torch_stream():
    import numpy as np
    import torch

    src = 'extern "C" __global__ void fill(int* o, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x;'
    src += " if (i < n) o[i] = i * VALUE; }\n"
    k = rt.load_kernel(src, "fill", {"VALUE": 3})
    out = torch.full((1000,), -1, dtype=torch.int32, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        rt.launch(k, 4, 256, (out, np.int32(1000)))
    s.synchronize()
    assert torch.equal(out, torch.arange(1000, device="cuda", dtype=torch.int32) * 3)


@pytest.mark.gpu
def test_nvrtc_compile_error_is_compile_error():
    with pytest.raises(rt.CompileError) as info:
        rt.load_kernel('extern "C" __global__ void bad() { int x = ; }', "bad", {"X": 1})
    assert info.value.defines == {"X": 1} and info.value.log


@pytest.mark.gpu
def test_large_dynamic_shared_memory():
    import numpy as np
    import torch

    src = (
        'extern "C" __global__ void big(int* o, int n) { extern __shared__ int s[];'
        " for (int i = threadIdx.x; i < n; i += blockDim.x) s[i] = i;"
        " __syncthreads(); if (threadIdx.x == 0) o[0] = s[n - 1]; }\n"
    )
    k = rt.load_kernel(src, "big", {})
    n = 150 * 1024 // 4
    out = torch.zeros(1, dtype=torch.int32, device="cuda")
    rt.launch(k, 1, 256, (out, np.int32(n)), shmem_bytes=n * 4)
    torch.cuda.synchronize()
    assert out.item() == n - 1


@pytest.mark.skipif(not HAVE_COMPILER, reason="needs nvcc")
def test_compile_without_defines():
    src = 'extern "C" __global__ void k(int* o) { o[0] = 1; }\n'
    assert rt.compile_cubin(src, {}, "sm_90")[:4] == b"\x7fELF"  # cuda.core rejects an empty macro list


# ---- the checked cubin cache ------------------------------------------------------------------------------

PAYLOAD = b"\x7fELF" + bytes(range(256)) * 4


def _compiles(monkeypatch, payload=PAYLOAD):
    """compile_cubin with a fake compiler that counts its calls (no nvcc needed)."""
    calls = []

    def fake(source, defines, arch, name):
        calls.append(name)
        return payload

    monkeypatch.setattr(rt, "_backend", lambda: "nvcc")
    monkeypatch.setattr(rt, "compiler_version", lambda backend=None: "fake-1")
    monkeypatch.setattr(rt, "_compile_nvcc", fake)
    rt._MEM_CUBINS.clear()
    return calls


def _only_file():
    (f,) = rt.cache_dir().glob("*.cubin")
    return f


def test_cubin_round_trip_and_tampering_is_refused(monkeypatch):
    calls = _compiles(monkeypatch)
    assert rt.compile_cubin(TINY, {"VALUE": 1}) == PAYLOAD and len(calls) == 1
    f = _only_file()
    rt._MEM_CUBINS.clear()
    assert rt.compile_cubin(TINY, {"VALUE": 1}) == PAYLOAD and len(calls) == 1  # served from disk
    data = bytearray(f.read_bytes())
    data[-1] ^= 0xFF  # one flipped bit in the machine code
    f.write_bytes(bytes(data))
    rt._MEM_CUBINS.clear()
    with pytest.warns(UserWarning, match="sha256 does not match"):
        assert rt.compile_cubin(TINY, {"VALUE": 1}) == PAYLOAD
    assert len(calls) == 2  # refused, compiled again, and the good copy replaced the bad one
    assert rt.read_cubin(f) == PAYLOAD


def test_cubin_header_must_match_payload_not_just_exist():
    assert rt.unwrap_cubin(rt.CUBIN_MAGIC + b"\0" * 32 + PAYLOAD) is None
    good = rt.CUBIN_MAGIC + __import__("hashlib").sha256(PAYLOAD).digest() + PAYLOAD
    assert rt.unwrap_cubin(good) == PAYLOAD
    assert rt.unwrap_cubin(good[:20]) is None


def test_symlinked_cubin_is_refused_and_replaced(monkeypatch, tmp_path):
    calls = _compiles(monkeypatch)
    rt.compile_cubin(TINY, {"VALUE": 2})
    f = _only_file()
    planted = tmp_path / "elsewhere.cubin"
    planted.write_bytes(f.read_bytes())  # a valid file, but reached through a link
    f.unlink()
    f.symlink_to(planted)
    rt._MEM_CUBINS.clear()
    with pytest.warns(UserWarning, match="cannot be opened safely|not a regular file"):
        rt.compile_cubin(TINY, {"VALUE": 2})
    assert len(calls) == 2
    assert not f.is_symlink() and rt.read_cubin(f) == PAYLOAD  # the link itself was replaced
    assert planted.read_bytes().startswith(rt.CUBIN_MAGIC)  # and its target left alone


def test_group_writable_or_foreign_cubin_is_refused(monkeypatch):
    calls = _compiles(monkeypatch)
    rt.compile_cubin(TINY, {"VALUE": 3})
    f = _only_file()
    os.chmod(f, 0o664)
    rt._MEM_CUBINS.clear()
    with pytest.warns(UserWarning, match="writable by group or others"):
        rt.compile_cubin(TINY, {"VALUE": 3})
    assert len(calls) == 2 and f.stat().st_mode & 0o777 == 0o600
    real_uid = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: real_uid + 1)  # as if another user owned the file
    rt._MEM_CUBINS.clear()
    with pytest.warns(UserWarning, match="owned by uid"):
        rt.compile_cubin(TINY, {"VALUE": 3})
    assert len(calls) == 3


def test_legacy_unheadered_cubin_is_recompiled_quietly(monkeypatch, recwarn):
    calls = _compiles(monkeypatch)
    rt.compile_cubin(TINY, {"VALUE": 4})
    f = _only_file()
    f.write_bytes(PAYLOAD)  # what an autopad before the header wrote
    os.chmod(f, 0o600)
    rt._MEM_CUBINS.clear()
    assert rt.compile_cubin(TINY, {"VALUE": 4}) == PAYLOAD and len(calls) == 2
    assert not [w for w in recwarn if "cubin" in str(w.message)]


def test_cache_dir_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("AUTOPAD_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert rt.cache_dir() == tmp_path / "xdg" / "autopad" / "cubin"


# ---- the prepared launch, with cuda.core and torch's CUDA entry points mocked ------------------------------


class _FakeCC:
    """Stands in for cuda.core: records LaunchConfigs, streams and launches."""

    def __init__(self):
        self.launches, self.configs, self.streams, self.current = [], [], [], []
        cc = self

        class Device:
            def __init__(self, d):
                self.d = d

            def set_current(self):
                cc.current.append(self.d)

            def create_stream(self, obj):
                cc.streams.append(obj)
                return ("stream", obj)

        class LaunchConfig:
            def __init__(self, grid, block, shmem_size):
                cc.configs.append((grid, block, shmem_size))
                self.args = (grid, block, shmem_size)

        self.Device, self.LaunchConfig = Device, LaunchConfig

    def launch(self, stream, cfg, kernel, *args):
        self.launches.append((stream, cfg.args, kernel, args))


@pytest.fixture
def fake_cuda(monkeypatch):
    torch = pytest.importorskip("torch")
    cc = _FakeCC()
    state = {"dev": 0, "stream": 1234}
    monkeypatch.setattr(rt, "_cuda_core", lambda: cc)
    monkeypatch.setattr(
        rt, "_torch_hooks", lambda: (lambda: state["dev"], lambda d: state["stream"], torch.Tensor)
    )
    monkeypatch.setattr(
        rt, "_stream_for", lambda dev, ptr: rt._STREAMS.setdefault(dev, {}).setdefault(ptr, ("s", ptr))
    )
    monkeypatch.setattr(rt, "_STREAMS", {})
    rt._CURRENT.device = None
    yield cc, state, torch
    rt._CURRENT.device = None


def test_prepare_launch_does_the_fixed_work_once(fake_cuda):
    cc, state, torch = fake_cuda
    fire = rt.prepare_launch("K", (3, 2, 1), 128, 1024)
    assert cc.configs == [((3, 2, 1), 128, 1024)] and cc.current == [0]
    a, b = torch.zeros(4), torch.zeros(8)
    fire(a, b, np.int32(5))
    fire((a, b, np.int32(6)))  # one sequence argument is the argument list
    assert len(cc.configs) == 1 and cc.current == [0]  # nothing re-done per call
    (s1, cfg, k, args1), (_, _, _, args2) = cc.launches
    assert s1 == ("s", 1234) and cfg == ((3, 2, 1), 128, 1024) and k == "K"
    assert args1 == (a.data_ptr(), b.data_ptr(), np.int32(5)) and args2[2] == np.int32(6)
    state["stream"] = 99  # torch's current stream changed (torch.cuda.stream(s), graph capture)
    fire(a)
    assert cc.launches[-1][0] == ("s", 99)


def test_prepare_launch_switches_device_when_another_is_current(fake_cuda, monkeypatch):
    cc, state, torch = fake_cuda
    fire = rt.prepare_launch("K", 1, 32, device=0)
    entered = []

    class Guard:
        def __init__(self, d):
            entered.append(d)

        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

    monkeypatch.setattr(torch.cuda, "device", Guard)
    state["dev"] = 1  # the caller made device 1 current
    fire(torch.zeros(2))
    assert entered == [0] and len(cc.launches) == 1 and cc.current[-1] == 0


def test_prepared_launch_cpu_side_cost(fake_cuda):
    """The Python path up to the launch (launch mocked): what a call adds on the host."""
    cc, state, torch = fake_cuda
    fire = rt.prepare_launch("K", (64, 64, 1), 256)
    x, y = torch.zeros(64, 64), torch.zeros(64, 64)
    args = (y, x, np.int32(64), np.int32(64), np.int32(1), np.int32(1))
    cc.launch = lambda *a: None
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(2000):
            fire(*args)
        best = min(best, (time.perf_counter() - t) / 2000 * 1e6)
    print(f"prepared launch, CPU side: {best:.2f} us per call")
    assert best < 20  # ~1-3 us on an idle core; generous for a loaded CI machine


# ---- the direct driver path, libcuda replaced by a C stub that records what it was given -----------------

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
    monkeypatch.setattr(rt, "_LIBCUDA", str(lib))
    monkeypatch.setattr(rt, "_CU", None)
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
    go = rt.prepare_fixed(_Handle(0xABC0), (3, 2), 128, 1024, (0, 0, np.int32(7), np.float32(1.5)), device=0)
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
    bad = rt.prepare_fixed(_Handle(1), 0, 32, 0, (0,), device=0)  # the stub fails a launch of grid 0
    with pytest.raises(RuntimeError, match="700"):
        bad(1)


def test_prepare_fixed_switches_device_and_is_off_under_cudacore(stub_driver, monkeypatch):
    import ctypes

    torch = pytest.importorskip("torch")
    seen, state, view = stub_driver
    go = rt.prepare_fixed(_Handle(0x10), 1, 32, 0, (0, np.int64(3)), device=0)
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
    assert rt.prepare_fixed(_Handle(0x10), 1, 32, 0, (0,), device=0) is None


def test_prepare_launch_driver_fire_uses_the_stub_with_any_arguments(stub_driver):
    import ctypes

    torch = pytest.importorskip("torch")
    seen, state, view = stub_driver
    fire = rt.prepare_launch(_Handle(0x20), (4, 1, 1), 64, 0)
    assert fire.path == "driver"
    a, b = torch.zeros(4), torch.zeros(8)
    fire(a, b, np.int32(-5), np.float64(0.25))
    kinds = (ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int32, ctypes.c_double)
    assert seen(kinds) == ((4, 1, 1, 64, 1, 1, 0), 1234, 0x20, (a.data_ptr(), b.data_ptr(), -5, 0.25))
    fire((b, a, np.int32(6), np.float64(2.0)))  # one sequence argument is the argument list
    assert seen(kinds)[3] == (b.data_ptr(), a.data_ptr(), 6, 2.0)
    assert ctypes.c_int.in_dll(view, "plain_calls").value == 0  # cuLaunchKernelEx, not cuLaunchKernel
    with pytest.raises(TypeError, match="unsupported"):
        rt.prepare_launch(_Handle(0x20), 1, 32)("not a pointer")


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

    over = rt.prepare_launch(_Handle(0x40), 8, 256, 0, overlap=True)
    plain = rt.prepare_launch(_Handle(0x41), 8, 256, 0)
    over(a, np.int32(3))
    assert attrs() == (1, 6, 1) and seen((ctypes.c_uint64, ctypes.c_int32))[2:] == (0x40, (a.data_ptr(), 3))
    plain(a, np.int32(4))
    assert attrs() == (0, 0, 0)
    over(a, np.int32(5))  # the attribute array lives as long as the launch state
    assert attrs() == (1, 6, 1)
    t = rt._attribute_type()  # cuda.h's layout: 72 bytes, the value union at offset 8
    assert ctypes.sizeof(t) == 72 and t.value.offset == 8 and t is rt._attribute_type()


def test_without_cuLaunchKernelEx_the_fire_uses_cuLaunchKernel_and_fixed_is_none(
    fake_cuda, monkeypatch, tmp_path
):
    import ctypes

    torch = fake_cuda[2]
    lib = _build_stub(tmp_path, "-DNO_EX")
    monkeypatch.setattr(rt, "_LIBCUDA", str(lib))
    monkeypatch.setattr(rt, "_CU", None)
    monkeypatch.delenv("AUTOPAD_LAUNCH", raising=False)
    assert rt.prepare_fixed(_Handle(0x30), 1, 32, 0, (0,), device=0) is None
    fire = rt.prepare_launch(_Handle(0x30), 2, 32, 0)
    x = torch.zeros(2)
    fire(x, np.int32(2))
    view = ctypes.CDLL(str(lib))
    assert ctypes.c_int.in_dll(view, "plain_calls").value == 1
    assert ctypes.c_void_p.in_dll(view, "last_fn").value == 0x30


FILL = (
    'extern "C" __global__ void fill(int* o, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x;'
    " if (i < n) o[i] = i * VALUE; }\n"
)


@pytest.mark.gpu
def test_prepared_launch_on_a_side_stream_and_in_a_cuda_graph():
    import torch

    k = rt.load_kernel(FILL, "fill", {"VALUE": 5})
    fire = rt.prepare_launch(k, 4, 256)
    want = torch.arange(1000, device="cuda", dtype=torch.int32) * 5
    out = torch.full((1000,), -1, dtype=torch.int32, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fire(out, np.int32(1000))
    s.synchronize()
    assert torch.equal(out, want)
    g = torch.cuda.CUDAGraph()
    out.fill_(-1)
    torch.cuda.synchronize()
    with torch.cuda.graph(g):
        fire((out, np.int32(1000)))
    torch.cuda.synchronize()
    out.fill_(-1)
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, want)


@pytest.mark.gpu
def test_prepared_launch_with_large_dynamic_shared_memory_and_its_host_cost():
    import torch

    src = (
        'extern "C" __global__ void big(int* o, int n) { extern __shared__ int s[];'
        " for (int i = threadIdx.x; i < n; i += blockDim.x) s[i] = i;"
        " __syncthreads(); if (threadIdx.x == 0) o[0] = s[n - 1]; }\n"
    )
    n = 150 * 1024 // 4
    fire = rt.prepare_launch(rt.load_kernel(src, "big", {}), 1, 256, n * 4)
    out = torch.zeros(1, dtype=torch.int32, device="cuda")
    fire(out, np.int32(n))
    torch.cuda.synchronize()
    assert out.item() == n - 1
    tiny = rt.prepare_launch(rt.load_kernel(FILL, "fill", {"VALUE": 1}), 1, 32)
    o = torch.zeros(32, dtype=torch.int32, device="cuda")
    for _ in range(100):
        tiny(o, np.int32(32))
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(2000):
        tiny(o, np.int32(32))
    torch.cuda.synchronize()
    us = (time.perf_counter() - t) / 2000 * 1e6
    print(f"prepared launch of a 1-block kernel, back to back: {us:.2f} us per call")
    assert us < 20
