"""Enumerate legal candidates for a kernel spec, score them all at once, and keep a shortlist.

The order is explicit, as in Triton's autotuner: enumerate the spec's ``SPACE`` -> drop what its
``RESTRICTIONS`` reject (vectorised over the whole space, as Kernel Tuner's restriction strings) -> drop
what its ``legal`` rejects (the one validity predicate; nothing illegal is ever scored or run) -> score
every survivor with the model (``predict``) -> rank -> keep ``top_k`` plus the baselines (the unpadded
layout and, where legal, the textbook +1 pad) and the best layout of each of the ``top_k`` best launch
configurations for measurement.

``rank`` is the model-only ranking the ops' shape policy and the tuner start from, so it is built to be
fast for spaces of tens of thousands of candidates. The space is kept as columns per spec and dtype
(``space.Space``) with everything that does not depend on the problem's shape: each candidate's frozen
constants, layout and score (``score.score_candidates``: each distinct instruction content under each
layout once, each distinct address row through the model once). Per shape, legality and launch info come
as arrays from the spec's ``legal_batch`` / ``launch_info_batch`` where it has them (else its scalar
functions, candidate by candidate), the prediction is array arithmetic (``predict.predict_arrays``) and
the order one ``np.lexsort``. benchmarks/bench_rank_speed.py measures it on the largest built-in spaces.
"""

from __future__ import annotations

import gc
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import repeat
from operator import itemgetter
from typing import Any

import numpy as np

from .arch import Arch, get_arch
from .predict import (
    LaunchInfoError,
    Prediction,
    check_launch_info,
    check_traffic,
    info_columns,
    predict_arrays,
    predict_batch,
    predictions,
)
from .score import _PerLayout, score_candidates
from .space import Space, check_legal, layout_of, space
from .spec import KernelSpec, SpecError, combine_codes, value_ranks

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
    "score_candidates",
]

_layout = layout_of  # the names benchmarks/model_only_report.py and gpu_new_shapes.py import


@dataclass(frozen=True, init=False)
class Candidate:
    """One point of a kernel's space: its constants, its layout, and the model's prediction.

    Its fields live in slots, not an instance dict: a ranking makes tens of thousands of candidates, and
    each one's dict was one more object to allocate and for the cyclic collector to walk (``rank`` makes
    them with ``_candidates``, no bytecode per candidate). ``roles`` defaults to () in ``__init__``."""

    __slots__ = ("constants", "layout", "prediction", "roles", "_key", "__weakref__")
    constants: tuple[tuple[str, int], ...]
    layout: Any
    prediction: Prediction
    roles: tuple[str, ...]  # "unpadded", "textbook" for the baselines

    def __init__(
        self,
        constants: tuple[tuple[str, int], ...],
        layout: Any,
        prediction: Prediction,
        roles: tuple[str, ...] = (),
    ) -> None:
        # the slots' own setters: the frozen dataclass's __setattr__ refuses every assignment
        _SET_CONSTANTS(self, constants)
        _SET_LAYOUT(self, layout)
        _SET_PREDICTION(self, prediction)
        _SET_ROLES(self, roles)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # pickled (and copied) as its four fields, made again through __init__ (the key is not kept)
        return Candidate, (self.constants, self.layout, self.prediction, self.roles)

    @property
    def params(self) -> dict[str, int]:
        return dict(self.constants)

    @property
    def key(self) -> str:
        """Stable text key of the constants (cache entries and tie-breaks use it), made on first use."""
        try:
            return self._key
        except AttributeError:
            key = ",".join(f"{k}={v}" for k, v in self.constants)
            _SET_KEY(self, key)
            return key


Candidate.__dataclass_fields__["roles"].default = ()  # as it reads (a slot cannot hold a class default)
_SET_CONSTANTS = Candidate.constants.__set__  # type: ignore[attr-defined]
_SET_LAYOUT = Candidate.layout.__set__  # type: ignore[attr-defined]
_SET_PREDICTION = Candidate.prediction.__set__  # type: ignore[attr-defined]
_SET_ROLES = Candidate.roles.__set__  # type: ignore[attr-defined]
_SET_KEY = Candidate._key.__set__  # type: ignore[attr-defined]


