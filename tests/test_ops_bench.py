"""benchmarks/bench_ops.py without a GPU: cell selection, rates and ratios, the worker restart after a
crash, the table and the plot, and its plain-Triton peers under TRITON_INTERPRET=1 on CPU tensors."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SPEC = importlib.util.spec_from_file_location("bench_ops", ROOT / "benchmarks" / "bench_ops.py")
bench_ops = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(bench_ops)


def test_cells_and_their_selection():
    assert bench_ops.QUICK[:3] == [
        "transpose 4097x8191 float16",
        "histogram 67108864x4096 int32",
        "matmul 4096x4096x4096 bfloat16",
    ]  # the issue's rows come first: they must fit the time limit
    assert bench_ops.select(bench_ops.QUICK, "histogram:int32") == [
        "histogram 67108864x4096 int32",
        "histogram 16777216x256 int32 weights=float32",
    ]
    assert bench_ops.select(bench_ops.FULL, "*4097x8191 float16") == ["transpose 4097x8191 float16"]
    from autopad.ops.plans import Item

    for cell in bench_ops.FULL + bench_ops.QUICK + list(bench_ops.PRETUNE.values()):
        if cell != "checks":
            Item.parse(cell)  # every cell is an item the ops' planner reads


def test_the_matrix_is_the_kernel_issues_rows():
    """--matrix: every row of the kernel issue, each cell an item the planner plans (numpy only)."""
    from autopad.ops.plans import Item, plan

    cells = bench_ops.MATRIX
    assert len(cells) == len(set(cells)) == 42  # 18 transposes, 10 GEMMs, 14 histograms
    items = [Item.parse(c) for c in cells]
    for it in items:
        plan(it)  # a spec exists for it (plan() does not check a histogram's input class: see below)
    from autopad.kernels.cuda.histogram_inputs import DISTS

    # the op takes these names only (run 75's "zipf" cells were planned, then refused by the op)
    assert {it.dist for it in items if it.op == "histogram"} <= set(DISTS)
    hist = [it for it in items if it.op == "histogram" and it.dtype == "int32" and it.backend == "auto"]
    for bins in (256, 4096, 65536):  # every input class at each bin count
        assert {it.dist for it in hist if it.shape[1] == bins} == {"uniform", "skewed", "single", "sorted"}
    assert "matmul 3000x5000x1000 bfloat16" in cells and "transpose 8x4096x1024 float16" in cells
    triton = [c for c in cells if "backend=triton" in c]
    assert triton == ["histogram 67108864x256 int32 uniform backend=triton"]
    assert bench_ops.select(cells, "*4097x8191*") == [c for c in cells if "4097x8191" in c]


def test_histogram_inputs_of_each_class(monkeypatch):
    """make_args draws a histogram cell's input class as the tuner does; counts stay in [0, bins)."""
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(bench_ops, "DEVICE", "cpu")
    n, bins = 5000, 300
    sorted_x, _ = bench_ops.make_args("histogram", (n, bins), "int32", None, dist="sorted")
    single, _ = bench_ops.make_args("histogram", (n, bins), "int32", None, dist="single")
    skewed, _ = bench_ops.make_args("histogram", (n, bins), "int32", None, dist="skewed")
    uniform, _ = bench_ops.make_args("histogram", (n, bins), "int32", None, dist="uniform")
    for x in (sorted_x, single, skewed, uniform):
        assert x.dtype == torch.int32 and x.numel() == n and int(x.min()) >= 0 and int(x.max()) < bins
    assert torch.equal(sorted_x, torch.sort(sorted_x).values)
    assert not torch.equal(uniform, torch.sort(uniform).values)
    assert int(torch.unique(single).numel()) == 1
    assert int((skewed == 0).sum()) > 5 * int((uniform == 0).sum())  # skewed (Zipf) piles onto the first bins


