"""The tuning subcommands without a GPU: tune (model only), export, cache list/clear, sweep; exit codes."""

from __future__ import annotations

import importlib.util

import pytest

from autopad.cli import main

ARGS = ["histogram", "--shape", "1048576x256", "--dtype", "int32", "--backend", "triton", "--dist", "uniform"]


@pytest.fixture(autouse=True)
def _no_bench(monkeypatch):
    monkeypatch.setenv("AUTOPAD_NO_BENCH", "1")


def test_tune_export_cache_round_trip(tmp_path, capsys):
    header = tmp_path / "hist.h"
    assert main(["tune", *ARGS, "--export", str(header)]) == 0
    out = capsys.readouterr()
    assert "model alone" in out.out and "pick:" in out.out and header.exists()
    assert "#define AUTOPAD_HISTOGRAM_" in header.read_text()
    # a second export onto a different existing file is refused without --overwrite (exit 1)
    header.write_text("// the user's own file\n")
    assert main(["tune", *ARGS, "--export", str(header)]) == 1
    assert header.read_text() == "// the user's own file\n"

    assert main(["cache", "list"]) == 0
    assert "histogram" in capsys.readouterr().out

    module = tmp_path / "hist_consts.py"
    rc = main(
        [
            "export",
            "--kernel",
            "histogram",
            "--shape",
            "1048576x256",
            "--dtype",
            "int32",
            "--backend",
            "triton",
            "-o",
            str(module),
        ]
    )
    assert rc == 0 and "CONSTANTS" in module.read_text()
    assert main(["cache", "clear"]) == 0
    assert "removed" in capsys.readouterr().out


def test_export_from_a_saved_result(tmp_path, capsys):
    saved = tmp_path / "r.json"
    assert main(["tune", *ARGS, "--export", str(saved)]) == 0
    module = tmp_path / "consts.py"
    assert main(["export", str(saved), "-o", str(module)]) == 0
    spec = importlib.util.spec_from_file_location("consts", module)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.KERNEL == "histogram" and isinstance(mod.CONSTANTS, dict) and mod.CONSTANTS


@pytest.mark.parametrize(
    "argv",
    [
        ["tune", "fft", "--shape", "8x8"],
        ["tune", "transpose", "--shape", "0x8"],
        ["tune", "transpose", "--shape", "8x8", "--dtype", "complex64"],
        ["tune", "transpose", "--shape", "64x64", "--refine", "-1"],
        ["tune", "transpose"],  # --shape is required
        ["export", "-o", "x.h"],  # nothing to export
        ["sweep", "--kernels", "fft"],
        ["cache", "compact"],
    ],
)
def test_bad_arguments_exit_2_with_one_line(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "error" in err[0] and "Traceback" not in err[0]


def test_sweep_model_only_writes_csv_and_png(tmp_path, capsys):
    rc = main(
        [
            "sweep",
            "--kernels",
            "histogram",
            "--shapes",
            "65536x256",
            "--dtypes",
            "int32",
            "--backend",
            "triton",
            "--dist",
            "uniform",
            "--out",
            str(tmp_path),
            "--no-progress",
        ]
    )
    assert rc == 0, capsys.readouterr().err
    assert (tmp_path / "sweep.csv").read_text().count("\n") == 2
    assert (tmp_path / "sweep.png").read_bytes()[:4] == b"\x89PNG"
