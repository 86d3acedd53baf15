"""The shape policy (autopad.ops.policy) without a GPU: a fake kernel measured by a fake benchmarker, and
the built-in specs on the picks recorded on the H200 (benchmarks/results/h200/tune.csv)."""

from __future__ import annotations

import math
import warnings
from types import SimpleNamespace

import fake_kernel
import pytest
from test_tune import FakeBench, _key

import autopad
from autopad.kernels_registry import builtin_spec
from autopad.ops import policy
from autopad.search import Candidate, predict
from autopad.spec import KernelSpec

SHAPE = (4096, 4096)


def _spec(**over):
    """fake_kernel, plus what the policy's guards read: dram_efficiency (a VEC-wide path over rows that are
    not whole vectors streams at half rate) and passes (over N, in chunks of 128 tiles)."""

    def launch_info(c, shape, dtype):
        info = fake_kernel.launch_info(c, shape, dtype)
        info["dram_efficiency"] = 1.0 if shape[1] % c["VEC"] == 0 else 0.5
        info["passes"] = math.ceil(shape[1] / (128 * c["TILE"]))
        return info

    names = ("DTYPES", "SPACE", "DEFAULTS", "textbook", "layout", "legal", "smem_pattern", "traffic",
             "make_inputs", "alloc_output", "build", "run", "reference", "check")  # fmt: skip
    impl = SimpleNamespace(NAME="fake_policy", BACKEND="cuda", launch_info=launch_info,
                           **{n: getattr(fake_kernel, n) for n in names})  # fmt: skip
    for k, v in over.items():
        setattr(impl, k, v)
    return KernelSpec(impl)


@pytest.fixture
def bench(monkeypatch):
    """In-line tunes measure with a fake benchmarker; AUTOPAD_TUNE unset; fresh announcement state."""
    b = FakeBench(default=None)  # distinct deterministic times
    monkeypatch.setattr(policy, "TUNE_OPTIONS", {"benchmarker": b, "top_k": 3})
    monkeypatch.delenv("AUTOPAD_TUNE", raising=False)
    monkeypatch.delenv("AUTOPAD_UNTUNED_FILE", raising=False)
    monkeypatch.setattr(policy, "_ANNOUNCED", False)
    monkeypatch.setattr(policy, "_WARNED_OFFLINE", False)
    monkeypatch.setattr(policy, "_UNTUNED", [])
    return b


def _tune(spec, shape, bench, **kw):
    return autopad.tune(spec.impl, shape, "float32", benchmarker=bench, progress=False, top_k=3, **kw)


def test_exact_shape_uses_its_tuned_pick(bench):
    spec = _spec()
    res = _tune(spec, SHAPE, bench)
    d = policy.decide(spec, SHAPE, "float32")
    assert d.source == "tuned" and d.params == res.best.constants


def test_neighbour_pick_is_reused_where_the_model_says_it_is_as_good(bench):
    spec = _spec()
    bench.times = {_key(TILE=64, PAD=1, VEC=1): 0.5}  # the GPU agrees with the model's best on 4096^2
    res = _tune(spec, SHAPE, bench)
    n = len(bench.jobs)
    d = policy.decide(spec, (4096, 2048), "float32")
    assert d.source == "reused" and d.params == res.best.constants and "4096x4096" in d.detail
    assert len(bench.jobs) == n  # nothing measured


def test_misaligned_shape_refuses_a_vector_pick_and_tunes(bench):
    spec = _spec()
    vec2 = _key(TILE=32, PAD=2, VEC=2)  # the model ranks it second: it is measured
    bench.times = {vec2: 0.1}  # the GPU liked 2-wide vectors on the aligned shape
    res = _tune(spec, SHAPE, bench)
    assert res.best.constants["VEC"] == 2
    with pytest.warns(policy.AutopadTuningWarning, match="streams at 0.50 of copy") as rec:
        d = policy.decide(spec, (4096, 4095), "float32")
    assert d.source == "tuned now"
    msg = str(rec[0].message)
    assert "AUTOPAD_TUNE=offline" in msg and "pretune" in msg and "10-30 s" in msg  # what, how long, opt-out