def test_rates_ratios_and_speedups():
    unit, work, ceil = bench_ops.work_of("transpose", (4097, 8191), "float16")
    assert unit == "gbps" and work == ceil == 2 * 4097 * 8191 * 2
    assert bench_ops.work_of("histogram", (1000, 256), "int32", "float32")[1:] == (8000.0, 16000.0)
    assert bench_ops.work_of("matmul", (2, 3, 4), "bfloat16")[1] == 48.0
    base = {"cell": "c", "unit": "gbps", "work": 1e9, "ceiling_work": 2e9, "correct": True}
    rows = [{**base, "variant": "autopad.ops", "ms": 1.0}, {**base, "variant": "torch eager", "ms": 2.0},
            {**base, "variant": "ceiling", "ms": 1.0}]  # fmt: skip
    bench_ops.add_ratios(rows)
    assert (
        rows[0]["rate"] == 1000.0 and rows[0]["ratio_to_ceiling"] == 0.5 and rows[0]["vs_torch_eager"] == 2.0
    )
    assert rows[2]["ratio_to_ceiling"] == 1.0


def test_a_dead_worker_is_replaced_and_its_cell_recorded(tmp_path, monkeypatch):
    calls = []

    def fake_run(cmd, capture_output, text, timeout):
        steps = json.loads(Path(cmd[cmd.index("--worker") + 1]).read_text())
        rows = Path(cmd[cmd.index("--rows") + 1])
        calls.append(steps)
        with open(rows, "a") as f:
            for step in steps:
                f.write(json.dumps({"start": step}) + "\n")
                if step == "b" and len(calls) == 1:
                    return subprocess.CompletedProcess(cmd, 70, "", "CUDA error: an illegal memory access")
                f.write(json.dumps({"cell": step, "variant": "autopad.ops", "correct": True}) + "\n")
                f.write(json.dumps({"done": step}) + "\n")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(bench_ops.subprocess, "run", fake_run)
    rows = bench_ops.run_all(["a", "b", "c"], tmp_path, 100.0, compile_peers=False, quick=True)
    assert calls == [["a", "b", "c"], ["c"]]
    assert [(r["cell"], r["variant"]) for r in rows] == [
        ("a", "autopad.ops"),
        ("b", "(worker died)"),
        ("c", "autopad.ops"),
    ]
    assert "illegal memory access" in rows[1]["error"]


def _rows():
    base = {"op": "transpose", "shape": "64x64", "dtype": "float32", "unit": "gbps", "correct": True}
    cell = "transpose 64x64 float32"
    return [
        {"cell": "pretune transpose 16384x16384 float16", "variant": "pretune", "tune_s": 21.5,
         "source": "measured"},
        {**base, "cell": cell, "variant": "autopad.ops", "ms": 0.004, "call_us": 9.0, "ratio_to_ceiling": 0.4,
         "first_call_s": 12.0, "source": "tuned now: measured in 11.8 s"},
        {**base, "cell": cell, "variant": "torch eager", "ms": 0.005, "call_us": 15.0},
        {**base, "cell": cell, "variant": "plain triton", "ms": 0.006},
        {"cell": "checks", "variant": "CUDA graph capture", "correct": True, "error": ""},
    ]  # fmt: skip


def test_summary_table_and_csv(tmp_path):
    table = bench_ops.summary(_rows())
    assert (
        "| transpose 64x64 float32 | 0.0040 | 0.40 | 1.25x | - | 1.50x | 9.0 (15.0) | 12.0 | tuned now"
        in table
    )
    assert "tuned in 21.5 s" in table and "check: CUDA graph capture | ok" in table
    path = bench_ops.write_csv(_rows(), tmp_path / "ops.csv")
    head = path.read_text().splitlines()[0].split(",")
    assert head == bench_ops.FIELDS


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    out = bench_ops.plot(_rows(), tmp_path / "ops.png")
    assert out.stat().st_size > 1000


