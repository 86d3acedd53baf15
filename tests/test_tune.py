"""tune()'s selection logic with a fake kernel and a fake benchmarker (no GPU needed)."""

from __future__ import annotations

import json
import subprocess
import sys

import fake_kernel
import pytest
from split_checks import assert_reexported

import autopad
from autopad.results import Measurement, TuneResult
from autopad.search import rank
from autopad.spec import KernelSpec

SHAPE = (4096, 4096)


class FakeBench:
    """Times from a table (ms by key); ``wrong`` keys give wrong answers, ``broken`` ones fail to compile."""

    def __init__(self, times=None, wrong=(), broken=(), spread=0.001, default=1.0):
        self.times = dict(times or {})
        self.wrong, self.broken = set(wrong), set(broken)
        self.spread, self.default = spread, default
        self.jobs = []

    def measure(self, job):
        self.jobs.append(job)
        for key, _ in job.candidates:
            if key in self.broken:
                yield Measurement(key, False, error="compile: error: identifier 'PAD' is undefined")
            elif key in self.wrong:
                yield Measurement(key, False, error="wrong result: 12 of 1024 elements differ")
            else:
                ms = self.times.get(key, self.default)
                if ms is None:  # distinct, deterministic times: nothing ties
                    ms = 1.0 + sum(map(ord, key)) % 97 / 10
                yield Measurement(key, True, ms=ms, spread_ms=self.spread, runs=30)


def _key(**c):
    return ",".join(f"{k}={v}" for k, v in sorted(c.items()))


def _tune(bench, **kw):
    kw.setdefault("top_k", 4)
    return autopad.tune(fake_kernel, SHAPE, "float32", benchmarker=bench, progress=False, **kw)


def test_model_only_without_a_gpu(monkeypatch, capsys):
    monkeypatch.setenv("AUTOPAD_NO_BENCH", "1")
    res = autopad.tune(fake_kernel, SHAPE, "float32", progress=False)
    assert res.mode == "model-only"
    assert "model alone" in res.message and "model alone" in capsys.readouterr().err
    assert all(c.measured_ms is None for c in res.candidates)
    assert res.best.measured is None
    ranked = rank(KernelSpec(fake_kernel), SHAPE, "float32")
    assert res.best.constants == ranked[0].params


def test_a_model_only_answer_from_the_cache_says_so_too(monkeypatch, capsys):
    """A repeated model-only tune is a cache hit: it must still say, as the first did, that the model alone
    ranked it (``autopad tune --quiet`` prints nothing else, and a script's stderr was silent)."""
    monkeypatch.setenv("AUTOPAD_NO_BENCH", "1")
    autopad.tune(fake_kernel, SHAPE, "float32", progress=False)
    capsys.readouterr()
    res = autopad.tune(fake_kernel, SHAPE, "float32", progress=False)
    assert res.cache_hit and res.mode == "model-only"
    assert "model alone" in capsys.readouterr().err


def test_no_legal_candidate_names_every_path_s_limit(monkeypatch):
    """A shape no candidate takes is refused with the default candidate's reason and the other reasons met
    in the space: the Triton histogram at 65,536 bins named only tl.histogram's 4,096 (its default path),
    though the limit that matters, the shared-memory path's, is 16,384."""
    pytest.importorskip("triton")
    monkeypatch.setenv("AUTOPAD_NO_BENCH", "1")
    with pytest.raises(ValueError) as err:
        autopad.tune("histogram", (100, 65536), "int32", backend="triton", progress=False, cache=False)
    msg = str(err.value)
    assert "its default candidate is rejected because: BINS 65536: tl.histogram needs a power of two" in msg
    assert "the others' reasons: PATH 1 takes up to 16384 bins" in msg


def test_no_legal_candidate_counts_reasons_that_differ_only_in_numbers_as_one(monkeypatch):
    """Every candidate of the README's transpose fails the grid limit at 2**32 rows, each with its own grid in
    the text: that is the default's reason again, not another one to list."""
    from own_kernel_example import Transpose

    monkeypatch.setenv("AUTOPAD_NO_BENCH", "1")
    with pytest.raises(ValueError, match="outside CUDA's limits") as err:
        autopad.tune(Transpose, (2**32, 64), "float32", progress=False, cache=False)
    assert "the others' reasons" not in str(err.value)


