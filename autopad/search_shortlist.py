"""What the tuner measures from a ranking: the shortlist (``shortlist``) and the local search's next steps
(``neighbours``), both over launch configurations (``launch_config``: the constants that are not the
layout's).

The model ranks the layouts of one launch configuration well (bank conflicts are what it counts) but ties
many configurations at the memory-bandwidth floor and cannot see a layout's index arithmetic; so the
shortlist keeps the best layout of each of the top configurations besides the top candidates, and a
step of the local search offers each neighbouring configuration's best layout together with its unpadded
twin, and its best layout of the class the search stands on (padded, swizzled, ...) where that is not
the best one's, each where the model predicts it within ``TWIN_MARGIN``. Where nothing is measured, the
answer (``model_pick``) is the first-ranked candidate, or its configuration's unpadded twin where the model
puts that within ``PLAIN_MARGIN``.

Why a module of its own: this is what the measurements are spent on, and what stands in for them, apart
from how the ranking is made (search.py).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING

from .spec import KernelSpec

if TYPE_CHECKING:
    from .search import Candidate

__all__ = [
    "FAMILY_MARGIN",
    "PLAIN_MARGIN",
    "TWIN_MARGIN",
    "TWIN_SWEEP_MARGIN",
    "family",
    "launch_config",
    "layout_key",
    "model_pick",
    "neighbours",
    "repairs",
    "prefer_plain",
    "shortlist",
    "twins",
]


def launch_config(spec: KernelSpec, constants: dict[str, int] | Candidate) -> tuple[tuple[str, int], ...]:
    """The constants that are not the layout's: tile, threads, vector width, ... (the spec's optional
    ``LAYOUT_KEYS`` names the layout's; without it every constant counts, and each candidate is its own)."""
    params = getattr(constants, "params", constants)  # a Candidate, or anything with .params, or a dict
    layout_keys = set(getattr(spec, "LAYOUT_KEYS", ()))
    return tuple(sorted((k, v) for k, v in params.items() if k not in layout_keys))


def layout_key(spec: KernelSpec, constants: dict[str, int] | Candidate) -> tuple[tuple[str, int], ...]:
    """The constants that are the layout's (the spec's ``LAYOUT_KEYS``): ``launch_config``'s complement."""
    params = getattr(constants, "params", constants)
    layout_keys = set(getattr(spec, "LAYOUT_KEYS", ()))
    return tuple(sorted((k, v) for k, v in params.items() if k in layout_keys))


def family(spec: KernelSpec | None, constants: dict[str, int] | Candidate) -> tuple[int | None, ...]:
    """The candidate's values of the spec's optional ``FAMILY_KEYS`` (the constants that switch the
    kernel's code path, such as the transpose's vector width); () without them: one family."""
    params = getattr(constants, "params", constants)
    return tuple(params.get(k) for k in getattr(spec, "FAMILY_KEYS", ()) or ())


