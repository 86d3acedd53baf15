"""CUDA histogram spec (histogram.cu) on ``autopad.CudaKernel``: counts of int32 or uint8 values in [0, bins).

Shape ``(n, bins)``. The layout decision is the privatised sub-histogram (``autopad.layouts.Replicated``):
how many replicas, replica-major or interleaved, padding, and who shares a replica (``PRIV``: 0 a warp,
1 one lane position of every warp: with 32 interleaved replicas lane l always hits bank l, one wavefront
per update instruction whatever the data). ``COUNTER`` 16 keeps 16-bit counters (two bins a word) so that
65,536 bins fit one pass in 128 KB; the kernel spills a counter to global memory before it can overflow
and the blocks' counters are summed from a workspace by a second kernel (histogram.cu explains the
arithmetic). Bins that fit neither are covered in passes of BINS_PER_PASS bins, each re-reading the input.

``smem_pattern`` lists one block's shared atomics for one grid-stride iteration (THREADS x ITEMS x
values-per-16-bytes values) drawn from an input class (``dist``: "uniform", "skewed" = Zipf(1.5), "single" =
all equal, "sorted" = runs of ``SORTED_RUN`` equal values), with the aggregation the kernel applies: its
warp aggregation (AGG) and the hardware's (``atomicAdd(&h[b], 1u)`` is ATOMS.POPC.INC, which serves lanes
that share an address once). It is built with numpy over all warps at once: one draw of values per (dist,
bins), a sort per row for the first lane of each address. The 16-bit counters' zeroing, overflow scans and
workspace copy are given to the predictor as ``extra_wavefronts`` per block (``launch_info``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from autopad.access import Instruction
from autopad.arch import get_arch
from autopad.bases import CudaKernel, Inputs, Out
from autopad.layouts import Legality, Replicated
from autopad.spec import DTYPE_BYTES, batched_info, per_distinct

_SOURCE = Path(__file__).with_name("histogram.cu")
SOURCE_FILES = (str(_SOURCE), str(Path(__file__).with_name("common.cuh")))
ARCH = get_arch("sm_90")

# input classes that change the speed (the tuner keys its cache by them); aliases: zipf, equal
DISTS = ("uniform", "skewed", "single", "sorted")
_DIST_ALIASES = {"skewed": "zipf", "single": "equal"}
SORTED_RUN = 1024  # equal values in a row of sorted input, as the model draws it (2^26 values, 65,536 bins)
_MAX_DRAW = 1024 * 4 * 16  # values of the largest block iteration: THREADS x ITEMS x values per 16 bytes
SPILL_AT = 4096  # histogram.cu: a 16-bit counter >= this is moved to global memory at a scan
RED_SPLIT = 4  # hist16_reduce: row groups, each adding its partial sums atomically
# Each block's final flush (histogram.cu, after the grid-stride loop) takes SM cycles that overlap nothing
# (``block_cycles``): every bin added to the global histogram (a global atomic), and with PRIV 1 every warp
# iteration of the flush loop (a warp per bin: a load of its 32 replicas, a 5-step shuffle tree, one atomic
# from lane 0). Fitted, with ``predict.Constants.launch_s``, on the 122 candidates of H200 run 8 at 2^20
# values x 1000 bins (benchmarks/results/h200/2026-12-01/run8), where the flush decides: PRIV 1 ran 18 us
# (one block an SM) to 99 us (eight), and 277 us in 4 passes, against 8.9 us for the best PRIV 0, while
# reading the input takes about 2. A COUNTER 16 build's second launch (the workspace reduce) is not charged.
FLUSH_WARP_CYCLES = 30.7
FLUSH_BIN_CYCLES = 3.9

# ``atomicAdd(&h[i], 1u)`` compiles to ATOMS.POPC.INC.32 on sm_90 (checked in the SASS of histogram.cu):
# the hardware adds the popcount of the lanes that share an address, so equal bins in a warp cost one
# update, like a broadcast. Measured on the H200 (benchmarks/results/h200/notes_cuda.md): 64M equal int32
# values bin at the same 3.2 TB/s as uniform ones with no software aggregation, where 32 serialised
# lanes would cost ~3x that time. Any other increment (0x10000, a run length, a float) is ATOMS.ADD or a
# CAS loop and gets no such help. Set False to score +1 updates lane by lane.
POPC_INC_AGGREGATES = True
# AGG 1's __match_any_sync compiles to MATCH.ANY, which the shared-memory model does not see: one per value
# of every warp, on a unit of ~63 SM cycles a warp instruction. Measured on one shape of H200 study run 1
# (uint8, 2^28 values x 256 bins: the fastest AGG 1 candidate took 2.03 ms, 63.3 SM cycles per 32 values
# over 132 SMs, against 5.0 for the fastest AGG 0; benchmarks/results/h200/quality); the other shapes of
# both runs and the new shapes of runs 8 and 10 (63-69 cycles where the match dominates) are the check.
MATCH_ANY_CYCLES = 63.3
# AGG 2's uniform test (histogram.cu ap_update, ap_update16) runs on every value of every warp, uniform or
# not: a SHFL of lane 0's bin (32 lanes a clock per SM on sm_90: one SM cycle a warp), a VOTE.ALL and the
# compares and predicates around them, none of which the shared-memory model sees. Measured as the fastest
# AGG 2 candidate over the fastest AGG 0 one of the same shape, in SM cycles per 32 values over 132 SMs, on
# the uint8 shapes of H200 study runs 1 and 2 (benchmarks/results/h200/quality; uint8 is where instruction
# issue, not DRAM, bounds the kernel): 1.62, 1.56 and 1.74 (run 1: 2^28 x 256, 2^24 x 256, 10000019 x 100),
# 1.71 (run 2: 2^24 x 256); 2.12 on today's kernel (run 23, uint8 2^24 x 256, whose AGG 0 has a check-free
# uint8 path). The int32 shapes stream from DRAM and hide it (0.1-0.2 there).
UNIFORM_TEST_CYCLES = 1.66
_AGG_CYCLES = {1: MATCH_ANY_CYCLES, 2: UNIFORM_TEST_CYCLES}  # SM cycles a warp-value, by AGG


def canonical_dist(dist: str) -> str:
    """An input class's own name: "skewed" -> "zipf", "single" -> "equal", others as they are."""
    d = _DIST_ALIASES.get(dist, dist)
    if d not in ("uniform", "zipf", "equal", "sorted"):
        raise ValueError(f"dist: {dist!r} is not one of {', '.join(DISTS)} (or zipf, equal)")
    return d