def test_dtype_and_profile_names_in_capitals_are_taken(monkeypatch):
    """'FP16' and 'H100' are float16 and the h100 profile, stored under their own names (so a later 'fp16'
    / 'h100' tune is the same question)."""
    monkeypatch.setenv("AUTOPAD_NO_BENCH", "1")
    res = autopad.tune(fake_kernel, SHAPE, "FP32", arch="H100", progress=False, cache=False)
    assert (res.dtype, res.arch) == ("float32", "h100")


def test_export_replaces_a_different_file_only_with_overwrite(monkeypatch, tmp_path):
    """``tune(export=...)`` onto a file holding something else is refused (the file kept), and the refusal's
    advice, overwrite=True, is an argument tune() takes: then the file holds the pick. A non-bool is refused
    before any work."""
    monkeypatch.setenv("AUTOPAD_NO_BENCH", "1")
    dest = tmp_path / "pick.json"
    dest.write_text("mine\n")
    with pytest.raises(FileExistsError, match="overwrite=True"):
        autopad.tune(fake_kernel, SHAPE, "float32", progress=False, export=dest)
    assert dest.read_text() == "mine\n"
    res = autopad.tune(fake_kernel, SHAPE, "float32", progress=False, export=dest, overwrite=True)
    assert json.loads(dest.read_text())["best"]["constants"] == res.best.constants
    with pytest.raises(ValueError, match="overwrite: must be True or False"):
        autopad.tune(fake_kernel, SHAPE, "float32", progress=False, export=dest, overwrite="yes")


def test_model_only_answer_is_the_unpadded_twin_within_the_margin_and_an_older_answer_is_not_reused(
    monkeypatch, tmp_path
):
    # the SIMT GEMM at 2048^3: the model ranks PAD_A = PAD_B = 4 first, 0.56% ahead of the unpadded layout of
    # the same launch configuration, which measured faster (H200 run 55); without a GPU tune answers that
    import json

    from autopad.kernels_registry import builtin_spec
    from autopad.search import baselines, model_pick

    monkeypatch.setenv("AUTOPAD_NO_BENCH", "1")
    shape = (2048, 2048, 2048)
    mm = builtin_spec("matmul", "cuda")
    ranked = rank(mm, shape, "float32", extra=baselines(mm, shape, "float32"))
    res = autopad.tune("matmul", shape, "float32", backend="cuda", progress=False)
    assert res.mode == "model-only" and not res.cache_hit
    assert res.best.constants == model_pick(mm, ranked).params != ranked[0].params
    assert res.best.constants["PAD_A"] == res.best.constants["PAD_B"] == 0
    assert autopad.tune("matmul", shape, "float32", backend="cuda", progress=False).cache_hit
    # a model-only result cached under the earlier rule (the ranking's first; its params had no "answer")
    # is answered again, not reused
    (path,) = (tmp_path / "autopad-cache").rglob("matmul-*.json")
    data = json.loads(path.read_text())
    del data["result"]["params"]["answer"]
    data["result"]["result"]["best"]["constants"] = dict(ranked[0].params)
    path.write_text(json.dumps(data))
    again = autopad.tune("matmul", shape, "float32", backend="cuda", progress=False)
    assert not again.cache_hit and again.best.constants == res.best.constants


def test_fastest_correct_candidate_wins_and_wrong_ones_never_do():
    fastest = _key(TILE=32, PAD=0, VEC=1)  # the unpadded baseline is always measured
    second = _key(TILE=32, PAD=1, VEC=1)
    bench = FakeBench(times={fastest: 0.1, second: 0.5}, wrong={fastest})
    res = _tune(bench, cache=False)
    assert res.mode == "measured"
    assert res.best.constants == {"TILE": 32, "PAD": 1, "VEC": 1}
    by_key = {c.key: c for c in res.candidates}
    assert by_key[fastest].correct is False and "wrong result" in by_key[fastest].error
    assert by_key[fastest].measured_ms is None  # a wrong result is never a time


def test_compile_failure_is_recorded_and_tuning_goes_on():
    broken = _key(TILE=32, PAD=1, VEC=1)
    res = _tune(FakeBench(broken={broken}, times={_key(TILE=32, PAD=0, VEC=1): 0.7}), cache=False)
    c = {c.key: c for c in res.candidates}[broken]
    assert c.correct is False and c.error.startswith("compile:")
    assert res.best.measured is not None and res.best.constants != c.constants


