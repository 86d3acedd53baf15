"""Tests for autopad/validate_stride.py: Spearman against hand-computed values, the stride table without a
GPU (moved from tests/test_validate.py)."""

from __future__ import annotations

import numpy as np
import pytest

from autopad import validate_stride as vs


# ------------------------------------------------------------------------------------------- Spearman
def test_spearman_hand_computed():
    assert vs.spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]) == pytest.approx(0.8207826816681233)
    # ranks x: 1,2,3,4,5; y: 1,2,3.5,5,3.5 -> Pearson of the ranks = 0.8207826816681233 (by hand)
    assert vs.spearman([10, 20, 30], [3, 2, 1]) == pytest.approx(-1.0)
    assert vs.spearman([1, 1, 2, 2], [1, 1, 2, 2]) == pytest.approx(1.0)
    assert np.isnan(vs.spearman([1, 1, 1], [1, 2, 3]))
    with pytest.raises(ValueError):
        vs.spearman([1], [1])


def test_stride_table_without_gpu():
    strides = list(vs.SEED_STRIDES)
    times = [vs.SEED_STRIDES[s] * 0.5 for s in strides]  # the seeds' table, at 0.5 ms for stride 1
    t = vs.stride_table(strides, times)
    deg = {r["stride"]: r["predicted_degree"] for r in t["rows"]}
    assert deg == {0: 1, 1: 1, 2: 2, 4: 4, 8: 8, 16: 16, 32: 32, 33: 1, 64: 32, 65: 1}
    assert [r["slowdown"] for r in t["rows"]] == pytest.approx([vs.SEED_STRIDES[s] for s in strides])
    assert t["spearman_measured_vs_seed"] == pytest.approx(1.0)
    assert t["spearman_measured_vs_predicted"] > 0.9
