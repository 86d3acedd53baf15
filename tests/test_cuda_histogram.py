"""CUDA histograms: legality, the model's view of the updates, nvcc compiles (CPU), exact counts (GPU)."""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from autopad.kernels.cuda import histogram as H

from autopad import cuda_runtime as rt
from autopad.access import score

needs_nvcc = pytest.mark.skipif(not shutil.which("nvcc"), reason="needs nvcc")
W = H.WEIGHTED


def test_equal_bins_are_one_update_per_warp_instruction():
    # +1 updates compile to ATOMS.POPC.INC, which serves each distinct address once (measured: equal data
    # bins as fast as uniform); the explicit aggregations do the same in software
    p = H.presets("int32")
    for name in ("unpadded", "agg_match", "agg_uniform", "agg_uniform_rep4"):
        s = score(H.smem_pattern(p[name], "int32", "equal"), H.layout(p[name]))
        assert s.wavefronts == s.ideal, name
    H.POPC_INC_AGGREGATES = False
    try:
        s = score(H.smem_pattern(p["unpadded"], "int32", "equal"), H.layout(p["unpadded"]))
        assert s.wavefronts == 32 * s.ideal  # lane by lane, atomics never broadcast
    finally:
        H.POPC_INC_AGGREGATES = True
    zipf = {k: score(H.smem_pattern(c, "int32", "zipf"), H.layout(c)).wavefronts for k, c in p.items()}
    assert zipf["agg_match"] == zipf["unpadded"]


def test_weighted_float_sums_serialise_on_equal_bins_unless_aggregated():
    p = H.w_presets()
    plain = score(W.smem_pattern(p["soa"], "int32", "equal"), W.layout(p["soa"]))
    agg = score(W.smem_pattern(p["soa_agg"], "int32", "equal"), W.layout(p["soa_agg"]))
    assert agg.wavefronts == agg.ideal and plain.wavefronts > 10 * plain.ideal


def test_pattern_size_and_replicas():
    c = H.presets("uint8")["agg_uniform_rep4"]
    pat = H.smem_pattern(c, "uint8")
    assert len(pat) == (c["THREADS"] // 32) * c["ITEMS"] * 16
    assert {int(r) for ins in pat for r in ins.rows if r >= 0} == {0, 1, 2, 3}
    words = set()
    for ins in H.setup_pattern(c):
        if ins.op == "store":
            words.update((H.layout(c).offsets(ins.rows, ins.cols)[ins.rows >= 0] // 4).tolist())
    assert words == set(range(H.layout(c).footprint // 4))


def test_weighted_aos_conflicts_more_than_soa():
    p = H.w_presets()
    aos = score(W.smem_pattern(p["aos"]), W.layout(p["aos"])).wavefronts
    soa = score(W.smem_pattern(p["soa"]), W.layout(p["soa"])).wavefronts
    assert soa < aos  # 8-byte records put bins b and b + 16 in one bank
    d = W.defines(p["soa"])
    assert d["W_AOS"] == 0 and d["W_BASE1"] == 1024


def test_legal_rejects_bad_candidates():
    ok = dict(H.DEFAULTS)
    assert H.legal(ok, (1000, 256), "int32")
    assert not H.legal(dict(ok, BINS_PER_PASS=65536), (1000, 256), "int32")  # wasteful and too big
    assert not H.legal(dict(ok, BINS_PER_PASS=65536), (1000, 65536), "int32")  # 256 KB > 227 KB
    assert not H.legal(ok, (1000, 1024), "uint8")
    assert not H.legal(dict(ok, REPLICAS=16), (1000, 256), "int32")  # 8 warps
    assert not H.legal(dict(ok, THREADS=1024, BLOCKS_PER_SM=4), (1000, 256), "int32")
    assert not H.legal(dict(ok, INTERLEAVED=1), (1000, 256), "int32")
    assert H.legal(dict(ok, BINS_PER_PASS=256), (1000, 1000), "int32")  # four passes
    assert H.launch_info(dict(ok, BINS_PER_PASS=256), (1000, 1000), "int32")["passes"] == 4
    assert not W.legal(dict(W.DEFAULTS, AOS=0, PAD=4), (1000, 256))
    assert not W.legal(dict(W.DEFAULTS), (1000, 256), "uint8")


@needs_nvcc
def test_compiles_for_sm90(monkeypatch):
    monkeypatch.setenv("AUTOPAD_CUDA_COMPILER", "nvcc")
    src = H._SOURCE.read_text()
    jobs = [H.defines(c, dt) for dt in H.DTYPES for c in H.presets(dt).values()]
    jobs += [H.defines(c, "int32") for c in H.presets("int32", 65536).values()]
    jobs += [W.defines(c) for b in (256, 65536) for c in H.w_presets(b).values()]
    with ThreadPoolExecutor(8) as pool:
        cubins = list(pool.map(lambda d: rt.compile_cubin(src, d, "sm_90", "h"), jobs))
    assert all(b[:4] == b"\x7fELF" for b in cubins) and len(cubins) >= 20


# ---- GPU ------------------------------------------------------------------------------------------------
def _run(spec, c, shape, dtype, dist, seed):
    import torch

    assert spec.legal(c, shape, dtype), spec.legal(c, shape, dtype)
    inputs = spec.make_inputs(shape, dtype, "cuda", seed, dist)
    out = spec.alloc_output(inputs, c)
    out.fill_(-7)  # poison: run() must zero and fill every bin
    spec.run(spec.build(c, dtype), inputs, out)
    torch.cuda.synchronize()
    ok, msg = spec.check(out, spec.reference(inputs))
    assert ok, f"{c} {shape} {dtype} {dist}: {msg}"


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", H.DTYPES)
@pytest.mark.parametrize("dist", ["uniform", "zipf", "equal"])
def test_gpu_exact_counts(dtype, dist):
    for bins in (256, 37) if dtype == "uint8" else (256, 1000, 65536):
        for c in H.presets(dtype, bins).values():
            for n in (1, 31, 33, 1000, 4097 * 37):
                _run(H, c, (n, bins), dtype, dist, seed=n + bins)
    c = H.presets(dtype)["agg_uniform_rep4"]
    _run(H, c, (1 << 24, 256), dtype, dist, seed=3)


@pytest.mark.gpu
def test_gpu_multi_pass_and_out_of_range_values():
    import torch

    c = dict(H.presets("int32", 1000)["agg_match"], BINS_PER_PASS=256)
    _run(H, c, (100003, 1000), "int32", "uniform", 5)
    x = torch.tensor([-1, 0, 5, 999, 1000, 2**30, 5], dtype=torch.int32, device="cuda")
    marker = torch.empty((1000, 0), device="cuda", dtype=torch.int8)
    out = H.alloc_output((x, marker), c)
    H.run(H.build(c, "int32"), (x, marker), out)
    assert torch.equal(out.cpu(), H.reference((x, marker)).cpu())
    assert out.sum().item() == 4 and np.isfinite(out.cpu().numpy()).all()


@pytest.mark.gpu
@pytest.mark.parametrize("dist", ["uniform", "zipf", "equal"])
def test_gpu_weighted(dist):
    for bins in (256, 65536):
        for c in H.w_presets(bins).values():
            for n in (1, 33, 4097 * 37):
                _run(W, c, (n, bins), "int32", dist, seed=n)