def test_only_the_shortlist_is_measured_and_budget_caps_it():
    bench = FakeBench()
    res = _tune(bench, top_k=2, cache=False, refine=0)
    measured = [c for c in res.candidates if c.measurement is not None]
    ranked_keys = [c.key for c in res.candidates]
    roles = {c.key for c in res.candidates if c.roles}
    # the model's top 2 plus the baselines, nothing else
    assert {c.key for c in measured} == set(ranked_keys[:2]) | roles
    bench2 = FakeBench()
    _tune(bench2, top_k=4, budget=1, cache=False)
    assert bench2.jobs == []  # a shortlist of one is not benchmarked


def test_ties_are_retimed_then_broken_by_model_cost_then_footprint():
    bench = FakeBench(default=1.0, spread=0.05)  # everyone within noise of everyone
    res = _tune(bench, cache=False, refine=0)
    assert len(bench.jobs) == 2  # first timing, then the re-timing of the tied ones
    retimed = {k for k, _ in bench.jobs[1].candidates}
    assert len(retimed) > 1
    tied = [c for c in res.candidates if c.key in retimed]
    expect = min(tied, key=lambda c: (c.prediction.wavefronts_per_tile, c.prediction.footprint, c.key))
    assert res.best.constants == expect.constants
    # the same inputs give the same pick again
    assert _tune(FakeBench(default=1.0, spread=0.05), cache=False).best.constants == res.best.constants


def test_cache_hit_skips_benchmarking_and_new_candidates_measure_alone(monkeypatch):
    first = FakeBench(default=None)
    a = _tune(first, top_k=20)
    again = FakeBench(default=None)
    b = _tune(again, top_k=20)
    assert again.jobs == [] and b.cache_hit and not a.cache_hit and b.best.constants == a.best.constants
    # a hit is the same result as the tune that made it: same mode, every candidate, same measurements
    assert b.mode == a.mode == "measured" and b.message == a.message
    assert len(b.candidates) == len(a.candidates) and b.to_dict() == a.to_dict()
    assert "cache hit" in b.table()
    # a new candidate in the space: only it is measured, the rest come from the cache; then the new job's
    # fastest and the cache's fastest are timed again together (the cache's were timed on other buffers)
    monkeypatch.setitem(fake_kernel.SPACE, "PAD", (0, 1, 2, 4, 8))
    third = FakeBench(times={_key(TILE=32, PAD=8, VEC=1): 0.01}, default=None)
    c = _tune(third, top_k=20)
    *new_jobs, final = third.jobs
    measured_now = {k for job in new_jobs for k, _ in job.candidates}
    assert measured_now and all("PAD=8" in k for k in measured_now)
    cached_best = min((x for x in a.candidates if x.measured_ms is not None), key=lambda x: x.measured_ms)
    retimed = [k for k, _ in final.candidates]
    assert final.reps == 60 and _key(TILE=32, PAD=8, VEC=1) in retimed and cached_best.key in retimed
    assert len(retimed) == 2
    assert c.best.constants["PAD"] == 8


def test_result_round_trips_and_has_a_verbose_table():
    res = _tune(FakeBench(), cache=False)
    again = TuneResult.from_dict(res.to_dict())
    assert again == res
    table = res.table()
    assert "fake_transpose" in table and "4096x4096" in table and "unpadded" in table


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"shape": (0, 5)}, "shape"),
        ({"shape": "axb"}, "shape"),
        ({"dtype": "complex64"}, "dtype"),
        ({"dtype": "int8"}, "dtype"),
        ({"top_k": 0}, "top_k"),
        ({"backend": "opencl"}, "backend"),
        ({"device": "cpu"}, "device"),
        ({"arch": "sm_12"}, "arch"),
        ({"dist": "skewed"}, "dist"),
    ],
)
def test_bad_arguments_name_themselves(kwargs, match):
    args = {"shape": SHAPE, "dtype": "float32", **kwargs}
    with pytest.raises(ValueError, match=match):
        autopad.tune(fake_kernel, args.pop("shape"), benchmarker=FakeBench(), progress=False, **args)


