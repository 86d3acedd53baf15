"""Weighted histogram (counts and float sums per bin, AoS vs SoA): the model's view, legality, the inputs and
outputs the ops layer relies on (CPU); exact counts and sums against torch on odd shapes (GPU)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from autopad.kernels.cuda import histogram as H
from autopad.kernels.cuda import histogram_launch as HL
from autopad.kernels.cuda import histogram_weighted as W
from cuda_fakes import fake_cuda_env

from autopad import cuda_runtime as rt
from autopad.access import score
from autopad.spec import KernelSpec

S = W.SPEC


def test_aos_conflicts_more_than_soa():
    p = W.presets()
    aos = score(S.smem_pattern(p["aos"]), S.layout(p["aos"])).wavefronts
    soa = score(S.smem_pattern(p["soa"]), S.layout(p["soa"])).wavefronts
    assert soa < aos  # 8-byte records put bins b and b + 16 in one bank
    d = S.defines(p["soa"])
    assert d["W_AOS"] == 0 and d["W_BASE1"] == 1024


def test_float_sums_serialise_on_equal_bins_unless_aggregated():
    p = W.presets()
    plain = score(S.smem_pattern(p["soa"], "int32", "single"), S.layout(p["soa"]))
    agg = score(S.smem_pattern(p["soa_agg"], "int32", "single"), S.layout(p["soa_agg"]))
    assert agg.wavefronts == agg.ideal and plain.wavefronts > 10 * plain.ideal


def test_lane_copies_put_each_lane_in_its_own_bank():
    """32 SoA copies: lane l's count and sum are record 32 b + l, bank l whatever the bin, so random and
    equal bins alike cost one wavefront an instruction as the bank model scores one (across warps the
    compare-and-swap still retries where every warp updates the same records, which it does not see: H200
    run 124, one value 0.58 of the read rate against uniform's 0.93); AoS's 8-byte records put lanes l and
    l + 16 in one bank, a 12-byte record (PAD 4) does not (3 l mod 32 is a permutation)."""
    p = W.presets()
    lanes = p["soa_lanes"]
    assert lanes["REPLICAS"] == 32 and S.defines(lanes)["W_REPLICAS"] == 32
    assert S.layout(lanes).count == 256 * 32
    for dist in ("uniform", "single", "zipf"):
        r = score(S.smem_pattern(lanes, "int32", dist), S.layout(lanes))
        assert r.wavefronts == r.ideal, dist
        one = score(S.smem_pattern(p["soa"], "int32", dist), S.layout(p["soa"]))
        assert one.wavefronts > one.ideal  # one copy: random bins collide in banks, equal ones serialise
    aos = dict(lanes, AOS=1)
    r = score(S.smem_pattern(aos, "int32", "uniform"), S.layout(aos))
    assert r.wavefronts == 2 * r.ideal
    r = score(S.smem_pattern(dict(aos, PAD=4), "int32", "uniform"), S.layout(dict(aos, PAD=4)))
    assert r.wavefronts == r.ideal
    # rows are records: bin * REPLICAS + lane % REPLICAS (AGG 2's uniform warp: lane 0, copy 0)
    four = dict(lanes, REPLICAS=4)
    inst = list(S.smem_pattern(four, "int32", "uniform"))[1]  # the sum's CAS: every lane
    bins = H.block_values("uniform", 256, four["THREADS"], four["ITEMS"], 4)[0]
    assert inst.rows.tolist() == (bins * 4 + np.arange(32) % 4).tolist()
    agg = dict(lanes, AGG=2)
    single = list(S.smem_pattern(agg, "int32", "single"))
    assert all((i.rows >= 0).sum() == 1 and i.rows[0] == 5 * 32 for i in single)


def test_lane_copies_only_where_they_fit():
    assert W.presets(256)["soa_lanes"]["REPLICAS"] == 32
    assert W.presets(1000)["soa_lanes"]["REPLICAS"] == 8  # 1,024 bins a pass x 8 copies x 8 bytes
    assert W.presets(4096)["soa_lanes"]["REPLICAS"] == 4  # one 1,024-thread block an SM: 128 KiB
    no_reps = {k: v for k, v in W.DEFAULTS.items() if k != "REPLICAS"}
    assert S.legal(no_reps, (1000, 256)) and S.defines(no_reps)["W_REPLICAS"] == 1  # one copy, as before
    assert "soa_lanes" not in W.presets(65536)
    big = dict(W.DEFAULTS, BINS_PER_PASS=4096, AOS=0, REPLICAS=32, BLOCKS_PER_SM=1)
    assert not S.legal(big, (1000, 4096))  # 4,096 x 32 records of 8 bytes: 1 MiB


def test_pattern_is_count_then_sum_for_every_value():
    c = W.presets()["aos"]
    pat = list(S.smem_pattern(c, "int32", "uniform"))
    assert len(pat) == 2 * (c["THREADS"] // 32) * c["ITEMS"] * 4
    fields = [set(i.cols[i.rows >= 0].tolist()) for i in pat]
    assert fields[0::2] == [{0}] * (len(pat) // 2) and fields[1::2] == [{1}] * (len(pat) // 2)
    # the sum's CAS loop serves every lane; the count's POPC.INC only the distinct bins
    assert all((s.rows >= 0).sum() >= (k.rows >= 0).sum() for k, s in zip(pat[0::2], pat[1::2]))


def test_legal():
    d = dict(S.DEFAULTS)
    assert S.legal(d, (1000, 256))
    assert not S.legal(dict(d, AOS=0, PAD=4), (1000, 256))
    assert not S.legal(d, (1000, 256), "uint8")
    assert not S.legal(dict(d, BINS_PER_PASS=65536), (1000, 256))
    assert not S.legal(dict(d, THREADS=1024, BLOCKS_PER_SM=4), (1000, 256))
    assert S.launch_info(d, (1000, 1000))["passes"] == 4
    spec = KernelSpec(W)
    spec.check_bench()
    assert spec.NAME == "histogram_weighted" and spec.DISTS == H.DISTS


def test_inputs_outputs_match_torch_bincount():
    torch = pytest.importorskip("torch")
    x = torch.tensor([0, 3, 3, 9, -1, 12], dtype=torch.int32)
    w = torch.tensor([0.5, 1.0, 2.0, 4.0, 8.0, 16.0])
    inp = W.inputs_from(x, 10, w)
    assert inp.shape == (6, 10) and inp[0] is x and inp[1] is w
    sums, counts = W.alloc_output(inp)
    keep = (x >= 0) & (x < 10)
    ref = torch.bincount(x[keep].long(), weights=w[keep], minlength=10)
    assert sums.dtype == ref.dtype == torch.float32 and counts.dtype == torch.int32
    e_sums, e_counts = W.expected(inp)
    assert torch.equal(e_sums, ref) and e_counts.tolist() == [1, 0, 0, 2, 0, 0, 0, 0, 0, 1]
    assert W.inputs_from(x, 10, w.double())[1].dtype == torch.float64  # the W_F64 build reads them
    with pytest.raises(ValueError, match="float32 or float64"):
        W.inputs_from(x, 10, w.half())
    ok, _ = S.check((e_sums, e_counts), (ref, e_counts))
    assert ok and not S.check((e_sums + 1, e_counts), (ref, e_counts))[0]


@pytest.fixture
def fake_cuda(monkeypatch):
    yield from fake_cuda_env(monkeypatch)


def test_the_launcher_reads_the_launch_helpers_where_they_are_defined(fake_cuda, monkeypatch):
    """histogram_launch.py defines launch_fn, _sm_count and _aligned: a patch there reaches the weighted
    launcher (cuda.core and torch's CUDA hooks faked, no GPU). The grid is 3 SMs x BLOCKS_PER_SM, both
    outputs are zeroed, each of the two passes (300 bins, 256 a pass) is one launch of that geometry."""
    cc, _, torch = fake_cuda
    made, aligned = [], []
    real = HL.launch_fn
    monkeypatch.setattr(HL, "launch_fn", lambda *a, **k: made.append(a) or real(*a, **k))
    monkeypatch.setattr(HL, "_sm_count", lambda: 3)
    monkeypatch.setattr(HL, "_aligned", lambda t: aligned.append(t) or t)
    c = dict(W.DEFAULTS)
    assert (c["BINS_PER_PASS"], c["BLOCKS_PER_SM"], c["THREADS"]) == (256, 4, 256)
    built = HL.Built(("whist",), c, "int32")
    x, w = torch.zeros(1000, dtype=torch.int32), torch.ones(1000)
    sums, counts = torch.full((300,), 5.0), torch.full((300,), 5, dtype=torch.int32)
    S.launcher(built, (1000, 300), "int32")((x, w), (sums, counts))
    smem = S.smem_bytes(c)
    assert made == [("whist", 12, 256, smem)] and cc.configs == [(12, 256, smem)]
    assert len(aligned) == 2 and aligned[0] is x and aligned[1] is w
    assert not sums.any() and not counts.any()
    ptrs = (counts.data_ptr(), sums.data_ptr(), x.data_ptr(), w.data_ptr())
    assert [args for *_, args in cc.launches] == [(*ptrs, 1000, lo, 300) for lo in (0, 256)]
    # float64 weights: the W_F64 build of the same constants, compiled on the first such call, kept
    compiled = []
    monkeypatch.setattr(rt, "load_kernel", lambda src, name, d: compiled.append(d) or "whist64")
    go = S.launcher(built, (1000, 300), "int32")
    w64 = w.double()
    go((x, w64), (sums, counts))
    go((x, w64), (sums, counts))
    assert len(compiled) == 1 and compiled[0] == dict(S.defines(c), W_F64=1)
    assert [m[0] for m in made[-1:]] == ["whist64"] and made[1][0] == "whist"
    go((x, w), (sums, counts))  # float32 again: the main build
    assert cc.launches[-1][-1][3] == w.data_ptr()


@pytest.mark.skipif(not shutil.which("nvcc"), reason="needs nvcc")
def test_compiles_for_sm90(monkeypatch):
    monkeypatch.setenv("AUTOPAD_CUDA_COMPILER", "nvcc")
    src = H._SOURCE.read_text()
    for b in (256, 65536):
        for c in W.presets(b).values():
            assert b"\x7fELF" in rt.compile_cubin(src, S.defines(c), "sm_90", "whist_kernel")
    c = W.presets(256)["soa_lanes"]
    assert b"\x7fELF" in rt.compile_cubin(src, dict(S.defines(c), W_F64=1), "sm_90", "whist_kernel")


@pytest.mark.gpu
@pytest.mark.parametrize("dist", H.DISTS)
def test_gpu_counts_and_sums(dist):
    import torch

    for bins in (256, 1000, 65536):
        for c in W.presets(bins).values():
            for n in (1, 33, 4097 * 37):
                inputs = S.make_inputs((n, bins), "int32", "cuda", n, dist)
                out = S.alloc_output(inputs, c)
                out[0].fill_(float("nan"))
                out[1].fill_(-7)
                S.run(S.build(c, "int32"), inputs, out)
                torch.cuda.synchronize()
                ok, msg = S.check(out, S.expected(inputs))
                assert ok, (c, n, bins, dist, msg)
    x = inputs[0]
    w = inputs[1]
    ref = torch.bincount(x.long(), weights=w, minlength=bins)
    assert np.allclose(out[0].cpu().numpy(), ref.cpu().numpy(), rtol=1e-4, atol=1e-3)


@pytest.mark.gpu
@pytest.mark.parametrize("dist", ("uniform", "skewed"))
def test_gpu_float64_weights_read_as_they_are(dist):
    """The W_F64 build: float64 weights (odd lengths, a tail past the 4-value vectors, a view 8 bytes into
    its storage, which the launcher copies to 16-byte alignment) summed as float32, against torch's float64
    bincount."""
    import torch

    for bins in (256, 1000):
        for c in W.presets(bins).values():
            built = S.build(c, "int32")
            for n in (1, 33, 4097 * 37):
                inputs = S.make_inputs((n, bins), "int32", "cuda", n, dist)
                x = inputs[0]
                w64 = (torch.rand(n + 1, dtype=torch.float64, device="cuda") * 3 - 1)[1:]  # 8 bytes in
                ins = S.inputs_from(x, bins, w64)
                out = S.alloc_output(ins, c)
                S.run(built, ins, out)
                torch.cuda.synchronize()
                ref = torch.bincount(x.long(), weights=w64, minlength=bins)
                assert torch.allclose(out[0].double(), ref, rtol=1e-4, atol=1e-3), (c, n, bins, dist)
                assert torch.equal(out[1].long(), torch.bincount(x.long(), minlength=bins)), (c, n, bins)
