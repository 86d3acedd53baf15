"""The steps of a scored chunk that find what is distinct: a layout's periods (``_periods``: after how many
rows and columns it repeats up to a uniform shift), distinct codes (``_ids``), distinct instructions
(``_distinct_instructions``: by a hash, checked exactly) and the model's costs of distinct address rows
(``_costs``: rows equal once moved by whole units of the access cost the same).

Why a module of its own: these are the exact-sharing primitives ``score_chunk._score_chunk`` is built from
(score.py's docstring explains why each level of sharing is exact), apart from the chunk's bookkeeping
that strings them together; each is tested on its own (tests/test_score_chunk.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .arch import Arch
from .distinct import _groups, checked_moved_distinct
from .layout_tile import Tile
from .model import analyze_batch, analyze_distinct, row_hashes
from .model_rules import ADDRESS_LIMIT, _rule

__all__: list[str] = []  # autopad.score_chunk and autopad.score import the underscored names below

_CHECK_BYTES = 1 << 17  # lanes of instructions checked against their hash's first at a time, in bytes
# (temporaries below 128 KB: larger ones are fresh pages from the system at each block, early in a process)
_HASH_ROWS = 1 << 12  # instructions hashed at a time (their int64 copy stays in cache)


def _periods(layout: Any) -> tuple[int, int] | None:
    """(rows, cols) after which the layout repeats up to a uniform byte shift, or None when unknown.

    Padded rows shift by ``row_stride`` every row and by one element every column; an XOR swizzle's
    pattern repeats every ``per_phase * max_phase`` rows and every ``sw_vec * max_phase`` columns (the XOR
    touches only the chunk index's low bits). A uniform shift of every lane moves them all by the same
    number of banks (or whole bank turns), which cannot change a conflict, so instructions that differ only
    by such a shift cost the same. The shift must also be whole 4-byte words: 2-byte elements in rows of
    odd length would move lanes between words, so the periods are stretched until the shift is.
    """
    rp = getattr(layout, "row_period", None)
    if isinstance(rp, tuple) and len(rp) == 2:
        return rp
    if not all(hasattr(layout, a) for a in ("row_stride", "per_phase", "max_phase", "sw_vec", "elem_bytes")):
        return None
    e, m = int(layout.elem_bytes), int(layout.max_phase)
    p = int(layout.per_phase) * m if m > 1 else 1
    q = int(layout.sw_vec) * m if m > 1 else 1
    p *= 4 // math.gcd(p * int(layout.row_stride) * e, 4)
    q *= 4 // math.gcd(q * e, 4)
    return p, q


def _period(layout: Any, prm: tuple[int, ...] | None, periods: _PerLayout) -> tuple[int, int] | None:
    """``_periods`` of a layout, read off its tile formula where it is a tile of one (no property per
    parameter: a first ranking asks for some hundreds of layouts); else ``periods.of`` it."""
    if prm is None or prm[5] != 1 or not isinstance(layout, Tile) or hasattr(layout, "row_period"):
        return periods.of(layout)
    rs, lv, lp, mm, e = prm[:5]
    m = mm + 1
    p = (1 << lp) * m if m > 1 else 1
    q = (1 << lv) * m if m > 1 else 1
    p *= 4 // math.gcd(p * rs * e, 4)
    q *= 4 // math.gcd(q * e, 4)
    return p, q


class _PerLayout(dict):
    """A layout's periods or tile parameters, computed once per distinct layout (``fn`` on a miss)."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        super().__init__()
        self.fn = fn

    def of(self, layout: Any) -> Any:
        try:
            return self[layout] if layout in self else self.setdefault(layout, self.fn(layout))
        except TypeError:  # unhashable
            return self.fn(layout)


def _ids(code: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """(each entry's distinct index, in the codes' order; one entry holding each distinct code) of codes
    in [0, size): marks in a table of ``size`` where that is small (no sort), else one sort of the codes
    each packed with its entry's index where that fits in 63 bits (a sort of values: several times faster
    than ``np.unique``'s argsort, or than looking each code up in the sorted distinct ones), else
    ``np.unique``. The distinct indices follow the codes' order in every case."""
    bits = max(1, (len(code) - 1).bit_length())
    if size <= max(8 * len(code), 1 << 22):
        seen = np.zeros(size, dtype=bool)
        seen[code] = True
        rank = np.cumsum(seen, dtype=np.int32)  # (ranks in place: one table, not two)
        rank -= 1
        ids = rank.take(code)
        count = int(rank[-1]) + 1 if size else 0
        del rank
    elif size < 1 << (62 - bits):
        sk = code.astype(np.int64) << bits  # (in place from here: every fresh page costs early in a process)
        sk |= np.arange(len(code))
        sk.sort()
        order = sk & ((1 << bits) - 1)
        sk >>= bits
        new = np.empty(len(sk), dtype=bool)
        new[:1] = True
        np.not_equal(sk[1:], sk[:-1], out=new[1:])
        del sk
        run = np.cumsum(new)
        run -= 1
        ids = np.empty(len(code), dtype=np.int64)
        ids[order] = run
        count = int(ids[order[-1]]) + 1 if len(code) else 0
    else:
        uniq, ids = np.unique(code, return_inverse=True)
        ids, count = ids.ravel(), len(uniq)
    rep = np.empty(count, dtype=np.int64)
    rep[ids] = np.arange(len(code))
    return ids, rep


def _distinct_instructions(
    kind: np.ndarray, rows: np.ndarray, cols: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(one instruction holding each distinct one, each instruction's distinct index) of instructions given
    by kind (n,), rows and cols (n, warp): equal kinds and lanes, matched by a hash and checked exactly
    (a collision, or lanes wider than the hash: every instruction its own)."""
    n, w = rows.shape
    if 2 * w + 1 > 128:
        return np.arange(n), np.arange(n)
    h = np.empty(n, dtype=np.int64)
    with np.errstate(over="ignore"):  # the hash wraps around 2**64
        for s in range(0, n, _HASH_ROWS):
            e = s + _HASH_ROWS
            h[s:e] = row_hashes(rows[s:e]) + row_hashes(cols[s:e], w) + row_hashes(kind[s:e, None], 2 * w)
    uniq, inst_of = _groups(h)  # (one sort of values, no argsort; hashes equal in their high bits group)
    step = max(1, _CHECK_BYTES // (w * max(rows.itemsize, cols.itemsize)))
    for s in range(0, n, step):  # every instruction equals its hash's first, or hashes collided
        rep = uniq.take(inst_of[s : s + step])
        same = (rows.take(rep, axis=0) == rows[s : s + step]).all() and (
            cols.take(rep, axis=0) == cols[s : s + step]
        ).all()
        if not same or not (kind.take(rep) == kind[s : s + step]).all():
            return np.arange(n), np.arange(n)
    return uniq, inst_of


def _costs(addr: np.ndarray, width: int, op: str, arch: Arch) -> tuple[np.ndarray, np.ndarray]:
    """``model.analyze_distinct`` of a batch of formula addresses: int32 batches of a rule that broadcasts
    have their bounds checked in the pass that hashes them (``distinct.checked_moved_distinct``), not in
    two passes of their own; any other batch, or one with a bad address, goes to ``analyze_distinct``
    (whose error names the row).

    Rows here are equal once moved by whole *units* of the access (``_Rule.unit``: its width, or one bank
    for narrower ones), not whole turns of the banks: a row moved by one unit has every lane's unit number
    one higher, so every lane's unit-bank turns by one, alike: the per-bank counts of distinct units are
    only permuted (the phase costs their largest), pairs of lanes on one address stay paired, and every
    address stays aligned. The fp16 transpose's 151,000 address rows are 4,950 such rows, 18,500 moved by
    whole turns (tests/test_score_chunk.py checks the rule for every op and width)."""
    rule = _rule(op, width, arch)
    if addr.dtype != np.int32 or len(addr) < 2 or addr.shape[1] > 64 or not (rule.broadcast or rule.merge):
        return analyze_distinct(addr, width, op, arch)
    got = checked_moved_distinct(addr, rule.unit, ADDRESS_LIMIT)
    if got is None:
        return analyze_distinct(addr, width, op, arch)
    reps, inverse = got
    try:
        wave, ideal = analyze_batch(reps, width, op, arch)
    except ValueError:
        return analyze_distinct(addr, width, op, arch)  # raises, naming the caller's row
    return wave.take(inverse), ideal.take(inverse)
