"""cp.async.ca's pair rule (model_cp_async.py, ``line_costs``) compiled with numba, addresses checked as it
counts.

Why: the numpy rule needs sorts (each instruction's dense line ids, the distinct lines a slot and a (bank,
slot) pair) and its address checks alone take 0.4 s a million instructions, 0.15-0.35 million a second in
all on this project's 2-core machine, where the other ops' compiled kernels score over ten million. Per
store phase this kernel keeps the phase's lines in a small hash table (a line's index there, below 32, is
its bit), each slot's lines and each (bank, slot) pair's lines as bit masks, and each unit-bank's lanes as a
count, all kept as the lanes come (one pass); then takes each lane's sum, the masks' lines counted by
popcount (a second pass), and clears what the phase touched (a third):

    cost = max(max W[j], max R[s], max over lanes of W[bank] + R[slot] - L[bank, slot])
         = max over lanes of W[bank] + R[slot] - L[bank, slot]

(the lanes' term alone suffices: L[b, s] counts lines among lanes that each add to W[b], and among lines that
each add to R[s], so a lane's term is at least W of its bank and R of its slot). Fewer stores a lane than
the first version of this kernel (counts kept only for W, no per-lane bank and slot arrays): about twice as
fast, 7-10 million instructions a second on 2 cores (benchmarks/bench_ca_speed.py).

The answers equal the numpy rule's (tests/test_model_cp_async.py compares both on every recorded probe and
on random batches). Loaded by model_cp_async.py only when numba is wanted (never at ``import autopad``);
cached on disk like _model_numba.py.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["ca_rows"]


_BITS = 10
_SLOTS = 1 << _BITS  # open-addressing table of a phase's lines: at most 32, so rarely a collision
_MIX = -7046029254386353131  # 0x9E3779B97F4A7C15 as int64: a multiplicative hash's odd constant
_EMPTY = -1  # a free slot of the line table (a line number is never negative)


@njit(inline="always")
def _lines(x: int) -> int:  # pragma: no cover - compiled
    """The set bits of ``x``: the lines a mask holds (LLVM turns this into one popcnt)."""
    x = x - ((x >> 1) & 0x5555555555555555)
    x = (x & 0x3333333333333333) + ((x >> 2) & 0x3333333333333333)
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0F
    return (x * 0x0101010101010101) >> 56


@njit(inline="always")
def _rows(
    shared: np.ndarray,
    glob: np.ndarray,
    wave: np.ndarray,
    ideal: np.ndarray,
    limit: int,
    width: int,
    lanes: int,
) -> int:  # pragma: no cover - compiled
    """``ca_rows``' body, inlined into one kernel a width so that the width, the lanes, the shifts and masks
    are constants there (the short loops of 8 and 16 lanes unrolled: 10-20% faster at 8 and 16 bytes)."""
    n, warp = shared.shape
    phases = warp // lanes
    shift = 0  # log2 width: a unit-bank of the shared row, a slot of the global line
    while (1 << shift) < width:
        shift += 1
    lb = 0  # log2 lanes: a (bank, slot) pair is bank << lb | slot
    while (1 << lb) < lanes:
        lb += 1
    t_line = np.full(_SLOTS, _EMPTY, dtype=np.int64)  # the phase's lines: slot -> line, and its bit
    t_bit = np.zeros(_SLOTS, dtype=np.int64)
    lane_p = np.zeros(lanes, dtype=np.int64)  # each lane's pair | its table slot << 16; -1 inactive
    w_count = np.zeros(lanes, dtype=np.int64)  # W: lanes a unit-bank
    r_mask = np.zeros(lanes, dtype=np.int64)  # R: lines a slot, as a bit mask
    l_mask = np.zeros(lanes * lanes, dtype=np.int64)  # L: lines a (bank, slot) pair, as a bit mask
    for i in range(n):
        total = 0
        used = 0
        for p in range(phases):
            base = p * lanes
            nl = 0
            for k in range(lanes):
                s = shared[i, base + k]
                if s == -1:
                    lane_p[k] = -1
                    continue
                g = glob[i, base + k]
                if s < 0 or s >= limit or (s & (width - 1)) != 0 or g < 0 or (g & (width - 1)) != 0:
                    return i
                ln = g >> 7  # the 128-byte global line the lane reads
                h = (ln * _MIX >> (64 - _BITS)) & (_SLOTS - 1)
                while True:  # linear probing; a branch taken alike by lanes of one line (no store if found)
                    t = t_line[h]
                    if t == ln:
                        bit = t_bit[h]
                        break
                    if t == _EMPTY:
                        t_line[h] = ln
                        bit = 1 << nl
                        t_bit[h] = bit
                        nl += 1
                        break
                    h = (h + 1) & (_SLOTS - 1)
                b = (s >> shift) & (lanes - 1)  # the unit-bank it writes
                sl = (g >> shift) & (lanes - 1)  # the slot of its line it reads
                pair = (b << lb) | sl
                lane_p[k] = pair | (h << 16)
                w_count[b] += 1
                r_mask[sl] |= bit
                l_mask[pair] |= bit
            if nl == 0:
                continue
            used += 1
            cost = 0
            for k in range(lanes):  # each lane joins its bank's queue to its slot's
                q = lane_p[k]
                if q >= 0:
                    pair = q & 0xFFFF
                    c = w_count[pair >> lb] + _lines(r_mask[pair & (lanes - 1)]) - _lines(l_mask[pair])
                    cost = max(cost, c)
            for k in range(lanes):  # clear what the lanes touched; W and R whole (lanes entries each)
                q = lane_p[k]
                if q >= 0:
                    l_mask[q & 0xFFFF] = 0
                    t_line[q >> 16] = _EMPTY
            for j in range(lanes):
                w_count[j] = 0
                r_mask[j] = 0
            total += cost
        wave[i] = total
        ideal[i] = used
    return -1


@njit(nogil=True, cache=True)
def _rows4(shared, glob, wave, ideal, limit):  # pragma: no cover - compiled
    return _rows(shared, glob, wave, ideal, limit, 4, 32)


@njit(nogil=True, cache=True)
def _rows8(shared, glob, wave, ideal, limit):  # pragma: no cover - compiled
    return _rows(shared, glob, wave, ideal, limit, 8, 16)


@njit(nogil=True, cache=True)
def _rows16(shared, glob, wave, ideal, limit):  # pragma: no cover - compiled
    return _rows(shared, glob, wave, ideal, limit, 16, 8)


_BY_WIDTH = {4: _rows4, 8: _rows8, 16: _rows16}


def ca_rows(
    shared: np.ndarray,
    glob: np.ndarray,
    wave: np.ndarray,
    ideal: np.ndarray,
    limit: int,
    width: int,
) -> int:
    """Wavefronts and ideal (store phases with an active lane) of each row of ``shared`` / ``glob`` (int64
    (n, warp), -1 inactive) into ``wave`` / ``ideal``; -1, or the first row with a bad address (shared: below
    -1, ``limit`` or more, or off the ``width`` grid; global, where the lane copies: negative or off the
    grid), where it stops: the caller's numpy checks word the error. A phase is 128 / width lanes, which is
    also the unit-banks of a row and the slots of a line. Every table is left empty after a phase. Runs
    without the GIL (model_backend splits a batch over threads)."""
    if width not in _BY_WIDTH:
        raise ValueError(f"cp.async.ca copies 4, 8 or 16 bytes a lane; got {width}")
    return int(_BY_WIDTH[width](shared, glob, wave, ideal, limit))