def shortlist(ranked: list[Candidate], top_k: int, spec: KernelSpec | None = None) -> list[Candidate]:
    """What to measure first: the ``top_k`` best predicted, every baseline (always measured, for
    comparison), and, given the spec, the best-predicted layout of each of the ``top_k`` best launch
    configurations and the best-predicted candidate of each family (``family``; last, so a budget cuts
    them first).

    Why both: the model ranks layouts of one launch configuration well (bank conflicts are what it
    counts), but it ties many launch configurations at the memory-bandwidth floor, where the top_k alone
    can be six conflict-free layouts of a single tile shape; one layout per configuration spends the
    measurements on the choice the model cannot make. Why the families: an error of the model that
    shifts a whole code path can rank its fastest candidate thousands deep (see ``strategies/model.py``),
    so each path gets a measured foothold for the local search to start from.
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
    if spec is not None and getattr(spec, "FAMILY_KEYS", ()):
        tops: dict[tuple[int | None, ...], Candidate] = {}
        for c in ranked:
            tops.setdefault(family(spec, c), c)
        for c in tops.values():
            keep.setdefault(c.key, c)
    return list(keep.values())


# the local search starts again from another family's fastest measured candidate where that is within this
# factor of the fastest measured so far (and the refine budget has measurements left): the tuner's restarts
# are for the path the model misprices, not for paths the measurements already put far behind. On the
# recorded H200 transpose study at fp32 4097x8191 (run 114, 26,680 candidates measured) the vector width 4
# family's best-predicted candidate measured 1.13 of the fastest of the first round, and the search from it
# reached the exhaustive best in two steps (a 1.10 margin would not have started it)
FAMILY_MARGIN = 1.25


# the unpadded twin is measured where the model predicts it within this factor of the configuration's best
# layout: the index arithmetic it cannot see is worth a few percent, while the bank conflicts it counts
# exactly are not worth guessing against (a 32-way conflicted transpose tile measures 2.3x the padded one)
TWIN_MARGIN = 1.05


def _close(twin: Candidate, best: Candidate) -> bool:
    return twin.prediction.seconds <= TWIN_MARGIN * best.prediction.seconds


def _moves(
    spec: KernelSpec, here: tuple[tuple[str, int], ...], layout_keys: set[str]
) -> dict[str, list[int]]:
    """Each launch constant of configuration ``here`` (not a layout key, its value in the spec's SPACE): the
    values one step either side of its own in SPACE order, the lower first."""
    out = {}
    for name, value in here:
        values = list(spec.SPACE.get(name, ()))
        if name not in layout_keys and value in values:
            i = values.index(value)
            out[name] = [values[j] for j in (i - 1, i + 1) if 0 <= j < len(values)]
    return out


def neighbours(
    spec: KernelSpec, ranked: list[Candidate], around: Candidate, layouts: int = 3
) -> list[Candidate]:
    """Where to look next after measuring: candidates one step from ``around`` in its launch configuration.

    For each non-layout constant, the value before and after ``around``'s in the spec's ``SPACE`` order,
    each as its best-predicted layout and as the unpadded baseline's layout (its twin, where that layout
    is legal there, is not already the best-predicted one and is predicted within ``TWIN_MARGIN`` of
    it), and, where the best-predicted layout there is of another class than ``around``'s (a padded
    tile against a swizzled one), as its best-predicted layout of ``around``'s class (its kin, on the
    twin's terms); and the next ``layouts`` best-predicted layouts of ``around``'s own configuration,
    and its twin (on the same terms). The tuner measures these and moves to the
    fastest until none is faster: a local search that the model seeds and the measurements steer.

    Why the twin: the model cannot see a layout's index arithmetic (a padded row's multiply, a swizzle's
    shift-mask-XOR), so where it prefers a padded or swizzled layout by a few percent, the plain one is
    often faster. On today's SIMT GEMM at 2048^3 (H200 run 51, 10,032 candidates measured) the model put
    the padded layouts of the paired-lane thread map first, measured 0.415-0.434 ms, where the unpadded
    layout of the same configuration measured 0.395: without the twin the search never stepped onto that
    thread map and stopped at 1.047 of the best, with it 1.019.

    Why the kin: the search reached ``around`` on a measurement, so the class of layout it stands on has
    earned a look in the next configuration even where the model orders that configuration's classes the
    other way. On today's CUDA transpose at fp32 4096^2 (H200 run 63, 22,724 candidates measured) the
    search stood on a swizzled 64 x 64 tile (37.49 us); the model put the padded layout first on the
    vector path (SCALAR_EDGE 0: PAD 4 predicted 41.44 us, measured 39.23) and its best swizzled layout
    there 2.7% behind (42.57 us predicted, measured 37.09), so without the kin the search never stepped
    onto the vector path's swizzled tiles (70 of the 71 candidates within 2% of the best), and stopped
    at 1.031 of the best, with it 1.020 in the same 26 measurements.
    """
    layout_keys = set(getattr(spec, "LAYOUT_KEYS", ()))
    plain = next((c for c in ranked if "unpadded" in c.roles), None)
    plain_layout = layout_key(spec, plain) if plain is not None and layout_keys else None
    best_of: dict[tuple, Candidate] = {}
    twin_of: dict[tuple, Candidate] = {}
    kin_of: dict[tuple, Candidate] = {}  # each configuration's best-predicted layout of around's class
    own_class = type(around.layout)
    same = []
    here = launch_config(spec, around)
    for c in ranked:
        cfg = launch_config(spec, c)
        best_of.setdefault(cfg, c)
        if cfg not in kin_of and type(c.layout) is own_class:
            kin_of[cfg] = c
        if plain_layout is not None and cfg not in twin_of:
            if layout_key(spec, c) == plain_layout:
                twin_of[cfg] = c
        if cfg == here and c.key != around.key and len(same) < layouts:
            same.append(c)
    out = []
    base = dict(here)
    for name, values in _moves(spec, here, layout_keys).items():
        for v in values:
            step = tuple(sorted({**base, name: v}.items()))
            if step in best_of:
                best = best_of[step]
                out.append(best)
                twin = twin_of.get(step)
                if twin is not None and twin is not best and _close(twin, best):
                    out.append(twin)
                kin = kin_of.get(step)
                if kin is not None and type(best.layout) is not own_class and kin is not twin:
                    if _close(kin, best):
                        out.append(kin)
    own = twin_of.get(here)
    if own is not None and own.key != around.key and own not in same and _close(own, best_of[here]):
        same.append(own)
    return out + same


def repairs(spec: KernelSpec, ranked: list[Candidate], around: Candidate) -> list[Candidate]:
    """Where a walk that stopped at ``around`` can still go: for each launch constant none of whose steps
    (``neighbours``' one value either side) is legal there, each such step repaired by one step of
    another constant, the best-predicted repair of each.

    Why: the walk moves one constant at a time, and some moves are illegal alone. The Gluon GEMM's plain
    tl.dot path where TMA is refused (H100 runs 192-196, every candidate measured): the walk stood on
    128 x 256 x 64 at 8 warps, 1.25-1.27x the best; 4 warps there is illegal (its accumulator alone would
    spill) and BM 64 at 8 warps slower, while the best, 64 x 256 x 64 at 4 warps, is both moves at once.
    Replayed on all 59 recorded studies (``benchmarks/replay_studies.py``; before and after in
    benchmarks/results/cpu/replay_studies_2026-12-06_*.txt) the walk with this last step (taken once, where it
    stops with measurements left: ``strategies/model.py``) reaches the best on three such shapes (1.27 /
    1.19 / 1.27x -> 1.000, 9 more measurements each) and on the int8 8193x16383 transpose (1.030 -> 1.000,
    13 more); no pick moved elsewhere, at 0-2 more measurements (1,057 -> 1,118 in all).
    """
    layout_keys = set(getattr(spec, "LAYOUT_KEYS", ()))
    best_of: dict[tuple, Candidate] = {}
    for c in ranked:
        best_of.setdefault(launch_config(spec, c), c)
    here = launch_config(spec, around)
    base = dict(here)
    moves = _moves(spec, here, layout_keys)

    def config(**change: int) -> tuple:
        return tuple(sorted({**base, **change}.items()))

    out = []
    for name, steps in moves.items():
        if any(config(**{name: v}) in best_of for v in steps):
            continue  # the walk can move along this constant alone
        for v in steps:
            fixes = [best_of[r] for other, ws in moves.items() if other != name for w in ws
                     if (r := config(**{name: v, other: w})) in best_of]  # fmt: skip
            if fixes:
                fix = min(fixes, key=lambda c: c.prediction.seconds)
                if fix not in out:
                    out.append(fix)
    # best-predicted first: the walk takes as many as its measurements left allow
    return sorted(out, key=lambda c: c.prediction.seconds)


# after the first round, the unpadded twins of the configurations measured within this factor of the
# fastest are measured too (``twins``): where a padded or swizzled layout of a configuration measured close,
# its plain layout may be what beats the field (see ``twins``)
TWIN_SWEEP_MARGIN = 1.10


def twins(spec: KernelSpec, ranked: list[Candidate], measured: Sequence[Candidate]) -> list[Candidate]:
    """The unpadded twin of each launch configuration of ``measured`` (in its order): the candidate of that
    configuration with the unpadded baseline's layout, where it is legal, is not in ``measured``, and is
    predicted within ``TWIN_MARGIN`` of the configuration's best-predicted layout ([] for a spec without
    ``LAYOUT_KEYS`` or without an unpadded baseline in the ranking).

    Why: ``neighbours`` offers a twin only around where the walk stands, and the first round measures one
    layout of each top configuration. On the SIMT GEMM at 6144x6144x2048 (H100 run 184) the first round
    measured the capped 128 x 128 tile padded (3.54 ms), slower than 64 x 128's 3.35, so the walk never
    stood on that configuration, and its unpadded twin (predicted 0.7% behind, measured 3.25 in another
    tune) was never offered: the pick was 1.032 of the other tune's."""
    if not getattr(spec, "LAYOUT_KEYS", ()):
        return []
    plain = next((c for c in ranked if "unpadded" in c.roles), None)
    if plain is None:
        return []
    plain_layout = layout_key(spec, plain)
    have = {c.key for c in measured}
    wanted = {launch_config(spec, c): None for c in measured}  # in measured's order
    best_of: dict[tuple, Candidate] = {}
    twin_of: dict[tuple, Candidate] = {}
    for c in ranked:
        cfg = launch_config(spec, c)
        if cfg not in wanted:
            continue
        best_of.setdefault(cfg, c)
        if cfg not in twin_of and layout_key(spec, c) == plain_layout:
            twin_of[cfg] = c
            if len(twin_of) == len(wanted):
                break
    out = []
    for cfg in wanted:
        twin = twin_of.get(cfg)
        if twin is not None and twin.key not in have and _close(twin, best_of[cfg]):
            out.append(twin)
    return out


