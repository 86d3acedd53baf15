"""Enumerate legal candidates for a kernel spec, score them all at once, and keep a shortlist.

The order is explicit, as in Triton's autotuner: enumerate the spec's ``SPACE`` -> drop what its
``RESTRICTIONS`` reject (vectorised over the whole space, as Kernel Tuner's restriction strings) -> drop
what its ``legal`` rejects (the one validity predicate; nothing illegal is ever scored or run) -> score
every survivor with the model (``predict``) -> rank -> keep ``top_k`` plus the baselines (the unpadded
layout and, where legal, the textbook +1 pad) and the best layout of each of the ``top_k`` best launch
configurations for measurement.

Why scoring is batched: a space of thousands of candidates is a few hundred access patterns (launch
configurations) times a few dozen layouts. A pattern is built once per configuration; an instruction whose
rows differ from another's by a whole number of the layout's row period (one row for plain padding,
``per_phase * max_phase`` rows for a swizzle) moves every lane by the same byte offset, which cannot change
its bank conflicts, so it is scored once; and the remaining instructions of every candidate go through the
model in one call per access width. Ranking the largest built-in space so takes well under a second.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from .arch import Arch, get_arch
from .expr import ExprError, compile_expr
from .layouts import Legality
from .model import analyze_batch
from .predict import LaunchInfoError, Prediction, check_launch_info, check_traffic, predict_batch
from .spec import DTYPE_BYTES, KernelSpec, SpecError

__all__ = [
    "Candidate",
    "Prediction",
    "enumerate_candidates",
    "launch_config",
    "neighbours",
    "predict",
    "rank",
    "shortlist",
    "baselines",
    "check_legal",
]

_CHUNK = 1 << 18  # points of the space evaluated per vectorised restriction pass
_SCORE_CHUNK = 1 << 16  # instructions per model call (bounds memory)


@dataclass(frozen=True)
class Candidate:
    """One point of a kernel's space: its constants, its layout, and the model's prediction."""

    constants: tuple[tuple[str, int], ...]
    layout: Any
    prediction: Prediction
    roles: tuple[str, ...] = field(default=())  # "unpadded", "textbook" for the baselines

    @property
    def params(self) -> dict[str, int]:
        return dict(self.constants)

    @cached_property
    def key(self) -> str:
        """Stable text key of the constants (cache entries and tie-breaks use it)."""
        return ",".join(f"{k}={v}" for k, v in self.constants)


def _freeze(constants: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((str(k), int(v)) for k, v in constants.items()))


# ---- enumeration ---------------------------------------------------------------------------------------


def check_legal(spec: KernelSpec, constants: dict[str, int], shape: tuple[int, ...], dtype: str) -> Legality:
    """The spec's validity predicate, as a Legality; a return that is neither is a SpecError naming it."""
    res = spec.legal(constants, shape, dtype)
    if isinstance(res, Legality):
        return res
    if isinstance(res, (bool, np.bool_)):
        return Legality(bool(res), "" if res else "rejected by the spec's legal()")
    raise SpecError(
        f"legal: returned {res!r} ({type(res).__name__}) for {constants}; return a bool or an "
        f"autopad.layouts.Legality(ok, reason)"
    )


def _restrictions(spec: KernelSpec) -> list[tuple[str, Callable[[Mapping[str, Any]], Any]]]:
    out = []
    for r in getattr(spec, "RESTRICTIONS", ()) or ():
        if isinstance(r, str):
            try:
                out.append((r, compile_expr(r)))
            except ExprError as e:
                raise SpecError(f"RESTRICTIONS: {e}") from None
        elif callable(r):
            out.append((getattr(r, "__name__", repr(r)), r))
        else:
            raise SpecError(f"RESTRICTIONS: {r!r} is neither an expression string nor a callable")
    return out


