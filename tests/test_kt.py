"""The Kernel Tuner-shaped entry point: the same arguments give a spec autopad can rank, build and check."""

from __future__ import annotations

import numpy as np
import pytest

import autopad
from autopad.access import block_tile
from autopad.kt import kernel_tuner_spec, tune_kernel

SOURCE = r"""
#include "autopad.cuh"
extern "C" __global__ void transpose(float* out, const float* in, int m, int n) {
    __shared__ float tile[AP_SMEM_ELEMS];
    int x = blockIdx.x * block_size_x + threadIdx.x, y = blockIdx.y * block_size_x + threadIdx.y;
    for (int j = 0; j < block_size_x; j += block_size_y)
        if (x < n && y + j < m) tile[AP_OFF(threadIdx.y + j, threadIdx.x)] = in[(y + j) * n + x];
    __syncthreads();
    x = blockIdx.y * block_size_x + threadIdx.x; y = blockIdx.x * block_size_x + threadIdx.y;
    for (int j = 0; j < block_size_x; j += block_size_y)
        if (x < m && y + j < n) out[(y + j) * m + x] = tile[AP_OFF(threadIdx.x, threadIdx.y + j)];
}
"""
M, N = 300, 500
PARAMS = {"block_size_x": [32], "block_size_y": [4, 8, 16], "PAD": [0, 1, 2]}


def _pattern(c, dtype):
    t, by = c["block_size_x"], c["block_size_y"]
    return block_tile(t, t, t, by, "store") + block_tile(t, t, t, by, "load", transposed=True)


def _spec(**kw):
    x = np.random.default_rng(0).standard_normal((M, N)).astype(np.float32)
    out = np.zeros((N, M), np.float32)
    args = [out, x, np.int32(M), np.int32(N)]
    kw.setdefault("answer", [x.T.copy(), None, None, None])
    kw.setdefault("restrictions", ["block_size_y <= block_size_x"])
    return kernel_tuner_spec(
        "transpose",
        SOURCE,
        (N, M),
        args,
        PARAMS,
        grid_div_x=["block_size_x"],
        grid_div_y=["block_size_x"],
        layout=autopad.tile("block_size_x", "block_size_x", pad="PAD"),
        pattern=_pattern,
        **kw,
    )


def test_grid_block_and_defines_follow_kernel_tuner_conventions():
    s = _spec()
    c = {"block_size_x": 32, "block_size_y": 8, "PAD": 1}
    assert s.block(c) == (32, 8, 1)  # z defaults to 1, as in Kernel Tuner
    assert s.grid(c, (N, M)) == (-(-N // 32), -(-M // 32))  # ceil(problem / grid_div) per axis
    d = s.defines(c, "float32")
    assert d["block_size_y"] == 8 and d["AP_PAD"] == 1 and d["AP_COLS"] == 32
    assert d["AP_SMEM_ELEMS"] == 32 * 33


def test_model_ranks_the_padded_tile_first_without_a_gpu(monkeypatch):
    monkeypatch.setenv("AUTOPAD_NO_BENCH", "1")
    x = np.zeros((M, N), np.float32)
    res = tune_kernel(
        "transpose",
        SOURCE,
        (N, M),
        [np.zeros((N, M), np.float32), x, np.int32(M), np.int32(N)],
        PARAMS,
        grid_div_x=["block_size_x"],
        grid_div_y=["block_size_x"],
        layout=autopad.tile("block_size_x", "block_size_x", pad="PAD"),
        pattern=_pattern,
        cache=False,
    )
    assert res.mode == "model-only"
    assert res.best.constants["PAD"] == 1  # a 32-float row: one word of padding spreads a column walk
    unpadded = [c for c in res.candidates if c.constants["PAD"] == 0]
    assert all(c.prediction.seconds > res.best.predicted for c in unpadded)


def test_restrictions_strings_and_callables_prune():
    s = _spec(restrictions=["block_size_y <= 8", lambda p: p["PAD"] != 2])
    from autopad.search import enumerate_candidates
    from autopad.spec import KernelSpec

    cands = enumerate_candidates(KernelSpec(s), (N, M), "float32")
    assert cands and all(c["block_size_y"] <= 8 and c["PAD"] != 2 for c in cands)


def test_answer_checks_outputs_and_none_marks_inputs():
    torch = pytest.importorskip("torch")
    s = _spec()
    ins = s.make_inputs((N, M), "float32", "cpu", seed=0)
    assert isinstance(ins[0], autopad.bases.Out) and ins[0].shape == (N, M)
    out = s.alloc_output(ins)
    ref = s.expected(ins)
    out.copy_(ref[0])
    assert s.check(out, ref)[0]
    out[3, 4] += 1.0
    ok, why = s.check(out, ref)
    assert not ok and "atol" in why
    assert isinstance(ins[2], np.integer) or isinstance(ins[2], int)
    assert torch.equal(ins[1], torch.from_numpy(np.asarray(ins[1])))


def test_without_an_answer_nothing_is_checked_and_it_says_so():
    s = _spec(answer=None)
    assert s.UNCHECKED
    ok, why = s.check((), ())
    assert ok and "not checked" in why


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="kernel_name"):
        kernel_tuner_spec("not a name", SOURCE, (N, M), [], PARAMS)
    with pytest.raises(ValueError, match="problem_size"):
        kernel_tuner_spec("transpose", SOURCE, "big", [], PARAMS)
    with pytest.raises(ValueError, match="tune_params"):
        kernel_tuner_spec("transpose", SOURCE, (N, M), [], {"PAD": [0.5]})
    with pytest.raises(ValueError, match="answer"):
        kernel_tuner_spec("transpose", SOURCE, (N, M), [1, 2], PARAMS, answer=[None])


def test_the_generated_source_compiles_for_sm90(tmp_path, monkeypatch):
    import shutil

    if not shutil.which("nvcc"):
        pytest.skip("needs nvcc")
    monkeypatch.setenv("AUTOPAD_CUDA_COMPILER", "nvcc")
    monkeypatch.setenv("AUTOPAD_CACHE_DIR", str(tmp_path))
    from autopad import cuda_runtime

    s = _spec()
    cubin = cuda_runtime.compile_cubin(
        s.source(), s.defines({"block_size_x": 32, "block_size_y": 8, "PAD": 1}, "float32"), "sm_90"
    )
    assert len(cubin) > 1000
