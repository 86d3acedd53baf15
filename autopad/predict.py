"""The predicted run time of candidates: wavefronts, occupancy, bytes in flight, waves -> seconds.

The score is a time, not a conflict count: a block's shared-memory instructions go through the layout into
the model (wavefronts per tile), and the kernel's whole run is the slowest of its streams, each at the
machine's measured ceiling (``arch.Arch``): global bytes at the copy bandwidth (and, for tiled kernels that
re-read their operands, L2 bytes at the L2 rate), shared-memory wavefronts at one per SM per clock,
arithmetic at the fp32 or the tensor-core rate, and instruction issue (the index arithmetic of every shared
access; a swizzle's XOR costs more than a pad's add). Occupancy (from threads and the layout's footprint)
scales how much of the memory bandwidth the kernel can keep in flight, the last partial wave of blocks
costs the memory streams a whole wave (its blocks' share where a spec states ``partial_memory_rounds``) and
the arithmetic ones a round at its own occupancy (``_tail_rounds``), and every tile a block walks through
(a GEMM's k-steps) costs a fixed barrier-and-loop overhead. Among candidates free of conflicts, those
terms are what separate a fast kernel from a slow one.
A spec whose blocks run their phases in turn (``serial_phases``: load a tile, barrier, read it out) has its
streams combined by a closed queue of the resident blocks instead (``_queued``): with few blocks an SM, a
block's shared-memory time adds to its DRAM time rather than hiding under other blocks' loads. With
``latency_phases`` (loads in flight together, stores draining behind the block: a block alone on its SM) the
queue holds the DRAM round trip, shared memory and issue but not the bandwidth, and bounds the streams'
time from below. With ``phased_loads`` (a block issues its tile's loads in one phase before a barrier) the
bytes in flight reach the bandwidth only with warps to issue them: the DRAM knee also takes the occupancy
bound.

Every term is derived from what a spec already states (``launch_info``, ``traffic``, the layout), with
optional keys a spec may add where it knows more (``KEYS``). The constants that are fitted rather than
measured ceilings live in ``Constants``; ``benchmarks/model_only_report.py`` fits them on one recorded
H200 study and tests them on the other (held out), and ``tests/test_predict.py`` holds each term to the
measured effect it reproduces.

Everything is computed for a whole batch of candidates at once (numpy arrays, one entry per candidate), so
ranking a space of thousands costs one pass. ``Prediction.terms`` records each term, so a verbose report
can show why a candidate ranks where it does.

Where each part lives (predict.py was split, one concern a module; every name it defined is still
importable from here): predict_info.py (``KEYS``, ``INFO_DEFAULTS``, the checks of ``launch_info`` and
``traffic``, ``info_columns``), predict_layouts.py (what the model reads off the layouts: swizzled share,
data bytes, once per distinct layout object), predict_queue.py (``_queued``: the closed queue of resident
blocks for ``serial_phases`` and ``latency_phases``), predict_result.py (``Prediction``, ``predictions``:
the arrays as shared objects); here, ``Constants``, the streams' times and how they combine
(``predict_arrays``) and ``predict_batch``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .arch import Arch, get_arch

# the parts predict.py was split into (each a module of one concern, see above); their names are importable
# from here as before
from .predict_info import (  # noqa: F401
    _OPTIONAL,
    _REQUIRED,
    INFO_DEFAULTS,
    KEYS,
    LaunchInfoError,
    check_launch_info,
    check_traffic,
    info_columns,
)
from .predict_layouts import _data_bytes, _Distinct, _distinct, _per_layout, _swizzled, _swizzled_share  # noqa: F401
from .predict_queue import _queued
from .predict_result import _BOUNDS, _TERMS, Prediction, _term_pairs, predictions  # noqa: F401

__all__ = [
    "Prediction",
    "Constants",
    "CONSTANTS",
    "KEYS",
    "predict_batch",
    "predict_arrays",
    "predictions",
    "info_columns",
    "INFO_DEFAULTS",
    "LaunchInfoError",
    "check_launch_info",
    "check_traffic",
]


@dataclass(frozen=True)
class Constants:
    """The predictor's fitted constants (not ceilings: those are measured, in ``arch.Arch``).

    Each was fitted on the recorded H200 study (benchmarks/results/h200/quality, run 1 or run 2) by
    ``benchmarks/model_only_report.py --fit`` and checked on the run it was not fitted on.
    """

    overlap: float = 0.195  # share of the non-limiting streams that still adds to the limiting one
    issue_cycles: float = 0.5  # issue slots per shared-memory phase (its address arithmetic)
    swizzle_cycles: float = 2.56  # extra issue slots per phase on an XOR-swizzled tile
    tile_cycles: float = 18.75  # fixed cycles per tile a block walks through (barrier, loop, refill)
    default_inflight_share: float = 0.8  # bytes in flight per thread = share x footprint / threads
    launch_s: float = 9.5e-6  # each launch after the first (a pass over the input): ramp, drain, gap
    # not fitted, read off hardware counters: the issue slots each shared-memory instruction of a SIMT
    # kernel takes from its FFMAs, itself and the address and loop arithmetic that comes with it
    # (``smem_instructions``). H100 run 171 (ncu, the SIMT GEMM's own launches, 34 of them): the
    # instructions beyond the FFMAs over the pattern's shared-memory instructions, median 2.2 (1.9-3.5)
    smem_issue: float = 2.2
    # not fitted, a switch: 1 = a grid's last partial round of arithmetic at its own occupancy
    # (``_tail_rounds``), 0 = charged as a whole round (the wave factor: the predictor the studies recorded)
    partial_round: float = 1.0


CONSTANTS = Constants()


def _knee(x: np.ndarray) -> np.ndarray:
    """The smooth knee x / (1 + x^4)^(1/4): ~x below 1, 1 above, 0.84 at exactly 1."""
    with np.errstate(over="ignore"):
        return np.where(x > 0, x / (1.0 + np.minimum(x, 1e6) ** 4) ** 0.25, 1e-9)


def _tail_rounds(
    waves: np.ndarray,
    blocks: np.ndarray,
    resident: np.ndarray,
    w: np.ndarray,
    sm_count: int,
    knee: bool = True,
) -> np.ndarray:
    """What the arithmetic streams pay for a grid of ``waves`` rounds of ``resident`` blocks an SM, over
    what the even spread of the blocks would cost (the wave factor's place for them): every whole round,
    and a last partial round of ``bt`` blocks on the busiest SM that runs at its own occupancy, ``bt /
    resident`` of a round's work on the warp knee of its own ``w bt / resident`` warps a scheduler.

    Why: the wave factor charges a partial round as a whole one, as if the SM idled while its last blocks ran,
    but an SM left with fewer blocks gives each more of its issue slots. The SIMT GEMM at 2048^3 (1,024
    blocks, 6 an SM: 1.29 rounds) measured its 64 x 64 tiles at 0.44-0.48 ms where whole rounds said 0.64-0.67
    (H200 run 55); with its tail at its own occupancy, model-only Spearman there 0.73 -> 0.83 and, on three
    shapes measured for the purpose afterwards (run 100 of 2026-12-04, the current kernel's 76 launch
    configurations with the unpadded layout: 2304x2304x2048, 2560x2560x1536, 1792x1792x2048), 0.66 / 0.29 /
    0.66 -> 0.86 / 0.68 / 0.81, the pick at 2304 1.078 -> 1.000 of the sample's best. Not for the memory
    streams in general: applied to them it moved transpose picks (fp16 4097 x 8191, run 34, 1.018 -> 1.262
    of the best); only where a spec states ``partial_memory_rounds`` (the Gluon transpose, and since
    2026-12-07 the CUDA one), and there at the blocks' share of a round, not the busiest SM's
    (``predict_arrays``).
    The older SIMT kernel of the recorded run 1, whose k-loop waited on each step's loads, measured its tail
    as a whole round (1.3x, the register note above): a block alone cannot hide its own latency. Today's
    kernel keeps its next step's loads in flight."""
    full = np.floor(waves)
    left = np.maximum(blocks - full * sm_count * resident, 0.0)  # the blocks of the partial round
    bt = np.ceil(left / sm_count)  # ... on the busiest SM
    frac = bt / np.maximum(resident, 1)
    # a stream on the warp knee (arithmetic, issue) runs the tail's fewer warps slower; shared memory's
    # wavefronts do not depend on the warps (``knee=False``)
    ratio = _knee(w) / _knee(np.maximum(w * frac, 1e-9)) if knee else 1.0
    part = np.where(bt > 0, frac * ratio, 0.0)
    return np.where(waves > 0, (full + part) / np.maximum(waves, 1e-30), 1.0)


def predict_batch(
    infos: Sequence[Mapping[str, float]],
    traffic: Mapping[str, float],
    wavefronts: np.ndarray,
    ideal: np.ndarray,
    arch: str | Arch = "sm_90",
    layouts: Sequence[Any] | None = None,
    constants: Constants | None = None,
) -> list[Prediction]:
    """Predicted time of each candidate from its launch info, the shape's traffic and its wavefronts per
    tile (and, where given, its layout: a swizzle's index arithmetic costs issue slots)."""
    if len(infos) == 0:
        return []
    arrays = predict_arrays(infos, traffic, wavefronts, ideal, arch, layouts, constants)
    return predictions(arrays, wavefronts, ideal)


def predict_arrays(
    infos: Sequence[Mapping[str, float]],
    traffic: Mapping[str, float],
    wavefronts: np.ndarray,
    ideal: np.ndarray,
    arch: str | Arch = "sm_90",
    layouts: Sequence[Any] | None = None,
    constants: Constants | None = None,
) -> tuple[np.ndarray, ...]:
    """``predict_batch`` as arrays (seconds, terms (7, n), bound index, occupancy, footprint, memory
    efficiency, wave factor, resident blocks): what fitting the constants calls thousands of times."""
    a = get_arch(arch)
    k = constants or CONSTANTS
    cols = info_columns(infos)
    n = len(cols["blocks"])
    blocks, threads = cols["blocks"], cols["threads"]
    smem, tiles = cols["smem_bytes"].copy(), cols["tiles_per_block"]
    inflight, dram_eff = cols["inflight_bytes"], cols["dram_efficiency"]
    mma, l2_bytes, extra_wf = cols["mma_bytes"], cols["l2_bytes"], cols["extra_wavefronts"]
    wavefronts = np.asarray(wavefronts, dtype=np.float64)
    ideal = np.asarray(ideal, dtype=np.float64)

    # blocks an SM can hold: limited by threads, shared memory (the runtime reserves 1 KB per block) and
    # the block-slot count ...
    per_sm = np.minimum(a.max_threads_per_sm // np.maximum(threads, 1), a.max_blocks_per_sm)
    per_sm = np.where(smem > 0, np.minimum(per_sm, a.smem_per_sm // (smem + 1024)), per_sm)
    # ... and registers (``regs_per_thread``): the arch's register file, allocated per warp in steps. A SIMT
    # GEMM of 64x64 tiles and 8x8 thread tiles (155 registers) holds 6 blocks of 64 threads, not 8: at 2048^3
    # its 1024 blocks take two rounds, measured 1.3x the one-round prediction (quality study, H200 run 1;
    # today's kernel pays less for the second, partial round: ``_tail_rounds``)
    regs = cols["regs_per_thread"]
    unit, warp = a.reg_alloc_unit, a.warp_size
    per_warp = (np.ceil(regs * warp / unit) * unit).clip(1)  # a warp's registers, in whole allocation units
    by_regs = (a.regs_per_sm // per_warp) // np.maximum(threads // warp, 1)
    per_sm = np.where(regs > 0, np.minimum(per_sm, np.maximum(by_regs, 1)), per_sm)
    # ... and how many it does hold: a grid of fewer blocks than slots leaves them empty (256 GEMM blocks on
    # 132 SMs run 2 per SM, however many would fit), so concurrency and waves follow the grid too
    resident = np.maximum(1, np.minimum(per_sm, np.ceil(blocks / a.sm_count)))
    occupancy = np.minimum(1.0, resident * threads / a.max_threads_per_sm)

    # quantised waves: a partial last wave of blocks takes as long as a full one. Counted with the blocks
    # an SM really holds, a grid of one partial wave costs the imbalance between SMs (2 blocks on some,
    # 1 on others), not the whole SM's worth of empty slots.
    waves = blocks / (a.sm_count * resident)
    wave_factor = np.where(waves > 0, np.ceil(waves) / np.maximum(waves, 1e-30), 1.0)

    # Little's law: to stream at the copy bandwidth an SM needs latency x its share of the bandwidth in
    # flight (~1 us x 32 GB/s = 32 KB on an H200). A spec that says how many bytes each thread has in
    # flight (``inflight_bytes``) is judged by that, on the smooth knee that gives 0.84 at exactly enough
    # (the 32x33 fp32 transpose: 16 bytes x 2048 threads, measured 0.84 of copy). Otherwise a kernel that
    # stages a tile through shared memory has about one tile in flight per block: footprint / threads per
    # thread; one with no tile falls back on occupancy (a quarter of the SM's threads taken as enough).
    need = a.dram_latency_s * a.dram_bytes_per_s / a.sm_count
    # the bytes a tile holds, not its footprint: padding takes shared memory but carries no data
    data = smem.copy()
    if layouts is not None and len(layouts):
        layouts = _distinct(layouts)
        held = _per_layout(layouts, _data_bytes)
        tile = np.flatnonzero(~np.isnan(held))
        data[tile] = np.where(smem[tile] != 0, np.minimum(smem[tile], held[tile]), 0.0)
    staged = k.default_inflight_share * data / np.maximum(threads, 1)
    per_thread = np.where(np.isnan(inflight), staged, inflight)
    in_flight = resident * threads * np.nan_to_num(per_thread)  # bytes an SM keeps in flight
    by_warps = occupancy / 0.25
    x = np.where(per_thread > 0, in_flight / need, by_warps)
    # ... and a block that issues its loads in one phase before a barrier (``phased_loads``: load, barrier,
    # read out) keeps them in flight only while its warps are in that phase: the bytes stated need warps
    # too, so the warp bound applies as well. H100 run 166 (ncu, fp32 6144 x 3072): every VEC 1 tile read
    # the same 75.5 MB from DRAM with ample bytes in flight, and those at a third of the SM's warps (128 x
    # 128 of 256 threads, 128 x 64 and 64 x 128 of 128) ran 54.4-55.4 us where those at 57-93% ran
    # 49.8-52.0; on H200 run 114's fp32 8192^2 the vector-path tiles of three 8-warp blocks an SM measured
    # +0.058 in log over the model, +0.029 with this bound (Spearman 0.888 -> 0.902). The 0.25 is the
    # bound's own (above), not fitted
    x = np.where(cols["phased_loads"] > 0, np.minimum(x, by_warps), x)  # (no bytes stated: x is by_warps)
    # a spec may know its global accesses stream worse than a copy (a guarded scalar path for misaligned
    # rows, say): ``dram_efficiency`` scales the bandwidth it can reach
    knee_x = _knee(x)  # (the L2 term below reads the same knee)
    mem_eff = knee_x * dram_eff
    t_dram = traffic["bytes"] / (a.dram_bytes_per_s * mem_eff)
    # tiled kernels re-read operands through L2 (a GEMM reads A N/BN times and B M/BM times): where the
    # spec counts those bytes (``l2_bytes``) they stream at the L2 rate, with the same bytes in flight
    t_l2 = np.where(np.isnan(l2_bytes), 0.0, np.nan_to_num(l2_bytes) / (a.l2_bytes_per_s * knee_x))
    # ... but only loads wait for their bytes: where a spec states what it reads (``read_bytes``), its
    # stores are posted (they drain behind the block) and stream at the full rate, and the knee of the
    # bytes in flight prices the reads alone, on DRAM and L2 alike. The Gluon transpose's small tiles (4-8
    # elements a thread, 8-16 blocks an SM) ran within 1.4x of the best (H100 run 214: int8 [3, 1500, 2222]
    # 13.4-16.3 us against 11.7) where the knee on its stores' sectors too ranked them with builds three
    # times slower; the eleven H100 / H200 studies (runs 201-206, 212): Spearman min 0.71 / 0.76 -> 0.77 /
    # 0.83, picks within 10% as before, four moved by up to 0.05 (quality/NOTES.md, thirty-ninth session)
    reads = cols["read_bytes"]
    split = ~np.isnan(reads)
    if split.any():
        rd = np.nan_to_num(reads)
        posted = np.maximum(traffic["bytes"] - rd, 0.0)
        t_split = (rd / mem_eff + posted / dram_eff) / a.dram_bytes_per_s
        t_dram = np.where(split, t_split, t_dram)
        l2_posted = np.maximum(np.nan_to_num(l2_bytes) - rd, 0.0)
        t_split = rd / (a.l2_bytes_per_s * knee_x) + l2_posted / a.l2_bytes_per_s
        t_l2 = np.where(split & ~np.isnan(l2_bytes), t_split, t_l2)
    # ... except what asynchronous bulk copies move (``l2_async``: TMA, Triton's pipelined cp.async): that
    # streams at their own L2 rate, and its bytes in flight must cover the same latency at that rate,
    # latency x its SM share (~90 KB at 12 TB/s, where the DRAM need is 32 KB): a 2-stage ring of
    # 128x256x64 tiles (48 KB in flight) ran 1.58x its 3-stage time at bf16 4096^3 (H200 run 2), which
    # the DRAM need calls enough
    bulk = cols["l2_async"] > 0
    if bulk.any():
        need_l2 = a.dram_latency_s * a.l2_async_bytes_per_s / a.sm_count
        x_l2 = np.where(per_thread > 0, in_flight / need_l2, x)
        # ``l2_async`` is the share of the bytes those copies move; the rest (a GEMM operand loaded element
        # by element through registers, its C stores) streams at the plain rate, one L2 stream after the
        # other (the GEMM's PATH 1 on rows Triton cannot prove aligned: matmul_model.py)
        share = np.clip(cols["l2_async"], 0.0, 1.0)
        t_bulk = share * np.nan_to_num(l2_bytes) / (a.l2_async_bytes_per_s * _knee(x_l2))
        t_bulk = t_bulk + (1.0 - share) * t_l2
        t_l2 = np.where(bulk & ~np.isnan(l2_bytes), t_bulk, t_l2)
    t_smem = (wavefronts * tiles + extra_wf) * blocks / a.smem_wavefronts_per_s
    # arithmetic needs warps to hide its latencies (shared loads, the FMA pipeline): one resident warp per
    # scheduler (4 per SM) reaches ~0.84 of the peak on the same smooth knee, two ~0.97. A 1024^3 SIMT GEMM
    # of 128 blocks runs one block per SM: 4 warps measured 1.11x slower than 8 (quality study, H200).
    # Tensor-core arithmetic (``mma_bytes``) runs at the measured tensor rate of its operand size. A spec
    # that knows its inner loop cannot reach the peak says so (``flops_efficiency``: a SIMT GEMM whose
    # launch bounds cap its registers below what its thread tile needs spills: cuda/matmul_cost.py's
    # REG_CAP_COST)
    w = resident * threads / 32 / 4
    kinds, which = np.unique(mma, return_inverse=True)
    rate = np.array([a.mma_rate(int(m)) if m else a.fp32_flops for m in kinds.tolist()])[which.ravel()]
    # SIMT arithmetic issues from the warps that issue its shared-memory instructions, and an FFMA's peak
    # rate is the issue rate (one warp instruction a scheduler a cycle): each shared instruction, with its
    # address and loop arithmetic, takes ``smem_issue`` slots an FFMA needed (``smem_instructions``; a warp
    # FFMA is 64 flops). The slots are charged at the FFMAs' rate here, the measured fp32 ceiling (cuBLAS's,
    # 0.76 of the issue peak, so a slot costs ~1.3 issue cycles), kept over the peak after both were scored
    # on the SIMT GEMM's samples. The SIMT GEMM is issue-bound (H100 run 171: issue slots busy 66-82% of
    # cycles, FFMAs 72-88% of the instructions): a 4x4 thread tile issues a fragment load for every 8
    # FFMAs, 8x8 one for every 16. Run 100's 2560x2560x1536 (not held out) rose 0.68 -> 0.80 in model-only
    # Spearman with it; on the four shapes held out from it, slightly less (quality/simt_gemm_model_notes.md).
    # The issue stream below still charges the same accesses' address arithmetic (``issue_cycles``),
    # overlapped: a small double count, left as measured
    # ... and so does what else the k-loop issues that the spec counts in issue slots (``loop_slots``: the
    # SIMT GEMM states every instruction of its compiled k-loop besides the FFMAs there, the shared ones
    # among them, in place of smem_instructions (kernels/cuda/matmul_loop.py), and its checked loop's
    # bounds tests on shapes off its grid; matmul_cost.py)
    own = k.smem_issue * cols["smem_instructions"] + cols["loop_slots"]
    slots = np.where(mma == 0, own * tiles * blocks, 0.0)
    t_flops = (traffic.get("flops", 0.0) + 64.0 * slots) / (rate * _knee(w) * cols["flops_efficiency"])
    # instruction issue: every shared access costs its address arithmetic (one instruction per phase of
    # 32 lanes, ``ideal``, on four schedulers per SM); an XOR swizzle's per-access shift-mask-XOR more.
    # Conflict-free swizzled transposes measured a median 1.17x (fp32) and 1.37x (fp16) the time of the
    # conflict-free padded tile of the same configuration (quality study, H200).
    cyc = ideal * (k.issue_cycles + k.swizzle_cycles * _swizzled(layouts, n))
    # ... charged per phase unless the spec counts the accesses that compute a swizzled address
    # (``swizzle_accesses``): the arithmetic is per thread, once per instruction, and a 16-byte access spans
    # 4 phases (the SIMT GEMM's fragment loads; cuda/matmul.py)
    acc = cols["swizzle_accesses"]
    if not np.isnan(acc).all():
        own = ideal * k.issue_cycles + k.swizzle_cycles * np.nan_to_num(acc)
        cyc = np.where(np.isnan(acc), cyc, own)
    # instructions the pattern does not list, in SM cycles (``issue_cycles``): a histogram's warp match
    # (__match_any_sync: MATCH.ANY) takes ~63 SM cycles a warp instruction on the H200 (cuda/histogram.py)
    extra = 4 * cols["issue_cycles"]
    # ... and what a block waits that other resident blocks fill (``wait_cycles``): a block alone on its SM
    # pays it whole, r blocks each 1 / r of it
    extra = extra + 4 * cols["wait_cycles"] / resident  # (resident >= 1, above)
    # both on the warp knee (one warp a scheduler issues at 0.84 of the rate, latencies exposed), unless the
    # spec says they are the SM's throughput (``cycles_off_knee``: the Triton GEMM's 4-byte copies cost the
    # same per copy on one 4-warp block an SM as on one of 8 warps, H100 run 208 and the tf32 studies)
    knee_w = _knee(w)
    extra_knee = np.where(cols["cycles_off_knee"] > 0, 1.0, knee_w)
    t_issue = (cyc / knee_w + extra / extra_knee) * tiles * blocks / (a.sm_count * a.clock_hz * 4)
    # every tile a block walks through costs a fixed overhead (barrier, loop, refilling the pipeline)
    # that other resident blocks can hide: per SM, ceil(blocks / (SMs x resident)) rounds of tiles each
    t_tiles = np.ceil(waves) * tiles * k.tile_cycles / a.clock_hz / np.maximum(resident, 1) ** 0.5
    # the memory streams pay whole waves; the arithmetic ones a last partial round at its own occupancy
    on_knee = _tail_rounds(waves, blocks, resident, w, a.sm_count)
    flat = _tail_rounds(waves, blocks, resident, w, a.sm_count, knee=False)
    quantised = np.stack([t_dram, t_l2, t_smem, t_flops, t_issue, t_tiles]) * wave_factor
    streams = quantised.copy()
    for row, t, tail in ((2, t_smem, flat), (3, t_flops, on_knee), (4, t_issue, on_knee)):
        streams[row] = t * (wave_factor + k.partial_round * (tail - wave_factor))
    # ... and the memory streams pay no rounds at all where a spec says its partial rounds were measured to
    # cost their share (``partial_memory_rounds``): timed on ladders of shapes from 0.5 to 3.25 rounds, every
    # build's time rose in a line with its blocks, CUDA and Gluon transposes alike, on fresh data and as the
    # studies time a candidate (H100 run 211, H200 run 212). DRAM and L2 serve the whole chip: SMs left with
    # fewer of the last round's blocks leave their share of the bandwidth to those with more, so a partial
    # round's bytes take their share of a round's time, not the busiest SM's (as shared memory's wavefronts,
    # each SM's own, do). The busiest SM's share had put a grid of 819 blocks at 7 an SM (6.2 on average) a
    # whole round up; the blocks' share fits 8 of the 9 Gluon ladders of runs 211-212 closer (rms of a line
    # through the rungs 0.11-2.18 us against 0.17-2.75; the ninth equal) and, on the Gluon transpose's 26
    # studies, Spearman min 0.77 -> 0.80, picks over 1.10x the best 4 -> 1; held out on six new shapes (H100
    # run 217), picks within 10% in 4 -> 6, Spearman mean 0.906 -> 0.914 (quality/NOTES.md, forty-first
    # session).
    # Not for every spec: the CUDA transpose states it since 2026-12-07, with its aligned build's registers
    # (alone, it moved that spec's picks both ways: kernels/cuda/transpose_cost.py, quality/NOTES.md)
    part = cols["partial_memory_rounds"] > 0
    if part.any():
        for row, t in ((0, t_dram), (1, t_l2)):
            streams[row] = np.where(part, t, streams[row])
    # a block's warps take consecutive warp slots and slot s goes to scheduler s % 4: where a grid runs in
    # one round of blocks whose warps do not fill the four schedulers evenly (3 blocks of 2 warps: 2, 2, 1
    # and 1), the busiest scheduler sets the pace of the round (each k-step's barrier holds its blocks to
    # their slowest warp), and nothing refills the idle slots. Warps per scheduler n -> ceil(n) on the warp
    # knee: 1536x1000x2000 on 64x64 tiles of 64 threads, 3 blocks an SM, measured 1.29x the same tiles at
    # 128 threads where the even-split model said 1.00 (SIMT GEMM, H200 run 2). Blocks of a multiple of 4
    # warps are unchanged (f = 1 exactly). A rule of the hardware, so it applies to every spec (your own
    # kernel's 32- to 96-thread blocks too), though only the SIMT GEMM's study has measured it: the other
    # built-in specs launch whole warpgroups.
    per_sched = resident * np.ceil(threads / warp) / 4
    busiest = np.ceil(per_sched)
    uneven = (waves <= 1.0) & (busiest > per_sched)
    if uneven.any():
        f = np.where(uneven, busiest / per_sched * _knee(per_sched) / _knee(busiest), 1.0)
        streams[2:5] *= f
        quantised[2:5] *= f
    streams[5] /= wave_factor  # the tile overhead already counts whole rounds
    phased = cols["serial_phases"] > 0
    # the queued path keeps whole waves (below): its reported terms and bound too
    streams[:5] = np.where(phased, quantised[:5], streams[:5])
    bound_i = streams.argmax(axis=0)
    top = streams.max(axis=0)
    # the streams overlap imperfectly: the slowest dominates, the others add a little
    combined = top + k.overlap * (streams.sum(axis=0) - top)
    if phased.any():
        # ... but where each block runs its phases in turn (``serial_phases``: its tile's DRAM bytes, then
        # its shared-memory passes), the resident blocks are the customers of a closed queue
        # (kept on whole waves: the queue was checked so, on the transpose's original path, the one spec that
        # states serial_phases; the partial round was not tried there)
        queued = _queued(quantised, knee_x, wave_factor, resident, blocks * tiles / a.sm_count, a)
        combined = np.where(phased, queued, combined)
    lat = np.broadcast_to((cols["latency_phases"] > 0) & ~phased, combined.shape)  # (0-d columns too)
    if lat.any():
        # ... or in turn with the loads in flight together and the stores draining behind the block
        # (``latency_phases``): the queue's stations without the bandwidth (DRAM and L2 demand 0: a tile
        # costs the DRAM round trip, then its shared-memory, arithmetic and issue time), and the bandwidth
        # streams, overlapped as above, still bound it. The transpose's vector path states it where
        # registers leave a block alone on its SM: H200 run 114 (fp32 4097 x 8191, every candidate)
        # measured those tiles a median +0.25 in log over the overlapped streams; queued with the DRAM
        # bandwidth in the loop as ``serial_phases`` does, -0.41 (-0.22 with the reads alone in it); so,
        # -0.02 (Spearman 0.749 -> 0.797). quality/NOTES.md, twenty-fourth session. The Triton GEMM's
        # PATH 1 states it where an operand is loaded element by element, every k-step waiting for those
        # loads (kernels/triton/matmul_model.py; H100 runs 192-200). The reported terms
        # stay the overlapped streams' and the bound their largest (as the serial rows keep theirs): where
        # the queue is the larger, the report marks the candidate "queued" (report._queued)
        i = np.flatnonzero(lat)  # (those rows only: the queue's loop runs to their most resident blocks)
        free = quantised[:, i].copy()
        free[:2] = 0.0

        def rows(col: np.ndarray) -> np.ndarray:  # a column at those rows (0-d columns too)
            return np.broadcast_to(col, combined.shape)[i]

        delay = np.full(len(i), a.dram_latency_s)
        # where the loads a phase waits for hit L2 (``latency_from_l2``: a GEMM operand re-read element by
        # element), the delay is L2's round trip, and the bytes the plain loads move (l2_bytes less the
        # ``l2_async`` share the pipelined copies move) queue at the SM's share of the L2 rate, the
        # station a warp's element-wise reads wait in (H200 run 212's fastest builds: 6-9 SM cycles an SM
        # spent per 64-byte warp read, where its share of the plain L2 rate moves the read's 2.9 sectors in
        # 5). The bf16 PATH 1 studies had the builds of BK 32 up to 0.3 in log slower than measured and
        # those of BK 128 faster under the DRAM round trip: Spearman min 0.59 / 0.61 -> 0.79 / 0.80 (H100
        # runs 192-200 / H200 run 212, quality/NOTES.md, thirty-ninth session)
        hit = rows(cols["latency_from_l2"] > 0)
        if hit.any():
            share = np.clip(rows(cols["l2_async"]), 0.0, 1.0)
            plain = (1.0 - share) * rows(np.nan_to_num(l2_bytes))
            # (in the quantised streams' units: the queue multiplies its L2 row by the knee)
            t_plain = plain / a.l2_bytes_per_s * wave_factor[i] / knee_x[i]
            free[1] = np.where(hit, t_plain, 0.0)
            delay = np.where(hit, a.l2_latency_s, delay)
        tiles_sm = (blocks * tiles / a.sm_count)[i]
        combined[i] = np.maximum(
            combined[i], _queued(free, knee_x[i], wave_factor[i], resident[i], tiles_sm, a, delay)
        )
    # what overlaps no stream: work each block does once after its tiles (``block_cycles``: a histogram's
    # flush of 32 private replicas, a shuffle tree and a global atomic per bin, ran 18-22 cycles of an SM
    # per bin, 99 us where the reading took 2; H200 run 8), summed over the blocks an SM runs, and every
    # launch after the first (``passes``: the ramp and drain of a whole grid, fitted on the same run)
    t_serial = cols["block_cycles"] * blocks / (a.sm_count * a.clock_hz)
    t_serial = t_serial + np.maximum(cols["passes"] - 1.0, 0.0) * k.launch_s
    seconds = combined + t_serial
    terms = np.concatenate([streams, t_serial[None]])
    bound_i = np.where(t_serial > top, len(_BOUNDS) - 1, bound_i)  # the serial part outweighs every stream
    return seconds, terms, bound_i, occupancy, smem, mem_eff, wave_factor, resident