def enumerate_candidates(spec: KernelSpec, shape: tuple[int, ...], dtype: str) -> list[dict[str, int]]:
    """Every combination of the spec's tunables that its restrictions and ``legal`` accept, in a fixed order
    (``itertools.product`` over the sorted names). Restrictions see the constants and ``E``, the element
    size in bytes.

    The product is built one constant at a time, and a restriction is applied as soon as every name it
    reads is there, so the table never holds the millions of points a restriction would drop at once
    (the CUDA transpose: 1.5 million points, 21,000 legal).
    """
    from .expr import names_in

    names = sorted(spec.SPACE)
    e = DTYPE_BYTES.get(dtype, 4)
    rules = _restrictions(spec)
    raw = list(getattr(spec, "RESTRICTIONS", ()) or ())
    needs = [
        (set(names_in(r)) - {"E"}) & set(names) if isinstance(r, str) else set(names) for r in raw
    ]  # a callable sees the whole point: it runs last
    cols: dict[str, np.ndarray] = {}
    n = 1
    done = [False] * len(rules)
    for i, name in enumerate(names):
        vals = np.asarray(spec.SPACE[name], dtype=np.int64)
        # extend every row by each value of this constant, keeping product order (earlier names vary slower)
        cols = {k: np.repeat(v, len(vals)) for k, v in cols.items()}
        cols[name] = np.tile(vals, n)
        n *= len(vals)
        have = set(names[: i + 1])
        keep = np.ones(n, dtype=bool)
        for j, (text, rule) in enumerate(rules):
            if done[j] or not needs[j] <= have:
                continue
            done[j] = True
            env = {**cols, "E": e}
            try:
                ok = rule(env)
            except (ExprError, KeyError, TypeError, ZeroDivisionError, FloatingPointError) as exc:
                raise SpecError(f"RESTRICTIONS: {text!r} failed: {exc}") from None
            ok = np.broadcast_to(np.asarray(ok), keep.shape)
            if ok.dtype != bool:
                raise SpecError(f"RESTRICTIONS: {text!r} gave {ok.dtype} values, not True/False")
            keep &= ok
        if not keep.all():
            cols = {k: v[keep] for k, v in cols.items()}
            n = int(keep.sum())
    out: list[dict[str, int]] = []
    lists = [cols[k].tolist() for k in names]
    for point in zip(*lists):
        c = dict(zip(names, point))
        if check_legal(spec, c, shape, dtype):
            out.append(c)
    return out


# ---- scoring -------------------------------------------------------------------------------------------


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