# The model-only answer takes another layout over the spec's default one (its ``DEFAULTS``' layout constants,
# the "unpadded" baseline: no pad and no swizzle for the CUDA transpose and SIMT GEMM, whose studies set
# this; the 128-byte swizzle for the Gluon GEMM, one replica for the histograms) of the same launch
# configuration only where it predicts it more than 1% faster: below that the layouts differ by what the
# model cannot see (a padded row's multiply, a swizzle's shift-mask-XOR; see ``neighbours``), and the plain
# layout measured the faster. Chosen on the recorded run 1 (SIMT GEMM 2048^3: PAD_A = PAD_B = 4 predicted
# 0.54% ahead of its unpadded twin, measured 1.030 of the best against the twin's 1.017 and 1.020 for the
# unpadded default); held out, today's kernel's exhaustive 2048^3 study (H200 run 55: PAD 4 / 4 predicted
# 0.56% ahead, measured 1.045 against the twin's 1.037, the default 1.040), and no other answer of the 55
# scored configuration-shapes moves. A margin of 1.14% or more would take run 2's SIMT 1024^3 answer off the
# best (1.000 -> 1.020), 1.6% run 20's 768x1536x1024 (1.041 -> 1.101): the gains it may override are ~0.5%.
PLAIN_MARGIN = 1.01


