"""The bank-conflict model compiled with numba: the rules of model_rules.py, vectorised across instructions.

Why a second implementation: the numpy path sorts every phase of every instruction with ``np.sort`` on
small rows, 0.3 to 1 million warp instructions a second on 2 cores; the tuner wants tens of millions.
model_backend.py imports this module on the first analyze/analyze_batch call, never at ``import autopad``, and
falls back to numpy when numba is missing; ``AUTOPAD_MODEL_BACKEND=numpy`` forces the fallback, and
tests/test_model_backend.py checks that both give identical numbers on random input.

The method, for a block of 128 instructions at a time:

1. **Keys.** Each lane becomes one int32, ``phase << 29 | unit-bank << 24 | row``: ``unit`` is the access
   width, or one 4-byte bank for narrower accesses; ``x = address >> log2(unit)`` numbers the unit;
   ``x & (unit_banks - 1)`` is its unit-bank and ``x >> log2(unit_banks)`` the row within that bank (a
   16-byte access covers 4 banks that all meet the same competitors, so counting 16-byte units over 8
   unit-banks equals counting words over 32 banks). An inactive lane (or one that takes no part, such
   as lanes 8-31 of ``ldmatrix.x1``) becomes ``SENT``, larger than every key. The row's address checks
   and the pair-merge test of 8/16-byte loads run in the same pass.
2. **Sort.** Batcher's odd-even merge network sorts each phase's keys (19, 63 or 191 compare-exchanges
   for phases of 8, 16 or 32 lanes). Stored lane-major (lane i of 128 instructions side by side), every
   compare-exchange is a min/max over 128 contiguous int32s: LLVM vectorises it.
3. **Count.** After sorting, one bank's keys are adjacent and equal keys (a broadcast word) are
   neighbours. One sweep over the 32 positions counts, per (phase, unit-bank), the keys that differ from
   their left neighbour (atomics: every active key); a phase costs the largest count; wavefronts sum the
   phases, ideal counts the non-empty ones.

Measured on this project's 2-core machine: about 85 ns per instruction and thread, of which ~25 ns is
reading the 256-byte instruction from memory. Addresses of 2**29 and more do not fit the int32 key; the
kernel returns ``NEED_NUMPY`` and model_backend.py uses numpy for that batch (real shared addresses are
< 2**18).

Compiled once per machine and cached on disk (numba ``cache=True``: ``__pycache__`` next to this file, or
numba's user cache directory where that is read-only); a later process only loads the machine code.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import njit

__all__ = ["NEED_NUMPY", "SUPPORTED_LANES", "analyze_rows", "network"]

# phase sizes the key layout serves (model_backend.py routes other geometries to numpy)
SUPPORTED_LANES = (8, 16, 32)
NEED_NUMPY = -2  # analyze_rows' answer for addresses >= 2**29 (they do not fit an int32 key)
ERR_NEGATIVE, ERR_RANGE, ERR_ALIGN, ERR_MISSING = 1, 2, 3, 4  # err[2]; model_backend words the ValueError
_SENT = 0x7FFFFFFF  # an inactive lane's key: sorts after every real key (those stay below 2**31 - 1)
_SENT32, _I24, _I29, _I31 = (
    np.int32(_SENT),
    np.int32(24),
    np.int32(29),
    np.int32(31),
)  # int32 constants keep int32 arithmetic
_BLOCK = 128  # instructions sorted side by side (keys + sort buffer: 32 KiB, about one L1)
_BIG = 1 << 29


def _batcher(n: int) -> list[tuple[int, int]]:
    """Batcher's odd-even merge sort network for n (a power of two) inputs, as compare-exchange pairs."""
    pairs = []
    p = 1
    while p < n:
        k = p
        while k >= 1:
            for j in range(k % p, n - k, 2 * k):
                for i in range(min(k, n - j - k)):
                    if (i + j) // (p * 2) == (i + j + k) // (p * 2):
                        pairs.append((i + j, i + j + k))
            k //= 2
        p *= 2
    return pairs


@lru_cache(maxsize=8)
def network(segment: int) -> np.ndarray:
    """(pairs, 2) int64: compare-exchanges sorting each run of ``segment`` lanes of a 32-lane warp."""
    one = _batcher(segment)
    pairs = [(s + a, s + b) for s in range(0, 32, segment) for a, b in one]
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)


