"""The tuner-quality study's CPU parts: what it ranks, shortlists and compiles, and how it is reported."""

from __future__ import annotations

import csv
import gzip
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import quality_report as qr  # noqa: E402
import tuner_quality as tq  # noqa: E402

from autopad.kernels_registry import builtin_spec  # noqa: E402
from autopad.search import launch_config, rank, shortlist  # noqa: E402


def test_every_configuration_has_three_shapes_two_dtypes_per_kernel_and_a_legal_space():
    kernels: dict[str, set[str]] = {}
    for kernel, backend, dtype, _dist, shapes in tq.CONFIGS:
        assert len(shapes) >= 3
        kernels.setdefault(kernel, set()).add(dtype)
        spec = builtin_spec(kernel, backend)
        assert dtype in spec.DTYPES
        assert any(any(d & (d - 1) for d in s) for s in shapes), "a size that is not a power of two"
    assert set(kernels) == {"transpose", "histogram", "matmul"}
    assert all(len(d) >= 2 for d in kernels.values())


def test_rows_file_stays_readable_after_each_shape(tmp_path):
    """The rows are appended a shape at a time as whole gzip members: after any shape the file reads back
    (header and every finished shape's rows), where one stream killed mid-run had no end-of-stream marker."""
    path = tmp_path / "quality_rows.csv.gz"
    tq.append_member(path, ",".join(tq.ROW_FIELDS) + "\r\n")
    for k in range(3):
        tq.append_member(path, ",".join(str(k) for _ in tq.ROW_FIELDS) + "\r\n")
        with gzip.open(path, "rt", newline="") as f:
            rows = list(csv.DictReader(f))
        assert [r["kernel"] for r in rows] == [str(i) for i in range(k + 1)]
        assert list(rows[0]) == tq.ROW_FIELDS


def test_shortlist_keys_follow_search_shortlist():
    spec = builtin_spec("transpose", "cuda")
    shape = (1024, 1024)
    recs = tq.ranking(spec, shape, "float32", None)
    ranked = rank(spec, shape, "float32")
    assert [r["key"] for r in recs] == [c.key for c in ranked]
    assert tq.shortlist_keys(recs) == [c.key for c in shortlist(ranked, tq.TOP_K)]
    assert tq.shortlist_keys(recs, spec) == [c.key for c in shortlist(ranked, tq.TOP_K, spec)]
    short = set(tq.shortlist_keys(recs, spec))
    configs = {launch_config(spec, r["params"]) for r in recs if r["key"] in short}
    assert len(configs) >= tq.TOP_K  # at least one layout of each of the best launch configurations
    assert any(r["roles"] for r in recs)  # the unpadded baseline is in the space


def test_compile_units_merge_launch_only_constants():
    # BLOCKS_PER_SM is a launch setting of the histogram: candidates that differ only in it share a cubin
    base = {
        "BINS_PER_PASS": 256,
        "REPLICAS": 1,
        "INTERLEAVED": 0,
        "PAD": 0,
        "AGG": 0,
        "THREADS": 256,
        "ITEMS": 2,
    }
    cands = [{**base, "BLOCKS_PER_SM": b} for b in (1, 2, 4, 8)] + [{**base, "ITEMS": 4, "BLOCKS_PER_SM": 1}]
    units = tq._units("histogram", "cuda", "int32", cands)
    assert len(units) == 2
    from autopad import cuda_runtime

    assert cuda_runtime.load_kernel.__name__ == "load_kernel"  # the recorder is removed again


