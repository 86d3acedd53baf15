"""The shared-memory instructions of a Gluon tile move (``smem.store(x)`` / ``smem.load(L)``), per warp and
lane, as autopad's model scores them.

Given the register layout (gluon_blocked.py) and the shared layout (an autopad ``Tile``: ``Swizzled`` or
``Padded``): the vector width is the longest run of register bits that step one element at a time along
the shared layout's contiguous dimension (row-major), capped at 16 bytes, at an XOR swizzle's ``sw_vec``
(chunks are permuted independently, so a vector may not straddle two) and at the padding's alignment
(``vector_cap``); then one instruction per warp per vector of registers: lane ``l`` accesses the element
its registers ``[j*v, (j+1)*v)`` hold, ``v * elem_bytes`` bytes wide. ``Moves`` keeps them stacked per
move, as the tuner's scorer reads them (``autopad.score``), and is made once per distinct (layouts, shape,
vector cap, element size, op), so thousands of candidates that differ only in the shared layout's other
parameters share one pattern object.

Why a module of its own: this is the model's side of a Gluon kernel (numpy only, every ranking of a Gluon
spec goes through it); the register layout's own arithmetic is gluon_blocked.py's, and what Triton itself
says (compiles, its conflict counter) gluon_triton.py's.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from .access import Instruction, PatternCost, score
from .gluon_blocked import Blocked, _bases, lane_elements
from .layouts import Tile

__all__ = [
    "vector_cap",
    "vector_width",
    "instructions",
    "instruction_arrays",
    "moves",
    "Moves",
    "score_layouts",
]


def vector_cap(smem: Tile) -> int:
    """The widest vector (in elements) Triton may use on ``smem``: 16 bytes, no wider than a swizzle chunk
    (chunks move independently, so a vector may not straddle two), and aligned under the padding (row r
    starts r * pad elements on, so only pad's lowest set bit keeps every row's vectors aligned)."""
    cap = max(1, 16 // smem.elem_bytes)
    if smem.max_phase > 1:
        cap = min(cap, smem.sw_vec)
    if smem.pad:
        cap = min(cap, smem.pad & -smem.pad)
    return cap


def _vector_bits(layout: Blocked, shape: Sequence[int], smem: Tile) -> list[int]:
    """Register bits that form one vector: bases (0, 1), (0, 2), (0, 4).. wherever they sit in the register
    index (Triton's ``largestVectorisation`` permutes registers to find them), capped at 16 bytes, at the
    swizzle's ``sw_vec`` chunk and at the padding's alignment (both, for a padded and swizzled tile)."""
    return _capped_bits(_bases(layout, shape)[0], vector_cap(smem))


def _capped_bits(reg: list, cap: int) -> list[int]:
    bits, v = [], 1
    while v < cap and (0, v) in reg:
        bits.append(reg.index((0, v)))
        v *= 2
    return bits


def vector_width(layout: Blocked, shape: Sequence[int], smem: Tile) -> int:
    """Elements per ``ld/st.shared``: registers holding consecutive elements of a row, at most 16 bytes."""
    return 1 << len(_vector_bits(layout, shape, smem))


def instruction_arrays(
    layout: Blocked, shape: Sequence[int], smem: Tile
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """``instructions`` as arrays, in the same order: rows and cols ``(n, 32)``, the register each
    instruction starts at ``(n,)`` (warp ``i // (n / warps)``), and the access width in bytes. The arrays
    are shared between calls (read-only): they depend on the shared layout only through its vector cap."""
    rows, cols, starts, elems = _arrays(layout, tuple(int(s) for s in shape), vector_cap(smem))
    return rows, cols, starts, elems * smem.elem_bytes


@lru_cache(maxsize=4096)
def _arrays(
    layout: Blocked, shape: tuple[int, ...], cap: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(rows, cols, starts, elements per vector) of ``instruction_arrays``, for a vector cap in elements."""
    rows, cols, reg = _lanes(layout, shape)
    vbits = _capped_bits(reg, cap)
    nw, lanes, nr = rows.shape
    vmask = sum(1 << b for b in vbits)
    starts = np.array([j for j in range(nr) if not j & vmask], dtype=np.int64)
    # (warp, lane, register) -> (warp, vector start, lane): one row per warp instruction, warp-major
    r = rows[:, :, starts].transpose(0, 2, 1).reshape(-1, lanes)
    c = cols[:, :, starts].transpose(0, 2, 1).reshape(-1, lanes)
    out = (r, c, np.tile(starts, nw))
    for a in out:
        a.setflags(write=False)
    return (*out, 1 << len(vbits))


@lru_cache(maxsize=1024)
def _lanes(layout: Blocked, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, list]:
    """``lane_elements`` and the register bases, once per (register layout, shape): the vector caps of
    every shared layout share them."""
    return (*lane_elements(layout, shape), _bases(layout, shape)[0])


def instructions(layout: Blocked, shape: Sequence[int], smem: Tile, op: str) -> tuple[Instruction, ...]:
    """Every warp's shared-memory instructions for one ``smem.store(x)`` (op="store") or ``load``.

    Registers are grouped into vectors (``_vector_bits``); one instruction per warp per group, lane l at the
    group's first element. Broadcast copies held by other warps are kept (they issue real instructions).
    """
    return tuple(moves((layout, shape, smem, op)))


class Moves(Sequence):
    """The instructions of one or more register <-> shared moves, in order (``instructions`` of each
    move, one after the other), kept as the scorer reads them: ``groups`` of (op, access bytes, rows
    (n, 32), cols (n, 32), counts (n,)), one per move. Iterating makes the ``Instruction`` objects, names
    and all (``explain``, ``access.score``); the tuner's scorer never does (``autopad.score``)."""

    def __init__(self, groups: tuple, warps: tuple[int, ...], starts: tuple[np.ndarray, ...]) -> None:
        self.groups, self._warps, self._starts = groups, warps, starts

    def __len__(self) -> int:
        return sum(len(g[2]) for g in self.groups)

    def __getitem__(self, i: int | slice) -> Instruction | list[Instruction]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        k = i + len(self) if i < 0 else i
        for (op, width, rows, cols, counts), nw, starts in zip(self.groups, self._warps, self._starts):
            if 0 <= k < len(rows):
                per_warp = len(rows) // max(1, nw)
                name = f"warp {k // per_warp} reg {int(starts[k])}"
                return Instruction(name, op, width, rows[k], cols[k], int(counts[k]))
            k -= len(rows)
        raise IndexError(i)

    def __iter__(self):  # noqa: ANN204
        return (self[i] for i in range(len(self)))


@lru_cache(maxsize=4096)
def _moves(key: tuple) -> Moves:
    groups, warps, starts = [], [], []
    for layout, shape, cap, elem_bytes, op in key:
        rows, cols, st, elems = _arrays(layout, shape, cap)
        counts = np.ones(len(rows), dtype=np.int64)
        counts.setflags(write=False)
        groups.append((op, elems * elem_bytes, rows, cols, counts))
        warps.append(layout.num_warps)
        starts.append(st)
    return Moves(tuple(groups), tuple(warps), tuple(starts))


def moves(*parts: tuple[Blocked, Sequence[int], Tile, str]) -> Moves:
    """The instructions of the moves ``(register layout, shape, shared tile, op)``, in order, as one
    ``Moves``: made once per distinct (layouts, shape, vector cap, element size, op) and then shared,
    so a tuner's thousands of candidates that differ only in the shared layout's other parameters
    hold one pattern object (``autopad.score`` scores a pattern object once per layout period)."""
    key = tuple(
        (layout, tuple(int(s) for s in shape), vector_cap(smem), smem.elem_bytes, op)
        for layout, shape, smem, op in parts
    )
    return _moves(key)


def score_layouts(
    layout: Blocked, shape: Sequence[int], smem: Tile, op: str, arch: str = "sm_90"
) -> PatternCost:
    """Wavefronts of one tile move between registers (``layout``) and shared memory (``smem``)."""
    return score(instructions(layout, shape, smem, op), smem, arch)
