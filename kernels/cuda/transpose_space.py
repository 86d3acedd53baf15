"""The CUDA transpose's space and its legality: the constants and their values, the restrictions the
enumerator prunes with, and ``legal`` / ``legal_batch``, the same answer one candidate or a column of them
at a time.

``SPACE`` spans the tile (``TILE_M`` x ``TILE_N``), the threads, the vector width, the shared layout
(``PAD`` or the swizzle ``SW_*``), the read-out (``READOUT``), the global path (``SCALAR_EDGE``) and the
block order (``GROUP``). ``RESTRICTIONS`` are the cheap necessary conditions the enumerator evaluates over
the whole space at once; ``legal`` decides every survivor in three cached parts: the tile and its layout
(``_legal_tile``), the kernel's thread and register arithmetic (``_legal_threads``), both independent of
the shape (``_legal_static``), then the grid for the shape (``_legal_shape``). ``legal_batch`` asks each
part once per distinct combination of the constants it reads.

Why a module of its own: this is what the tuner enumerates and prunes, apart from what the model scores
(transpose_pattern.py, transpose_cost.py) and what runs (transpose_launch.py, transpose.cu).
"""

from __future__ import annotations

from functools import lru_cache
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import numpy as np

from autopad.kernel_base import batch_columns
from autopad.layouts import Legality
from autopad.spec import DTYPE_BYTES, distinct_combinations

from .transpose_tile import _ARCH, _LEGAL, _cdiv, _dims, _layout, _phases, _smem

if TYPE_CHECKING:
    from .transpose import TransposeCuda

__all__ = ["SPACE", "DEFAULTS", "RESTRICTIONS", "MAX_VEC_REGS", "legal", "legal_batch"]

MAX_VEC_REGS = 64  # 4-byte registers the load phase may hold per thread (LPASS x VEC x elem / 4)

SPACE: dict[str, tuple[int, ...]] = {
    "TILE_M": (32, 64, 128, 256),  # 256: 1-byte elements on the vector path only (256-byte output rows)
    "TILE_N": (32, 64, 128, 256),  # 256: 1-byte elements only (a 128 x 256 tile is 16-bit's 128 x 128)
    "THREADS": (128, 256, 512),
    "VEC": (1, 2, 4, 8, 16),
    "PAD": (0, 1, 2, 4, 8, 16),
    "SW_VEC": (1, 2, 4, 8, 16),
    "SW_PER_PHASE": (1, 2, 4, 8, 16),
    "SW_MAX_PHASE": (1, 2, 4, 8, 16, 32),
    "READOUT": (0, 1, 2),
    "SCALAR_EDGE": (0, 1),
    # 4096: at least the tile rows of any matrix up to 4096 tiles tall, i.e. whole tile columns (column-major)
    "GROUP": (1, 16, 64, 4096),
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
# the code paths the tuner searches from one by one (search_shortlist.family): a model error that shifts a
# whole vector width can bury the fastest one (H200 run 114, fp32 4097x8191: the first width 1 tiles
# predicted 13% ahead of width 4's best, the first four measured 3-8% behind it; width 4's best 2,164th)
FAMILY_KEYS = ("VEC",)
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
    "TILE_N <= 128 or (E == 1 and TILE_M >= 128 and READOUT == 1 and THREADS >= 256)",
    "TILE_M <= 128 or (E == 1 and READOUT == 1 and THREADS >= 256 and SCALAR_EDGE == 0)",
)

_OPTIONAL = {"GROUP": 1}  # what ``legal`` reads for a constant a candidate leaves out
_KEYS = tuple(k for k in SPACE if k not in _OPTIONAL)  # the constants ``legal`` needs given
_TILE_KEYS = ("TILE_M", "TILE_N", "VEC", "PAD", "SW_VEC", "SW_PER_PHASE", "SW_MAX_PHASE")  # _legal_tile's
_THREAD_KEYS = ("TILE_M", "TILE_N", "THREADS", "VEC", "READOUT", "SCALAR_EDGE")  # _legal_threads'
_GROUPS = SPACE["GROUP"]
GROUP_LIMIT = 2**31  # GROUP is an int32 kernel argument: 1 .. GROUP_LIMIT - 1
_key_of = itemgetter(*_KEYS)  # a candidate's constants in _KEYS order (a KeyError names a missing one)
_I_TM, _I_TN, _I_VEC, _I_SC, _I_RO = (
    _KEYS.index(k) for k in ("TILE_M", "TILE_N", "VEC", "SCALAR_EDGE", "READOUT")
)


