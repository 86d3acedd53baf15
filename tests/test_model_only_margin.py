"""The margin evaluation (benchmarks/model_only_margin.py): the rule, the held-out choice, the counts."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import model_only_margin as mm  # noqa: E402


def case(gain: float, pick_ms: float, default_ms: float, best_ms: float = 1.0, se: float = 0.001) -> mm.Case:
    # candidates: 0 the model's pick, 1 the default, 2 the measured best
    ms = np.array([pick_ms, default_ms, best_ms])
    return mm.Case("t", "run", f"shape {gain}", gain, 0, 1, ms, np.full(3, se))


def test_the_default_is_kept_only_while_the_predicted_gain_is_within_the_margin():
    c = case(1.01, 1.05, 1.02)
    assert c.answer(None) == 0  # no rule: the model's pick
    assert c.answer(0.005) == 0  # a 1% predicted gain beats a 0.5% margin
    assert c.answer(0.02) == 1  # ... not a 2% one
    assert c.answer(math.nextafter(c.gain - 1.0, 0.0)) == 0  # the cut is at the gain itself
    no_default = mm.Case("t", "run", "s", math.nan, 0, None, np.array([1.0, 2.0]), np.zeros(2))
    assert no_default.answer(0.5) == 0


def test_summary_counts_answers_slower_than_the_default_and_beyond_noise():
    cs = [case(1.01, 1.05, 1.02), case(1.5, 1.0, 2.0), case(1.02, 1.001, 1.0, se=0.01)]
    before, after = mm.summary(cs, None), mm.summary(cs, 0.03)
    assert (before["slower"], before["beyond_noise"]) == (2, 1)  # the third is within its noise
    assert (after["slower"], after["beyond_noise"]) == (0, 0)
    assert before["within_2pct"] == 2 and after["within_2pct"] == 3
    assert before["worst"] == 1.05 and after["worst"] == 1.02


def test_the_chosen_interval_is_the_lowest_that_minimises_the_loss():
    # a small predicted gain whose pick measured slower (keeping the default helps), then a larger one
    # whose pick measured faster (keeping the default hurts): the best margins lie between the two gains
    cs = [case(1.004, 1.03, 1.02, best_ms=1.02), case(1.017, 1.0, 1.19)]
    lo, hi = mm.choose(cs, mm.quality)
    assert lo == 1.004 - 1.0 and hi == 1.017 - 1.0
    # with nothing to gain from the default, the interval starts at no margin at all
    lo, hi = mm.choose([case(1.01, 1.0, 1.04)], mm.quality)
    assert (lo, hi) == (0.0, 1.01 - 1.0)
    # counting answers slower than the default beyond noise first: only a margin past every such pick
    cs = [case(1.05, 1.03, 1.0), case(1.02, 1.0, 1.2)]
    assert mm.choose(cs, mm.quality) == (0.0, 1.02 - 1.0)
    assert mm.choose(cs, mm.default_first) == (1.05 - 1.0, math.inf)
