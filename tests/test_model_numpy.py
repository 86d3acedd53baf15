"""Tests for the model's numpy backend (autopad/model_numpy.py)."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.mark.parametrize("arch", ["sm_90", "cdna3", "banks64"])
@pytest.mark.parametrize("width", [4, 8])
def test_atomics_counted_without_a_sort_equal_the_sorted_count(arch, width):
    """numpy counts atomics (no broadcast, no merged phases) with one bincount per block of phases
    (``_count_costs``); the sort-based ``_phase_cost`` gives the same per-phase costs, addresses beyond
    2**31 included, across blocks of ``_COUNT_ROWS`` phases."""
    from autopad.arch import get_arch
    from autopad.model_numpy import _COUNT_ROWS, _count_costs, _phase_cost
    from autopad.model_rules import _rule

    a = get_arch(arch)
    rule = _rule("atomic", width, a)
    rng = np.random.default_rng(width + len(arch))
    n = _COUNT_ROWS + 37
    addr = (
        rng.integers(0, 1 << 40, size=(n, a.warp_size))
        % (rng.choice([128, 4096, 1 << 32], size=(n, 1)) // width)
    ) * width
    addr[: n // 3] = addr[: n // 3, :1]  # every lane on one word: serialised
    addr[rng.random(addr.shape) < rng.choice([0.0, 0.3, 1.0], size=(n, 1))] = -1
    per = a.warp_size // rule.lanes
    want = _phase_cost(addr.reshape(-1, rule.lanes), False, rule.unit, rule.unit_banks).reshape(n, per)
    np.testing.assert_array_equal(_count_costs(addr, rule), want)
    assert (want.max() == rule.lanes) and want.min() == 0