def test_more_passes_over_the_data_are_never_reused():
    spec = _spec()
    small = {"TILE": 32, "PAD": 2, "VEC": 2}  # one pass of 128 32-wide tiles over 4096 columns, two over 8192
    ranked = autopad.search.rank(spec, (4096, 8192), "float32")
    assert ranked[0].params["TILE"] == 64  # the model's best makes one pass there
    ok, why = policy.reusable(spec, small, (4096, 8192), "float32", None, ranked)
    assert not ok and "2 passes" in why
    assert policy.reusable(
        spec, small, (4096, 4096), "float32", None, autopad.search.rank(spec, SHAPE, "float32")
    )[0]


def test_never_takes_the_models_answer_its_unpadded_twin_within_the_margin(bench, monkeypatch):
    # the same answer as a model-only tune (search_shortlist.model_pick), not the ranking's first: the SIMT
    # GEMM at 2048^3 ranks a PAD 4 / 4 layout first, 0.56% ahead of its unpadded twin
    from autopad.kernels_registry import builtin_spec

    mm, shape = builtin_spec("matmul", "cuda"), (2048, 2048, 2048)
    ranked = autopad.search.rank(mm, shape, "float32", extra=autopad.search.baselines(mm, shape, "float32"))
    monkeypatch.setenv("AUTOPAD_TUNE", "never")
    with pytest.warns(policy.AutopadTuningWarning, match="AUTOPAD_TUNE=never"):
        d = policy.decide(mm, shape, "float32")
    assert d.source == "model" and not bench.jobs
    assert d.params == autopad.search.model_pick(mm, ranked).params != ranked[0].params


def test_never_and_offline_take_the_models_pick_without_tuning(bench, monkeypatch, tmp_path):
    spec = _spec()
    ranked = autopad.search.rank(
        spec, SHAPE, "float32", extra=autopad.search.baselines(spec, SHAPE, "float32")
    )
    monkeypatch.setenv("AUTOPAD_TUNE", "never")
    with pytest.warns(policy.AutopadTuningWarning, match="AUTOPAD_TUNE=never"):
        d = policy.decide(spec, SHAPE, "float32")
    assert d.source == "model" and d.params == ranked[0].params and not bench.jobs
    monkeypatch.setenv("AUTOPAD_TUNE", "offline")
    log = tmp_path / "untuned.txt"
    monkeypatch.setenv("AUTOPAD_UNTUNED_FILE", str(log))
    with pytest.warns(policy.AutopadTuningWarning, match="offline"):
        policy.decide(spec, (1024, 1024), "float32")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the second untuned shape passes without a word
        assert policy.decide(spec, (2048, 1024), "float32").source == "model"
    assert not bench.jobs
    assert log.read_text().splitlines() == ["fake_policy 1024x1024 float32", "fake_policy 2048x1024 float32"]
    assert ("fake_policy", (2048, 1024), "float32", None) in policy.untuned()


def test_always_tunes_every_new_shape(bench, monkeypatch):
    spec = _spec()
    bench.times = {_key(TILE=64, PAD=1, VEC=1): 0.5}
    _tune(spec, SHAPE, bench)
    monkeypatch.setenv("AUTOPAD_TUNE", "always")
    with pytest.warns(policy.AutopadTuningWarning):
        assert policy.decide(spec, (4096, 2048), "float32").source == "tuned now"


def test_first_use_announces_fully_once_then_briefly(bench):
    spec = _spec()
    with pytest.warns(policy.AutopadTuningWarning) as first:
        policy.decide(spec, (512, 512), "float32")
    with pytest.warns(policy.AutopadTuningWarning) as second:
        policy.decide(spec, (256, 512), "float32")
    assert "ahead of time" in str(first[0].message) and "ahead of time" not in str(second[0].message)
    assert "fake_policy [cuda] 256x512 float32" in str(second[0].message)


def test_a_tune_where_nothing_runs_correctly_refuses_to_run(bench):
    spec = _spec()
    ranked = autopad.search.rank(spec, SHAPE, "float32")
    bench.wrong = {c.key for c in ranked}
    with pytest.warns(policy.AutopadTuningWarning), pytest.raises(RuntimeError, match="no candidate"):
        policy.decide(spec, SHAPE, "float32")


def test_bad_mode_is_named(monkeypatch):
    monkeypatch.setenv("AUTOPAD_TUNE", "sometimes")
    with pytest.raises(ValueError, match="AUTOPAD_TUNE: 'sometimes'"):
        policy.tune_mode()


