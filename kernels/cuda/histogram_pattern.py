"""The histogram's shared-memory pattern: one block's atomics for one grid-stride iteration, as the bank
model scores them, with the aggregation the kernel and the hardware apply.

``smem_pattern`` lists THREADS x ITEMS x values-per-16-bytes updates drawn from an input class
(histogram_inputs.py), with the kernel's warp aggregation (AGG) and the hardware's: ``atomicAdd(&h[b],
1u)`` is ATOMS.POPC.INC, which serves lanes that share an address once (``POPC_INC_AGGREGATES``). It is
built with numpy over all warps at once: one draw of values per (dist, bins), a sort per row for the first
lane of each address, and kept per (constants the pattern reads, dtype, dist) in an LRU cache.

Why a module of its own: this is the model's view of what histogram.cu does to shared memory, apart from
the space it is asked over (histogram_space.py) and the time the predictor adds for what it cannot see
(histogram_cost.py). ``POPC_INC_AGGREGATES`` is read here alone: set it on this module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from autopad.access import Instruction
from autopad.spec import DTYPE_BYTES

from .histogram_inputs import _draw, block_values, canonical_dist

__all__ = ["POPC_INC_AGGREGATES", "Pattern", "aggregate", "block_pattern", "first_lanes", "uniform_rows"]

# ``atomicAdd(&h[i], 1u)`` compiles to ATOMS.POPC.INC.32 on sm_90 (checked in the SASS of histogram.cu):
# the hardware adds the popcount of the lanes that share an address, so equal bins in a warp cost one
# update, like a broadcast. Measured on the H200 (benchmarks/results/h200/notes_cuda.md): 64M equal int32
# values bin at the same 3.2 TB/s as uniform ones with no software aggregation, where 32 serialised
# lanes would cost ~3x that time. Any other increment (0x10000, a run length, a float) is ATOMS.ADD or a
# CAS loop and gets no such help. Set False to score +1 updates lane by lane.
POPC_INC_AGGREGATES = True


def first_lanes(keys: np.ndarray) -> np.ndarray:
    """For each row of ``keys`` (n, 32): True at the first lane holding each distinct key (np.unique's
    return_index, row by row, done with one stable sort over all rows)."""
    order = np.argsort(keys, axis=1, kind="stable")
    s = np.take_along_axis(keys, order, axis=1)
    first = np.ones(s.shape, dtype=bool)
    first[:, 1:] = s[:, 1:] != s[:, :-1]
    out = np.empty_like(first)
    np.put_along_axis(out, order, first, axis=1)
    return out


def uniform_rows(b: np.ndarray) -> np.ndarray:
    return (b == b[:, :1]).all(axis=1)


def aggregate(
    keys: np.ndarray, agg: int, increment: bool = True, uniform: Any = None, first: Any = None
) -> np.ndarray:
    """Which lanes' atomics reach shared memory, per row of ``keys`` (the address each lane updates).

    AGG 2 on a uniform warp (``uniform``: per row, default: every key equal): lane 0 alone. AGG 1: one
    leader per distinct address. Otherwise every lane, but a +1 update (``increment``) is an
    ATOMS.POPC.INC that serves each distinct address once. ``first``: ``first_lanes(keys)`` if known.
    """
    if agg == 1 or (increment and POPC_INC_AGGREGATES):
        act = (first_lanes(keys) if first is None else first).copy()
    else:
        act = np.ones(keys.shape, dtype=bool)
    if agg == 2:
        u = uniform_rows(keys) if uniform is None else uniform
        act[u] = False
        act[u, 0] = True
    return act


def _frozen(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    for a in arrays:
        a.setflags(write=False)
    return arrays


@lru_cache(maxsize=64)
def _iid_lanes(dist: str, bins: int) -> tuple[np.ndarray, ...]:
    b = _draw(dist, bins).reshape(-1, 32)
    return _frozen(b, first_lanes(b), uniform_rows(b))


@lru_cache(maxsize=256)
def _lanes(dist: str, bins: int, threads: int, items: int, per: int) -> tuple[np.ndarray, ...]:
    """(values, first lane of each value, uniform rows) of one block iteration (``block_values``). For an
    i.i.d. class a smaller block's rows are the first rows of the largest one's: one sort serves all."""
    if dist != "sorted":
        n = threads * items * per // 32
        return tuple(a[:n] for a in _iid_lanes(dist, bins))
    b = block_values(dist, bins, threads, items, per)
    return _frozen(b, first_lanes(b), uniform_rows(b))


@dataclass(frozen=True, eq=False)
class Pattern:
    """A block's shared-memory instructions, stacked per (op, width) as autopad.search scores them:
    ``groups`` of (op, access_bytes, rows (n, 32), cols (n, 32), counts (n,)); iterating yields the
    Instructions one by one (autopad.access.score, explain)."""

    groups: tuple[tuple[str, int, np.ndarray, np.ndarray, np.ndarray], ...]
    labels: tuple[str, ...] = field(default=())

    def __iter__(self):  # noqa: ANN204
        for g, (op, width, rows, cols, counts) in enumerate(self.groups):
            label = self.labels[g] if g < len(self.labels) else op
            for k in range(len(rows)):
                yield Instruction(f"{label} {k}", op, width, rows[k], cols[k], int(counts[k]))

    def __len__(self) -> int:
        return sum(len(g[2]) for g in self.groups)


def _group(op: str, width: int, act: np.ndarray, rows: Any, cols: np.ndarray, count: int = 1) -> tuple:
    # np.where's result is new already: int64 without a second copy where it is int64
    r = np.where(act, rows, -1).astype(np.int64, copy=False)
    c = np.where(act, cols, 0).astype(np.int64, copy=False)
    for a in (r, c):
        a.setflags(write=False)
    return (op, width, r, c, np.full(len(r), count, dtype=np.int64))


@lru_cache(maxsize=1024)
def _pattern(key: tuple, dtype: str, dist: str, popc: bool) -> Pattern:
    c = dict(key)
    per = 16 // DTYPE_BYTES[dtype]
    b, first, uniform = _lanes(dist, c["BINS_PER_PASS"], c["THREADS"], c["ITEMS"], per)
    lane = np.arange(32)
    if c["COUNTER"] == 16:  # bin b is half b & 1 of word b >> 1: column b & ~1 of the 2-byte layout
        col, agg = b & ~1, c["AGG"]
        if agg == 3:  # the first lane of each run of equal bins adds the run's length (ATOMS.ADD)
            lead = np.ones(b.shape, dtype=bool)
            lead[:, 1:] = b[:, 1:] != b[:, :-1]
            return Pattern((_group("atomic", 4, lead, 0, col),), ("run",))
        if agg == 4:  # even bins +1 (ATOMS.POPC.INC: equal lanes once), odd bins +0x10000 (ATOMS.ADD)
            even = aggregate(b, 0, True, first=first) & (b % 2 == 0)
            groups = (_group("atomic", 4, even, 0, col), _group("atomic", 4, b % 2 == 1, 0, col))
            return Pattern(groups, ("even", "odd"))
        # AGG 0: one ATOMS.ADD of a selected increment, every lane counts; AGG 2: lane 0 on a uniform warp
        return Pattern((_group("atomic", 4, aggregate(b, agg, False, uniform), 0, col),), ("update",))
    if c["PRIV"] == 2:  # thread t's own word (b // 4) * THREADS + t: a load and a store, every lane its own
        t = (np.repeat(np.arange(c["THREADS"] // 32), len(b) // (c["THREADS"] // 32)) * 32)[:, None] + lane
        act = np.ones(b.shape, dtype=bool)
        return Pattern(
            (_group("load", 4, act, t, b >> 2), _group("store", 4, act, t, b >> 2)), ("load", "store")
        )
    if c["PRIV"] == 1:  # lane l updates replica l % REPLICAS: equal bins of two replicas are two addresses
        rep = np.broadcast_to(lane % c["REPLICAS"], b.shape)
        act = aggregate(rep * c["BINS_PER_PASS"] + b, c["AGG"], True, uniform)
    else:  # warp w updates replica w % REPLICAS, rows (w, it, q) in that order: one replica per row
        warps = c["THREADS"] // 32
        rep = np.repeat(np.arange(warps) % c["REPLICAS"], len(b) // warps)[:, None]
        act = aggregate(b, c["AGG"], True, uniform, first)
    return Pattern((_group("atomic", 4, act, rep, b),), ("update",))


def block_pattern(key: tuple, dtype: str, dist: str) -> Pattern:
    """``HistogramCuda.smem_pattern``'s pattern for the constants ``key`` (sorted (name, value) pairs of
    PATTERN_KEYS) and the input class ``dist``: cached per ``POPC_INC_AGGREGATES`` too, so setting the flag
    here gives the other scoring at once."""
    return _pattern(key, dtype, canonical_dist(dist), POPC_INC_AGGREGATES)
