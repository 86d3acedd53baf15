"""What the CUDA transpose costs beyond its shared-memory pattern: ``launch_info``, the grid and the terms
the predictor adds for work the bank model does not see, each with the H200 runs it comes from.

The grid is one block a tile (the vector path's 1-D grid; the original scalar path's 2-D grid walks the
batch in z). Beyond the pattern: the global side's efficiency (``dram_efficiency``: narrow accesses,
``NARROW_ACCESS_COST``; the scalar path on rows that are not whole vectors, ``SCALAR_PATH_COST``; the
block order, ``GROUP_GAIN``, and at 8-byte elements on 128 KiB rows ``WIDE_PITCH_ORDER_TIME``), the
misaligned build's extra integer instructions (``issue_cycles``,
``_MIS_*_INSTR``) and, where output rows are off the vector grid, the shifted gather's wavefronts at the
shape's row shifts over those of the read-out the shape-free pattern lists (``extra_wavefronts``,
``_gather_extra``). On the original path it also states
the registers its builds take (``regs_per_thread``, ``REGS_ORIGINAL_SM90`` in transpose_regs.py), that its
blocks run their phases in turn (``serial_phases``: the predictor queues the resident blocks), that with 1-
and 2-byte elements it streams about 5% worse than the vector path (``ORIGINAL_PATH_EFFICIENCY``), that with
4- and 8-byte elements on rows of whole 32-byte sectors it walks GROUP 1's block order (``ORIGINAL_ORDER``, a
comment) and, on output rows that are not whole 32-byte sectors, the sectors two tiles write
(``SEAM_SECTOR_BYTES``); the vector path pays those too on output rows of whole 16-byte blocks, on the share
of rows that start inside a sector (``vector_seam_rows``), and its 1- and 2-byte VEC 1 tiles, which pay no
seam off that grid, the short segments' cost (``SEGMENT_BYTES``) there instead. The vector path's memory
streams pay a grid's last partial round at its blocks' share (``partial_memory_rounds``), and it states the
registers it is built for (``register_need``) wherever its build is not the shifted one.

Why a module of its own: these are the measured and read-off constants of the predictor's transpose terms,
apart from the pattern the bank model scores (transpose_pattern.py) and the build and launch
(transpose_launch.py).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from autopad.spec import distinct_combinations

from .transpose_launch import register_need
from .transpose_pattern import _pattern, shifted_gather
from .transpose_regs import REGS_ORIGINAL_SM90
from .transpose_tile import _ARCH, _cdiv, _dims, _hpass, _layout, _lkey, _scalar

if TYPE_CHECKING:
    from .transpose import TransposeCuda

__all__ = [
    "SCALAR_PATH_COST",
    "NARROW_ACCESS_COST",
    "GROUP_GAIN",
    "COLUMN_GROUP",
    "WIDE_PITCH_BYTES",
    "WIDE_PITCH_ORDER_TIME",
    "wide_pitch",
    "SEAM_SECTOR_BYTES",
    "HALO_SEGMENT_BYTES",
    "vector_seam_rows",
    "SEGMENT_BYTES",
    "ORIGINAL_PATH_EFFICIENCY",
    "segment_efficiency",
    "launch_info",
    "launch_info_batch",
]

# Rows that are not a whole number of VEC-element vectors (4097 x 8191) send every SCALAR_EDGE = 1 tile down
# the guarded scalar path: VEC bounds-checked loads per vector, lanes VEC elements apart. The exhaustive study
# on the H200 (benchmarks/results/h200/quality, 4097 x 8191 fp32 and fp16) measured the best tile of each
# width at 1.00 / 1.10 / 1.35 / 2.25 x the VEC = 1 time for VEC = 1 / 2 / 4 / 8 (fp16), 1.0 / 1.0 / 1.27
# (fp32): about 12% of streaming rate lost per extra 4-byte element of the vector. The overhead is per element
# access (a guarded load and store, one L1 request each), so per byte it grows as elements narrow: the cost is
# SCALAR_PATH_COST x (VEC - 1) x 4 / ELEM_BYTES, 0.24 per extra 2-byte element. On the best tiles this says
# 1.24 / 1.72 / 2.68 for fp16 (measured 1.10 / 1.35 / 2.25) and, for int8, 1.5 / 2.4 / 4.4 / 8.2 at VEC 2 / 4
# / 8 / 16 (run 34's sample: 1.0 / 1.7 / 3.0 / 3.3), too much; but it ranks the whole space better than a
# cost per element of any size, which charged fp16 and int8 too little beyond the best tiles: model-only
# Spearman of fp16 4097 x 8191 (original path only) 0.498 -> 0.605, held out (constants fitted on run 1)
# 0.433 -> 0.571, no pick moved; fp32 is unchanged (transpose_model_gaps.md, fourth pass, and the forms
# that were rejected). SCALAR_EDGE = 0 loads whole
# aligned vectors on every shape; its efficiency on misaligned rows is taken as 1 (the same bytes and vector
# widths as an aligned tile plus a few shuffles and funnel shifts per vector): an assumption until measured
# (benchmarks/gpu_check_transpose.py measures it).
SCALAR_PATH_COST = 0.12
# Global accesses narrower than 4 bytes stream worse on any path: the same study measured the best VEC = 1
# (2-byte) fp16 tile at 1.142 (8192^2) and 1.152 (16384^2) x the best of all, while VEC >= 2 (4 bytes and
# more) came within 1.04 (fp32 VEC = 1, 4-byte: 1.02-1.03). Taken as the same for 1-byte accesses (int8,
# fp8: not measured). On misaligned rows the scalar path's accesses are single elements whatever VEC is.
NARROW_ACCESS_COST = 0.147
# The block order (GROUP: bands of GROUP tile rows walked column by column; 1 = row-major, as the original
# path's 2-D grid). The model cannot see DRAM page or L2 locality, so these are measurements, not a model:
# the H200 check of 2026-12-01 (benchmarks/gpu_check_transpose.py), the same build under each order. GROUP 64
# over 1: 1.035-1.146x on 4097 x 8191 (7 dtypes; rows that are not whole 16-byte vectors leave partial
# sectors at every tile seam, written by the neighbouring block along M, which GROUP runs alongside),
# 1.002-1.018x at 16384^2 / 8192^2, 0.99-1.00x on 8 x 4096 x 1024; GROUP 16 over 1: 0.999-1.049x and
# 0.991-0.998x. Keyed by "rows are whole 16-byte vectors"; each value is relative to the best order.
# GROUP 4096 (SPACE's whole-column walk: legal only where a matrix has more than 64 tile rows) was measured
# later, on H200 run 110 (2026-12-04), each build under every order on one input and output: over GROUP 1 of
# the same build, on rows of whole 16-byte vectors, fp32 16384^2 0.971, 16352^2 0.937, 32768 x 16384 0.918,
# 8192^2 0.981, 2 x 16384^2 0.972, bf16 16384^2 0.979 (fp64 16384^2: WIDE_PITCH_ORDER_TIME): a gain of 1.03
# (the median 0.971). One wider-than-tall matrix ran it slower, fp32 16384 x 32768 (1.026x GROUP 1's time),
# but run 10's fp16 3000 x 5000 sample, also wider than tall, measured its six fastest among GROUP 64 tiles
# that walk all their tile rows whole: taken alike on every shape (a term for the wide case, 0.975 where
# M < N, took run 10's model-only pick from 1.094 to 1.113 of the best). On rows that are not whole vectors
# it is taken as GROUP 64's (unmeasured: the column walk runs the seam's neighbours alongside as GROUP 64
# does).
GROUP_GAIN = {False: {1: 1.0, 16: 1.02, 64: 1.10, 4096: 1.10}, True: {1: 1.0, 16: 1.0, 64: 1.01, 4096: 1.03}}
COLUMN_GROUP = 4096
# 8-byte elements on rows of a whole multiple of WIDE_PITCH_BYTES (fp64 16384^2: both row pitches 128 KiB)
# replace GROUP_GAIN[True] with WIDE_PITCH_ORDER_TIME: each (GROUP, TILE_M)'s time over GROUP 1's (1.0, also
# the original path's, whose 2-D grid walks GROUP 1's order). H200 run 87 (2026-12-04), 13,500 candidates of
# fp64 16384^2 measured in one job on one pair of allocations, the median ratio over every vector-path build
# measured under GROUP 1, 16 and 64 alike (966-1,521 builds a TILE_M): GROUP 64 0.970 / 0.977 / 0.993 at
# TILE_M 128 / 32 / 64, GROUP 16 0.977 at TILE_M 128 (1.00 at 32 and 64); the original path measured 1.009x
# the vector path's GROUP 1 build of the same constants. Run 88 timed the GROUP 64 128 x 128 build on 25
# (input, output) pairs of separate allocations: 1.088-1.094 ms, where GROUP 1 builds ran 1.108-1.151 by
# which allocation held the output (runs 83-84 of 2026-12-03): at this pitch the band order also takes the
# placement out. Seen at no other shape: fp32 16384^2 (64 KiB rows, run 84: GROUP 64 / 1 0.533 / 0.533 ms)
# and fp64 16352^2 (run 83) show neither effect, and fp64 8192^2 was not measured by order. DRAM channel and
# page mapping, which the model does not see: a measurement, not a model.
WIDE_PITCH_BYTES = 128 * 1024
# The whole-column walk (GROUP 4096) there: run 110 measured it 0.979 of GROUP 64's time (and 0.970 of GROUP
# 1's) on the 128 x 64 tile, so 0.970 x 0.979 = 0.950 at TILE_M 128 in run 87's terms; the tunes of runs 111
# and 112 timed the 64 x 64 column walk 0.2-0.3% behind the 128 x 64 one (1.0392 / 1.0369 ms), so 0.952 at
# TILE_M 64; at 32 GROUP 64's (unmeasured).
WIDE_PITCH_ORDER_TIME = {
    64: {32: 0.977, 64: 0.993, 128: 0.970},
    16: {128: 0.977},
    4096: {32: 0.977, 64: 0.952, 128: 0.950},
}
# the reference: the fastest of GROUP 16 and 64 (the column walk's gain is beyond it, as in GROUP_GAIN)
_WIDE_FASTEST = min(
    v for g, by_tm in WIDE_PITCH_ORDER_TIME.items() if g != COLUMN_GROUP for v in by_tm.values()
)


def wide_pitch(m: int, n: int, e: int) -> bool:
    """Whether WIDE_PITCH_ORDER_TIME prices the block order: 8-byte elements, both row pitches (N x e in,
    M x e out) whole multiples of WIDE_PITCH_BYTES."""
    return e == 8 and (m * e) % WIDE_PITCH_BYTES == 0 and (n * e) % WIDE_PITCH_BYTES == 0


# Instructions the misaligned build (SCALAR_EDGE 0, VEC > 1, rows not whole vectors) issues per thread beyond
# the aligned build of the same constants, which the predictor's fitted constants already price: per load
# pass (the halo's included) ~30 for the row pointer, the segment's shift and bounds, the edge lane's second
# load and the shifted read-out row's index arithmetic, plus ~8 per 4-byte word of the vector for its
# shuffle, select stages and funnel shift. Read off the SASS of 265 hot-path builds, 1- to 8-byte elements
# (nvcc 13.0, sm_90; benchmarks/results/h200/quality/transpose_model_gaps.md, run 46): median error 9%,
# unbiased on padded tiles; a swizzled tile's shifted read-out also computes each element's XOR at run time
# (+3 an element), left to the predictor's swizzle term (counted here too, run 46's model-only pick went
# from 1.090 to 1.287 of the best). No timing went into the two constants.
_MIS_PASS_INSTR = 30
_MIS_WORD_INSTR = 8
# those instructions are integer ALU (IMAD, LOP3, SHF, SEL, ISETP) and shuffles: sm_90 executes 64 integer
# lanes per clock per SM, two warp instructions a cycle, half the four schedulers' issue rate
_INT_WARP_INSTR_PER_CLK = 2
# The misaligned build's read-out where output rows are off the vector grid (M % VEC != 0): READOUT 0, and
# READOUT 1 of 2-byte elements, run the shifted gather (transpose.cu, ap_gather_shifted; RT_SHIFT): VEC
# single-element ld.shared down one tile column per output vector, each column's rows shifted by its output
# row's offset u from the vector grid (transpose_pattern.gather_shifts: u depends on nn M mod VEC). The
# pattern ``smem_pattern`` lists has no shape (PATTERN_KEYS): READOUT 0's walk at u = 0, READOUT 1's word
# loads. The launch info states the difference as ``extra_wavefronts``: the wavefronts of the gather the
# kernel issues at this shape's shifts minus those of the listed read-out (``_gather_extra``), negative
# where the shifts spread the lanes over more banks than u = 0 does. H200 run 46 (fp16 4097 x 8191):
# swizzled VEC 8 READOUT 1 tiles of 128 rows were measured 1.41x their prediction (padded 1.50x) without
# the term. Runs 155-156 (2026-12-05, int8, every candidate of today's space): READOUT 0 halo tiles of
# VEC 16 measured a median 1.4-3.1x their prediction by layout at 4100 x 8192 but 1.1-1.7x at 4097 x 8191,
# which scoring the gather at u = 0 (the same wavefronts at both shapes) could not tell apart. With rows
# padded by 16 bytes (144 bytes, 36 words: a row is 4 banks on from the one before) the 8 lanes of a column
# read rows 16 apart, all in one bank; at u = 0 the four columns of a 4-byte word (nn .. nn + 3) share it, 8
# words in one bank: 8 wavefronts an instruction. At 4100 they take u = 0, 12, 8, 4: four words where u = 0
# reads one, in two banks (4 u mod 32 = 0, 16, 0, 16), 16 words each: 16 wavefronts. At 4097 (u = 0, 15,
# 14, 13) four banks, 8 words each: 8. Cached per (element bytes, constants, M mod VEC).
_GATHER_EXTRA: dict[tuple[int, tuple[int, ...], int], float] = {}
# A partial 32-byte sector that two blocks write (a tile's output row segment starts or ends inside it, on
# rows that are not whole sectors) costs L2 a fetch of the sector to merge the bytes and DRAM a second write:
# 64 bytes of traffic per output row of a tile beyond its data. Chosen over 32 (the second write alone) on
# H200 run 1 (fp32 4097 x 8191, original path: Spearman 0.64 against 0.58 with the same pick); run 2's fp16
# held out (0.81 against 0.80). transpose_model_gaps.md, fifth pass.
SEAM_SECTOR_BYTES = 64
# The halo build (output rows off the vector grid, M % VEC != 0) takes its seams inside GROUP_GAIN[False], one
# figure for every tile; but its output segments shorter than HALO_SEGMENT_BYTES (TILE_M x the element size)
# start inside a sector on most rows as the aligned build's do, and cost that build's seam charge beyond
# what a segment of HALO_SEGMENT_BYTES pays (0 at or above it). Read off two fp16 picks (2026-12-07,
# forty-fifth session, after the partial memory round): 32 x 128 tiles of 16-byte vectors at 4097 x 8191
# (run 34's sample) and 4099 x 3001 (round 17, H100 run 227) were predicted level with the 64-row tiles and
# measured 1.26x / 1.12x the best, where 64-byte segments at odd 2-byte offsets span 3 sectors for 2 of data
# against 5 for 4 at 128 bytes. With it those picks read 1.018 / 1.005 and no other pick of the 68 CUDA
# transpose studies moves (Spearman mean 0.883 -> 0.882); a reference of 96 bytes reads the same, 256 bytes
# with 16-byte vectors and wider moved int8 picks to 1.13-1.46x. Charged on 8-byte vectors and wider (VEC 4
# fp16, VEC 8 int8, ...), where the two misses were; narrower ones were not tried. Not held out
HALO_SEGMENT_BYTES = 128


def vector_seam_rows(m: int, e: int) -> float:
    """The share of output rows (M elements of ``e`` bytes each, from a 32-byte aligned pointer) whose
    start is not a multiple of 32 bytes, so that on the vector path every tile's segment of them starts
    inside a 32-byte sector another block writes: 1 - gcd(M e, 32) / 32. The vector path pays
    ``SEAM_SECTOR_BYTES`` on those. H200 runs 133-137 (2026-12-04, int8, the aligned build, 16-byte
    vectors): every row mid-sector (4096 x 8192, output 16 bytes past a sector, run 135) 40.0 / 33.0 us
    against 23.1 / 25.1 at 0 bytes for 64- / 128-row tiles, 1.73x / 1.31x, where the term with 64 bytes says
    1.50x / 1.25x; half the rows (4112 x 8192, run 136) 28.8 / 27.8 / 24.8 us for 64 x 128 / 128 x 64 /
    128 x 128 (256 threads) against 4096 x 8192's 22.3-23.2 / 24.8 / 22.2 us in runs 133, 135 and 137,
    1.24-1.29x / 1.12x / 1.12x, where the model's predicted times now say 1.22x / 1.09x / 1.09x (GROUP
    4096; the short-segment term, SEGMENT_BYTES, is charged on both shapes; 4112 x 8192 also has one more
    partial row of tiles). Under the efficiency's cap of 1, a block order whose gain reaches it (the
    column walk on rows of whole vectors) absorbs part of the term."""
    return 1.0 - math.gcd(m * e, 32) / 32.0


# Every contiguous run of bytes a block reads (a tile row: TILE_N elements) or writes (a tile column: TILE_M
# elements) costs DRAM about SEGMENT_BYTES more than its bytes, so short segments stream worse: traffic
# B (1 + SEGMENT_BYTES / S_in) read and B (1 + SEGMENT_BYTES / S_out) written. H200 run 65 of 2026-12-02,
# int8 16384^2, register read-out tiles under the same block order, against a copy of the same bytes in the
# same run (0.1292 ms): 128 x 128 0.1453 ms, 128 x 256 0.1418, 256 x 128 0.1407, 256 x 256 0.1354, which
# give 16, 17, 17 and 12 bytes; 12 taken (the longest segments, where the other terms matter least). Stated
# only where rows (both ways) are whole 16-byte blocks, and for the original path whole 32-byte sectors: on
# other rows the seam sectors (above) and the block order's gain (GROUP_GAIN, below) were measured with this
# cost inside them, and adding it there too moved the model-only picks of runs 34 and 46 (4097 x 8191) from
# 1.02-1.06 to 1.19-1.49 of the best. (Until the eighteenth session only rows of whole sectors; extended on
# the vector path with its seam term, which alone mostly replaced it at 4112 x 8192. On the recorded studies
# that moved run 8's bf16 [4, 2048, 3000] sample, pick 1.092 -> 1.050, Spearman 0.94 -> 0.91, and run 10's
# fp16 3000 x 5000 sample, Spearman 0.90 -> 0.91, best of the top 6 1.089 -> 1.005, and nothing else.) When
# it came in, on the recorded aligned studies, none of which it was read from, the model-only picks went from
# 1.078 / 1.051 (run 1 fp32 8192^2 / 4096^2), 1.054 / 1.032 (run 2 fp16 16384^2 / 8192^2) and 1.097 (run 63
# fp32 8192^2) to 1.037 / 1.051, 1.041 / 1.025 and 1.055, no pick worse; Spearman moved by at most +0.004
# there but 0.868 -> 0.837 on run 63's fp32 4096^2 and 0.744 -> 0.711 on run 8's fp32 6144 x 3072 sample.
SEGMENT_BYTES = 12
# The original path (SCALAR_EDGE 1) of 1- and 2-byte elements streams about 5% worse than the vector path's
# best, which nothing above states (its element-wise edge guards, no launch bounds, a 2-D grid): the best
# original-path candidate over the best vector-path one, measured against predicted before this term, on the
# exhaustive studies of today's space (H200 runs 46, 67, 69: fp16 4097 x 8191, 8192^2, 16384^2) 0.918 /
# 0.928 / 0.953. The model ranked original-path 128-thread tiles first at fp16 8192^2 / 16384^2 (measured
# 1.111 / 1.092 of the best); with the term its picks are 1.019 / 1.014. Held out (not in the fit): run 8's
# bf16 4 x 2048 x 3000 sample 1.120 -> 1.092, runs 2, 10 and 34 (fp16, int8) unchanged. 0.90 and 0.93 give the
# same picks. Not applied to 4- and 8-byte elements: there the gap is smaller (0.953-0.969 on runs 61 and 63)
# and the term moves picks both ways (run 63's fp32 8192^2 / 4096^2 1.055 / 1.060 -> 1.034 / 1.041, but run
# 1's 4097 x 8191 1.017 -> 1.058 and run 8's 6144 x 3072 1.040 -> 1.126, where it exposes a vector-path gap:
# VEC 1 128 x 128 tiles predicted 38.8 us, measured 46-47). transpose_model_gaps.md, eighth pass.
ORIGINAL_PATH_EFFICIENCY = 0.95
# ORIGINAL_ORDER: the original path's 2-D grid walks GROUP 1's block order, so on rows of whole 16-byte
# vectors whose output rows are whole 32-byte sectors (no seam term) its 4- and 8-byte builds take
# GROUP_GAIN[True][1] over the best order's gain, as the vector path's GROUP 1 builds do (at 128 KiB pitches
# WIDE_PITCH_ORDER_TIME already prices it so). They took no factor before, as if they walked the best order.
# H200 runs 114-115 (2026-12-04: fp32 8192^2, 4097 x 8191 and 4096^2, every candidate of today's space timed
# in one job): the original path's best over the vector path's GROUP 1 best 1.004 (0.1354 / 0.1349 ms) and
# 1.023 (0.03741 / 0.03656) on the aligned shapes, against 1.024 and 1.023 over the best of any order; the
# real tuner replayed on those rows picked 1.021 / 1.024 of the best at 8192^2 / 4096^2, 1.003 / 1.007 with
# this (run 63's recorded fp32 8192^2 1.017 -> 1.001; no replayed transpose study worse); on the H200 (runs
# 115 -> 116) 1.025 -> 1.003 at 8192^2 but 1.016 -> 1.025 at 4096^2 (the tune's own timings at 37 us). Both
# shapes are the ones this was read off. Against it, held out: run 8's fp32 6144 x 3072 sample, whose fastest
# is an original-path build (GROUP 1, 64 x 64, VEC 4, swizzled: 41.41 us, ahead of the sample's fastest vector
# GROUP 1 build, 41.95): model-only 1.040 -> 1.126 there (its top is then a VEC 1 128 x 128 vector tile,
# measured 46.6 us); run 1's 4096^2 1.051 -> 1.039. 1- and 2-byte elements keep ORIGINAL_PATH_EFFICIENCY (read
# against the vector path's best, order included), and rows off the 32-byte sector grid keep their fitted
# seam and scalar-path terms (their order is inside them). transpose_model_gaps.md, tenth pass.

# what ``_gather_extra`` reads: the pattern's constants but READOUT, and the layout's
_GATHER_KEYS = ("TILE_M", "TILE_N", "THREADS", "VEC", "PAD", "SW_VEC", "SW_PER_PHASE", "SW_MAX_PHASE")


def launch_info(spec: TransposeCuda, constants: dict[str, int], shape: tuple[int, ...], dtype: str) -> dict:
    """Blocks, threads, footprint, bytes in flight, the global side's efficiency, the misaligned build's
    issue cycles and the shifted gather's extra wavefronts of one candidate."""
    c, e = constants, spec._e(dtype)
    key = (c["THREADS"], c["VEC"], _scalar(c), *_lkey(c, e))
    info = dict(_launch_info(key, tuple(shape), int(c.get("GROUP", 1)), int(c.get("READOUT", 0))))
    info["extra_wavefronts"] = 0.0
    if _gathered(c.get("READOUT", 0), _scalar(c), c["VEC"], tuple(shape), e):
        key = (*(int(c[k]) for k in _GATHER_KEYS), int(c.get("READOUT", 0)))
        info["extra_wavefronts"] = _gather_extra([key], tuple(shape), e)[0]
    return info


