"""Byte addresses of pattern instructions under tile layouts, all layouts at once (``autopad.score``'s).

autopad.layouts' padded and swizzled tiles, replicated arrays, and layouts of tiles stacked by rows (the SIMT
GEMM's A and B operand tiles in one buffer) share one formula: row ``r``, column ``c`` of a tile is at
``(r * row stride + (c ^ phase(r) << log2 vec) * column stride) * element bytes`` (plus a part's byte base).
``_tile_params`` reads a layout's parameters of that formula (None for any other layout, which the scorer
asks for its own ``offsets``), and ``_tile_addresses`` computes many instructions' addresses, each under its
own parameters, with shifts and masks over numpy arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import layouts  # (its classes read at each call: a patched class is seen)

# the scorer imports the underscored names below (tests/test_score.py tests them there)
__all__: list[str] = []

_BLOCK_LANES = 1 << 16  # lanes of addresses computed at a time (temporaries stay in cache)


def _tile_params(layout: Any) -> tuple[int, int, int, int, int, int] | None:
    """(row stride, log2 sw_vec, log2 per_phase, max_phase - 1, elem bytes, column stride) of a layout whose
    offsets are the one tile formula with a column stride (``_tile_addresses``), else None: autopad.layouts'
    padded / swizzled tiles (column stride 1) and replicated arrays (no swizzle; replica-major rows of
    ``bins + pad``, or interleaved: column stride ``replicas + pad``), each of its class's own offsets."""
    base = getattr(layouts, "_Tile", None) or getattr(layouts, "Tile", None)
    rep = getattr(layouts, "Replicated", None)
    if rep is not None and type(layout).offsets is rep.offsets and isinstance(layout, rep):
        e = int(layout.elem_bytes)
        if layout.interleaved:
            return 1, 0, 0, 0, e, int(layout.replicas) + int(layout.pad)
        return int(layout.bins) + int(layout.pad), 0, 0, 0, e, 1
    if base is None or not isinstance(layout, base) or type(layout).offsets is not base.offsets:
        return None
    v, pp, mp = int(layout.sw_vec), int(layout.per_phase), int(layout.max_phase)
    if any(x & (x - 1) for x in (v, pp, mp)):
        return None  # the batched formula below uses shifts and masks
    return int(layout.row_stride), v.bit_length() - 1, pp.bit_length() - 1, mp - 1, int(layout.elem_bytes), 1


def _parts(layout: Any) -> tuple[tuple[int, int, int, int, tuple[int, ...]], ...] | None:
    """(first row, rows, cols, byte base, ``_tile_params``) of each part of a layout made of tiles stacked by
    rows (its ``tile_parts``: (first row, tile, byte base) each; the SIMT GEMM's A and B operand tiles in
    one buffer), when every part is a tile of the one formula; else None. Row ``first + r`` of such a
    layout is row ``r`` of the part's tile, at ``base`` + the tile's offset."""
    got = getattr(layout, "tile_parts", None)
    if not isinstance(got, tuple) or not got:
        return None
    out = []
    for first, tile, base in got:
        prm = _tile_params(tile)
        if prm is None or prm[5] != 1 or not isinstance(tile.rows, int) or not isinstance(tile.cols, int):
            return None
        out.append((int(first), int(tile.rows), int(tile.cols), int(base), prm))
    return tuple(out)


