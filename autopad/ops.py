"""Drop-in PyTorch functions that run autopad's kernels with the tuned layout for the input.

``transpose(x)``, ``histogram(x, bins)`` and ``matmul(a, b)`` look up the layout tuned for the input's
shape, dtype and GPU, and run the kernel with it. Where to find the constants, in order:

1. this process's memo (no file access on the hot path after the first call for a shape);
2. the cache entry for exactly this shape;
3. the tuned entry of the nearest shape (same kernel, dtype, GPU, backend), if its constants are legal for
   this shape; autopad says so once;
4. nothing tuned yet for this kernel/dtype/GPU: tune now, on first use, and cache it
   (``AUTOPAD_TUNE=never`` takes the model's pick instead, ``AUTOPAD_TUNE=always`` tunes every new shape).

The functions check their inputs and raise ValueError naming the argument; they never fall back silently.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

from .bench import device_info
from .cache import Cache
from .kernels_registry import builtin_spec
from .search import rank
from .spec import KernelSpec
from .tune import cache_key, normalize_dtype, tune

__all__ = ["transpose", "histogram", "matmul", "constants_for"]

_MEMO: dict[tuple, dict[str, int]] = {}
_BUILT: dict[tuple, Any] = {}
_TUNE_MODES = ("first-use", "always", "never")


def _tune_mode() -> str:
    mode = os.environ.get("AUTOPAD_TUNE", "first-use")
    if mode not in _TUNE_MODES:
        raise ValueError(f"AUTOPAD_TUNE: {mode!r} is not one of {', '.join(_TUNE_MODES)}")
    return mode


def constants_for(
    spec: KernelSpec, shape: tuple[int, ...], dtype: str, dist: str | None = None, device: int = 0
) -> tuple[dict[str, int], str]:
    """The constants to run ``spec`` with on ``shape``, and where they came from (for messages)."""
    memo = (spec.NAME, spec.BACKEND, shape, dtype, dist, device)
    if memo in _MEMO:
        return _MEMO[memo], "memo"
    key = cache_key(spec, shape, dtype, dist, device_info(device))
    found = Cache().nearest(key)
    mode = _tune_mode()
    if found is not None and found[0].shape == shape:
        constants, how = dict(found[1].best.constants), "tuned"
    elif found is not None and mode != "always" and spec.legal(found[1].best.constants, shape, dtype):
        constants = dict(found[1].best.constants)
        how = f"nearest tuned shape {'x'.join(map(str, found[0].shape))}"
        warnings.warn(
            f"autopad: {spec.NAME} {'x'.join(map(str, shape))} {dtype} uses the layout tuned for "
            f"{'x'.join(map(str, found[0].shape))} (set AUTOPAD_TUNE=always to tune every shape)",
            stacklevel=3,
        )
    elif mode == "never":
        constants, how = dict(rank(spec, shape, dtype, dist=dist)[0].params), "model's pick"
        warnings.warn(
            f"autopad: {spec.NAME} {'x'.join(map(str, shape))} {dtype} is not tuned; using the "
            f"model's pick (AUTOPAD_TUNE=never)",
            stacklevel=3,
        )
    else:
        res = tune(spec.impl, shape, dtype, device=device, dist=dist, progress=False)
        constants, how = dict(res.best.constants), f"tuned now ({res.mode})"
    _MEMO[memo] = constants
    return constants, how


def _spec_for(kernel: str, dtype: str, backend: str) -> KernelSpec:
    """The built-in spec for ``kernel``; with "auto", the first of CUDA and Triton that takes ``dtype``."""
    if backend != "auto":
        return builtin_spec(kernel, backend)
    first = builtin_spec(kernel, "auto")
    if dtype in first.DTYPES:
        return first
    for b in ("cuda", "triton"):
        spec = builtin_spec(kernel, b)
        if dtype in spec.DTYPES:
            return spec
    return first  # tune() then names the dtypes it supports


def _run(
    kernel: str,
    args: tuple,
    shape: tuple[int, ...],
    dtype: str,
    dist: str | None,
    device: int,
    backend: str,
) -> Any:
    spec = _spec_for(kernel, dtype, backend)
    # a spec may want its inputs in its own form (a histogram's bin count, a matmul's B transposed)
    inputs = spec.inputs_from(*args) if hasattr(spec, "inputs_from") else args
    constants, _ = constants_for(spec, shape, dtype, dist, device)
    bkey = (spec.NAME, spec.BACKEND, tuple(sorted(constants.items())), dtype, device)
    if bkey not in _BUILT:
        _BUILT[bkey] = spec.build(constants, dtype)
    out = spec.alloc_output(inputs, constants)
    if getattr(spec, "ACCUMULATES", False):
        out.zero_()
    spec.run(_BUILT[bkey], inputs, out)
    return out


def _cuda_tensor(name: str, t: Any) -> int:
    import torch

    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    if t.device.type != "cuda":
        raise ValueError(
            f"{name}: autopad.ops runs on CUDA tensors; got a tensor on {t.device} (move it with .cuda())"
        )
    if not t.is_contiguous():
        raise ValueError(f"{name}: must be contiguous (got strides {tuple(t.stride())}); call .contiguous()")
    return t.device.index or 0


def transpose(x: Any, backend: str = "auto") -> Any:
    """``x.transpose(-1, -2).contiguous()`` for a 2-D [M, N] or batched [B, M, N] CUDA tensor."""
    dev = _cuda_tensor("x", x)
    if x.dim() not in (2, 3):
        raise ValueError(f"x: transpose takes a 2-D [M, N] or 3-D [B, M, N] tensor, got {x.dim()}-D")
    dtype = normalize_dtype(x.dtype)
    if x.numel() == 0:
        return x.transpose(-1, -2).contiguous()
    return _run("transpose", (x,), tuple(x.shape), dtype, None, dev, backend)


def histogram(x: Any, bins: int, dist: str | None = None, backend: str = "auto") -> Any:
    """``torch.bincount(x, minlength=bins)`` as int32, for integer values in [0, bins).

    ``dist`` names the input class the layout was tuned for ("uniform", "skewed", "single");
    by default "uniform".
    """
    dev = _cuda_tensor("x", x)
    if isinstance(bins, bool) or not isinstance(bins, int) or bins < 1:
        raise ValueError(f"bins: must be a positive int, got {bins!r}")
    if x.dim() != 1:
        raise ValueError(f"x: histogram takes a 1-D tensor of bin indices, got {x.dim()}-D")
    dtype = normalize_dtype(x.dtype)
    return _run("histogram", (x, bins), (x.numel(), bins), dtype, dist or "uniform", dev, backend)


def matmul(a: Any, b: Any, backend: str = "auto") -> Any:
    """``a @ b`` for row-major 2-D CUDA tensors [M, K] x [K, N]."""
    dev = _cuda_tensor("a", a)
    _cuda_tensor("b", b)
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"a, b: need [M, K] and [K, N], got {tuple(a.shape)} and {tuple(b.shape)}")
    if a.dtype != b.dtype:
        raise ValueError(f"a, b: dtypes differ ({a.dtype} and {b.dtype})")
    dtype = normalize_dtype(a.dtype)
    m, k = a.shape
    n = b.shape[1]
    return _run("matmul", (a, b), (m, n, k), dtype, None, dev, backend)
