"""CUDA histogram, the predictor's side: AGG 2's uniform test per value (``UNIFORM_TEST_CYCLES``) in
``launch_info`` and ``launch_info_batch``, and the measured effect it reproduces (CPU only)."""

from __future__ import annotations

import numpy as np
import pytest
from autopad.kernels.cuda import histogram as H

from autopad.kernels_registry import builtin_spec
from autopad.search import predict

S = H.SPEC
BASE = dict(H.DEFAULTS, THREADS=1024, BLOCKS_PER_SM=2, ITEMS=2)


@pytest.mark.parametrize("dtype,per", [("int32", 4), ("uint8", 16)])
def test_uniform_test_is_charged_per_value_of_every_warp(dtype, per):
    shape = (1 << 24, 256)
    agg0 = S.launch_info(dict(BASE, AGG=0), shape, dtype)
    agg2 = S.launch_info(dict(BASE, AGG=2), shape, dtype)
    assert "issue_cycles" not in agg0
    assert agg2["issue_cycles"] == pytest.approx(H.UNIFORM_TEST_CYCLES * 32 * 2 * per)
    # the rest of the launch is AGG 0's: the test is the only difference the predictor is told of
    assert {k: v for k, v in agg2.items() if k != "issue_cycles"} == agg0
    # AGG 1's warp match is charged as before, not the uniform test
    agg1 = S.launch_info(dict(BASE, AGG=1), shape, dtype)
    assert agg1["issue_cycles"] == pytest.approx(H.MATCH_ANY_CYCLES * 32 * 2 * per)


def test_uniform_test_in_the_16_bit_counters_too():
    c16 = dict(H.DEFAULTS, BINS_PER_PASS=65536, COUNTER=16, THREADS=1024, BLOCKS_PER_SM=1, ITEMS=2)
    shape = (1 << 24, 65536)
    assert S.legal(dict(c16, AGG=2), shape, "int32")
    assert S.launch_info(dict(c16, AGG=2), shape, "int32")["issue_cycles"] == pytest.approx(
        H.UNIFORM_TEST_CYCLES * 32 * 2 * 4
    )
    assert "issue_cycles" not in S.launch_info(dict(c16, AGG=0), shape, "int32")


def test_batch_agrees_on_the_uniform_test():
    rows = [dict(BASE, AGG=a, ITEMS=i, THREADS=t) for a in (0, 1, 2) for i in (1, 2, 4) for t in (256, 512)]
    cols = {k: np.array([r[k] for r in rows]) for k in H.SPACE}
    for dtype in ("int32", "uint8"):
        batch = S.launch_info_batch(cols, (10000019, 100), dtype)
        one = [S.launch_info(r, (10000019, 100), dtype) for r in rows]
        assert np.allclose(batch["issue_cycles"], [i.get("issue_cycles", 0.0) for i in one])


def test_uniform_test_slows_uint8_not_int32_streams():
    """H200 study run 1, the fastest AGG 0 configuration's AGG 2 twin: uint8 2^28 x 256 measured 1.325x
    (issue-bound: 16 values a 16-byte load), int32 2^26 x 256 1.024x (DRAM-bound: the test hides). The
    predictor, told of the test, must see uint8's AGG 2 slower by a visible margin and int32's by little
    (without the term both ratios are exactly 1)."""
    ratio = {}
    for dtype, n in (("uint8", 1 << 28), ("int32", 1 << 26)):
        spec = builtin_spec("histogram", "cuda")
        t = [predict(spec, dict(BASE, AGG=a), (n, 256), dtype, dist="uniform").seconds for a in (0, 2)]
        ratio[dtype] = t[1] / t[0]
    assert 1.06 < ratio["uint8"] < 1.325  # 1.09 today: the model still under-charges uint8's issue
    assert 1.0 <= ratio["int32"] < 1.05  # 1.04: only the streams' imperfect overlap
    assert ratio["uint8"] - 1 > 2 * (ratio["int32"] - 1)