def test_plain_triton_peers_under_the_interpreter():
    """The peers' index arithmetic, checked against torch on CPU tensors (TRITON_INTERPRET=1)."""
    pytest.importorskip("triton")
    code = f"""
import sys, torch
sys.path.insert(0, {str(ROOT / "benchmarks")!r})
import bench_ops as b
x = torch.randn(37, 70)
assert all(torch.equal(fn(), x.t().contiguous()) for _, fn in b.plain_triton("transpose", (x,), {{}}))
xb = torch.randn(3, 33, 65).half()
want = xb.transpose(-1, -2).contiguous()
assert all(torch.equal(fn(), want) for _, fn in b.plain_triton("transpose", (xb,), {{}})[:2])
v = torch.randint(-2, 300, (5000,), dtype=torch.int32)
keep = (v >= 0) & (v < 300)
(_, hist), = b.plain_triton("histogram", (v, 300), {{}})
assert torch.equal(hist().long(), torch.bincount(v[keep].long(), minlength=300))
w = torch.rand(5000)
(_, whist), = b.plain_triton("histogram", (v, 300), {{"weights": w}})
assert torch.allclose(whist(), torch.zeros(300).index_add_(0, v[keep].long(), w[keep]), atol=1e-4)
a, m = torch.randn(33, 17), torch.randn(17, 40)
assert all(torch.allclose(fn(), a @ m, atol=1e-4) for _, fn in b.plain_triton("matmul", (a, m), {{}}))
print("ok")
"""
    env = {**__import__("os").environ, "TRITON_INTERPRET": "1"}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr[-2000:]


@pytest.mark.parametrize(
    "cell",
    ["transpose 33x65 float32", "transpose 3x33x65 bfloat16", "histogram 1000x300 int64",
     "histogram 1000x300 int32 weights=float32", "matmul 33x65x17 float32",
     "histogram 1000x300 int32 sorted backend=triton"],
)  # fmt: skip
def test_a_cell_runs_every_variant(cell, monkeypatch):
    """A cell's flow on CPU tensors: the operators' kernels are torch's answers (CPU), timing is mocked."""
    torch = pytest.importorskip("torch")
    from autopad import ops
    from autopad.bench import Timing
    from autopad.ops import registry

    ops.register()
    lib = torch.library.Library("autopad", "IMPL")
    lib.impl("transpose", lambda x, backend="auto": x.transpose(-1, -2).contiguous(), "CPU")

    told = []

    def hist(x, bins, weights=None, dist=None, backend="auto"):
        told.append((dist, backend))
        if weights is None:
            return torch.bincount(x.long(), minlength=bins).int()
        return torch.bincount(x.long(), weights=weights, minlength=bins).float()

    lib.impl("histogram", hist, "CPU")
    lib.impl("matmul", lambda a, b, backend="auto": a @ b, "CPU")
    for name in ("check_transpose", "check_histogram", "check_matmul"):
        monkeypatch.setattr(registry, name, lambda *a, **k: None)
    monkeypatch.setattr(bench_ops, "DEVICE", "cpu")
    monkeypatch.setattr(bench_ops, "plain_triton", lambda op, pos, kw: [])
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    import autopad.bench

    monkeypatch.setattr(autopad.bench, "benchmark", lambda fn, reps, warmup: (fn(), Timing(0.1, 0.0, 1))[1])
    try:
        rows = bench_ops.run_cell(cell, compile_peers=False)
    finally:
        lib._destroy()
    got = {r["variant"]: r for r in rows}
    assert set(got) == {"autopad.ops", "torch eager", "ceiling"}, rows
    assert all(r["correct"] for r in rows), rows
    assert got["autopad.ops"]["ms"] == 0.1 and got["autopad.ops"]["call_us"] > 0
    if "sorted" in cell:  # the op (not torch's peer) is told the cell's input class and backend
        assert told and set(told) == {("sorted", "triton")}


def test_an_explicit_cell_is_checked_before_any_work(capsys, tmp_path):
    """--cell runs a cell of no list; one the op would refuse (an input class it does not take) stops the
    run with the allowed names, before a GPU is touched."""
    with pytest.raises(SystemExit):
        bench_ops.main(["--cell", "histogram 268435456x256 int32 zipf", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert "'zipf' is not one of uniform, skewed, single, sorted" in err
    with pytest.raises(SystemExit):  # a malformed cell too: the parser's one line, not a traceback
        bench_ops.main(["--cell", "histogram 2e8x256 int32", "--out", str(tmp_path / "out")])
    assert "shape '2e8x256' is not of the form" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()  # refused before the output folder was made
