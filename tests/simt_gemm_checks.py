"""Helpers the compiler-table tests share (tests/test_cuda_matmul.py, test_cuda_matmul_schedule.py,
test_cuda_transpose.py): the compiler tools their tables are checked against, and one SIMT GEMM
candidate's predicted time as ``rank`` makes it."""

from __future__ import annotations

import re
import subprocess
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


def registers(c: dict[str, int], tool: Path, tmp: Path, fresh: bool = False) -> int:
    """Registers per thread of matmul_kernel built from today's matmul.cu with ``c`` (the runtime's
    compiler, sm_90), read back with ``tool`` (``nvrtc_cuobjdump``'s cuobjdump). ``fresh``: compile with
    NVRTC now, past the cubin cache (a second, independent build)."""
    from autopad import cuda_compile
    from autopad import cuda_runtime as rt

    if fresh:
        src = cuda_compile.expand_includes(G.source())  # as compile_cubin hands it to the compiler
        blob = cuda_compile._compile_nvrtc(src, G.defines(c), "sm_90", "matmul_kernel")
    else:
        blob = rt.compile_cubin(G.source(), G.defines(c), "sm_90", "matmul_kernel")
    path = tmp / ("_".join(f"{k}{v}" for k, v in sorted(c.items())) + ".cubin")
    path.write_bytes(blob[blob.index(b"\x7fELF") :])
    out = subprocess.run([str(tool), "--dump-resource-usage", str(path)], capture_output=True, text=True)
    return int(re.search(r"Function matmul_kernel:\s*REG:(\d+)", out.stdout).group(1))


def predicted(c: dict[str, int], shape: tuple[int, int, int]) -> float:
    """The predictor's time for one candidate: its wavefronts scored as ``search.rank`` scores them."""
    from autopad.predict import predict_arrays

    lay = G.layout(c)
    wave, ideal = score_candidates(KernelSpec(G), [c], [lay], "float32", None, get_arch("sm_90"))
    info = G.launch_info(c, shape)
    return float(predict_arrays([info], G.traffic(shape), wave, ideal, "sm_90", [lay])[0][0])