def _tile_addresses(params: np.ndarray, rows: np.ndarray, cols: np.ndarray, which: np.ndarray) -> np.ndarray:
    """Byte addresses (n, warp) of instructions ``which`` of (rows, cols: (m, warp)), each under its own
    layout's formula (``params``: (n, 6) from ``_tile_params``, or (n, 8) with each instruction's part of a
    layout of stacked tiles: its first row, subtracted from the rows, and its byte base, added; every active
    lane in that part); -1 where rows < 0. In int32 where no address can reach 2**31, else int64."""
    parted = params.shape[1] > 6
    rmax = int(np.abs(rows).max(initial=0))
    widest = max(int(cols.max(initial=0)), int(((params[:, 3] + 1) << params[:, 1]).max(initial=1)))
    cbound = 1 << widest.bit_length()  # above any swizzled column
    top = (rmax * int(params[:, 0].max(initial=0)) + cbound * int(params[:, 5].max(initial=0))) * int(
        params[:, 4].max(initial=0)
    ) + (int(params[:, 7].max(initial=0)) if parted else 0)
    dt = np.int32 if top < 2**31 else np.int64
    swizzled = bool(params[:, 3].any())
    dense = bool((rows >= 0).all())  # no inactive lane to mark -1
    out = np.empty((len(which), rows.shape[1]), dtype=dt)
    rows, cols = rows.astype(dt), cols.astype(dt)
    # in bytes: the row stride and the column stride times the element size (the same integers)
    row_bytes = (params[:, 0] * params[:, 4]).astype(dt)
    col_bytes = (params[:, 5] * params[:, 4]).astype(dt)
    step = max(1, _BLOCK_LANES // max(1, rows.shape[1]))
    for s in range(0, len(which), step):
        # (``take`` along the rows: several times faster than indexing a 2-D array with an index array)
        r, c = rows.take(which[s : s + step], axis=0), cols.take(which[s : s + step], axis=0)
        if parted:  # row r of the layout is row r - first of the part's tile
            r = np.where(r < 0, r, r - params[s : s + step, 6, None].astype(dt))
        # the one formula (layouts.py): r * (cols + pad) + ((c // vec) ^ ((r // per_phase) % max_phase))
        # * vec + c % vec, in elements; vec, per_phase and max_phase are powers of two, so the chunk's
        # move is an XOR of the phase shifted to the chunk bits: c ^ (((r >> log2 per_phase) & (max_phase
        # - 1)) << log2 vec) (the XOR leaves c's low log2 vec bits, the element within its chunk, alone)
        if swizzled:
            lv, lp, mmask = (params[s : s + step, j, None].astype(dt) for j in (1, 2, 3))
            c = c ^ (((r >> lp) & mmask) << lv)
        o = out[s : s + step]  # written in place: no temporary the size of the block
        np.multiply(r, row_bytes[s : s + step, None], out=o)
        c *= col_bytes[s : s + step, None]
        o += c
        if parted:
            o += params[s : s + step, 7, None].astype(dt)
        if not dense:
            o[r < 0] = -1
    return out


def _extent(rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, ...]:
    """Each instruction's lowest and highest active row and column (rows of no active lane: an empty
    range, lowest above highest)."""
    active = rows >= 0
    big = np.iinfo(np.int64).max
    lo_r, hi_r = np.where(active, rows, big).min(axis=1), np.where(active, rows, -1).max(axis=1)
    lo_c, hi_c = np.where(active, cols, big).min(axis=1), np.where(active, cols, -1).max(axis=1)
    return lo_r, hi_r, lo_c, hi_c


def _part_rows(
    parted: list[Any], lo_r: np.ndarray, hi_r: np.ndarray, lo_c: np.ndarray, hi_c: np.ndarray
) -> tuple[np.ndarray, ...]:
    """For layouts of stacked tiles (``_parts``; None for any other) and contents given by their extents
    (``_extent``): (the distinct parts' ``_tile_addresses`` parameters, (parts, 8): the tile's six, then
    the part's first row and byte base; each (layout, part)'s index into them, at layout * most parts +
    part; for each content and combination of parts' geometries, the first part holding every active lane
    of the content, or -1; each layout's combination)."""
    most = max((len(q) for q in parted if q is not None), default=0)
    table = np.zeros((len(parted) * most, 11), dtype=np.int64)  # first row, rows, cols, parameters
    for j, q in enumerate(parted):
        for k, (first, n_rows, n_cols, base, prm) in enumerate(q or ()):
            table[j * most + k] = (first, n_rows, n_cols, *prm, first, base)
    params, pid = np.unique(table[:, 3:], axis=0, return_inverse=True)
    # which part holds a content depends on the parts' (first row, rows, cols) alone: worked out per
    # distinct combination of them (an absent part has no rows: it holds only a content with no active
    # lane, all -1 under any part)
    geo, geo_of = np.unique(table[:, :3], axis=0, return_inverse=True)
    combo, combo_of = np.unique(geo_of.reshape(-1, most), axis=0, return_inverse=True)
    first, rows, cols = geo[:, 0], geo[:, 1], geo[:, 2]
    inside = ((lo_c >= 0) & (lo_r >= 0))[:, None] & (hi_c[:, None] < cols)
    inside &= (lo_r[:, None] >= first) & (hi_r[:, None] < first + rows)  # (contents, geometries)
    part = np.full((len(lo_r), len(combo)), -1, dtype=np.int64)
    for k in reversed(range(most)):
        part[inside[:, combo[:, k]]] = k
    return params, pid.ravel(), part, combo_of.ravel()