def test_a_shape_of_numpy_integers_is_a_shape(monkeypatch):
    """Sizes computed with numpy are numpy integers (``n // 2`` of an np.int64): they are integers, as
    Python's own are (``operator.index``); floats, bools and text in a tuple are still refused."""
    np = pytest.importorskip("numpy")
    monkeypatch.setenv("AUTOPAD_NO_BENCH", "1")
    for shape in ((np.int64(4096), np.int32(4096)), np.array([4096, 4096])):
        res = autopad.tune(fake_kernel, shape, "float32", progress=False, cache=False)
        assert res.shape == SHAPE and all(type(d) is int for d in res.shape)
    for bad in ((4096.0, 4096), (True, 4096), ("4096", 4096), (np.float64(4096), 4096)):
        with pytest.raises(ValueError, match="shape"):
            autopad.tune(fake_kernel, bad, "float32", progress=False, cache=False)


def test_unknown_kernel_name():
    with pytest.raises(ValueError, match="unknown kernel 'fft'"):
        autopad.tune("fft", SHAPE)


@pytest.mark.parametrize("backend", ["cuda", "triton"])
@pytest.mark.parametrize(
    "kernel, shape", [("transpose", (5,)), ("transpose", (2, 3, 4, 5)), ("histogram", (100,))]
)
def test_wrong_rank_shapes_say_what_is_allowed(kernel, shape, backend, monkeypatch):
    monkeypatch.setenv("AUTOPAD_NO_BENCH", "1")
    dtype = "int32" if kernel == "histogram" else "float32"
    with pytest.raises(ValueError, match=r"(?i)shape.*(\(n, bins\)|\[M, N\])"):
        autopad.tune(kernel, shape, dtype, backend=backend, progress=False)


def test_the_local_search_walks_from_the_fastest_to_a_faster_neighbour_and_stops():
    ranked = rank(KernelSpec(fake_kernel), SHAPE, "float32")
    first = {c.key for c in ranked[:2]} | {c.key for c in ranked if c.roles}
    # a candidate outside the first shortlist, one step (in TILE, PAD or VEC) from a shortlisted one, is
    # fastest; measured, the shortlisted one is the fastest of the first round
    legal = {c.key for c in ranked}
    start, target = next(
        (c, _key(**{**c.params, name: v}))
        for c in ranked
        if c.key in first
        for name, values in fake_kernel.SPACE.items()
        for v in values
        if abs(values.index(v) - values.index(c.params[name])) == 1
        and _key(**{**c.params, name: v}) in legal - first
    )
    bench = FakeBench(times={start.key: 0.5, target: 0.2}, default=1.0)
    res = _tune(bench, top_k=2, cache=False, refine=8)
    assert res.best.constants == dict(_key_params(target))
    measured = {c.key for c in res.candidates if c.measurement is not None}
    assert first < measured and len(measured) <= len(first) + 8
    # refine=0 keeps to the first shortlist, and a budget caps the search too
    assert _tune(FakeBench(times={target: 0.2}), top_k=2, cache=False, refine=0).best.constants != dict(
        _key_params(target)
    )
    capped = _tune(FakeBench(times={start.key: 0.5, target: 0.2}), top_k=2, cache=False, budget=len(first))
    assert sum(c.measurement is not None for c in capped.candidates) == len(first)