def test_an_unknown_input_class_is_refused_in_every_mode(monkeypatch, tmp_path):
    """A misspelt ``dist`` ran the model's pick under never / offline (and was written to
    AUTOPAD_UNTUNED_FILE, which pretune then refused) where first-use's tune refused it."""
    spec = builtin_spec("histogram", "cuda")
    log = tmp_path / "untuned.txt"
    monkeypatch.setenv("AUTOPAD_UNTUNED_FILE", str(log))
    for mode in policy.TUNE_MODES:
        with pytest.raises(ValueError, match=r"dist: 'zipf' is not one of uniform, skewed, single, sorted"):
            policy.decide(spec, (100_000, 256), "int32", "zipf", mode=mode)
    assert not log.exists() and not [u for u in policy.untuned() if u[3] == "zipf"]
    assert policy.normalize_dist(spec, None) == "uniform"
    assert policy.normalize_dist(spec, "sorted") == "sorted"
    with pytest.raises(ValueError, match="dist: transpose takes no input class"):
        policy.normalize_dist(builtin_spec("transpose", "cuda"), "uniform")


# ---- the built-in specs, on picks recorded on the H200 (tune.csv, 2026-11-29) ------------------------------

T16_16384 = {
    "PAD": 0,
    "READOUT": 1,
    "SW_MAX_PHASE": 16,
    "SW_PER_PHASE": 16,
    "SW_VEC": 8,
    "THREADS": 128,
    "TILE_M": 128,
    "TILE_N": 128,
    "VEC": 8,
}  # fmt: skip  (transpose fp16 16384^2)
H_256 = {
    "AGG": 0,
    "BINS_PER_PASS": 256,
    "BLOCKS_PER_SM": 2,
    "INTERLEAVED": 0,
    "ITEMS": 4,
    "PAD": 0,
    "REPLICAS": 1,
    "THREADS": 1024,
}  # fmt: skip  (histogram 2^28 x 256 int32)


def _candidate(spec, constants, shape, dtype, dist=None):
    c = dict(constants)
    frozen = tuple(sorted(c.items()))
    return Candidate(frozen, spec.layout(c, dtype), predict(spec, c, shape, dtype, dist=dist))


def _recorded(spec, pick, **old):
    """A recorded pick in today's space: constants added since take their old behaviour (``old``) or the
    spec's defaults; skipped if the spec no longer has the constants it was recorded with."""
    if not set(pick) <= set(spec.SPACE):
        pytest.skip(f"{spec.NAME}'s space no longer has {sorted(set(pick) - set(spec.SPACE))}")
    return {**dict(spec.DEFAULTS), **{k: v for k, v in old.items() if k in spec.SPACE}, **pick}


def test_recorded_16384_fp16_transpose_pick_is_not_reused_on_4097x8191():
    spec = builtin_spec("transpose", "cuda")
    shape = (4097, 8191)
    pick = _recorded(spec, T16_16384, EDGE=0)  # EDGE 0: the guarded scalar path the pick was measured with
    base = _recorded(spec, {}, EDGE=0)  # the unpadded 32 x 32 scalar baseline
    assert spec.legal(pick, shape, "float16") and spec.legal(base, shape, "float16")
    ok, why = policy.reusable(spec, pick, shape, "float16", None, [_candidate(spec, base, shape, "float16")])
    assert not ok and "alignment" in why  # its 16-byte vectors take the scalar path on odd rows


def test_recorded_256_bin_histogram_pick_is_not_reused_for_4096_bins():
    spec = builtin_spec("histogram", "cuda")
    shape = (1 << 24, 4096)
    pick = _recorded(spec, H_256)
    best = _candidate(spec, dict(pick, BINS_PER_PASS=4096), shape, "int32", "uniform")
    ok, why = policy.reusable(spec, pick, shape, "int32", "uniform", [best])
    assert not ok and "16 passes" in why


def test_the_ops_plan_with_the_profile_tune_uses():
    assert policy._arch({"cc": "90", "name": "NVIDIA H100 80GB HBM3"}) == "h100"
    assert policy._arch({"cc": "90", "name": "NVIDIA H200"}) == "sm_90"
    assert policy._arch({}) == "sm_90"
