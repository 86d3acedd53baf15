"""The default strategy: the model's shortlist, then a local search from the fastest measured candidate.

The model orders the layouts of one launch configuration well (it counts bank conflicts exactly) but ties
many launch configurations at the bandwidth floor, so the first round measures the top_k, the baselines and
the best-predicted layout of each of the top_k best configurations (``search.shortlist``). Then it walks:
from the fastest measured, the neighbouring value of each launch constant and the next layouts of the same
configuration (``search.neighbours``); it moves while something is faster and stops after ``refine``
more measurements. On the H200 study this measures 0.2% to 1% of a CUDA space and lands within 2% of the
exhaustive best in 16 of 19 shapes (benchmarks/results/h200/quality).
"""

from __future__ import annotations

from ..search import neighbours, shortlist
from . import Measure, Options


def run(ranked: list, measure: Measure, options: Options) -> None:
    short = shortlist(ranked, options.top_k, options.spec)
    if options.budget is not None:
        short = short[: options.budget]
    meas = measure(short)
    limit = options.refine if options.budget is None else min(options.refine, options.budget - len(short))
    seen = {c.key for c in short}
    while limit > 0 and not measure.exhausted:
        ok = [c for c in short if c.key in meas and meas[c.key].correct]
        if not ok:
            return
        here = min(ok, key=lambda c: meas[c.key].ms)
        step = [c for c in neighbours(options.spec, ranked, here) if c.key not in seen][:limit]
        if not step:
            return
        seen.update(c.key for c in step)
        short += step
        limit -= len(step)
        meas = {**meas, **measure(step)}
        better = [c for c in step if c.key in meas and meas[c.key].correct]
        if not better or min(meas[c.key].ms for c in better) >= meas[here.key].ms:
            return
