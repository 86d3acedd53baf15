"""A Gluon register layout (``gl.BlockedLayout``) and the element every register of every thread holds.

``Blocked`` is the layout's four parameters (size_per_thread, threads_per_warp, warps_per_cta, order),
possibly as expressions over a kernel's constants until ``resolve``d. ``lane_elements`` rebuilds Triton's
*linear layout* of it with numpy: each bit of the register, lane and warp index contributes one basis
vector (a power of two along one tensor dimension); register bits first cover ``size_per_thread``
(fastest dimension first, as ``order`` says), lane bits ``threads_per_warp``, warp bits ``warps_per_cta``;
further register bits repeat the CTA tile until it covers the tensor. A lane or warp basis that points
past the tensor becomes zero (those threads hold copies: broadcast), and the element a thread's register
holds is the XOR of its register's, lane's and warp's parts.

Why a module of its own: this is the register side alone, with no shared layout in it; the instructions
of a move between registers and shared memory (gluon_moves.py) and the Triton side (gluon_triton.py)
are built on it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .expr import evaluate

__all__ = ["Blocked", "lane_elements"]


_FIELDS = ("size_per_thread", "threads_per_warp", "warps_per_cta", "order")


@dataclass(frozen=True)
class Blocked:
    """A 2-D ``gl.BlockedLayout`` (no CGA): its four parameters, as plain tuples.

    Entries may be expressions over a kernel's constants (``Blocked((1, "VEC"), (8, 4), ("WARPS", 1))``, as
    ``autopad.pattern.gluon_store`` takes them): such a layout is ``symbolic`` and ``resolve(constants)``
    turns it into a concrete one, validated then.
    """

    size_per_thread: tuple[int | str, int | str]
    threads_per_warp: tuple[int | str, int | str]
    warps_per_cta: tuple[int | str, int | str]
    order: tuple[int | str, int | str] = (1, 0)

    def __post_init__(self) -> None:
        for name in _FIELDS:
            v = tuple(getattr(self, name))
            if len(v) != 2:
                raise ValueError(f"{name}: need two entries (a 2-D layout), got {v}")
            object.__setattr__(self, name, v)
        # whether some entry is an expression, once (``symbolic`` is read at every use of the layout)
        object.__setattr__(
            self, "_symbolic", any(isinstance(x, str) for n in _FIELDS for x in getattr(self, n))
        )
        if self._symbolic:
            return
        for name in ("size_per_thread", "threads_per_warp", "warps_per_cta"):
            v = tuple(int(x) for x in getattr(self, name))
            if len(v) != 2 or any(x <= 0 or x & (x - 1) for x in v):
                raise ValueError(f"{name}: need two powers of two, got {v}")
            object.__setattr__(self, name, v)
        if self.threads_per_warp[0] * self.threads_per_warp[1] != 32:
            raise ValueError(f"threads_per_warp {self.threads_per_warp} must multiply to 32")
        if tuple(sorted(self.order)) != (0, 1):
            raise ValueError(f"order {self.order} must be a permutation of (0, 1)")
        object.__setattr__(self, "order", tuple(int(x) for x in self.order))

    @property
    def symbolic(self) -> bool:
        """Whether some entry is an expression still to be resolved against a kernel's constants."""
        return self._symbolic

    def resolve(self, constants: Mapping[str, int]) -> Blocked:
        """This layout with every expression evaluated over ``constants`` (``autopad.expr`` arithmetic).

        Also its ``__call__``: a template works wherever a ``constants -> Blocked`` function is expected."""
        if not self.symbolic:
            return self
        return Blocked(*(tuple(int(evaluate(x, constants)) for x in getattr(self, f)) for f in _FIELDS))

    __call__ = resolve

    def _concrete(self) -> None:
        if self.symbolic:
            raise ValueError(f"{self}: has expressions; resolve(constants) it first")

    @property
    def num_warps(self) -> int:
        self._concrete()
        return self.warps_per_cta[0] * self.warps_per_cta[1]

    def gluon(self) -> object:
        """The ``gl.BlockedLayout`` itself (imports triton)."""
        from triton.experimental.gluon import language as gl

        self._concrete()
        return gl.BlockedLayout(
            list(self.size_per_thread),
            list(self.threads_per_warp),
            list(self.warps_per_cta),
            list(self.order),
        )


def _bases(layout: Blocked, shape: Sequence[int]) -> tuple[list, list, list]:
    """Register, lane and warp basis vectors (row, col) of the blocked layout over ``shape``."""
    layout._concrete()
    shape = [int(s) for s in shape]
    if any(s <= 0 or s & (s - 1) for s in shape):
        raise ValueError(f"shape {shape} must be powers of two (Gluon tensors are)")

    def basis(dim: int, step: int) -> tuple[int, int]:
        if step >= shape[dim]:
            return (0, 0)  # points past the tensor: broadcast
        return (step, 0) if dim == 0 else (0, step)

    reg, lane, warp = [], [], []
    for dim in layout.order:
        reg += [basis(dim, 1 << b) for b in range(int(math.log2(layout.size_per_thread[dim])))]
    for dim in layout.order:
        s = layout.size_per_thread[dim]
        lane += [basis(dim, s << b) for b in range(int(math.log2(layout.threads_per_warp[dim])))]
    for dim in layout.order:
        s = layout.size_per_thread[dim] * layout.threads_per_warp[dim]
        warp += [basis(dim, s << b) for b in range(int(math.log2(layout.warps_per_cta[dim])))]
    reg = [b for b in reg if b != (0, 0)]  # register bits past the tensor are dropped, not broadcast
    for dim in layout.order:  # repeat the CTA tile until it covers the tensor
        tile = layout.size_per_thread[dim] * layout.threads_per_warp[dim] * layout.warps_per_cta[dim]
        while tile < shape[dim]:
            reg.append(basis(dim, tile))
            tile *= 2
    return reg, lane, warp


def _apply(bases: list, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r = np.zeros(index.shape, dtype=np.int64)
    c = np.zeros(index.shape, dtype=np.int64)
    for bit, (br, bc) in enumerate(bases):
        on = (index >> bit) & 1
        r ^= on * br
        c ^= on * bc
    return r, c


def lane_elements(layout: Blocked, shape: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols), each ``[warps, 32, registers]``: the element every register of every thread holds.

    Each index's bases apply to that index alone (a warp's, a lane's, a register's part of the element),
    and the element is the XOR of the three parts: worked out on each axis, then broadcast."""
    reg, lane, warp = _bases(layout, shape)
    nw, nr = layout.num_warps, 1 << len(reg)
    rr, rc = _apply(reg, np.arange(nr, dtype=np.int64))
    lr, lc = _apply(lane, np.arange(32, dtype=np.int64))
    wr, wc = _apply(warp, np.arange(nw, dtype=np.int64))
    rows = wr[:, None, None] ^ lr[None, :, None] ^ rr[None, None, :]
    cols = wc[:, None, None] ^ lc[None, :, None] ^ rc[None, None, :]
    return rows, cols
