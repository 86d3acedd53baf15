"""Run-time CUDA: compile kernel templates with NVRTC (through ``cuda.core``), cache, launch on torch tensors.

Why: autopad benchmarks the same CUDA template under many layouts, each a different set of ``#define``s
(PAD, SW_VEC, ...). Compiling at run time with NVRTC needs no toolchain on the user's machine beyond the
driver and cuda-python, and caching the cubins (in memory and on disk, keyed by everything that changes
the machine code) makes a re-run of the tuner nearly free.

Nothing here is imported by ``import autopad``: ``cuda.core``, ``cuda.bindings`` and torch load lazily,
inside the functions that need them. Where NVRTC's library is missing (a CI box with only ``nvcc``),
``compile_cubin`` falls back to the ``nvcc`` executable, so the same cache and error path can be tested
without a GPU; set ``AUTOPAD_CUDA_COMPILER=nvcc`` or ``=nvrtc`` to force one.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "CompileError",
    "cache_dir",
    "cache_key",
    "compiler_version",
    "compile_cubin",
    "expand_includes",
    "load_kernel",
    "launch",
    "KERNEL_DIR",
]

KERNEL_DIR = Path(__file__).resolve().parent.parent / "kernels" / "cuda"
if not KERNEL_DIR.is_dir():  # installed wheel: kernels ship as autopad/kernels
    KERNEL_DIR = Path(__file__).resolve().parent / "kernels" / "cuda"

_LOCK = threading.Lock()
_MEM_CUBINS: dict[str, bytes] = {}
_MEM_KERNELS: dict[tuple[str, str, int], Any] = {}
_STREAMS: dict[tuple[int, int], Any] = {}
_CURRENT = threading.local()  # which device this thread has made current for cuda.core
_SMEM_RAISED: dict[tuple[int, int], int] = {}
_IMPORT_LOCK = threading.Lock()
_CC: Any = None  # the cuda.core module, once imported
_INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$', re.MULTILINE)


def _cuda_core() -> Any:
    """``cuda.core``, imported once under a lock. Its package picks a CUDA-major submodule at import; the
    benchmark builds in eight threads at once, and a thread that arrived while another was importing it
    saw the half-made module ("cannot import name 'Device' from 'cuda.core.cu13'", seen on the H200)."""
    global _CC
    if _CC is None:
        with _IMPORT_LOCK:
            import cuda.core

            _CC = cuda.core
    return _CC


class CompileError(RuntimeError):
    """A kernel failed to compile. ``log`` is the compiler's output, ``defines`` the constants used."""

    def __init__(self, name: str, log: str, defines: Mapping[str, object], compiler: str) -> None:
        self.name = name
        self.log = log
        self.defines = dict(defines)
        self.compiler = compiler
        consts = " ".join(f"{k}={v}" for k, v in sorted(self.defines.items()))
        super().__init__(f"{compiler} failed to compile {name} with [{consts}]:\n{log.strip()}")


