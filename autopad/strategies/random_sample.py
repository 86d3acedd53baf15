"""Random sampling: a seeded uniform sample of the legal space, plus the baselines for comparison.

The sample has ``budget`` candidates, or ``top_k + refine`` without a budget, so that it spends what the
default strategy would; it is the control that shows what the model's ordering is worth.
"""

from __future__ import annotations

import random

from . import Measure, Options


def run(ranked: list, measure: Measure, options: Options) -> None:
    n = options.budget if options.budget is not None else options.top_k + options.refine
    base = [c for c in ranked if c.roles]
    rest = [c for c in ranked if not c.roles]
    pick = random.Random(options.seed).sample(rest, min(max(0, n - len(base)), len(rest)))
    measure((base + pick)[:n])
