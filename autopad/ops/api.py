"""The public functions ``autopad.ops.transpose / histogram / matmul``: the registered operator, with a
direct path for the plain eager call.

Going through the dispatcher costs 7 us for a ``Library`` operator and another ~18 us for its autograd
kernel (``registry``), more than the whole of ``x.t().contiguous()`` on a small tensor. Most calls need
none of it: a plain CUDA tensor, no gradient wanted, nothing tracing. For those the function takes the
bound kernel of this shape (``runner.FAST_*``, filled by the operator's first call) and calls it: the same
closure the operator's CUDA implementation calls, so the result is the same. Everything else goes
through ``torch.ops.autopad.*``:

- ``torch.compile`` / ``torch.export``: ``torch.compiler.is_compiling()`` is a constant True to Dynamo, so
  the traced function is the operator alone: one node, nothing of autopad's Python traced;
- autograd (an input requires grad and grad mode is on), a dispatch mode (``make_fx``, FakeTensorMode,
  FlopCounterMode, ...), a functorch transform, a tensor subclass: the dispatcher handles them;
- a shape, dtype or device met for the first time: the operator binds its kernel (``runner``).

A non-contiguous input also takes the operator (which copies it first), except a 16-bit matmul operand at a
row pitch (``autopad.ops.empty_pitched``), which the bound GEMM reads as it is.
"""

from __future__ import annotations

from typing import Any

import torch

from . import registry, runner

__all__ = ["transpose", "histogram", "matmul"]

_Tensor = torch.Tensor
_compiling = torch.compiler.is_compiling
_grad_on = torch.is_grad_enabled
_modes = torch._C._len_torch_dispatch_stack
_functorch = getattr(torch._C, "_are_functorch_transforms_active", lambda: False)
_T, _H, _M = runner.FAST_T, runner.FAST_H, runner.FAST_M
_ops = torch.ops.autopad
_as_is = runner.takes_as_is


def transpose(x: Any, backend: str = "auto") -> Any:
    """``x.transpose(-1, -2).contiguous()`` for a CUDA tensor [..., M, N], any dtype of up to 8 bytes.

    Runs autopad's transpose with the layout tuned for this shape and dtype on this GPU (see
    ``autopad.ops``'s shape policy). Differentiable; ``torch.compile`` and ``torch.export`` see one
    ``autopad::transpose`` node. ``backend``: "auto" (the CUDA kernel), "cuda" or "triton".
    """
    if not _compiling():
        if type(x) is _Tensor and not (x.requires_grad and _grad_on()) and not _modes() and not _functorch():
            fn = _T.get((x.shape, x.dtype, x.get_device(), backend))
            if fn is not None and x.is_contiguous():
                return fn(x)
        registry.check_transpose(x, backend)
    return _ops.transpose(x, backend)


def histogram(x: Any, bins: int, weights: Any = None, dist: str | None = None, backend: str = "auto") -> Any:
    """``torch.bincount(x, weights, minlength=bins)`` for values in [0, bins), on a 1-D CUDA tensor.

    Counts are int32 (``torch.bincount`` gives int64: ``.long()`` if you need it); values outside [0, bins)
    are not counted (``torch.bincount`` would grow its output). With ``weights`` (same shape as ``x``) the
    output is each bin's sum of weights, float32 for float32 weights, else float64 (as ``torch.bincount``),
    accumulated in float32 by the weighted kernel, whose per-bin (count, sum) struct layout (AoS or SoA)
    autopad tunes; the gradient flows to the weights. ``dist`` names the input class the layout is tuned
    for ("uniform", "skewed", "single", "sorted"; default "uniform"). int32 and uint8 values are read as
    they are, other integer types are narrowed to int32 first (one extra pass).
    """
    if not _compiling():
        if (
            type(x) is _Tensor
            and not _modes()
            and not _functorch()
            and (weights is None or (type(weights) is _Tensor and not (weights.requires_grad and _grad_on())))
        ):
            if weights is None:
                fn = _H.get((x.shape, x.dtype, x.get_device(), bins, dist, backend))
                if fn is not None and x.is_contiguous():
                    return fn(x)
            else:
                key = (x.shape, x.dtype, x.get_device(), bins, dist, backend, weights.shape, weights.dtype)
                fn = _H.get(key)
                if fn is not None and x.is_contiguous() and weights.is_contiguous():
                    if weights.get_device() == x.get_device():
                        return fn(x, weights)
        registry.check_histogram(x, bins, weights, dist, backend)
    return _ops.histogram(x, bins, weights, dist, backend)


def matmul(a: Any, b: Any, backend: str = "auto") -> Any:
    """``a @ b`` for CUDA tensors [M, K] x [K, N], with B as you hold it ([K, N] row-major; no copy).

    fp32 runs autopad's CUDA SIMT GEMM (full fp32, as torch with TF32 off); bf16 and fp16 its Gluon wgmma
    kernel. Differentiable (the backward runs autopad's matmul and transpose); one ``autopad::matmul``
    node under ``torch.compile`` and ``torch.export``. A transposed view of a row-major [N, K] (a Linear
    weight's ``.t()``) is made [K, N] by autopad's transpose first. A bf16 / fp16 operand at a row pitch
    (``autopad.ops.empty_pitched``: rows on 128-byte boundaries) is read as it is, which is faster when its
    rows are not whole 128-byte lines (3000x5000x1000 bf16 on the H200: 60.4 us with B pitched, 70.6 us
    contiguous); another non-contiguous operand is copied. Under ``torch.compile`` the compiler may hand
    the operator a contiguous buffer instead (correct, without the gain). Where ``torch.mm`` measured more
    than 2% faster than the bound kernel on a shape's first call, that shape runs ``torch.mm``
    (``autopad.ops.peer``: when it is judged, and how to turn it off).
    """
    if not _compiling():
        if (
            type(a) is _Tensor
            and type(b) is _Tensor
            and not ((a.requires_grad or b.requires_grad) and _grad_on())
            and not _modes()
            and not _functorch()
        ):
            key = (a.shape, b.shape, a.dtype, b.dtype, a.get_device(), b.get_device(), backend)
            fn = _M.get(key)
            if fn is not None and _as_is(a) and _as_is(b):
                return fn(a, b)
        registry.check_matmul(a, b, backend)
    return _ops.matmul(a, b, backend)