def cache_dir() -> Path:
    """Where cubins live: ``$AUTOPAD_CACHE_DIR/cubin`` or ``~/.cache/autopad/cubin``."""
    root = os.environ.get("AUTOPAD_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "autopad")
    return Path(root) / "cubin"


def expand_includes(source: str, base: Path = KERNEL_DIR, _depth: int = 0) -> str:
    """Inline ``#include "x.cuh"`` from ``base`` so the hash and NVRTC both see every line compiled."""
    if _depth > 8:
        raise ValueError("expand_includes: includes nested more than 8 deep")

    def sub(m: re.Match) -> str:
        path = base / m.group(1)
        if not path.is_file():
            return m.group(0)  # leave it for the compiler to report
        return expand_includes(path.read_text(), base, _depth + 1)

    return _INCLUDE_RE.sub(sub, source)


def _backend() -> str:
    forced = os.environ.get("AUTOPAD_CUDA_COMPILER", "").lower()
    if forced in ("nvrtc", "nvcc"):
        return forced
    try:
        from cuda.bindings import nvrtc

        err, _, _ = nvrtc.nvrtcVersion()
        if int(err) == 0:
            return "nvrtc"
    except Exception:  # library not found, cuda-python absent: fall back to the executable
        pass
    if shutil.which("nvcc"):
        return "nvcc"
    raise RuntimeError("cuda_runtime: no NVRTC (pip install cuda-core cuda-bindings) and no nvcc on PATH")


def compiler_version(backend: str | None = None) -> str:
    """``nvrtc-13.0`` or ``nvcc-13.0.88``: part of the cache key, since a new compiler makes new code."""
    backend = backend or _backend()
    if backend == "nvrtc":
        from cuda.bindings import nvrtc

        _, major, minor = nvrtc.nvrtcVersion()
        return f"nvrtc-{major}.{minor}"
    out = subprocess.run(["nvcc", "--version"], capture_output=True, text=True, check=False).stdout
    m = re.search(r"V(\d+\.\d+\.\d+)", out)
    return f"nvcc-{m.group(1) if m else 'unknown'}"


def cache_key(source: str, defines: Mapping[str, object], arch: str, version: str) -> str:
    """sha256 of the expanded source, the sorted defines, the target arch and the compiler version."""
    h = hashlib.sha256()
    for part in (source, repr(sorted((k, str(v)) for k, v in defines.items())), arch, version):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def _compile_nvrtc(source: str, defines: Mapping[str, object], arch: str, name: str) -> bytes:
    cc = _cuda_core()
    Program, ProgramOptions = cc.Program, cc.ProgramOptions

    opts = ProgramOptions(
        name=name,
        arch=arch,
        std="c++17",
        define_macro=[(k, str(v)) for k, v in defines.items()] or None,  # cuda.core rejects []
    )

    class _Log:
        text = ""

        def write(self, s: str) -> None:
            self.text += s

    log = _Log()
    try:
        obj = Program(source, "c++", options=opts).compile("cubin", logs=log)
    except Exception as exc:  # cuda.core raises its own error type; keep the log and the defines
        raise CompileError(name, (log.text + "\n" + str(exc)).strip(), defines, "NVRTC") from exc
    return bytes(obj.code)


def _compile_nvcc(source: str, defines: Mapping[str, object], arch: str, name: str) -> bytes:
    with tempfile.TemporaryDirectory(prefix="autopad-nvcc-") as tmp:
        src = Path(tmp) / f"{name}.cu"
        out = Path(tmp) / f"{name}.cubin"
        src.write_text(source)
        cmd = ["nvcc", f"-arch={arch}", "-std=c++17", "--cubin", "-o", str(out), str(src)]
        cmd[1:1] = [f"-D{k}={v}" for k, v in defines.items()]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise CompileError(name, proc.stdout + proc.stderr, defines, "nvcc")
        return out.read_bytes()


def compile_cubin(
    source: str, defines: Mapping[str, object], arch: str = "sm_90", name: str = "kernel"
) -> bytes:
    """The cubin for ``source`` under ``defines``: from memory, else disk, else the compiler (then stored).

    Raises ``CompileError`` (with the log and the defines) when the compiler rejects the source.
    """
    source = expand_includes(source)
    backend = _backend()
    key = cache_key(source, defines, arch, compiler_version(backend))
    with _LOCK:
        hit = _MEM_CUBINS.get(key)
    if hit is not None:
        return hit
    path = cache_dir() / f"{key}.cubin"
    if path.is_file():
        data = path.read_bytes()
    else:
        fn = _compile_nvrtc if backend == "nvrtc" else _compile_nvcc
        data = fn(source, defines, arch, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        # atomic: a concurrent reader sees the old state or the whole file, never half of it
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key[:16]}-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
    with _LOCK:
        _MEM_CUBINS[key] = data
    return data


def _device_arch(device: int) -> str:
    Device = _cuda_core().Device

    major, minor = Device(device).compute_capability
    return f"sm_{major}{minor}"


def load_kernel(
    source: str, kernel_name: str, defines: Mapping[str, object], device: int | None = None
) -> Any:
    """A ``cuda.core.Kernel`` for ``kernel_name`` (an ``extern "C"`` function) compiled for ``device``."""
    import torch

    cc = _cuda_core()
    Device, ObjectCode = cc.Device, cc.ObjectCode

    device = torch.cuda.current_device() if device is None else device
    Device(device).set_current()
    arch = _device_arch(device)
    cubin = compile_cubin(source, defines, arch, name=kernel_name)
    mkey = (hashlib.sha256(cubin).hexdigest(), kernel_name, device)
    with _LOCK:
        k = _MEM_KERNELS.get(mkey)
    if k is None:
        k = ObjectCode.from_cubin(cubin, name=kernel_name).get_kernel(kernel_name)
        with _LOCK:
            _MEM_KERNELS[mkey] = k
    return k


def _raise_smem_limit(kernel: Any, device: int, nbytes: int) -> None:
    """Dynamic shared memory above 48 KB needs the kernel's opt-in attribute raised first."""
    if nbytes <= 48 * 1024:
        return
    key = (id(kernel), device)
    if _SMEM_RAISED.get(key, 0) >= nbytes:
        return
    from cuda.bindings import driver

    attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    (err,) = driver.cuKernelSetAttribute(attr, int(nbytes), kernel.handle, driver.CUdevice(device))
    if int(err) != 0:  # older drivers: set it on the context's CUfunction instead
        err2, fn = driver.cuKernelGetFunction(kernel.handle)
        (err,) = driver.cuFuncSetAttribute(fn, attr, int(nbytes)) if int(err2) == 0 else (err2,)
    if int(err) != 0:
        raise RuntimeError(f"raising the dynamic shared memory limit to {nbytes} bytes failed: {err}")
    _SMEM_RAISED[key] = nbytes


def launch(
    kernel: Any,
    grid: int | Sequence[int],
    block: int | Sequence[int],
    args: Sequence[Any],
    shmem_bytes: int = 0,
) -> None:
    """Launch ``kernel`` on torch's current stream. ``args``: torch tensors (passed as pointers),
    numpy scalars (passed by value, their own width) or Python ints (pointers)."""
    import numpy as np
    import torch

    cc = _cuda_core()
    Device, LaunchConfig, cc_launch = cc.Device, cc.LaunchConfig, cc.launch

    device = torch.cuda.current_device()
    if getattr(_CURRENT, "device", None) != device:
        # cuda.core's current device is per thread: a kernel built in a worker thread is launched
        # from another one (the benchmark compiles in parallel, then times on the main thread)
        Device(device).set_current()
        _CURRENT.device = device
    ts = torch.cuda.current_stream(device)
    skey = (device, ts.cuda_stream)
    stream = _STREAMS.get(skey)
    if stream is None:
        stream = Device(device).create_stream(ts)
        _STREAMS[skey] = stream
    _raise_smem_limit(kernel, device, shmem_bytes)
    conv = [a.data_ptr() if isinstance(a, torch.Tensor) else a for a in args]
    for a in conv:
        if not isinstance(a, (int, np.integer, np.floating)):
            raise TypeError(f"launch: unsupported argument {a!r}")
    grid = tuple(int(g) for g in grid) if isinstance(grid, Sequence) else int(grid)
    block = tuple(int(b) for b in block) if isinstance(block, Sequence) else int(block)
    cfg = LaunchConfig(grid=grid, block=block, shmem_size=int(shmem_bytes))
    cc_launch(stream, cfg, kernel, *conv)