def launch_info_batch(
    spec: TransposeCuda, columns: dict[str, np.ndarray], shape: tuple[int, ...], dtype: str
) -> dict:
    """``launch_info`` of many candidates at once, as a dict of arrays (the same numbers)."""
    c, n = columns, len(columns["THREADS"])
    group = np.asarray(c["GROUP"]) if "GROUP" in c else np.ones(n, dtype=np.int64)
    scalar = np.asarray(c["SCALAR_EDGE"]) != 0 if "SCALAR_EDGE" in c else np.ones(n, dtype=bool)
    pad = np.where(np.asarray(c["SW_MAX_PHASE"]) == 1, c["PAD"], 0)  # a swizzled tile has no padding
    readout = np.asarray(c["READOUT"]) if "READOUT" in c else np.zeros(n, dtype=np.int64)
    out = _launch_arrays(
        *(np.asarray(c[k]) for k in ("THREADS", "VEC")),
        scalar,
        c["TILE_M"],
        c["TILE_N"],
        pad,
        group,
        tuple(shape),
        spec._e(dtype),
        readout,
        np.asarray(c["SW_MAX_PHASE"]) > 1,
    )
    extra = np.zeros(n)
    sel = np.flatnonzero(_gathered(readout, scalar, np.asarray(c["VEC"]), tuple(shape), spec._e(dtype)))
    if len(sel):
        cols = [np.asarray(c[k])[sel] for k in _GATHER_KEYS] + [readout[sel]]
        first, at = distinct_combinations(cols, len(sel))
        keys = list(zip(*(col[first].tolist() for col in cols)))
        extra[sel] = np.array(_gather_extra(keys, tuple(shape), spec._e(dtype)))[at]
    out["extra_wavefronts"] = extra
    return out