def legal(spec: TransposeCuda, constants: dict[str, int], shape: tuple[int, ...], dtype: str) -> Legality:
    """Can this candidate run? The layout's own check, then the kernel's thread and register arithmetic,
    then the grid for this shape."""
    ok = spec.legal_preamble(constants, None, dtype, _KEYS)  # GROUP may be absent; the shape is judged below
    if not ok:
        return ok
    key = _key_of(constants)
    e = DTYPE_BYTES[dtype]
    ok = _legal_static(key, e)
    if not ok:
        return ok
    group = constants.get("GROUP", _OPTIONAL["GROUP"])
    if group != 1 and (
        not isinstance(group, (int, np.integer)) or not 1 <= group < GROUP_LIMIT or key[_I_SC]
    ):
        return Legality(
            False, f"GROUP {group}: a block order of 1 to 2**31 - 1 tile rows, on SCALAR_EDGE 0 only"
        )
    # the shape's part depends on the tile, the path, the read-out and the block order alone
    return _legal_shape(
        key[_I_TM], key[_I_TN], key[_I_VEC], key[_I_SC], key[_I_RO], tuple(shape), e, int(group)
    )


def legal_batch(
    spec: TransposeCuda, columns: dict[str, np.ndarray], shape: tuple[int, ...], dtype: str
) -> np.ndarray:
    """``legal`` of many candidates at once (``columns``: constant -> int array, a candidate per entry),
    the same answer row for row: each part of ``legal`` (the tile and its layout, the threads, the
    block order, the shape) is asked once per distinct combination of the constants it reads, and
    those answers are cached as ``legal``'s are."""
    refused = spec.legal_batch_preamble(columns, None, dtype, _KEYS)  # as ``legal``: GROUP may be absent
    if refused is not None:
        return refused
    e = DTYPE_BYTES[dtype]
    c = batch_columns(columns, _KEYS)
    group = batch_columns(columns, ("GROUP",), _OPTIONAL)["GROUP"]
    ok = np.zeros(len(group), dtype=bool)
    ok[:] = _each(_legal_tile, {k: c[k] for k in _TILE_KEYS}, e)
    ok[ok] = _each(_legal_threads, {k: c[k][ok] for k in _THREAD_KEYS}, e)
    ok &= (group == 1) | (
        (group >= 1) & (group < GROUP_LIMIT) & (c["SCALAR_EDGE"] == 0)
    )  # legal's GROUP rule
    shape_cols = {k: c[k][ok] for k in ("TILE_M", "TILE_N", "VEC", "SCALAR_EDGE", "READOUT")}
    shape_cols["GROUP"] = group[ok]
    ok[ok] = _each(
        lambda tm, tn, v, sc, ro, g: _legal_shape(tm, tn, v, sc, ro, tuple(shape), e, g), shape_cols
    )
    return ok


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
    if tn > 128 and (e != 1 or tm < 128):
        # 256-element tile rows are for 1-byte elements: 256 bytes, the row a 16-bit 128-column tile has
        # (H200 run 19: int8 / fp8 16384^2 at 0.91 / 0.92 of copy against 0.88 / 0.90 with 128 x 128), and
        # only in 128- and 256-row tiles (256 x 256: 0.96 of copy, H200 run 65)
        return Legality(False, f"TILE_N {tn} is for 1-byte elements in 128- or 256-row tiles (else <= 128)")
    if tm > 128 and e != 1:
        return Legality(False, f"TILE_M {tm} is for 1-byte elements (up to 128 otherwise)")
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
    if tm > 128 and (readout != 1 or t < 256 or scalar):
        return Legality(False, f"TILE_M {tm}: the vector path's register read-out, 256 or 512 threads only")
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
