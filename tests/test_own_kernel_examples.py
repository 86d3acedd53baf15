"""README's "Your own kernel" examples on a CPU: they are ranked by the model, and they compile for sm_90.

The CUDA example must stay within 30 lines (imports included) and the Gluon one must carry no hand-written
access pattern: the model takes its lanes from the register layouts it declares.
"""

from __future__ import annotations

import inspect
import shutil

import pytest

import autopad

triton = pytest.importorskip("triton")

import own_kernel_example as cuda_ex  # noqa: E402
import own_kernel_gluon_example as gluon_ex  # noqa: E402


def test_the_cuda_example_is_at_most_30_lines_of_code():
    src = inspect.getsource(cuda_ex).splitlines()
    code = [ln for ln in src if ln.strip() and not ln.lstrip().startswith("#")]
    assert len(code) <= 30, len(code)


def test_the_gluon_example_has_no_pattern_and_the_model_sees_its_layouts(monkeypatch):
    monkeypatch.setenv("AUTOPAD_NO_BENCH", "1")
    assert gluon_ex.GluonTranspose.PATTERN is None
    res = autopad.tune(gluon_ex.GluonTranspose, (4097, 8191), cache=False)
    assert res.mode == "model-only"
    by = {c.key: c for c in res.candidates}
    padded = by["BM=64,BN=64,PAD=4,WARPS=4"].prediction.wavefronts_per_tile
    unpadded = by["BM=64,BN=64,PAD=0,WARPS=4"].prediction.wavefronts_per_tile
    assert padded < unpadded  # the column read of an unpadded 64-float row is a 32-way conflict
    assert res.best.constants["PAD"] != 0


@pytest.mark.parametrize("c", [dict(BM=128, BN=32, PAD=4, WARPS=8), dict(BM=64, BN=64, PAD=0, WARPS=4)])
def test_the_gluon_example_compiles_for_sm90_with_the_layouts_footprint(c):
    from autopad.gluon_model import compile_sm90

    spec = gluon_ex.GluonTranspose()
    built = spec.build(c, "float32")
    sig = {"x": "*fp32", "y": "*fp32", "M": "i32", "N": "i32"}
    k = compile_sm90(gluon_ex.transpose, sig, built["kwargs"], num_warps=c["WARPS"])
    footprint = spec.layout(c, "float32").footprint
    assert footprint - 4 * c["PAD"] <= k.metadata.shared <= footprint  # the last row's padding may go


def test_the_cuda_example_is_ranked_and_compiles(monkeypatch, tmp_path):
    monkeypatch.setenv("AUTOPAD_NO_BENCH", "1")
    res = autopad.tune(cuda_ex.Transpose, (4097, 8191), cache=False)
    assert res.best.constants["PAD"] == 1
    if not shutil.which("nvcc"):
        pytest.skip("needs nvcc")
    monkeypatch.setenv("AUTOPAD_CUDA_COMPILER", "nvcc")
    monkeypatch.setenv("AUTOPAD_CACHE_DIR", str(tmp_path))
    from autopad import cuda_runtime

    s = cuda_ex.Transpose()
    cubin = cuda_runtime.compile_cubin(s.source(), s.defines(res.best.constants, "float32"), "sm_90")
    assert len(cubin) > 1000
