"""The code base stays ruff-clean (lint and format), as the project's style rules ask, and every benchmark
script imports this checkout's autopad, not an installed copy."""

from __future__ import annotations

import ast
import os
import re
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


_ROOTS = ("Path(__file__).resolve().parents[1]", "Path(__file__).resolve().parent.parent")
_INSERT = "sys.path.insert(0, str(ROOT))"


def _module_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """Statements that run at import: the module's, and those inside its top-level if / try / with / for
    blocks (not inside functions or classes)."""
    out = []
    for stmt in body:
        out.append(stmt)
        if isinstance(stmt, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
            inner = list(stmt.body) + list(getattr(stmt, "orelse", [])) + list(getattr(stmt, "finalbody", []))
            inner += [s for h in getattr(stmt, "handlers", []) for s in h.body]
            out += _module_level(inner)
    return out


def _imports_project(node: ast.AST) -> bool:
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom):
        names = [node.module or ""]
    else:
        return False
    return any(n.split(".")[0] in ("autopad", "kernels") for n in names)


def _child_imports_project(tree: ast.AST) -> bool:
    """Code a script hands to a child interpreter (a string) that imports the project."""
    pat = re.compile(r"\bimport\b[^\n;]*\bautopad\b|\bfrom autopad\b")
    return any(
        isinstance(n, ast.Constant) and isinstance(n.value, str) and pat.search(n.value)
        for n in ast.walk(tree)
    )


@pytest.mark.parametrize("script", sorted((ROOT / "benchmarks").glob("*.py")), ids=lambda p: p.name)
def test_benchmark_scripts_import_this_checkout(script):
    """A script run as ``python benchmarks/x.py`` has benchmarks/ on its path, not the checkout, so without
    its own set-up ``import autopad`` finds an installed copy (another clone's editable install, say) and
    reports that copy's model. Each script that imports the project defines ``ROOT`` as the checkout and runs
    ``sys.path.insert(0, str(ROOT))`` at its top level (unconditionally: a checkout already on the path
    behind another copy must still come first) before any import of the project that runs at import time;
    one that hands the project's code to a child interpreter puts ROOT first on the child's PYTHONPATH."""
    text = script.read_text()
    tree = ast.parse(text)
    if _child_imports_project(tree) and "sys.executable" in text:
        lines = [ln for ln in text.splitlines() if "str(ROOT)" in ln and "pathsep" in ln]
        assert lines and "PYTHONPATH" in text, (
            f"{script.name}: a child interpreter without ROOT on PYTHONPATH"
        )
    if not any(_imports_project(n) for n in ast.walk(tree)):
        return
    roots = [
        n for n in tree.body if isinstance(n, ast.Assign) and [ast.unparse(t) for t in n.targets] == ["ROOT"]
    ]
    assert roots and ast.unparse(roots[0].value) in _ROOTS, f"{script.name}: ROOT is not the checkout"
    inserts = [n.lineno for n in tree.body if isinstance(n, ast.Expr) and ast.unparse(n) == _INSERT]
    assert inserts, f"{script.name}: no top-level {_INSERT}"
    first = min((n.lineno for n in _module_level(tree.body) if _imports_project(n)), default=None)
    if first is not None:
        assert inserts[0] < first, f"{script.name}: the checkout goes on sys.path after line {first}"


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