@njit(inline="always")
def _key(a, phase, off, ushift, sbits, smask):  # pragma: no cover - compiled
    """``phase | unit-bank << 24 | row`` of byte address ``a`` in int32; ``_SENT`` when inactive or
    (``off`` = -1) when the lane takes no part. Every step is cast back to int32 so it stays 8-wide."""
    a32 = np.int32(a)
    x = np.int32(a32 >> ushift)
    gone = np.int32(np.int32(a32 >> _I31) | off)  # all ones for an inactive lane or one that takes no part
    key = np.int32(phase | np.int32(np.int32(x & smask) << _I24) | np.int32(x >> sbits))
    return np.int32(np.int32(key & ~gone) | np.int32(_SENT32 & gone))


@njit(nogil=True, cache=True, error_model="numpy")
def analyze_rows(addr, net, params, wave, ideal, costs, err):  # pragma: no cover - compiled
    """Wavefronts and ideal of each row of ``addr`` (n, 32) int64 into ``wave``/``ideal``.

    ``net`` is ``network(segment)``. ``params`` (int64): log2 unit, log2 unit-banks, lanes per phase,
    lanes that take part, merge (8/16-byte loads pair lanes), atomic, need_all (every lane that takes part
    has an address), alignment mask, address limit, check. ``costs`` is (n, phases) zeros to receive the
    per-phase costs, or (0, 0). Returns -1; the first bad row with ``err`` = (row, lane, code); or
    ``NEED_NUMPY``.
    """
    ushift, sbits, lanes0, nl = params[0], params[1], params[2], params[3]
    merge, atomic, need_all = params[4], params[5], params[6]
    amask, limit, check = params[7], params[8], params[9]
    smask = np.int32((1 << sbits) - 1)
    us32, sb32 = np.int32(ushift), np.int32(sbits)
    atomic32 = np.int32(atomic)
    want = costs.shape[0] > 0
    B = _BLOCK
    keys = np.empty((B, 32), np.int32)  # instruction-major, as computed
    T = np.empty((32, B), np.int32)  # lane-major: row i holds lane i of every instruction of the block
    run = np.empty(B, np.int32)  # distinct keys so far in the current (phase, unit-bank)
    phase_max = np.empty(B, np.int32)
    total = np.empty(B, np.int32)
    phases = np.empty(B, np.int32)
    # per lane: its phase bits (plain and merged phases) and -1 for lanes that take no part
    ph0 = np.empty(32, np.int32)
    ph1 = np.empty(32, np.int32)
    off = np.empty(32, np.int32)
    part = np.empty(32, np.int64)
    lsh = 3 if lanes0 == 8 else (4 if lanes0 == 16 else 5)
    for lane in range(32):
        ph0[lane] = (lane >> lsh) << 29
        ph1[lane] = (lane >> (lsh + 1)) << 29
        off[lane] = -1 if lane >= nl else 0
        part[lane] = 1 if lane < nl else 0
    n = addr.shape[0]
    for b0 in range(0, n, B):
        nb = min(B, n - b0)
        # 1. checks and keys in one pass over the 32 lanes (vectorised), then the merge test
        for r in range(nb):
            rr = b0 + r  # 2-D indexing, not a row view: a view costs two atomic reference counts
            big = np.int64(0)
            bad = np.int64(0)
            for lane in range(32):
                a = addr[rr, lane]
                big |= np.int64(a >= _BIG)
                if check:
                    bad |= np.int64(a < -1) | np.int64(a >= limit)
                    bad |= np.int64(a >= 0) & np.int64((a & amask) != 0)
                    bad |= np.int64(a < 0) & need_all & part[lane]
                # the key in int32 (8 lanes per AVX2 instruction; AVX2 has no 64-bit arithmetic shift);
                # wrong for an address of 2**31 or more, but such a row returns NEED_NUMPY below
                keys[r, lane] = _key(a, ph0[lane], off[lane], us32, sb32, smask)
            if bad:
                for lane in range(32):
                    a = addr[rr, lane]
                    code = 0
                    if a < -1:
                        code = ERR_NEGATIVE
                    elif a >= limit:
                        code = ERR_RANGE
                    elif a >= 0 and (a & amask) != 0:
                        code = ERR_ALIGN
                    elif a < 0 and need_all and lane < nl:
                        code = ERR_MISSING
                    if code:
                        err[0], err[1], err[2] = rr, lane, code
                        return rr
            if big:
                return NEED_NUMPY
            if merge:
                # 8/16-byte loads: two phases merge when every active lane reads what lane n^1 reads (or
                # every one what lane n^2 reads); an inactive partner never breaks the pairing (measured)
                ok1 = True
                for lane in range(0, 32, 2):  # stops at the first pair that differs (most rows: the first)
                    a, b = addr[rr, lane], addr[rr, lane + 1]
                    if a != b and a >= 0 and b >= 0:
                        ok1 = False
                        break
                ok2 = not ok1
                if ok2:
                    for lane in range(32):
                        a, b = addr[rr, lane], addr[rr, lane ^ 2]
                        if a != b and a >= 0 and b >= 0:
                            ok2 = False
                            break
                if ok1 or ok2:  # merged: the keys again, with the phases of twice as many lanes
                    for lane in range(32):
                        keys[r, lane] = _key(addr[rr, lane], ph1[lane], off[lane], us32, sb32, smask)
        # 2. lane-major copy, then the sorting network: each compare-exchange is a vector min/max
        for lane in range(32):
            t = T[lane]
            for r in range(nb):
                t[r] = keys[r, lane]
        for q in range(net.shape[0]):
            ta = T[net[q, 0]]
            tb = T[net[q, 1]]
            for r in range(nb):
                x = ta[r]
                y = tb[r]
                ta[r] = min(x, y)
                tb[r] = max(x, y)
        # 3. one sweep: run = distinct keys of the current (phase, unit-bank) group; a phase costs its
        # largest run. The sentinel adds nothing to any count, so where it sits does not matter.
        # Every value is cast back to int32: numba widens int32 arithmetic to int64, and AVX2 has no
        # 64-bit max, which would leave these loops scalar (measured: 3x slower).
        if merge:  # phases of L or 2L lanes within one sorted segment: phase changes found on the way
            t0 = T[0]
            for r in range(nb):
                c = np.int32(t0[r] != _SENT32)
                run[r] = c
                phase_max[r] = c
                total[r] = 0
                phases[r] = 0
            for i in range(1, 32):
                ti = T[i]
                tp = T[i - 1]
                for r in range(nb):
                    cur = ti[r]
                    prv = tp[r]
                    act = np.int32(cur != _SENT32)
                    inc = np.int32(act & (atomic32 | np.int32(cur != prv)))  # a repeated key broadcasts
                    c = np.int32(run[r] + inc) if (cur >> _I24) == (prv >> _I24) else act
                    run[r] = c
                    new_phase = np.int32((cur >> _I29) != (prv >> _I29))
                    m = phase_max[r]
                    total[r] = np.int32(total[r] + m * new_phase)
                    phases[r] = np.int32(phases[r] + (new_phase & np.int32(m > 0)))
                    phase_max[r] = c if new_phase else max(m, c)
            for r in range(nb):
                m = phase_max[r]
                wave[b0 + r] = total[r] + m
                ideal[b0 + r] = phases[r] + np.int32(m > 0)
        else:  # every segment is one phase: no phase bookkeeping inside it
            for r in range(nb):
                total[r] = 0
                phases[r] = 0
            for s0 in range(0, 32, lanes0):
                t0 = T[s0]
                for r in range(nb):
                    c = np.int32(t0[r] != _SENT32)
                    run[r] = c
                    phase_max[r] = c
                for i in range(s0 + 1, s0 + lanes0):
                    ti = T[i]
                    tp = T[i - 1]
                    for r in range(nb):
                        cur = ti[r]
                        prv = tp[r]
                        act = np.int32(cur != _SENT32)
                        inc = np.int32(act & (atomic32 | np.int32(cur != prv)))
                        c = np.int32(run[r] + inc) if (cur >> _I24) == (prv >> _I24) else act
                        run[r] = c
                        phase_max[r] = max(phase_max[r], c)
                for r in range(nb):
                    m = phase_max[r]
                    total[r] = np.int32(total[r] + m)
                    phases[r] = np.int32(phases[r] + np.int32(m > 0))
            for r in range(nb):
                wave[b0 + r] = total[r]
                ideal[b0 + r] = phases[r]
        if want:  # per-phase costs (analyze): the same count, one instruction at a time
            for r in range(nb):
                c = 0
                for i in range(32):
                    cur = T[i, r]
                    if cur == _SENT:
                        continue
                    if i > 0 and T[i - 1, r] != _SENT and (cur >> 24) == (T[i - 1, r] >> 24):
                        c += 1 if atomic or cur != T[i - 1, r] else 0
                    else:
                        c = 1
                    p = cur >> 29
                    costs[b0 + r, p] = max(costs[b0 + r, p], c)
    return -1