@lru_cache(maxsize=1 << 14)
def _launch_info(
    key: tuple[int, ...], shape: tuple[int, ...], group: int = 1, readout: int = 0
) -> tuple[tuple[str, float], ...]:
    threads, vec, scalar, tm, tn, e, pad, sv, pp, mp = key
    one = [np.array([v]) for v in (threads, vec, bool(scalar), tm, tn, pad if mp == 1 else 0, group)]
    more = (np.array([readout]), np.array([mp > 1]))
    return tuple((k, v[0].item()) for k, v in _launch_arrays(*one, shape, e, *more).items())


def _launch_arrays(
    threads: np.ndarray,
    vec: np.ndarray,
    scalar: np.ndarray,
    tm: np.ndarray,
    tn: np.ndarray,
    pad: np.ndarray,
    group: np.ndarray,
    shape: tuple[int, ...],
    e: int,
    readout: np.ndarray,
    swizzled: np.ndarray,
) -> dict[str, np.ndarray]:
    """The launch info of candidates given as arrays (one entry each; ``pad`` is the tile's padding, 0 for
    a swizzled tile): blocks, threads, the tile's footprint, tiles per block, bytes in flight, the
    global side's efficiency, the misaligned build's extra instructions (``issue_cycles``), on the
    original path its compiled registers and its phases in turn (``serial_phases``), and on the vector path
    its estimated registers (the shifted build's only where they leave a block alone on its SM) and, where
    they do, ``latency_phases``, and its memory streams' partial round (``partial_memory_rounds``); on both
    ``phased_loads`` (the tile's loads issued in one phase before the barrier)."""
    b, m, n = _dims(shape)
    gx, gy = -(-n // tn), -(-m // tm)
    ly = threads // (tn // vec)  # rows a load pass covers
    lpass = tm // ly
    misaligned = (m % vec != 0) | (n % vec != 0)
    width = np.where(scalar & misaligned, e, vec * e)  # bytes per global access
    eff = np.where(width < 4, 1.0 / (1.0 + NARROW_ACCESS_COST), 1.0)
    eff = np.where(misaligned & scalar, eff / (1.0 + SCALAR_PATH_COST * (vec - 1) * 4 / e), eff)
    # output rows that are not whole 32-byte sectors: every tile's output row segment ends inside a sector the
    # next tile along M writes too (SEAM_SECTOR_BYTES more DRAM traffic each; the original path's element
    # stores, whose 2-D grid reaches that tile gx blocks later)
    if (m * e) % 32:
        seam = SEAM_SECTOR_BYTES / (tm * e)  # per byte written
        eff = np.where(scalar, eff / (1.0 + 0.5 * seam), eff)  # (writes are half the traffic)
        # the vector path on output rows of whole 16-byte blocks (M e % 16 == 0, where it was measured; input
        # rows may be off that grid: 4112 x 8191 takes it on top of GROUP_GAIN[False]) writes each tile's
        # row segment from m0, so it starts inside a sector on the rows n whose start n M e is not
        # a multiple of 32 (vector_seam_rows)
        # Rows off the 16-byte grid: only the aligned build (M % VEC == 0: no halo, vectors from m0) pays
        # the same (H200 run 149, int8 4100 x 8192: the model-only pick, a 4-byte-vector 32 x 128 tile,
        # 1.451 -> 1.047 of the best sampled; run 114's fp32 4097 x 8191 Spearman 0.69 -> 0.75, through its
        # VEC 1 tiles). Not 1- and 2-byte VEC 1 tiles, whose narrow-access cost was fitted with it inside
        # (there it took run 46's fp16 4097 x 8191 from 0.83 to 0.78), nor the misaligned build's halo
        # tiles: they keep GROUP_GAIN[False], measured with their seams inside
        if (m * e) % 16 == 0:
            pays = ~scalar
        else:
            pays = ~scalar & (m % vec == 0) & ((vec > 1) | (e >= 4))
        vsr = vector_seam_rows(m, e)
        eff = np.where(pays, eff / (1.0 + 0.5 * vsr * seam), eff)
        # ... and the halo build's short output segments (HALO_SEGMENT_BYTES), beyond its GROUP_GAIN[False]
        short = SEAM_SECTOR_BYTES * np.maximum(0.0, 1.0 / (tm * e) - 1.0 / HALO_SEGMENT_BYTES)
        halo_short = ~scalar & (m % vec != 0) & (vec * e >= 8)
        eff = np.where(halo_short, eff / (1.0 + 0.5 * vsr * short), eff)
    # short contiguous segments (SEGMENT_BYTES), on rows of whole 16-byte blocks: a block reads TILE_M
    # segments of TILE_N elements and writes TILE_N of TILE_M (clipped to the matrix), half the traffic
    # each way
    # (the original path only on rows of whole sectors: elsewhere its seam term was fitted with this inside)
    if (m * e) % 16 == 0 and (n * e) % 16 == 0:
        seg = segment_efficiency(np.minimum(tn, n) * e, np.minimum(tm, m) * e)
        sectors = (m * e) % 32 == 0 and (n * e) % 32 == 0
        eff = eff * (seg if sectors else np.where(scalar, 1.0, seg))
    elif e < 4 and (m * e) % 16:
        # ... and, on output rows off the 16-byte grid, the vector path's VEC 1 tiles of 1- and 2-byte
        # elements, which take no seam charge there (above; on output rows of whole 16-byte blocks they pay
        # it, and input rows off the grid alone leave them to GROUP_GAIN[False]). The exhaustive int8
        # studies (H200 runs 155-156, 2026-12-05: 4097 x 8191, 4100 x 8192, 4104 x 8192, every candidate)
        # measured their best tiles 1.64-1.84x the best of all where the model said 1.08-1.12, and scoring
        # the halo build's gather at its row shifts (``_gather_extra``) had let run 46's fp16 4097 x 8191
        # model-only answer fall to such a tile (1.024 -> 1.174 of the best, predicted 1.3% ahead of the
        # 16-byte READOUT 1 tile it had picked). With this term: int8 Spearman 0.852 / 0.802 / 0.801 ->
        # 0.834 / 0.818 / 0.818, run 46 back to 1.024 (Spearman 0.842 -> 0.826); read off those four studies
        # (not held out). Not 4- and 8-byte VEC 1 tiles: they pay the seam, and this on top took run 153's
        # fp32 4098 x 8192 sample from 1.045 to 1.138 of its best
        seg = segment_efficiency(np.minimum(tn, n) * e, np.minimum(tm, m) * e)
        eff = np.where(~scalar & (vec == 1), eff * seg, eff)
    # a band of at least the matrix's tile rows walks whole columns whatever GROUP says (the kernel clamps
    # it): priced as the column walk, as GROUP 64 on 64 or fewer tile rows is; GROUP 4096 on more than 4096
    # tile rows is a band, priced as GROUP 64's (unmeasured; run 110's half-column bands lost most of the
    # column walk's gain)
    group = np.where((group == COLUMN_GROUP) & (gy > COLUMN_GROUP), 64, group)
    group = np.where((group > 1) & (group >= gy), COLUMN_GROUP, group)
    # the block order on the vector path: measured, not modelled (GROUP_GAIN). The original path (its 2-D
    # grid walks GROUP 1's order) takes, with 1- and 2-byte elements, ORIGINAL_PATH_EFFICIENCY instead (read
    # against the vector path's best); with 4- and 8-byte elements GROUP 1's factor on rows of whole 32-byte
    # sectors (ORIGINAL_ORDER; at 128 KiB pitches WIDE_PITCH_ORDER_TIME's), on other rows nothing more than
    # their seam term
    if wide_pitch(m, n, e):  # measured times relative to the fastest order (WIDE_PITCH_ORDER_TIME)
        rel = np.ones(len(group))
        for g, by_tm in WIDE_PITCH_ORDER_TIME.items():
            for t, v in by_tm.items():
                rel[(group == g) & (tm == t) & ~scalar] = v
        eff = np.minimum(1.0, eff * (_WIDE_FASTEST / rel))
    else:
        aligned = (m * e) % 16 == 0 and (n * e) % 16 == 0
        gains = GROUP_GAIN[aligned]
        gain = np.ones(len(group))
        for g, v in gains.items():
            gain[group == g] = v
        # relative to the best of GROUP 1, 16 and 64; the column walk's gain is beyond it (capped: the
        # efficiency is a share, at most 1). The original path walks GROUP 1's order (ORIGINAL_ORDER)
        best = max(v for g, v in gains.items() if g != COLUMN_GROUP)
        # (rows off the 32-byte grid: the seam term above was fitted with the original path's order in it)
        own = gains[1] / best if aligned and e >= 4 and (m * e) % 32 == 0 else 1.0
        eff = np.where(scalar, eff * own, np.minimum(1.0, eff * (gain / best)))
    if e < 4:  # 1- and 2-byte elements only (see ORIGINAL_PATH_EFFICIENCY)
        eff = np.where(scalar, eff * ORIGINAL_PATH_EFFICIENCY, eff)
    # the misaligned build's extra instructions, in SM cycles per block: passes of the load loop (the halo's
    # ceil(VEC / LY) more where output rows are shifted too, M % VEC != 0; READOUT 2 is not legal there)
    # times instructions a pass, each warp's at the integer rate. H200 run 46, fp16 4097 x 8191, GROUP 64:
    # the best 4-byte-vector layout of a tile and thread count measured a median 1.54x the best 16-byte one
    # (23 configurations; 8-byte: 1.10x), where the DRAM-bound model said 1.00 (1.02); with this term 1.35
    halo = m % vec != 0
    hpass = _hpass(vec, ly, readout, e)
    passes = lpass + np.where(halo, hpass, 0)
    words = np.maximum(1, vec * e // 4)
    per_thread = passes * (_MIS_PASS_INSTR + _MIS_WORD_INSTR * words)
    shifted = ~scalar & misaligned & (vec > 1)
    issue = np.where(shifted, threads // 32 * per_thread / _INT_WARP_INSTR_PER_CLK, 0.0)
    # the vector path's registers, stated (until 2026-12-07; below) only where they allow one resident
    # block an SM: the predictor otherwise took the residency threads and shared memory allow, but a
    # block alone on its SM has no neighbour to overlap its load, barrier and store phases. H200 run 149
    # (int8 8193 x 16383, the window read-out's misaligned build): 256 x 128 and 128 x 256 tiles of 512
    # threads at 80 registers, one block an SM, measured 1.38-1.44x the best where the model had them
    # first (four blocks an SM); stated wherever registers lower the residency, the term took run 46's
    # fp16 model-only pick from 1.024 to 1.288 (its 93-register 64 x 128 tiles hold five blocks and are
    # the fastest)
    hbuild = shifted & (readout != 2)  # the misaligned build's halo passes are in its registers
    need = register_need(vec, e, lpass + np.where(hbuild, hpass, 0), readout, shifted)
    alone = ~scalar & (65536 // (threads * need) <= 1)
    # ... and, since 2026-12-07 (forty-fifth session), stated wherever the build is not the shifted one (VEC
    # 1, or rows and pointers on the vector grid): ``min_blocks`` builds for what its registers allow, so
    # fp32 128 x 128 tiles of 512 threads at VEC 1 (32 load passes, 48 registers) hold 2 blocks an SM where
    # threads and shared memory allow 3 (H100 run 166's profile at 6144 x 3072 read 47% of the SM's warps
    # resident). Not the shifted build: its estimate, stated wherever it lowers the residency, took run 46's
    # fp16 4097 x 8191 pick from 1.024 to 1.283 of the best (quality/NOTES.md, forty-fifth session)
    stated = alone | ~shifted
    return {
        "blocks": np.where(scalar, gx * gy * min(b, 65535), b * gx * gy),
        "threads": threads,
        # the layout's footprint (layouts.py: rows x row stride). The misaligned build also holds its halo
        # rows (transpose_tile._smem, which MIN_BLOCKS counts); stated here they lowered Spearman by up to
        # 0.009 (fp32 4097 x 8191 0.749 -> 0.743) and moved no pick (transpose_model_gaps.md, eleventh
        # pass): the residency and bytes-in-flight constants were fitted without them
        "smem_bytes": tm * (tn + pad) * e,
        "tiles_per_block": np.where(scalar, _cdiv(b, min(b, 65535)), 1),
        # the load loop issues all its passes before the first use: bytes each thread has in flight
        "inflight_bytes": lpass * vec * e,
        "dram_efficiency": eff,
        "issue_cycles": issue,
        "regs_per_thread": np.where(
            scalar, _regs_original(e, tm, tn, threads, vec, readout, swizzled), np.where(stated, need, 0.0)
        ),
        "serial_phases": scalar.astype(np.float64),
        # ... and a vector-path block alone on its SM runs its load, barrier and read-out in turn, with no
        # neighbour to hide them: its loads are issued together and its stores drain behind it, so the
        # predictor queues it for the DRAM round trip and its shared-memory and issue time, bounded by the
        # streams (``latency_phases``; predict.py). Run 114's one-block fp32 4097 x 8191 tiles (254
        # registers at 128 x 128 / 256 threads with VEC 2, compiled for sm_90 with nvcc 13.0) measured a
        # median +0.25 in log over their prediction without it, -0.02 with it
        "latency_phases": alone.astype(np.float64),
        # every block loads its tile in one phase (all passes issued, then the barrier, then the read-out):
        # its bytes in flight need resident warps too (``phased_loads``; predict.py: H100 run 166's profile,
        # fp32 VEC 1 tiles at a third of the SM's warps ~9% slower at the same DRAM bytes; H200 run 114)
        "phased_loads": np.ones(len(threads), dtype=np.float64),
        # on the vector path a grid's last partial round of blocks costs the DRAM and L2 streams its
        # blocks' share, not a whole round (``partial_memory_rounds``; predict.py): the tail ladders of H100
        # run 211 (fresh data) and H200 run 212 (as the studies time) found no CUDA build's partial round
        # costing a whole one (step share -0.03..+0.09). Left out until 2026-12-07 because it moved picks
        # both ways; with the aligned build's registers above, on the 60 recorded transpose studies of both
        # cards: picks within 10% of the best 52 -> 56, Spearman under 0.8 on 11 -> 4, mean 0.867 -> 0.883
        # (quality/NOTES.md, forty-fifth session; held out on round 17 of gpu_new_shapes.py). The original
        # path's queue (``serial_phases``) keeps whole rounds, as the predictor has it
        "partial_memory_rounds": (~scalar).astype(np.float64),
    }


def segment_efficiency(s_in: Any, s_out: Any) -> Any:
    """The DRAM efficiency of reading segments of ``s_in`` bytes and writing as many bytes in segments of
    ``s_out`` (``SEGMENT_BYTES`` more traffic a segment; scalars or arrays)."""
    return 2.0 / (2.0 + SEGMENT_BYTES / s_in + SEGMENT_BYTES / s_out)


def _regs_original(e: int, *cols: np.ndarray) -> np.ndarray:
    """``REGS_ORIGINAL_SM90`` of each candidate (TILE_M, TILE_N, THREADS, VEC, READOUT, swizzled as
    arrays), 0 (no register limit stated) for a tile the table does not hold."""
    full = [np.broadcast_to(np.asarray(c, dtype=np.int64), np.broadcast(*cols).shape) for c in cols]
    first, at = distinct_combinations(full, len(full[0]))
    get = REGS_ORIGINAL_SM90.get
    return np.array([get((e, *k), 0) for k in zip(*(c[first].tolist() for c in full))], dtype=np.float64)[at]


def _gathered(readout: Any, scalar: Any, vec: Any, shape: tuple[int, ...], e: int) -> Any:
    """Does the kernel read out by the shifted gather (``_GATHER_EXTRA``)? The vector path's halo build
    (VEC > 1, output rows off the vector grid: M % VEC != 0; an output pointer off the grid does the same,
    which a shape cannot say) with READOUT 0, or READOUT 1 of 2-byte elements (1-byte READOUT 1 runs its
    register window instead)."""
    readout = np.asarray(readout)
    vec = np.asarray(vec)
    off_grid = (_dims(shape)[1] % vec != 0) & (vec > 1) & ~np.asarray(scalar, dtype=bool)
    return off_grid & ((readout == 0) | ((readout == 1) & (e == 2)))


def _gather_extra(keys: list[tuple[int, ...]], shape: tuple[int, ...], e: int) -> list[float]:
    """``extra_wavefronts`` of candidates read out by the shifted gather at ``shape``, one per key (the
    constants in ``_GATHER_KEYS`` order, then READOUT): the wavefronts of a block's gather at this shape's
    row shifts (``transpose_pattern.shifted_gather``) minus those of the read-out its pattern lists, under
    the candidate's layout; the store phase is the same in both and left out. The read-outs not yet scored
    go through the ranking's unit scorer together (``autopad.score_chunk``: each distinct instruction
    worked out once, each distinct address row scored once), a gather shared by READOUT 0 and 1 and
    READOUT 0's listed read-out being the gather at shift 0."""
    from autopad.score_chunk import _score_chunk

    m = _dims(shape)[1]
    # one memo entry a (key, M mod VEC): the shifts depend on nothing else. Batched, entry b's rows start b
    # N M elements further on, which moves the shifts along the columns (sh(nn) -> sh(nn + b N)); that left
    # each tile's wavefronts unchanged on every gathering candidate of six batched shapes tried (fp16 3 x
    # 1001 x 63 and 65, 3 x 97 x 130; bf16 2 x 3074 x 2050; int8 3 x 4100 x 8190, 4 x 1001 x 999; a test
    # checks a sample), so entry 0's gather stands for all
    memo = [(e, tuple(k), m % k[_GATHER_KEYS.index("VEC")]) for k in keys]
    todo = list(dict.fromkeys(x for x in memo if x not in _GATHER_EXTRA))
    if todo:
        pats: list[list[tuple]] = []
        pat_of: dict[tuple, int] = {}
        unit_of: dict[tuple, int] = {}
        which: list[int] = []
        lays: list[Any] = []
        plan = []
        for _, k, m_mod in todo:
            c = dict(zip(_GATHER_KEYS, k[:-1]))
            tm, tn, threads, vec = c["TILE_M"], c["TILE_N"], c["THREADS"], c["VEC"]
            # the tile's layout grown past the gather's reach (VEC - 1 rows past TILE_M; a layout's banks do
            # not depend on its row count)
            lkey = _lkey(c, e)
            lay = _layout(tm + 2 * vec, *lkey[1:])
            mine = []
            for part in (("gather", m_mod), ("gather", 0) if k[-1] == 0 else ("listed", k[-1])):
                pk = (tm, tn, threads, vec, *part)
                if pk not in pat_of:
                    pat_of[pk] = len(pats)
                    if part[0] == "gather":
                        rows, cols = shifted_gather(tm, tn, threads, vec, part[1])
                        pats.append([("load", e, rows, cols, np.ones(len(rows), dtype=np.int64))])
                    else:
                        listed = _pattern(tm, tn, threads, vec, part[1], e)
                        pats.append([g for g in listed.groups if g[0] == "load"])
                uk = (pat_of[pk], lkey)
                if uk not in unit_of:
                    unit_of[uk] = len(which)
                    which.append(pat_of[pk])
                    lays.append(lay)
                mine.append(unit_of[uk])
            plan.append(mine)
        wave = _score_chunk(pats, which, lays, [id(x) for x in lays], _ARCH)[0]
        for x, (gather, listed) in zip(todo, plan):
            _GATHER_EXTRA[x] = float(wave[gather] - wave[listed])
    return [_GATHER_EXTRA[x] for x in memo]
