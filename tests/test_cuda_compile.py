"""autopad.cuda_compile: cache folder and keys, includes, compiling with nvcc (memory and disk caches),
compile errors with their log and defines."""

from __future__ import annotations

import shutil

import pytest

from autopad import cubin_file, cuda_compile, cuda_launch

HAVE_COMPILER = bool(shutil.which("nvcc"))
needs_nvcc = pytest.mark.skipif(not HAVE_COMPILER, reason="needs nvcc")

TINY = 'extern "C" __global__ void k(int* o) { o[threadIdx.x] = VALUE; }\n'


def test_cache_dir_follows_env(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOPAD_CACHE_DIR", str(tmp_path))
    assert cuda_compile.cache_dir() == tmp_path / "cubin"


def test_cache_key_changes_with_every_input():
    base = cuda_compile.cache_key("src", {"A": 1}, "sm_90", "nvrtc-13.0")
    assert base == cuda_compile.cache_key("src", {"A": 1}, "sm_90", "nvrtc-13.0")
    assert base != cuda_compile.cache_key("src2", {"A": 1}, "sm_90", "nvrtc-13.0")
    assert base != cuda_compile.cache_key("src", {"A": 2}, "sm_90", "nvrtc-13.0")
    assert base != cuda_compile.cache_key("src", {"A": 1}, "sm_80", "nvrtc-13.0")
    assert base != cuda_compile.cache_key("src", {"A": 1}, "sm_90", "nvrtc-12.9")
    assert cuda_compile.cache_key("s", {"A": 1, "B": 2}, "sm_90", "v") == cuda_compile.cache_key(
        "s", {"B": 2, "A": 1}, "sm_90", "v"
    )


def test_expand_includes_inlines_common_header():
    src = cuda_compile.expand_includes('#include "common.cuh"\nint x;\n')
    assert "AP_SMEM_OFF" in src and '#include "common.cuh"' not in src


@needs_nvcc
def test_compile_caches_in_memory_and_on_disk(monkeypatch):
    monkeypatch.setenv("AUTOPAD_CUDA_COMPILER", "nvcc")
    cubin = cuda_compile.compile_cubin(TINY, {"VALUE": 7}, "sm_90", name="k")
    assert cubin[:4] == b"\x7fELF"
    files = list(cuda_compile.cache_dir().glob("*.cubin"))
    assert len(files) == 1 and cubin_file.read_cubin(files[0]) == cubin
    assert files[0].read_bytes().startswith(cubin_file.CUBIN_MAGIC)  # stored under the checked header
    assert files[0].stat().st_mode & 0o777 == 0o600 and cuda_compile.cache_dir().stat().st_mode & 0o077 == 0
    assert not list(cuda_compile.cache_dir().glob("*.tmp"))
    cuda_compile._MEM_CUBINS.clear()  # a fresh process: the disk copy must serve it without compiling

    def boom(*a, **k):
        raise AssertionError("compiled again despite the disk cache")

    monkeypatch.setattr(cuda_compile, "_compile_nvcc", boom)
    assert cuda_compile.compile_cubin(TINY, {"VALUE": 7}, "sm_90", name="k") == cubin


@needs_nvcc
def test_compile_error_carries_log_and_defines(monkeypatch):
    monkeypatch.setenv("AUTOPAD_CUDA_COMPILER", "nvcc")
    with pytest.raises(cuda_compile.CompileError) as info:
        cuda_compile.compile_cubin(TINY.replace("VALUE;", "VALUE +;"), {"VALUE": 3}, "sm_90", name="k")
    err = info.value
    assert err.defines == {"VALUE": 3}
    assert "error" in err.log.lower()
    assert "VALUE=3" in str(err)


@pytest.mark.gpu
def test_nvrtc_compile_error_is_compile_error():
    with pytest.raises(cuda_compile.CompileError) as info:
        cuda_launch.load_kernel('extern "C" __global__ void bad() { int x = ; }', "bad", {"X": 1})
    assert info.value.defines == {"X": 1} and info.value.log


@pytest.mark.skipif(not HAVE_COMPILER, reason="needs nvcc")
def test_compile_without_defines():
    src = 'extern "C" __global__ void k(int* o) { o[0] = 1; }\n'
    assert (
        cuda_compile.compile_cubin(src, {}, "sm_90")[:4] == b"\x7fELF"
    )  # cuda.core rejects an empty macro list


def test_cache_dir_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("AUTOPAD_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cuda_compile.cache_dir() == tmp_path / "xdg" / "autopad" / "cubin"
