"""Row-pitched 2-D tensors: rows on 128-byte boundaries, for ``autopad.ops.matmul``'s operands.

The Gluon GEMM reads its operands with TMA, one swizzled 128-byte box row at a time. A row-major [K, N]
bf16 B of N = 5000 has rows 10,000 bytes apart: row r starts 16 r mod 128 bytes past a 128-byte
boundary, 7 rows in 8 off it, and each of their box rows straddles two 128-byte lines. Measured on the
H200 (benchmarks/results/h200/2026-12-01, 3000x5000x1000 bf16): the kernel took 68.2 us with both
operands contiguous, 56.9 us with B at a 10,240-byte pitch and 56.2 us with A pitched too (run 13,
back-to-back event times), with 1.67x the L2 read sectors of an aligned shape when contiguous (run 12,
Nsight Compute); ``autopad.ops.matmul`` took 70.6 us contiguous and 60.4 us with B from
``empty_pitched`` (run 16). Padding a matrix's rows is the layout decision this project makes for shared
memory; here it pays in global memory too.

``empty_pitched`` allocates a [rows, cols] view whose rows start on ``align``-byte boundaries (the row
padded up to a whole number of ``align`` bytes);
``pitched`` copies a tensor into one. ``autopad.ops.matmul`` reads such views of bf16 / fp16 operands as
they are (TMA takes the row stride), where other non-contiguous operands are copied first. A copy costs
more than it saves on one product (37 us for A and B above): allocate the operand pitched where it is
made, or pitch a weight once and reuse it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["empty_pitched", "pitched", "is_pitched", "ALIGN"]

ALIGN = 128  # bytes: one L2 line, one 128-byte-swizzled TMA box row


def _check_align(align: Any, elem: int = 1) -> None:
    ok = isinstance(align, int) and not isinstance(align, bool) and align >= 16 and not align & (align - 1)
    if not ok or align % elem:
        raise ValueError(f"align: a power of two of 16 bytes or more (and of whole elements), got {align!r}")


def _pitch(cols: int, elem: int, align: int) -> int:
    """Elements per padded row: cols rounded up so that a row is a whole number of ``align`` bytes."""
    _check_align(align, elem)
    per = align // elem
    return -(-cols // per) * per


def empty_pitched(rows: int, cols: int, dtype: Any, device: Any = None, align: int = ALIGN) -> Any:
    """An uninitialised [rows, cols] tensor whose rows start on ``align``-byte boundaries (a view of a
    wider one).

    >>> b = empty_pitched(1000, 5000, torch.bfloat16, "cuda")   # b.stride() == (5056, 1): 10,112-byte rows
    """
    import torch

    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (rows, cols)):
        raise ValueError(f"rows and cols: non-negative ints, got {rows!r} and {cols!r}")
    elem = torch.empty((), dtype=dtype).element_size()
    pitch = _pitch(max(cols, 1), elem, align)
    return torch.empty((rows, pitch), dtype=dtype, device=device)[:, :cols]


def pitched(x: Any, align: int = ALIGN) -> Any:
    """A copy of the 2-D tensor ``x`` at a pitch of ``align`` bytes (``x`` itself if it already is one)."""
    _check_align(align)
    if getattr(x, "dim", lambda: 0)() != 2:
        raise ValueError(
            f"pitched: a 2-D tensor, got {type(x).__name__} of shape {tuple(getattr(x, 'shape', ()))}"
        )
    if is_pitched(x, align):
        return x
    out = empty_pitched(x.shape[0], x.shape[1], x.dtype, x.device, align)
    out.copy_(x)
    return out


def is_pitched(t: Any, align: int = 16) -> bool:
    """True for a 2-D row-major view whose rows start on ``align``-byte boundaries: unit column stride, a
    row stride at least the row, the address and the row stride in bytes multiples of ``align``. (16, the
    default, is what TMA needs; a contiguous tensor whose rows happen to be whole 16-byte units is one.)"""
    _check_align(align)
    if t.dim() != 2 or t.stride(1) != 1 or t.stride(0) < t.shape[1]:
        return False
    elem = t.element_size()
    return (t.stride(0) * elem) % align == 0 and t.data_ptr() % align == 0
