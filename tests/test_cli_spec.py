"""How `autopad tune my_kernel.py[:Name]` finds a user's spec (autopad.cli_spec), and its errors."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from autopad.cli import UsageError, main
from autopad.cli_spec import load_kernel

TESTS = Path(__file__).resolve().parent
OWN = TESTS / "own_kernel_example.py"

TWO = """
import autopad

class A(autopad.CudaKernel):
    SOURCE = "x"

class B(autopad.TritonKernel):
    pass
"""


@pytest.fixture(autouse=True)
def _no_bench(monkeypatch):
    monkeypatch.setenv("AUTOPAD_NO_BENCH", "1")


def write(tmp_path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def test_builtin_names_pass_through():
    assert load_kernel("transpose", "tune") == ("transpose", None)


def test_the_one_subclass_the_module_and_a_named_attribute():
    pytest.importorskip("torch")  # the README example builds its arguments with torch
    spec, source = load_kernel(str(OWN), "tune")
    assert spec.__name__ == "Transpose" and source == f"{OWN}:Transpose"
    spec2, source2 = load_kernel(f"{OWN}:Transpose", "tune")
    assert spec2 is spec and source2 == f"{OWN}:Transpose"  # imported once
    mod, source = load_kernel(str(TESTS / "fake_kernel.py"), "tune")
    assert mod.NAME == "fake_transpose" and source == str(TESTS / "fake_kernel.py")


def test_several_specs_need_a_name(tmp_path):
    two = write(tmp_path, "two.py", TWO)
    with pytest.raises(UsageError, match=r"several kernel specs \(A, B\); choose one: .*two.py:NAME"):
        load_kernel(str(two), "tune")
    spec, source = load_kernel(f"{two}:B", "tune")
    assert spec.__name__ == "B" and source.endswith("two.py:B")
    with pytest.raises(UsageError, match="has no attribute 'C'"):
        load_kernel(f"{two}:C", "tune")


@pytest.mark.parametrize(
    "text,message",
    [
        ("import nonexistent_module_xyz\n", "ModuleNotFoundError"),
        ("def broken(:\n", "SyntaxError"),
        ("raise SystemExit(3)\n", "SystemExit"),
        ("NAME = 'x'\nBACKEND = 'cuda'\n", "missing: DTYPES, SPACE"),
        ("import autopad\nX = autopad.CudaKernel\n", "holds no kernel spec"),  # imported bases do not count
    ],
)
def test_files_that_are_not_specs_are_one_line(tmp_path, text, message, capsys):
    f = write(tmp_path, "k.py", text)
    assert main(["tune", str(f), "--shape", "64x64"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and str(f) in err[0] and "KERNEL" in err[0]


def test_a_spec_that_fails_its_checks_is_one_line(tmp_path, capsys):
    text = "NAME = 'x'\nBACKEND = 'opencl'\nDTYPES = ('float32',)\nSPACE = {'A': (1,)}\n"
    f = write(tmp_path, "bad.py", text + "legal = layout = smem_pattern = launch_info = traffic = print\n")
    assert main(["tune", str(f), "--shape", "64x64"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "BACKEND" in err[0]


def test_tune_a_spec_file_end_to_end(tmp_path, capsys):
    """The README's own-kernel example, tuned from the command line (model only here)."""
    pytest.importorskip("torch")
    out = tmp_path / "t.h"
    assert main(["tune", f"{OWN}:Transpose", "--shape", "1000x3001", "--export", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0] == f"kernel: transpose [cuda] from {OWN}:Transpose"
    assert "#define AUTOPAD_TRANSPOSE_PAD" in out.read_text()
