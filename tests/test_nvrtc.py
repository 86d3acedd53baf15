"""Every built-in CUDA kernel compiles with NVRTC, the compiler the GPU machine uses at run time.

nvcc and NVRTC differ (NVRTC's JIT mode treats an unannotated lambda as host code, for one), and a
candidate that only nvcc accepts fails every measurement on the GPU. cuda.core's NVRTC compiles for sm_90
without a GPU, so CI checks each spec's baseline, its textbook candidate, the model's best few and one
candidate for every value of every constant that is not the layout's (each code path of the template).
"""

from __future__ import annotations

import os

import pytest

from autopad.kernels_registry import builtin_spec
from autopad.search import baselines, launch_config, rank

try:  # NVRTC through cuda.core, as on the GPU machine (pip install cuda-core cuda-bindings nvidia-cuda-nvrtc)
    from autopad import cuda_runtime

    os.environ.setdefault("AUTOPAD_CUDA_COMPILER", "nvrtc")
    _HAVE = cuda_runtime._backend() == "nvrtc"
except Exception:  # no cuda.core / no libnvrtc
    _HAVE = False

pytestmark = pytest.mark.skipif(not _HAVE, reason="needs cuda-core with NVRTC (no GPU needed)")

CASES = [
    ("transpose", (4097, 8191), "float16", None),
    ("transpose", (8, 4096, 1024), "float32", None),
    ("histogram", (1 << 24, 256), "uint8", "uniform"),
    ("histogram", (1 << 24, 65536), "int32", "uniform"),
    ("matmul", (1000, 513, 777), "float32", None),
    ("matmul", (128, 8192, 8192), "float32", None),
]


def _sample(spec, shape, dtype, dist):
    ranked = rank(spec, shape, dtype, extra=baselines(spec, shape, dtype), dist=dist)
    keep = {c.key: c.params for c in ranked[:3]}
    keep.update({c.key: c.params for c in ranked if c.roles})
    layout_keys = set(getattr(spec, "LAYOUT_KEYS", ()))
    seen = set()
    for c in ranked:  # one candidate for every value of every launch constant: each code path
        for k, v in launch_config(spec, c):
            if k not in layout_keys and (k, v) not in seen:
                seen.add((k, v))
                keep.setdefault(c.key, c.params)
    return keep


@pytest.mark.parametrize("kernel,shape,dtype,dist", CASES)
def test_candidates_compile_with_nvrtc_for_sm90(kernel, shape, dtype, dist, tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOPAD_CACHE_DIR", str(tmp_path))
    # the spec's own build(), with loading onto a device replaced by the compile alone (no GPU here)
    compiled = []

    def load_kernel(source, name, defines, device=None):
        compiled.append(cuda_runtime.compile_cubin(source, defines, "sm_90", name))
        return name

    monkeypatch.setattr(cuda_runtime, "load_kernel", load_kernel)
    spec = builtin_spec(kernel, "cuda")
    failures = []
    for key, c in _sample(spec, shape, dtype, dist).items():
        try:
            spec.build(c, dtype)
        except cuda_runtime.CompileError as e:
            log = [ln for ln in str(e).splitlines() if "error" in ln]
            failures.append(f"{key}: {(log or [str(e)])[0][:300]}")
    assert compiled or failures
    assert not failures, "\n".join(failures[:5])
