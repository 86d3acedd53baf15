"""`autopad sweep` without a GPU: combinations a kernel does not take are skipped (not a failed sweep),
--gpus is checked, and the CSV, PNG and JSON say what ran."""

from __future__ import annotations

import csv
import json

import pytest

import autopad.cli_sweep as cs
from autopad.cli import main

HIST = ["--kernels", "histogram", "--shapes", "65536x256", "--backend", "triton", "--dist", "uniform"]


@pytest.fixture(autouse=True)
def _no_bench(monkeypatch):
    monkeypatch.setenv("AUTOPAD_NO_BENCH", "1")


def test_unsupported_dtypes_are_skipped_and_listed(tmp_path, capsys):
    rc = main(["sweep", *HIST, "--dtypes", "float32,int32", "--out", str(tmp_path), "--no-progress"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    rows = list(csv.DictReader((tmp_path / "sweep.csv").open()))
    assert [(r["dtype"], r["mode"]) for r in rows] == [("float32", "skipped"), ("int32", "model-only")]
    assert "supports int32, not float32" in rows[0]["error"]
    assert rows[1]["best"] and float(rows[1]["predicted_us"]) > 0
    assert "skipping histogram 65536x256 float32" in captured.err
    assert "2 items, 0 failed, 1 skipped" in captured.out
    if (tmp_path / "sweep.png").exists():
        assert (tmp_path / "sweep.png").read_bytes()[:4] == b"\x89PNG"


def test_an_earlier_sweep_in_out_is_kept_unless_overwrite(tmp_path, capsys):
    """A second sweep into the same --out is refused before any work (one line, exit 1), the earlier
    sweep.csv kept as it was; with --overwrite it is replaced."""
    argv = ["sweep", *HIST, "--dtypes", "int32", "--out", str(tmp_path), "--no-png", "--no-progress"]
    assert main(argv) == 0
    (tmp_path / "sweep.csv").write_text("mine\n")
    capsys.readouterr()
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "holds an earlier sweep" in err and "--overwrite" in err and len(err.strip().splitlines()) == 1
    assert (tmp_path / "sweep.csv").read_text() == "mine\n"
    assert main([*argv, "--overwrite"]) == 0
    assert (tmp_path / "sweep.csv").read_text() != "mine\n"


def test_json_rows(tmp_path, capsys):
    argv = [
        "sweep",
        *HIST,
        "--dtypes",
        "int32",
        "--out",
        str(tmp_path),
        "--json",
        "--no-png",
        "--no-progress",
    ]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["png"] is None and doc["csv"] == str(tmp_path / "sweep.csv")
    (row,) = doc["rows"]
    assert row["kernel"] == "histogram" and row["mode"] == "model-only" and row["dist"] == "uniform"


@pytest.mark.parametrize(
    "argv,names",
    [
        (["--gpus", "x"], "--gpus"),
        (["--gpus", "0,0"], "twice"),
        (["--gpus", "7"], "not a device"),
        (["--gpus", ""], "--gpus"),
        (["--kernels", "fft"], "fft"),
        (["--dtypes", "float7"], "--dtype"),
        (["--shapes", "8by8"], "--shape"),
        (["--kernels", "histogram", "--dtypes", "float32,float16"], "no combination can be tuned"),
        (["--kernels", "matmul", "--shapes", "64x64"], "no combination can be tuned"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(argv, names, capsys, monkeypatch):
    import autopad.sweep

    monkeypatch.setattr(autopad.sweep, "run_sweep", lambda *a, **k: pytest.fail("checked before any work"))
    assert main(["sweep", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and names in err[0] and "Traceback" not in err[0]


def test_gpus(monkeypatch):
    import autopad.device

    monkeypatch.setattr(autopad.device, "device_count", lambda: 2)
    assert cs.parse_gpus("all") == [0, 1]
    assert cs.parse_gpus("1,0") == [1, 0]
    with pytest.raises(ValueError, match="2 GPU"):
        cs.parse_gpus("2")
    monkeypatch.setattr(autopad.device, "device_count", lambda: 0)
    assert cs.parse_gpus("all") == [0]  # a model-only sweep still has one worker


def test_dist_goes_only_to_kernels_that_take_one():
    todo, skipped = cs.plan_items(["histogram", "transpose"], [(64, 64)], ["int8"], "triton", "skewed")
    assert [(i.kernel, i.dist) for i in todo] == [("transpose", None)]  # triton histogram: int32 only
    assert skipped[0]["kernel"] == "histogram" and "int8" in skipped[0]["error"]
    todo, _ = cs.plan_items(["histogram"], [(4096, 256)], ["int32"], "cuda", "skewed")
    assert todo[0].dist == "skewed"


def test_a_skipped_dtype_is_not_sent_to_a_backend_that_refuses_it_too():
    """A skipped combination says which backend takes the dtype, as `autopad tune` does; the library's
    guess 'try the other backend' was wrong where neither backend takes it (transpose in int32)."""
    _, skipped = cs.plan_items(["transpose", "histogram"], [(64, 64)], ["int32", "float32"], "auto", None)
    why = {(r["kernel"], r["dtype"]): r["error"] for r in skipped}
    assert set(why) == {("transpose", "int32"), ("histogram", "float32")}
    for (kernel, dtype), text in why.items():
        assert "try the other backend" not in text, text
        assert f"no {kernel} backend takes {dtype}" in text, text
    _, skipped = cs.plan_items(["histogram"], [(64, 64)], ["uint8"], "triton", None)
    assert "--backend cuda takes uint8" in skipped[0]["error"]  # where one does, it is named
