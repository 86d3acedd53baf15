"""CUDA fp32 GEMM: legality, the model's view of the operand tiles, nvcc compiles (CPU), accuracy (GPU)."""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest
from autopad.kernels.cuda import matmul as G

from autopad import cuda_runtime as rt
from autopad.access import score

needs_nvcc = pytest.mark.skipif(not shutil.which("nvcc"), reason="needs nvcc")
SHAPE = (4096, 4096, 4096)


def _store_a_degree(c: dict) -> int:
    s = score(G.smem_pattern(c), G.layout(c))
    return max(w // d for n, _, w, d in s.per_instruction if n.startswith("stA"))


def test_transposed_a_store_conflicts_unpadded_and_not_padded_or_swizzled():
    p = G.presets()
    assert _store_a_degree(p["unpadded"]) == 2  # thread pairs write k rows 4 apart: 4 * 128 words, one bank
    assert _store_a_degree(p["textbook"]) == 1
    assert _store_a_degree(p["swizzled"]) == 1
    for c in p.values():
        s = score(G.smem_pattern(c), G.layout(c))
        assert s.wavefronts >= s.ideal > 0


def test_operand_tiles_offsets_and_defines():
    c = G.presets()["textbook"]
    lay = G.layout(c)
    assert lay.footprint == 2 * (8 * 132 * 4 + 8 * 128 * 4)
    import numpy as np

    off = lay.offsets(np.array([0, 1, 8, 9, -1]), np.array([0, 0, 0, 4, 0]))
    assert off.tolist() == [0, 132 * 4, lay.a_bytes, lay.a_bytes + (128 + 4) * 4, -1]
    d = G.defines(c)
    assert d["PAD_A"] == 4 and d["PAD_B"] == 0 and d["SW_MAX_PHASE_A"] == 1 and d["BK"] == 8


def test_legal_rejects_bad_candidates():
    ok = dict(G.DEFAULTS)
    assert G.legal(ok, SHAPE)
    assert not G.legal(dict(ok, PAD_A=1), SHAPE)  # 16-byte fragment reads would be misaligned
    assert not G.legal(dict(ok, PAD_A=4, SW_VEC_A=4, SW_PER_PHASE_A=1, SW_MAX_PHASE_A=8), SHAPE)
    assert not G.legal(dict(ok, SW_VEC_A=1, SW_MAX_PHASE_A=8), SHAPE)
    assert not G.legal(dict(ok, BM=64, BN=64, TM=4, TN=4, BK=8), SHAPE)  # 128 A vectors for 256 threads
    assert G.legal(dict(ok, BM=64, BN=64, TM=8, TN=8), SHAPE)  # 64 threads, two A and B vectors each
    assert not G.legal(ok, (0, 5, 5))
    assert not G.legal(ok, SHAPE, "float16")


def test_launch_info_and_traffic():
    info = G.launch_info(G.DEFAULTS, (1000, 37, 5))
    assert info == {
        "blocks": 8,
        "threads": 256,
        "smem_bytes": G.layout(G.DEFAULTS).footprint,
        "tiles_per_block": 1,
    }
    assert G.traffic((2, 3, 4))["flops"] == 48


@needs_nvcc
def test_compiles_for_sm90(monkeypatch):
    monkeypatch.setenv("AUTOPAD_CUDA_COMPILER", "nvcc")
    extra = [
        dict(G.DEFAULTS, BM=64, BN=64, BK=16, TM=4, TN=4, PAD_B=4),
        dict(G.DEFAULTS, BM=128, BN=64, BK=16, TM=8, TN=4, SW_VEC_B=4, SW_PER_PHASE_B=2, SW_MAX_PHASE_B=4),
    ]
    cands = list(G.presets().values()) + [c for c in extra if G.legal(c, SHAPE)]
    assert len(cands) >= 7
    with ThreadPoolExecutor(8) as pool:
        cubins = list(pool.map(lambda c: rt.compile_cubin(G.source(), G.defines(c), "sm_90", "mm"), cands))
    assert all(b[:4] == b"\x7fELF" for b in cubins)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(1, 1, 1), (31, 33, 7), (33, 31, 65), (1000, 37, 129), (128, 128, 8),
                                   (257, 515, 1001), (1024, 1024, 1024)])  # fmt: skip
def test_gpu_matches_float64(shape):
    import torch

    for name, c in G.presets().items():
        inputs = G.make_inputs(shape, "float32", "cuda", seed=sum(shape))
        out = G.alloc_output(inputs, c)
        out.fill_(float("nan"))
        G.run(G.build(c), inputs, out)
        torch.cuda.synchronize()
        ok, msg = G.check(out, G.reference(inputs))
        assert ok, f"{name} {shape}: {msg}"
