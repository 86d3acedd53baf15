"""cp.async.ca's pair rule (model_cp_async.py, ``line_costs``) compiled with numba, addresses checked first.

Why: the numpy rule needs sorts (each instruction's dense line ids, the distinct lines a slot and a (bank,
slot) pair) and its address checks alone take 0.4 s a million instructions, 0.15-0.35 million a second in
all on this project's 2-core machine. Per store phase (``lanes = 128 / width`` lanes) the rule is

    cost = max over the phase's active lanes of W[bank] + R[slot] - L[bank, slot]

(W: lanes writing a unit-bank; R: distinct lines reading a slot; L: distinct lines among the lanes linking
a bank and a slot; the lanes' term alone is the max of W, R and the pairs: model_cp_async.py). A lane's
global unit ``u = g >> log2(width)`` is its (line, slot), so R counts distinct units at a slot and L
distinct units at a (bank, slot) pair. Each instruction goes through:

1. **A check pass** with no branch (LLVM vectorises it): every address checked at once (shared: below -1,
   ``limit`` or more, off the ``width`` grid; global, where the lane copies: negative or off the grid),
   the instruction's index returned on a bad one; then each phase's lowest and highest active line.
2. **One line a phase** (lane-ordered sources, any order inside a line, 4-byte copies permuted across the
   warp's one line): R and L are 1 wherever a lane links, so the phase costs its most lanes in one
   unit-bank. Counted as such: no table.
3. **16-byte copies** (8 lanes a phase): every pair of a phase's lanes compared, no table. Without a unit
   repeated in the phase, R and L count lanes, so W + R - L is the lanes that share lane k's unit-bank or
   its slot; the same pass counts the pairs with one unit (inactive lanes take keys of their own), and a row
   with a repeat goes on to 4. Against 4 alone on one core (2026-12-06, best of 14 alternated runs, batches
   of 100,000, several such runs): 99-103 ns an instruction against 146-166 on permuted and random lines,
   the answers equal on 8.9 million rows of 17 kinds. At 8 and 4 bytes (16 and 32 lanes a phase) the same
   all-pairs count, or all-pairs only for the repeats, was slower than the table (199 / 175 against 156-162
   ns at 8 bytes).
   The 8-byte kernel, which leaves this step out at compile time (its machine code differs only by the
   step's three 32-entry arrays), ran 3-5% slower beside the previous one (about 154 -> 160 ns).
4. **Otherwise** every lane files its bit in two 33-entry lane masks, ``B`` of its (phase, unit-bank) and
   ``S`` of its (phase, slot), and its unit in a hash table stamped with the instruction (never cleared:
   another instruction's entry reads as empty), which finds the lanes that repeat a lower lane's unit in
   the phase (``rep``: that lane). Without such repeats, which random sources almost never have, a lane's
   term is ``|B ∪ S|``: W + R - L counted as lanes, one popcount. With them, ``G[b]`` (B with each
   repeating lane replaced by its rep) and ``F`` (the lanes that repeat no one) give
   ``R[s] - L[b, s] = |S[s] ∩ F \\ G[b]|``, so a lane's term is ``|B[b]| + |S[s] & F & ~G[b]|``.

Against the previous kernel (2026-12-06; a table of the phase's lines, a count a unit-bank and line masks
a slot and a (bank, slot) pair, filed lane by lane with the checks in the same loop, then cleared) on one
core (batches of 200,000, best of 7, the two alternated in one process, 2026-12-06): one line a phase
15.9-20.0 million instructions a second against 5.9-7.0; 4-byte random lines 7.3 against 5.5; 8- and
16-byte permuted or random lines 5.6-6.6 against 3.6-6.1 (the unit table and the second pass over the
lanes cost about as much as the old kernel's filing). On 2 cores: model_cp_async.py's docstring and
benchmarks/results/cpu/cp_async_ca_speed_2026-12-06c.txt. The answers are the previous kernel's on 21.6
million random instructions compared (widths 4, 8, 16; lane-ordered, permuted lines, random lines, few
lines with repeated units, colliding rows, units 2**30 apart, 60% inactive lanes with any source, the top
of the global space, one or two units a warp; and the first bad row on bad addresses), and the numpy
rule's (tests/test_model_cp_async.py compares both on every recorded probe and on random batches).
Loaded by model_cp_async.py only when numba is wanted (never at ``import autopad``); cached on disk like
_model_numba.py.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["ca_rows"]


WARP = 32  # lanes a row: the masks hold one bit a lane (the wrapper sends 32-lane warps only)
_BITS = 11
_SLOTS = 1 << _BITS  # the unit table: at most 32 units an instruction, so rarely a collision
_MIX = -7046029254386353131  # 0x9E3779B97F4A7C15 as int64: a multiplicative hash's odd constant
_LANE = 6  # an entry is stamp << _LANE | lane; stamp = instruction + 1, so an all-zero table is empty
_FAR = 1 << 62  # above any line (g >> 7 < 2**56): an inactive lane's line for the lowest-line reduction
_IDLE = WARP | WARP << 8  # an inactive lane's (B, S) entries: the 33rd of each, always empty


@njit(inline="always")
def _bits(x: int) -> int:  # pragma: no cover - compiled
    """The set bits of ``x`` (LLVM turns this into one popcnt)."""
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
    are constants there."""
    n = shared.shape[0]
    phases = WARP // lanes
    shift = 0  # log2 width: a unit-bank of the shared row, a unit (line, slot) of global memory
    while (1 << shift) < width:
        shift += 1
    off = -(1 << 63) | (width - 1)  # an address with any of these bits set is negative or off the grid
    tab = np.zeros(_SLOTS, dtype=np.int64)  # the unit table (0: never a stamped entry)
    bm = np.zeros(WARP + 1, dtype=np.int64)  # B: the lanes writing each (phase, unit-bank), + _IDLE's
    sm = np.zeros(WARP + 1, dtype=np.int64)  # S: the lanes reading each (phase, slot), + _IDLE's
    gm = np.zeros(WARP + 1, dtype=np.int64)  # G: B with repeating lanes replaced by their reps
    where = np.zeros(WARP, dtype=np.int64)  # each lane's B index | its S index << 8 (_IDLE inactive)
    rep_k = np.zeros(WARP, dtype=np.int64)  # the instruction's repeating lanes and their reps
    rep_j = np.zeros(WARP, dtype=np.int64)
    wc = np.zeros(WARP, dtype=np.int64)  # one line a phase: lanes a (phase, unit-bank)
    kb = np.zeros(WARP, dtype=np.int64)  # 16-byte copies: each lane's unit-bank, slot and unit
    ks = np.zeros(WARP, dtype=np.int64)
    ku = np.zeros(WARP, dtype=np.int64)
    for i in range(n):
        bad = 0  # 1. the check pass: no branch, so LLVM vectorises it
        top = 0
        for k in range(WARP):
            s = shared[i, k]
            on = s != -1
            bad |= (s | glob[i, k]) & off if on else 0
            top = max(top, s)
        if bad != 0 or top >= limit:
            return i
        many = False  # a phase whose active lanes read two lines or more
        for p in range(phases):
            lo = _FAR
            hi = -1
            for k in range(p * lanes, p * lanes + lanes):
                on = shared[i, k] != -1
                ln = glob[i, k] >> 7
                lo = min(lo, ln if on else _FAR)
                hi = max(hi, ln if on else -1)
            many |= hi > lo
        total = 0
        used = 0  # phases with an active lane: ideal
        if not many:  # 2. one line a phase: its most lanes in one unit-bank
            for k in range(WARP):
                s = shared[i, k]
                if s != -1:
                    wc[(k & (WARP - lanes)) | ((s >> shift) & (lanes - 1))] += 1
            for p in range(phases):
                cost = 0
                for j in range(p * lanes, p * lanes + lanes):
                    cost = max(cost, wc[j])
                    wc[j] = 0
                total += cost
                used += cost > 0
            wave[i] = total
            ideal[i] = used
            continue
        if lanes == 8:  # 3. 16-byte copies: all pairs of a phase's 8 lanes, no tables
            rep = 0  # lane pairs (k, j) of a phase with one unit, k == j included: WARP without repeats
            for k in range(WARP):
                s = shared[i, k]
                u = glob[i, k] >> shift
                on = s != -1
                # an inactive lane takes keys of its own (negative, unlike any active lane's or other's)
                kb[k] = (s >> shift) & (lanes - 1) if on else -1 - k
                ks[k] = u & (lanes - 1) if on else -1 - k - WARP
                ku[k] = u if on else -1 - k
            for p in range(phases):
                cost = 0
                f = p * lanes
                for k in range(f, f + lanes):
                    c = 0  # without repeats W + R - L = the lanes sharing lane k's unit-bank or its slot
                    bk = kb[k]
                    sk = ks[k]
                    uk = ku[k]
                    for j in range(f, f + lanes):
                        c += (kb[j] == bk) | (ks[j] == sk)
                        rep += ku[j] == uk
                    cost = max(cost, c if bk >= 0 else 0)
                total += cost
                used += cost > 0
            if rep == WARP:
                wave[i] = total
                ideal[i] = used
                continue
            total = 0  # (rare) a unit repeated in a phase: the masks below
            used = 0
        stamp = (i + 1) << _LANE  # 4. masks, and the lanes repeating a unit
        reps = 0
        act = 0  # the active lanes, less (below) those that repeat a unit: F
        for k in range(WARP):
            s = shared[i, k]
            if s == -1:
                where[k] = _IDLE
                continue
            act |= 1 << k
            u = glob[i, k] >> shift
            first = k & (WARP - lanes)  # the phase's first lane: its B and S entries start there
            b = first | ((s >> shift) & (lanes - 1))
            sl = first | (u & (lanes - 1))
            bm[b] |= 1 << k
            sm[sl] |= 1 << k
            where[k] = b | sl << 8
            h = (u * _MIX >> (64 - _BITS)) & (_SLOTS - 1)
            e = tab[h] ^ stamp  # below 64: this instruction's entry, lane e
            while e < 64:  # (rare) a lane of the same phase with the same unit, or a collision: probe on
                if (e ^ k) < lanes and (glob[i, e] >> shift) == u:
                    break
                h = (h + 1) & (_SLOTS - 1)
                e = tab[h] ^ stamp
            if e < 64:  # lane k repeats lane e's unit (e the first lane with it: only those are filed)
                rep_k[reps] = k
                rep_j[reps] = e
                reps += 1
            else:
                tab[h] = stamp | k
        if reps == 0:  # every unit once: W + R - L = |B ∪ S|
            for p in range(phases):
                cost = 0
                for k in range(p * lanes, p * lanes + lanes):
                    q = where[k]
                    cost = max(cost, _bits(bm[q & 255] | sm[q >> 8]))
                total += cost
                used += cost > 0
        else:  # W + R - L = |B| + |S & F & ~G|
            for j in range(WARP + 1):
                gm[j] = bm[j]
            for r in range(reps):
                k = rep_k[r]
                b = where[k] & 255
                gm[b] = (gm[b] & ~(1 << k)) | (1 << rep_j[r])
                act &= ~(1 << k)
            for p in range(phases):
                cost = 0
                for k in range(p * lanes, p * lanes + lanes):
                    q = where[k]
                    b = q & 255
                    cost = max(cost, _bits(bm[b]) + _bits(sm[q >> 8] & act & ~gm[b]))
                total += cost
                used += cost > 0
        for j in range(WARP):  # the masks empty again (the table needs no clearing: stamps)
            bm[j] = 0
            sm[j] = 0
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
    (n, 32), -1 inactive) into ``wave`` / ``ideal``; -1, or the first row with a bad address (shared: below
    -1, ``limit`` or more, or off the ``width`` grid; global, where the lane copies: negative or off the
    grid), where it stops: the caller's numpy checks word the error. A phase is 128 / width lanes, which is
    also the unit-banks of a row and the slots of a line. Runs without the GIL (model_cp_async.py splits a
    batch over threads)."""
    if width not in _BY_WIDTH:
        raise ValueError(f"cp.async.ca copies 4, 8 or 16 bytes a lane; got {width}")
    if shared.ndim != 2 or shared.shape[1] != WARP or glob.shape != shared.shape:
        raise ValueError(f"ca_rows takes ({WARP}-lane) rows; got {shared.shape} and {glob.shape}")
    return int(_BY_WIDTH[width](shared, glob, wave, ideal, limit))
