"""autopad.cuda_runtime: what ``import autopad`` loads (no CUDA, no torch), and the module as the re-export
of the code split out of it: every name importable from it; a name a test patches bound in one module only,
the one every reader looks it up in; no test or benchmark patching a name that cuda_runtime or autopad.cache
only re-exports (such a patch would reach none of the code).

The tests of that code live beside its modules: test_cubin_file, test_cuda_compile, test_cuda_launch (with
cuda_fakes) and test_cuda_driver.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cuda_fakes import fake_cuda_env

import autopad.cache
from autopad import cubin_file, cuda_compile, cuda_context, cuda_driver, cuda_launch
from autopad import cuda_runtime as rt

HOMES = (cubin_file, cuda_compile, cuda_context, cuda_driver, cuda_launch)


def test_import_autopad_does_not_load_cuda():
    code = "import sys, autopad; print(any(m.startswith(('cuda', 'torch')) for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_every_name_stays_importable_from_cuda_runtime():
    for name in rt.__all__:
        assert getattr(rt, name) is not None
    for home in HOMES:
        for name in vars(home):
            if not name.startswith("__"):
                assert getattr(rt, name) is getattr(home, name), (home.__name__, name)
    # the private names other modules, tests and benchmarks use, by name
    from autopad.cuda_runtime import (  # noqa: F401
        _CURRENT,
        _MEM_CUBINS,
        _STREAMS,
        _backend,
        _cuda_core,
        _libcuda,
        _torch_hooks,
    )

    assert rt.KERNEL_DIR.name == "cuda" and (rt.KERNEL_DIR / "common.cuh").is_file()


def test_names_a_module_rebinds_are_read_from_it_not_copied(monkeypatch):
    """``rt._CU`` is what cuda_driver holds now (the library, once loaded), not the None of import time."""
    assert "_CU" not in vars(rt) and rt._CU is cuda_driver._CU
    monkeypatch.setattr(cuda_driver, "_CU", "loaded")
    assert rt._CU == "loaded"
    with pytest.raises(AttributeError, match="autopad.cuda_runtime.*no_such_name"):
        rt.no_such_name  # noqa: B018


# the names the CPU tests and benchmarks/profile_ops_host.py replace, each in the module that defines it
PATCHED = {
    cuda_compile: ("_cuda_core",),
    cuda_context: ("_torch_hooks", "_stream_for", "_STREAMS"),
    cuda_driver: ("_LIBCUDA", "_CU"),
}


def test_a_patched_name_is_bound_only_in_the_module_that_defines_it():
    """The other modules read it through that one (``cuda_compile._cuda_core()``), so one patch there
    reaches every reader; a copy bound by ``from .cuda_compile import _cuda_core`` would keep the real one."""
    for home, names in PATCHED.items():
        for name in names:
            assert name in vars(home), (home.__name__, name)
            for other in (rt, *HOMES):
                assert other is home or name not in vars(other), (other.__name__, name)


@pytest.fixture
def fake_cuda(monkeypatch):
    yield from fake_cuda_env(monkeypatch)


def test_the_fakes_reach_both_launch_paths(fake_cuda, monkeypatch):
    """tests/cuda_fakes.py's patches, in cuda_compile and cuda_context, are what cuda_launch's ad hoc
    ``launch`` and cuda_driver's ``prepare_fixed`` use: the fake device made current, the fake stream."""
    cc, state, torch = fake_cuda
    cuda_launch.launch("K", 2, 32, (torch.zeros(4), np.int32(3)))
    assert cc.current == [0] and cc.launches[0][0] == ("s", 1234) and cc.launches[0][1] == (2, 32, 0)
    assert cuda_context._STREAMS == {0: {1234: ("s", 1234)}}  # the fake's own, undone with the patch
    monkeypatch.setattr(cuda_driver, "_LIBCUDA", "/nonexistent/libcuda-stub.so")
    monkeypatch.setattr(cuda_driver, "_CU", None)
    monkeypatch.delenv("AUTOPAD_LAUNCH", raising=False)
    state["dev"] = 5  # prepare_fixed asks the fake hooks for the device: made current through the fake core
    assert cuda_driver.prepare_fixed(type("H", (), {"handle": 1})(), 1, 32, 0, (0,)) is None  # no driver
    assert cc.current == [0, 5]