def prefer_plain(
    order: Sequence[int],
    seconds: Sequence[float],
    config_of: Callable[[int], Hashable],
    layout_of: Callable[[int], Hashable],
    plain: Hashable | None,
) -> int:
    """The model-only answer among candidates ``0..n-1`` ranked as ``order`` (best first; ``seconds`` their
    predictions): the first, or the first-ranked candidate of its launch configuration (``config_of``) whose
    layout (``layout_of``) is ``plain``, where that is predicted within ``PLAIN_MARGIN`` of the first."""
    first = order[0]
    if plain is None or layout_of(first) == plain:
        return first
    cfg, limit = config_of(first), PLAIN_MARGIN * seconds[first]
    for i in order:
        if not seconds[i] <= limit:  # beyond the margin, or no prediction (NaN: nothing to compare)
            break
        if layout_of(i) == plain and config_of(i) == cfg:
            return i
    return first


def model_pick(spec: KernelSpec, ranked: list[Candidate]) -> Candidate:
    """What ``autopad.tune`` answers without measuring (and ``autopad.ops`` under AUTOPAD_TUNE=never): the
    model's first-ranked candidate, or the unpadded layout of its launch configuration where the model puts
    that within ``PLAIN_MARGIN`` (``prefer_plain``). A spec without ``LAYOUT_KEYS`` or without an unpadded
    baseline in the ranking gets the first."""
    base = next((c for c in ranked if "unpadded" in c.roles), None)
    if not getattr(spec, "LAYOUT_KEYS", ()) or base is None:
        return ranked[0]
    seconds = [c.prediction.seconds for c in ranked]
    i = prefer_plain(
        range(len(ranked)),
        seconds,
        lambda i: launch_config(spec, ranked[i]),
        lambda i: layout_key(spec, ranked[i]),
        layout_key(spec, base),
    )
    return ranked[i]
