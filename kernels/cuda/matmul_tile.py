"""The CUDA SIMT GEMM's geometry: the operand tiles As and Bs as one layout (``OperandTiles``), the
threads of a block and where each sits on the thread tile (``THREAD_MAP``), and K per split.

``OperandTiles`` holds As (BK x BM, A staged transposed) and Bs (BK x BN) of one buffer of the double
buffer, logical rows 0..BK-1 and BK..2BK-1, so the model scores a whole k-step with one call; each tile
is an ``autopad.layouts`` Padded or Swizzled, built once per parameter set. ``_threads``, ``thread_xy``
and ``k_per_split`` are matmul.cu's index arithmetic in Python.

Why a module of its own: the layout, the legality (matmul_space.py), the pattern and the cost
(matmul_cost.py) and the launch (matmul.py) all read this geometry; here it is one thing each of them
imports, with no import back.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from autopad.arch import get_arch
from autopad.layouts import Legality, Padded, Swizzled

_ARCH = get_arch("sm_90")


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


def k_per_split(c: dict[str, int], k: int) -> int:
    """K per ``blockIdx.z``: a whole number of BK steps."""
    per = math.ceil(k / c.get("SPLIT_K", 1))
    return math.ceil(per / c["BK"]) * c["BK"]
