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

Where each part lives (search.py was split, one concern a module; every name it defined is still
importable from here): search_infos.py (the launch info and traffic of many candidates, checked before the
model reads them), search_shortlist.py (``shortlist``, ``neighbours``, ``launch_config``: what the tuner
measures from a ranking); here, ``Candidate``, the enumeration, ``predict``, ``baselines`` and ``rank``.
"""

from __future__ import annotations

import gc
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import repeat
from operator import itemgetter
from typing import Any

import numpy as np

from .arch import Arch, get_arch
from .predict import Prediction, predict_arrays, predict_batch, predictions
from .score import _PerLayout, score_candidates  # noqa: F401  (_PerLayout: imported from here before)

# the launch info's checks and the shortlist live in search_infos.py and search_shortlist.py (one concern a
# module); their names are importable from here as before
from .search_infos import _info_columns, _launch_infos, _traffic
from .search_shortlist import (  # noqa: F401
    PLAIN_MARGIN,
    TWIN_MARGIN,
    _close,
    launch_config,
    model_pick,
    neighbours,
    prefer_plain,
    shortlist,
)
from .space import Space, check_legal, layout_of, space
from .spec import KernelSpec, combine_codes, value_ranks

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