def _stacked(pattern: Any, warp: int) -> list[tuple[str, int, _Group]]:
    """A pattern as (op, width, rows (n, warp), cols (n, warp), counts (n,)) groups."""
    if hasattr(pattern, "groups"):  # already stacked
        return [(op, w, _Group(np.asarray(r, np.int64), np.asarray(c, np.int64), np.asarray(k, np.int64)))
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
        out.append((op, width, _Group(rows, cols, counts)))
    return out


_MULTS = np.random.default_rng(0x5EED).integers(1, 2**62, size=(4, 1024), dtype=np.int64) | 1


class _Group:
    """One (op, width) group of a pattern, with what every canonicalisation of it shares.

    Canonical form: each instruction moved towards (0, 0) by whole periods of the layout (see ``_periods``);
    instructions equal after that cost the same. Two independent 64-bit hashes of each instruction's lanes
    are kept as sums that a shift changes linearly (hash = sum(rows * M) + sum(cols * M'), inactive lanes
    fixed), so each period's canonical hashes cost a few vector operations on n numbers, not n x 32.
    """

    def __init__(self, rows: np.ndarray, cols: np.ndarray, counts: np.ndarray) -> None:
        self.rows, self.counts = rows, counts
        self.active = rows >= 0
        self.cols = np.where(self.active, cols, 0)
        big = np.iinfo(np.int64).max
        lo_r = np.where(self.active, rows, big).min(axis=1)
        lo_c = np.where(self.active, self.cols, big).min(axis=1)
        self.lo_r, self.lo_c = np.where(lo_r == big, 0, lo_r), np.where(lo_c == big, 0, lo_c)
        w = rows.shape[1]
        act = self.active.astype(np.int64)
        with np.errstate(over="ignore"):
            m = _MULTS[:, :w]
            self.h = [(rows * m[0]).sum(axis=1) + (self.cols * m[1]).sum(axis=1),
                      (rows * m[2]).sum(axis=1) + (self.cols * m[3]).sum(axis=1)]  # fmt: skip
            self.a = [((act * m[0]).sum(axis=1), (act * m[1]).sum(axis=1)),
                      ((act * m[2]).sum(axis=1), (act * m[3]).sum(axis=1))]  # fmt: skip

    def canonical(self, periods: tuple[int, int] | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(rows, cols, counts) of the distinct canonical instructions."""
        if periods is None or len(self.rows) < 2:
            return self.rows, self.cols, self.counts
        p, q = periods
        sr, sc = (self.lo_r // p) * p, (self.lo_c // q) * q
        with np.errstate(over="ignore"):
            h1 = self.h[0] - sr * self.a[0][0] - sc * self.a[0][1]
            h2 = self.h[1] - sr * self.a[1][0] - sc * self.a[1][1]
        _, first, inverse = np.unique(h1, return_index=True, return_inverse=True)
        inverse = inverse.ravel()
        sel = first
        if not (h2 == h2[first[inverse]]).all():  # a hash collision: exact row comparison instead
            sel = np.arange(len(self.rows))
        act = self.active[sel]
        r = np.where(act, self.rows[sel] - sr[sel, None], -1)
        c = np.where(act, self.cols[sel] - sc[sel, None], 0)
        if sel is not first:
            _, first, inverse = np.unique(np.concatenate([r, c], axis=1), axis=0, return_index=True,
                                          return_inverse=True)  # fmt: skip
            inverse = inverse.ravel()
            r, c = r[first], c[first]
        merged = np.bincount(inverse, weights=self.counts, minlength=len(first)).astype(np.int64)
        return r, c, merged

    def canonical_many(self, periods: Sequence[tuple[int, int] | None]) -> list[tuple]:
        """``canonical`` for several periods at once: one sort of the (period, hash) table instead of one
        ``np.unique`` per period."""
        known = sorted({p for p in periods if p is not None})
        if len(known) < 2 or len(self.rows) < 2:
            return [self.canonical(p) for p in periods]
        n = len(self.rows)
        p = np.array([x[0] for x in known], dtype=np.int64)[:, None]
        q = np.array([x[1] for x in known], dtype=np.int64)[:, None]
        sr, sc = (self.lo_r[None, :] // p) * p, (self.lo_c[None, :] // q) * q  # (K, n)
        with np.errstate(over="ignore"):
            h1 = self.h[0][None, :] - sr * self.a[0][0][None, :] - sc * self.a[0][1][None, :]
            h2 = self.h[1][None, :] - sr * self.a[1][0][None, :] - sc * self.a[1][1][None, :]
        order = np.argsort(h1, axis=1, kind="stable")
        hs = np.take_along_axis(h1, order, axis=1)
        new = np.ones(hs.shape, dtype=bool)
        new[:, 1:] = hs[:, 1:] != hs[:, :-1]
        gid_sorted = np.cumsum(new, axis=1) - 1  # distinct-hash index of each sorted entry, per period
        first_pos = np.maximum.accumulate(np.where(new, np.arange(n)[None, :], 0), axis=1)
        rep = np.empty_like(order)  # each instruction's representative (first of its hash), per period
        np.put_along_axis(rep, order, np.take_along_axis(order, first_pos, axis=1), axis=1)
        exact = (np.take_along_axis(h2, rep, axis=1) == h2).all(axis=1)  # a second hash confirms the first
        out: dict[tuple[int, int], tuple] = {}
        for k, per in enumerate(known):
            if not exact[k]:
                out[per] = self.canonical(per)
                continue
            firsts = order[k][new[k]]
            gid = np.empty(n, dtype=np.int64)
            gid[order[k]] = gid_sorted[k]
            merged = np.bincount(gid, weights=self.counts, minlength=len(firsts)).astype(np.int64)
            act = self.active[firsts]
            r = np.where(act, self.rows[firsts] - sr[k, firsts][:, None], -1)
            c = np.where(act, self.cols[firsts] - sc[k, firsts][:, None], 0)
            out[per] = (r, c, merged)
        return [out[x] if x is not None else self.canonical(None) for x in periods]


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


def _tile_params(layout: Any) -> tuple[int, int, int, int, int] | None:
    """(row stride, sw_vec, per_phase, max_phase, elem bytes) of a layout that uses the one tile formula
    unchanged (autopad.layouts' padded / swizzled tiles), else None."""
    from . import layouts

    base = getattr(layouts, "_Tile", None) or getattr(layouts, "Tile", None)
    if base is None or not isinstance(layout, base) or type(layout).offsets is not base.offsets:
        return None
    v, pp, mp = int(layout.sw_vec), int(layout.per_phase), int(layout.max_phase)
    if any(x & (x - 1) for x in (v, pp, mp)):
        return None  # the batched formula below uses shifts and masks
    return int(layout.row_stride), v.bit_length() - 1, pp.bit_length() - 1, mp - 1, int(layout.elem_bytes)


def _addresses(parts: Sequence[tuple[int, Any, np.ndarray, np.ndarray, np.ndarray]]) -> np.ndarray:
    """Byte addresses of every part's instructions, in order. Parts on tile layouts go through the tile
    formula together (one vectorised pass with per-row parameters); other layouts through their own
    ``offsets``."""
    out: list[np.ndarray | None] = [None] * len(parts)
    tiles = []
    for i, (_, lay, r, c, _k) in enumerate(parts):
        p = _tile_params(lay)
        if p is None:
            out[i] = np.asarray(lay.offsets(r, c), dtype=np.int64)
        else:
            tiles.append((i, p, r, c))
    if tiles:
        r = np.concatenate([t[2] for t in tiles]).astype(np.int32)
        c = np.concatenate([t[3] for t in tiles]).astype(np.int32)
        lens = [len(t[2]) for t in tiles]
        prm = np.repeat(np.array([t[1] for t in tiles], dtype=np.int32), lens, axis=0)
        off = np.empty(r.shape, dtype=np.int64)
        step = max(1, (1 << 16) // max(1, r.shape[1]))  # rows per pass: temporaries stay in cache
        for s in range(0, len(r), step):
            sl = slice(s, s + step)
            rr, cc = r[sl], c[sl]
            stride, lv, lp, mmask, e = (prm[sl, j : j + 1] for j in range(5))
            # the one formula (layouts.py): r * (cols + pad) + ((c // vec) ^ ((r // per_phase) % max_phase))
            # * vec + c % vec, in elements; vec, per_phase and max_phase are powers of two: shifts and masks
            o = (rr * stride + ((((cc >> lv) ^ ((rr >> lp) & mmask)) << lv) | (cc & ((1 << lv) - 1)))) * e
            off[sl] = np.where(rr < 0, -1, o)
        for (i, *_), part in zip(tiles, np.split(off, np.cumsum(lens)[:-1])):
            out[i] = part
    return np.concatenate(out) if len(out) > 1 else out[0]


_UNIT_SCORES: dict[tuple, tuple[int, int]] = {}  # (spec, dtype, dist, arch, pattern memo, layout) -> score
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
) -> tuple[np.ndarray, np.ndarray]:
    """Wavefronts and ideal wavefronts per tile of every candidate, in one model call per access width.

    A (pattern, layout) pair's score does not depend on the problem's shape, so it is kept for the rest of
    the process: ranking a second shape of the same kernel (the ops' shape policy does) scores nothing new.
    """
    n = len(consts)
    keys = getattr(spec, "PATTERN_KEYS", None)
    sid = _spec_id(spec) + (dtype, dist, arch.name) if keys is not None else None
    patterns: dict[Any, list] = {}
    units: dict[tuple[Any, Any], list[int]] = {}  # (pattern memo, layout) -> candidate indices
    for i, (c, lay) in enumerate(zip(consts, layouts)):
        memo = tuple(c[k] for k in keys) if keys is not None else i
        try:
            units.setdefault((memo, lay), []).append(i)
        except TypeError:  # an unhashable layout: score it on its own
            units.setdefault((memo, i), []).append(i)
    unit_list = list(units.items())
    wave_u = np.zeros(len(unit_list), dtype=np.int64)
    ideal_u = np.zeros(len(unit_list), dtype=np.int64)
    todo: list[int] = []
    for u, ((memo, lay_key), _) in enumerate(unit_list):
        hit = _UNIT_SCORES.get(sid + (memo, lay_key)) if sid is not None else None
        if hit is not None:
            wave_u[u], ideal_u[u] = hit
        else:
            todo.append(u)
    # the patterns and periods the unscored units need
    need: dict[Any, set] = {}
    for u in todo:
        (memo, _), members = unit_list[u]
        if memo not in patterns:
            c = consts[members[0]]
            pat = (
                spec.smem_pattern(dict(c), dtype, dist=dist)
                if dist is not None
                else spec.smem_pattern(dict(c), dtype)
            )
            if pat is None:
                raise SpecError(f"smem_pattern: returned None for {dict(c)}; return the block's instructions")
            patterns[memo] = _stacked(pat, arch.warp_size)
            for _op, _width, grp in patterns[memo]:
                _check_bounds(f"{spec.NAME} {dict(c)}", layouts[members[0]], grp.rows, grp.cols)
        need.setdefault(memo, set()).add(_periods(layouts[members[0]]))
    canon: dict[tuple[Any, Any, int], tuple] = {}
    for memo, pers in need.items():
        pers_l = sorted(pers, key=lambda x: (x is None, x or (0, 0)))
        for g, (_, _, grp) in enumerate(patterns[memo]):
            for per, out in zip(pers_l, grp.canonical_many(pers_l)):
                canon[(memo, per, g)] = out
    # per (op, width): the canonical instructions of every unscored unit, concatenated; one model call each
    batches: dict[tuple[str, int], list[tuple[int, Any, np.ndarray, np.ndarray, np.ndarray]]] = {}
    for u in todo:
        (memo, _), members = unit_list[u]
        lay = layouts[members[0]]
        per = _periods(lay)
        for g, (op, width, _) in enumerate(patterns[memo]):
            r, c, k = canon[(memo, per, g)]
            batches.setdefault((op, width), []).append((u, lay, r, c, k))
    for (op, width), parts in batches.items():
        addr = _addresses(parts)
        counts = np.concatenate([p[4] for p in parts])
        owner = np.concatenate([np.full(len(p[2]), p[0], dtype=np.int64) for p in parts])
        w = np.empty(len(addr), dtype=np.int64)
        d = np.empty(len(addr), dtype=np.int64)
        for s in range(0, len(addr), _SCORE_CHUNK):
            sl = slice(s, s + _SCORE_CHUNK)
            w[sl], d[sl] = analyze_batch(addr[sl], width, op, arch)
        wave_u += np.bincount(owner, weights=w * counts, minlength=len(unit_list)).astype(np.int64)
        ideal_u += np.bincount(owner, weights=d * counts, minlength=len(unit_list)).astype(np.int64)
    if sid is not None and todo:
        if len(_UNIT_SCORES) + len(todo) > _UNIT_SCORES_MAX:
            _UNIT_SCORES.clear()
        for u in todo:
            _UNIT_SCORES[sid + (unit_list[u][0][0], unit_list[u][0][1])] = (int(wave_u[u]), int(ideal_u[u]))
    wave = np.zeros(n, dtype=np.int64)
    ideal = np.zeros(n, dtype=np.int64)
    for u, (_, members) in enumerate(unit_list):
        wave[members] = wave_u[u]
        ideal[members] = ideal_u[u]
    return wave, ideal


def _layout(spec: KernelSpec, c: Mapping[str, int], dtype: str) -> Any:
    lay = spec.layout(dict(c), dtype)
    if lay is None or not hasattr(lay, "offsets"):
        raise SpecError(
            f"layout: returned {lay!r} for {dict(c)}; return an autopad.layouts layout (Padded, Swizzled, "
            f"Tile, Structs, Replicated) or an object with offsets(rows, cols) and footprint"
        )
    return lay


def _launch_infos(
    spec: KernelSpec, consts: Sequence[Mapping[str, int]], layouts: Sequence[Any], shape: tuple, dtype: str
) -> list[dict[str, float]]:
    """Every candidate's ``launch_info``, checked: the first one key by key, then all of them at once (each
    key's values as one array: numbers, finite, >= 0); a bad one is reported with its constants."""
    out: list[dict[str, float]] = []
    for c, lay in zip(consts, layouts):
        info = spec.launch_info(dict(c), shape, dtype)
        if not out or not isinstance(info, dict) or "blocks" not in info or "threads" not in info:
            try:
                info = check_launch_info(info, "launch_info")
            except LaunchInfoError as e:
                raise SpecError(f"{e} (for {dict(c)})") from None
        else:
            info = dict(info)
        info.setdefault("smem_bytes", float(getattr(lay, "footprint", 0)))
        out.append(info)
    for k in set().union(*out) if out else ():
        vals = [i.get(k, 0.0) for i in out]
        try:
            arr = np.asarray(vals, dtype=np.float64)
            bad = ~np.isfinite(arr) | (arr < 0)
            if k in ("blocks", "threads"):
                bad |= arr < 1
            if any(isinstance(v, bool) for v in vals):
                bad |= np.array([isinstance(v, bool) for v in vals])
        except (TypeError, ValueError):
            bad = np.array([not isinstance(v, (int, float, np.integer, np.floating)) for v in vals])
        if bad.any():
            i = int(np.argmax(bad))
            try:
                check_launch_info(out[i], "launch_info")
            except LaunchInfoError as e:
                raise SpecError(f"{e} (for {dict(consts[i])})") from None
            raise SpecError(f"launch_info: {k!r} is {vals[i]!r} for {dict(consts[i])}")
    return out


def _traffic(spec: KernelSpec, shape: tuple, dtype: str) -> dict[str, float]:
    try:
        return check_traffic(spec.traffic(shape, dtype), "traffic")
    except LaunchInfoError as e:
        raise SpecError(str(e)) from None


def predict(
    spec: KernelSpec,
    constants: dict[str, int],
    shape: tuple[int, ...],
    dtype: str,
    arch: str | Arch = "sm_90",
    dist: str | None = None,
) -> Prediction:
    """Predicted run time of one candidate from its access pattern, footprint and traffic."""
    a = get_arch(arch)
    lay = _layout(spec, constants, dtype)
    wave, ideal = score_candidates(spec, [constants], [lay], dtype, dist, a)
    infos = _launch_infos(spec, [constants], [lay], shape, dtype)
    return predict_batch(infos, _traffic(spec, shape, dtype), wave, ideal, a, layouts=[lay])[0]


def baselines(spec: KernelSpec, shape: tuple[int, ...], dtype: str) -> list[dict[str, int]]:
    """The unpadded constants and, where the spec has one, the textbook +1 pad."""
    out = []
    if getattr(spec, "DEFAULTS", None) is not None:
        out.append(dict(spec.DEFAULTS))
    if hasattr(spec, "textbook"):
        t = spec.textbook(shape, dtype)
        if t is not None:
            out.append(dict(t))
    return out


def rank(
    spec: KernelSpec,
    shape: tuple[int, ...],
    dtype: str,
    arch: str | Arch = "sm_90",
    extra: Iterable[Mapping[str, int]] | None = None,
    dist: str | None = None,
) -> list[Candidate]:
    """All legal candidates, best predicted first; ties go to fewer conflicts, then the smaller footprint.

    ``extra`` adds constants outside the enumeration (the baselines), each still subject to ``legal``.
    """
    a = get_arch(arch)
    seen = {_freeze(c): c for c in enumerate_candidates(spec, shape, dtype)}
    for c in extra or []:
        frozen = _freeze(c)
        if frozen not in seen and check_legal(spec, dict(c), shape, dtype):
            seen[frozen] = dict(c)
    if not seen:
        return []
    frozen_all = list(seen)
    consts = list(seen.values())
    layouts = [_layout(spec, c, dtype) for c in consts]
    wave, ideal = score_candidates(spec, consts, layouts, dtype, dist, a)
    infos = _launch_infos(spec, consts, layouts, shape, dtype)
    preds = predict_batch(infos, _traffic(spec, shape, dtype), wave, ideal, a, layouts=layouts)
    roles_of: dict[tuple, list[str]] = {}
    if getattr(spec, "DEFAULTS", None) is not None:
        roles_of.setdefault(_freeze(spec.DEFAULTS), []).append("unpadded")
    textbook = spec.textbook(shape, dtype) if hasattr(spec, "textbook") else None
    if textbook is not None:
        roles_of.setdefault(_freeze(textbook), []).append("textbook")
    out = [Candidate(f, lay, p, tuple(roles_of.get(f, ()))) for f, lay, p in zip(frozen_all, layouts, preds)]
    out.sort(
        key=lambda c: (c.prediction.seconds, c.prediction.wavefronts_per_tile, c.prediction.footprint, c.key)
    )
    return out


# ---- shortlist and neighbourhood -------------------------------------------------------------------------


def launch_config(spec: KernelSpec, constants: dict[str, int] | Candidate) -> tuple[tuple[str, int], ...]:
    """The constants that are not the layout's: tile, threads, vector width, ... (the spec's optional
    ``LAYOUT_KEYS`` names the layout's; without it every constant counts, and each candidate is its own)."""
    params = getattr(constants, "params", constants)  # a Candidate, or anything with .params, or a dict
    layout_keys = set(getattr(spec, "LAYOUT_KEYS", ()))
    return tuple(sorted((k, v) for k, v in params.items() if k not in layout_keys))


def shortlist(ranked: list[Candidate], top_k: int, spec: KernelSpec | None = None) -> list[Candidate]:
    """What to measure first: the ``top_k`` best predicted, every baseline (always measured, for
    comparison), and, given the spec, the best-predicted layout of each of the ``top_k`` best launch
    configurations.

    Why both: the model ranks layouts of one launch configuration well (bank conflicts are what it
    counts), but it ties many launch configurations at the memory-bandwidth floor, where the top_k alone
    can be six conflict-free layouts of a single tile shape; one layout per configuration spends the
    measurements on the choice the model cannot make.
    """
    if top_k < 1:
        raise ValueError(f"top_k: must be at least 1, got {top_k}")
    keep = {c.key: c for c in ranked[:top_k]}
    if spec is not None:
        seen: set = set()
        for c in ranked:
            cfg = launch_config(spec, c)
            if cfg in seen:
                continue
            seen.add(cfg)
            keep.setdefault(c.key, c)
            if len(seen) >= top_k:
                break
    for c in ranked[top_k:]:
        if c.roles:
            keep.setdefault(c.key, c)
    return list(keep.values())


def neighbours(
    spec: KernelSpec, ranked: list[Candidate], around: Candidate, layouts: int = 3
) -> list[Candidate]:
    """Where to look next after measuring: candidates one step from ``around`` in its launch configuration.

    For each non-layout constant, the value before and after ``around``'s in the spec's ``SPACE`` order,
    each as its best-predicted layout; and the next ``layouts`` best-predicted layouts of ``around``'s own
    configuration (the model cannot see a swizzle's index arithmetic, so layouts it ties are compared on
    the GPU). The tuner measures these and moves to the fastest until none is faster: a local search that
    the model seeds and the measurements steer.
    """
    layout_keys = set(getattr(spec, "LAYOUT_KEYS", ()))
    best_of: dict[tuple, Candidate] = {}
    same = []
    here = launch_config(spec, around)
    for c in ranked:
        cfg = launch_config(spec, c)
        best_of.setdefault(cfg, c)
        if cfg == here and c.key != around.key and len(same) < layouts:
            same.append(c)
    out = []
    base = dict(here)
    for name, value in here:
        if name in layout_keys:
            continue
        values = list(spec.SPACE.get(name, ()))
        if value not in values:
            continue
        i = values.index(value)
        for j in (i - 1, i + 1):
            if 0 <= j < len(values):
                step = tuple(sorted({**base, name: values[j]}.items()))
                if step in best_of:
                    out.append(best_of[step])
    return out + same
