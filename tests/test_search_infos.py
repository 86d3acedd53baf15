"""search_infos: every candidate's launch info is checked, each key against its own range, on both the
one-at-a-time path (``launch_info``) and the batch path (``launch_info_batch``)."""

from __future__ import annotations

import types

import fake_kernel
import numpy as np
import pytest

from autopad.predict_info import out_of_range
from autopad.search import rank
from autopad.spec import KernelSpec, SpecError

SHAPE = (256, 256)


def _spec(bad_key: str, bad_value: float, batch: bool, only_bad: bool = False) -> KernelSpec:
    """fake_kernel with ``bad_key`` set to ``bad_value`` on its TILE 64 candidates only (never the first)."""
    mod = types.ModuleType("fake_bad")
    for k in ("NAME", "BACKEND", "DTYPES", "SPACE", "DEFAULTS", "textbook", "layout", "legal", "smem_pattern",
              "traffic", "make_inputs"):  # fmt: skip
        if hasattr(fake_kernel, k):
            setattr(mod, k, getattr(fake_kernel, k))

    good = {"l2_async": 0.5, "dram_efficiency": 1.0, "flops_efficiency": 1.0, "mma_bytes": 0.0}

    def launch_info(c, shape, dtype):
        info = dict(fake_kernel.launch_info(c, shape, dtype), l2_bytes=1e6, **good)
        if only_bad:  # the key on the TILE 64 candidates alone
            info.pop(bad_key)
        return {**info, bad_key: bad_value} if c["TILE"] == 64 else info

    mod.launch_info = launch_info
    if batch:

        def launch_info_batch(cols, shape, dtype):
            rows = [dict(zip(cols, v)) for v in zip(*(np.asarray(x).tolist() for x in cols.values()))]
            infos = [launch_info(r, shape, dtype) for r in rows]
            return {k: np.array([i[k] for i in infos], dtype=np.float64) for k in infos[0]}

        mod.launch_info_batch = launch_info_batch
    return KernelSpec(mod)


@pytest.mark.parametrize("batch", [False, True])
@pytest.mark.parametrize(
    "key,value,words",
    [
        ("l2_async", 2.0, "share of l2_bytes, 0 to 1"),
        ("dram_efficiency", 1.5, "must be in \\(0, 1\\]"),
        ("flops_efficiency", 0.0, "must be in \\(0, 1\\]"),
        ("mma_bytes", 3.0, "must be 0, 1, 2, 4 or 8"),
    ],
)
def test_a_value_out_of_its_keys_range_is_refused_on_any_candidate(batch, key, value, words):
    """Not only the first candidate's: a later candidate's share above 1 (which the predictor would clip
    silently) is named, with its constants, on the per-candidate and the batch path alike."""
    with pytest.raises(SpecError, match=words) as e:
        rank(_spec(key, value, batch), SHAPE, "float32")
    assert "'TILE': 64" in str(e.value)


def test_good_values_rank_and_a_key_some_candidates_leave_out_is_theirs_to_leave():
    assert len(rank(_spec("l2_async", 1.0, True), SHAPE, "float32")) > 1
    # dram_efficiency on TILE 64 only: the others take its default, not a 0 that breaks its range
    assert len(rank(_spec("dram_efficiency", 0.5, False, only_bad=True), SHAPE, "float32")) > 1


def test_out_of_range_follows_check_launch_info():
    v = np.array([0.0, 0.5, 1.0, 1.5])
    assert out_of_range("l2_async", v).tolist() == [False, False, False, True]
    assert out_of_range("dram_efficiency", v).tolist() == [True, False, False, True]
    assert out_of_range("blocks", v).tolist() == [True, True, False, False]
    assert out_of_range("mma_bytes", np.array([0.0, 2.0, 3.0])).tolist() == [False, False, True]
    assert not out_of_range("l2_bytes", v).any()
