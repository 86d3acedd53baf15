"""The default strategy: the model's shortlist, then a local search from the fastest measured candidate.

The model orders the layouts of one launch configuration well (it counts bank conflicts exactly) but ties
many launch configurations at the bandwidth floor, so the first round measures the top_k, the baselines and
the best-predicted layout of each of the top_k best configurations (``search.shortlist``), then the
unpadded twins of the configurations it measured within ``TWIN_SWEEP_MARGIN`` of the fastest
(``search_shortlist.twins``: the walk offers a twin only around where it stands). Then it walks:
from the fastest measured, the neighbouring value of each launch constant and the next layouts of the same
configuration (``search.neighbours``); it moves while something is faster, and where it stops with
measurements left it takes one more step onto the moves that are illegal alone, each repaired by a step
of another constant (``search_shortlist.repairs``), walking on if one is faster. Where the spec names families
(``FAMILY_KEYS``: the constants that switch the kernel's code path, the transpose's vector width), the
shortlist holds each family's best-predicted candidate, and when the walk stops with ``refine``
measurements left it walks again from the fastest measured candidate of each other family that is within
``FAMILY_MARGIN`` of the fastest, fastest family first, each walk on an equal share of the measurements
left. All walks together stop after ``refine`` more measurements. On the H200 studies this measures 0.1%
to 1% of a CUDA space; on the transpose's four studied shapes of 2026-12-04 the real tuner's pick was
0.996-1.004 of the exhaustive best (README, "Measured results").

Why walk again: an error of the model that shifts a whole code path can bury the fastest one, and the
walk steps one constant at a time. At fp32 4097x8191 (rows off every vector grid; H200 run 114, all
26,680 candidates measured; within width 4 the model ranks at Spearman 0.89) it put width 1 tiles first,
predicted 65-67 us (its first eight measured 78-97), while the fastest (width 4, 64 x 64, 76.4 us) ranked
2,164th: the walk from the first round's fastest stopped at 1.022 of the best; walking again from width
4's foothold (its best-predicted candidate, measured 1.13 of the fastest) reaches the best in two steps
(on the GPU: 1.027 in run 116, 1.000 in runs 119-120). Why equal shares: taken in turn, a family measured
a little ahead (width 2's foothold, 1% from width 4's there) spends the budget the next one needed
(replayed with it 3% faster: 1.022 in turn, 1.000 shared).
"""

from __future__ import annotations

from typing import Any

from ..search import neighbours, shortlist
from ..search_shortlist import FAMILY_MARGIN, TWIN_SWEEP_MARGIN, family, repairs, twins
from . import Measure, Options


def run(ranked: list, measure: Measure, options: Options) -> None:
    short = shortlist(ranked, options.top_k, options.spec)
    if options.budget is not None:
        short = short[: options.budget]
    meas = measure(short)
    limit = options.refine if options.budget is None else min(options.refine, options.budget - len(short))
    seen = {c.key for c in short}
    ok = [c for c in short if c.key in meas and meas[c.key].correct]
    if not ok:
        return
    here = min(ok, key=lambda c: meas[c.key].ms)
    # the unpadded twins of the configurations that measured close to the fastest, before the walk
    near = [c for c in sorted(ok, key=lambda c: meas[c.key].ms)
            if meas[c.key].ms <= TWIN_SWEEP_MARGIN * meas[here.key].ms]  # fmt: skip
    extra = [c for c in twins(options.spec, ranked, near) if c.key not in seen][: max(limit, 0)]
    if extra and not measure.exhausted:
        seen.update(c.key for c in extra)
        short += extra
        limit -= len(extra)
        meas = {**meas, **measure(extra)}
        ok = [c for c in short if c.key in meas and meas[c.key].correct]
        here = min(ok, key=lambda c: meas[c.key].ms)
    limit, meas = _walk(ranked, measure, options, here, short, seen, limit, meas)
    if not getattr(options.spec, "FAMILY_KEYS", ()):
        return
    ok = [c for c in short if c.key in meas and meas[c.key].correct]
    fastest = min(ok, key=lambda c: meas[c.key].ms)
    # the other families within FAMILY_MARGIN of the fastest, each from its fastest measured, fastest first;
    # each walk gets an equal share of the measurements left (what one leaves passes to the next), so a
    # family that measured a little ahead cannot spend the budget another one needed
    walked = {family(options.spec, here), family(options.spec, fastest)}
    starts: dict[tuple, Any] = {}
    for c in sorted(ok, key=lambda c: meas[c.key].ms):
        f = family(options.spec, c)
        if f not in walked and meas[c.key].ms <= FAMILY_MARGIN * meas[fastest.key].ms:
            starts.setdefault(f, c)
    for i, start in enumerate(starts.values()):
        if limit <= 0 or measure.exhausted:
            return
        share = -(-limit // (len(starts) - i))
        left, meas = _walk(ranked, measure, options, start, short, seen, share, meas)
        limit -= share - left


def _walk(
    ranked: list,
    measure: Measure,
    options: Options,
    here: Any,
    short: list,
    seen: set,
    limit: int,
    meas: dict,
) -> tuple[int, dict]:
    """The local search from ``here``: measure its neighbours (``short`` and ``seen`` grow), move to the
    fastest while it is faster than where the search stands; where it stops with measurements left, one
    more step onto the moves that are illegal alone, each repaired by a step of another constant
    (``search_shortlist.repairs``), and on if one is faster. The measurements left, and all so far."""
    escape = used = False  # the next step takes the repaired moves; they were taken once already
    while limit > 0 and not measure.exhausted:
        pool = repairs(options.spec, ranked, here) if escape else neighbours(options.spec, ranked, here)
        step = [c for c in pool if c.key not in seen][:limit]
        moved = False
        if step:
            seen.update(c.key for c in step)
            short += step
            limit -= len(step)
            meas = {**meas, **measure(step)}
            better = [c for c in step if c.key in meas and meas[c.key].correct]
            best = min(better, key=lambda c: meas[c.key].ms) if better else None
            if best is not None and meas[best.key].ms < meas[here.key].ms:
                here, moved = best, True
        if moved:
            escape = False
        elif escape or used:
            break
        else:  # the walk stopped: one step onto the repaired moves, then on if one was faster
            escape = used = True
    return limit, meas
