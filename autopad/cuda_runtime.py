"""Run-time CUDA: compile kernel templates with NVRTC (through ``cuda.core``), cache, launch on torch tensors.

Why: autopad benchmarks the same CUDA template under many layouts, each a different set of ``#define``s
(PAD, SW_VEC, ...). Compiling at run time with NVRTC needs no toolchain on the user's machine beyond the
driver and cuda-python, and caching the cubins (in memory and on disk, keyed by everything that changes
the machine code) makes a re-run of the tuner nearly free.

Nothing here is imported by ``import autopad``: ``cuda.core``, ``cuda.bindings`` and torch load lazily,
inside the functions that need them. Where NVRTC's library is missing (a CI box with only ``nvcc``),
``compile_cubin`` falls back to the ``nvcc`` executable, so the same cache and error path can be tested
without a GPU; set ``AUTOPAD_CUDA_COMPILER=nvcc`` or ``=nvrtc`` to force one.

Two more concerns live here:

- **The on-disk cubins are checked before they are loaded.** A cubin is machine code that this process will
  run, and its file name is predictable (a hash of the source and defines), so a file planted or damaged in
  the cache folder must never reach the GPU. Each file carries a header with the sha256 of its payload;
  on read the file must be a regular file (not a symlink), owned by this user, not writable by group or
  others, and its hash must match. Anything else is refused with a warning (once per file) and compiled
  afresh, and the fresh copy replaces it. New files are written 0600 in a 0700 folder.
- **A prepared launch** (``prepare_launch``): what a launch needs that does not change from call to call
  (``cuda.core``'s LaunchConfig, the dynamic shared-memory opt-in, the device) is done once, so that a call
  costs the current stream's raw pointer (a dictionary lookup to its ``cuda.core`` stream), the tensors'
  pointers and the launch itself. ``autopad.ops`` binds one per tuned shape; ``launch`` keeps the same
  caches for callers that launch ad hoc.

Where the code lives (this module re-exports every name it had, private ones too, and forwards an attribute
set on it, such as a test's monkeypatch, to every module that binds that name: ``autopad._facade``):

- ``cubin_file``: the checked on-disk cubin format (``read_cubin``, ``write_cubin``, ``unwrap_cubin``);
- ``cuda_compile``: NVRTC / nvcc, includes, cache keys, ``compile_cubin`` and ``CompileError``;
- ``cuda_context``: this thread's current context, torch's current stream, the shared-memory opt-in;
- ``cuda_driver``: the direct ctypes launch (``prepare_fixed``, ``prepare_launch``'s driver path);
- ``cuda_launch``: ``load_kernel``, ``launch`` and ``prepare_launch`` through ``cuda.core``.
"""

from __future__ import annotations

from typing import Any

from . import _facade, cubin_file, cuda_compile, cuda_context, cuda_driver, cuda_launch
from .cubin_file import read_cubin, unwrap_cubin, write_cubin
from .cuda_compile import (
    KERNEL_DIR,
    CompileError,
    cache_dir,
    cache_key,
    compile_cubin,
    compiler_version,
    expand_includes,
)
from .cuda_driver import prepare_fixed
from .cuda_launch import launch, load_kernel, prepare_launch

__all__ = [
    "CompileError",
    "cache_dir",
    "cache_key",
    "compiler_version",
    "compile_cubin",
    "expand_includes",
    "load_kernel",
    "launch",
    "prepare_launch",
    "prepare_fixed",
    "read_cubin",
    "write_cubin",
    "unwrap_cubin",
    "KERNEL_DIR",
]

# a module that defines a name comes before those that import it: a read of the name takes the first
_facade.install(__name__, (cubin_file, cuda_compile, cuda_context, cuda_driver, cuda_launch))


def __getattr__(name: str) -> Any:
    """Every other name of the modules above (``_backend``, ``_STREAMS``, ``_LIBCUDA``, ...), read from
    the module that binds it, so that state it rebinds as it runs is never read stale from here."""
    return _facade.lookup(__name__, name)