@pytest.mark.parametrize("foothold_ms, walks_again", [(0.55, True), (0.7, False)])
def test_with_budget_left_the_search_walks_again_from_each_familys_fastest(
    monkeypatch, foothold_ms, walks_again
):
    """A spec's FAMILY_KEYS (the code paths): when the walk from the fastest stops, the search walks again
    from the fastest measured candidate of each other family within FAMILY_MARGIN (1.25) of the fastest."""
    from autopad.search import baselines, neighbours, shortlist
    from autopad.search_shortlist import FAMILY_MARGIN

    plain_spec = KernelSpec(fake_kernel)
    ranked = rank(plain_spec, SHAPE, "float32", extra=baselines(plain_spec, SHAPE, "float32"))
    plain_first = {c.key for c in shortlist(ranked, 1, plain_spec)}
    monkeypatch.setattr(fake_kernel, "FAMILY_KEYS", ("VEC",), raising=False)
    spec = KernelSpec(fake_kernel)
    first = shortlist(ranked, 1, spec)
    first_keys = {c.key for c in first}
    foothold = next(c for c in ranked if c.params["VEC"] == 2)  # VEC 2's best predicted
    # in the first round only as its family's foothold
    assert foothold.key in first_keys and foothold.key not in plain_first
    # the first round's fastest is a VEC 1 candidate whose walk cannot reach the target, a VEC 2 candidate
    # one step from the foothold
    start, target = next(
        (h, t)
        for h in first
        if h.params["VEC"] == 1
        for t in neighbours(spec, ranked, foothold)
        if t.key not in first_keys and t.params["VEC"] == 2 and t not in neighbours(spec, ranked, h)
    )
    times = {start.key: 0.5, foothold.key: foothold_ms, target.key: 0.2}
    assert (foothold_ms <= FAMILY_MARGIN * 0.5) == walks_again
    res = _tune(FakeBench(times=times, default=1.0), top_k=1, cache=False, refine=16)
    assert (res.best.constants == dict(_key_params(target.key))) == walks_again
    # without families the foothold is not measured first and the search ends where it started
    monkeypatch.delattr(fake_kernel, "FAMILY_KEYS")
    plain = _tune(FakeBench(times=times, default=1.0), top_k=1, cache=False, refine=16)
    assert plain.best.constants == dict(_key_params(start.key))


def test_the_family_walks_share_the_measurements_left(monkeypatch):
    """Two other families within the margin and 4 measurements left: each walk gets 2, so the slower-looking
    family's walk still reaches its fast neighbour (taking them in turn, the first walk spent all 4)."""
    from types import SimpleNamespace as NS

    import autopad.strategies.model as strategy
    from autopad.strategies import Options

    c = {k: NS(key=k, params={"VEC": v}) for k, v in (("a", 1), ("b", 2), ("c", 4))}
    c.update({f"b{i}": NS(key=f"b{i}", params={"VEC": 2}) for i in range(4)})
    c["c0"] = NS(key="c0", params={"VEC": 4})
    steps = {"b": [c[f"b{i}"] for i in range(4)], "c": [c["c0"]]}
    times = {"a": 1.0, "b": 1.10, "c": 1.12, "c0": 0.8}
    asked = []

    class Measure:
        exhausted = False

        def __call__(self, cands):
            asked.extend(x.key for x in cands)
            return {x.key: NS(correct=True, ms=times.get(x.key, 1.5)) for x in cands}

    monkeypatch.setattr(strategy, "shortlist", lambda ranked, top_k, spec: [c["a"], c["b"], c["c"]])
    monkeypatch.setattr(strategy, "neighbours", lambda spec, ranked, here: steps.get(here.key, []))
    monkeypatch.setattr(strategy, "repairs", lambda spec, ranked, here: [])
    spec = NS(FAMILY_KEYS=("VEC",))
    strategy.run(list(c.values()), Measure(), Options(spec, top_k=1, refine=4))
    assert asked == ["a", "b", "c", "b0", "b1", "c0"]
    # a family beyond FAMILY_MARGIN (1.25x) of the fastest is not walked from
    asked.clear()
    times["c"] = 1.3
    strategy.run(list(c.values()), Measure(), Options(spec, top_k=1, refine=4))
    assert asked == ["a", "b", "c", "b0", "b1", "b2", "b3"]


def test_where_the_walk_stops_it_steps_once_onto_the_repaired_moves(monkeypatch):
    """The walk from "a" finds nothing faster among its neighbours; with measurements left it measures the
    repaired moves (``search_shortlist.repairs``) once, moves to the faster "r" and walks on from there; a
    second stop ends it (the repaired moves are not taken again), and without measurements left it ends
    where it stood."""
    from types import SimpleNamespace as NS

    import autopad.strategies.model as strategy
    from autopad.strategies import Options

    c = {k: NS(key=k, params={}) for k in ("a", "n0", "n1", "r", "r0", "q", "s")}
    steps = {"a": [c["n0"], c["n1"]], "r": [c["r0"]]}
    fixes = {"a": [c["r"]], "r": [c["q"]], "r0": [c["s"]]}
    times = {"a": 1.0, "n0": 1.2, "n1": 1.1, "r": 0.8, "r0": 0.7, "q": 0.5, "s": 0.4}
    asked = []

    class Measure:
        exhausted = False

        def __call__(self, cands):
            asked.extend(x.key for x in cands)
            return {x.key: NS(correct=True, ms=times[x.key]) for x in cands}

    monkeypatch.setattr(strategy, "shortlist", lambda ranked, top_k, spec: [c["a"]])
    monkeypatch.setattr(strategy, "twins", lambda spec, ranked, near: [])
    monkeypatch.setattr(strategy, "neighbours", lambda spec, ranked, here: steps.get(here.key, []))
    monkeypatch.setattr(strategy, "repairs", lambda spec, ranked, here: fixes.get(here.key, []))
    strategy.run(list(c.values()), Measure(), Options(NS(), top_k=1, refine=8))
    assert asked == ["a", "n0", "n1", "r", "r0"]  # r0 has no neighbours left: the walk stops there
    asked.clear()
    strategy.run(list(c.values()), Measure(), Options(NS(), top_k=1, refine=2))
    assert asked == ["a", "n0", "n1"]


