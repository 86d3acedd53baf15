"""autopad/bench.py after its split (bench_job, bench_timing, bench_local, bench_pool): every name it defined
is still importable from it, as the very object of its new home; ``measure`` refuses stale candidates
before anything runs; the no-GPU switch. The moved code's tests live in the test file of its new home."""

from __future__ import annotations

import pytest
from split_checks import assert_reexported

from autopad import bench, bench_job, bench_local, bench_pool, bench_timing
from autopad.bench import gpu_available


def test_every_name_bench_defined_is_the_object_of_its_new_home():
    homes = {
        bench_job: "BenchJob spec_ref load_spec unknown_constants _short",
        bench_timing: "_FLUSH_BYTES _LEAD_HZ _LEAD_MIN_S _LEAD_MAX_S lead_cycles _time _median_iqr Timing "
        "benchmark",
        bench_local: "_outputs _zero_ _poison_ _poison_one poison measure_local _child",
        bench_pool: "Worker WorkerBenchmarker",
    }
    assert_reexported(bench, homes)
    public = "BenchJob Worker WorkerBenchmarker measure_local measure benchmark Timing poison gpu_available"
    assert sorted(bench.__all__) == sorted([*public.split(), "device_info"])
    assert all(hasattr(bench, n) for n in bench.__all__)


def test_no_bench_switch(monkeypatch):
    monkeypatch.setenv("AUTOPAD_NO_BENCH", "1")
    assert gpu_available() is False


def test_candidates_naming_a_constant_the_spec_does_not_have_are_refused_before_anything_runs():
    """A name the build does not read would run the candidate with the real constant at its default under
    the wrong label (a sample written before EDGE became SCALAR_EDGE measured exactly that)."""
    from autopad.bench import measure, unknown_constants
    from autopad.kernels_registry import builtin_spec

    spec = builtin_spec("transpose", "cuda")
    good = dict(spec.DEFAULTS)
    stale = {**{k: v for k, v in good.items() if k != "SCALAR_EDGE"}, "EDGE": 0}
    assert unknown_constants(spec, good) == [] and unknown_constants(spec, stale) == ["EDGE"]
    with pytest.raises(ValueError, match="EDGE not among the spec's constants"):
        measure("transpose", [good, stale], (64, 64), "float32")


def test_measure_without_a_gpu_says_so_instead_of_failing_inside_torch(monkeypatch):
    from autopad.bench import measure

    monkeypatch.setenv("AUTOPAD_NO_BENCH", "1")
    with pytest.raises(RuntimeError, match="no GPU to measure on"):
        measure("transpose", [{}], (64, 64), "float32", isolated=False)
    with pytest.raises(RuntimeError, match="no GPU to measure on"):
        measure("transpose", [{}], (64, 64), "float32")
