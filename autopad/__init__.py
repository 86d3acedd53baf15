"""autopad: chooses shared-memory layouts for GPU kernels.

The public API is importable with numpy alone: torch, triton and the CUDA bindings load only when a GPU
path needs them (``tune`` with a GPU, ``ops``).
"""

from __future__ import annotations

__version__ = "0.1.0"  # before the imports below: tune and cache read it

from . import layouts, ops  # noqa: E402  (light: torch loads inside the ops functions)
from .arch import ARCHS, Arch, get_arch
from .model import Analysis, analyze, analyze_batch
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
    "layouts",
    "ops",
]
