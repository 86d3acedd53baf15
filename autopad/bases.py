"""Base specs: write the kernel, its space, its launch geometry, its arguments and its reference; autopad
derives the rest.

A spec for the tuner (autopad/spec.py) has fifteen names; most are the same in every kernel: allocate the
inputs, allocate and poison the outputs, compile, launch, compare with torch, count the bytes moved. As in
Kernel Tuner (``tune_kernel(name, source, problem_size, arguments, tune_params, answer=)``) and Triton
(``@autotune`` on the kernel call), those are derived here from what only the author knows:

    class Transpose(autopad.CudaKernel):
        SOURCE = "..."                                   # CUDA with #include "autopad.cuh", AP_OFF(r, c)
        SPACE = {"TILE": (32, 64), "PAD": (0, 1, 2)}     # the tunables, each a -D define
        SHAPE = ("M", "N")                               # names of the problem's dimensions
        LAYOUT = autopad.tile("TILE", "TILE", pad="PAD") # the shared tile, in terms of the constants
        BLOCK = ("TILE", 8)                              # expressions over constants and shape names
        GRID = ("cdiv(N, TILE)", "cdiv(M, TILE)")
        PATTERN = autopad.Pattern(...)                   # how a block's threads touch the tile (optional)

        def arguments(self, shape, dtype): ...           # tensors, autopad.Out(shape) outputs, scalars
        def reference(self, x, m, n): ...                # torch's answer from the inputs

Derived: ``legal`` (the layout's own check, the architecture's shared-memory and launch limits, the
``RESTRICTIONS``), ``layout``, ``smem_pattern``, ``launch_info`` (blocks and threads from GRID and BLOCK,
shared memory from the layout), ``traffic`` (the arguments' bytes, counted on torch's meta device; flops
from ``FLOPS``), ``make_inputs`` (``arguments`` under a fresh seed on the GPU), ``alloc_output`` (the
``Out`` placeholders), ``build`` / ``run`` (NVRTC and cuda.core for CUDA; the ``@triton.jit`` or
``@gluon.jit`` call for Triton), ``check`` (exact for integers, a relative error per dtype for floats).
Any of them can still be overridden. torch, triton and CUDA load only inside the functions that use them.

Where the code lives (this module re-exports every name it defined, private ones included, so every import
of ``autopad.bases`` keeps working): kernel_args.py (``Out``, ``Inputs``, the arguments' bytes),
tile_spec.py (``TileLayout``, ``tile``, spec expressions), kernel_base.py (``KernelBase``, ``TOLERANCE``),
cuda_kernel.py (``CudaKernel``), triton_kernel.py (``TritonKernel``).
"""

from __future__ import annotations

# the names bases.py defined before the split (private ones too), importable from here as before
from .cuda_kernel import _KERNEL_RE, CudaKernel, _BuiltCuda  # noqa: F401
from .kernel_args import (  # noqa: F401
    Inputs,
    Out,
    _meta_bytes,
    _meta_bytes_cached,
    _shape_of,
    _torch_dtype,
)
from .kernel_base import _NO_LAYOUT, TOLERANCE, KernelBase  # noqa: F401
from .tile_spec import TileLayout, _env, _eval, tile  # noqa: F401
from .triton_kernel import TritonKernel

__all__ = ["Out", "Inputs", "TileLayout", "tile", "KernelBase", "CudaKernel", "TritonKernel", "TOLERANCE"]