def _candidates(constants: list, layouts: list, preds: list, roles: list) -> list[Candidate]:
    """``list(map(Candidate, constants, layouts, preds, roles))``, each field set by maps over the slots'
    setters (C calls only: no __init__ frame per candidate)."""
    out = list(map(object.__new__, repeat(Candidate, len(constants))))
    for setter, column in (
        (_SET_CONSTANTS, constants), (_SET_LAYOUT, layouts), (_SET_PREDICTION, preds), (_SET_ROLES, roles)
    ):  # fmt: skip
        deque(map(setter, out, column), maxlen=0)
    return out


def _freeze(constants: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((str(k), int(v)) for k, v in constants.items()))


def enumerate_candidates(spec: KernelSpec, shape: tuple[int, ...], dtype: str) -> list[dict[str, int]]:
    """Every combination of the spec's tunables that its restrictions and ``legal`` accept, in a fixed order
    (``itertools.product`` over the sorted names; see ``space.restricted``)."""
    kept = space(spec, dtype)
    return [kept.constants(i) for i in np.flatnonzero(kept.legal(spec, shape, dtype)).tolist()]


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


def _info_columns(
    spec: KernelSpec,
    kept: Space,
    rows: np.ndarray,
    extras: Sequence[Mapping[str, int]],
    layouts: Sequence[Any],
    shape: tuple,
    dtype: str,
) -> dict[str, np.ndarray]:
    """The launch info of the rows then the extras, as ``predict.info_columns``: ``launch_info_batch``
    over the rows' columns where the spec has it (checked as ``_launch_infos`` checks), else
    ``launch_info`` one candidate at a time."""
    batch = getattr(spec, "launch_info_batch", None)
    if not callable(batch) or not len(rows):
        consts = [kept.constants(i) for i in rows.tolist()] + [dict(c) for c in extras]
        return info_columns(_launch_infos(spec, consts, layouts, shape, dtype))
    got = batch({k: v[rows] for k, v in kept.cols.items()}, shape, dtype)
    if not isinstance(got, Mapping):
        raise SpecError(f"launch_info_batch: returned {type(got).__name__}; return a dict of arrays")
    first = {k: np.asarray(v)[0].item() for k, v in got.items()}
    try:
        check_launch_info(first, "launch_info_batch")
    except LaunchInfoError as e:
        raise SpecError(f"{e} (for {kept.constants(int(rows[0]))})") from None
    cols = {}
    for k, v in got.items():
        arr = np.asarray(v)
        if arr.shape != rows.shape or arr.dtype.kind not in "iuf":
            raise SpecError(
                f"launch_info_batch: {k!r} is {arr.dtype} of shape {arr.shape}; want {len(rows)} numbers"
            )
        arr = arr.astype(np.float64)
        bad = ~np.isfinite(arr) | (arr < 0) | ((arr < 1) if k in ("blocks", "threads") else False)
        if bad.any():
            i = int(rows[int(np.argmax(bad))])
            raise SpecError(
                f"launch_info_batch: {k!r} is {arr[int(np.argmax(bad))]!r} for {kept.constants(i)}"
            )
        cols[k] = arr
    if "smem_bytes" not in cols:  # the layout's footprint, as ``_launch_infos`` defaults it
        foot = _PerLayout(lambda lay: float(getattr(lay, "footprint", 0)))
        cols["smem_bytes"] = np.array([foot.of(lay) for lay in layouts[: len(rows)]], dtype=np.float64)
    out = info_columns(cols)
    if extras:
        rest = info_columns(
            _launch_infos(spec, [dict(c) for c in extras], layouts[len(rows) :], shape, dtype)
        )
        out = {k: np.concatenate([out[k], rest[k]]) for k in out}
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


