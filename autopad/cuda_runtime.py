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

Where the code lives. This module only re-exports it, for the old import paths (``from autopad.cuda_runtime
import launch``): every name it had, private ones too, the public ones bound here, the others read from
their module when asked for (``__getattr__`` below, so state a module rebinds as it runs, such as
``cuda_driver._CU``, is never read stale from here).

- ``cubin_file``: the checked on-disk cubin format (``read_cubin``, ``write_cubin``, ``unwrap_cubin``);
- ``cuda_compile``: NVRTC / nvcc, includes, cache keys, ``compile_cubin``, ``CompileError``, ``_cuda_core``;
- ``cuda_context``: this thread's current context, torch's current stream (``_torch_hooks``, ``_stream_for``,
  ``_STREAMS``), the shared-memory opt-in;
- ``cuda_driver``: the direct ctypes launch (``prepare_fixed``, ``prepare_launch``'s driver path; the
  driver library, ``_LIBCUDA``);
- ``cuda_launch``: ``load_kernel``, ``launch`` and ``prepare_launch`` through ``cuda.core``.

Patching: an attribute set here reaches only the callers that look the name up on this module when they run
(the kernel specs' ``cuda_runtime.load_kernel`` / ``launch`` / ``prepare_launch``, ``ops.runner``'s
``cuda_runtime.prepare_fixed``, ``validate_cuda``). The code of the modules above reads its own globals:
patch the module that reads the name (``cuda_compile._cuda_core``, ``cuda_context._torch_hooks``,
``cuda_driver._LIBCUDA``; tests/cuda_fakes.py does), never this one.
"""

from __future__ import annotations

from typing import Any

from . import cubin_file, cuda_compile, cuda_context, cuda_driver, cuda_launch
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
_HOMES = (cubin_file, cuda_compile, cuda_context, cuda_driver, cuda_launch)


def __getattr__(name: str) -> Any:
    """Every other name of the modules above (``_backend``, ``_STREAMS``, ``_LIBCUDA``, ...), read from
    the module that binds it, so that state it rebinds as it runs is never read stale from here."""
    for home in _HOMES:
        if name in home.__dict__:
            return home.__dict__[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
