"""autopad.ops: PyTorch operators that run autopad's kernels with the layout tuned for each input.

    y = autopad.ops.transpose(x)                  # x.transpose(-1, -2).contiguous(), [..., M, N]
    h = autopad.ops.histogram(v, 4096)            # torch.bincount(v, minlength=4096) as int32
    s = autopad.ops.histogram(v, 4096, weights=w) # torch.bincount(v, w, minlength=4096)
    c = autopad.ops.matmul(a, b)                  # a @ b, b [K, N] as you hold it

Each is a registered operator (``torch.ops.autopad.transpose / histogram / matmul``, ``registry``): one
node under ``torch.compile(fullgraph=True)`` and ``torch.export``, differentiable (transpose, matmul, and
histogram's weights), with exact fake implementations. A plain eager call skips the dispatcher and calls
the kernel bound for its shape (``api``, ``runner``): a dictionary lookup, the output's allocation and the
launch.

Which constants a shape runs with is the shape policy (``policy``): the pick tuned for exactly that shape;
else a neighbouring shape's pick only where the model predicts it within 3% of the best for this shape
(and it is legal, makes no more passes and streams no worse); else a tune on first use (announced) or,
with ``AUTOPAD_TUNE=never`` / ``offline``, the model's pick. ``pretune`` tunes a list of shapes ahead of
time, ``record`` collects the shapes a model uses, and ``cache_pack`` / ``cache_unpack`` ship the result.
``empty_pitched`` / ``pitched`` give 2-D tensors whose rows start on 128-byte boundaries (``pitch``), which
``matmul`` reads as they are in bf16 / fp16.

Importing this module needs numpy alone: the operators are defined (and torch imported) on the first call
of an op, by ``register()``, or at once when torch is already imported, so ``torch.ops.autopad.*`` exist
after ``import torch, autopad``.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

from .pitch import empty_pitched, pitched
from .plans import Item
from .policy import REUSE_TOLERANCE, TUNE_MODES, AutopadTuningWarning, untuned
from .pretune import PretuneRow, Recorder, cache_pack, cache_unpack, load_items, pretune, record

__all__ = [
    "transpose",
    "histogram",
    "matmul",
    "register",
    "pretune",
    "record",
    "load_items",
    "cache_pack",
    "cache_unpack",
    "decisions",
    "untuned",
    "reset",
    "Item",
    "PretuneRow",
    "Recorder",
    "AutopadTuningWarning",
    "TUNE_MODES",
    "REUSE_TOLERANCE",
    "empty_pitched",
    "pitched",
]


def _api() -> ModuleType:
    """Import the torch side (defining ``torch.ops.autopad.*``) and put its functions in this module's
    place, so that ``autopad.ops.transpose`` is the fast function itself from then on."""
    from . import api

    g = globals()
    for name in ("transpose", "histogram", "matmul"):
        g[name] = getattr(api, name)
    return api


def register() -> None:
    """Define ``torch.ops.autopad.*`` now (idempotent; imports torch). Needed before loading a program
    exported with them (``torch.export.load``) in a process where torch was imported after autopad."""
    _api()


def transpose(x: Any, backend: str = "auto") -> Any:
    """``x.transpose(-1, -2).contiguous()`` for a CUDA tensor [..., M, N] (see ``autopad.ops.api``)."""
    return _api().transpose(x, backend)


def histogram(x: Any, bins: int, weights: Any = None, dist: str | None = None, backend: str = "auto") -> Any:
    """``torch.bincount(x, weights, minlength=bins)`` for values in [0, bins) (see ``autopad.ops.api``)."""
    return _api().histogram(x, bins, weights, dist, backend)


def matmul(a: Any, b: Any, backend: str = "auto") -> Any:
    """``a @ b`` for CUDA tensors [M, K] x [K, N] (see ``autopad.ops.api``)."""
    return _api().matmul(a, b, backend)


def decisions() -> list[dict[str, Any]]:
    """Every kernel shape this process has bound: kernel, backend, shape, dtype, constants, and their source
    ("tuned", "reused", "model" or "tuned now") with the reason."""
    runner = sys.modules.get("autopad.ops.runner")
    return runner.decisions() if runner is not None else []


def reset() -> None:
    """Forget every bound kernel: the next call of each shape decides again (reads the cache, tunes...)."""
    runner = sys.modules.get("autopad.ops.runner")
    if runner is not None:
        runner.forget()


if "torch" in sys.modules:  # torch is loaded already: defining the operators costs no import
    try:
        _api()
    except ImportError:  # a broken torch install: the ops raise when called, autopad itself still imports
        pass
