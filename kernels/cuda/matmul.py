"""CUDA fp32 SIMT GEMM kernel spec: C = A @ B, row-major, any M, N, K (matmul.cu), on autopad.CudaKernel.

The layout decision is two tiles: As (BK x BM, A staged transposed, written one word at a time down a
column: the access padding or a swizzle must fix) and Bs (BK x BN, written and read in 16-byte vectors).
``layout`` returns both as one ``OperandTiles`` object whose logical rows 0..BK-1 are As and BK..2BK-1
are Bs, so the model scores the whole k-step with one call; ``smem_pattern`` lists the instructions one
block issues per k-step (one "tile" = one BK slice), taken from the same index arithmetic as the kernel
and built for all warps, loads and k at once (numpy).

Two constants beyond the tile and the layouts:

* ``THREAD_MAP`` (0, 1) places a warp's lanes on the thread tile: 0 row-major (today's kernel); 1 pairs
  lanes so that every 16-byte fragment load of A and of B merges into two 16-lane phases (the model sees
  2 wavefronts per B fragment instead of 4: a third fewer per k-step at 128x128 tiles).
* ``SPLIT_K`` (1, 2, 4) splits K over ``gridDim.z`` when the output tiles cannot fill the SMs (decode-like
  M = 128: 64 tiles of 128x128 on 132 SMs); partial tiles go to an fp32 workspace that a second kernel
  sums. ``legal`` keeps it to those shapes; the model is charged the workspace's bytes.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from autopad.access import Instruction
from autopad.arch import get_arch
from autopad.bases import CudaKernel, Inputs, Out
from autopad.layouts import Legality, Padded, Swizzled
from autopad.spec import batched_info, per_distinct

_ARCH = get_arch("sm_90")
_SOURCE = Path(__file__).with_name("matmul.cu")

# Registers per thread the kernel takes when its launch bounds leave them free (MIN_BLOCKS = 1), by
# (BM, BN, BK, TM, TN): every legal tile of SPACE, read with ``cuobjdump --dump-resource-usage`` from the
# sm_90 cubins nvrtc 13.0 builds of the unpadded layout (the same counts on the H200 machine and here;
# tests/test_cuda_matmul.py compiles every tile and compares). The layouts move them (64x64x16 8x8 takes 193
# unpadded and 225 with A swizzled; nvcc: 167 and 205-215): a swizzle's registers are REGS_SWIZZLE_SM90's,
# below. A tile not listed takes ``_regs_estimate``.
REGS_SM90: dict[tuple[int, int, int, int, int], int] = {
    (64, 64, 8, 4, 8): 107, (64, 64, 8, 8, 4): 95, (64, 64, 8, 8, 8): 155,
    (64, 64, 16, 4, 4): 77, (64, 64, 16, 4, 8): 139, (64, 64, 16, 8, 4): 109, (64, 64, 16, 8, 8): 193,
    (64, 128, 8, 8, 8): 161, (64, 128, 16, 4, 8): 95, (64, 128, 16, 8, 4): 105, (64, 128, 16, 8, 8): 163,
    (128, 64, 8, 8, 8): 155, (128, 64, 16, 4, 8): 123, (128, 64, 16, 8, 4): 103, (128, 64, 16, 8, 8): 181,
    (128, 128, 8, 8, 8): 127, (128, 128, 16, 4, 8): 95, (128, 128, 16, 8, 4): 95, (128, 128, 16, 8, 8): 153,
}  # fmt: skip
# Registers a swizzle adds to the tile's need (REGS_SM90), by tile: (A swizzled, B swizzled), each the
# median over the 9 swizzles of that operand (SW_VEC 4, SW_PER_PHASE 1/2/4, SW_MAX_PHASE 2/4/8) with the
# other operand unpadded, read like REGS_SM90 (nvrtc 13.0, sm_90, no register cap, THREAD_MAP 0) from today's
# matmul.cu, the warp barrier's: five tiles moved by 2-4 from the source of runs 1-2, and 128x64x8 8x8 from
# (16, 4) to (12, 0), which matters: A-swizzled at 167 registers it holds 3 blocks of 128 threads an SM, at
# 171 only 2. A pad adds ~none (every pad compiles to the unpadded count but 128x128x16 8x8's, 151 of 153,
# and 64x64x8 4x8's, 109 of 107): a padded offset is row x (BM + PAD) + col, constants the unrolled k loop
# folds into each access, while the XOR term differs per row and per thread. With both operands swizzled
# the compiler lands near the larger of the two additions, not their sum (108 pairs sampled on the 128x128
# tiles, the older source; 128x128x8 8x8: 143-165 registers against 147-157 for the larger single swizzle
# and 167-185 for the sum), so ``register_need`` takes the larger.
REGS_SWIZZLE_SM90: dict[tuple[int, int, int, int, int], tuple[int, int]] = {
    (64, 64, 8, 4, 8): (6, 0), (64, 64, 8, 8, 4): (10, 0), (64, 64, 8, 8, 8): (7, 2),
    (64, 64, 16, 4, 4): (3, 2), (64, 64, 16, 4, 8): (8, 0), (64, 64, 16, 8, 4): (44, 6),
    (64, 64, 16, 8, 8): (26, 4), (64, 128, 8, 8, 8): (2, 2), (64, 128, 16, 4, 8): (10, 22),
    (64, 128, 16, 8, 4): (8, 4), (64, 128, 16, 8, 8): (38, 20), (128, 64, 8, 8, 8): (12, 0),
    (128, 64, 16, 4, 8): (12, -2), (128, 64, 16, 8, 4): (12, 0), (128, 64, 16, 8, 8): (22, -13),
    (128, 128, 8, 8, 8): (28, 20), (128, 128, 16, 4, 8): (0, 14), (128, 128, 16, 8, 4): (10, 1),
    (128, 128, 16, 8, 8): (28, 14),
}  # fmt: skip
# What a register cap costs the inner loop: MIN_BLOCKS = 2 makes ``__launch_bounds__`` cap the registers at
# 65536 / (2 x threads); below what the tile needs (need / cap = 1 + x), the compiler spills and re-computes,
# and the arithmetic runs at 1 / (1 + REG_CAP_COST x) of its rate. Fitted on H200 run 2 (1024^3 and
# 1536x1000x2000), where both twins of a capped tile run one block per SM and differ in the cap alone: the
# best MIN_BLOCKS 2 over the best MIN_BLOCKS 1 of the three capped 128x128 tiles measured 1.07-1.38
# (0.38-0.77 per unit of x, median 0.50 with REGS_SM90 as read today; 0.48 before the warp barrier moved
# 128x128x16 8x8 from 155 to 153). Run 2 timed the older source's builds; x is taken from today's register
# counts on purpose, since the constant is applied to today's builds. Run 1 (2048^3) and run 20's shapes
# are held out.
REG_CAP_COST = 0.50
REGS_PER_SM = _ARCH.regs_per_sm  # the register file that __launch_bounds__ divides


def _regs_estimate(bm: int, bn: int, bk: int, tm: int, tn: int) -> int:
    """Registers a tile needs without a cap: ``REGS_SM90``, else a least-squares fit to it (accumulators,
    fragments, the prefetched vectors of the next k-step, ~30 for addresses and loop state)."""
    got = REGS_SM90.get((bm, bn, bk, tm, tn))
    if got is not None:
        return got
    t = (bn // tn) * (bm // tm)
    vectors = (bm * bk // 4 + bn * bk // 4) // max(t, 1)
    return round(30 + tm * tn + 1.5 * (tm + tn) + 2.4 * 4 * vectors)


def register_need(c: Any) -> Any:
    """Registers a candidate's thread needs without a cap, its layout included: the tile's
    (``_regs_estimate``) plus what a swizzle adds (``REGS_SWIZZLE_SM90``; the larger operand's where both
    are swizzled; a tile not listed adds none). Scalars (a candidate's dict) or int arrays (columns)."""
    keys = ("BM", "BN", "BK", "TM", "TN")
    if np.ndim(c["BM"]) == 0:
        t = tuple(int(c[k]) for k in keys)
        da, db = REGS_SWIZZLE_SM90.get(t, (0, 0))
        return _regs_estimate(*t) + max(0, da * (c["SW_MAX_PHASE_A"] > 1), db * (c["SW_MAX_PHASE_B"] > 1))
    cols = {k: np.asarray(c[k], dtype=np.int64) for k in (*keys, "SW_MAX_PHASE_A", "SW_MAX_PHASE_B")}
    rows, at = per_distinct(cols, keys)
    base = np.array([_regs_estimate(*(r[k] for k in keys)) for r in rows], dtype=np.int64)[at]
    extra = np.array([REGS_SWIZZLE_SM90.get(tuple(r[k] for k in keys), (0, 0)) for r in rows])
    extra = extra.reshape(-1, 2)[at]
    sw_a, sw_b = cols["SW_MAX_PHASE_A"] > 1, cols["SW_MAX_PHASE_B"] > 1
    return base + np.maximum(0, np.maximum(extra[:, 0] * sw_a, extra[:, 1] * sw_b))


def register_cap(c: dict[str, int]) -> int:
    """The registers per thread ``__launch_bounds__(THREADS, MIN_BLOCKS)`` allows (8s, <= 255)."""
    return min(255, REGS_PER_SM // (c.get("MIN_BLOCKS", 1) * _threads(c)[2]) // 8 * 8)


def flops_efficiency(c: dict[str, int]) -> float:
    """The share of the fp32 rate the inner loop keeps under its register cap (1 where the tile and its
    layout fit: ``register_need``)."""
    over = register_need(c) / register_cap(c) - 1.0
    return 1.0 / (1.0 + REG_CAP_COST * over) if over > 0 else 1.0


@functools.lru_cache(maxsize=4096)
def _make_tile(rows: int, cols: int, pad: int, vec: int, per_phase: int, max_phase: int) -> Padded | Swizzled:
    if max_phase == 1:
        return Padded(rows, cols, 4, pad=pad)
    return Swizzled(rows, cols, 4, sw_vec=vec, per_phase=per_phase, max_phase=max_phase)


def _tile(rows: int, cols: int, c: dict[str, int], x: str) -> Padded | Swizzled:
    """As or Bs (x = "A" / "B"); a layout is built once per parameter set (the search asks thousands of
    times for the same few dozen)."""
    return _make_tile(
        rows, cols, c[f"PAD_{x}"], c[f"SW_VEC_{x}"], c[f"SW_PER_PHASE_{x}"], c[f"SW_MAX_PHASE_{x}"]
    )


def _round128(nbytes: int) -> int:
    return -(-nbytes // 128) * 128


def _col_period(t: Padded | Swizzled) -> int:
    """Columns after which a tile's offsets repeat up to a uniform shift: 1 padded, vec x phases swizzled."""
    return t.sw_vec * t.max_phase if t.max_phase > 1 else 1


@dataclass(frozen=True)
class OperandTiles:
    """As (logical rows 0..BK-1) and Bs (rows BK..2BK-1) of one buffer; Bs starts 128-byte aligned after As.

    Both buffers of the double buffer start on 128-byte boundaries, so they map to the same banks and
    scoring one buffer scores both. ``footprint`` counts both buffers. ``row_period`` tells the search
    which instructions cost the same: shifting an instruction's columns by a multiple of both tiles'
    column periods moves every lane by the same number of 4-byte words (no change to any conflict);
    rows are never shifted (that could carry a B instruction into A's rows).
    """

    a: Padded | Swizzled
    b: Padded | Swizzled

    @property
    def a_bytes(self) -> int:
        return _round128(self.a.footprint)

    @property
    def footprint(self) -> int:
        return 2 * (self.a_bytes + _round128(self.b.footprint))

    @property
    def row_period(self) -> tuple[int, int]:
        return 1 << 40, math.lcm(_col_period(self.a), _col_period(self.b))

    @property
    def tile_parts(self) -> tuple[tuple[int, Padded | Swizzled, int], ...]:
        """(first row, tile, byte base) of As and Bs: what ``offsets`` computes, for autopad.score to compute
        with the tile formula for many layouts at once (instead of each layout's table)."""
        return ((0, self.a, 0), (self.a.rows, self.b, self.a_bytes))

    @functools.cached_property
    def _table(self) -> np.ndarray:
        """Byte offset of every (row, col) of the k-step: As's rows, then Bs's past A's footprint."""
        k, w = self.a.rows, max(self.a.cols, self.b.cols)
        t = np.zeros((2 * k, w), dtype=np.int64)
        r, c = np.mgrid[0:k, 0 : self.a.cols]
        t[:k, : self.a.cols] = self.a.offsets(r, c)
        r, c = np.mgrid[0:k, 0 : self.b.cols]
        t[k:, : self.b.cols] = self.b.offsets(r, c) + self.a_bytes
        return t

    def offsets(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Byte offsets (autopad.layouts' formula for each tile, looked up from a table built once); -1 for
        inactive lanes."""
        r = np.asarray(rows, dtype=np.int64)
        c = np.asarray(cols, dtype=np.int64)
        return np.where(r < 0, -1, self._table[np.maximum(r, 0), c])

    def check(self, vec: int = 4, budget: int | None = None) -> Legality:
        for t in (self.a, self.b):
            ok = t.check(vec, budget)
            if not ok:
                return ok
        if budget is not None and self.footprint > budget:
            return Legality(False, f"double-buffered tiles need {self.footprint} bytes > {budget}")
        return Legality(True)

    def cuda_defines(self) -> dict[str, int]:
        d = {f"{k}_A": v for k, v in self.a.cuda_defines().items()}
        d.update({f"{k}_B": v for k, v in self.b.cuda_defines().items()})
        return d

    def describe(self) -> str:
        return f"A: {self.a.describe()}, B: {self.b.describe()}"


@functools.lru_cache(maxsize=65536)
def _operands(a: Padded | Swizzled, b: Padded | Swizzled) -> OperandTiles:
    return OperandTiles(a, b)


@functools.lru_cache(maxsize=65536)
def _check_tiles(lay: OperandTiles) -> Legality:
    return lay.check(4, _ARCH.smem_per_block)


def _threads(c: dict[str, int]) -> tuple[int, int, int]:
    tx, ty = c["BN"] // c["TN"], c["BM"] // c["TM"]
    return tx, ty, tx * ty


def thread_xy(c: dict[str, int], tid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(tx, ty) of thread ``tid``: the kernel's THREAD_MAP arithmetic, in numpy."""
    tx_n, ty_n, _ = _threads(c)
    if c.get("THREAD_MAP", 0) == 0:
        return tid % tx_n, tid // tx_n
    wx = min(tx_n, 16)
    wy = 32 // wx
    lane, warp = tid & 31, tid >> 5
    lg = wx.bit_length() - 1
    tx = (warp % (tx_n // wx)) * wx + ((lane >> 1) & (wx - 1))
    ty = (warp // (tx_n // wx)) * wy + ((lane & 1) | ((lane >> (1 + lg)) << 1))
    return tx, ty


def swizzle_accesses(c: Any) -> Any:
    """Warp instructions per block per k-step that compute a swizzled shared address: As's 4 single-word
    stores per A vector and TM/4 fragment loads per k where A is swizzled, Bs's vector stores and TN/4
    fragment loads per k where B is (``smem_pattern``'s instructions). The XOR is a thread's arithmetic,
    once per instruction: a 16-byte fragment load spans 4 phases but computes one address, so the
    predictor's per-phase charge over-counted a swizzle 2.6x on this kernel (its ``swizzle_accesses``).
    Scalars (a candidate's dict) or int arrays (columns of candidates)."""
    t = (c["BN"] // c["TN"]) * (c["BM"] // c["TM"])
    warps, bk = t // 32, c["BK"]
    a = warps * (4 * (c["BM"] * bk // 4 // t) + bk * (c["TM"] // 4))
    b = warps * ((c["BN"] * bk // 4) // t + bk * (c["TN"] // 4))
    return a * (c["SW_MAX_PHASE_A"] > 1) + b * (c["SW_MAX_PHASE_B"] > 1)


def k_per_split(c: dict[str, int], k: int) -> int:
    """K per ``blockIdx.z``: a whole number of BK steps."""
    per = math.ceil(k / c.get("SPLIT_K", 1))
    return math.ceil(per / c["BK"]) * c["BK"]


class MatmulCuda(CudaKernel):
    """The spec (autopad.bases.CudaKernel): space, the one validity predicate, layout, pattern, launch."""

    NAME = "matmul"
    DTYPES = ("float32",)
    SHAPE = ("M", "N", "K")
    SOURCE_FILE = str(_SOURCE)
    KERNEL = "matmul_kernel"
    DYNAMIC_SMEM = True
    SPACE: dict[str, tuple[int, ...]] = {
        "BM": (64, 128),
        "BN": (64, 128),
        "BK": (8, 16),
        "TM": (4, 8),
        "TN": (4, 8),
        "MIN_BLOCKS": (1, 2),
        "PAD_A": (0, 1, 4, 8),
        "SW_VEC_A": (1, 4),
        "SW_PER_PHASE_A": (1, 2, 4),
        "SW_MAX_PHASE_A": (1, 2, 4, 8),
        "PAD_B": (0, 4),
        "SW_VEC_B": (1, 4),
        "SW_PER_PHASE_B": (1, 2, 4),
        "SW_MAX_PHASE_B": (1, 2, 4, 8),
        "THREAD_MAP": (0, 1),
        "SPLIT_K": (1, 2, 4),
    }
    LAYOUT_KEYS = tuple(f"{k}_{x}" for x in "AB" for k in ("PAD", "SW_VEC", "SW_PER_PHASE", "SW_MAX_PHASE"))
    # smem_pattern reads only these; candidates that differ in operand layouts alone share one pattern
    PATTERN_KEYS = ("BM", "BN", "BK", "TM", "TN", "THREAD_MAP")
    DEFAULTS: dict[str, int] = {
        "BM": 128,
        "BN": 128,
        "BK": 8,
        "TM": 8,
        "TN": 8,
        "MIN_BLOCKS": 2,
        "PAD_A": 0,
        "SW_VEC_A": 1,
        "SW_PER_PHASE_A": 1,
        "SW_MAX_PHASE_A": 1,
        "PAD_B": 0,
        "SW_VEC_B": 1,
        "SW_PER_PHASE_B": 1,
        "SW_MAX_PHASE_B": 1,
        "THREAD_MAP": 0,
        "SPLIT_K": 1,
    }
    # cheap necessary conditions of ``legal``, over the whole space at once (T: threads per block)
    _T = "(BN // TN) * (BM // TM)"  # threads per block
    RESTRICTIONS = tuple(
        [f"SW_MAX_PHASE_{x} > 1 or (SW_VEC_{x} == 1 and SW_PER_PHASE_{x} == 1)" for x in "AB"]
        + [f"SW_MAX_PHASE_{x} == 1 or (PAD_{x} == 0 and SW_VEC_{x} >= 4)" for x in "AB"]
        + ["PAD_A % 4 == 0 and PAD_B % 4 == 0", "TM * TN <= 64"]
        + ["SW_MAX_PHASE_A == 1 or BM % (SW_VEC_A * SW_MAX_PHASE_A) == 0"]
        + ["SW_MAX_PHASE_B == 1 or BN % (SW_VEC_B * SW_MAX_PHASE_B) == 0"]
        + [f"{_T} % 32 == 0 and {_T} >= 64 and {_T} <= 1024"]
        + [f"(BM * BK // 4) % {_T} == 0 and BM * BK // 4 >= {_T}"]
        + [f"(BN * BK // 4) % {_T} == 0 and BN * BK // 4 >= {_T}"]
        + [f"MIN_BLOCKS * {_T} * 128 <= 65536 or TM * TN < 64"]
    )
    FLOPS = "2 * M * N * K"
    TOLERANCE = 1e-5  # ||C - C64|| / ||C64||: fp32 accumulation over K <= 16384 lands near 1e-7 .. 1e-6

    # ---- the tuner's side (numpy only) ------------------------------------------------------------------

    def check_shape(self, shape: tuple[int, ...]) -> None:
        if len(shape) != 3:
            raise ValueError(f"shape: matmul takes (M, N, K), got {tuple(shape)!r}")

    def layout(self, constants: dict[str, int], dtype: str = "float32") -> OperandTiles:
        c = constants
        return _operands(_tile(c["BK"], c["BM"], c, "A"), _tile(c["BK"], c["BN"], c, "B"))

    def smem_bytes(self, constants: dict[str, int], dtype: str = "float32") -> int:
        return self.layout(constants, dtype).footprint

    def textbook(self, shape: tuple[int, ...], dtype: str = "float32") -> dict[str, int] | None:
        """The textbook fix for the transposed A tile: pad each As row by one 16-byte vector (4 floats)."""
        c = dict(self.DEFAULTS, PAD_A=4)
        return c if self.legal(c, shape, dtype) else None

    def legal(self, constants: dict[str, int], shape: tuple[int, ...], dtype: str = "float32") -> Legality:
        """The operand layouts' own checks (16-byte fragments) plus the kernel's thread and register limits,
        and where splitting K pays. The checks of the constants alone are cached (``_static``); the shape's
        come between them, in this order."""
        ok = self.legal_preamble(constants, None, dtype)
        if not ok:
            return ok
        c = constants
        threads, thread_map, tiles = _static(self, tuple(c[k] for k in _KEYS))
        if not threads:
            return threads
        ok = _legal_grid(c["BM"], tuple(shape))
        if not ok:
            return ok
        if not thread_map:
            return thread_map
        ok = _legal_split(c["BM"], c["BN"], c["BK"], c.get("SPLIT_K", 1), tuple(shape))
        return ok if not ok else tiles

    def legal_batch(self, columns: dict[str, np.ndarray], shape: tuple[int, ...], dtype: str) -> np.ndarray:
        """``legal`` of many candidates at once (``columns``: constant -> int array), the same answer row for
        row: ``_static``'s arithmetic checks as array expressions (``_static_batch``), the operand layouts'
        checks once per distinct layout, the shape's once per distinct tile and split."""
        n = len(next(iter(columns.values()))) if columns else 0
        if dtype not in self.DTYPES or any(k not in columns for k in _KEYS):
            return np.zeros(n, dtype=bool)
        cols = {k: np.asarray(columns[k], dtype=np.int64) for k in _KEYS}
        ok = _static_batch(cols)
        at = np.flatnonzero(ok)
        if len(at):  # the layouts' checks, on the candidates that reach them in ``_static``
            sub = {k: v[at] for k, v in cols.items()}
            rows, which = per_distinct(sub, ("BM", "BN", "BK", *self.LAYOUT_KEYS))
            tiles = np.array([bool(_static_tiles(self, r)) for r in rows], dtype=bool)
            ok[at] = tiles[which]
        shape = tuple(shape)
        rows, at = per_distinct(cols, ("BM", "BN", "BK", "SPLIT_K"))
        fits = [
            bool(_legal_grid(r["BM"], shape))
            and bool(_legal_split(r["BM"], r["BN"], r["BK"], r["SPLIT_K"], shape))
            for r in rows
        ]
        return ok & np.array(fits, dtype=bool)[at]

    def launch_info_batch(self, columns: dict[str, np.ndarray], shape: tuple[int, ...], dtype: str) -> dict:
        """``launch_info`` of many candidates at once, as a dict of arrays: asked once per distinct tile,
        thread tile and split (what it reads besides the layout), the footprint once per distinct layout."""
        reads = ("BM", "BN", "BK", "TM", "TN", "MIN_BLOCKS", "SPLIT_K")
        out = batched_info(self, columns, shape, dtype, reads, ("BM", "BN", "BK", *self.LAYOUT_KEYS))
        # the keys that read the layout (whether each operand is swizzled), as array arithmetic: the swizzled
        # accesses, and the registers (a swizzle adds to the need: ``register_need``) with what a cap costs
        cols = {k: np.asarray(columns[k], dtype=np.int64) for k in (*_SWIZZLE_READS, "MIN_BLOCKS")}
        out["swizzle_accesses"] = swizzle_accesses(cols).astype(np.float64)
        need = register_need(cols)
        threads = (cols["BN"] // cols["TN"]) * (cols["BM"] // cols["TM"])
        cap = np.minimum(255, REGS_PER_SM // (cols["MIN_BLOCKS"] * threads) // 8 * 8)
        out["regs_per_thread"] = np.minimum(cap, need).astype(np.float64)
        over = need / cap - 1.0
        eff = np.where(over > 0, 1.0 / (1.0 + REG_CAP_COST * np.maximum(over, 0)), 1.0)
        out["flops_efficiency"] = eff
        return out

    def smem_pattern(self, constants: dict[str, int], dtype: str = "float32") -> tuple[Instruction, ...]:
        """One block's shared-memory instructions for one BK step (lane = threadIdx.x % 32), all warps at
        once: the transposing A stores, the B vector stores, and the fragment loads of every k."""
        c = constants
        tx_n, ty_n, t = _threads(c)
        bk, kv, nv = c["BK"], c["BK"] // 4, c["BN"] // 4
        nw = t // 32
        tid = np.arange(t, dtype=np.int64).reshape(nw, 32)
        tx, ty = thread_xy(c, tid)
        out: list[Instruction] = []

        def emit(name: str, op: str, nbytes: int, rows: np.ndarray, cols: np.ndarray) -> None:
            rows, cols = (x.reshape(-1, 32) for x in np.broadcast_arrays(rows, cols))
            out.extend(
                Instruction(f"{name}{n}", op, nbytes, r, cc) for n, (r, cc) in enumerate(zip(rows, cols))
            )

        # As[k + q][r]: the transposing single-word stores, (warp, load, q) x lane
        idx = tid[:, None, :] + t * np.arange(c["BM"] * kv // t)[None, :, None]
        q = np.arange(4)[None, None, :, None]
        emit("stA ", "store", 4, (idx[:, :, None, :] % kv) * 4 + q, idx[:, :, None, :] // kv)
        # Bs[k][n .. n + 3]: one 16-byte store per vector, (warp, load) x lane
        idx = tid[:, None, :] + t * np.arange(c["BN"] * bk // 4 // t)[None, :, None]
        emit("stB ", "store", 16, bk + idx // nv, (idx % nv) * 4)
        # fragment loads, (warp, k, i) x lane: As[k][ty * 4 + i * TY * 4] and Bs[k][tx * 4 + j * TX * 4]
        k = np.arange(bk)[None, :, None, None]
        i = np.arange(c["TM"] // 4)[None, None, :, None]
        emit("ldA ", "load", 16, k, ty[:, None, None, :] * 4 + i * ty_n * 4)
        j = np.arange(c["TN"] // 4)[None, None, :, None]
        emit("ldB ", "load", 16, bk + k, tx[:, None, None, :] * 4 + j * tx_n * 4)
        return tuple(out)

    def grid(self, constants: dict[str, int], shape: tuple[int, ...], dtype: str = "float32") -> tuple:
        m, n, _ = shape
        return (math.ceil(n / constants["BN"]), math.ceil(m / constants["BM"]), constants.get("SPLIT_K", 1))

    def block(self, constants: dict[str, int], shape: tuple[int, ...] = (), dtype: str = "float32") -> tuple:
        return (_threads(constants)[2],)

    def launch_info(self, constants: dict[str, int], shape: tuple[int, ...], dtype: str = "float32") -> dict:
        c = constants
        m, n, k = shape
        s = c.get("SPLIT_K", 1)
        info = {
            "blocks": math.ceil(m / c["BM"]) * math.ceil(n / c["BN"]) * s,
            "threads": _threads(c)[2],
            "smem_bytes": self.layout(c).footprint,
            "tiles_per_block": math.ceil(k_per_split(c, k) / c["BK"]) if s > 1 else math.ceil(k / c["BK"]),
            # through L2: A once per column of tiles, B once per row of tiles, C written once
            "l2_bytes": 4 * (m * k * math.ceil(n / c["BN"]) + k * n * math.ceil(m / c["BM"]) + m * n),
        }
        # the registers each thread holds (its need, the layout's swizzle included, or the cap below it): they
        # limit the blocks an SM holds
        info["regs_per_thread"] = min(register_cap(c), register_need(c))
        info["swizzle_accesses"] = int(swizzle_accesses(c))
        # launch bounds that cap the registers below the tile's need (REG_CAP_COST)
        eff = flops_efficiency(c)
        if eff < 1.0:
            info["flops_efficiency"] = eff
        if s > 1:  # the partial tiles are written and read back once: extra bytes at the same bandwidth
            base = self.traffic(shape, dtype)["bytes"]
            info["dram_efficiency"] = base / (base + 2 * s * m * n * 4)
            info["l2_bytes"] += 2 * s * m * n * 4
        return info

    def traffic(self, shape: tuple[int, ...], dtype: str = "float32") -> dict:
        m, n, k = shape
        return {"bytes": 4 * (m * k + k * n + m * n), "flops": 2 * m * n * k}

    # ---- the measuring side (torch / CUDA) ---------------------------------------------------------------

    def arguments(self, shape: tuple[int, ...], dtype: str = "float32") -> list:
        import torch

        m, n, k = shape
        return [torch.randn(m, k), torch.randn(k, n), Out((m, n), torch.float32)]

    def inputs_from(self, a: Any, b: Any) -> Inputs:
        """``autopad.ops.matmul(a, b)``: A [M, K] and B [K, N] exactly as given (no copy)."""
        return Inputs([a, b], (a.shape[0], b.shape[1], a.shape[1]))

    def alloc_output(self, inputs: Any, constants: dict[str, int] | None = None) -> Any:
        import torch

        a, b = inputs[0], inputs[1]
        return torch.empty((a.shape[0], b.shape[1]), dtype=torch.float32, device=a.device)

    def expected(self, inputs: Any) -> tuple:
        return (self.reference(inputs[0], inputs[1]),)

    def reference(self, a: Any, b: Any) -> Any:
        """float64 product (the check compares against it with a relative tolerance)."""
        return a.double() @ b.double()

    def defines(self, constants: dict[str, int], dtype: str = "float32") -> dict[str, int]:
        d = {k: int(v) for k, v in constants.items()}
        d.update(self.layout(constants).cuda_defines())
        return d

    def build(self, constants: dict[str, int], dtype: str = "float32") -> Built:
        from autopad import cuda_runtime

        d = self.defines(constants)
        main = cuda_runtime.load_kernel(self.source(), "matmul_kernel", d)
        red = None
        if constants.get("SPLIT_K", 1) > 1:
            red = cuda_runtime.load_kernel(self.source(), "matmul_splitk_reduce", d)
        return Built(main, dict(constants), red)

    def launcher(self, built: Built, shape: tuple[int, ...], dtype: str = "float32") -> Any:
        """Grid, block, shared bytes and the scalar arguments computed once; a call only launches."""
        from autopad import cuda_runtime

        c = built.constants
        m, n, k = shape
        s = c.get("SPLIT_K", 1)
        grid, block = self.grid(c, shape), _threads(c)[2]
        smem = self.layout(c).footprint
        tail = (np.int32(m), np.int32(n), np.int32(k), np.int32(k_per_split(c, k)))
        prep = getattr(cuda_runtime, "prepare_launch", None)
        if prep is not None:  # the ops layer's low-overhead launch, where it exists
            main = prep(built.kernel, grid, block, smem)
            red = prep(built.reduce, (math.ceil(m * n / 1024),), 256, 0) if s > 1 else None
        else:

            def main(args: tuple) -> None:
                cuda_runtime.launch(built.kernel, grid, block, args, smem)

            def red(args: tuple) -> None:
                cuda_runtime.launch(built.reduce, (math.ceil(m * n / 1024),), 256, args, 0)

        mn, nsplit = np.int64(m * n), np.int32(s)

        def go(inputs: Any, out: Any) -> None:
            a, b = inputs[0], inputs[1]
            if s == 1:
                main((out, a, b, *tail))
                return
            import torch

            ws = torch.empty((s, m, n), dtype=torch.float32, device=a.device)
            main((ws, a, b, *tail))
            red((out, ws, mn, nsplit))

        return go

    def run(self, built: Built, inputs: Any, out: Any) -> None:
        """One launch (two with split-K). The launcher for this shape and device is made on the first call
        and kept on ``built``: made per call, its host work (the launch geometry, the shared-memory opt-in)
        ran inside the harness's timed interval whenever it outlasted the GPU's lead."""
        import torch

        a, b = inputs[0].contiguous(), inputs[1].contiguous()
        shape = (a.shape[0], b.shape[1], a.shape[1])
        key = (shape, torch.cuda.current_device())
        go = built.launchers.get(key)
        if go is None:
            go = built.launchers[key] = self.launcher(built, shape)
        go((a, b), out)

    def presets(self, dtype: str = "float32") -> dict[str, dict[str, int]]:
        """Named candidates: unpadded, the textbook 4-float pad on As, and an XOR swizzle of As's 16-byte
        chunks by row (row k's chunk j goes to j ^ k: the 4 k-rows a thread writes and the 2 row groups of
        a warp's thread pairs land 16 words apart, conflict-free with no extra memory); each at BK 8 and
        16; and the swizzled BK 16 tile with the paired thread map."""
        sw = {"SW_VEC_A": 4, "SW_PER_PHASE_A": 1, "SW_MAX_PHASE_A": 8}
        d = self.DEFAULTS
        out = {
            "unpadded": dict(d),
            "textbook": dict(d, PAD_A=4),
            "swizzled": dict(d, **sw),
            "unpadded_bk16": dict(d, BK=16, MIN_BLOCKS=1),
            "padded_bk16": dict(d, BK=16, MIN_BLOCKS=1, PAD_A=4),
            "swizzled_bk16": dict(d, BK=16, MIN_BLOCKS=1, **sw),
            "paired_bk16": dict(d, BK=16, MIN_BLOCKS=1, THREAD_MAP=1, **sw),
        }
        return {name: v for name, v in out.items() if self.legal(v, (4096, 4096, 4096), dtype)}


_KEYS = tuple(MatmulCuda.SPACE)  # the constants, in SPACE's order (_static's key)
_SWIZZLE_READS = ("BM", "BN", "BK", "TM", "TN", "SW_MAX_PHASE_A", "SW_MAX_PHASE_B")


@functools.lru_cache(maxsize=1 << 16)
def _static(spec: MatmulCuda, key: tuple[int, ...]) -> tuple[Legality, Legality, Legality]:
    """``legal``'s checks of the constants alone (in ``_KEYS`` order), in its three runs: the thread tile,
    threads, operand vectors and registers; the warp map; the operand layouts."""
    c = dict(zip(_KEYS, key))
    ok = Legality(True)
    threads = thread_map = tiles = ok
    for x in ("A", "B"):
        if c[f"SW_MAX_PHASE_{x}"] == 1 and (c[f"SW_VEC_{x}"], c[f"SW_PER_PHASE_{x}"]) != (1, 1):
            threads = Legality(False, f"no swizzle on {x} is spelt SW_VEC_{x} = SW_PER_PHASE_{x} = 1")
            break
        if c[f"SW_MAX_PHASE_{x}"] > 1 and c[f"PAD_{x}"]:
            threads = Legality(False, f"padding and swizzle on {x} are exclusive")
            break
    tx_n, ty_n, t = _threads(c) if threads else (0, 0, 0)
    if not threads:
        pass
    elif c["BM"] % c["TM"] or c["BN"] % c["TN"] or c["TM"] % 4 or c["TN"] % 4 or c["BK"] % 4:
        threads = Legality(False, "thread tile must divide the block tile in 4-wide vectors")
    elif t % 32 or t < 64 or t > 1024:
        threads = Legality(False, f"{t} threads: need a whole number of warps, 64 to 1024")
    elif (c["BM"] * c["BK"] // 4) % t or c["BM"] * c["BK"] // 4 < t:
        threads = Legality(
            False, f"A tile's {c['BM'] * c['BK'] // 4} vectors do not divide among {t} threads"
        )
    elif (c["BN"] * c["BK"] // 4) % t or c["BN"] * c["BK"] // 4 < t:
        threads = Legality(
            False, f"B tile's {c['BN'] * c['BK'] // 4} vectors do not divide among {t} threads"
        )
    elif c["TM"] * c["TN"] > 64:
        threads = Legality(False, "more than 64 accumulators per thread")
    elif c["MIN_BLOCKS"] * t * 128 > 65536 and c["TM"] * c["TN"] >= 64:
        threads = Legality(False, "64 accumulators need 128 registers: at most 65536 / 128 threads per SM")
    if threads and c.get("THREAD_MAP", 0) and (tx_n % min(tx_n, 16) or ty_n % (32 // min(tx_n, 16))):
        thread_map = Legality(False, "THREAD_MAP 1 needs the warp's lanes to tile the thread grid")
    if threads and thread_map:
        tiles = _static_tiles(spec, c)
    return threads, thread_map, tiles


def _static_tiles(spec: MatmulCuda, c: dict[str, int]) -> Legality:
    """The operand layouts' own checks (16-byte fragments; B is stored in 16-byte vectors)."""
    try:
        lay = spec.layout(c)
    except ValueError as exc:
        return Legality(False, str(exc))
    return _check_tiles(lay)


def _static_batch(c: dict[str, np.ndarray]) -> np.ndarray:
    """Whether ``_static``'s thread-tile and warp-map checks pass, for columns of candidates (int64 arrays
    in ``_KEYS``): the same conditions as array expressions (its order only picks the reason)."""
    ok = np.ones(len(c["BM"]), dtype=bool)
    for x in ("A", "B"):
        mp, vec, pp, pad = c[f"SW_MAX_PHASE_{x}"], c[f"SW_VEC_{x}"], c[f"SW_PER_PHASE_{x}"], c[f"PAD_{x}"]
        ok &= ~((mp == 1) & ((vec != 1) | (pp != 1))) & ~((mp > 1) & (pad != 0))
    bm, bn, bk, tm, tn = c["BM"], c["BN"], c["BK"], c["TM"], c["TN"]
    ok &= (tm > 0) & (tn > 0)  # (the space's values are positive: this only keeps the divisions defined)
    tm, tn = np.where(ok, tm, 1), np.where(ok, tn, 1)
    tx, ty = bn // tn, bm // tm  # _threads
    t = tx * ty
    ok &= (bm % tm == 0) & (bn % tn == 0) & (tm % 4 == 0) & (tn % 4 == 0) & (bk % 4 == 0)
    ok &= (t % 32 == 0) & (t >= 64) & (t <= 1024)
    t = np.where(ok, t, 1)
    for b in (bm, bn):  # each operand tile's 4-wide vectors divide among the threads
        ok &= ((b * bk // 4) % t == 0) & (b * bk // 4 >= t)
    ok &= tm * tn <= 64
    ok &= ~((c["MIN_BLOCKS"] * t * 128 > 65536) & (tm * tn >= 64))
    # THREAD_MAP 1: a warp of wx x (32 / wx) lanes, wx = min(tx, 16), must tile the tx x ty thread grid
    wx = np.maximum(np.minimum(tx, 16), 1)
    ok &= (c["THREAD_MAP"] == 0) | ((tx % wx == 0) & (ty % np.maximum(32 // wx, 1) == 0))
    return ok


@functools.lru_cache(maxsize=4096)
def _legal_grid(bm: int, shape: tuple) -> Legality:
    if len(shape) != 3 or min(shape) < 1:
        return Legality(False, f"shape must be (M, N, K) >= 1, got {shape}")
    if math.ceil(shape[0] / bm) > 65535:
        return Legality(False, "M too large for grid.y")
    return Legality(True)


@functools.lru_cache(maxsize=4096)
def _legal_split(bm: int, bn: int, bk: int, s: int, shape: tuple) -> Legality:
    if s > 1:
        m, n, k = shape
        tiles = math.ceil(m / bm) * math.ceil(n / bn)
        if tiles * s > 2 * _ARCH.sm_count:
            return Legality(False, f"split-K only while {tiles} tiles x {s} splits fit two blocks per SM")
        if k < 8 * s * bk:
            return Legality(False, f"K = {k} gives each of {s} splits under 8 steps of {bk}")
    return Legality(True)


@dataclass(frozen=True)
class Built:
    """The compiled GEMM (and split-K's reduce), its constants, ``run``'s launchers by shape and device."""

    kernel: Any
    constants: dict
    reduce: Any = None
    launchers: dict = field(default_factory=dict, compare=False, repr=False)


# the module is the spec the registry loads (autopad.kernels_registry.BUILTIN): expose SPEC's names
SPEC = MatmulCuda()
NAME, BACKEND, DTYPES, SPACE, DEFAULTS = SPEC.NAME, SPEC.BACKEND, SPEC.DTYPES, SPEC.SPACE, SPEC.DEFAULTS
LAYOUT_KEYS, PATTERN_KEYS, RESTRICTIONS = SPEC.LAYOUT_KEYS, SPEC.PATTERN_KEYS, SPEC.RESTRICTIONS
legal_batch, launch_info_batch = SPEC.legal_batch, SPEC.launch_info_batch
SOURCE_FILES = (str(_SOURCE), str(_SOURCE.with_name("common.cuh")), __file__)  # + this module: macros, grid
SMEM_BUDGET = _ARCH.smem_per_block
RTOL = SPEC.TOLERANCE
legal, layout, smem_pattern, launch_info, traffic = (
    SPEC.legal,
    SPEC.layout,
    SPEC.smem_pattern,
    SPEC.launch_info,
    SPEC.traffic,
)
textbook, check_shape, inputs_from, launcher, presets = (
    SPEC.textbook,
    SPEC.check_shape,
    SPEC.inputs_from,
    SPEC.launcher,
    SPEC.presets,
)
make_inputs, alloc_output, expected, check = SPEC.make_inputs, SPEC.alloc_output, SPEC.expected, SPEC.check
build, run, defines, cache_source = SPEC.build, SPEC.run, SPEC.defines, SPEC.cache_source


def source() -> str:
    return _SOURCE.read_text()


def reference(inputs: Any) -> Any:
    """The fp64 answer from an inputs tuple (the older module-level form some scripts still call)."""
    return SPEC.expected(inputs)[0]
