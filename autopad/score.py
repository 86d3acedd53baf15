"""Score candidates with the bank-conflict model: wavefronts per tile of each (pattern, layout) pair.

A unit is a pattern (one block's shared-memory instructions for one tile, ``smem_pattern``) under a layout;
its cost is the sum over the instructions of count x the model's cost of the instruction's byte addresses.
Three observations make a space of thousands of units cheap:

* A uniform shift of every lane by whole 4-byte words rotates the banks and moves every word alike, so it
  cannot change a conflict. A tile layout repeats up to such a shift every ``_periods`` rows and columns
  (one row for padding, ``per_phase * max_phase`` rows for an XOR swizzle, stretched until the shift is
  whole words), so an instruction moved towards (0, 0) by whole periods costs what it did. Its *content*
  is then its kind (op, width), its shape (lanes relative to its lowest row and column) and that lowest
  row and column within one period: the CUDA transpose in fp32 has 5,700 units of 290 instructions each,
  but 3,100 contents. Patterns repeat each other's instructions (one tile walk under other layouts'
  vector widths, prefixes of one sample), so each distinct instruction's shape is worked out once, and
  its content per period (fp16: 31,000 instructions, 4,600 distinct).
* Units that share a pattern and a period (a *block*) share their contents: they are worked out per
  block, and only then spread over the units, as (content, layout) pairs, where tile layouts of one
  formula (the same row stride, swizzle and element size: tiles of other row counts) are one layout: the
  CUDA transpose in fp32 has half a million unit instructions, 184,000 distinct pairs per layout object
  and 113,000 per formula. Each pair's addresses come from the one tile formula (layouts.py), for all
  tile layouts at once, and for layouts of tiles stacked by rows (``tile_parts``: the SIMT GEMM's A and
  B operand tiles in one buffer) part by part, where every active lane of the instruction lies in one
  part (the fp32 GEMM: 0.25 s less than each layout's own ``offsets`` table); such a pair is (content,
  the part's formula, first row and byte base), shared by every layout with that part (the fp32 GEMM:
  161,000 pairs of 1,056 layouts -> 22,000, 0.1 s less).
* The model scores each distinct address row once (``model.analyze_distinct``: rows equal after moving by
  whole turns of the banks, 128 bytes, are one): 13,000 rows for the transpose, which numpy scores in a
  few tens of milliseconds (numba loads only for more).

A unit's score does not depend on the problem's shape, so it is kept for the rest of the process.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .arch import Arch
from .distinct import _groups
from .model import analyze_distinct, row_hashes
from .model import distinct_rows as model_distinct_rows
from .spec import KernelSpec, SpecError, combine_codes, value_ranks
from .tile_addresses import _extent, _part_rows, _parts, _tile_addresses, _tile_params

__all__ = ["score_candidates"]

_CHECK_ROWS = 1 << 9  # instructions checked against their hash's first at a time (temporaries below
# 128 KB: larger ones are fresh pages from the system at each block, early in a process)
_CHUNK_INSTRUCTIONS = 1 << 17  # pattern instructions scored together (bounds memory: 0.26 GB peak for the
# CUDA histogram, whose 86,000 instructions in one chunk instead of two rank 0.2 s sooner)


def _periods(layout: Any) -> tuple[int, int] | None:
    """(rows, cols) after which the layout repeats up to a uniform byte shift, or None when unknown.

    Padded rows shift by ``row_stride`` every row and by one element every column; an XOR swizzle's
    pattern repeats every ``per_phase * max_phase`` rows and every ``sw_vec * max_phase`` columns (the XOR
    touches only the chunk index's low bits). A uniform shift of every lane moves them all by the same
    number of banks (or whole bank turns), which cannot change a conflict, so instructions that differ only
    by such a shift cost the same. The shift must also be whole 4-byte words: 2-byte elements in rows of
    odd length would move lanes between words, so the periods are stretched until the shift is.
    """
    rp = getattr(layout, "row_period", None)
    if isinstance(rp, tuple) and len(rp) == 2:
        return rp
    if not all(hasattr(layout, a) for a in ("row_stride", "per_phase", "max_phase", "sw_vec", "elem_bytes")):
        return None
    e, m = int(layout.elem_bytes), int(layout.max_phase)
    p = int(layout.per_phase) * m if m > 1 else 1
    q = int(layout.sw_vec) * m if m > 1 else 1
    p *= 4 // math.gcd(p * int(layout.row_stride) * e, 4)
    q *= 4 // math.gcd(q * e, 4)
    return p, q


def _stacked(pattern: Any, warp: int) -> list[tuple[str, int, np.ndarray, np.ndarray, np.ndarray]]:
    """A pattern as (op, width, rows (n, warp), cols (n, warp), counts (n,)) groups."""
    if hasattr(pattern, "groups"):  # already stacked
        return [(op, w, np.asarray(r, np.int64), np.asarray(c, np.int64), np.asarray(k, np.int64))
                for op, w, r, c, k in pattern.groups]  # fmt: skip
    groups: dict[tuple[str, int], list[Any]] = {}
    for ins in pattern:
        groups.setdefault((ins.op, ins.access_bytes), []).append(ins)
    out = []
    for (op, width), items in groups.items():
        for ins in items:
            if len(ins.rows) != warp:
                raise SpecError(
                    f"smem_pattern: instruction {ins.name!r} has {len(ins.rows)} lanes; warps have {warp}"
                )
        rows = np.stack([i.rows for i in items]).astype(np.int64, copy=False)
        cols = np.stack([i.cols for i in items]).astype(np.int64, copy=False)
        counts = np.array([i.count for i in items], dtype=np.int64)
        out.append((op, width, rows, cols, counts))
    return out


def _reach(rows: np.ndarray, cols: np.ndarray) -> tuple[int, int, int]:
    """(highest row, lowest column, highest column) that the active lanes touch ((-1, 0, -1) for none)."""
    top = int(rows.max(initial=-1))
    if top < 0:
        return -1, 0, -1
    c = cols if int(rows.min()) >= 0 else cols[rows >= 0]  # every lane active: no mask to apply
    return top, int(c.min()), int(c.max())


def _tile_dims(layout: Any) -> tuple[int, int] | None:
    """(rows, cols) of a layout whose tile a pattern must stay inside (``_check_bounds``), else None."""
    lr, lc = getattr(layout, "rows", None), getattr(layout, "cols", None)
    if not isinstance(lr, int) or not isinstance(lc, int) or not hasattr(layout, "row_stride"):
        return None
    return lr, lc


def _check_bounds(name: str, layout: Any, rows: np.ndarray, cols: np.ndarray) -> None:
    """A pattern that reaches outside its layout's tile is a spec mistake, not a layout to score."""
    lr, lc = getattr(layout, "rows", None), getattr(layout, "cols", None)
    if not isinstance(lr, int) or not isinstance(lc, int) or not hasattr(layout, "row_stride"):
        return
    active = rows >= 0
    bad = active & ((rows >= lr) | (cols < 0) | (cols >= lc))
    if bad.any():
        i, lane = np.argwhere(bad)[0]
        raise SpecError(
            f"smem_pattern: {name}: lane {lane} of an instruction touches (row {rows[i, lane]}, col "
            f"{cols[i, lane]}), outside the layout's {lr} x {lc} tile"
        )


class _PerLayout(dict):
    """A layout's periods or tile parameters, computed once per distinct layout (``fn`` on a miss)."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        super().__init__()
        self.fn = fn

    def of(self, layout: Any) -> Any:
        try:
            return self[layout] if layout in self else self.setdefault(layout, self.fn(layout))
        except TypeError:  # unhashable
            return self.fn(layout)


# (spec, dtype, dist, arch) -> (pattern memo, layout) -> score
_UNIT_SCORES: dict[tuple, dict[tuple, tuple[int, int]]] = {}
_UNIT_SCORES_MAX = 1 << 19


def _spec_id(spec: KernelSpec) -> tuple:
    from .kernels_registry import source_hash

    return (spec.NAME, spec.BACKEND, source_hash(spec))


def _ids(code: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """(each entry's distinct index, in the codes' order; one entry holding each distinct code) of codes
    in [0, size): marks in a table of ``size`` where that is small (no sort), else one sort of the codes
    each packed with its entry's index where that fits in 63 bits (a sort of values: several times faster
    than ``np.unique``'s argsort, or than looking each code up in the sorted distinct ones), else
    ``np.unique``. The distinct indices follow the codes' order in every case."""
    bits = max(1, (len(code) - 1).bit_length())
    if size <= max(8 * len(code), 1 << 22):
        seen = np.zeros(size, dtype=bool)
        seen[code] = True
        ids = (np.cumsum(seen, dtype=np.int32) - 1)[code]
        count = int(seen.sum())
    elif size < 1 << (62 - bits):
        sk = code << bits  # (in place from here: every fresh page costs early in a process)
        sk |= np.arange(len(code))
        sk.sort()
        order = sk & ((1 << bits) - 1)
        sk >>= bits
        new = np.empty(len(sk), dtype=bool)
        new[:1] = True
        np.not_equal(sk[1:], sk[:-1], out=new[1:])
        del sk
        run = np.cumsum(new)
        run -= 1
        ids = np.empty(len(code), dtype=np.int64)
        ids[order] = run
        count = int(ids[order[-1]]) + 1 if len(code) else 0
    else:
        uniq, ids = np.unique(code, return_inverse=True)
        ids, count = ids.ravel(), len(uniq)
    rep = np.empty(count, dtype=np.int64)
    rep[ids] = np.arange(len(code))
    return ids, rep


def score_candidates(
    spec: KernelSpec,
    consts: Sequence[Mapping[str, int]],
    layouts: Sequence[Any],
    dtype: str,
    dist: str | None,
    arch: Arch,
    memos: Sequence[tuple] | None = None,
    units: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Wavefronts and ideal wavefronts per tile of every candidate, in one model call per access width
    (``memos``: each candidate's ``PATTERN_KEYS`` values where the caller has them; ``units``: with them,
    one int per candidate, equal exactly where its memo and layout object are, so that the memos are read
    at each unit's first candidate only).

    A unit is a (pattern, layout) pair; its cost is the sum over the pattern's instructions of count x the
    model's cost of the instruction's addresses. An instruction is first moved towards (0, 0) by whole
    periods of the layout (``_periods``: a uniform shift, which cannot change its cost): its *content* is
    then its shape (lanes relative to its lowest row and column) and that offset within one period. A
    space of thousands of units holds a few thousand contents and a few hundred layouts, so addresses are
    computed once per distinct (content, layout) pair (the CUDA transpose in fp32: 112,000 of them for
    half a million unit instructions), and the model sees each distinct address row once.

    A unit's score does not depend on the problem's shape, so it is kept for the rest of the process:
    ranking a second shape of the same kernel (the ops' shape policy does) scores nothing new.
    """
    n = len(consts)
    keys = getattr(spec, "PATTERN_KEYS", None)
    sid = _spec_id(spec) + (dtype, dist, arch.name) if keys is not None else None
    if keys is None:
        memos = range(n)  # type: ignore[assignment]
    elif memos is None:
        memos = [tuple(c[k] for k in keys) for c in consts]
    # units: (pattern memo, layout object), numbered in order of first appearance; each candidate's unit,
    # each unit's first candidate and memo
    if units is not None and keys is not None and n:
        _, firsts, inverse = np.unique(units, return_index=True, return_inverse=True)
        order = np.argsort(firsts)
        renumber = np.empty(len(order), dtype=np.int64)
        renumber[order] = np.arange(len(order))
        unit_of, first = renumber[inverse.ravel()], firsts[order]
        take = getattr(memos, "take", None)
        unit_memos = take(first) if callable(take) else [memos[i] for i in first.tolist()]
    else:
        at: dict[tuple[Any, int], int] = {}
        unit_of = np.fromiter(
            (at.setdefault(key, len(at)) for key in zip(memos, map(id, layouts))), dtype=np.int64, count=n
        )
        first = np.empty(len(at), dtype=np.int64)
        first[unit_of[::-1]] = np.arange(n - 1, -1, -1)
        unit_memos = [memo for memo, _ in at]
    wave_u = np.zeros(len(first), dtype=np.int64)
    ideal_u = np.zeros(len(first), dtype=np.int64)
    # kept per spec (sid), then per (memo, layout): one small key per unit, not the spec's parts in each
    kept = _UNIT_SCORES.setdefault(sid, {}) if sid is not None else None
    keys: list[Any] = []
    if kept is not None:
        # the kept keys share one tuple per distinct memo (the fp16 transpose: 7,800 units of 143 patterns),
        # fewer objects left for the cyclic collector's first pass after the ranking
        try:
            one: dict[Any, Any] = {}
            shared = list(map(one.setdefault, unit_memos, unit_memos))
        except TypeError:  # an unhashable memo: looked up alone below
            shared = list(unit_memos)
        keys = list(zip(shared, map(layouts.__getitem__, first.tolist())))
        try:
            # nothing kept yet for the spec (a process's first ranking of it): no unit to look up
            hits = list(map(kept.get, keys)) if kept else [None] * len(keys)
        except TypeError:  # an unhashable layout: look each up alone
            hits = []
            for j, key in enumerate(keys):
                try:
                    hits.append(kept.get(key))
                except TypeError:
                    keys[j] = None
                    hits.append(None)
        todo = [u for u, hit in enumerate(hits) if hit is None]
        if len(todo) < len(hits):
            got = np.array([hit for hit in hits if hit is not None], dtype=np.int64).reshape(-1, 2)
            done = np.array([hit is not None for hit in hits])
            wave_u[done], ideal_u[done] = got[:, 0], got[:, 1]
    else:
        todo = list(range(len(first)))
    if todo:
        w, d = _score_units(
            spec, [unit_memos[u] for u in todo], first[todo].tolist(), consts, layouts, dtype, dist, arch
        )
        wave_u[todo], ideal_u[todo] = w, d
        if kept is not None:
            if sum(map(len, _UNIT_SCORES.values())) + len(todo) > _UNIT_SCORES_MAX:
                kept.clear()
                _UNIT_SCORES.clear()
                _UNIT_SCORES[sid] = kept
            scores: dict[tuple[int, int], tuple[int, int]] = {}  # one tuple per distinct score, as the memos
            pairs = list(zip(w.tolist(), d.tolist()))
            new = list(
                zip(
                    keys if len(todo) == len(keys) else [keys[u] for u in todo],
                    map(scores.setdefault, pairs, pairs),
                )
            )
            try:
                kept.update(new if None not in keys else [(k, v) for k, v in new if k is not None])
            except TypeError:  # an unhashable layout, not looked up (nothing was kept): each one alone
                for key, score in new:
                    try:
                        kept[key] = score
                    except TypeError:
                        pass
    return wave_u[unit_of], ideal_u[unit_of]


def _score_units(
    spec: KernelSpec,
    memos: list[Any],
    reps: list[int],
    consts: Sequence[Mapping[str, int]],
    layouts: Sequence[Any],
    dtype: str,
    dist: str | None,
    arch: Arch,
) -> tuple[np.ndarray, np.ndarray]:
    """(wavefronts, ideal) of each unit, given as its pattern memo and the candidate that stands for it;
    see ``score_candidates``. Each pattern is built once; they are scored some tens of thousands of
    instructions at a time (a spec without ``PATTERN_KEYS`` has a pattern per candidate)."""
    wave, ideal = np.zeros(len(memos), dtype=np.int64), np.zeros(len(memos), dtype=np.int64)
    of_memo: dict[Any, list[int]] = {}
    for u, memo in enumerate(memos):
        of_memo.setdefault(memo, []).append(u)
    todo = list(of_memo.values())
    pats: list[list[tuple[str, int, np.ndarray, np.ndarray, np.ndarray]]] = []
    # a spec may hand out one pattern object to many memos (the Gluon transpose's gluon_model.Moves): each
    # object is stacked once per chunk, and its units share blocks (objects kept alive while their id is)
    held: dict[int, tuple[Any, int]] = {}
    bounds: set[tuple] = set()  # (pattern, the layout's rows, cols, whether a tile) already checked
    reaches: dict[tuple[int, int], tuple[int, int, int]] = {}  # (pattern, group) -> its ``_reach``
    sel: list[int] = []  # the chunk's units
    which: list[int] = []  # each one's pattern, an index into pats
    size = 0
    for j, us in enumerate(todo):
        c, lay = consts[reps[us[0]]], layouts[reps[us[0]]]
        pat = (
            spec.smem_pattern(dict(c), dtype, dist=dist)
            if dist is not None
            else spec.smem_pattern(dict(c), dtype)
        )
        if pat is None:
            raise SpecError(f"smem_pattern: returned None for {dict(c)}; return the block's instructions")
        got = held.get(id(pat))
        if got is None:
            groups = _stacked(pat, arch.warp_size)
            got = held[id(pat)] = (pat, len(pats))
            pats.append(groups)
            size += sum(len(g[2]) for g in groups)
        seen = (id(pat), getattr(lay, "rows", None), getattr(lay, "cols", None), hasattr(lay, "row_stride"))
        if seen not in bounds:
            dims = _tile_dims(lay)
            for g, (_op, _width, r, cc, _k) in enumerate(pats[got[1]] if dims is not None else ()):
                # three numbers per group, kept for the pattern's other layouts; the lanes only on a miss
                reach = reaches.get((got[1], g)) or reaches.setdefault((got[1], g), _reach(r, cc))
                if not (reach[0] < dims[0] and reach[1] >= 0 and reach[2] < dims[1]):  # type: ignore[index]
                    _check_bounds(f"{spec.NAME} {dict(c)}", lay, r, cc)
            bounds.add(seen)
        which += [got[1]] * len(us)
        sel += us
        if size >= _CHUNK_INSTRUCTIONS or j == len(todo) - 1:
            lays = [layouts[reps[u]] for u in sel]
            wave[sel], ideal[sel] = _score_chunk(pats, which, lays, [id(x) for x in lays], arch)
            pats, sel, which, size, held, bounds, reaches = [], [], [], 0, {}, set(), {}
    return wave, ideal


def _score_chunk(
    patterns: list[list[tuple[str, int, np.ndarray, np.ndarray, np.ndarray]]],
    which: list[int],
    unit_layouts: list[Any],
    layout_ids: list[int],
    arch: Arch,
) -> tuple[np.ndarray, np.ndarray]:
    """(wavefronts, ideal) of units given as their pattern (an index into ``patterns``) and layout."""
    # every pattern's instructions, stacked: pattern m holds rows [start[m], end[m])
    parts = [g for groups in patterns for g in groups]
    sizes = [sum(len(g[2]) for g in groups) for groups in patterns]
    end = np.cumsum(sizes, dtype=np.int64)
    start = end - np.array(sizes, dtype=np.int64)
    if not parts:
        return np.zeros(len(which), dtype=np.int64), np.zeros(len(which), dtype=np.int64)
    kinds: dict[tuple[str, int], int] = {}
    kind = np.concatenate([np.full(len(p[2]), kinds.setdefault((p[0], p[1]), len(kinds))) for p in parts])
    # a group of one instruction is left where it is (as a period of None leaves every instruction)
    multi = np.concatenate([np.full(len(p[2]), len(p[2]) > 1) for p in parts])
    rows = np.concatenate([p[2] for p in parts])
    cols = np.concatenate([p[3] for p in parts])  # (an inactive lane's column is never read below)
    counts = np.concatenate([p[4] for p in parts])
    # an instruction recurs across patterns (one tile walk under other layouts' vector widths, prefixes of
    # one sample): each distinct one's lowest active row and column, and its shape (its lanes relative to
    # them), worked out once (the fp16 CUDA transpose: 31,000 instructions, 4,600 distinct)
    uniq, inst_of = _distinct_instructions(kind * 2 + multi, rows, cols)
    u_rows, u_cols = rows[uniq], cols[uniq]
    active = u_rows >= 0
    big = np.iinfo(np.int64).max
    lo_r, lo_c = np.where(active, u_rows, big).min(axis=1), np.where(active, u_cols, big).min(axis=1)
    lo_r, lo_c = np.where(lo_r == big, 0, lo_r), np.where(lo_c == big, 0, lo_c)
    shape_rep, shape_of = model_distinct_rows(
        np.concatenate(
            [np.where(active, u_rows - lo_r[:, None], -1), np.where(active, u_cols - lo_c[:, None], 0)], 1
        )
    )
    n_shapes = len(shape_rep)
    # per unit: its layout (one entry per layout object) and its block: (pattern, the layout's period)
    objs = dict(zip(layout_ids, unit_layouts))  # each layout object, in order of first appearance
    number = dict(zip(objs, range(len(objs))))
    lays: list[Any] = list(objs.values())
    ul_a = np.fromiter(map(number.__getitem__, layout_ids), dtype=np.int64, count=len(layout_ids))
    periods = _PerLayout(_periods)
    per_at: dict[tuple[int, int], int] = {}  # each distinct period, numbered
    per_of = np.array([per_at.setdefault(periods.of(x) or (0, 0), len(per_at)) for x in lays], np.int64)
    # blocks numbered in order of first appearance among the units
    _, firsts, inverse = np.unique(
        np.asarray(which, dtype=np.int64) * len(per_at) + per_of[ul_a], return_index=True, return_inverse=True
    )
    order = np.argsort(firsts)
    renumber = np.empty(len(order), dtype=np.int64)
    renumber[order] = np.arange(len(order))
    ub_a, first_unit = renumber[inverse.ravel()], firsts[order]
    bm = np.asarray(which, dtype=np.int64)[first_unit]
    bp, bq = np.array(list(per_at), dtype=np.int64).reshape(-1, 2)[per_of[ul_a[first_unit]]].T
    # An instruction moved down by whole periods (a group of one instruction stays where it is, as a
    # period of None leaves every instruction) has its lowest row and column within the first period; its
    # content is its class (kind and shape) and that offset, one int64 code. Blocks of one period at a
    # time: the modulus is one number, and the temporaries stay small.
    cls, multi = kind[uniq] * n_shapes + shape_of, multi[uniq]  # (of the distinct instructions)
    r_lo, r_hi = min(0, int(lo_r.min())), max(int(lo_r.max()), int(bp.max()) - 1)
    c_lo, c_hi = min(0, int(lo_c.min())), max(int(lo_c.max()), int(bq.max()) - 1)
    dr_n, dc_n = r_hi - r_lo + 1, c_hi - c_lo + 1
    if len(kinds) * n_shapes * dr_n * dc_n >= 2**62:
        raise SpecError(f"smem_pattern: rows up to {r_hi} and columns up to {c_hi} are beyond any tile")
    sizes = end - start
    by_period: dict[tuple[int, int], list[int]] = {}
    for b, per in enumerate(zip(bp.tolist(), bq.tolist())):
        by_period.setdefault(per, []).append(b)
    got: list[tuple[np.ndarray, ...]] = []  # per period: block, code, count, instruction, dr, dc
    for (pp, qq), blocks in by_period.items():
        # each distinct instruction's offset within the period and its code, then the blocks' instructions
        dr = np.where(multi, lo_r % pp, lo_r) if pp > 0 else lo_r
        dc = np.where(multi, lo_c % qq, lo_c) if qq > 0 else lo_c
        code_of = (cls * dr_n + (dr - r_lo)) * dc_n + (dc - c_lo)
        blocks_a = np.array(blocks, dtype=np.int64)
        b_of, inst = _expand(start[bm[blocks_a]], sizes[bm[blocks_a]])
        u = inst_of[inst]
        code = code_of[u]
        # a block's distinct contents and their counts: the (block, code) keys sorted, each packed with its
        # entry's index where it fits (a sort of values: several times faster than an argsort)
        span, bits = int(code_of.max()) + 1, max(1, (len(code) - 1).bit_length())
        if span * len(blocks) < 2 ** (62 - bits):
            sk = np.sort(((b_of * span + code) << bits) | np.arange(len(code)))
            order = sk & ((1 << bits) - 1)
            sk >>= bits
        elif span * len(blocks) < 2**62:
            key = b_of * span + code
            order = np.argsort(key, kind="stable")
            sk = key[order]
        else:
            sk = None
        if sk is not None:  # counts summed over each run of equal keys
            new = np.empty(len(sk), dtype=bool)
            new[:1] = True
            np.not_equal(sk[1:], sk[:-1], out=new[1:])
            at = np.flatnonzero(new)
            first, count = order[at], np.add.reduceat(counts[inst[order]], at)
        else:
            key = np.stack([b_of, code], axis=1)
            _, first, inv = np.unique(key, axis=0, return_index=True, return_inverse=True)
            count = np.bincount(inv.ravel(), weights=counts[inst], minlength=len(first)).astype(np.int64)
        got.append((blocks_a[b_of[first]], code[first], count))
    # (arrays no longer needed are dropped as the work goes on: the first ranking of a process pays for
    # every fresh page, about 4 us each on the 2-core machine; the fp16 transpose's ranking peaked at 163 MB
    # of arrays, now 108)
    m_block, m_code, m_count = (np.concatenate(x) for x in zip(*got))
    del got
    m_content, crep = _ids(m_code, len(kinds) * n_shapes * dr_n * dc_n)
    # each content's lanes (rows then cols): its shape's, moved to the offset its code holds
    code = m_code[crep]
    c_dr, c_dc = (code // dc_n) % dr_n + r_lo, code % dc_n + c_lo
    kind0, c_shape = np.divmod(code // (dr_n * dc_n), n_shapes)
    u0 = shape_rep[c_shape]  # (a distinct instruction of that shape)
    i0 = uniq[u0]
    act0 = rows[i0] >= 0
    r0 = np.where(act0, rows[i0] - (lo_r[u0] - c_dr)[:, None], -1)
    c0 = np.where(act0, cols[i0] - (lo_c[u0] - c_dc)[:, None], 0)
    del rows, cols, m_code, parts
    # each block's contents are one run (a period's keys sort by block first): where each run starts
    b_len = np.bincount(m_block, minlength=len(bm))
    b_start = np.zeros(len(bm), dtype=np.int64)
    runs = np.flatnonzero(np.concatenate([[True], m_block[1:] != m_block[:-1]]))
    b_start[m_block[runs]] = runs
    del m_block
    # every unit's rows: its block's contents under its layout; distinct (content, layout) pairs
    lens = b_len[ub_a]
    offset = np.cumsum(lens) - lens  # where each unit's run of rows starts
    row = np.repeat(b_start[ub_a] - offset, lens)
    row += np.arange(len(row))  # (``_expand``'s index, without its owners: each unit's layout repeated)
    lay = np.repeat(ul_a, lens)
    # tile layouts with the same formula parameters (tiles of other row counts) give every content the same
    # addresses: a pair is (content, the layout's formula), the formula's first layout standing for it
    prm: list[Any] = [_tile_params(x) for x in lays]
    # layouts of stacked tiles (``_parts``), each as a tuple of parts: addressed part by part below
    parted = [None if p is not None else _parts(x) for x, p in zip(lays, prm)]
    formula: dict[Any, int] = {}
    same = np.array(
        [formula.setdefault(p if p is not None else q if q is not None else j, j)
         for j, (p, q) in enumerate(zip(prm, parted))],
        np.int64,
    )  # fmt: skip
    # formulas numbered densely: the (content, formula) table below is contents x formulas, not x layouts
    forms, form_of = value_ranks(same)
    n_forms = len(forms)
    content, eff, n_eff = m_content[row], form_of[lay], n_forms
    if any(q is not None for q in parted):
        # stacked tiles: where one part of its layout holds every active lane of a content, the pair is
        # (content, the part's tile formula, first row and byte base), whichever layout the part is in
        # (the fp32 GEMM: 161,000 pairs of its 1,056 layouts -> 22,000); else (content, the layout)
        part_params, pid, part_of, combo_of = _part_rows(parted, *_extent(r0, c0))
        hit = part_of[content, combo_of[lay]]
        most = max(len(q) for q in parted if q is not None)
        eff = np.where(hit >= 0, n_forms + pid[lay * most + np.maximum(hit, 0)], eff)
        n_eff += len(part_params)
    pair, prep = _ids(*combine_codes((content, 0, len(crep) - 1), (eff, 0, n_eff - 1)))
    pc, pl, pe = content[prep], lay[prep], eff[prep]
    del content, eff, lay
    # each pair's addresses: formula layouts (tiles, replicated arrays) and parts of stacked tiles all at
    # once, any other layout through its own offsets
    on_tile = np.array([x is not None for x in prm])[pl]
    table = np.array([x if x is not None else (0,) * 6 for x in prm], dtype=np.int64)
    if on_tile.all():
        addr = _tile_addresses(table[pl], r0, c0, pc)
    else:
        addr = np.empty((len(prep), r0.shape[1]), dtype=np.int64)
        at = np.flatnonzero(on_tile)
        addr[at] = _tile_addresses(table[pl[at]], r0, c0, pc[at])
        at = np.flatnonzero(pe >= n_forms)
        if len(at):
            addr[at] = _tile_addresses(part_params[pe[at] - n_forms], r0, c0, pc[at])
        at = np.flatnonzero(~on_tile & (pe < n_forms))
        at = at[np.argsort(pl[at], kind="stable")]
        for run in np.split(at, np.flatnonzero(np.diff(pl[at])) + 1) if len(at) else ():
            addr[run] = np.asarray(lays[int(pl[run[0]])].offsets(r0[pc[run]], c0[pc[run]]), dtype=np.int64)
    cost_w, cost_d = np.empty(len(prep), dtype=np.int64), np.empty(len(prep), dtype=np.int64)
    kind0 = kind0[pc]
    # pairs come in content order, and a content's code starts with its kind: each kind is one run of
    # pairs, scored as a slice of the addresses (no copy)
    runs = bool((kind0[1:] >= kind0[:-1]).all())
    for (op, width), kd in kinds.items():
        if runs:
            lo, hi = np.searchsorted(kind0, [kd, kd + 1]).tolist()
            sel: Any = slice(lo, hi) if hi > lo else None
        else:
            sel = np.flatnonzero(kind0 == kd)
            sel = sel if len(sel) else None
        if sel is not None:
            cost_w[sel], cost_d[sel] = analyze_distinct(addr[sel], width, op, arch)
    del addr
    # each unit's rows are one run: summed per run, in int64 (exact; the float64 bincount this replaces
    # was exact too below 2**53), a unit without rows left at 0
    k = m_count[row]
    wave, ideal = np.zeros(len(which), dtype=np.int64), np.zeros(len(which), dtype=np.int64)
    some = np.flatnonzero(lens)
    if len(some):
        at = offset[some]
        wave[some] = np.add.reduceat(k * cost_w[pair], at)
        ideal[some] = np.add.reduceat(k * cost_d[pair], at)
    return wave, ideal


def _distinct_instructions(
    kind: np.ndarray, rows: np.ndarray, cols: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(one instruction holding each distinct one, each instruction's distinct index) of instructions given
    by kind (n,), rows and cols (n, warp): equal kinds and lanes, matched by a hash and checked exactly
    (a collision, or lanes wider than the hash: every instruction its own)."""
    n, w = rows.shape
    if 2 * w + 1 > 128:
        return np.arange(n), np.arange(n)
    h = row_hashes(rows) + row_hashes(cols, w) + row_hashes(kind[:, None], 2 * w)
    uniq, inst_of = _groups(h)  # (one sort of values, no argsort; hashes equal in their high bits group)
    for s in range(0, n, _CHECK_ROWS):  # every instruction equals its hash's first, or hashes collided
        rep = uniq[inst_of[s : s + _CHECK_ROWS]]
        same = (rows[rep] == rows[s : s + _CHECK_ROWS]).all() and (
            cols[rep] == cols[s : s + _CHECK_ROWS]
        ).all()
        if not same or not (kind[rep] == kind[s : s + _CHECK_ROWS]).all():
            return np.arange(n), np.arange(n)
    return uniq, inst_of


def _expand(starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(owner, index) of every entry of the ranges [starts[i], starts[i] + lengths[i]), range by range."""
    owner = np.repeat(np.arange(len(lengths)), lengths)
    offset = np.cumsum(lengths) - lengths
    return owner, np.repeat(starts - offset, lengths) + np.arange(len(owner))