@lru_cache(maxsize=64)
def _draw(dist: str, bins: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    if dist == "uniform":
        v = rng.integers(0, bins, _MAX_DRAW)
    elif dist == "zipf":
        v = (rng.zipf(1.5, _MAX_DRAW) - 1) % bins
    else:
        v = np.full(_MAX_DRAW, min(5, bins - 1))
    v.setflags(write=False)
    return v


def sample(dist: str, bins: int, size: int) -> np.ndarray:
    """``size`` values of an i.i.d. input class (seed 0). numpy's generators draw element by element, so
    the first ``size`` values of one large draw are exactly a draw of ``size``: one draw per (dist, bins)
    serves every launch configuration."""
    d = canonical_dist(dist)
    if d == "sorted":
        raise ValueError("sample: sorted input depends on positions; use block_values")
    if size <= _MAX_DRAW:
        return _draw(d, bins)[:size]
    rng = np.random.default_rng(0)
    if d == "uniform":
        return rng.integers(0, bins, size)
    return (rng.zipf(1.5, size) - 1) % bins if d == "zipf" else np.full(size, min(5, bins - 1))


def block_values(dist: str, bins: int, threads: int, items: int, per: int) -> np.ndarray:
    """(warps * items * per, 32) values of one block iteration, row (w, it, q), column the lane: lane l of
    warp w holds component q of its it-th 16-byte vector. Sorted input reads position per * (it * threads
    + 32 w + l) + q of runs of SORTED_RUN equal values (one warp instruction spans 32 * per positions)."""
    warps = threads // 32
    if canonical_dist(dist) != "sorted":
        return sample(dist, bins, warps * 32 * items * per).reshape(-1, 32)
    w, it, q, lane = np.ix_(np.arange(warps), np.arange(items), np.arange(per), np.arange(32))
    pos = per * (it * threads + 32 * w + lane) + q
    return (((pos + SORTED_RUN // 3) // SORTED_RUN) % bins).reshape(-1, 32)


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


def _fit_pass(bins: int) -> int:
    """The smallest BINS_PER_PASS that covers ``bins`` in one pass (or the largest there is)."""
    return next((v for v in HistogramCuda.SPACE["BINS_PER_PASS"] if v >= bins), 65536)


def _scan_every(c: dict[str, int], per: int) -> int:
    """Grid-stride iterations between two overflow scans of the 16-bit counters (histogram.cu SCAN_EVERY)."""
    return (65536 - SPILL_AT - per) // (c["THREADS"] * c["ITEMS"] * per)


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


# bytes of shared memory per block (Replicated.footprint), as an expression over the constants
_FOOTPRINT = (
    "(BINS_PER_PASS * 2 if COUNTER == 16 else (BINS_PER_PASS * (THREADS + 4) if PRIV == 2 else "
    "(BINS_PER_PASS * (REPLICAS + PAD) * 4 if INTERLEAVED else REPLICAS * (BINS_PER_PASS + PAD) * 4)))"
)


class HistogramCuda(CudaKernel):
    """``out[b] = #{i : x[i] == b}`` for int32 or uint8 x, b in [0, bins); values outside are ignored."""

    NAME = "histogram"
    DTYPES = ("int32", "uint8")
    SHAPE = ("N", "BINS")
    SOURCE_FILE = str(_SOURCE)
    SPACE: dict[str, tuple[int, ...]] = {
        "BINS_PER_PASS": (256, 1024, 4096, 16384, 32768, 65536),
        "REPLICAS": (1, 2, 4, 8, 16, 32),
        "INTERLEAVED": (0, 1),
        "PAD": (0, 1, 2, 4),
        "AGG": (0, 1, 2, 3, 4),
        "THREADS": (256, 512, 1024),
        "ITEMS": (1, 2, 4),
        "BLOCKS_PER_SM": (1, 2, 4, 8),
        "PRIV": (0, 1, 2),
        "COUNTER": (32, 16),
    }
    DEFAULTS = {
        "BINS_PER_PASS": 256, "REPLICAS": 1, "INTERLEAVED": 0, "PAD": 0, "AGG": 0,
        "THREADS": 256, "ITEMS": 2, "BLOCKS_PER_SM": 4, "PRIV": 0, "COUNTER": 32,
    }  # fmt: skip
    LAYOUT_KEYS = ("REPLICAS", "INTERLEAVED", "PAD")  # the privatised copies and where they sit
    # the pattern is in logical (replica, bin) coordinates: the layout constants INTERLEAVED and PAD place
    # it, the model scores it under each
    PATTERN_KEYS = ("AGG", "BINS_PER_PASS", "COUNTER", "ITEMS", "PRIV", "REPLICAS", "THREADS")
    # what ``layout`` reads: a ranking makes one layout per distinct combination (autopad.space)
    LAYOUT_READS = ("COUNTER", "PRIV", "BINS_PER_PASS", "THREADS", "REPLICAS", "INTERLEAVED", "PAD")
    DISTS = DISTS
    ACCUMULATES = False  # run() zeroes the output itself
    RESTRICTIONS = (
        "THREADS * BLOCKS_PER_SM <= 2048",
        "REPLICAS > 1 or (INTERLEAVED == 0 and PAD == 0)",  # one replica: nothing to interleave or pad
        "REPLICAS < 32 or PRIV == 1",
        "PRIV == 1 or REPLICAS * 32 <= THREADS",  # a replica per warp at most
        "PRIV != 1 or (REPLICAS > 1 and AGG == 0 and COUNTER == 32)",  # one replica: PRIV 0 spells it
        "PRIV != 2 or (REPLICAS == 1 and AGG == 0 and COUNTER == 32)",  # a thread's own bytes
        "COUNTER == 32 or (REPLICAS == 1 and AGG != 1 and BINS_PER_PASS >= 16384)",
        "AGG < 3 or COUNTER == 16",  # runs and the even/odd split are the 16-bit counters' aggregations
        # the layout's footprint fits a block, and BLOCKS_PER_SM blocks (1 KB each reserved) fit an SM
        f"{_FOOTPRINT} <= {ARCH.smem_per_block}",
        f"({_FOOTPRINT} + 1024) * BLOCKS_PER_SM <= {ARCH.smem_per_sm}",
    )

    # ---- the model's side ---------------------------------------------------------------------------

    def layout(self, constants: dict[str, int], dtype: str = "int32") -> Replicated:
        c = constants
        if c.get("COUNTER", 32) == 16:
            return _replicated(c["BINS_PER_PASS"], 1, 2, 0, 0)
        if c.get("PRIV", 0) == 2:  # word (b // 4) * THREADS + t: "replica" t of word-column b // 4
            return _replicated(c["BINS_PER_PASS"] // 4, c["THREADS"], 4, 1, 0)
        return _replicated(c["BINS_PER_PASS"], c["REPLICAS"], 4, c["INTERLEAVED"], c["PAD"])

    def smem_bytes(self, constants: dict[str, int], dtype: str = "int32") -> int:
        """The layout's footprint; per-thread bytes add a 32-bit block histogram after them."""
        extra = 4 * constants["BINS_PER_PASS"] if constants.get("PRIV", 0) == 2 else 0
        return self.layout(constants, dtype).footprint + extra

    def check_shape(self, shape: tuple[int, ...]) -> None:
        """(n, bins) with 1 <= n < 2**31 and bins >= 1; a ValueError says what is allowed."""
        if len(shape) != 2 or any(isinstance(d, bool) or not isinstance(d, (int, np.integer)) for d in shape):
            raise ValueError(f"histogram: shape is (n, bins), two ints, got {shape!r}")
        n, bins = int(shape[0]), int(shape[1])
        if not 1 <= n < 2**31 or bins < 1:
            raise ValueError(f"histogram: need 1 <= n < 2**31 values and bins >= 1, got n={n}, bins={bins}")

    def legal(self, constants: dict[str, int], shape: tuple[int, ...], dtype: str = "int32") -> Legality:
        """The restrictions, the layout's budget, passes, occupancy and the shape's own limits (the checks
        of the constants alone are cached: ``_static``)."""
        missing = [k for k in self.SPACE if k not in constants]
        if missing:
            return Legality(False, f"missing constants {missing}")
        if dtype not in self.DTYPES:
            return Legality(False, f"dtype {dtype} not supported")
        try:
            self.check_shape(tuple(shape))
        except ValueError as exc:
            return Legality(False, str(exc))
        c = constants
        fits, per_sm = _static(self, tuple(c[k] for k in _KEYS), dtype)
        if not fits:
            return fits
        ok = _legal_bins(c["BINS_PER_PASS"], c["COUNTER"], int(shape[1]), dtype)
        return ok if not ok else per_sm

    def legal_batch(self, columns: dict[str, np.ndarray], shape: tuple[int, ...], dtype: str) -> np.ndarray:
        """``legal`` of many candidates at once (``columns``: constant -> int array), the same answer row for
        row: the restrictions as array expressions (``_rules_batch``), the footprint once per distinct
        layout, the bins' checks once per distinct pass width and counter."""
        n = len(next(iter(columns.values()))) if columns else 0
        if dtype not in self.DTYPES or any(k not in columns for k in _KEYS):
            return np.zeros(n, dtype=bool)
        try:
            self.check_shape(tuple(shape))
        except ValueError:
            return np.zeros(n, dtype=bool)
        cols = {k: np.asarray(columns[k], dtype=np.int64) for k in _KEYS}
        ok = _rules_batch(cols)
        at = np.flatnonzero(ok)
        if len(at):  # _static's footprint checks, on the candidates every restriction keeps
            sub = {k: v[at] for k, v in cols.items()}
            rows, which = per_distinct(sub, _LAYOUT_READS)
            smem = np.array([_static_smem(self, r, dtype) for r in rows], dtype=np.int64)[which]
            bps = sub["BLOCKS_PER_SM"]
            # smem -1: the layout refused the constants (``_static`` reports its ValueError)
            fits = (smem >= 0) & (smem <= ARCH.smem_per_block)
            ok[at] = fits & (smem * bps <= ARCH.smem_per_sm - 1024 * bps)  # BLOCKS_PER_SM blocks per SM
        rows, at = per_distinct(cols, ("BINS_PER_PASS", "COUNTER"))
        bins = [bool(_legal_bins(r["BINS_PER_PASS"], r["COUNTER"], int(shape[1]), dtype)) for r in rows]
        return ok & np.array(bins, dtype=bool)[at]

    def launch_info_batch(self, columns: dict[str, np.ndarray], shape: tuple[int, ...], dtype: str) -> dict:
        """``launch_info`` of many candidates at once, as a dict of arrays: asked once per distinct
        combination of what it reads besides the layout, the footprint once per distinct layout."""
        reads = ("THREADS", "BLOCKS_PER_SM", "BINS_PER_PASS", "ITEMS", "PRIV", "COUNTER", "AGG")
        return batched_info(self, columns, shape, dtype, reads, _LAYOUT_READS)

    def grid(self, constants: dict[str, int], shape: tuple[int, ...] = (), dtype: str = "int32") -> tuple:
        return (ARCH.sm_count * constants["BLOCKS_PER_SM"],)

    def block(self, constants: dict[str, int], shape: tuple[int, ...] = (), dtype: str = "int32") -> tuple:
        return (constants["THREADS"],)

    def smem_pattern(
        self, constants: dict[str, int], dtype: str = "int32", dist: str | None = None
    ) -> Pattern:
        """One block's shared-memory updates for one grid-stride iteration, for the input class ``dist``."""
        key = tuple(sorted((k, int(constants[k])) for k in self.PATTERN_KEYS))
        return _pattern(key, dtype, canonical_dist(dist or "uniform"), POPC_INC_AGGREGATES)

    def launch_info(self, constants: dict[str, int], shape: tuple[int, ...], dtype: str = "int32") -> dict:
        n, bins = int(shape[0]), int(shape[1])
        c = constants
        per = 16 // DTYPE_BYTES[dtype]
        blocks = ARCH.sm_count * c["BLOCKS_PER_SM"]
        passes = math.ceil(bins / c["BINS_PER_PASS"])
        iters = math.ceil(n / (c["THREADS"] * c["ITEMS"] * per * blocks))
        info = {
            "blocks": blocks,
            "threads": c["THREADS"],
            "smem_bytes": self.smem_bytes(c, dtype),
            "tiles_per_block": passes * _busiest_sm_tiles(c, n, per),
            "passes": passes,
            "inflight_bytes": c["ITEMS"] * 16,  # ITEMS 16-byte loads per thread per iteration
        }
        if passes > 1:  # every pass re-reads the input: 1/passes of the bytes are the useful ones
            info["dram_efficiency"] = 1.0 / passes
        if c["COUNTER"] == 32:
            info["block_cycles"] = _flush_cycles(c, bins)
        agg = _AGG_CYCLES.get(c.get("AGG", 0))
        if agg:  # AGG 1's warp match, AGG 2's uniform test: per value, THREADS / 32 warps x ITEMS x per
            info["issue_cycles"] = agg * (c["THREADS"] // 32) * c["ITEMS"] * per
        if c["PRIV"] == 2:  # the flushes: every counter word loaded and zeroed, 32 words a wavefront
            flushes = math.ceil(iters / (254 // (c["ITEMS"] * per))) + 1
            info["extra_wavefronts"] = flushes * 2 * c["BINS_PER_PASS"] // 4 * c["THREADS"] // 32
        if c["COUNTER"] == 16:
            # shared memory the pattern does not list: zeroing, the overflow scans (every word loaded once
            # per scan) and the copy to the workspace, 32 words a wavefront
            scans = math.ceil(iters / _scan_every(c, per))
            info["extra_wavefronts"] = (scans + 2) * c["BINS_PER_PASS"] // 64
            # the workspace streams too: 16-bit counters written by every block, then read by the reduce
            ws = 2 * blocks * c["BINS_PER_PASS"] * 2
            info["dram_efficiency"] = n * DTYPE_BYTES[dtype] / (n * DTYPE_BYTES[dtype] + ws)
        return info

    def traffic(self, shape: tuple[int, ...], dtype: str = "int32") -> dict:
        n, bins = int(shape[0]), int(shape[1])
        return {"bytes": n * DTYPE_BYTES[dtype] + 4 * bins, "flops": 0}

    def textbook(self, shape: tuple[int, ...], dtype: str = "int32") -> dict[str, int] | None:
        """The usual recipe: a few replica-major replicas each padded by one word."""
        c = dict(self.DEFAULTS, BINS_PER_PASS=_fit_pass(int(shape[1])), REPLICAS=4, PAD=1)
        return c if self.legal(c, shape, dtype) else None

    # ---- the measuring side (torch) -----------------------------------------------------------------

    def arguments(self, shape: tuple[int, ...], dtype: str, dist: str | None = None) -> list:
        """Values of the input class on the current device, the int32 [bins] output, and bins."""
        import torch

        n, bins = int(shape[0]), int(shape[1])
        x = draw_values(n, bins, dist or "uniform")
        return [x.to(getattr(torch, dtype)), Out((bins,), torch.int32), bins]

    def reference(self, x: Any, bins: int) -> Any:
        import torch

        x = x.long()
        return torch.bincount(x[(x >= 0) & (x < bins)], minlength=bins).int()

    def expected(self, inputs: Any) -> tuple:
        return (self.reference(inputs[0], int(inputs[2])),)

    def inputs_from(self, x: Any, bins: int) -> Inputs:
        """The kernel's inputs for ``autopad.ops.histogram(x, bins)``: no copy of x."""
        import torch

        return Inputs((x, Out((bins,), torch.int32), int(bins)), (x.numel(), int(bins)))

    def defines(self, constants: dict[str, int], dtype: str = "int32") -> dict[str, int]:
        c = constants
        d = dict(self.layout(c, dtype).cuda_defines())
        d.update(VALUE_BYTES=DTYPE_BYTES[dtype], AGG=c["AGG"], THREADS=c["THREADS"], ITEMS=c["ITEMS"])
        if c.get("PRIV", 0):
            d["PRIV"] = c["PRIV"]
        if c.get("COUNTER", 32) == 16:  # builds hist16_kernel and hist16_reduce
            d["COUNTER"] = 16
        if c.get("PRIV", 0) == 2:  # the kernel's own macros: BINS bins of THREADS byte counters
            d.update(BINS=c["BINS_PER_PASS"], REPLICAS=1, INTERLEAVED=0, PAD=0)
        return d

    def build(self, constants: dict[str, int], dtype: str = "int32") -> Built:
        from autopad import cuda_runtime

        d = self.defines(constants, dtype)
        src = _SOURCE.read_text()
        if constants.get("COUNTER", 32) == 16:
            names: tuple[str, ...] = ("hist16_kernel", "hist16_reduce")
        else:
            names = ("hist8_kernel" if constants.get("PRIV", 0) == 2 else "hist_kernel",)
        ks = tuple(cuda_runtime.load_kernel(src, k, d) for k in (*names, "hist_zero"))
        return Built(ks, dict(constants), dtype)

    def launcher(self, built: Built, shape: tuple[int, ...], dtype: str = "int32") -> Any:
        """A function (inputs, out) -> None with the grid, shared memory and scalars precomputed (through
        ``cuda_runtime.prepare_launch``): a call zeroes ``out`` (``hist_zero``) and launches the passes.
        Each pass is launched to overlap the kernel before it (sm_90's programmatic dependent launch): it
        counts its input into shared memory while that kernel finishes and waits for it only before it
        adds to ``out``, so the zeroing's launch and the gap between passes are hidden."""
        c = built.constants
        n, bins = int(shape[0]), int(shape[1])
        blocks = _sm_count() * c["BLOCKS_PER_SM"]
        smem = self.smem_bytes(c, built.dtype)
        zero = launch_fn(built.kernels[-1], min(-(-bins // 256), 1024), 256, 0)
        b32 = np.int32(bins)
        if c.get("COUNTER", 32) == 16:
            words = -(-bins // 2)
            main = launch_fn(built.kernels[0], blocks, c["THREADS"], smem, overlap=_sm90())
            red = launch_fn(built.kernels[1], (-(-words // 256), RED_SPLIT), 256, 0)
            n64, rows = np.int64(n), np.int32(blocks)

            def go16(inputs: Any, out: Any) -> None:
                x = _aligned(inputs[0])
                ws = built.workspace(x.device, blocks * c["BINS_PER_PASS"] // 2)
                zero((out, b32))
                main((out, ws, x, n64, b32))
                red((out, ws, rows, b32))  # reads the workspace: in plain stream order

            return go16
        args = [(np.int64(n), np.int32(lo), b32) for lo in range(0, bins, c["BINS_PER_PASS"])]
        kern = launch_fn(built.kernels[0], blocks, c["THREADS"], smem, overlap=_sm90())

        def go(inputs: Any, out: Any) -> None:
            x = _aligned(inputs[0])
            zero((out, b32))
            for a in args:
                kern((out, x, *a))

        return go

    def run(self, built: Built, inputs: Any, out: Any) -> None:
        """Zero ``out`` (int32 [bins]) and add every pass's counts into it."""
        shape = getattr(inputs, "shape", ()) or (inputs[0].numel(), out.shape[0])
        built.launcher(self, tuple(shape))(inputs, out)


def launch_fn(kernel: Any, grid: Any, block: Any, smem: int, overlap: bool = False) -> Any:
    """``args -> None`` launching ``kernel``: ``cuda_runtime.prepare_launch`` where it exists (the geometry
    and the shared-memory opt-in done once; ``overlap`` as there), else ``cuda_runtime.launch``."""
    from autopad import cuda_runtime

    prep = getattr(cuda_runtime, "prepare_launch", None)
    if prep is not None:
        return prep(kernel, grid, block, smem, overlap=overlap)

    def fire(args: tuple) -> None:
        cuda_runtime.launch(kernel, grid, block, args, smem)

    return fire


def _busiest_sm_tiles(c: dict[str, int], n: int, per: int) -> float:
    """Grid-stride iterations per block, as the busiest SM runs them: the loop deals chunk k (THREADS x ITEMS
    vectors) to block k % grid, and block b runs on SM b % SMs (the grid is BLOCKS_PER_SM x SMs), so SM j
    gets chunks j, j + SMs, ...: ceil(chunks / SMs) of them, shared by its BLOCKS_PER_SM blocks. A block's
    own ceil(n / (grid x chunk)) counts every block as the slowest: 10,000,019 uint8 values on 4 x 132
    blocks of 512 x 2 vectors are 611 chunks, 5 on the busiest SM (1.25 a block), where that said 2. On
    H200 run 41 (uint8 10000019 x 100, today's kernel, every candidate timed) that rounding made the
    model rank one block an SM first (a PRIV 1 pick 1.46x the default's time); the best there is 4 blocks
    an SM of 512 x 2 (9.9 us). Large inputs barely move (31.03 chunks a block is charged 31.25, not 32)."""
    chunks = math.ceil(n // per / (c["THREADS"] * c["ITEMS"]))
    return max(1, math.ceil(chunks / ARCH.sm_count)) / c["BLOCKS_PER_SM"]


def _flush_cycles(c: dict[str, int], bins: int) -> float:
    """SM cycles of one block's flushes over all passes: warp iterations of the flush loop and bins added."""
    warps = c["THREADS"] // 32
    iters = 0
    if c["PRIV"] == 1:  # a warp per bin: every warp iterates ceil(bins of the pass / warps) times
        for lo in range(0, bins, c["BINS_PER_PASS"]):
            iters += -(-min(c["BINS_PER_PASS"], bins - lo) // warps) * warps
    return FLUSH_WARP_CYCLES * iters + FLUSH_BIN_CYCLES * bins


def _broken_rule(c: dict[str, int]) -> str | None:
    """The first of RESTRICTIONS that ``c`` breaks, evaluated in Python (legal() runs per candidate; the
    strings are for the enumerator's vectorised pass; a test holds the two to the same answer)."""
    ok = (
        c["THREADS"] * c["BLOCKS_PER_SM"] <= 2048,
        c["REPLICAS"] > 1 or (c["INTERLEAVED"] == 0 and c["PAD"] == 0),
        c["REPLICAS"] < 32 or c["PRIV"] == 1,
        c["PRIV"] == 1 or c["REPLICAS"] * 32 <= c["THREADS"],
        c["PRIV"] != 1 or (c["REPLICAS"] > 1 and c["AGG"] == 0 and c["COUNTER"] == 32),
        c["PRIV"] != 2 or (c["REPLICAS"] == 1 and c["AGG"] == 0 and c["COUNTER"] == 32),
        c["COUNTER"] == 32 or (c["REPLICAS"] == 1 and c["AGG"] != 1 and c["BINS_PER_PASS"] >= 16384),
        c["AGG"] < 3 or c["COUNTER"] == 16,
    )  # the two footprint rules last: legal() checks them on the layout itself
    return next((r for r, good in zip(HistogramCuda.RESTRICTIONS, ok) if not good), None)


_KEYS = tuple(HistogramCuda.SPACE)  # the constants, in SPACE's order (_static's key)


@lru_cache(maxsize=1 << 16)
def _static(spec: HistogramCuda, key: tuple[int, ...], dtype: str) -> tuple[Legality, Legality]:
    """``legal``'s checks of the constants alone (in ``_KEYS`` order), before and after the bins': the
    restrictions, the layout and the block's budget; then the blocks an SM must hold."""
    c = dict(zip(_KEYS, key))
    broken = _broken_rule(c)
    if broken:
        return Legality(False, f"restriction {broken}"), Legality(True)
    try:
        smem = spec.smem_bytes(c, dtype)  # builds (and so validates) the layout
    except (ValueError, KeyError) as exc:
        return Legality(False, str(exc)), Legality(True)
    if smem > ARCH.smem_per_block:
        return Legality(
            False,
            f"footprint {smem} bytes exceeds the shared-memory budget of {ARCH.smem_per_block} bytes",
        ), Legality(True)
    bps = c["BLOCKS_PER_SM"]
    if smem * bps > ARCH.smem_per_sm - 1024 * bps:
        return Legality(True), Legality(False, f"{bps} blocks of {smem} bytes do not fit one SM")
    return Legality(True), Legality(True)


# what ``layout`` and ``smem_bytes`` read: the footprint is the same for candidates equal in these
_LAYOUT_READS = HistogramCuda.LAYOUT_READS


def _static_smem(spec: HistogramCuda, c: dict[str, int], dtype: str) -> int:
    """``smem_bytes`` as ``_static`` asks for it, -1 where building the layout fails."""
    try:
        return spec.smem_bytes(c, dtype)
    except (ValueError, KeyError):
        return -1


def _rules_batch(c: dict[str, np.ndarray]) -> np.ndarray:
    """``_broken_rule(c) is None`` for columns of candidates (int64 arrays): the same eight rules."""
    rep, prv, agg, ctr = c["REPLICAS"], c["PRIV"], c["AGG"], c["COUNTER"]
    ok = c["THREADS"] * c["BLOCKS_PER_SM"] <= 2048
    ok &= (rep > 1) | ((c["INTERLEAVED"] == 0) & (c["PAD"] == 0))
    ok &= (rep < 32) | (prv == 1)
    ok &= (prv == 1) | (rep * 32 <= c["THREADS"])
    ok &= (prv != 1) | ((rep > 1) & (agg == 0) & (ctr == 32))
    ok &= (prv != 2) | ((rep == 1) & (agg == 0) & (ctr == 32))
    ok &= (ctr == 32) | ((rep == 1) & (agg != 1) & (c["BINS_PER_PASS"] >= 16384))
    ok &= (agg < 3) | (ctr == 16)
    return ok


@lru_cache(maxsize=4096)
def _legal_bins(per_pass: int, counter: int, bins: int, dtype: str) -> Legality:
    if dtype == "uint8" and bins > 256:
        return Legality(False, "uint8 values cannot reach more than 256 bins")
    if per_pass > _fit_pass(bins):
        return Legality(False, f"{per_pass} bins per pass waste shared memory on {bins} bins")
    if counter == 16 and per_pass < bins:
        return Legality(False, "16-bit counters run in one pass: BINS_PER_PASS must cover the bins")
    return Legality(True)


@lru_cache(maxsize=4096)
def _replicated(bins: int, replicas: int, elem: int, interleaved: int, pad: int) -> Replicated:
    return Replicated(bins, replicas, elem, bool(interleaved), pad)


@dataclass(frozen=True, eq=False)
class Built:
    """Compiled kernels (main, and for 16-bit counters the reduce) and a per-device workspace cache."""

    kernels: tuple
    constants: dict
    dtype: str
    _work: dict = field(default_factory=dict)

    def launcher(self, spec: Any, shape: tuple[int, ...]) -> Any:
        """``spec.launcher`` for this shape and device, made once: ``run`` in a timing loop only launches."""
        import torch

        key = ("launcher", shape, torch.cuda.current_device())
        if key not in self._work:
            self._work[key] = spec.launcher(self, shape, self.dtype)
        return self._work[key]

    def workspace(self, device: Any, words: int) -> Any:
        import torch

        key = (str(device), words)
        if key not in self._work:
            self._work[key] = torch.empty(words, dtype=torch.int32, device=device)
        return self._work[key]


_PROPS: dict[int, Any] = {}


def _props() -> Any:
    """torch's properties of the current device, fetched once per device."""
    import torch

    dev = torch.cuda.current_device()
    if dev not in _PROPS:
        _PROPS[dev] = torch.cuda.get_device_properties(dev)
    return _PROPS[dev]


def _sm90() -> bool:
    """Programmatic dependent launch is sm_90's: elsewhere the passes are launched in plain order (the wait
    compiles to nothing there, so the attribute must not let them overlap)."""
    p = _props()
    return (p.major, p.minor) >= (9, 0)


def _sm_count() -> int:
    return _props().multi_processor_count


def _aligned(x: Any) -> Any:
    """The kernels read 16 bytes per load: a view that does not start on 16 bytes is copied (rare)."""
    x = x if x.is_contiguous() else x.contiguous()
    return x.clone() if x.data_ptr() % 16 else x


def draw_values(n: int, bins: int, dist: str) -> Any:
    """n int64 values in [0, bins) of an input class on torch's current device, under torch's global seed."""
    import torch

    d = canonical_dist(dist)
    if d == "equal":
        return torch.full((n,), min(5, bins - 1), dtype=torch.int64)
    if d == "zipf":  # P(k) ~ 1/(k+1)^1.5 by inverse transform over the bins, in random order
        p = 1.0 / torch.arange(1, bins + 1, dtype=torch.float64) ** 1.5
        if n < 2**24:
            return torch.multinomial(p.float(), n, replacement=True)
        u = torch.rand(n, dtype=torch.float64)
        return torch.searchsorted(torch.cumsum(p / p.sum(), 0), u).clamp_max(bins - 1)
    x = torch.randint(0, bins, (n,), dtype=torch.int32 if bins < 2**31 else torch.int64)
    return torch.sort(x).values.long() if d == "sorted" else x.long()


def presets(dtype: str = "int32", bins: int = 256) -> dict[str, dict[str, int]]:
    """Named candidates: the plain kernel (one replica, no aggregation), the textbook padded replicas, the
    warp aggregations with and without replicas, per-lane replicas and, for large bins, 16-bit counters."""
    d = HistogramCuda.DEFAULTS
    bpp = _fit_pass(bins)
    base = dict(d, BINS_PER_PASS=bpp)
    if bpp * 4 * base["BLOCKS_PER_SM"] > ARCH.smem_per_sm // 2:  # big: fewer, larger blocks, and passes
        bpp = min(bpp, 32768)
        base = dict(base, BINS_PER_PASS=bpp, THREADS=1024, BLOCKS_PER_SM=max(1, 2 * 16384 // bpp))
    out = {
        "unpadded": base,
        "textbook": dict(base, REPLICAS=4, PAD=1),
        "agg_match": dict(base, AGG=1),
        "agg_uniform": dict(base, AGG=2),
        "agg_uniform_rep4": dict(base, AGG=2, REPLICAS=4, PAD=1),
        "agg_uniform_rep8_il": dict(base, AGG=2, REPLICAS=8, INTERLEAVED=1, PAD=1),
        "lane_rep32": dict(base, PRIV=1, REPLICAS=32, INTERLEAVED=1, THREADS=1024, BLOCKS_PER_SM=2, ITEMS=2),
        "thread_bytes": dict(base, PRIV=2, THREADS=256, BLOCKS_PER_SM=2, ITEMS=4),
    }
    if _fit_pass(bins) >= 16384:
        c16 = dict(d, BINS_PER_PASS=_fit_pass(bins), COUNTER=16, THREADS=1024, BLOCKS_PER_SM=1, ITEMS=2)
        out.update({"c16": c16, "c16_agg_uniform": dict(c16, AGG=2), "c16_runs": dict(c16, AGG=3),
                    "c16_split": dict(c16, AGG=4)})  # fmt: skip
    spec = HistogramCuda()
    return {k: v for k, v in out.items() if spec.legal(v, (1 << 20, bins), dtype)}


def __getattr__(name: str) -> Any:  # the weighted spec moved to histogram_weighted.py; old names still work
    if name in ("WEIGHTED", "w_presets"):
        from . import histogram_weighted as w

        return w if name == "WEIGHTED" else w.presets  # the module: reference(inputs) as before
    raise AttributeError(name)


# ---- the module is the spec (autopad.kernels_registry imports it) --------------------------------------
SPEC = HistogramCuda()
NAME, BACKEND, DTYPES, SPACE, DEFAULTS = SPEC.NAME, SPEC.BACKEND, SPEC.DTYPES, SPEC.SPACE, SPEC.DEFAULTS
LAYOUT_KEYS, PATTERN_KEYS, RESTRICTIONS = SPEC.LAYOUT_KEYS, SPEC.PATTERN_KEYS, SPEC.RESTRICTIONS
LAYOUT_READS = SPEC.LAYOUT_READS
legal_batch, launch_info_batch = SPEC.legal_batch, SPEC.launch_info_batch
legal, layout, smem_pattern, launch_info, traffic = (
    SPEC.legal, SPEC.layout, SPEC.smem_pattern, SPEC.launch_info, SPEC.traffic
)  # fmt: skip
textbook, make_inputs, alloc_output, build, run, check = (
    SPEC.textbook, SPEC.make_inputs, SPEC.alloc_output, SPEC.build, SPEC.run, SPEC.check
)  # fmt: skip
expected, inputs_from, check_shape, launcher, defines = (
    SPEC.expected, SPEC.inputs_from, SPEC.check_shape, SPEC.launcher, SPEC.defines
)  # fmt: skip


def reference(inputs: Any) -> Any:
    """torch's counts for ``make_inputs``'s inputs (the harness uses ``expected``)."""
    return SPEC.expected(inputs)[0]
