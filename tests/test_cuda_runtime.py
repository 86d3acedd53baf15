"""autopad.cuda_runtime: what ``import autopad`` loads (no CUDA, no torch), and the module as the one
namespace of the code split out of it: every name importable from it, a patch of it reaching the code.

The tests of that code live beside its modules: test_cubin_file, test_cuda_compile, test_cuda_launch (with
cuda_fakes) and test_cuda_driver.
"""

from __future__ import annotations

import subprocess
import sys

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


def test_a_patch_of_cuda_runtime_reaches_every_module_that_reads_the_name(monkeypatch):
    """As benchmarks/profile_ops_host.py does (``rt._cuda_core = ...``, ``rt._LIBCUDA, rt._CU = stub, None``):
    the name is set in each module that binds it, and the undo restores each."""
    real = cuda_compile._cuda_core

    def fake():
        return "fake cuda.core"

    monkeypatch.setattr(rt, "_cuda_core", fake)
    for home in (cuda_compile, cuda_context, cuda_launch):
        assert home._cuda_core is fake
    monkeypatch.setattr(rt, "_LIBCUDA", "libstub.so")
    monkeypatch.setattr(rt, "_CU", None)
    assert cuda_driver._LIBCUDA == "libstub.so" and cuda_driver._CU is None
    monkeypatch.setattr(cuda_driver, "_CU", "loaded")  # state the home rebinds as it runs: read from there
    assert rt._CU == "loaded"
    monkeypatch.undo()
    assert (
        all(h._cuda_core is real for h in (cuda_compile, cuda_context, cuda_launch)) and rt._cuda_core is real
    )
    assert cuda_driver._LIBCUDA == "libcuda.so.1"
