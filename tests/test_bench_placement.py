"""benchmarks/bench_placement.py without a GPU: its arguments are checked, illegal constants and a missing GPU
are clear refusals (the measuring needs the H200 and runs there)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_placement as B  # noqa: E402


def test_shapes_and_constants_parse_or_say_what_is_allowed():
    assert B.parse_shape("4097x8191") == (4097, 8191)
    assert B.parse_constants("PAD=1, VEC=2") == {"PAD": 1, "VEC": 2}
    for bad in ("4097", "0x5", "ax5", "1x2x3"):
        with pytest.raises(argparse.ArgumentTypeError, match="MxN"):
            B.parse_shape(bad)
    for bad in ("PAD", "PAD=x", "=3", "PAD=1,,VEC=2"):
        with pytest.raises(argparse.ArgumentTypeError, match="NAME=INT"):
            B.parse_constants(bad)
    for text in B.DEFAULT_CONSTANTS:  # the built-in picks are legal where they were measured
        from autopad.kernels.cuda import transpose as T

        assert T.SPEC.legal(B.parse_constants(text), (16384, 16384), "float64")


def test_illegal_constants_and_no_gpu_are_refused(tmp_path, capsys):
    pytest.importorskip("torch")
    assert B.main(["--out", str(tmp_path), "--constants", "PAD=1"]) == 2
    assert "not legal for float64" in capsys.readouterr().err
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is here: the refusal is for machines without one")
    assert B.main(["--out", str(tmp_path / "o")]) == 2
    assert "needs an NVIDIA GPU" in capsys.readouterr().err
    for bad in (["--segments", "1"], ["--repeat", "1"], ["--reps", "0"]):
        with pytest.raises(SystemExit):
            B.main(["--out", str(tmp_path), *bad])
