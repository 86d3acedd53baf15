"""The package's own set-up (autopad/__init__.py): ``autopad.kernels`` of a source checkout is the kernels/
folder beside the package, whichever other autopad is installed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import autopad

ROOT = Path(__file__).resolve().parents[1]


def test_the_finder_maps_only_its_own_checkouts_kernels_package(tmp_path):
    kernels, own = tmp_path / "kernels", [str(tmp_path / "autopad")]
    kernels.mkdir()
    (kernels / "__init__.py").write_text("")
    finder = autopad._CheckoutKernels(str(kernels))
    spec = finder.find_spec("autopad.kernels", own)
    assert Path(spec.origin) == kernels / "__init__.py"
    assert spec.submodule_search_locations == [str(kernels)]
    assert finder.find_spec("autopad.kernels", [str(tmp_path / "other" / "autopad")]) is None  # another copy
    assert finder.find_spec("autopad.kernels", None) is None
    assert finder.find_spec("autopad.kernels.cuda", own) is None  # found under the package's own path
    assert finder.find_spec("autopad.model", own) is None
    assert finder.find_spec("kernels", None) is None


def test_installed_once_however_often_the_package_sets_up():
    before = sum(isinstance(f, autopad._CheckoutKernels) for f in sys.meta_path)
    autopad._checkout_kernels()
    autopad._checkout_kernels()
    after = sum(isinstance(f, autopad._CheckoutKernels) for f in sys.meta_path)
    assert after == before <= 1


def test_a_checkout_takes_its_own_kernels_over_another_install():
    """A process whose import machinery knows another autopad (an editable install's finder, here one that
    maps ``autopad.kernels`` somewhere else) imports this checkout's kernels once the checkout is first on
    sys.path, as the benchmark scripts put it."""
    code = f"""
import importlib.util, sys
class Elsewhere:  # another install's mapping of autopad.kernels, right after the path finder
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "autopad.kernels":
            raise ImportError("another install's kernels were imported")
        return None
at = [getattr(f, "__name__", "") for f in sys.meta_path].index("PathFinder") + 1
sys.meta_path.insert(at, Elsewhere)
sys.path.insert(0, {str(ROOT)!r})
import autopad.kernels.cuda.transpose as t
print(t.__file__)
"""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert Path(done.stdout.strip()) == ROOT / "kernels" / "cuda" / "transpose.py"


def test_a_reload_keeps_one_finder_and_another_copy_keeps_its_own_kernels(tmp_path):
    """After this checkout's autopad was imported (its finder installed), a reload adds no second finder;
    and another copy of autopad imported later in the process (one that ships its kernels inside) gets its
    own kernels, not this checkout's."""
    other = tmp_path / "other" / "autopad"
    (other / "kernels").mkdir(parents=True)
    (other / "__init__.py").write_text("")
    (other / "kernels" / "__init__.py").write_text("WHO = 'the other copy'\n")
    code = f"""
import importlib, sys
sys.path.insert(0, {str(ROOT)!r})
import autopad
importlib.reload(autopad)
print(sum(type(f).__name__ == "_CheckoutKernels" for f in sys.meta_path))
for m in [m for m in sys.modules if m == "autopad" or m.startswith("autopad.")]:
    del sys.modules[m]
sys.path.insert(0, {str(other.parent)!r})
import autopad.kernels
print(getattr(autopad.kernels, "WHO", autopad.kernels.__file__))
"""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:2] == ["1", "the other copy"]
