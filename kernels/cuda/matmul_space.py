"""The CUDA SIMT GEMM's space and its legality: the constants and their values, the restrictions the
enumerator prunes with, and ``legal`` / ``legal_batch``, the same answer one candidate or a column of them
at a time.

``SPACE`` spans the block tile (``BM`` x ``BN`` x ``BK``), the thread tile (``TM`` x ``TN``), the launch
bounds (``MIN_BLOCKS``), each operand's layout (``PAD_*`` or the swizzle ``SW_*_A`` / ``SW_*_B``), the
warp's lane map (``THREAD_MAP``) and the K split (``SPLIT_K``). ``RESTRICTIONS`` are cheap necessary
conditions of ``legal`` the enumerator evaluates over the whole space at once; ``legal`` decides every
survivor from the checks of the constants alone (``_static``, cached: the thread tile, threads, operand
vectors and registers; the warp map; the operand layouts) and the shape's (``_legal_grid``,
``_legal_split``: split-K only where the output tiles cannot fill the SMs), in that interleaved order.
``legal_batch`` gives the same answer for columns of candidates (``_static_batch``: the arithmetic as
array expressions; the layouts' and the shape's checks once per distinct combination).

Why a module of its own: this is what the tuner enumerates and prunes, apart from what the model scores
(matmul.py's pattern, matmul_cost.py) and what runs (matmul.py, matmul.cu).
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

import numpy as np

from autopad.kernel_base import batch_columns
from autopad.layouts import Legality
from autopad.spec import per_distinct

from .matmul_tile import _ARCH, _check_tiles, _threads

if TYPE_CHECKING:
    from .matmul import MatmulCuda

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

_KEYS = tuple(SPACE)  # the constants, in SPACE's order (_static's key)


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


def legal(
    spec: MatmulCuda, constants: dict[str, int], shape: tuple[int, ...], dtype: str = "float32"
) -> Legality:
    """The operand layouts' own checks (16-byte fragments) plus the kernel's thread and register limits,
    and where splitting K pays. The checks of the constants alone are cached (``_static``); the shape's
    come between them, in this order."""
    ok = spec.legal_preamble(constants, None, dtype)
    if not ok:
        return ok
    c = constants
    threads, thread_map, tiles = _static(spec, tuple(c[k] for k in _KEYS))
    if not threads:
        return threads
    ok = _legal_grid(c["BM"], tuple(shape))
    if not ok:
        return ok
    if not thread_map:
        return thread_map
    ok = _legal_split(c["BM"], c["BN"], c["BK"], c.get("SPLIT_K", 1), tuple(shape))
    return ok if not ok else tiles


def legal_batch(
    spec: MatmulCuda, columns: dict[str, np.ndarray], shape: tuple[int, ...], dtype: str
) -> np.ndarray:
    """``legal`` of many candidates at once (``columns``: constant -> int array), the same answer row for
    row: ``_static``'s arithmetic checks as array expressions (``_static_batch``), the operand layouts'
    checks once per distinct layout, the shape's once per distinct tile and split."""
    refused = spec.legal_batch_preamble(columns, None, dtype)  # as ``legal``: every constant, no shape
    if refused is not None:
        return refused
    cols = batch_columns(columns, _KEYS, dtype=np.int64)
    ok = _static_batch(cols)
    at = np.flatnonzero(ok)
    if len(at):  # the layouts' checks, on the candidates that reach them in ``_static``
        sub = {k: v[at] for k, v in cols.items()}
        rows, which = per_distinct(sub, ("BM", "BN", "BK", *spec.LAYOUT_KEYS))
        tiles = np.array([bool(_static_tiles(spec, r)) for r in rows], dtype=bool)
        ok[at] = tiles[which]
    shape = tuple(shape)
    rows, at = per_distinct(cols, ("BM", "BN", "BK", "SPLIT_K"))
    fits = [
        bool(_legal_grid(r["BM"], shape))
        and bool(_legal_split(r["BM"], r["BN"], r["BK"], r["SPLIT_K"], shape))
        for r in rows
    ]
    return ok & np.array(fits, dtype=bool)[at]
