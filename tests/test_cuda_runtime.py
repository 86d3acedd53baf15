"""autopad.cuda_runtime: cache keys, the on-disk cubin cache, compile errors, and (GPU) a launch on torch."""

from __future__ import annotations

import shutil
import subprocess
import sys

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
    assert len(files) == 1 and files[0].read_bytes() == cubin
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