@contextmanager
def _gc_paused() -> Iterator[None]:
    """The cyclic collector off for the block, and on again after it if it was on (a caller that turned it
    off keeps it off)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@_gc_paused()
def rank(
    spec: KernelSpec,
    shape: tuple[int, ...],
    dtype: str,
    arch: str | Arch = "sm_90",
    extra: Iterable[Mapping[str, int]] | None = None,
    dist: str | None = None,
) -> list[Candidate]:
    """All legal candidates, best predicted first; ties go to fewer conflicts, then the smaller footprint,
    then the key (the constants as text).

    ``extra`` adds constants outside the enumeration (the baselines), each still subject to ``legal``.

    Python's cyclic garbage collector is paused while it runs (``_gc_paused``): a first ranking makes
    some hundred thousand objects, none of them in a cycle, and the collector's passes over them took
    0.04-0.09 s of it on the 2-core machine (one pass over the survivors follows later instead).
    """
    a = get_arch(arch)
    kept = space(spec, dtype)
    legal = kept.legal(spec, shape, dtype)
    rows = np.flatnonzero(legal)
    frozen = kept.frozen_rows(rows)
    extras: dict[tuple, dict[str, int]] = {}
    for c in extra or []:
        f = _freeze(c)
        i = kept.find(f)
        if (i is not None and legal[i]) or f in extras:
            continue
        if check_legal(spec, dict(c), shape, dtype):
            extras[f] = dict(c)
    if not len(rows) and not extras:
        return []
    frozen += list(extras)
    layouts = kept.layouts(spec, rows, dtype) + [_layout(spec, c, dtype) for c in extras.values()]
    wave, ideal = kept.score(spec, rows, layouts, dtype, dist, a)
    if extras:
        w, d = score_candidates(spec, list(extras.values()), layouts[len(rows) :], dtype, dist, a)
        wave, ideal = np.concatenate([wave, w]), np.concatenate([ideal, d])
    infos = _info_columns(spec, kept, rows, list(extras.values()), layouts, shape, dtype)
    arrays = predict_arrays(infos, _traffic(spec, shape, dtype), wave, ideal, a, layouts=layouts)
    preds = predictions(arrays, wave, ideal)
    roles: list[tuple[str, ...]] = [()] * len(frozen)
    where = {f: j for j, f in enumerate(extras, len(rows))}
    named = []
    if getattr(spec, "DEFAULTS", None) is not None:
        named.append((_freeze(spec.DEFAULTS), "unpadded"))
    textbook = spec.textbook(shape, dtype) if hasattr(spec, "textbook") else None
    if textbook is not None:
        named.append((_freeze(textbook), "textbook"))
    for f, role in named:
        i = kept.find(f)
        j = int(np.searchsorted(rows, i)) if i is not None and legal[i] else where.get(f)
        if j is not None:
            roles[j] = (*roles[j], role)
    order = _order(frozen, preds, arrays, wave, kept, rows)
    if len(order) == 1:
        return [Candidate(frozen[0], layouts[0], preds[0], roles[0])]
    take = itemgetter(*order)  # each column in the ranking's order, picked in C
    return _candidates(take(frozen), take(layouts), take(preds), take(roles))


def _order(
    frozen: list[tuple],
    preds: list[Prediction],
    arrays: tuple[np.ndarray, ...],
    wave: np.ndarray,
    kept: Space,
    rows: np.ndarray,
) -> list[int]:
    """The ranking's order: by (seconds, wavefronts, footprint, key), as one ``np.lexsort``.

    The key is the constants as text, ``"NAME=value,..."`` in name order. Where every candidate has the same
    names, comparing two keys compares the names' values as decimal text, first name first (a value that
    is a prefix of another sorts first: the ',' that follows it sorts before any digit), so each column
    is ranked by its values' text once and the columns sort as numbers. Otherwise (an extra with other
    names, or a NaN time) it is Python's sort of the text keys."""
    seconds, smem = arrays[0], arrays[4]
    names = kept.names
    n = len(frozen)
    same = all(tuple(k for k, _ in f) == names for f in frozen[len(rows) :])
    tail = None
    if same:
        try:
            tail = np.array([[v for _, v in f] for f in frozen[len(rows) :]], dtype=np.int64)
            tail = tail.reshape(-1, len(names))
        except OverflowError:  # an extra's value beyond int64
            tail = None
    if not same or tail is None or np.isnan(seconds).any():
        return sorted(
            range(n),
            key=lambda i: (
                preds[i].seconds,
                preds[i].wavefronts_per_tile,
                preds[i].footprint,
                _key(frozen[i]),
            ),
        )
    keys = []
    for j, name in enumerate(names):
        col = np.concatenate([kept.cols[name][rows], tail[:, j]])
        vals, at = value_ranks(col)
        by_text = np.argsort(np.argsort([str(v) for v in vals.tolist()], kind="stable"), kind="stable")
        keys.append((by_text[at], 0, len(vals) - 1))
    # the names' text ranks as one code, first name first (mixed radix: the same order as the ranks one by
    # one); Prediction.footprint and .wavefronts_per_tile are these, as ints
    text, size = combine_codes(*keys) if keys else (np.zeros(n, dtype=np.int64), 1)
    foot, waves = smem.astype(np.int64), np.asarray(wave).astype(np.int64)
    # (wavefronts, footprint, text) as one code where it fits in 63 bits (two stable sorts, not four)
    low = min(int(foot.min()), int(waves.min())) if n else 0
    span_f, span_w = (int(foot.max()) + 1, int(waves.max()) + 1) if n else (1, 1)
    if low >= 0 and span_w * span_f * size < 2**63:
        return np.lexsort(((waves * span_f + foot) * size + text, seconds)).tolist()
    return np.lexsort((text, foot, waves, seconds)).tolist()


