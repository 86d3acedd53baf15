"""benchmarks/sweep_kernels.py without a GPU: items, arithmetic, flattening, the worker's task name, CSV, PNG,
the Markdown summary, and the check-before-time rule; one GPU test runs a real item end to end."""

from __future__ import annotations

import csv
import importlib
import sys
from pathlib import Path

import pytest

from autopad.sweep import SweepItem, _resolve, run_sweep

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def sk():
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return importlib.import_module("benchmarks.sweep_kernels")


def _v(variant, backend, ms, correct=True, error="", constants=""):
    return {"variant": variant, "backend": backend, "ms": ms, "correct": correct, "error": error,
            "constants": constants}  # fmt: skip


TRANSPOSE = SweepItem("transpose", (1024, 1024), "float32", "all")
HISTOGRAM = SweepItem("histogram", (1 << 20, 256), "int32", "all", "uniform")
MATMUL = SweepItem("matmul", (1024, 1024, 1024), "float32", "all")


def _results():
    t = [
        _v("autopad", "cuda", 0.5, constants="PAD=0,TILE_M=32"),
        _v("unpadded", "cuda", 1.0),
        _v("autopad", "triton", 0.625),
        _v("unpadded", "triton", 0.75),
        _v("torch eager", "torch", 1.5),
        _v("torch.compile", "inductor", 1.0),
        _v("plain triton", "triton", None, correct=False, error="wrong result: 3 bytes differ"),
        _v("ceiling", "copy", 0.4),
    ]
    h = [_v("autopad", "cuda", 1.0), _v("torch eager", "torch", 8.0), _v("ceiling", "copy", 1.0)]
    return [
        {"gpu": "H200", "device": 0, "date": "2026-12-01", "variants": t},
        {"gpu": "H200", "device": 1, "variants": h},
        {"device": 0, "mode": "failed", "error": "worker died (exit code 70) on both attempts"},
    ]


def test_items_default_and_quick(sk):
    full = sk.build_items()
    assert len(full) == 3 * 2 + 3 + 2 * 2  # powers of two and odd sizes per kernel and dtype
    keys = {(i.kernel, i.shape, i.dtype) for i in full}
    assert ("transpose", (4097, 8191), "float16") in keys and ("transpose", (1000, 3001), "float32") in keys
    assert ("histogram", (10_000_019, 4096), "int32") in keys and (
        "histogram",
        (1 << 28, 256),
        "int32",
    ) in keys
    assert ("matmul", (3000, 1000, 2000), "bfloat16") in keys and ("matmul", (4096,) * 3, "float32") in keys
    assert all(i.dist == ("uniform" if i.kernel == "histogram" else None) for i in full)
    quick = sk.build_items(quick=True)
    pairs = [(i.kernel, i.dtype) for i in quick]
    assert len(pairs) == len(set(pairs)) == len({(i.kernel, i.dtype) for i in full}) == 5
    assert [i.kernel for i in sk.build_items(kernels=["matmul"])] == ["matmul"] * 4


def test_the_triton_gemm_takes_the_odd_matmul_shape():
    from autopad.kernels.triton import matmul as G

    assert G.legal(G.DEFAULTS, (3000, 1000, 2000), "bfloat16")


def test_work_and_rate_arithmetic(sk):
    assert sk.work_of("transpose", (1024, 1024), "float32") == ("gbps", 8 * 2**20, 8 * 2**20)
    assert sk.work_of("transpose", (4097, 8191), "float16") == ("gbps", 4 * 4097 * 8191, 4 * 4097 * 8191)
    assert sk.work_of("histogram", (1 << 20, 256), "int32") == ("gbps", 4 * 2**20, 8 * 2**20)
    assert sk.work_of("matmul", (1024, 2048, 512), "float32") == ("tflops", 2.0 * 2**30, 2.0 * 2**30)
    assert sk.rate("gbps", 8e9, 4.0) == pytest.approx(2000.0)  # 8 GB in 4 ms
    assert sk.rate("tflops", 2e12, 10.0) == pytest.approx(200.0)  # 2 TFLOP in 10 ms


def test_flatten_rates_ratios_and_speedups(sk):
    rows = sk.flatten([TRANSPOSE, HISTOGRAM, MATMUL], _results())
    assert len(rows) == 8 + 3 + 1
    by = {(r["kernel"], r["variant"], r["backend"]): r for r in rows}
    ap = by[("transpose", "autopad", "cuda")]
    assert ap["ms"] == 0.5 and ap["gbps"] == pytest.approx(8 * 2**20 / 0.5 / 1e6)
    assert ap["ratio_to_ceiling"] == pytest.approx(0.8) and ap["speedup_vs_torch"] == pytest.approx(3.0)
    assert ap["gpu"] == "H200" and ap["date"] == "2026-12-01" and ap["constants"] == "PAD=0,TILE_M=32"
    assert by[("transpose", "ceiling", "copy")]["ratio_to_ceiling"] == pytest.approx(1.0)
    assert by[("transpose", "torch eager", "torch")]["speedup_vs_torch"] == pytest.approx(1.0)
    wrong = by[("transpose", "plain triton", "triton")]
    assert wrong["correct"] is False and wrong["ms"] == "" and wrong["ratio_to_ceiling"] == ""
    assert "3 bytes differ" in wrong["error"]
    # a histogram reads its input once against a copy that reads and writes it: same ms -> 0.5
    assert by[("histogram", "autopad", "cuda")]["ratio_to_ceiling"] == pytest.approx(0.5)
    assert by[("histogram", "ceiling", "copy")]["ratio_to_ceiling"] == pytest.approx(1.0)
    assert by[("histogram", "autopad", "cuda")]["speedup_vs_torch"] == pytest.approx(8.0)
    failed = by[("matmul", "(item)", "")]
    assert failed["correct"] is False and "died" in failed["error"]


