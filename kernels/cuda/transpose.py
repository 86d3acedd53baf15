"""CUDA transpose kernel spec: in [B, M, N] (or [M, N]) -> out [B, N, M], any element type of 1 to 8 bytes.

The kernel (transpose.cu) stages a TILE_M x TILE_N tile through shared memory: vectorised row-wise loads
from global memory, one VEC-wide st.shared per vector, then a column walk read-out (READOUT 0: one
element per ld.shared; 1: 4-byte words transposed in registers; 2: ldmatrix.x4.trans, 16-bit only) and a
wide global store. This module is the spec the tuner sees (autopad/spec.py), on ``autopad.CudaKernel``: the
constants, the one validity predicate ``legal`` (vectorised ``RESTRICTIONS`` first), the layout, and
``smem_pattern``: the exact shared-memory instructions one block issues for one tile, derived from the same
constants as the kernel's index arithmetic (numpy over warps, passes and lanes), so that the model scores
what the kernel does.

SCALAR_EDGE chooses the global side. 1 is the original kernel (edge tiles and rows that are not whole
vectors go through a guarded scalar path; the H200 quality study measured that path, hence
``SCALAR_PATH_COST``). 0 keeps every global access an aligned vector: misaligned rows (4097 x 8191) are
funnel-shifted in registers, edges are predicated whole vectors, and the kernel is built with
``__launch_bounds__(THREADS, MIN_BLOCKS)`` so that its registers allow the occupancy the model assumes
(``min_blocks``); at sm_90 the original 128 x 128 fp16 read-outs took 128 to 182 registers (1 to 2 blocks
per SM), the vector path 40 to 48. The original path states the registers its builds take
(``REGS_ORIGINAL_SM90``, compiled) and that its blocks run load, shared-memory passes and stores in turn
(``serial_phases``: the predictor queues its resident blocks for DRAM and shared memory), which together
rank the recorded studies' spaces (runs 1 and 2: all original path) at Spearman 0.92-0.94 on aligned
shapes; the vector path states neither (its launch bounds hold the model's occupancy; under the queue run
46's pick went from 1.02 to 1.13 of the best: transpose_model_gaps.md, fifth pass). On misaligned rows
the vector path's shuffles, funnel shifts and shifted read-out cost instructions the aligned build does not
run; the spec states them as issue time
(``issue_cycles``, read off the SASS): narrow vectors there are instruction-bound (H200 run 46). Where output
rows are off the vector grid, the 2-byte READOUT 1 build reads out as READOUT 0 does (the shifted gather);
its pattern cannot say so (it has no shape), so its launch info adds the gather's wavefronts over the word
loads (``extra_wavefronts``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np
from autopad.kernels.transpose_io import TransposeIO
from autopad.kernels.transpose_io import input_tensor as _x

from autopad.access import Instruction
from autopad.arch import get_arch
from autopad.bases import CudaKernel, Out
from autopad.layouts import Legality, Padded, Swizzled
from autopad.spec import DTYPE_BYTES, KernelSpec, distinct_combinations

from .transpose_regs import REGS_ORIGINAL_SM90

_ARCH = get_arch("sm_90")
_LEGAL = Legality(True)  # (one answer shared by every legal candidate: a ranking asks thousands of times)
_SOURCE = Path(__file__).with_name("transpose.cu")
MAX_VEC_REGS = 64  # 4-byte registers the load phase may hold per thread (LPASS x VEC x elem / 4)
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
GROUP_GAIN = {False: {1: 1.0, 16: 1.02, 64: 1.10}, True: {1: 1.0, 16: 1.0, 64: 1.01}}
# registers a thread needs besides the loaded vectors (addresses, indices, the read-out): ptxas -v over the
# vector path's space at sm_90, built at the model's occupancy and lowered until no spill; the largest
# overhead seen, rounded up (see tests/test_cuda_transpose.py)
_REG_OVERHEAD = {0: 16, 1: 4}  # registers besides the loads: aligned build, misaligned build
# registers a load pass holds besides its words: the misaligned build's row pointer, segment end, shift and
# predicates (the next lane's vector is a shuffle result used at once, not held across passes); fitted with
# ptxas on all 289 misaligned geometries (benchmarks/results/cpu/register_overhead.md): none spills
_REG_PER_PASS = {0: 0, 1: 5}
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
# The misaligned build's read-out where output rows are off the vector grid (M % VEC != 0): READOUT 1 of
# 2-byte elements does not run its register transpose there but READOUT 0's shifted gather (transpose.cu,
# ap_gather_shifted with RT_SHIFT): VEC 2-byte ld.shared down one tile column per output vector, not VEC
# 4-byte words of two columns. ``smem_pattern`` has no shape (PATTERN_KEYS), so it lists READOUT 1's word
# loads; the launch info states the difference as ``extra_wavefronts``: the wavefronts of the READOUT 0
# pattern of the same tile, threads and layout minus READOUT 1's (``_gather_extra``). The gather's row
# offset u is left at 0, as the model scores READOUT 0 itself. H200 run 46 (fp16 4097 x 8191): swizzled
# VEC 8 READOUT 1 tiles of 128 rows were measured 1.41x their prediction (padded 1.50x) without this term.
_GATHER_EXTRA: dict[tuple[str, tuple[int, ...]], float] = {}
# A partial 32-byte sector that two blocks write (a tile's output row segment starts or ends inside it, on
# rows that are not whole sectors) costs L2 a fetch of the sector to merge the bytes and DRAM a second write:
# 64 bytes of traffic per output row of a tile beyond its data. Chosen over 32 (the second write alone) on
# H200 run 1 (fp32 4097 x 8191, original path: Spearman 0.64 against 0.58 with the same pick); run 2's fp16
# held out (0.81 against 0.80). transpose_model_gaps.md, fifth pass.
SEAM_SECTOR_BYTES = 64


def _dims(shape: tuple[int, ...]) -> tuple[int, int, int]:
    if len(shape) == 2:
        return 1, int(shape[0]), int(shape[1])
    if len(shape) == 3:
        return int(shape[0]), int(shape[1]), int(shape[2])
    raise ValueError(f"transpose: shape must be [M, N] or [B, M, N], got {shape!r}")


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _phases(c: dict[str, int]) -> tuple[int, int, int, int, int, int]:
    lx = c["TILE_N"] // c["VEC"]
    ly = c["THREADS"] // lx
    sx = c["TILE_M"] // c["VEC"]
    sy = c["THREADS"] // sx
    return lx, ly, c["TILE_M"] // ly, sx, sy, c["TILE_N"] // sy


@lru_cache(maxsize=4096)
def _layout(tm: int, tn: int, e: int, pad: int, sv: int, pp: int, mp: int) -> Padded | Swizzled:
    if mp == 1:
        return Padded(tm, tn, e, pad=pad)
    return Swizzled(tm, tn, e, sw_vec=sv, per_phase=pp, max_phase=mp)


def _lkey(c: dict[str, int], e: int) -> tuple[int, ...]:
    return (c["TILE_M"], c["TILE_N"], e, c["PAD"], c["SW_VEC"], c["SW_PER_PHASE"], c["SW_MAX_PHASE"])


# ---- the shared-memory pattern, vectorised ----------------------------------------------------------------

_LANES = np.arange(32, dtype=np.int64)
_Names = Callable[[], tuple[str, ...]]  # a phase's loop names, made only when its instructions are asked for
# READOUT 2: lane 8i + j points ldmatrix's matrix i, row j at this row of a 32 x 8 block (transpose.cu)
_LDSM_ROW = 8 * ((_LANES % 8) >> 1) + 2 * (((_LANES >> 3) + ((_LANES % 8) >> 1)) & 3) + (_LANES & 1)
_LANES32, _LDSM_ROW32 = _LANES.astype(np.int32), _LDSM_ROW.astype(np.int32)  # (the patterns' lanes: int32)


class SmemPattern:
    """One block's shared-memory instructions for one tile, kept stacked per (op, width).

    ``groups`` is what the tuner's batched scorer reads: (op, width, rows [n, 32], cols [n, 32], counts),
    built with numpy over warps, passes and lanes at once. Iterating gives ``autopad.access.Instruction``
    objects in the kernel's order (warp by warp: its stores, then its loads), named as the kernel's loops
    are; they are made only when asked for (``autopad.access.score``, ``explain``, reports).
    """

    def __init__(self, phases: list[tuple[str, str, int, np.ndarray, np.ndarray, _Names]]) -> None:
        # each phase: (tag, op, width, rows [warps, n, 32], cols [warps, n, 32], a call that gives the loop
        # names of the n: made with the instructions, as a ranking reads only ``groups``)
        self._phases = phases
        self.groups = tuple(
            (
                op,
                w,
                rows.reshape(-1, rows.shape[-1]),
                cols.reshape(-1, cols.shape[-1]),
                np.ones(rows.shape[0] * rows.shape[1], dtype=np.int64),
            )
            for _, op, w, rows, cols, _ in phases
        )
        self._ins: tuple[Instruction, ...] | None = None

    def instructions(self) -> tuple[Instruction, ...]:
        if self._ins is None:
            warps = self._phases[0][3].shape[0]
            self._ins = tuple(
                Instruction(f"{tag} w{w} {name}", op, width, rows[w, i], cols[w, i])
                for w in range(warps)
                for tag, op, width, rows, cols, names in self._phases
                for i, name in enumerate(names())
            )
        return self._ins

    def __iter__(self) -> Any:
        return iter(self.instructions())

    def __len__(self) -> int:
        return sum(p[3].shape[0] * p[3].shape[1] for p in self._phases)

    def __getitem__(self, i: int) -> Instruction:
        return self.instructions()[i]


@lru_cache(maxsize=1024)
def _pattern(tm: int, tn: int, threads: int, vec: int, readout: int, e: int) -> SmemPattern:
    # lanes as int32 arrays [warp, instruction, lane], each one made whole by the arithmetic itself (no
    # broadcast views to copy later): a ranking builds some hundred patterns and stacks them all
    c = {"TILE_M": tm, "TILE_N": tn, "THREADS": threads, "VEC": vec}
    lx, ly, lpass, sx, sy, spass = _phases(c)
    warps = threads // 32
    w = np.arange(warps, dtype=np.int32)[:, None, None]
    t = w * 32 + _LANES32  # [warp, 1, lane]: threadIdx.x
    # store phase, pass p: lane writes VEC elements at (ly + p*LY, lx*VEC) in one VEC*elem st.shared
    rows = t // lx + np.arange(0, lpass * ly, ly, dtype=np.int32)[:, None]
    cols = np.repeat((t % lx) * vec, lpass, axis=1)
    phases = [("st", "store", vec * e, rows, cols, lambda: tuple(f"p{i}" for i in range(lpass)))]
    if readout == 2:  # ldmatrix.x4.trans: unit u = w + p*WARPS is rows 32a.., columns 8cb..8cb+7
        n = tm * tn // 256 // warps
        u = w + warps * np.arange(n, dtype=np.int32)[:, None]
        a, cb = u % (tm // 32), u // (tm // 32)
        rows, cols = 32 * a + _LDSM_ROW32, np.repeat(8 * cb, 32, axis=2)
        phases.append(("ldsm", "ldmatrix.x4.trans", 16, rows, cols, lambda: tuple(f"p{i}" for i in range(n))))
    else:  # READOUT 0: VEC element loads per pass; 1: VEC 4-byte words of G columns per pass
        g = 4 // e if readout == 1 else 1
        npass = tn // (sy * g)
        p = np.repeat(np.arange(0, npass * sy, sy, dtype=np.int32), vec)[:, None]  # (pass p: p * SY)
        v = np.tile(np.arange(vec, dtype=np.int32), npass)[:, None]
        rows, cols = (t % sx) * vec + v, (t // sx + p) * g

        def names() -> tuple[str, ...]:
            return tuple(f"p{i} v{j}" for i in range(npass) for j in range(vec))

        phases.append(("ld4" if readout == 1 else "ld", "load", 4 if readout == 1 else e, rows, cols, names))
    return SmemPattern(phases)


# ---- the spec ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Built:
    """Compiled kernels: ``kernel`` (aligned rows), ``shifted`` (vector path, VEC > 1: any alignment)."""

    kernel: Any
    constants: dict
    dtype: str
    shifted: Any = None


class TransposeCuda(TransposeIO, CudaKernel):
    """The CUDA transpose as the tuner sees it (see the module docstring)."""

    NAME = "transpose"
    DTYPES = ("float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "int8", "uint8")
    SPACE: dict[str, tuple[int, ...]] = {
        "TILE_M": (32, 64, 128),
        "TILE_N": (32, 64, 128, 256),  # 256: 1-byte elements only (a 128 x 256 tile is 16-bit's 128 x 128)
        "THREADS": (128, 256, 512),
        "VEC": (1, 2, 4, 8, 16),
        "PAD": (0, 1, 2, 4, 8, 16),
        "SW_VEC": (1, 2, 4, 8, 16),
        "SW_PER_PHASE": (1, 2, 4, 8, 16),
        "SW_MAX_PHASE": (1, 2, 4, 8, 16, 32),
        "READOUT": (0, 1, 2),
        "SCALAR_EDGE": (0, 1),
        "GROUP": (1, 16, 64),
    }
    DEFAULTS = {  # the unpadded baseline of the study: 32 x 32, 256 threads, the original path
        "TILE_M": 32,
        "TILE_N": 32,
        "THREADS": 256,
        "VEC": 1,
        "PAD": 0,
        "SW_VEC": 1,
        "SW_PER_PHASE": 1,
        "SW_MAX_PHASE": 1,
        "READOUT": 0,
        "SCALAR_EDGE": 1,
        "GROUP": 1,
    }
    LAYOUT_KEYS = ("PAD", "SW_VEC", "SW_PER_PHASE", "SW_MAX_PHASE")  # the rest is the launch configuration
    LAYOUT_READS = ("TILE_M", "TILE_N", *LAYOUT_KEYS)  # what ``layout`` reads: a ranking asks once per tile
    # smem_pattern depends on these alone: candidates differing in PAD / SW_* / SCALAR_EDGE share a pattern
    PATTERN_KEYS = ("TILE_M", "TILE_N", "THREADS", "VEC", "READOUT")
    # cheap necessary conditions of ``legal``, evaluated over the whole space at once (E = element bytes);
    # ``legal`` still decides every survivor
    RESTRICTIONS = (
        "SW_MAX_PHASE > 1 or (SW_VEC == 1 and SW_PER_PHASE == 1)",
        "SW_MAX_PHASE == 1 or (PAD == 0 and VEC <= SW_VEC and SW_VEC * SW_MAX_PHASE <= TILE_N)",
        "VEC * E <= 16 and PAD % VEC == 0 and TILE_M % VEC == 0 and TILE_N % VEC == 0",
        "THREADS % (TILE_N // VEC) == 0 and THREADS % (TILE_M // VEC) == 0",
        "READOUT != 1 or (E <= 2 and VEC * E == 16)",
        "READOUT != 2 or (SCALAR_EDGE == 0 and E == 2 and VEC == 8 and TILE_M % 32 == 0"
        " and TILE_M * TILE_N // 256 % (THREADS // 32) == 0)",
        "GROUP == 1 or SCALAR_EDGE == 0",
        "TILE_N <= 128 or (E == 1 and TILE_M == 128 and READOUT == 1 and THREADS >= 256)",
    )
    SOURCE_FILE = str(_SOURCE)
    KERNEL = "transpose_kernel"
    DYNAMIC_SMEM = True

    # ---- the tuner's side (numpy only) ---------------------------------------------------------------

    def check_shape(self, shape: tuple[int, ...]) -> None:
        """Raise ValueError unless ``shape`` is [M, N] or [B, M, N] of positive sizes within the grid."""
        if len(shape) not in (2, 3) or any(isinstance(d, bool) or int(d) != d for d in shape):
            raise ValueError(
                f"shape: transpose takes [M, N] or [B, M, N] integer sizes, got {tuple(shape)!r}"
            )
        b, m, n = _dims(tuple(int(d) for d in shape))
        if min(b, m, n) < 1:
            raise ValueError(f"shape: every size must be at least 1, got {tuple(shape)!r}")
        if m >= 2**31 or n >= 2**31 or b * m * n >= 2**59:
            raise ValueError(f"shape: {tuple(shape)!r} is too large (sizes below 2**31, 2**59 elements)")

    def layout(self, constants: dict[str, int], dtype: str) -> Padded | Swizzled:
        """The shared tile: Padded when SW_MAX_PHASE == 1, else Swizzled (same formula, see layouts.py)."""
        return _layout(*_lkey(constants, self._e(dtype)))

    def smem_bytes(self, constants: dict[str, int], dtype: str, misaligned: bool = False) -> int:
        """The shared tile's bytes; the misaligned build's also holds VEC halo rows past the tile (output
        rows off the vector grid are written as whole vectors, transpose.cu)."""
        return _smem(_lkey(constants, self._e(dtype)), _halo(constants, misaligned))

    def legal(self, constants: dict[str, int], shape: tuple[int, ...], dtype: str) -> Legality:
        """Can this candidate run? The layout's own check, then the kernel's thread and register arithmetic,
        then the grid for this shape."""
        if dtype not in self.DTYPES:
            return Legality(False, f"dtype {dtype} not supported")
        try:
            key = _key_of(constants)
        except KeyError:
            return Legality(False, f"missing constants {[k for k in self.SPACE if k not in constants]}")
        e = DTYPE_BYTES[dtype]
        ok = _legal_static(key, e)
        if not ok:
            return ok
        group = constants.get("GROUP", 1)
        if group != 1 and (not isinstance(group, (int, np.integer)) or group < 1 or key[_I_SC]):
            return Legality(False, f"GROUP {group}: a block order of >= 1 tile rows, on SCALAR_EDGE 0 only")
        # the shape's part depends on the tile, the path, the read-out and the block order alone
        return _legal_shape(
            key[_I_TM], key[_I_TN], key[_I_VEC], key[_I_SC], key[_I_RO], tuple(shape), e, int(group)
        )

    def legal_batch(self, columns: dict[str, np.ndarray], shape: tuple[int, ...], dtype: str) -> np.ndarray:
        """``legal`` of many candidates at once (``columns``: constant -> int array, a candidate per entry),
        the same answer row for row: each part of ``legal`` (the tile and its layout, the threads, the
        block order, the shape) is asked once per distinct combination of the constants it reads, and
        those answers are cached as ``legal``'s are."""
        n = len(next(iter(columns.values()))) if columns else 0
        ok = np.zeros(n, dtype=bool)
        if dtype not in self.DTYPES or any(k not in columns for k in _KEYS):
            return ok
        e = DTYPE_BYTES[dtype]
        c = {k: np.asarray(columns[k]) for k in _KEYS}
        group = np.asarray(columns["GROUP"]) if "GROUP" in columns else np.ones(n, dtype=np.int64)
        ok[:] = _each(_legal_tile, {k: c[k] for k in _TILE_KEYS}, e)
        ok[ok] = _each(_legal_threads, {k: c[k][ok] for k in _THREAD_KEYS}, e)
        ok &= (group == 1) | ((group >= 1) & (c["SCALAR_EDGE"] == 0))  # legal's GROUP rule
        shape_cols = {k: c[k][ok] for k in ("TILE_M", "TILE_N", "VEC", "SCALAR_EDGE", "READOUT")}
        shape_cols["GROUP"] = group[ok]
        ok[ok] = _each(
            lambda tm, tn, v, sc, ro, g: _legal_shape(tm, tn, v, sc, ro, tuple(shape), e, g), shape_cols
        )
        return ok

    def launch_info_batch(self, columns: dict[str, np.ndarray], shape: tuple[int, ...], dtype: str) -> dict:
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
            self._e(dtype),
            readout,
            np.asarray(c["SW_MAX_PHASE"]) > 1,
        )
        extra = np.zeros(n)
        sel = np.flatnonzero(_gathered(readout, scalar, np.asarray(c["VEC"]), tuple(shape), self._e(dtype)))
        if len(sel):
            cols = [np.asarray(c[k])[sel] for k in _GATHER_KEYS]
            first, at = distinct_combinations(cols, len(sel))
            keys = list(zip(*(col[first].tolist() for col in cols)))
            extra[sel] = np.array(_gather_extra(keys, dtype))[at]
        out["extra_wavefronts"] = extra
        return out

    def smem_pattern(self, constants: dict[str, int], dtype: str, dist: str | None = None) -> SmemPattern:
        """Every shared-memory instruction of one block over one tile, lane = threadIdx.x (block is 1-D).

        Store phase: warp w, pass p: lane writes VEC elements at (ly + p*LY, lx*VEC) in one VEC*elem store.
        Read-out 0: warp w, pass p, element v: lane reads (sx*VEC + v, sy + p*SY), elem bytes. Read-out 1:
        4-byte words at (sx*VEC + v, (sy + p*SY) * G). Read-out 2: one ldmatrix.x4.trans per 32 x 8 block
        (autopad.model's op of that name: lane 8i + j gives the 16-byte row j of matrix i, one phase per
        matrix).
        """
        c = constants
        return _pattern(c["TILE_M"], c["TILE_N"], c["THREADS"], c["VEC"], c.get("READOUT", 0), self._e(dtype))

    def grid(self, constants: dict[str, int], shape: tuple[int, ...], dtype: str = "float32") -> tuple:
        b, m, n = _dims(tuple(shape))
        gx, gy = _cdiv(n, constants["TILE_N"]), _cdiv(m, constants["TILE_M"])
        if not _scalar(constants):
            return (b * gx * gy, 1, 1)
        return (gx, gy, min(b, 65535))

    def block(self, constants: dict[str, int], shape: tuple[int, ...] = (), dtype: str = "float32") -> tuple:
        return (constants["THREADS"],)

    def launch_info(self, constants: dict[str, int], shape: tuple[int, ...], dtype: str) -> dict:
        c, e = constants, self._e(dtype)
        key = (c["THREADS"], c["VEC"], _scalar(c), *_lkey(c, e))
        info = dict(_launch_info(key, tuple(shape), int(c.get("GROUP", 1)), int(c.get("READOUT", 0))))
        info["extra_wavefronts"] = 0.0
        if _gathered(c.get("READOUT", 0), _scalar(c), c["VEC"], tuple(shape), e):
            info["extra_wavefronts"] = _gather_extra([tuple(int(c[k]) for k in _GATHER_KEYS)], dtype)[0]
        return info

    def traffic(self, shape: tuple[int, ...], dtype: str) -> dict:
        b, m, n = _dims(tuple(shape))
        return {"bytes": 2 * b * m * n * self._e(dtype), "flops": 0}

    def textbook(self, shape: tuple[int, ...], dtype: str) -> dict[str, int] | None:
        """The classic 32 x 33 tile: DEFAULTS with one element of padding per row."""
        c = dict(self.DEFAULTS, PAD=1)
        return c if self.legal(c, shape, dtype) else None

    def min_blocks(self, constants: dict[str, int], dtype: str, misaligned: bool = False) -> int:
        """The occupancy the vector path (SCALAR_EDGE 0) is built for (``__launch_bounds__`` min blocks):
        what threads and shared memory allow (the model's assumption), lowered only where the loaded vectors
        plus the measured register overhead would not fit (then registers allow fewer blocks, not spills)."""
        c, e = constants, self._e(dtype)
        fit = min(
            _ARCH.max_threads_per_sm // c["THREADS"],
            _ARCH.smem_per_sm // (self.smem_bytes(c, dtype, misaligned) + 1024),
            _ARCH.max_blocks_per_sm,
        )
        _, ly, lpass = _phases(c)[:3]
        lpass += _hpass(c["VEC"], ly) if _halo(c, misaligned) else 0
        words = lpass * max(1, c["VEC"] * e // 4)  # the loaded vectors, in 4-byte registers
        # misaligned: each pass's addresses and shift; READOUT 1 holds VEC words while permuting
        need = words + lpass * _REG_PER_PASS[int(misaligned)] + _REG_OVERHEAD[int(misaligned)]
        need += c["VEC"] if c.get("READOUT", 0) == 1 else 0
        need = min(255, -(-need // 8) * 8)
        return max(1, min(fit, 65536 // (c["THREADS"] * need)))

    # ---- the measuring side (torch) ------------------------------------------------------------------

    def arguments(self, shape: tuple[int, ...], dtype: str) -> list:
        import torch

        b, m, n = _dims(tuple(shape))
        td = getattr(torch, dtype)
        if dtype in ("int8", "uint8"):
            lo, hi = (-128, 128) if dtype == "int8" else (0, 256)
            x = torch.randint(lo, hi, tuple(shape), dtype=torch.int16).to(td)
        else:
            x = torch.randn(tuple(shape)).clamp(-400, 400).to(td)
        return [Out((*tuple(shape)[:-2], n, m), td), x]

    def defines(self, constants: dict[str, int], dtype: str, misaligned: bool = False) -> dict[str, int]:
        """Every -D the template takes: the layout's own macros plus the tile and thread constants."""
        c = constants
        d = {k: int(c[k]) for k in ("TILE_M", "TILE_N", "THREADS", "VEC", "READOUT")}
        d.update(self.layout(c, dtype).cuda_defines())
        d["ELEM_BYTES"] = self._e(dtype)
        if not _scalar(c):
            d["SCALAR_EDGE"] = 0
            d["MISALIGNED"] = int(misaligned)
            d["MIN_BLOCKS"] = self.min_blocks(c, dtype, misaligned)
        return d

    def build(self, constants: dict[str, int], dtype: str) -> Built:
        from autopad import cuda_runtime

        src = self.source()
        k = cuda_runtime.load_kernel(src, self.KERNEL, self.defines(constants, dtype))
        shifted = None
        if not _scalar(constants) and constants["VEC"] > 1:
            shifted = cuda_runtime.load_kernel(src, self.KERNEL, self.defines(constants, dtype, True))
        return Built(k, dict(constants), dtype, shifted)

    def _plan(self, built: Built, shape: tuple[int, ...]) -> tuple[tuple, tuple, int]:
        """(grid, the int32 arguments after the two pointers, vector bytes); a picked kernel's shared bytes
        are ``_smem_for``'s (the misaligned build holds halo rows too)."""
        c = built.constants
        b, m, n = _dims(tuple(shape))
        i32 = np.int32
        if not _scalar(c):
            extra = (i32(m), i32(n), i32(b), i32(c.get("GROUP", 1)))
        else:
            extra = (i32(m), i32(n), i32(b))
        return self.grid(c, shape), extra, c["VEC"] * self._e(built.dtype)

    def _smem_for(self, built: Built, kernel: Any) -> int:
        """Dynamic shared bytes for this build of the candidate (the misaligned one holds the halo)."""
        return self.smem_bytes(built.constants, built.dtype, kernel is built.shifted)

    def _pick(self, built: Built, x: Any, out: Any, m: int, n: int, vb: int) -> tuple[Any, tuple]:
        """The kernel for these pointers, and the scalar path's trailing ``aligned`` flag."""
        ok = m % built.constants["VEC"] == 0 and n % built.constants["VEC"] == 0
        ok = ok and x.data_ptr() % vb == 0 and out.data_ptr() % vb == 0
        if _scalar(built.constants):
            return built.kernel, (np.int32(ok),)
        return (built.kernel if ok or built.shifted is None else built.shifted), ()

    def run(self, built: Built, inputs: Any, out: Any) -> None:
        from autopad import cuda_runtime

        x = _x(inputs)
        x = x if x.is_contiguous() else x.contiguous()
        b, m, n = _dims(tuple(x.shape))
        grid, extra, vb = self._plan(built, (b, m, n))
        kernel, flag = self._pick(built, x, out, m, n, vb)
        smem = self._smem_for(built, kernel)
        cuda_runtime.launch(kernel, grid, built.constants["THREADS"], (out, x, *extra, *flag), smem)

    def launcher(self, built: Built, shape: tuple[int, ...], dtype: str) -> Any:
        """A call that only picks the build for the pointers' alignment and launches: grid, shared memory
        and the scalar arguments are fixed here (``cuda_runtime.prepare_launch`` where it exists)."""
        from autopad import cuda_runtime

        b, m, n = _dims(tuple(shape))
        grid, extra, vb = self._plan(built, (b, m, n))
        threads = built.constants["THREADS"]
        prepare = getattr(cuda_runtime, "prepare_launch", None)

        def fire_for(kernel: Any) -> Any:
            nbytes = self._smem_for(built, kernel)
            if prepare is not None:
                return prepare(kernel, grid, threads, nbytes)
            return lambda *args: cuda_runtime.launch(kernel, grid, threads, args, nbytes)

        fires = {id(k): fire_for(k) for k in (built.kernel, built.shifted) if k is not None}

        def go(inputs: Any, out: Any) -> None:
            x = inputs[-1]
            kernel, flag = self._pick(built, x, out, m, n, vb)
            fires[id(kernel)](out, x, *extra, *flag)

        return go


def _gathered(readout: Any, scalar: Any, vec: Any, shape: tuple[int, ...], e: int) -> Any:
    """Is the read-out READOUT 1's pattern but the kernel's the shifted gather (``_GATHER_EXTRA``)? 2-byte
    elements on the vector path whose output rows are off the vector grid (M % VEC != 0; an output pointer
    off the grid does the same, which a shape cannot say)."""
    off_grid = _dims(shape)[1] % np.asarray(vec) != 0
    return (np.asarray(readout) == 1) & ~np.asarray(scalar, dtype=bool) & off_grid & (e == 2)


def _gather_extra(keys: list[tuple[int, ...]], dtype: str) -> list[float]:
    """``extra_wavefronts`` of READOUT 1 candidates read out by the shifted gather, one per key (constants in
    ``_GATHER_KEYS`` order): the wavefronts a block's READOUT 0 read-out costs under the same layout, minus
    those of READOUT 1's pattern. Both are units a ranking has already scored (READOUT 0 is legal wherever
    READOUT 1 is), so ``score_candidates`` finds them in its cache; kept here per dtype as well."""
    todo = [k for k in dict.fromkeys(keys) if (dtype, k) not in _GATHER_EXTRA]
    if todo:
        from autopad.score import score_candidates

        e, consts, lays = DTYPE_BYTES[dtype], [], []
        for k in todo:
            c = dict(zip(_GATHER_KEYS, k))
            lay = _layout(*_lkey(c, e))
            consts += [dict(c, READOUT=1), dict(c, READOUT=0)]
            lays += [lay, lay]
        wave = score_candidates(_scored(), consts, lays, dtype, None, _ARCH)[0].reshape(-1, 2)
        # each 4-byte word load of READOUT 1 covers two columns' elements that the gather loads one by one:
        # the gather never takes fewer wavefronts (asserted over the fp16 space in the tests)
        for k, (own, gather) in zip(todo, wave.tolist()):
            _GATHER_EXTRA[(dtype, k)] = float(max(0, gather - own))
    return [_GATHER_EXTRA[(dtype, k)] for k in keys]


@lru_cache(maxsize=1)
def _scored() -> KernelSpec:
    """The spec as a ranking holds it (``KernelSpec`` of this module, as the registry loads it):
    ``_gather_extra`` scores under its identity, so the units the ranking scored are found in
    ``autopad.score``'s cache."""
    return KernelSpec(sys.modules[__name__])


def _hpass(vec: Any, ly: Any) -> Any:
    """Load passes of the halo rows: ceil(VEC / LY) (transpose.cu's HPASS; one in the tuned space)."""
    return -(-vec // ly)


def _halo(c: dict[str, int], misaligned: bool) -> int:
    """Halo rows of the misaligned build (transpose.cu's HALO): VEC on the vector path, but for ldmatrix's."""
    return int(c["VEC"]) if misaligned and not _scalar(c) and c["VEC"] > 1 and c.get("READOUT", 0) != 2 else 0


@lru_cache(maxsize=1 << 12)
def _smem(lkey: tuple[int, ...], halo: int) -> int:
    """Bytes of the tile of ``_lkey`` plus ``halo`` rows of its row stride."""
    lay = _layout(*lkey)
    return int(lay.footprint) + halo * int(lay.footprint) // lkey[0]


@lru_cache(maxsize=1 << 17)
def _legal_static(key: tuple[int, ...], e: int) -> Legality:
    """The shape-independent part of ``legal`` for constants in ``_KEYS`` order (cached: the tuner asks it
    for every shape): the tile and its layout, then the threads."""
    c = dict(zip(_KEYS, key))
    ok = _legal_tile(*(c[k] for k in _TILE_KEYS), e)
    return ok if not ok else _legal_threads(*(c[k] for k in _THREAD_KEYS), e)


@lru_cache(maxsize=1 << 15)
def _legal_tile(tm: int, tn: int, vec: int, pad: int, sv: int, pp: int, mp: int, e: int) -> Legality:
    """The tile and its layout: the swizzle's spelling, padding or swizzle, the vector width, the layout's
    own check (vector alignment, the shared-memory budget)."""
    if mp == 1 and (sv, pp) != (1, 1):
        return Legality(False, "no swizzle (SW_MAX_PHASE = 1) is spelt SW_VEC = SW_PER_PHASE = 1")
    if mp > 1 and pad:
        return Legality(False, "padding and swizzle are exclusive")
    if vec * e > 16:
        return Legality(False, f"VEC {vec} x {e} bytes exceeds a 16-byte access")
    if tn > 128 and (e != 1 or tm != 128):
        # 256-element tile rows are for 1-byte elements: 256 bytes, the row a 16-bit 128-column tile has
        # (H200 run 19: int8 / fp8 16384^2 at 0.91 / 0.92 of copy against 0.88 / 0.90 with 128 x 128), and
        # only in the 128 x 256 tile that was measured
        return Legality(False, f"TILE_N {tn} is for 1-byte elements in 128-row tiles (up to 128 otherwise)")
    try:
        lay = _layout(tm, tn, e, pad, sv, pp, mp)
    except ValueError as exc:
        return Legality(False, str(exc))
    ok = lay.check(vec, _ARCH.smem_per_block)
    if not ok:
        return ok
    if vec > 1 and _smem((tm, tn, e, pad, sv, pp, mp), vec) > _ARCH.smem_per_block:
        return Legality(False, f"the tile and its {vec} halo rows (misaligned rows) exceed the shared budget")
    if tm % vec:
        return Legality(False, f"TILE_M {tm} is not a whole number of {vec}-element vectors")
    return _LEGAL


@lru_cache(maxsize=1 << 15)
def _legal_threads(tm: int, tn: int, t: int, vec: int, readout: int, scalar: int, e: int) -> Legality:
    """The kernel's thread and register arithmetic, for a tile ``_legal_tile`` accepts (whole vectors)."""
    c = {"TILE_M": tm, "TILE_N": tn, "THREADS": t, "VEC": vec}
    if t % 32 or t > 1024:
        return Legality(False, f"{t} threads is not a whole number of warps up to 1024")
    if tn // vec > t or tm // vec > t:  # a tile row (or column) of more vectors than threads
        return Legality(False, f"{t} threads cannot sweep a {tm} x {tn} tile in vectors of {vec}")
    if tn > 128 and (readout != 1 or t < 256):  # the measured 128 x 256 tile: register read-out, 256+ threads
        return Legality(False, f"TILE_N {tn}: the register read-out (READOUT 1) with 256 or 512 threads only")
    lx, ly, lpass, sx, sy, spass = _phases(c)
    if t % lx or ly == 0 or tm % ly:
        return Legality(False, f"{t} threads cannot sweep {tm} rows in rows of {lx} vectors")
    if t % sx or sy == 0 or tn % sy:
        return Legality(False, f"{t} threads cannot sweep {tn} columns in groups of {sx} vectors")
    if scalar not in (0, 1):
        return Legality(False, f"SCALAR_EDGE {scalar} is not 0 (vector edges, shifted rows) or 1 (scalar)")
    if readout not in (0, 1, 2):
        return Legality(False, f"READOUT {readout} is not 0 (gather), 1 (register transpose), 2 (ldmatrix)")
    if readout == 1:
        if e > 2 or vec * e != 16:
            return Legality(False, "the register read-out needs 1- or 2-byte elements in 16-byte vectors")
        if tn % (sy * (4 // e)):
            return Legality(False, f"{tn} columns: not whole {sy * 4 // e}-row passes")
    if readout == 2:
        if scalar or e != 2 or vec != 8:
            return Legality(
                False, "the ldmatrix read-out needs SCALAR_EDGE 0 and 2-byte elements in 16-byte vectors"
            )
        if tm % 32 or (tm * tn // 256) % (t // 32):
            return Legality(False, f"{tm} x {tn}: not whole 32 x 8 blocks per warp")
    if lpass * vec * e > 4 * MAX_VEC_REGS:
        return Legality(False, f"{lpass} passes of {vec * e} bytes exceed {MAX_VEC_REGS} registers")
    return _LEGAL


def _each(fn: Any, cols: dict[str, np.ndarray], *extra: Any) -> np.ndarray:
    """``bool(fn(*row, *extra))`` for every row of ``cols`` (values in the dict's order), called once per
    distinct row (its values as Python ints, as ``legal`` passes them)."""
    n = len(next(iter(cols.values()))) if cols else 0
    first, at = distinct_combinations(list(cols.values()), n)
    rows = zip(*(np.asarray(c)[first].tolist() for c in cols.values()))
    return np.array([bool(fn(*r, *extra)) for r in rows], dtype=bool)[at]


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
    global side's efficiency, the misaligned build's extra instructions (``issue_cycles``) and, on the
    original path, its compiled registers and its phases in turn (``serial_phases``)."""
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
    # the block order on the vector path: measured, not modelled (GROUP_GAIN). The original path is left
    # as the study ranked it (its 2-D grid walks GROUP 1's order, but its candidates keep their predictions)
    gains = GROUP_GAIN[(m * e) % 16 == 0 and (n * e) % 16 == 0]
    gain = np.ones(len(group))
    for g, v in gains.items():
        gain[group == g] = v
    eff = np.where(scalar, eff, eff * (gain / max(gains.values())))
    # the misaligned build's extra instructions, in SM cycles per block: passes of the load loop (the halo's
    # ceil(VEC / LY) more where output rows are shifted too, M % VEC != 0; READOUT 2 is not legal there)
    # times instructions a pass, each warp's at the integer rate. H200 run 46, fp16 4097 x 8191, GROUP 64:
    # the best 4-byte-vector layout of a tile and thread count measured a median 1.54x the best 16-byte one
    # (23 configurations; 8-byte: 1.10x), where the DRAM-bound model said 1.00 (1.02); with this term 1.35
    halo = m % vec != 0
    passes = lpass + np.where(halo, _hpass(vec, ly), 0)
    words = np.maximum(1, vec * e // 4)
    per_thread = passes * (_MIS_PASS_INSTR + _MIS_WORD_INSTR * words)
    shifted = ~scalar & misaligned & (vec > 1)
    issue = np.where(shifted, threads // 32 * per_thread / _INT_WARP_INSTR_PER_CLK, 0.0)
    return {
        "blocks": np.where(scalar, gx * gy * min(b, 65535), b * gx * gy),
        "threads": threads,
        "smem_bytes": tm * (tn + pad) * e,  # the layout's footprint (layouts.py: rows x row stride)
        "tiles_per_block": np.where(scalar, _cdiv(b, min(b, 65535)), 1),
        # the load loop issues all its passes before the first use: bytes each thread has in flight
        "inflight_bytes": lpass * vec * e,
        "dram_efficiency": eff,
        "issue_cycles": issue,
        "regs_per_thread": np.where(scalar, _regs_original(e, tm, tn, threads, vec, readout, swizzled), 0.0),
        "serial_phases": scalar.astype(np.float64),
    }


def _regs_original(e: int, *cols: np.ndarray) -> np.ndarray:
    """``REGS_ORIGINAL_SM90`` of each candidate (TILE_M, TILE_N, THREADS, VEC, READOUT, swizzled as
    arrays), 0 (no register limit stated) for a tile the table does not hold."""
    full = [np.broadcast_to(np.asarray(c, dtype=np.int64), np.broadcast(*cols).shape) for c in cols]
    first, at = distinct_combinations(full, len(full[0]))
    get = REGS_ORIGINAL_SM90.get
    return np.array([get((e, *k), 0) for k in zip(*(c[first].tolist() for c in full))], dtype=np.float64)[at]


@lru_cache(maxsize=1 << 14)
def _legal_shape(
    tm: int, tn: int, vec: int, scalar: int, readout: int, shape: tuple, e: int, group: int = 1
) -> Legality:
    try:
        b, m, n = _dims(shape)
    except ValueError as exc:
        return Legality(False, str(exc))
    if min(b, m, n) < 1:
        return Legality(False, f"empty shape {shape}")
    if b * m * n >= 2**62 // e:
        return Legality(False, "tensor too large")
    if scalar:
        if _cdiv(m, tm) > 65535:
            return Legality(False, f"{m} rows need more than 65535 tiles of {tm} in grid.y")
    elif b * _cdiv(m, tm) * _cdiv(n, tn) >= 2**31:
        return Legality(False, "more than 2**31 - 1 tiles in the 1-D grid")
    if readout == 2 and m % vec:
        return Legality(False, f"ldmatrix read-out needs output rows of whole vectors ({m} % {vec})")
    # a band of `group` tile rows walked column by column: with no more tile rows than the next smaller
    # value of SPACE's GROUP, the order is that value's (the same kernel, measured twice)
    gy, smaller = _cdiv(m, tm), [g for g in _GROUPS if g < group]
    if group > 1 and smaller and gy <= smaller[-1]:
        return Legality(False, f"GROUP {group} on {gy} tile rows walks the order of GROUP {smaller[-1]}")
    return _LEGAL


def _scalar(c: dict[str, int]) -> bool:
    """Does the candidate take the original guarded scalar path (SCALAR_EDGE 1, the default when absent)?"""
    return bool(c.get("SCALAR_EDGE", 1))


# tile shapes whose swizzled read-out the model scores best at 256 threads (searched over 32/64/128 tiles,
# per_phase 1..16, max_phase 2..32 with 16-byte vectors; see tests/test_cuda_transpose.py)
_BEST_TILE = {8: (64, 128), 4: (32, 128), 2: (64, 128), 1: (128, 128)}


def presets(dtype: str) -> dict[str, dict[str, int]]:
    """Named candidates: the baselines and 16-byte-vector tiles, swizzled and not (for the tuner's shortlist
    and the benchmark), on the original path (SCALAR_EDGE 1). The swizzle permutes VEC-element chunks by the
    row's VEC-row group: the column walk's lanes (rows sx*VEC + v) then land in distinct chunks, so in
    distinct banks."""
    if dtype not in SPEC.DTYPES:
        raise ValueError(f"transpose: dtype {dtype!r} is not one of {SPEC.DTYPES}")
    e = DTYPE_BYTES[dtype]
    vec = 16 // e
    tm, tn = _BEST_TILE[e]
    sw = {"SW_VEC": vec, "SW_PER_PHASE": vec, "SW_MAX_PHASE": 8}
    d = SPEC.DEFAULTS
    base = dict(d, THREADS=256, VEC=vec)
    out = {
        "unpadded": dict(d),
        "textbook": dict(d, PAD=1),
        "vec_unpadded": dict(base, TILE_M=tm, TILE_N=tn),
        "vec_swizzled": dict(base, TILE_M=tm, TILE_N=tn, **sw),
        "vec64_unpadded": dict(base, TILE_M=64, TILE_N=64),
        "vec64_swizzled": dict(base, TILE_M=64, TILE_N=64, **sw),
        "vec64_padded": dict(base, TILE_M=64, TILE_N=64, PAD=vec),
    }
    if e <= 2:  # word loads + register transpose of the read-out
        out["rt_unpadded"] = dict(base, TILE_M=tm, TILE_N=tn, READOUT=1)
        out["rt_swizzled"] = dict(base, TILE_M=tm, TILE_N=tn, READOUT=1, **sw)
    if e == 1:  # 256-byte tile rows, as 16-bit's 128 x 128, with 16 swizzle phases (16 row groups of 16)
        wide = {"SW_VEC": 16, "SW_PER_PHASE": 16, "SW_MAX_PHASE": 16}
        out["rt_wide"] = dict(base, TILE_M=128, TILE_N=256, THREADS=512, READOUT=1, **wide)
    return {k: v for k, v in out.items() if SPEC.legal(v, (4096, 4096), dtype)}


_KEYS = tuple(k for k in TransposeCuda.SPACE if k != "GROUP")  # GROUP is optional (1 when absent)
# what ``_gather_extra`` reads: the pattern's constants but READOUT, and the layout's
_GATHER_KEYS = ("TILE_M", "TILE_N", "THREADS", "VEC", "PAD", "SW_VEC", "SW_PER_PHASE", "SW_MAX_PHASE")
_TILE_KEYS = ("TILE_M", "TILE_N", "VEC", "PAD", "SW_VEC", "SW_PER_PHASE", "SW_MAX_PHASE")  # _legal_tile's
_THREAD_KEYS = ("TILE_M", "TILE_N", "THREADS", "VEC", "READOUT", "SCALAR_EDGE")  # _legal_threads'
_GROUPS = TransposeCuda.SPACE["GROUP"]
_key_of = itemgetter(*_KEYS)  # a candidate's constants in _KEYS order (a KeyError names a missing one)
_I_TM, _I_TN, _I_VEC, _I_SC, _I_RO = (
    _KEYS.index(k) for k in ("TILE_M", "TILE_N", "VEC", "SCALAR_EDGE", "READOUT")
)

# the module is the spec the registry loads (autopad.kernels_registry.BUILTIN): expose SPEC's names
SPEC = TransposeCuda()
NAME, BACKEND, DTYPES, SPACE = SPEC.NAME, SPEC.BACKEND, SPEC.DTYPES, SPEC.SPACE
DEFAULTS, LAYOUT_KEYS, PATTERN_KEYS, RESTRICTIONS = (
    SPEC.DEFAULTS,
    SPEC.LAYOUT_KEYS,
    SPEC.PATTERN_KEYS,
    SPEC.RESTRICTIONS,
)
LAYOUT_READS = SPEC.LAYOUT_READS
SOURCE_FILES = (str(_SOURCE), str(_SOURCE.with_name("common.cuh")), __file__)  # + this module: macros, grid
legal, layout, smem_pattern, launch_info, traffic = (
    SPEC.legal,
    SPEC.layout,
    SPEC.smem_pattern,
    SPEC.launch_info,
    SPEC.traffic,
)
legal_batch, launch_info_batch = SPEC.legal_batch, SPEC.launch_info_batch
textbook, check_shape, inputs_from, launcher, grid = (
    SPEC.textbook,
    SPEC.check_shape,
    SPEC.inputs_from,
    SPEC.launcher,
    SPEC.grid,
)
make_inputs, alloc_output, expected, check = SPEC.make_inputs, SPEC.alloc_output, SPEC.expected, SPEC.check
build, run, defines, source, min_blocks = SPEC.build, SPEC.run, SPEC.defines, SPEC.source, SPEC.min_blocks


def reference(inputs: Any) -> Any:
    """torch's answer from an inputs tuple or the tensor (the module-level form older scripts call)."""
    return SPEC.reference(inputs)


__all__ = ["TransposeCuda", "SPEC", "Built", "SmemPattern", "presets", "DTYPE_BYTES", "NARROW_ACCESS_COST"]