def _key(frozen: tuple) -> str:
    return ",".join(f"{k}={v}" for k, v in frozen)


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


# the unpadded twin is measured where the model predicts it within this factor of the configuration's best
# layout: the index arithmetic it cannot see is worth a few percent, while the bank conflicts it counts
# exactly are not worth guessing against (a 32-way conflicted transpose tile measures 2.3x the padded one)
TWIN_MARGIN = 1.05


def _close(twin: Candidate, best: Candidate) -> bool:
    return twin.prediction.seconds <= TWIN_MARGIN * best.prediction.seconds


def neighbours(
    spec: KernelSpec, ranked: list[Candidate], around: Candidate, layouts: int = 3
) -> list[Candidate]:
    """Where to look next after measuring: candidates one step from ``around`` in its launch configuration.

    For each non-layout constant, the value before and after ``around``'s in the spec's ``SPACE`` order,
    each as its best-predicted layout and as the unpadded baseline's layout (its twin, where that layout
    is legal there, is not already the best-predicted one and is predicted within ``TWIN_MARGIN`` of
    it); and the next ``layouts`` best-predicted layouts of ``around``'s own configuration, and its twin
    (on the same terms). The tuner measures these and moves to the
    fastest until none is faster: a local search that the model seeds and the measurements steer.

    Why the twin: the model cannot see a layout's index arithmetic (a padded row's multiply, a swizzle's
    shift-mask-XOR), so where it prefers a padded or swizzled layout by a few percent, the plain one is
    often faster. On today's SIMT GEMM at 2048^3 (H200 run 51, 10,032 candidates measured) the model put
    the padded layouts of the paired-lane thread map first, measured 0.415-0.434 ms, where the unpadded
    layout of the same configuration measured 0.395: without the twin the search never stepped onto that
    thread map and stopped at 1.047 of the best, with it 1.019.
    """
    layout_keys = set(getattr(spec, "LAYOUT_KEYS", ()))
    plain = next((c for c in ranked if "unpadded" in c.roles), None)
    plain_layout = (
        tuple(sorted((k, v) for k, v in plain.constants if k in layout_keys))
        if plain is not None and layout_keys
        else None
    )
    best_of: dict[tuple, Candidate] = {}
    twin_of: dict[tuple, Candidate] = {}
    same = []
    here = launch_config(spec, around)
    for c in ranked:
        cfg = launch_config(spec, c)
        best_of.setdefault(cfg, c)
        if plain_layout is not None and cfg not in twin_of:
            if tuple(sorted((k, v) for k, v in c.constants if k in layout_keys)) == plain_layout:
                twin_of[cfg] = c
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
                    twin = twin_of.get(step)
                    if twin is not None and twin is not best_of[step] and _close(twin, best_of[step]):
                        out.append(twin)
    own = twin_of.get(here)
    if own is not None and own.key != around.key and own not in same and _close(own, best_of[here]):
        same.append(own)
    return out + same
