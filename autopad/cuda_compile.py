"""Compile a CUDA template to a cubin with NVRTC (``cuda.core``) or ``nvcc``; cached in memory and on disk.

What: ``compile_cubin(source, defines, arch)`` inlines the template's ``#include "x.cuh"`` from
``KERNEL_DIR`` (``expand_includes``), keys it by everything that changes the machine code (``cache_key``:
the expanded source, the sorted defines, the arch and ``compiler_version``), and returns the cubin from
memory, else from the checked file on disk (``cubin_file``), else from the compiler (then stored). A rejected
source raises ``CompileError`` with the compiler's log and the defines.

Why: autopad benchmarks the same CUDA template under many layouts, each a different set of ``#define``s
(PAD, SW_VEC, ...). Compiling at run time with NVRTC needs no toolchain on the user's machine beyond the
driver and cuda-python, and caching the cubins makes a re-run of the tuner nearly free. Where NVRTC's
library is missing (a CI box with only ``nvcc``), the ``nvcc`` executable is used, so the same cache and
error path can be tested without a GPU; ``AUTOPAD_CUDA_COMPILER=nvcc`` or ``=nvrtc`` forces one.

``_cuda_core`` (the one locked import of ``cuda.core``) lives here, the lowest module that needs it; the
launch modules import it. Split out of ``cuda_runtime``, which re-exports every name.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .cubin_file import read_cubin, write_cubin

__all__ = [
    "KERNEL_DIR",
    "CompileError",
    "cache_dir",
    "cache_key",
    "compile_cubin",
    "compiler_version",
    "expand_includes",
]

KERNEL_DIR = Path(__file__).resolve().parent.parent / "kernels" / "cuda"
if not KERNEL_DIR.is_dir():  # installed wheel: kernels ship as autopad/kernels
    KERNEL_DIR = Path(__file__).resolve().parent / "kernels" / "cuda"

_LOCK = threading.Lock()
_MEM_CUBINS: dict[str, bytes] = {}
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
    """Where cubins live: ``$AUTOPAD_CACHE_DIR/cubin``, else ``$XDG_CACHE_HOME/autopad/cubin``, else
    ``~/.cache/autopad/cubin`` (the same root as the tuning cache)."""
    root = os.environ.get("AUTOPAD_CACHE_DIR")
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = os.path.join(xdg or os.path.join(os.path.expanduser("~"), ".cache"), "autopad")
    return Path(root).expanduser() / "cubin"


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


_VERSIONS: dict[tuple[str, str | None], str] = {}


def compiler_version(backend: str | None = None) -> str:
    """``nvrtc-13.0`` or ``nvcc-13.0.88``: part of the cache key, since a new compiler makes new code.

    Asked once per compiler (``nvcc --version`` is a process of its own: ~50 ms on every build otherwise).
    """
    backend = backend or _backend()
    memo = (backend, shutil.which("nvcc") if backend == "nvcc" else None)
    if memo in _VERSIONS:
        return _VERSIONS[memo]
    if backend == "nvrtc":
        from cuda.bindings import nvrtc

        _, major, minor = nvrtc.nvrtcVersion()
        version = f"nvrtc-{major}.{minor}"
    else:
        out = subprocess.run(["nvcc", "--version"], capture_output=True, text=True, check=False).stdout
        m = re.search(r"V(\d+\.\d+\.\d+)", out)
        version = f"nvcc-{m.group(1) if m else 'unknown'}"
    _VERSIONS[memo] = version
    return version


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
    data = read_cubin(path)  # None: absent, or refused (not ours, altered): compile afresh
    if data is None:
        fn = _compile_nvrtc if backend == "nvrtc" else _compile_nvcc
        data = fn(source, defines, arch, name)
        write_cubin(path, data)
    with _LOCK:
        _MEM_CUBINS[key] = data
    return data
