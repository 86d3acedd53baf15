"""Score candidates with the bank-conflict model: wavefronts per tile of each (pattern, layout) pair.

A unit is a pattern (one block's shared-memory instructions for one tile, ``smem_pattern``) under a layout;
its cost is the sum over the instructions of count x the model's cost of the instruction's byte addresses.
Three observations make a space of thousands of units cheap:

* A uniform shift of every lane by whole 4-byte words rotates the banks and moves every word alike, so it
  cannot change a conflict. A tile layout repeats up to such a shift every ``_periods`` rows and columns
  (one row for padding, ``per_phase * max_phase`` rows for an XOR swizzle, stretched until the shift is
  whole words), so an instruction moved towards (0, 0) by whole periods costs what it did (not a
  cp.async.cg copy, whose cost depends on each chunk's place in its 128-byte row: those stay). Its *content*
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

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .arch import Arch
from .model import analyze_batch

# the chunk's work lives in score_chunk.py; its names are importable from here as before (tests, search.py)
from .score_chunk import (  # noqa: F401
    _distinct_instructions,
    _ids,
    _periods,
    _PerLayout,
    _score_chunk,
)
from .spec import KernelSpec, SpecError

__all__ = ["score_candidates"]

_CHUNK_INSTRUCTIONS = 1 << 17  # pattern instructions scored together (bounds memory: 0.26 GB peak for the
# CUDA histogram, whose 86,000 instructions in one chunk instead of two rank 0.2 s sooner)


Groups = list[tuple[str, int, np.ndarray, np.ndarray, np.ndarray]]


def _stacked(pattern: Any, warp: int) -> tuple[Groups, list[tuple[tuple, np.ndarray]]]:
    """A pattern as (op, width, rows (n, warp), cols (n, warp), counts (n,)) groups, and apart from them
    its copies that give their global side (``Instruction.global_offsets``), each as (group, sources
    (n, warp)): a copy's cost depends on its sources, which the chunk's contents and periods know
    nothing of, so those are addressed unit by unit and scored a chunk at a time (``_copy_costs``)."""
    if hasattr(pattern, "groups"):  # already stacked (lanes kept in int32 where they are: half the bytes)
        globs = getattr(pattern, "globs", ()) or (None,) * len(pattern.groups)
        out: Groups = []
        sides: list[tuple[tuple, np.ndarray]] = []
        for (op, w, r, c, k), glob in zip(pattern.groups, globs, strict=True):
            g = (op, w, _lanes(r), _lanes(c), np.asarray(k, np.int64))
            if glob is None:
                out.append(g)
            else:
                sides.append((g, np.asarray(glob, np.int64)))
        return out, sides
    from .access import stack

    items = list(pattern)
    for ins in items:
        if len(ins.rows) != warp:
            raise SpecError(
                f"smem_pattern: instruction {ins.name!r} has {len(ins.rows)} lanes; warps have {warp}"
            )
    return _stacked(stack(items, warp), warp)


def _copy_costs(
    units: list[tuple[list[tuple[tuple, np.ndarray]], Any]], arch: Arch
) -> tuple[np.ndarray, np.ndarray]:
    """(wavefronts, ideal) per tile of each unit's copies that give their global side (units: (the
    pattern's side copies, the layout)): each unit's addresses from its layout, then one model call per
    (op, width) for the whole chunk, so a large batch takes the rule's compiled kernel."""
    wave = np.zeros(len(units), dtype=np.int64)
    ideal = np.zeros(len(units), dtype=np.int64)
    batches: dict[tuple[str, int], list[tuple[int, np.ndarray, np.ndarray, np.ndarray]]] = {}
    for u, (sides, layout) in enumerate(units):
        for (op, width, rows, cols, counts), glob in sides:
            offsets = layout.offsets(rows.astype(np.int64, copy=False), cols.astype(np.int64, copy=False))
            batches.setdefault((op, width), []).append((u, np.asarray(offsets, np.int64), glob, counts))
    for (op, width), parts in batches.items():
        w, d = analyze_batch(
            np.concatenate([p[1] for p in parts]), width, op, arch,
            global_addresses=np.concatenate([p[2] for p in parts]),
        )  # fmt: skip
        owner = np.concatenate([np.full(len(p[3]), p[0], dtype=np.int64) for p in parts])
        counts = np.concatenate([p[3] for p in parts])
        np.add.at(wave, owner, w * counts)
        np.add.at(ideal, owner, d * counts)
    return wave, ideal


def _lanes(a: Any) -> np.ndarray:
    """Lanes as an int32 or int64 array (any other type as int64)."""
    a = np.asarray(a)
    return a if a.dtype in (np.int32, np.int64) else a.astype(np.int64)


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


# (spec, dtype, dist, arch) -> (pattern memo, layout) -> score
_UNIT_SCORES: dict[tuple, dict[tuple, tuple[int, int]]] = {}
_UNIT_SCORES_MAX = 1 << 19


def _spec_id(spec: KernelSpec) -> tuple:
    from .kernels_registry import source_hash

    return (spec.NAME, spec.BACKEND, source_hash(spec))


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
    """Wavefronts and ideal wavefronts per tile of every candidate, in one model call per access width a
    chunk (and one per width for the copies that give their global side)
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
    pats: list[Groups] = []
    copies: list[list[tuple[tuple, np.ndarray]]] = []  # each pattern's copies with a global side
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
            groups, sides = _stacked(pat, arch.warp_size)
            got = held[id(pat)] = (pat, len(pats))
            pats.append(groups)
            copies.append(sides)
            size += sum(len(g[2]) for g in groups) + sum(len(g[2]) for g, _ in sides)
        seen = (id(pat), getattr(lay, "rows", None), getattr(lay, "cols", None), hasattr(lay, "row_stride"))
        if seen not in bounds:
            dims = _tile_dims(lay)
            listed = [*pats[got[1]], *(g for g, _ in copies[got[1]])]
            for g, (_op, _width, r, cc, _k) in enumerate(listed if dims is not None else ()):
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
            side = [(u, p, lay) for u, p, lay in zip(sel, which, lays) if copies[p]]
            if side:
                w, d = _copy_costs([(copies[p], lay) for _, p, lay in side], arch)
                at = [u for u, _, _ in side]
                wave[at] += w
                ideal[at] += d
            pats, copies, sel, which, size, held, bounds, reaches = [], [], [], [], 0, {}, set(), {}
    return wave, ideal