def test_precompile_returns_each_failures_message(tmp_path, monkeypatch):
    """A compile that fails comes back as its message (the log prints the distinct ones), not a bare count."""
    pytest.importorskip("cuda.bindings.nvrtc")
    monkeypatch.setenv("AUTOPAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("AUTOPAD_CUDA_COMPILER", "nvrtc")
    from autopad.kernels.cuda import matmul as G

    good = dict(G.DEFAULTS)
    bad = dict(good, TM=3)  # the kernel's static_assert: the thread tile must divide the block tile
    n, errs, _ = tq.precompile("matmul", "cuda", "float32", [good, bad], 1, [(64, 64, 64)])
    assert n == 2 and len(errs) == 1, errs
    assert errs[0].startswith("CompileError") and "static assertion" in errs[0].lower(), errs


def _rows(tmp_path: Path) -> Path:
    """A small study: 5 candidates, the model's order a, b, c, d, e; the fastest is c."""
    path = tmp_path / "quality_rows.csv.gz"
    times = {"a": 1.10, "b": 1.05, "c": 1.00, "d": 2.0, "e": None}
    with gzip.open(path, "wt", newline="") as f:
        w = csv.DictWriter(f, fieldnames=tq.ROW_FIELDS)
        w.writeheader()
        for i, (k, ms) in enumerate(times.items()):
            w.writerow(
                {
                    "kernel": "transpose", "backend": "cuda", "dtype": "float32", "shape": "64x64", "key": k,
                    "predicted_us": 1 + i, "bound": "dram", "conflict_degree": 1, "footprint": 0, "roles": "",
                    "model_rank": i, "in_shortlist": int(i < 2), "correct": int(ms is not None),
                    "ms": "" if ms is None else ms, "spread_ms": "", "error": "" if ms else "wrong result",
                    "gpu": 0,
                }
            )  # fmt: skip
    with open(tmp_path / "quality_final.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=tq.FINAL_FIELDS)
        w.writeheader()
        for k, ms, short in (("a", 1.12, 1), ("b", 1.04, 1), ("c", 1.01, 0)):
            w.writerow(
                {"kernel": "transpose", "backend": "cuda", "dtype": "float32", "shape": "64x64", "key": k,
                 "in_shortlist": short, "exhaustive_rank": "", "correct": 1, "ms": ms, "spread_ms": ""}
            )  # fmt: skip
    return path


def test_a_cut_study_is_reported_from_its_partial_rows_and_says_so(tmp_path, capsys):
    """tuner_quality.py leaves a shape cut by its time limit in quality_partial.csv.gz (quality_rows.csv.gz
    holds only finished shapes): the report reads it, and says the best is the best of the rows reached."""
    full = _rows(tmp_path)
    full.rename(tmp_path / "quality_partial.csv.gz")
    with gzip.open(full, "wt", newline="") as f:
        csv.DictWriter(f, fieldnames=tq.ROW_FIELDS).writeheader()
    assert qr.main([str(tmp_path)]) == 0
    out = capsys.readouterr()
    assert "| transpose (cuda) | float32 | 64x64 | 5 |" in out.out
    assert "quality_partial.csv.gz (5 rows: every best below is the best of those)" in out.err


def test_summary_reports_share_pick_over_best_and_rank_correlation(tmp_path):
    groups = qr.load_rows(_rows(tmp_path))
    finals = qr.load_final(tmp_path / "quality_final.csv")
    (s,) = qr.report(groups, finals)
    assert (s["legal"], s["correct"], s["failed"], s["shortlist"]) == (5, 4, 1, 2)
    assert s["share"] == pytest.approx(0.4)
    assert s["pick_key"] == "b"
    assert s["pick_over_best"] == pytest.approx(1.04 / 1.01)
    assert s["pick_over_best_exhaustive"] == pytest.approx(1.05)
    assert s["best_model_rank"] == 2 and s["top1_over_best"] == pytest.approx(1.10)
    assert s["first_within_2pct_rank"] == 2 and s["n_within_2pct"] == 1
    # predicted ranks a..d = 1, 2, 3, 4 against measured 3, 2, 1, 4: 1 - 6 * 8 / (4 * 15)
    assert s["spearman"] == pytest.approx(0.2)
    table = qr.markdown([s])
    assert (
        "| transpose (cuda) | float32 | 64x64 | 5 | 1 | 2 (40.00%) | 1.030 | 1.050 | 0.20 | 2 | 1.100 |"
        in table
    )


def test_report_cli_writes_table_and_plot(tmp_path, capsys):
    _rows(tmp_path)
    md = tmp_path / "q.md"
    assert qr.main([str(tmp_path), "--png", "--md", str(md)]) == 0
    assert (tmp_path / "quality_scatter.png").stat().st_size > 1000
    assert "64x64" in md.read_text()
    assert qr.main([str(tmp_path / "missing")]) == 2
    assert "not found" in capsys.readouterr().err


def test_verify_fills_a_recorded_best_with_the_constants_added_since(tmp_path, monkeypatch):
    # a study row from before SCALAR_EDGE and GROUP joined the transpose space: verify must time the
    # candidate it measured (those constants at their defaults, the behaviour of its day), named in full
    import types

    import autopad

    spec = builtin_spec("transpose", "cuda")
    old = "PAD=1,READOUT=0,SW_MAX_PHASE=1,SW_PER_PHASE=1,SW_VEC=1,THREADS=256,TILE_M=32,TILE_N=32,VEC=1"
    rows = tmp_path / "rows.csv.gz"
    with gzip.open(rows, "wt", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["kernel", "backend", "dtype", "shape", "key", "correct", "ms"])
        w.writeheader()
        w.writerow({"kernel": "transpose", "backend": "cuda", "dtype": "float32", "shape": "512x512",
                    "key": old, "correct": "1", "ms": "0.010"})  # fmt: skip
    pick = dict(spec.DEFAULTS, TILE_M=64, TILE_N=64, VEC=4, SCALAR_EDGE=0, GROUP=16)
    monkeypatch.setattr(
        autopad,
        "tune",
        lambda *a, **k: types.SimpleNamespace(best=types.SimpleNamespace(constants=pick), candidates=[]),
    )
    timed = {}

    def fake_measure(spec, items, shape, dtype, dist, devices, reps, budget, chunk):
        timed.update(items)
        ms = {k: 0.009 if "VEC=4" in k else 0.010 for k, _ in items}
        return {k: [types.SimpleNamespace(ms=v)] for k, v in ms.items()}

    monkeypatch.setattr(tq, "measure_all", fake_measure)
    (row,) = tq.verify(["transpose/cuda/float32/512x512"], [rows], tmp_path)
    filled = dict(spec.DEFAULTS, PAD=1, TILE_M=32, TILE_N=32)
    assert timed[row["best"]] == filled and filled["SCALAR_EDGE"] == 1 and filled["GROUP"] == 1
    assert row["pick_over_best"] == pytest.approx(0.9)
    assert (tmp_path / "quality_verify.csv").is_file()


def test_shapes_no_study_recorded_replace_a_configurations_own():
    cfgs = tq.with_shapes(
        tq.CONFIGS, ["matmul/triton/bfloat16/3000x5000x1000", "matmul/triton/bfloat16/1024x8192x4096"]
    )
    gl = [c for c in cfgs if c[:3] == ("matmul", "triton", "bfloat16")]
    assert gl[0][4] == ((3000, 5000, 1000), (1024, 8192, 4096))
    assert [c for c in cfgs if c[:3] != gl[0][:3]] == [c for c in tq.CONFIGS if c[:3] != gl[0][:3]]
    assert tq.with_shapes(tq.CONFIGS, []) == tq.CONFIGS
    with pytest.raises(ValueError, match="no configuration"):
        tq.with_shapes(tq.CONFIGS, ["matmul/triton/float8/64x64x64"])
    with pytest.raises(ValueError, match="expected kernel/backend/dtype/MxNxK"):
        tq.with_shapes(tq.CONFIGS, ["matmul/triton/bfloat16"])


def test_a_shape_cut_mid_study_keeps_its_measurements_so_far(tmp_path, monkeypatch):
    """study_shape keeps the measurements in quality_partial.csv.gz as they come (every 500): a run killed
    mid-shape (H200 run 68) leaves them readable; the file goes when the shape's whole rows are written."""
    import io
    import types

    spec = builtin_spec("transpose", "cuda")
    ranked = tq.ranking(spec, (512, 512), "float32", None)[:1200]
    seen_on_disk: list[int] = []
    job_sizes: list[int] = []

    class FakeWorker:
        def __init__(self, **kw):
            pass

        def measure(self, job):
            job_sizes.append(len(job.candidates))
            for n, (key, _c) in enumerate(job.candidates):
                if n in (550, 1150):  # what a kill at this moment would leave behind
                    with gzip.open(tmp_path / tq.PARTIAL_ROWS, "rt", newline="") as f:
                        seen_on_disk.append(len(list(csv.DictReader(f))))
                yield types.SimpleNamespace(
                    key=key, correct=True, ms=0.01 + n * 1e-6, spread_ms=0.0, error=None
                )

    monkeypatch.setattr(tq, "WorkerBenchmarker", FakeWorker)
    buf = io.StringIO(newline="")
    rows = csv.DictWriter(buf, fieldnames=tq.ROW_FIELDS)
    fin = csv.DictWriter(io.StringIO(newline=""), fieldnames=tq.FINAL_FIELDS)
    summary = tq.study_shape(spec, ("transpose", "cuda", "float32", None), (512, 512), ranked, [0], tmp_path,
                             rows, fin)  # fmt: skip
    # one job on one GPU (its candidates share one placement of the buffers): 500 rows on disk after 550
    # measurements, 1000 after 1150, all before the shape ended; then the final round's own job
    assert job_sizes[0] == 1200 and len(job_sizes) == 2
    assert seen_on_disk == [500, 1000]
    assert not (tmp_path / tq.PARTIAL_ROWS).exists()
    assert summary["measured_ok"] == 1200 and buf.getvalue().count("\n") == 1200


def test_replay_counts_what_the_tuner_asked_for_that_the_study_never_measured():
    """A study that predates a constant answers only candidates with it at its default: the rest are
    counted (and the Markdown table shows them), so a pick made from the few answered ones is flagged."""
    import types

    from autopad.results import Measurement

    old = "A=1,B=2"
    bench = qr.ReplayBenchmarker([{"key": old, "correct": 1, "ms": 0.5}], defaults={"C": 0})
    job = types.SimpleNamespace(
        candidates=(("A=1,B=2,C=0", {"A": 1, "B": 2, "C": 0}), ("A=1,B=2,C=1", {"A": 1, "B": 2, "C": 1}))
    )
    got = list(bench.measure(job))
    assert [m.key for m in got] == ["A=1,B=2,C=0"] and isinstance(got[0], Measurement)
    assert bench.asked == [old] and bench.unanswered == ["A=1,B=2,C=1"]
    base = {"kernel": "k", "backend": "cuda", "dtype": "float32", "shape": "8x8", "legal": 2, "failed": 0,
            "shortlist": 1, "share": 0.5}  # fmt: skip
    assert "not in study" not in qr.markdown([base])
    table = qr.markdown([{**base, "unanswered": 6}])
    assert table.splitlines()[0].endswith("not in study |") and table.splitlines()[2].endswith(" 6 |")


def test_a_compile_only_pass_logs_to_the_results_folder_only_when_given(tmp_path, monkeypatch):
    # the compile-only pass runs on the CPU machine; its line belongs in the H200 log only when asked for
    monkeypatch.setattr(tq, "precompile", lambda *a, **k: (7, [], 0.0))
    monkeypatch.chdir(tmp_path)
    i = next(k for k, c in enumerate(tq.CONFIGS) if c[:3] == ("transpose", "cuda", "int8"))
    assert tq.main(["--precompile-only", "--configs", str(i), "--shapes", "1"]) == 0
    assert not (tmp_path / "benchmarks" / "results" / "h200" / "quality_log.txt").exists()
    assert tq.main(["--precompile-only", "--configs", str(i), "--shapes", "1", "--out", "given"]) == 0
    assert "7 compiles" in (tmp_path / "given" / "quality_log.txt").read_text()


def test_every_rounds_committed_sample_holds_its_shapes_with_legal_candidates_of_todays_spec():
    # a device run reads these samples as they are; a stale one (a constant renamed, a candidate no longer
    # legal, a shape dropped from its round) would waste device time or be refused there
    import json

    import gpu_new_shapes as gn

    assert sorted(gn.SAMPLES) == sorted(gn.ROUNDS)
    for r, path in gn.SAMPLES.items():
        drawn = {d["id"]: d for d in json.loads(path.read_text())}
        want = {gn.sample_id(cfg): cfg for cfg in gn.ROUNDS[r]}
        assert set(drawn) == set(want), r
        for sid, (kernel, backend, dtype, _, shape) in want.items():
            spec = builtin_spec(kernel, backend)
            rows = drawn[sid]["rows"]
            assert len(rows) >= 100 and len({x["key"] for x in rows}) == len(rows), sid
            assert gn.stale_constants(rows, spec) == [], sid  # what measure_shape refuses
            for x in rows:
                assert spec.legal(x["params"], shape, dtype), (sid, x["key"])


def test_the_transpose_profile_configurations_are_legal_distinct_and_cover_the_slow_vec1_tiles():
    import profile_transpose_tiles as ptt

    spec = builtin_spec("transpose", "cuda")
    configs = ptt.configurations()
    assert len({ptt.key(c) for c in configs}) == len(configs) == len(ptt.TILES) + len(ptt.VECTOR)
    for shape in ptt.SHAPES:
        for c in configs:
            assert spec.legal(c, shape, "float32"), (shape, c)
    # the tiles run 165 measured slow at the model's floor (128 x 128 VEC 1, 64 x 32 at 256 threads) and
    # the fast ones they are read against (128 x 64 at 512 threads)
    tiles = {(c["TILE_M"], c["TILE_N"], c["THREADS"]) for c in configs if c["VEC"] == 1}
    assert {(128, 128, 256), (64, 32, 256), (128, 64, 512)} <= tiles
    # one timing has no spread: refused before torch or a GPU is touched
    with pytest.raises(SystemExit):
        ptt.main(["--reps", "1"])


def test_the_simt_gemm_profile_configurations_are_legal_twins_and_the_model_rows_match_run_100():
    import profile_simt_gemm as psg

    spec = builtin_spec("matmul", "cuda")
    configs = psg.configurations()
    assert len({psg.key(c) for c in configs}) == len(configs) == len(psg.TILES)
    for shape in psg.SHAPES:
        for c in configs:
            assert spec.legal(c, shape, "float32"), (shape, c)
    # every THREAD_MAP 0 tile has its THREAD_MAP 1 twin (the pair the profile reads against each other)
    maps = {}
    for c in configs:
        maps.setdefault(tuple(c[k] for k in ("BM", "BN", "BK", "TM", "TN")), set()).add(c["THREAD_MAP"])
    assert sum(m == {0, 1} for m in maps.values()) == 7
    # the model's rows: one per shape and configuration, each predicted time the ranking's
    from simt_gemm_checks import predicted

    rows = psg.model_rows()
    assert len(rows) == len(configs) * len(psg.SHAPES)
    by = {(r["shape"], r["key"]): r for r in rows}
    for shape in psg.SHAPES:
        for c in configs:
            got = by[("x".join(map(str, shape)), psg.key(c))]["pred_us"]
            assert got == pytest.approx(predicted(c, shape) * 1e6, rel=1e-9)
    assert all(r["wavefronts"] >= r["ideal"] > 0 for r in rows)
    with pytest.raises(SystemExit):
        psg.main(["--reps", "1"])


def test_the_profiles_time_batches_of_launches_between_two_events(monkeypatch, tmp_path):
    # ``timed`` (both profile scripts): each timing is the mean of ``batch`` back-to-back calls between two
    # CUDA events, the median and interquartile range over ``reps`` of them; here with fake events whose
    # clock advances 2 ms a call (and the CSV the scripts write)
    import csv as _csv

    import profile_transpose_tiles as ptt
    import torch

    clock = {"ms": 0.0}

    class Event:
        def __init__(self, enable_timing: bool = False) -> None:
            assert enable_timing
            self.at = None

        def record(self) -> None:
            self.at = clock["ms"]

        def synchronize(self) -> None:
            pass

        def elapsed_time(self, end: Event) -> float:
            return end.at - self.at

    monkeypatch.setattr(torch.cuda, "Event", Event)
    calls = []

    def go(*args):
        calls.append(args)
        clock["ms"] += 2.0

    ms, spread = ptt.timed(go, ("in", "out"), reps=5, batch=3)
    assert len(calls) == 15 and set(calls) == {("in", "out")}
    assert (ms, spread) == ("2.000000", "0.000000")
    path = tmp_path / "t.csv"
    ptt.write_times(str(path), [{"shape": "8x8", "key": "A=1", "legal": 1, "correct": 1, "ms": ms,
                                 "spread_ms": spread}])  # fmt: skip
    rows = list(_csv.DictReader(path.open()))
    assert rows[0]["ms"] == "2.000000" and rows[0]["why"] == "" and list(rows[0])[-1] == "why"


@pytest.mark.parametrize("run", ["run192", "run196"])
def test_the_tuner_replayed_on_path1_reaches_the_best_through_a_repaired_move(run):
    """The Gluon GEMM where TMA is refused (bf16 2048x1536x2049; H100 runs 192 and 196 timed all 114
    candidates): the walk stopped on 128 x 256 x 64 at 8 warps, 1.27x the best, where 4 warps alone is
    illegal and BM 64 alone slower. Its last step onto the repaired moves (``search_shortlist.repairs``)
    reaches the best, 64 x 256 x 64 at 4 warps, measuring 18 of the 114."""
    root = Path(__file__).resolve().parents[1] / "benchmarks/results/h100/2026-12-06" / run / "study"
    groups = qr.load_rows(root / "quality_rows.csv.gz")
    group = next(g for g in groups if g[3] == "2048x1536x2049")
    rows, pick, unanswered = qr.replay(group, groups[group])
    ms = {r["key"]: r["ms"] for r in groups[group] if r["correct"] and r["ms"]}
    assert unanswered == 0 and ms[pick] == min(ms.values())
    assert "BM=64" in pick and "WARPS=4" in pick
    assert sum(r["in_shortlist"] for r in rows) <= 20


def test_the_wave_tail_ladders_are_legal_whole_tiles_spanning_half_a_round_to_over_three():
    import profile_wave_tail as pwt

    keys = set()
    for backend, dtype, n, c in pwt.BUILDS:
        spec = builtin_spec("transpose", backend)
        keys.add((backend, dtype, tuple(sorted(c.items()))))
        shapes = pwt.ladder(spec, c, n, dtype)
        tm, tn = pwt.tile_rows(c)
        r = pwt.resident(spec, c, shapes[-1], dtype)
        per_round = pwt.SMS * r
        waves = [(m // tm) * -(-n // tn) / per_round for m, _ in shapes]
        assert all(m % tm == 0 for m, _ in shapes), c  # every block a whole tile
        assert waves == sorted(waves) and len(set(waves)) == len(waves), c
        assert waves[0] <= 0.6 and waves[-1] >= 3.1, (c, waves[0], waves[-1])
        # steps of at most a sixth of a round, so a step at every whole round shows between two rungs
        assert max(b - a for a, b in zip(waves, waves[1:])) <= 1 / 6 + 1e-9, c
        for shape in shapes:
            assert spec.legal(c, shape, dtype), (c, shape)
    assert len(keys) == len(pwt.BUILDS)
    with pytest.raises(SystemExit):
        pwt.main(["--out", "x.csv", "--reps", "1"])


def test_the_wave_tail_report_reads_a_staircase_as_1_and_a_line_as_0(tmp_path):
    import math

    import profile_wave_tail as pwt

    path = tmp_path / "tail.csv"
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, pwt.FIELDS)
        w.writeheader()
        for key, cost in (("stair", lambda r: 10 * math.ceil(r - 1e-9) + 1), ("line", lambda r: 10 * r + 1)):
            for i in range(34):
                blocks = round((0.5 + i / 12) * pwt.SMS * 3)  # rounds of 3 blocks an SM
                r = blocks / (pwt.SMS * 3)
                # a rung whose grid is under a round says fewer resident blocks: the fit takes the most
                w.writerow({"backend": "cuda", "dtype": "float32", "key": key, "M": 1, "N": 1,
                            "blocks": blocks, "resident": 3 if r > 1 else 2, "waves": "0",
                            "ms": cost(r) / 1e3, "spread_ms": 0, "correct": 1})  # fmt: skip
        # a wrong result is left out of the fit
        w.writerow({"backend": "cuda", "dtype": "float32", "key": "line", "M": 1, "N": 1, "blocks": 594,
                    "resident": 3, "waves": "1.5", "ms": 99.0, "spread_ms": 0, "correct": 0})  # fmt: skip
    got = {r["key"]: r for r in pwt.report(str(path))}
    assert got["stair"]["step_share"] == pytest.approx(1.0, abs=1e-6)
    assert got["line"]["step_share"] == pytest.approx(0.0, abs=1e-3)
    assert got["stair"]["round_us"] == pytest.approx(10.0) and got["line"]["rungs"] == 34
    assert got["line"]["resident"] == 3


def test_new_shapes_can_be_limited_to_some_of_a_rounds_sizes_and_refuse_one_it_lacks(tmp_path, capsys):
    import json

    import gpu_new_shapes as gn

    out = tmp_path / "sample.json"
    assert (
        gn.main(
            ["--round", "16", "--only", "histogram", "--shape", "7000001x128", "--write-sample", str(out)]
        )
        == 0
    )
    assert [d["id"] for d in json.loads(out.read_text())] == ["histogram/cuda/uint8/7000001x128"]
    with pytest.raises(SystemExit):
        gn.main(["--round", "16", "--shape", "4096x4096", "--write-sample", str(out)])
    assert "--shape 4096x4096: not in round 16" in capsys.readouterr().err
