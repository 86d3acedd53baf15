"""What the histogram costs beyond its shared-memory pattern: ``launch_info``, the grid and the time the
predictor adds for work the bank model does not see, each term measured on the H200.

The grid is BLOCKS_PER_SM x SMs blocks walking the input grid-stride (the busiest SM's share of the
chunks, ``_busiest_sm_tiles``), one launch per pass of BINS_PER_PASS bins. Beyond the updates the pattern
lists: each block's final flush (``FLUSH_*_CYCLES``), AGG 1's warp match and AGG 2's uniform test
(``MATCH_ANY_CYCLES``, ``UNIFORM_TEST_CYCLES``), the per-thread byte counters' flushes (PRIV 2) and the
16-bit counters' zeroing, overflow scans (every ``_scan_every`` iterations, a counter spilled at
``SPILL_AT``) and workspace, as extra wavefronts and DRAM bytes.

Why a module of its own: these are the fitted and measured constants of the predictor's histogram terms,
with the H200 runs they come from, apart from the pattern the bank model scores (histogram_pattern.py).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from autopad.spec import DTYPE_BYTES

from .histogram_space import ARCH

if TYPE_CHECKING:
    from .histogram import HistogramCuda

__all__ = [
    "FLUSH_WARP_CYCLES",
    "FLUSH_BIN_CYCLES",
    "FLUSH_LINE_CYCLES",
    "MATCH_ANY_CYCLES",
    "UNIFORM_TEST_CYCLES",
    "SPILL_AT",
    "COUNT8_CHAIN_CYCLES",
]


SPILL_AT = 4096  # histogram.cu: a 16-bit counter >= this is moved to global memory at a scan
# Each block's final flush (histogram.cu, after the grid-stride loop) takes SM cycles that overlap nothing
# (``block_cycles``): every bin added to the global histogram (a global atomic), and with PRIV 1 every warp
# iteration of the flush loop (a warp per bin: a load of its 32 replicas, a 5-step shuffle tree, one atomic
# from lane 0). Fitted, with ``predict.Constants.launch_s``, on the 122 candidates of H200 run 8 at 2^20
# values x 1000 bins (benchmarks/results/h200/2026-12-01/run8), where the flush decides: PRIV 1 ran 18 us
# (one block an SM) to 99 us (eight), and 277 us in 4 passes, against 8.9 us for the best PRIV 0, while
# reading the input takes about 2. A COUNTER 16 build's second launch (the workspace reduce) is not charged.
FLUSH_WARP_CYCLES = 30.7
FLUSH_BIN_CYCLES = 3.9
# ... and PRIV 1's flush adds its bins one address a request (lane 0's atomicAdd, histogram.cu), where
# PRIV 0's warp adds 32 consecutive bins, one 128-byte line of the global histogram, in one request. The L2
# serves the requests to one line one after another, and every block flushes the same lines at once (warp w
# takes bins w, w + warps, ...): a pass's busiest line takes min(bins of the pass, 32) single-bin requests
# from every block of the grid, in turn. Charged FLUSH_LINE_CYCLES SM cycles a request through
# ``block_cycles`` (summed over an SM's blocks, so each block carries SMs x its requests to that line). Read
# off PRIV 1 against PRIV 0 at equal launch constants (the fastest PRIV 0 layout; 32 interleaved replicas):
# what PRIV 1 took beyond the warp loop's charge, per request so counted, had a median of 0.5-3.2 SM cycles
# on each of the six H200 studies that time both (runs 8, 23, 41 and run 165's round 1; 256 bins a pass
# 3.2, 100 bins 1.6, the 1000-bin samples the warp loop was fitted on 0.5-0.7; run 41's 2^28 values left
# out, where PRIV 1 also reads faster): their median, 2.0. Looked for after H100 run 229 (round 19's uint8
# 30,000,001 x 256, where the model's PRIV 1 answer measured 1.45x the best; 2.4 there). Every pass is
# charged its line, though passes launch overlapping the one before (histogram.cu AP_GRID_WAIT), so a pass's
# flush may hide behind the next pass's counting: the two 1000-bin samples (four passes of 256, one PRIV 1 /
# PRIV 0 pair each) read a quarter of the one-pass studies' figure. No answer of the studies turns on it;
# the predicted times of many-pass PRIV 1 builds may be high.
FLUSH_LINE_CYCLES = 2.0

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
# PRIV 2's update (histogram.cu ap_update8) is a plain load, add and store of the thread's own word, and
# the next value's load may read the word just stored: the compiler keeps them in order, so each thread
# counts its values one after another, a load-to-store round trip each, which the shared-memory model (two
# conflict-free wavefronts a warp-value) does not see. Charged as ``wait_cycles``, COUNT8_CHAIN_CYCLES SM
# cycles a value of a thread's tile (ITEMS x values a vector), which the block's other warps cannot fill
# and other resident blocks do. Read off H200 run 41 (uint8, 2^28 values x 256 bins, every candidate timed,
# benchmarks/results/h200/2026-12-02/run41): its nine PRIV 2 builds measured 252-483 us whatever their
# ITEMS (the model said 105-516, falling with ITEMS: the bytes in flight), the time following the values
# each thread counts (256-thread blocks alone on an SM 1.6-1.9x those of 512 threads); 100 cycles puts
# their median log(measured / predicted) at 0.00 (0.55 before). Checked on the H200's other uint8 studies
# (run 23's 2^24 x 256: 0.93 -> 0.31; run 41's 10,000,019 x 100: 1.04 -> 0.46: a fixed cost of small
# inputs remains) and, not read, on the H100's (round 20's three shapes 0.99-1.04 -> 0.17-0.24, round 19's
# 30,000,001 x 256 0.11 -> -0.03). No recorded answer was PRIV 2 before it; the model put PRIV 2 first at
# 45,000,007 x 256 (round 21's sample, drawn before it), 19.8 us where the chain alone is 34.
COUNT8_CHAIN_CYCLES = 100.0
_AGG_CYCLES = {1: MATCH_ANY_CYCLES, 2: UNIFORM_TEST_CYCLES}  # SM cycles a warp-value, by AGG


def _scan_every(c: dict[str, int], per: int) -> int:
    """Grid-stride iterations between two overflow scans of the 16-bit counters (histogram.cu SCAN_EVERY)."""
    return (65536 - SPILL_AT - per) // (c["THREADS"] * c["ITEMS"] * per)


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
    """SM cycles of one block's flushes over all passes: warp iterations of the flush loop and bins added,
    and with PRIV 1 its share of the busiest line's single-bin requests (``FLUSH_LINE_CYCLES``)."""
    warps = c["THREADS"] // 32
    iters = 0
    line = 0
    if c["PRIV"] == 1:  # a warp per bin: every warp iterates ceil(bins of the pass / warps) times
        # summed over the passes in closed form: the full passes alike, then the last one's remainder (a walk
        # over the passes took a minute a tune at 2**31 bins and hours at 10**12); line: the pass's busiest
        # 128-byte line of 4-byte bins, its requests a block
        full, rest = divmod(bins, c["BINS_PER_PASS"])
        for here, times in ((c["BINS_PER_PASS"], full), (rest, 1 if rest else 0)):
            iters += times * (-(-here // warps) * warps)
            line += times * min(here, 32)
    return FLUSH_WARP_CYCLES * iters + FLUSH_BIN_CYCLES * bins + FLUSH_LINE_CYCLES * line * ARCH.sm_count


def launch_info(
    spec: HistogramCuda, constants: dict[str, int], shape: tuple[int, ...], dtype: str = "int32"
) -> dict:
    """Blocks, threads, shared memory, tiles per block and passes of ``constants`` on ``shape``, and the
    predictor's extra terms (``block_cycles``, ``issue_cycles``, ``wait_cycles``, ``extra_wavefronts``,
    ``dram_efficiency``)."""
    n, bins = int(shape[0]), int(shape[1])
    c = constants
    per = 16 // DTYPE_BYTES[dtype]
    blocks = ARCH.sm_count * c["BLOCKS_PER_SM"]
    passes = math.ceil(bins / c["BINS_PER_PASS"])
    iters = math.ceil(n / (c["THREADS"] * c["ITEMS"] * per * blocks))
    info = {
        "blocks": blocks,
        "threads": c["THREADS"],
        "smem_bytes": spec.smem_bytes(c, dtype),
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
        # ... and each thread's values counted one after another (COUNT8_CHAIN_CYCLES a value)
        info["wait_cycles"] = COUNT8_CHAIN_CYCLES * c["ITEMS"] * per
    if c["COUNTER"] == 16:
        # shared memory the pattern does not list: zeroing, the overflow scans (every word loaded once
        # per scan) and the copy to the workspace, 32 words a wavefront
        scans = math.ceil(iters / _scan_every(c, per))
        info["extra_wavefronts"] = (scans + 2) * c["BINS_PER_PASS"] // 64
        # the workspace streams too: 16-bit counters written by every block, then read by the reduce
        ws = 2 * blocks * c["BINS_PER_PASS"] * 2
        info["dram_efficiency"] = n * DTYPE_BYTES[dtype] / (n * DTYPE_BYTES[dtype] + ws)
    return info