def test_the_first_round_measures_the_twins_of_the_configurations_that_measured_close(monkeypatch):
    """After the shortlist, the unpadded twins of the configurations measured within TWIN_SWEEP_MARGIN of
    the fastest are measured (out of the refine budget), and the walk starts from the fastest of all: the
    SIMT GEMM at 6144x6144x2048 (H100 run 184) measured a capped tile padded 1.057 of the fastest and never
    its unpadded twin, 3% faster than the walk's pick."""
    from types import SimpleNamespace as NS

    import autopad.strategies.model as strategy
    from autopad.search_shortlist import TWIN_SWEEP_MARGIN
    from autopad.strategies import Options

    c = {k: NS(key=k, params={}) for k in ("a", "b", "far", "b_twin", "far_twin", "n1")}
    times = {"a": 1.0, "b": 1.057, "far": 1.2, "b_twin": 0.97, "far_twin": 0.5, "n1": 0.96}
    asked, swept = [], []

    class Measure:
        exhausted = False

        def __call__(self, cands):
            asked.extend(x.key for x in cands)
            return {x.key: NS(correct=True, ms=times[x.key]) for x in cands}

    def twins(spec, ranked, near):
        swept.append([x.key for x in near])
        return [c[f"{x.key}_twin"] for x in near if f"{x.key}_twin" in c]

    monkeypatch.setattr(strategy, "shortlist", lambda ranked, top_k, spec: [c["a"], c["b"], c["far"]])
    monkeypatch.setattr(strategy, "twins", twins)
    steps = {"b_twin": [c["n1"]]}
    monkeypatch.setattr(strategy, "neighbours", lambda spec, ranked, here: steps.get(here.key, []))
    strategy.run(list(c.values()), Measure(), Options(NS(), top_k=1, refine=4))
    assert 1.2 > TWIN_SWEEP_MARGIN >= 1.057
    assert swept == [["a", "b"]]  # "far" measured beyond the margin: its twin is not offered
    assert asked == ["a", "b", "far", "b_twin", "n1"]  # the walk starts from the twin, the fastest
    # the twins come out of the refine budget: with none left, none is measured
    asked.clear()
    strategy.run(list(c.values()), Measure(), Options(NS(), top_k=1, refine=0))
    assert asked == ["a", "b", "far"]


def _key_params(key):
    return {k: int(v) for k, v in (kv.split("=") for kv in key.split(","))}


def test_refine_must_be_a_non_negative_int():
    with pytest.raises(ValueError, match="refine: must be an int >= 0"):
        _tune(FakeBench(), refine=-1)


def test_a_cached_pick_that_is_not_legal_is_warned_about_and_tuned_again(tmp_path, monkeypatch):
    """A cache file is not trusted: constants edited into it are re-checked before anything runs them."""
    import dataclasses

    from autopad.cache import Cache
    from autopad.request import Request
    from autopad.tune import _search_params, cache_key

    monkeypatch.setenv("AUTOPAD_CACHE_DIR", str(tmp_path))
    res = _tune(FakeBench(default=None))
    req = Request.make(fake_kernel, SHAPE, "float32", top_k=4)
    key = cache_key(req.spec, SHAPE, "float32", None, {})
    bad = dataclasses.replace(res.best, constants={"TILE": 32, "PAD": 1, "VEC": 2})  # PAD 1 misaligns VEC 2
    Cache().put_result(key, dataclasses.replace(res, best=bad), _search_params(req, True))
    with pytest.warns(UserWarning, match="ignoring the cached pick"):
        again = _tune(FakeBench(default=None))
    assert not again.cache_hit
    assert fake_kernel.legal(again.best.constants, SHAPE, "float32")


