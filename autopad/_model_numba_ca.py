"""cp.async.ca's pair rule (model_cp_async.py, ``line_costs``) compiled with numba, addresses checked as it
counts.

Why: the numpy rule needs sorts (each instruction's dense line ids, the distinct lines a slot and a (bank,
slot) pair) and its address checks alone take 0.4 s a million instructions, 0.15-0.35 million a second in
all on this project's 2-core machine, where the other ops' compiled kernels score over ten million. Per
store phase this kernel keeps the phase's lines in a small hash table (a lane's line is its index there,
below 32), each slot's lines and each (bank, slot) pair's lines as bit masks with their counts, and each
bank's lanes as a count, all kept as the lanes come (one pass), then takes each lane's sum (a second)
and clears what the phase touched (a third):

    cost = max(max W[j], max R[s], max over lanes of W[bank] + R[slot] - L[bank, slot])

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


@njit(nogil=True, cache=True)
def ca_rows(
    shared: np.ndarray,
    glob: np.ndarray,
    wave: np.ndarray,
    ideal: np.ndarray,
    limit: int,
    width: int,
    lanes: int,
) -> int:  # pragma: no cover - compiled
    """Wavefronts and ideal (store phases with an active lane) of each row of ``shared`` / ``glob`` (int64
    (n, warp), -1 inactive) into ``wave`` / ``ideal``; -1, or the first row with a bad address (shared: below
    -1, ``limit`` or more, or off the ``width`` grid; global, where the lane copies: negative or off the
    grid), where it stops: the caller's numpy checks word the error. ``lanes`` = 128 / width a phase, which
    is also the unit-banks of a row and the slots of a line. Every table is left empty after a phase by
    clearing the entries its lanes touched (no stamps, few branches)."""
    n, warp = shared.shape
    phases = warp // lanes
    shift = 0
    while (1 << shift) < width:
        shift += 1
    t_line = np.full(_SLOTS, _EMPTY, dtype=np.int64)  # the phase's lines: slot -> line, its index
    t_id = np.zeros(_SLOTS, dtype=np.int64)
    lane_h = np.zeros(lanes, dtype=np.int64)  # each copying lane's table slot, bank, slot of its line
    lane_b = np.full(lanes, -1, dtype=np.int64)
    lane_s = np.zeros(lanes, dtype=np.int64)
    w_count = np.zeros(lanes, dtype=np.int64)  # W: lanes a unit-bank
    r_mask = np.zeros(lanes, dtype=np.int64)  # R: lines a slot (a bit mask and its count)
    r_count = np.zeros(lanes, dtype=np.int64)
    l_mask = np.zeros(lanes * lanes, dtype=np.int64)  # L: lines a (bank, slot) pair
    l_count = np.zeros(lanes * lanes, dtype=np.int64)
    for i in range(n):
        total = 0
        used = 0
        for p in range(phases):
            base = p * lanes
            nl = 0
            cost = 0
            for k in range(lanes):
                s = shared[i, base + k]
                if s == -1:
                    lane_b[k] = -1
                    continue
                g = glob[i, base + k]
                if s < 0 or s >= limit or (s & (width - 1)) != 0 or g < 0 or (g & (width - 1)) != 0:
                    return i
                ln = g >> 7  # the lane's line, as its index among the phase's lines
                h = (ln * _MIX >> (64 - _BITS)) & (_SLOTS - 1)
                while t_line[h] != _EMPTY and t_line[h] != ln:
                    h = (h + 1) & (_SLOTS - 1)
                if t_line[h] == _EMPTY:
                    t_line[h] = ln
                    t_id[h] = nl
                    nl += 1
                bit = 1 << t_id[h]
                b = (s >> shift) & (lanes - 1)
                sl = (g >> shift) & (lanes - 1)
                pair = b * lanes + sl
                lane_h[k], lane_b[k], lane_s[k] = h, b, sl
                w_count[b] += 1  # W[b], R[slot] and L[b, slot], each line counted once
                r_count[sl] += ((r_mask[sl] >> t_id[h]) & 1) ^ 1
                r_mask[sl] |= bit
                l_count[pair] += ((l_mask[pair] >> t_id[h]) & 1) ^ 1
                l_mask[pair] |= bit
                cost = max(cost, w_count[b], r_count[sl])
            if nl == 0:
                continue
            used += 1
            for k in range(lanes):  # each lane joins its bank's queue to its slot's; then clear its entries
                b = lane_b[k]
                if b >= 0:
                    sl = lane_s[k]
                    cost = max(cost, w_count[b] + r_count[sl] - l_count[b * lanes + sl])
            for k in range(lanes):
                b = lane_b[k]
                if b >= 0:
                    sl = lane_s[k]
                    w_count[b] = 0
                    r_count[sl] = 0
                    r_mask[sl] = 0
                    l_count[b * lanes + sl] = 0
                    l_mask[b * lanes + sl] = 0
                    t_line[lane_h[k]] = _EMPTY
            total += cost
        wave[i] = total
        ideal[i] = used
    return -1
