"""A kernel's argument list: the ``Out`` placeholders, ``Inputs``, and the bytes the arguments move.

What: ``Out`` (an output argument the harness allocates, poisoned), ``Inputs`` (the argument list that
remembers the problem shape), ``_shape_of`` (that shape back, for a launch), ``_torch_dtype`` (a spec dtype
name as torch's dtype) and ``_meta_bytes`` (every tensor argument's bytes, counted on torch's meta device,
which ``KernelBase.traffic`` reports).

Why apart: these are the data a spec's ``arguments`` returns and the harness passes around; they know
nothing of CUDA, Triton or the tuner. Moved from autopad/bases.py unchanged; ``autopad.bases`` re-exports
every name. torch loads only inside the functions that use it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from .spec import SpecError

__all__ = ["Inputs", "Out"]


class Inputs(tuple):
    """A kernel's argument list (outputs as ``Out`` placeholders) that remembers the problem shape, which
    the launch geometry needs."""

    shape: tuple[int, ...] = ()

    def __new__(cls, items: Sequence[Any], shape: Sequence[int]) -> Inputs:
        obj = super().__new__(cls, items)
        obj.shape = tuple(int(d) for d in shape)
        return obj


class Out:
    """An output argument: the harness allocates it (poisoned) and passes it in this position."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: Sequence[int] | int, dtype: Any = None) -> None:
        dims = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        if any(isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 0 for d in dims):
            raise SpecError(f"arguments: Out({shape!r}) needs a shape of non-negative ints")
        self.shape = tuple(int(d) for d in dims)
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"Out({self.shape}, {self.dtype})"


def _torch_dtype(dtype: str) -> Any:
    import torch

    return torch.float32 if dtype == "tf32" else getattr(torch, dtype)


@lru_cache(maxsize=256)
def _meta_bytes_cached(spec: Any, shape: tuple[int, ...], dtype: str) -> int:
    try:
        import torch
    except ImportError:
        raise SpecError(
            f"traffic: {type(spec).__name__} counts its bytes from its arguments, which needs torch; "
            f"define traffic(self, shape, dtype) -> {{'bytes': ..., 'flops': ...}} to rank without torch"
        ) from None
    with torch.device("meta"):
        args = spec._call_arguments(shape, dtype, None)
    total = 0
    for a in args:
        if isinstance(a, Out):
            n = math.prod(a.shape)
            dt = a.dtype if a.dtype is not None else _torch_dtype(dtype)
            total += n * torch.empty((), dtype=dt, device="meta").element_size()
        elif isinstance(a, torch.Tensor):
            total += a.numel() * a.element_size()
        elif isinstance(a, np.ndarray):
            total += a.nbytes
    return total


def _meta_bytes(spec: Any, shape: tuple[int, ...], dtype: str) -> int:
    return _meta_bytes_cached(spec, shape, dtype)


def _shape_of(inputs: Sequence[Any]) -> tuple[int, ...]:
    shape = getattr(inputs, "shape", None)
    if not isinstance(shape, tuple) or not shape:
        raise SpecError("run: the inputs do not carry the problem shape; build them with make_inputs()")
    return shape