def test_tune_loads_on_first_use_and_stays_the_function():
    # autopad.tune (the function) loads lazily; the submodule's import must not replace it on the package
    code = (
        "import pickle, sys, types, autopad\n"
        "assert 'autopad.tune' not in sys.modules, 'import autopad loaded the tuner'\n"
        "f = autopad.tune\n"
        "assert callable(f) and not isinstance(f, types.ModuleType)\n"
        "import autopad.tune\n"
        "assert autopad.tune is f and sys.modules['autopad.tune'].tune is f\n"
        "from autopad import tune\n"
        "assert tune is f and pickle.loads(pickle.dumps(f)) is f\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]


def test_a_module_patched_in_as_autopad_tune_is_set():
    # only the import system's own assignment (the submodule) is dropped; a stand-in module a test patches
    # in for the function is set, and the patch's undo brings the function back
    import types
    from unittest import mock

    import autopad

    f = autopad.tune
    stand_in = types.ModuleType("stand_in")
    with mock.patch("autopad.tune", stand_in):
        assert autopad.tune is stand_in
    assert autopad.tune is f
    import autopad.tune  # noqa: F401  (the submodule: still not set on the package)

    assert autopad.tune is f


def test_every_name_tune_defined_is_the_object_of_its_new_home():
    import importlib

    from autopad import tune_measure, tune_record

    tune_mod = importlib.import_module("autopad.tune")  # the module (autopad.tune is the function)
    homes = {
        tune_measure: "_Progress _Measure _within_noise _tie_break pick",
        tune_record: "cache_key _environment _extra _CACHED_UNMEASURED _for_cache _search_params _candidates "
        "_cached_pick_illegal",
    }
    assert_reexported(tune_mod, homes)
    assert callable(tune_mod._rerank) and callable(tune_mod._baselines) and tune_mod.tune is autopad.tune
    assert sorted(tune_mod.__all__) == sorted(
        ["tune", "resolve", "normalize_dtype", "normalize_shape", "cache_key", "NO_GPU_MESSAGE"]
    )


def test_a_tune_that_measures_warms_its_own_worker_first_and_ends_it(monkeypatch, tmp_path):
    """With no benchmarker given and a GPU here, tune builds a WorkerBenchmarker with two spare workers,
    starts them before the model ranks, measures with it and closes it, also when the tune fails."""
    import importlib

    import autopad.bench

    T = importlib.import_module("autopad.tune")  # the module (autopad.tune is the function)
    made = []

    class Warm(FakeBench):
        def __init__(self, spares=0):
            super().__init__(times={}, default=None)
            self.spares, self.calls = spares, []
            made.append(self)

        def prewarm(self):
            self.calls.append("prewarm")

        def measure(self, job):
            self.calls.append("measure")
            if fail:
                raise RuntimeError("the GPU fell off the bus")
            yield from super().measure(job)

        def close(self):
            self.calls.append("close")

    fail = False

    monkeypatch.setenv("AUTOPAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(autopad.bench, "WorkerBenchmarker", Warm)
    monkeypatch.setattr(T, "device_info", lambda index=0: {"name": "Fake GPU", "cc": "9.0"})
    monkeypatch.setattr(T, "gpu_available", lambda: True)
    res = autopad.tune(fake_kernel, SHAPE, "float32", progress=False, top_k=2)
    assert res.mode == "measured" and len(made) == 1 and made[0].spares == 2
    calls = made[0].calls
    assert calls[0] == "prewarm" and calls[-1] == "close" and "measure" in calls
    fail = True  # the measurements fail (each recorded as failed): the tune ends, the spare too
    autopad.tune(fake_kernel, SHAPE, "float32", progress=False, top_k=2, retune=True)
    assert len(made) == 2 and made[1].calls[0] == "prewarm" and made[1].calls[-1] == "close"

    def broken(*a, **k):
        raise RuntimeError("the model fell over")

    monkeypatch.setattr(T, "rank", broken)  # a tune that raises after the spare started
    with pytest.raises(RuntimeError, match="fell over"):
        autopad.tune(fake_kernel, SHAPE, "float32", progress=False, top_k=2, retune=True)
    assert len(made) == 3 and made[2].calls == ["prewarm", "close"]
    monkeypatch.setattr(T, "rank", rank)
    monkeypatch.setattr(T, "gpu_available", lambda: False)  # a GPU but no torch with CUDA: spares end
    res = autopad.tune(fake_kernel, SHAPE, "float32", progress=False, top_k=2, retune=True)
    assert res.mode == "model-only" and "torch with CUDA is not" in res.message
    assert len(made) == 4 and made[3].calls[:2] == ["prewarm", "close"] and "measure" not in made[3].calls


@pytest.mark.parametrize(
    "cc,name,arch,want",
    [
        ("90", "NVIDIA H100 80GB HBM3", None, "h100"),  # the card's own profile (its DRAM rate)
        ("90", "NVIDIA H200", None, "sm_90"),
        ("90", "NVIDIA H100 80GB HBM3", "sm_90", "sm_90"),  # one the caller names wins
        ("", "", None, "sm_90"),  # no GPU: the measured profile
    ],
)
def test_the_request_plans_with_the_device_s_profile_unless_told(cc, name, arch, want):
    from autopad.request import Request

    req = Request.make(fake_kernel, SHAPE, "float32", arch=arch, gpu_cc=cc, gpu_name=name)
    assert req.arch == want


class _Stop(Exception):
    """Raised in place of Request.make, to stop tune() right after it has built the request's arguments."""


def _tune_until_the_request(monkeypatch, cards, **kw):
    """Run tune() on fake devices ``cards`` (device_info by index) until it makes its request; the
    keyword arguments it made it with."""
    import importlib

    from autopad.request import Request

    T = importlib.import_module("autopad.tune")  # the module (autopad.tune is also the function's name)
    seen = {}

    def make(*a, **kw):
        seen.update(kw)
        raise _Stop

    monkeypatch.setattr(T, "device_info", lambda index=0: cards[index])
    monkeypatch.setattr(T, "device_count", lambda: len(cards))
    monkeypatch.setattr(Request, "make", make)
    with pytest.raises(_Stop):
        T.tune(fake_kernel, SHAPE, "float32", **kw)
    return seen


def test_tune_and_the_cli_hand_the_device_s_name_to_the_request(monkeypatch):
    # on an H100 SXM both plan with its profile: tune() passes the name device_info reads (stopped right
    # after the request is made), and `autopad tune` builds its request the same way
    import argparse

    import autopad.device
    from autopad.cli_tune import _request

    h100 = {"name": "NVIDIA H100 80GB HBM3", "cc": "90", "index": 0}
    seen = _tune_until_the_request(monkeypatch, [h100])
    assert (seen["gpu_cc"], seen["gpu_name"]) == ("90", "NVIDIA H100 80GB HBM3")
    monkeypatch.undo()
    monkeypatch.setattr(autopad.device, "device_info", lambda index=0: h100)
    monkeypatch.setattr(autopad.device, "device_count", lambda: 1)
    args = argparse.Namespace(
        shape=SHAPE, dtype="float32", backend="auto", top_k=4, device=0, no_cache=True, budget=None,
        dist=None, arch=None, retune=False, refine=16,
    )  # fmt: skip
    assert _request(args, fake_kernel).arch == "h100"


@pytest.mark.parametrize("device", ["cuda:1", 1])
def test_tune_plans_with_the_profile_of_the_device_it_is_given(monkeypatch, device):
    # device 0 an H200, device 1 an H100: tune(device="cuda:1") (or 1) asks the driver about device 1 and
    # hands its name on, so the request plans with h100 (stopped right after the request is made)
    cards = [{"name": "NVIDIA H200", "cc": "90", "index": 0}, {"name": "NVIDIA H100 80GB HBM3", "cc": "90"}]
    seen = _tune_until_the_request(monkeypatch, cards, device=device)
    assert seen["gpu_name"] == "NVIDIA H100 80GB HBM3"


def test_a_device_that_is_not_cuda_is_still_refused_with_its_message():
    with pytest.raises(ValueError, match="is not a CUDA device"):
        autopad.tune(fake_kernel, SHAPE, "float32", device="cpu")
