"""The model's numpy backend: per-phase costs of a validated batch of warp instructions.

Split from model.py (one concern a module). Each phase is a row, one sort per row, running sums count
distinct words per bank; atomics, which never broadcast, are counted with one bincount of lanes per bank
(``_count_costs``). It gives the numba kernel's (_model_numba.py) numbers exactly; model_backend.py picks
between them.
"""

from __future__ import annotations

import numpy as np

from .model_rules import _Rule


def _phase_lanes(addr: np.ndarray, rule: _Rule) -> np.ndarray:
    """Lanes per phase for each instruction of the batch (merging paired wide loads)."""
    n, w = addr.shape
    lanes = np.full(n, rule.lanes, dtype=np.int64)
    if rule.merge and rule.lanes < w:
        # Every active lane n must read what lane n^1 (or n^2) reads; a partner that is inactive (-1)
        # does not break the pairing (measured: `autopad validate` on the H200, 2026-11-29).
        def paired(a: np.ndarray, b: np.ndarray, axes: int | tuple[int, int]) -> np.ndarray:
            return ((a == b) | (a < 0) | (b < 0)).all(axis=axes)

        pairs1 = addr.reshape(n, w // 2, 2)
        pairs2 = addr.reshape(n, w // 4, 2, 2)
        merged = paired(pairs1[:, :, 0], pairs1[:, :, 1], 1)
        merged |= paired(pairs2[:, :, 0, :], pairs2[:, :, 1, :], (1, 2))
        lanes[merged] = rule.lanes * 2
    return lanes


def _phase_cost(lanes: np.ndarray, broadcast: bool, unit: int, unit_banks: int) -> np.ndarray:
    """Cost of each row of ``lanes`` (one phase each; -1 = inactive): most distinct units in one bank."""
    top = int(lanes.max(initial=0)) // unit
    shift = max(1, top.bit_length())
    dtype = np.int32 if shift + (unit_banks - 1).bit_length() < 31 else np.int64
    word = lanes.astype(dtype) // unit  # an inactive lane (-1) stays negative
    # key = (bank, word) packed in one integer; sorting makes each bank's words contiguous, equal words
    # side by side. Inactive lanes get key -1 and sort first.
    key = ((word % unit_banks) << shift) | word
    key[word < 0] = -1
    key.sort(axis=1)
    counted = key >= 0  # atomics: no broadcast, every active lane's word is its own request
    if broadcast:
        counted[:, 1:] &= key[:, 1:] != key[:, :-1]  # a word counts once: where it differs from its left
    # rank of each entry among the counted words of its bank, via running sums:
    # rank = counted so far - counted before the bank's run began; the phase costs the largest rank
    bank = key >> shift
    running = np.cumsum(counted, axis=1, dtype=dtype)
    starts = np.ones(key.shape, dtype=bool)
    np.not_equal(bank[:, 1:], bank[:, :-1], out=starts[:, 1:])
    before = running - counted
    before *= starts
    np.maximum.accumulate(before, axis=1, out=before)
    running -= before
    return running.max(axis=1)


_COUNT_ROWS = 4096  # _count_costs: phases counted at a time (the per-bank counts stay in cache)


def _count_costs(addr: np.ndarray, rule: _Rule) -> np.ndarray:
    """``_numpy_costs`` for a rule without broadcast (atomics) and without merged phases: every active
    lane's unit counts, so a phase costs the most active lanes in one unit-bank, counted with one
    ``np.bincount`` per block of phases (no sort; a tenth of ``_phase_cost``'s time)."""
    n, w = addr.shape
    lanes, ub = rule.lanes, rule.unit_banks
    per = w // lanes
    phases = addr.reshape(-1, lanes)  # phases are runs of consecutive lanes: a row each
    dtype = np.int32 if int(phases.max(initial=0)) < 2**31 and _COUNT_ROWS * ub < 2**31 else np.int64
    out = np.empty(len(phases), dtype=np.int64)
    base = (np.arange(_COUNT_ROWS, dtype=dtype) * ub)[:, None]
    pow2 = not (rule.unit & (rule.unit - 1) or ub & (ub - 1))  # (the rules' units and banks are)
    for s in range(0, len(phases), _COUNT_ROWS):
        part = phases[s : s + _COUNT_ROWS].astype(dtype, copy=False)
        m = len(part)
        if pow2:  # shifts and masks: integer division is the slowest step otherwise
            idx = (part >> (rule.unit.bit_length() - 1)) & (ub - 1)
            idx += base[:m]
        else:
            idx = (part // rule.unit) % ub + base[:m]
        idx[part < 0] = m * ub  # inactive lanes: one bin past the counted ones
        out[s : s + m] = np.bincount(idx.ravel(), minlength=m * ub + 1)[:-1].reshape(m, ub).max(axis=1)
    return out.reshape(n, per)


def _numpy_costs(addr: np.ndarray, rule: _Rule) -> np.ndarray:
    """Per-phase costs (n, phases before any merge) of a validated batch; lanes past ``rule.used`` ignored."""
    addr = addr[:, : rule.used]
    n, w = addr.shape
    if not rule.broadcast and not rule.merge and w % rule.lanes == 0:
        return _count_costs(addr, rule)
    lanes = _phase_lanes(addr, rule)
    # A width-aligned access of k = width/4 words covers banks 4j..4j+k-1 of one aligned group of k
    # banks, and every word of it meets exactly the same competitors. So counting in "units" of the
    # access width over banks/k unit-banks gives the same per-bank maximum as counting all k words.
    # Narrower accesses count in whole words: bytes of one word are one word (they broadcast).
    cost = np.zeros((n, max(1, w // rule.lanes)), dtype=np.int64)
    sizes = np.unique(lanes, return_counts=True)[0]  # (with counts: no lazy numpy.ma import, 20 ms)
    for size in sizes:  # at most two: plain phases and merged ones
        rows = np.nonzero(lanes == size)[0] if len(sizes) > 1 else slice(None)
        per_phase = w // int(size)
        part = addr[rows].reshape(-1, int(size))  # phases are runs of consecutive lanes: a row each
        cost[rows, :per_phase] = _phase_cost(part, rule.broadcast, rule.unit, rule.unit_banks).reshape(
            -1, per_phase
        )
    return cost