def test_check_comes_before_time_and_a_wrong_result_is_never_timed(sk):
    calls = []

    def bench(fn):
        calls.append("bench")
        return 2.5

    def prepare():
        calls.append("poison")

    def fn():
        calls.append("run")
        return 41

    ok = sk._measure(fn, lambda got: (got == 41, "exact"), bench, prepare)
    assert ok == {"correct": True, "ms": 2.5, "error": ""} and calls == ["poison", "run", "bench"]
    calls.clear()
    bad = sk._measure(fn, lambda got: (got == 42, "1 element differs"), bench, prepare)
    assert bad == {"correct": False, "error": "wrong result: 1 element differs"} and "bench" not in calls

    def boom():
        raise RuntimeError("misaligned address")

    err = sk._measure(boom, lambda got: (True, ""), bench)
    assert err["correct"] is False and "RuntimeError: misaligned address" in err["error"]


def test_a_graph_break_is_recorded_and_timed_without_fullgraph(sk, monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch._dynamo, "reset", lambda: None)

    def fake_compile(f, dynamic, fullgraph):
        assert dynamic is False

        def g(*args):
            if fullgraph:
                raise RuntimeError("Unsupported: dynamic shape operator: aten.bincount.default")
            return f(*args)

        return g

    monkeypatch.setattr(torch, "compile", fake_compile)
    g, note = sk._compile(lambda x: x + 1, (1,))
    assert g(1) == 2 and "dynamic shape operator" in note and note.endswith("timed with fullgraph=False")
    monkeypatch.setattr(torch, "compile", lambda f, dynamic, fullgraph: lambda *a: 1 / 0)
    g, note = sk._compile(lambda x: x, (1,))
    assert g is None and note.count("ZeroDivisionError") == 2 and "fullgraph=False failed too" in note


def test_the_task_name_resolves_to_this_script(sk):
    name = sk.task_name()
    fn = _resolve(name)
    assert Path(fn.__code__.co_filename).resolve() == ROOT / "benchmarks" / "sweep_kernels.py"
    assert fn.__name__ == "task"


def test_a_spawned_worker_finds_the_task_without_a_gpu(sk):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("with a GPU the task would really run; test_gpu_item covers that")
    rows = run_sweep([TRANSPOSE], devices=(0,), task=sk.task_name(), progress=False)
    assert rows[0]["error"] == "" and rows[0]["attempts"] == 1  # resolved and ran in the worker
    flat = sk.flatten([TRANSPOSE], rows)
    assert [r["variant"] for r in flat] == ["(item)"] and "no CUDA device" in flat[0]["error"]


def test_csv_plot_and_summary_from_files(sk, tmp_path, capsys):
    rows = sk.flatten([TRANSPOSE, HISTOGRAM], _results()[:2])
    path = sk.write_rows([r for r in rows if r["kernel"] == "transpose"], tmp_path / "sweep_transpose.csv")
    back = list(csv.DictReader(path.open()))
    assert back[0]["variant"] == "autopad" and back[0]["ratio_to_ceiling"] == "0.8"
    assert list(back[0]) == sk.FIELDS
    assert sk.main(["--plot", str(path)]) == 0
    png = tmp_path / "sweep_transpose.png"
    assert png.stat().st_size > 1000 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    capsys.readouterr()
    assert sk.main(["--summary", str(path)]) == 0
    table = capsys.readouterr().out
    line = next(ln for ln in table.splitlines() if ln.startswith("| transpose"))
    # best is CUDA at 0.5 ms: 0.8 of copy; torch 1.5 ms -> 3x; compile 1.0 -> 2x; CUDA unpadded 1.0 -> 2x
    assert line == "| transpose | 1024x1024 | float32 | cuda | 0.500 | 0.80 of copy | 3.00x | 2.00x | 2.00x |"


def test_summary_without_a_correct_autopad_variant(sk):
    rows = sk.flatten([MATMUL], [{"variants": [_v("autopad", "cuda", None, False, "tune: no legal")]}])
    assert "no correct autopad variant" in sk.summary(rows)


@pytest.mark.gpu
def test_gpu_item(sk):
    res = sk.task(SweepItem("transpose", (1000, 3001), "float32", "all"), 0)
    rows = sk.flatten([SweepItem("transpose", (1000, 3001), "float32", "all")], [res])
    names = {(r["variant"], r["backend"]) for r in rows}
    assert {
        ("autopad", "cuda"),
        ("autopad", "triton"),
        ("torch eager", "torch"),
        ("ceiling", "copy"),
    } <= names
    for r in rows:  # torch.compile may carry a note; everything else is checked and timed
        assert r["correct"] is True and r["ms"] > 0, r
        assert r["variant"] == "torch.compile" or r["error"] == "", r
    best = min((r for r in rows if r["variant"] == "autopad"), key=lambda r: r["ms"])
    assert 0.05 < best["ratio_to_ceiling"] < 1.5 and best["speedup_vs_torch"] > 0
