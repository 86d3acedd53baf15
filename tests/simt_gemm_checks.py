"""Helpers the compiler-table tests share (tests/test_cuda_matmul.py, test_cuda_matmul_schedule.py,
test_cuda_transpose.py): the compiler tools their tables are checked against, and one SIMT GEMM
candidate's predicted time as ``rank`` makes it."""

from __future__ import annotations

from pathlib import Path

import pytest
from autopad.kernels.cuda import matmul as G

from autopad.arch import get_arch
from autopad.search import score_candidates
from autopad.spec import KernelSpec


def nvrtc_cuobjdump(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Triton's cuobjdump, with the runtime's compiler set to NVRTC (the tables' source); skips the test
    where either is missing."""
    tool = Path(__import__("triton").__file__).parent / "backends/nvidia/bin/cuobjdump"
    if not tool.exists():
        pytest.skip("needs triton's cuobjdump")
    monkeypatch.setenv("AUTOPAD_CUDA_COMPILER", "nvrtc")
    try:
        from cuda.bindings import nvrtc

        assert int(nvrtc.nvrtcVersion()[0]) == 0
    except Exception:
        pytest.skip("needs NVRTC (cuda-bindings)")
    return tool


def predicted(c: dict[str, int], shape: tuple[int, int, int]) -> float:
    """The predictor's time for one candidate: its wavefronts scored as ``search.rank`` scores them."""
    from autopad.predict import predict_arrays

    lay = G.layout(c)
    wave, ideal = score_candidates(KernelSpec(G), [c], [lay], "float32", None, get_arch("sm_90"))
    info = G.launch_info(c, shape)
    return float(predict_arrays([info], G.traffic(shape), wave, ideal, "sm_90", [lay])[0][0])
