"""The CUDA transpose's tile geometry: the problem's dims, the load and read-out phases of a tile, its
shared-memory layout and footprint, and which path (scalar or vector) and halo a candidate builds.

These are the small functions of the constants that the kernel's index arithmetic (transpose.cu) and every
other part of the spec read: the legality (transpose_space.py), the pattern the bank model scores
(transpose_pattern.py), the launch info's terms (transpose_cost.py) and the build and launch
(transpose_launch.py). Why a module of its own: they are shared by all four, so none of them owns them.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from autopad.arch import get_arch
from autopad.layouts import Legality, Padded, Swizzled

_ARCH = get_arch("sm_90")
_LEGAL = Legality(True)  # (one answer shared by every legal candidate: a ranking asks thousands of times)


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


# halo rows beyond VEC that the 1-byte register read-out's window takes (transpose.cu's RT_WINDOW: up to
# 15 + 12 rows past the tile, the widest span of its four shifted rows being 12)
WINDOW_EXTRA_ROWS = 12


def _halo_rows(vec: Any, readout: Any, e: int) -> Any:
    """Halo rows a misaligned build holds past its tile (transpose.cu's HROWS): VEC, or VEC + 12 for the
    1-byte READOUT 1 window (scalars or arrays)."""
    return vec + np.where((np.asarray(readout) == 1) & (e == 1), WINDOW_EXTRA_ROWS, 0)


def _hpass(vec: Any, ly: Any, readout: Any = 0, e: int = 4) -> Any:
    """Load passes of the halo rows: ceil(HROWS / LY) (transpose.cu's HPASS)."""
    return -(-_halo_rows(vec, readout, e) // ly)


def _halo(c: dict[str, int], misaligned: bool, e: int = 4) -> int:
    """Halo rows of the misaligned build (transpose.cu's HALO, HROWS): on the vector path, but for
    ldmatrix's; ``e`` the element bytes."""
    if misaligned and not _scalar(c) and c["VEC"] > 1 and c.get("READOUT", 0) != 2:
        return int(_halo_rows(int(c["VEC"]), c.get("READOUT", 0), e))
    return 0


@lru_cache(maxsize=1 << 12)
def _smem(lkey: tuple[int, ...], halo: int) -> int:
    """Bytes of the tile of ``_lkey`` plus ``halo`` rows of its row stride."""
    lay = _layout(*lkey)
    return int(lay.footprint) + halo * int(lay.footprint) // lkey[0]


def _scalar(c: dict[str, int]) -> bool:
    """Does the candidate take the original guarded scalar path (SCALAR_EDGE 1, the default when absent)?"""
    return bool(c.get("SCALAR_EDGE", 1))
