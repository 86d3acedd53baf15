"""Tests for the command line (autopad.cli): `autopad explain` in-process and as a real process, the entry
points (`autopad`, `python -m autopad`, `python -m autopad.cli`) and what the path to a cache hit imports.

The degrees checked are the textbook ones (32x32 fp32 column: 32 wavefronts per column, 32x33: 1), derived
in tests/test_model.py and the seeds, not copied from the CLI's output.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autopad.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
EXPLAIN = ["explain", "--tile", "32x32", "--dtype", "float32", "--pattern", "column"]


def total(out: str) -> list[str]:
    line = next(ln for ln in out.splitlines() if "total per tile" in ln)
    return line.split("total per tile")[1].split()[:3]


def run_module(
    *args: str, env: dict | None = None, module: str = "autopad.cli"
) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=120,
    )


def test_explain_in_process_unpadded_vs_padded(capsys):
    assert main([*EXPLAIN, "--layout", "pad=0"]) == 0
    out = capsys.readouterr().out
    assert total(out) == ["1024", "32", "32x"]  # 32 columns x 32 wavefronts, ideal 1 each
    assert "busiest bank 0 holds 32 distinct words -> 32 wavefronts" in out
    assert main([*EXPLAIN, "--layout", "pad=1"]) == 0
    out = capsys.readouterr().out
    assert total(out) == ["32", "32", "1x"]
    assert "32 banks touched" in out


def test_explain_defaults_are_the_textbook_case(capsys):
    assert main(["explain"]) == 0
    assert total(capsys.readouterr().out) == ["1024", "32", "32x"]


def test_explain_swizzle_cute_and_transpose(capsys):
    assert (
        main(["explain", "--layout", "cute=5,0,5", "--pattern", "transpose-read", "--instruction", "3"]) == 0
    )
    out = capsys.readouterr().out
    assert total(out) == ["32", "32", "1x"]
    assert (
        main(["explain", "--layout", "swizzle=vec4,phase1,max8", "--pattern", "tile 8x4", "--vec", "4"]) == 0
    )
    assert total(capsys.readouterr().out) == ["32", "32", "1x"]  # float4 rows: each 8-lane phase is one row


def test_explain_fp16_pad_one(capsys):
    """The fp16 [32][33] read-out is 48 wavefronts for 32 ideal (derived in tests/test_layouts.py)."""
    args = ["explain", "--dtype", "float16", "--layout", "pad=1", "--pattern", "transpose-read"]
    assert main(args) == 0
    assert total(capsys.readouterr().out) == ["48", "32", "1.5x"]


def test_explain_png(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    png = tmp_path / "bank.png"
    assert main([*EXPLAIN, "--layout", "pad=1", "--png", str(png)]) == 0
    assert f"wrote {png}" in capsys.readouterr().out
    assert png.read_bytes()[:8] == PNG_MAGIC


def test_explain_png_unwritable(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    assert main([*EXPLAIN, "--png", str(tmp_path / "missing" / "bank.png")]) == 1
    err = capsys.readouterr().err
    assert "cannot write" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "args,names",
    [
        (["explain", "--tile", "32by32"], "tile"),
        (["explain", "--dtype", "float7"], "dtype"),
        (["explain", "--layout", "pad=-1"], "layout"),
        (["explain", "--layout", "twist=3"], "layout"),
        (["explain", "--pattern", "diagonal"], "pattern"),
        (["explain", "--instruction", "32"], "instruction"),
        (["explain", "--instruction", "x"], "--instruction"),
        (["explain", "--arch", "sm_99"], "arch"),
        (["explain", "--layout", "pad=1", "--vec", "4", "--pattern", "row"], "vector width"),
        (["explain", "--vec", "0"], "vec"),
        (["explain", "--color", "sometimes"], "--color"),
        (["explain", "--nope"], "--nope"),
        (["frobnicate"], "frobnicate"),
        ([], "command"),
        # a negative size reads as an option to argparse: the error says how to give it (then it is refused
        # for what it is, by the shape's own check)
        (["tune", "transpose", "--shape", "-3x5"], "write --shape=VALUE"),
        (["tune", "transpose", "--shape=-3x5"], "every dimension must be a positive int"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(args, names, capsys):
    assert main(args) == 2
    captured = capsys.readouterr()
    lines = [ln for ln in captured.err.splitlines() if ln.strip()]
    assert len(lines) == 1, captured.err
    assert names in lines[0] and "error" in lines[0]
    assert "Traceback" not in captured.err
    assert captured.out == ""


def test_help_exits_0(capsys):
    assert main(["--help"]) == 0
    assert "explain" in capsys.readouterr().out
    assert main(["explain", "--help"]) == 0
    out = capsys.readouterr().out
    for word in (
        "--tile",
        "--dtype",
        "--layout",
        "--pattern",
        "--png",
        "--instruction",
        "--arch",
        "cute=B,M,S",
    ):
        assert word in out


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("autopad ")


def test_colour_switch(capsys):
    assert main([*EXPLAIN, "--color", "always"]) == 0
    assert "\x1b[7m" in capsys.readouterr().out
    assert main([*EXPLAIN, "--color", "never"]) == 0
    assert "\x1b" not in capsys.readouterr().out
    assert main(EXPLAIN) == 0  # auto: captured output is not a terminal
    assert "\x1b" not in capsys.readouterr().out


def test_over_budget_tile_is_drawn_with_a_note(capsys):
    assert main(["explain", "--tile", "256x256", "--pattern", "row"]) == 0
    captured = capsys.readouterr()
    assert "budget" in captured.err and "total per tile" in captured.out


def test_subcommands_are_pluggable():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert "explain" in sub.choices


def test_python_dash_m(tmp_path):
    png = tmp_path / "b.png"
    padded = run_module(*EXPLAIN, "--layout", "pad=1", "--png", str(png))
    assert padded.returncode == 0, padded.stderr
    assert total(padded.stdout) == ["32", "32", "1x"]
    assert png.read_bytes()[:8] == PNG_MAGIC
    bad = run_module("explain", "--layout", "pad=x")
    assert bad.returncode == 2
    assert bad.stderr.strip().count("\n") == 0 and "layout" in bad.stderr and "Traceback" not in bad.stderr


def test_console_script():
    exe = shutil.which("autopad")
    if exe is None:
        pytest.skip("the autopad console script is not installed (pip install -e .)")
    done = subprocess.run([exe, *EXPLAIN, "--layout", "pad=0"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert total(done.stdout) == ["1024", "32", "32x"]


def test_import_is_light():
    code = (
        "import sys, autopad.cli; "
        "heavy = ('matplotlib', 'torch', 'triton', 'scipy'); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_python_dash_m_autopad(tmp_path):
    done = run_module(*EXPLAIN, "--layout", "pad=1", module="autopad")
    assert done.returncode == 0, done.stderr
    assert total(done.stdout) == ["32", "32", "1x"]
    bad = run_module("explain", "--tile", "0x4", module="autopad")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "tile" in bad.stderr


def test_explain_json(capsys):
    assert main([*EXPLAIN, "--layout", "pad=1", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["total"] == {"wavefronts": 32, "ideal": 32, "conflicts": 0}
    assert doc["instructions_total"] == 32 and len(doc["instructions"]) == 32
    assert doc["banks"][1][0] == 1  # row 1 of a 33-wide fp32 tile starts one bank along
    assert len(doc["marked"]) == 32 and doc["png"] is None


@pytest.mark.parametrize("tile", ["100000x100000", "8192x8192", "1025x1024"])
def test_absurd_tiles_are_refused_before_any_work(tile, capsys):
    t0 = time.perf_counter()
    assert main(["explain", "--tile", tile]) == 2
    assert time.perf_counter() - t0 < 5
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "tile" in err[0] and "1,048,576" in err[0]


def test_absurd_padding_is_refused_before_any_work(capsys):
    """--layout pad=1000000 on a 32x32 tile printed 128 MB (its padding cells, after each row's '|')."""
    assert main(["explain", "--tile", "32x32", "--layout", "pad=1000000"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "padding" in err[0] and "1,048,576" in err[0]


def test_an_empty_png_path_is_refused(capsys):
    """--png '' was taken as no --png at all: the map printed, exit 0, nothing drawn, nothing said."""
    assert main([*EXPLAIN, "--png", ""]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "png" in err[0]


def test_big_tiles_are_summarised(capsys):
    assert main(["explain", "--tile", "300x300", "--pattern", "column"]) == 0
    out = capsys.readouterr().out
    assert "map summarised: 300x300" in out and "instruction 0 touches (row,col)->bank: (0,0)->0" in out
    assert len(out) < 20_000  # 32x32 corner, 64 table rows; the 300x300 map would be ~370 KB
    assert "more instructions, all counted in the total" in out
    assert main(["explain", "--tile", "256x256", "--pattern", "row"]) == 0
    assert "map summarised" not in capsys.readouterr().out  # up to 256x256 every cell is printed


def test_explain_png_refuses_symlinks_and_different_files(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    link = tmp_path / "bank.png"
    link.symlink_to(victim)
    assert main([*EXPLAIN, "--png", str(link)]) == 1
    assert "symlink" in capsys.readouterr().err and victim.read_text() == "precious"
    png = tmp_path / "real.png"
    assert main([*EXPLAIN, "--png", str(png)]) == 0
    assert main([*EXPLAIN, "--png", str(png)]) == 0  # the same picture again: nothing to do
    assert main([*EXPLAIN, "--layout", "pad=1", "--png", str(png)]) == 1
    assert "--overwrite" in capsys.readouterr().err
    assert main([*EXPLAIN, "--layout", "pad=1", "--png", str(png), "--overwrite"]) == 0
    assert main([*EXPLAIN, "--png", str(tmp_path / "bank.svg")]) == 2


def test_a_cache_hit_imports_nothing_heavy(tmp_path):
    """`autopad tune` answered from the cache in a fresh process loads no torch, triton, numba, scipy or
    matplotlib (the GPU check is ctypes; the model is not run)."""
    env = {"AUTOPAD_CACHE_DIR": str(tmp_path / "cache"), "AUTOPAD_NO_BENCH": "1"}
    args = ["tune", "histogram", "--shape", "4096x256", "--dtype", "int32", "--quiet"]
    first = run_module(*args, env=env, module="autopad")
    assert first.returncode == 0, first.stderr
    code = (
        "import sys; from autopad.cli import main; rc = main(sys.argv[1:]); "
        "heavy = ('torch', 'triton', 'numba', 'scipy', 'matplotlib', 'cuda'); "
        "print(sorted({m.split('.')[0] for m in sys.modules if m.split('.')[0] in heavy}), rc)"
    )
    hit = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT), **env}, timeout=120)  # fmt: skip
    assert hit.returncode == 0, hit.stderr
    assert hit.stdout.splitlines()[0] == first.stdout.strip()
    assert hit.stdout.splitlines()[1] == "[] 0"


def test_a_warning_is_one_line_said_once(tmp_path):
    """A corrupt cache file, read and then replaced in one `autopad tune`: its warning is one line in its own
    words, said once, not Python's 'file:line: UserWarning:' form with the warning code's source line after
    it (twice: at the read and at the write)."""
    env = {"AUTOPAD_CACHE_DIR": str(tmp_path / "cache"), "AUTOPAD_NO_BENCH": "1"}
    args = ["tune", "histogram", "--shape", "4096x256", "--dtype", "int32", "--quiet"]
    assert run_module(*args, env=env, module="autopad").returncode == 0
    (cached,) = (tmp_path / "cache" / "tune").glob("*.json")
    cached.write_text("garbage")
    done = run_module(*args, env=env, module="autopad")
    assert done.returncode == 0, done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert all(ln.startswith("autopad") for ln in lines), done.stderr
    assert sum(f"ignoring {cached}" in ln for ln in lines) == 1, done.stderr
    # a user's own choice of what warnings do is kept: -W error fails the command, in one line
    cached.write_text("garbage")
    done = run_module(*args, env={**env, "PYTHONWARNINGS": "error::UserWarning"}, module="autopad")
    assert done.returncode == 1 and f"ignoring {cached}" in done.stderr and "Traceback" not in done.stderr
    assert "please report it" not in done.stderr  # the user's own choice, not a bug of autopad's


def test_a_caller_s_own_warning_filter_is_kept(tmp_path, monkeypatch, capsys):
    """A program (or pytest) that makes warnings errors in code, not through -W, keeps that choice in
    main(): the CLI's 'once' filter goes after it (it went first, and the warning no longer failed)."""
    import warnings

    from autopad.cli import main

    monkeypatch.setenv("AUTOPAD_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("AUTOPAD_NO_BENCH", "1")
    args = ["tune", "histogram", "--shape", "4096x256", "--dtype", "int32", "--quiet"]
    assert main(args) == 0
    (cached,) = (tmp_path / "cache" / "tune").glob("*.json")
    cached.write_text("garbage")
    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        assert main(args) == 1
    assert f"ignoring {cached}" in capsys.readouterr().err


def test_an_option_value_starting_with_a_dash_says_how_to_give_it_for_short_options_too(capsys):
    """'-o -x.h': argparse names the option '-o/--output'; the hint names --output=VALUE as for --shape."""
    from autopad.cli import main

    assert main(["export", "r.json", "-o", "-x.h"]) == 2
    assert "write --output=VALUE for a value that starts with '-'" in capsys.readouterr().err


@pytest.mark.parametrize("pattern", ["row", "transpose-read"])
def test_explain_names_vec_when_the_access_is_too_wide(pattern, capsys):
    """--vec 8 on fp32 (32 bytes a lane) was an access_bytes error from the pattern, or a layout error with
    transpose-read; it names --vec and the values the dtype takes."""
    assert main(["explain", "--tile", "32x32", "--dtype", "float32", "--vec", "8", "--pattern", pattern]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "vec: 8 elements of float32 is 32 bytes a lane" in err[0]
    assert "--vec 1, 2, 4 for float32" in err[0]


def test_explain_block_y_goes_only_with_the_transpose_patterns(capsys):
    """--block-y shapes the transpose patterns' block; the others were given it and dropped it without a
    word. With a transpose pattern it is taken (a 4-row block reads other lanes than the default 8)."""
    base = ["explain", "--tile", "32x32", "--dtype", "float32", "--json"]
    assert main([*base, "--pattern", "column", "--block-y", "4"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "block-y: only the transpose-read and transpose-write patterns" in err[0]
    got = []
    for extra in ([], ["--block-y", "4"]):
        assert main([*base, "--pattern", "transpose-read", *extra]) == 0
        got.append(json.loads(capsys.readouterr().out))
    assert got[0] != got[1]  # a 4-row block's warps walk other loop steps (the instructions' labels)