def _compat_patches(path: Path) -> list[str]:
    """Each attribute set or deleted on autopad.cuda_runtime or autopad.cache in ``path`` (monkeypatch or
    builtin setattr/delattr, by object or by dotted string, and plain assignment) that the module does not
    bind itself (a re-export served from the module that reads it), and every delete (the name would still
    be served from its module)."""
    compat = {"autopad.cuda_runtime": rt, "autopad.cache": autopad.cache}
    tree = ast.parse(path.read_text())
    alias = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "autopad":
            alias.update({a.asname or a.name: f"autopad.{a.name}" for a in node.names})
        elif isinstance(node, ast.Import):
            alias.update({a.asname: a.name for a in node.names if a.asname})

    def module_of(e: ast.expr) -> str | None:
        if isinstance(e, ast.Name):
            name = alias.get(e.id)
        elif isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id == "autopad":
            name = f"autopad.{e.attr}"  # import autopad.cache; autopad.cache.X = ...
        else:
            return None
        return name if name in compat else None

    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        hits: list[tuple[str, str, bool]] = []  # (module, name, a delete)
        if isinstance(node, ast.Call) and node.args:
            f = node.func
            fname = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            first = node.args[0]
            if fname in ("setattr", "delattr"):
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    mod, _, name = first.value.rpartition(".")
                    hits.append((mod, name, fname == "delattr"))
                elif len(node.args) > 1 and isinstance(node.args[1], ast.Constant):
                    hits.append((module_of(first) or "", str(node.args[1].value), fname == "delattr"))
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for t in targets:
                for e in t.elts if isinstance(t, ast.Tuple) else [t]:
                    if isinstance(e, ast.Attribute):
                        hits.append((module_of(e.value) or "", e.attr, isinstance(node, ast.Delete)))
        for mod, name, delete in hits:
            if mod in compat and (delete or name not in vars(compat[mod])):
                found.append((node.lineno, f"{path.name}:{node.lineno}: {mod}.{name}"))
    return [text for _, text in sorted(found, key=lambda f: f[0])]


def test_no_test_or_benchmark_patches_a_re_export():
    """A patch of a name autopad.cuda_runtime or autopad.cache only re-exports would reach none of the
    code (it reads the name in its own module) and, undone by pytest < 9.2, leave a stale copy bound."""
    root = Path(__file__).resolve().parents[1]
    files = sorted([*(root / "tests").glob("*.py"), *(root / "benchmarks").glob("*.py")])
    assert len(files) > 50
    assert [hit for p in files for hit in _compat_patches(p)] == []


def test_the_check_finds_each_form_of_patch(tmp_path):
    src = tmp_path / "patches.py"
    src.write_text(
        "import autopad.cache\n"
        "from autopad import cuda_runtime as rt\n"
        "def t(monkeypatch):\n"
        "    monkeypatch.setattr(rt, '_cuda_core', None)\n"
        "    monkeypatch.setattr('autopad.cache._read_bytes', None)\n"
        "    rt._LIBCUDA, rt._CU = 'stub', None\n"
        "    autopad.cache.max_bytes = None\n"
        "    monkeypatch.delattr(rt, 'prepare_launch')\n"
        "    monkeypatch.setattr(rt, 'launch', None)\n"  # bound in cuda_runtime, read there by the specs
        "    monkeypatch.setattr('autopad.cache.os.access', None)\n"  # os's, not autopad.cache's
        "    rt._CURRENT.device = None\n"  # a shared object's state, not a binding
    )
    assert [h.split(": ")[1] for h in _compat_patches(src)] == [
        "autopad.cuda_runtime._cuda_core",
        "autopad.cache._read_bytes",
        "autopad.cuda_runtime._LIBCUDA",
        "autopad.cuda_runtime._CU",
        "autopad.cache.max_bytes",
        "autopad.cuda_runtime.prepare_launch",
    ]
