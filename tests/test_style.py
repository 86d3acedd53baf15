"""The code base stays ruff-clean (lint and format), as the project's style rules ask, and every benchmark
script imports this checkout's autopad, not an installed copy."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("args", [["check", "."], ["format", "--check", "."]])
def test_ruff(args):
    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed (pip install -e '.[test]' brings it)")
    res = subprocess.run([ruff, *args], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def _path_inserts(body: list[ast.stmt]) -> list[tuple[int, str]]:
    """``sys.path.insert(0, X)`` calls among module-level statements (into top-level if / for / try
    bodies, not into functions): (line, X's source)."""
    out = []
    for stmt in body:
        if isinstance(stmt, (ast.If, ast.For, ast.Try)):
            inner = list(stmt.body) + list(getattr(stmt, "orelse", []))
            out += _path_inserts(inner + [s for h in getattr(stmt, "handlers", []) for s in h.body])
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            f, args = stmt.value.func, stmt.value.args
            if (isinstance(f, ast.Attribute) and f.attr == "insert" and ast.unparse(f.value) == "sys.path"
                    and len(args) == 2 and ast.unparse(args[0]) == "0"):  # fmt: skip
                out.append((stmt.lineno, ast.unparse(args[1])))
    return out


def _imports_project(node: ast.AST) -> bool:
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom):
        names = [node.module or ""]
    else:
        return False
    return any(n.split(".")[0] in ("autopad", "kernels") for n in names)


@pytest.mark.parametrize("script", sorted((ROOT / "benchmarks").glob("*.py")), ids=lambda p: p.name)
def test_benchmark_scripts_import_this_checkout(script):
    """A script run as ``python benchmarks/x.py`` has benchmarks/ on its path, not the checkout, so without
    its own set-up ``import autopad`` finds an installed copy (another clone's editable install, say) and
    reports that copy's model: each script that imports the project puts the checkout first, before its
    first module-level import of it."""
    tree = ast.parse(script.read_text())
    if not any(_imports_project(n) for n in ast.walk(tree)):
        pytest.skip("imports nothing of the project")
    here = "str(Path(__file__).resolve().parent)"  # benchmarks/ itself, for sibling scripts
    inserts = [(line, arg) for line, arg in _path_inserts(tree.body) if arg != here]
    assert inserts, f"{script.name}: no sys.path.insert(0, <the checkout>) at module level"
    first = min((n.lineno for n in tree.body if _imports_project(n)), default=None)
    if first is not None:
        assert inserts[0][0] < first, f"{script.name}: the checkout goes on sys.path after line {first}"


def test_a_script_prefers_this_checkout_to_an_installed_copy(tmp_path):
    """The rule above, run: an ``autopad`` that shadows this one on PYTHONPATH (as an installed copy does)
    is not the one a benchmark script imports."""
    fake = tmp_path / "autopad"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('the shadowing copy was imported')\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "quality_report.py"), "--help"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    assert "shadowing copy" not in res.stderr
