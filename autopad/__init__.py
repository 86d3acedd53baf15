"""autopad: chooses shared-memory layouts for GPU kernels.

The public API is importable with numpy alone: torch, triton and the CUDA bindings load only when a GPU
path needs them (``tune`` with a GPU, ``ops``, a base spec's build/run).

- the model: ``analyze``, ``analyze_batch``, ``Arch``/``get_arch``, ``layouts``;
- tuning: ``tune(kernel, shape, dtype)`` for "transpose", "matmul", "histogram" or your own spec;
- your own kernel: ``CudaKernel`` / ``TritonKernel`` base specs with ``Out``, ``tile`` (a layout in terms
  of your constants), ``tune_kernel`` (Kernel Tuner's entry point), ``prune_configs_by`` (a
  ``triton.autotune`` hook), ``Pattern`` with ``load``/``store``/``atomic``/``gluon_load``/``gluon_store``
  (how a block's threads touch the tile, declared);
- PyTorch: ``autopad.ops``.
"""

from __future__ import annotations

__version__ = "0.1.0"  # before the imports below: tune and cache read it

from . import layouts, ops  # noqa: E402  (light: torch loads inside the ops functions)
from .arch import ARCHS, Arch, get_arch
from .bases import CudaKernel, Out, TritonKernel, tile
from .kt import tune_kernel
from .model import Analysis, analyze, analyze_batch
from .pattern import Pattern, atomic, gluon_load, gluon_store, load, store
from .triton_hook import prune_configs_by
from .tune import tune

__all__ = [
    "__version__",
    "Analysis",
    "analyze",
    "analyze_batch",
    "Arch",
    "ARCHS",
    "get_arch",
    "tune",
    "tune_kernel",
    "CudaKernel",
    "TritonKernel",
    "Out",
    "tile",
    "prune_configs_by",
    "Pattern",
    "load",
    "store",
    "atomic",
    "gluon_load",
    "gluon_store",
    "layouts",
    "ops",
]
