"""The Gluon transpose's model side, numpy only: its space, legality (with the faults Triton 3.6 compiles),
the tile's shared layout, the register layouts' shared-memory pattern, and what the predictor is told beyond
the pattern (launch info: blocks, threads, shared bytes and the global side's L2 bytes, ``store_sectors``).

Why a module of its own: this is what the tuner enumerates, prunes and scores with no GPU and no triton,
apart from the kernels, their launch and the spec (transpose.py, which re-exports these names), as the GEMM
keeps matmul_model.py apart from matmul.py.
"""

from __future__ import annotations

import math
from collections import Counter
from functools import lru_cache
from typing import Any

import numpy as np

from autopad.arch import get_arch
from autopad.gluon_model import Blocked, Moves, _arrays, moves
from autopad.kernel_base import batch_columns, batch_rows
from autopad.layouts import Legality, Padded, Swizzled
from autopad.spec import DTYPE_BYTES, batched_info, per_distinct

from .transpose_spills import stack_bytes

NAME = "transpose"
BACKEND = "triton"
DTYPES = ("float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "int8")
SPACE: dict[str, tuple[int, ...]] = {
    "BM": (32, 64, 128),
    "BN": (32, 64, 128),
    "VEC": (1, 2, 4, 8, 16),
    "WARPS": (4, 8),
    "PAD": (0, 1, 2, 4, 8, 16),
    "SW_VEC": (1, 2, 4, 8, 16),
    "PER_PHASE": (1, 2, 4),
    "MAX_PHASE": (1, 2, 4, 8, 16, 32),
}
LAYOUT_KEYS = ("PAD", "SW_VEC", "PER_PHASE", "MAX_PHASE")
LAYOUT_READS = ("BM", "BN", *LAYOUT_KEYS)  # what ``layout`` reads: a ranking asks once per tile
DEFAULTS = {"BM": 64, "BN": 64, "VEC": 4, "WARPS": 8, "PAD": 0, "SW_VEC": 1, "PER_PHASE": 1, "MAX_PHASE": 1}
# the layout's constants ``legal`` and ``layout`` read with a default (a candidate may leave them out) ...
_OPTIONAL = {"PAD": 0, "SW_VEC": 1, "PER_PHASE": 1, "MAX_PHASE": 1}
# ... and the constants they read without one: what ``legal_preamble`` asks to be given
_REQUIRED = tuple(k for k in SPACE if k not in _OPTIONAL)
BASELINE_TL = {"BM": 64, "BN": 64, "WARPS": 8}  # tl.trans baseline (hardware README: 64 blocks / 8 warps)

_SMEM_BUDGET = get_arch("sm_90").smem_per_block


def _eb(dtype: str) -> int:
    return DTYPE_BYTES[dtype]


def textbook(shape: tuple[int, ...], dtype: str) -> dict[str, int]:
    """The +1-word pad of the CUDA classic, made legal for 16-byte vectors: pad one vector.

    Tile 64x64 for 4- and 8-byte types, 128x128 for narrower ones (one pass of 8 warps needs it).
    """
    vec = max(1, 16 // _eb(dtype))
    tile = 64 if _eb(dtype) >= 4 else 128
    return {**DEFAULTS, "BM": tile, "BN": tile, "VEC": vec, "PAD": vec}


def _tpw(extent: int, vec: int) -> int:
    """Threads along the contiguous dimension: as many as fill ``extent`` with ``vec`` each, at most 32."""
    return max(1, min(32, extent // vec))


def pack(dtype: str) -> int:
    """Columns each thread reads back together: enough narrow elements to fill one 4-byte bank word.

    A column read of a row-major tile is one element per ``ld.shared``; for 1- and 2-byte types that
    wastes most of each bank access (and issues 16 or 8 loads per 16-byte output vector), so the
    read-back layout gives each thread ``4 // elem_bytes`` neighbouring columns: one 4-byte load fetches
    them, and the thread then stores ``pack`` output rows of ``VEC`` elements each.
    """
    return max(1, 4 // DTYPE_BYTES[dtype])


def register_layouts(c: dict[str, int], dtype: str = "float32") -> tuple[Blocked, Blocked]:
    """(load layout, read-back layout): rows of VEC along N, then VEC x pack blocks along M."""
    return _register_layouts(c["BM"], c["BN"], c["VEC"], c["WARPS"], pack(dtype))


@lru_cache(maxsize=1024)
def _register_layouts(bm: int, bn: int, vec: int, warps: int, w: int) -> tuple[Blocked, Blocked]:
    tn, tm = _tpw(bn, vec), _tpw(bm, vec)
    lin = Blocked((1, vec), (32 // tn, tn), (warps, 1), (1, 0))
    lout = Blocked((vec, w), (tm, 32 // tm), (1, warps), (0, 1))
    return lin, lout


def layout(c: dict[str, int], dtype: str) -> Padded | Swizzled:
    """The tile's shared layout: Padded when PAD > 0, else Swizzled (MAX_PHASE 1 = plain row-major)."""
    return _layout(
        c["BM"], c["BN"], _eb(dtype), *(c.get(k, d) for k, d in _OPTIONAL.items())
    )  # fmt: skip


@lru_cache(maxsize=4096)
def _layout(
    bm: int, bn: int, eb: int, pad: int, sw_vec: int, per_phase: int, max_phase: int
) -> Padded | Swizzled:
    """One layout object per parameter set: the tuner asks for the same few hundred thousands of times, and
    the scorer then sees the candidates that share one as one layout."""
    if pad:
        return Padded(bm, bn, eb, pad=pad)
    return Swizzled(bm, bn, eb, sw_vec=sw_vec, per_phase=per_phase, max_phase=max_phase)


def legal(spec: Any, c: dict[str, int], shape: tuple[int, ...], dtype: str) -> Legality:
    """One predicate for enumerator, model and benchmark: a candidate that fails here is never built
    (``spec``: the TransposeGluon whose ``legal_preamble`` checks the constants and dtype first)."""
    ok = spec.legal_preamble(c, None, dtype, _REQUIRED)  # the shape as the kernel takes it, below
    if not ok:
        return ok
    if len(shape) not in (2, 3) or min(shape) < 1:
        return Legality(False, f"shape {shape} is not [M, N] or [B, M, N]")
    eb, vec, bm, bn = _eb(dtype), c["VEC"], c["BM"], c["BN"]
    if vec * eb > 16:
        return Legality(False, f"VEC {vec} x {eb} bytes exceeds a 16-byte access")
    if bm % vec or bn % vec:
        return Legality(False, f"tile {bm}x{bn} is not a whole number of {vec}-element vectors")
    tn, tm, w = _tpw(bn, vec), _tpw(bm, vec), pack(dtype)
    if (32 // tn) * c["WARPS"] > bm or w * (32 // tm) * c["WARPS"] > bn:
        return Legality(False, f"tile {bm}x{bn} is smaller than one pass of {c['WARPS']} warps: replication")
    pad, sv, pp, mp = (c.get(k, d) for k, d in _OPTIONAL.items())
    if pad and mp > 1:
        return Legality(False, "padding and swizzle together: pick one")
    if _miscompiled(bm, bn, vec, c["WARPS"], eb, sv, pp, mp):
        return Legality(
            False,
            f"a {bm}x{bn} tile of 1-byte elements at VEC 1 and 4 warps under SW_VEC 4, PER_PHASE 1, "
            f"MAX_PHASE {mp}: Triton 3.6 compiles its shared store past the tile's end (an illegal address)",
        )
    if mp == 1 and (sv, pp) != (1, 1):
        return Legality(False, "SW_VEC / PER_PHASE without a swizzle (MAX_PHASE 1): duplicate of unswizzled")
    if pad and pad & (pad - 1):
        return Legality(False, f"PAD {pad}: Gluon padded layouts need a power-of-two padding")
    return _layout_check(c, dtype)


def _miscompiled(bm: Any, bn: Any, vec: Any, warps: Any, eb: int, sv: Any, pp: Any, mp: Any) -> Any:
    """The builds Triton 3.6 miscompiles (scalars or arrays): a 128 x 128 tile of 1-byte elements at VEC 1
    and 4 warps, swizzled with SW_VEC 4, PER_PHASE 1 and MAX_PHASE 8 or more, stores into shared memory past
    the tile's end (compute-sanitizer: a 1-byte shared write at 0x4400 of a 0x4000-byte tile) and faults
    with an illegal address, which poisons the CUDA context. H100 run 203 found it (int8 4100 x 2050, every
    one of 2,544 candidates built: these 3 alone faulted); run 204 built 162 1-byte swizzled candidates
    around them, int8 and fp8, each in its own process on four shapes (4100 x 2050, 4096², [3, 1000, 2000],
    128²): these 6 faulted on every shape, the other 156 (MAX_PHASE 2 or 4, other SW_VEC or PER_PHASE,
    8 warps, VEC 2, 64 x 128 and 128 x 64 tiles) matched torch. Our model of the layout addresses the
    tile correctly, so the rule is the compiler's, kept as measured: nothing wider is refused."""
    return (
        (eb == 1) & (bm == 128) & (bn == 128) & (vec == 1) & (warps == 4) & (sv == 4) & (pp == 1) & (mp >= 8)
    )


def smem_pattern(c: dict[str, int], dtype: str) -> Moves:
    """Shared instructions of one block over one tile: the row-major store, then the column read (a
    ``gluon_model.Moves``: iterates as Instructions; candidates with equal moves share one object)."""
    lay = layout(c, dtype)
    lin, lout = register_layouts(c, dtype)
    shape = (c["BM"], c["BN"])
    return moves((lin, shape, lay, "store"), (lout, shape, lay, "load"))


def _layout_check(c: dict[str, int], dtype: str) -> Legality:
    """``legal``'s last step: the layout builds, keeps the stores' vectors whole and fits the budget."""
    try:
        lay = layout(c, dtype)
    except ValueError as e:
        return Legality(False, str(e))
    # the row-major store writes VEC-element vectors: padding must keep every row's vectors aligned
    # (pad % VEC != 0 faults with "misaligned address" on sm_90); a swizzle chunk must hold whole vectors
    ok = lay.check(c["VEC"], _SMEM_BUDGET)
    if not ok:
        return ok
    # ... and the read-back loads ``pack`` neighbouring columns of a row as one 4-byte word: Triton 3.6
    # lowers it to ld.shared.v2.b16 (2-byte types) or ld.shared.b32 (1-byte) on a padded layout whatever
    # the pad, so a pad of fewer than ``pack`` elements' multiple starts every other row (fp16) or three
    # rows in four (int8) off the 4-byte grid: "misaligned address", which poisons the CUDA context (H100
    # run 192: every fp16 PAD 1 candidate of the 8192^2 study faulted, 12 of 12; PAD 2, 4, 8, 16 ran
    # correct). A swizzled layout is safe: there the compiler splits the read into 2-byte loads.
    w = pack(dtype)
    if isinstance(lay, Padded) and lay.pad % w:
        return Legality(
            False,
            f"padding of {lay.pad} {dtype} elements is not a multiple of {w}: the read-back loads {w} "
            f"neighbouring columns as one 4-byte word, which rows after the first would start misaligned",
        )
    return ok


def legal_batch(spec: Any, columns: dict[str, np.ndarray], shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """``legal`` of many candidates at once (``columns``: constant -> int array), the same answer row for
    row: its arithmetic checks as array expressions, the layout's own check once per distinct layout and
    vector width, on the candidates that reach it."""
    refused = spec.legal_batch_preamble(columns, None, dtype, _REQUIRED)  # as ``legal``
    if refused is not None:
        return refused
    if len(shape) not in (2, 3) or min(shape) < 1:  # ``legal``'s own shape check
        return np.zeros(batch_rows(columns), dtype=bool)
    c = batch_columns(columns, SPACE, _OPTIONAL, dtype=np.int64)  # the layout's constants: their defaults
    eb, w = _eb(dtype), pack(dtype)
    vec, bm, bn, warps = c["VEC"], c["BM"], c["BN"], c["WARPS"]
    pad, mp, sv, pp = c["PAD"], c["MAX_PHASE"], c["SW_VEC"], c["PER_PHASE"]
    ok = (vec > 0) & (vec * eb <= 16)
    v = np.where(ok, vec, 1)  # (only keeps the divisions defined where a check already failed)
    ok &= (bm % v == 0) & (bn % v == 0)
    tn, tm = np.clip(bn // v, 1, 32), np.clip(bm // v, 1, 32)  # _tpw
    ok &= ((32 // tn) * warps <= bm) & (w * (32 // tm) * warps <= bn)  # one pass of the warps fits
    ok &= ~((pad != 0) & (mp > 1)) & ~((mp == 1) & ((sv != 1) | (pp != 1)))
    ok &= ~_miscompiled(bm, bn, vec, warps, eb, sv, pp, mp)
    ok &= (pad == 0) | (pad & (pad - 1) == 0)  # a power-of-two padding
    at = np.flatnonzero(ok)
    if len(at):
        sub = {k: x[at] for k, x in c.items()}
        rows, which = per_distinct(sub, ("BM", "BN", "VEC", *LAYOUT_KEYS))
        ok[at] = np.array([bool(_layout_check(r, dtype)) for r in rows], dtype=bool)[which]
    return ok


class _Base:
    """``launch_info`` without the spill (which reads the layout too), and ``smem_bytes``: for
    ``batched_info``."""

    @staticmethod
    def launch_info(c: dict[str, int], shape: tuple[int, ...], dtype: str) -> dict[str, float]:
        return _base_info(c, shape, dtype)

    @staticmethod
    def smem_bytes(c: dict[str, int], dtype: str) -> int:
        return smem_bytes(c, dtype)


def launch_info_batch(columns: dict[str, np.ndarray], shape: tuple[int, ...], dtype: str) -> dict:
    """``launch_info`` of many candidates at once, as a dict of arrays: once per distinct tile and warps,
    the footprint once per distinct layout, the spill once per distinct build (tile, warps, VEC, layout)."""
    reads, tile = ("BM", "BN", "VEC", "WARPS"), ("BM", "BN", *LAYOUT_KEYS)
    out = batched_info(_Base, columns, shape, dtype, reads, tile)
    c = batch_columns(columns, SPACE, _OPTIONAL, dtype=np.int64)
    rows, at = per_distinct(c, ("BM", "BN", "VEC", "WARPS", *LAYOUT_KEYS))
    stack = np.array([_stack(r, shape, dtype) for r in rows], dtype=np.float64)[at]
    threads, blocks = (np.asarray(out[k], dtype=np.float64) for k in ("threads", "blocks"))
    out["l2_bytes"] = np.asarray(out["l2_bytes"], dtype=np.float64) + 2.0 * stack * threads * blocks
    return out


def _mnb(shape: tuple[int, ...]) -> tuple[int, int, int]:
    return (1, *shape) if len(shape) == 2 else tuple(shape)  # type: ignore[return-value]


def launch_info(c: dict[str, int], shape: tuple[int, ...], dtype: str) -> dict[str, float]:
    """Blocks, threads, shared bytes and ``l2_bytes`` (``_base_info``), and where the build spills, its stack
    bytes written and read back once a tile, through L1 to L2 (``_stack``)."""
    info = _base_info(c, shape, dtype)
    info["l2_bytes"] += 2.0 * _stack(c, shape, dtype) * info["threads"] * info["blocks"]
    return info


def _stack(c: dict[str, int], shape: tuple[int, ...], dtype: str) -> int:
    """Stack bytes a thread of the build (``transpose_spills.stack_bytes``: read off the compiled build),
    which every tile writes and reads back through L1 to L2 (``launch_info`` charges 2 x stack x threads x
    blocks, as the GEMM's PATH 1 charges its spills: matmul_model.py). H200 run 212 (every candidate of the
    eleven shapes of runs 201-206 timed, none in fp64): the spilling builds, 128 x 128 tiles of 1- and
    2-byte elements on 4 warps, read 0.4-0.95 slower in log than the model said without that traffic."""
    _b, m, n = _mnb(shape)
    return stack_bytes(c, DTYPE_BYTES[dtype], m % 16 == 0 and n % 16 == 0)


def _base_info(c: dict[str, int], shape: tuple[int, ...], dtype: str) -> dict[str, float]:
    """Blocks, threads, shared bytes and ``l2_bytes`` without the spill.

    ``l2_bytes``: the tile's reads (each sector of the input once: a narrow load's repeats of a sector hit
    L1) and its writes, every warp store's sectors sent to L2 (``store_sectors``: stores are not merged on
    the way, so a row Triton cannot prove aligned, written one element a lane with the lanes ``VEC``
    elements apart, moves several sectors for each one of data), and the sectors two blocks both write
    (``shared_sectors``). H100 runs 201-202 (fp16, every candidate of the space timed): at 3 x 1000 x 2000
    (rows of y 1000 long, off the 16-element grid) the median time over the best rose with the store
    ratio, 1.12 / 1.27 / 1.48 / 2.06 / 2.86 / 3.84x at 1.25 / 2.5 / 4.25 / 5 / 8.5 / 10 sectors a sector;
    without it the model ranked that space at Spearman 0.19 (4097 x 8191: -0.03), with it 0.83 (0.69).

    Not stated: ``inflight_bytes`` (the predictor's default, 0.8 of the tile a block, stands). Twice the
    tile (its loads, then its stores draining) was chosen on runs 201-203 (Spearman 0.66-0.86 -> 0.70-0.86,
    no pick moved) and failed held out (run 206: picks 1.026 / 1.031 -> 1.178 / 1.233 of the best at fp16
    3000 x 5001 and fp32 2050 x 3333), so it was taken out again.
    """
    b, m, n = _mnb(shape)
    eb = _eb(dtype)
    half = b * m * n * eb
    return {
        "blocks": -(-m // c["BM"]) * -(-n // c["BN"]) * b,
        "threads": 32 * c["WARPS"],
        "smem_bytes": smem_bytes(c, dtype),
        "tiles_per_block": 1,
        # a partial round costs the memory streams its blocks' share (H100 run 211 and H200 run 212: three
        # Gluon builds on ladders of 0.5-3.25 rounds, step share -0.00..+0.09; the blocks' share rather than
        # the busiest SM's since H100 runs 217-218, predict.py)
        "partial_memory_rounds": 1,
        # the tile's loads are its reads; its stores drain behind the block (H100 run 214, ncu: the knee of
        # the bytes in flight on the stores too had put 32 x 32 tiles far below their measured speed)
        "read_bytes": half,
        "l2_bytes": half
        * (1.0 + store_sectors(c, shape, dtype) + shared_sectors(shape, c["BM"], c["BN"], eb)),
    }


def store_sectors(c: dict[str, int], shape: tuple[int, ...], dtype: str) -> float:
    """32-byte sectors the output tile's warp stores touch, per sector of data they write. The read-back
    layout holds ``VEC`` consecutive elements of an output row (y [N, M], M contiguous) per thread; Triton
    stores them as one vector of up to 16 bytes where it can prove the rows aligned (M a multiple of 16
    elements: it specialises integer arguments on that), else one element at a time, so a warp's store
    then covers its lanes' i-th elements, ``VEC`` elements apart. Rows start ``M x elem_bytes`` mod 32
    bytes apart, so the count is over the tile's rows as they fall on the sector grid."""
    b, m, n = _mnb(shape)
    eb = _eb(dtype)
    _lin, lout = register_layouts(c, dtype)
    return _sectors_per_sector(lout, c["BM"], c["BN"], (m * eb) % 32, eb, m % 16 == 0)


def shared_sectors(shape: tuple[int, ...], bm: int, bn: int, eb: int) -> float:
    """Sectors more than one block writes, per sector of output: over the blocks, the 32-byte sectors each
    one touches, less the output's own. A block writes BM elements of each of BN output rows (y [N, M]); a
    row segment starting off the sector grid shares its first sector with the block that wrote what lies
    before it (the previous segment of its row, or the end of the row before). Where a row fits in one
    tile (M <= BM) a block's rows are contiguous, so only its first and last sector can be shared.

    Measured, not derived (H100 runs 201-203): on rows off the grid the time falls with BM at every vector
    width, VEC 1 included (4097 x 8191 fp16, VEC 1, BN 64, 4 warps: BM 32 1.34x the best, BM 64 1.20x,
    BM 128 1.02x), where the sectors each warp store touches (``store_sectors``, which counts these sectors
    too, once a store) are the same for every BM. Charged as one more sector written for each, the
    model-only picks of the seven studies went 1.02-1.29x the best (4 of 7 within 10%) -> 1.02-1.07x (7 of
    7), chosen on those studies; held out on four more (run 206) it moved no pick (1.026 / 1.185 / 1.031 /
    1.087 -> 1.026 / 1.185 / 1.031 / 1.091) and Spearman by -0.04 to +0.03 (NOTES, thirty-fourth session).
    """
    b, m, n = _mnb(shape)
    return _shared_sectors(b, n, m, bm, bn, eb)


@lru_cache(maxsize=1024)
def _shared_sectors(b: int, n: int, m: int, bm: int, bn: int, eb: int) -> float:
    row = m * eb  # bytes an output row
    if row < 32:  # rows shorter than a sector: count it row by row
        return _shared_sectors_rows(b, n, m, bm, bn, eb)
    period = 32 // math.gcd(row, 32)  # row r starts r x row bytes in: the same offset every ``period`` rows
    # batches by the residue of their first row, and the blocks' runs of rows within a batch: (the residue
    # of the run's first row, its rows) -> how many such runs a batch has
    few = np.arange(min(b, period))  # (batch i starts on residue i x n; the same every ``period`` batches)
    batches = np.bincount((few * n) % period, weights=b // period + (few < b % period), minlength=period)
    first = np.arange(0, n, bn)
    runs = Counter(zip((first % period).tolist(), np.minimum(bn, n - first).tolist()))

    def at(shift: int) -> np.ndarray:  # rows on each residue t, one a batch, ``shift`` rows into it
        return np.roll(batches, shift)

    def touched(start: Any, length: Any) -> Any:  # sectors of [start, start + length)
        return (start + length - 1) // 32 - start // 32 + 1

    t = np.arange(period)
    if -(-m // bm) == 1:  # a block's rows are one contiguous run of (its rows x row) bytes
        total = sum(float((touched((t * row) % 32, r * row) * at(f)).sum()) * k for (f, r), k in runs.items())
    else:  # each segment apart, less the sector a segment shares with its block's next row's segment
        lo = np.arange(0, m, bm)
        seg = (np.minimum(m, lo + bm) - lo) * eb
        start = (t[:, None] * row) % 32 + lo[None, :] * eb
        per_row = touched(start, seg[None, :]).sum(axis=1)  # sectors of a row on each residue
        joined = ((start + seg - 1) // 32 == (start + row) // 32).sum(axis=1)  # ... shared with the next
        # rows on each residue (every row of every batch), less the last row of each run: those with a
        # next row in their block
        rows_at = (b * n) // period + (t < (b * n) % period)
        last_at = sum(k * at((f + r - 1) % period) for (f, r), k in runs.items())
        total = float((per_row * rows_at).sum() - (joined * (rows_at - last_at)).sum())
    nbytes = b * n * row
    return (total - -(-nbytes // 32)) / (nbytes / 32)


def _shared_sectors_rows(b: int, n: int, m: int, bm: int, bn: int, eb: int) -> float:
    """``_shared_sectors`` for rows under 32 bytes, by listing each block's segments: every row up to 2**16
    of them, else the first 2**16 as a sample (such rows are a few elements long; nothing is timed there)."""
    rows = min(b * n, 1 << 16)
    r = np.arange(rows)[:, None]
    lo = np.arange(0, m, bm)[None, :]
    s = (r * m + lo) * eb // 32
    e = ((r * m + np.minimum(m, lo + bm)) * eb - 1) // 32
    block = ((r // n) * -(-n // bn) + (r % n) // bn) * lo.shape[1] + np.arange(lo.shape[1])[None, :]
    pairs = np.unique(np.concatenate([np.stack([block.ravel(), k.ravel()], 1) for k in (s, e)]), axis=0)
    # a segment under 32 bytes touches at most two sectors, its first and last: those pairs are all
    nbytes = rows * m * eb
    return (len(pairs) - -(-nbytes // 32)) / (nbytes / 32)


@lru_cache(maxsize=4096)
def _sectors_per_sector(lout: Blocked, bm: int, bn: int, offset: int, eb: int, aligned: bool) -> float:
    # the read-back layout over [BM, BN] holds output rows along its first dimension: transposed, the
    # output tile [BN, BM] row-major, as ``_arrays`` takes a layout (vectors along the second dimension)
    t = Blocked(lout.size_per_thread[::-1], lout.threads_per_warp[::-1], lout.warps_per_cta[::-1], (1, 0))
    rows, cols, _starts, elems = _arrays(t, (bn, bm), max(1, 16 // eb) if aligned else 1)
    # byte addresses with a row stride of ``offset`` mod 32 (rows far enough apart not to share a sector)
    addr = rows.astype(np.int64) * (offset + 32 * 4096) + cols.astype(np.int64) * eb
    ends = addr + elems * eb - 1  # a vector of at most 16 bytes spans at most two sectors
    touched = np.sort(np.concatenate([addr // 32, ends // 32], axis=1), axis=1)
    sectors = 1 + (np.diff(touched, axis=1) != 0).sum(axis=1)  # distinct sectors per warp store
    return float(sectors.mean() * 32 / (32 * elems * eb))


def smem_bytes(c: dict[str, int], dtype: str) -> int:
    """Bytes Triton allocates: the layout's footprint less the last row's trailing pad (never addressed)."""
    lay = layout(c, dtype)
    return lay.footprint - (lay.pad * lay.elem_bytes if isinstance(lay, Padded) else 0)


def traffic(shape: tuple[int, ...], dtype: str) -> dict[str, int]:
    b, m, n = _mnb(shape)
    return {"bytes": 2 * b * m * n * _eb(dtype), "flops": 0}
