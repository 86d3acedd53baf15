"""CUDA histogram: the model's view of the updates (exactly the per-instruction pattern it replaced),
legality, the 16-bit counters' overflow arithmetic, nvcc compiles (CPU); exact counts on odd shapes (GPU)."""

from __future__ import annotations

import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from autopad.kernels.cuda import histogram as H
from batch_hooks import hooks_agree

from autopad import cuda_runtime as rt
from autopad.access import score
from autopad.expr import compile_expr
from autopad.kernels_registry import builtin_spec
from autopad.spec import DTYPE_BYTES, KernelSpec

needs_nvcc = pytest.mark.skipif(not shutil.which("nvcc"), reason="needs nvcc")
S = H.SPEC


def _old_pattern(c: dict, dtype: str, dist: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """The pattern as the previous spec built it: one warp instruction at a time, np.unique per warp."""
    dist = {"skewed": "zipf", "single": "equal"}.get(dist, dist)
    per, warps = 16 // DTYPE_BYTES[dtype], c["THREADS"] // 32
    size, bins = warps * 32 * c["ITEMS"] * per, c["BINS_PER_PASS"]
    rng = np.random.default_rng(0)
    if dist == "uniform":
        vals = rng.integers(0, bins, size)
    elif dist == "zipf":
        vals = (rng.zipf(1.5, size) - 1) % bins
    else:
        vals = np.full(size, min(5, bins - 1))
    vals = vals.reshape(warps, c["ITEMS"], per, 32)
    out = []
    for w in range(warps):
        for it in range(c["ITEMS"]):
            for q in range(per):
                b = vals[w, it, q]
                if c["AGG"] == 2 and (b == b[0]).all():
                    act = np.arange(32) == 0
                else:
                    act = np.zeros(32, dtype=bool)
                    act[np.unique(b, return_index=True)[1]] = True
                out.append((np.where(act, w % c["REPLICAS"], -1), np.where(act, b, 0)))
    return out


@pytest.mark.parametrize("dtype", H.DTYPES)
@pytest.mark.parametrize("dist", ["uniform", "skewed", "single"])
def test_vectorised_pattern_is_the_per_instruction_one(dtype, dist):
    base = dict(H.DEFAULTS)
    configs = [
        base,
        dict(base, AGG=1, ITEMS=1, THREADS=1024, BLOCKS_PER_SM=2),
        dict(base, AGG=2, REPLICAS=4, PAD=1, ITEMS=4),
        dict(base, REPLICAS=8, INTERLEAVED=1, PAD=2, THREADS=512),
        dict(base, BINS_PER_PASS=1024, AGG=2, REPLICAS=2) if dtype == "int32" else base,
    ]
    for c in configs:
        new = sorted((tuple(i.rows), tuple(i.cols)) for i in S.smem_pattern(c, dtype, dist))
        old = sorted((tuple(r), tuple(k)) for r, k in _old_pattern(c, dtype, dist))
        assert new == old, c
        lay = S.layout(c, dtype)
        a = score(S.smem_pattern(c, dtype, dist), lay)
        assert a.wavefronts >= a.ideal > 0


def test_equal_bins_are_one_update_per_warp_instruction():
    # +1 updates compile to ATOMS.POPC.INC, which serves each distinct address once (measured: equal data
    # bins as fast as uniform); the explicit aggregations do the same in software
    p = H.presets("int32")
    for name in ("unpadded", "agg_match", "agg_uniform", "agg_uniform_rep4"):
        s = score(S.smem_pattern(p[name], "int32", "single"), S.layout(p[name]))
        assert s.wavefronts == s.ideal, name
    H.POPC_INC_AGGREGATES = False
    try:
        s = score(S.smem_pattern(p["unpadded"], "int32", "single"), S.layout(p["unpadded"]))
        assert s.wavefronts == 32 * s.ideal  # lane by lane, atomics never broadcast
    finally:
        H.POPC_INC_AGGREGATES = True


@pytest.mark.parametrize("dist", H.DISTS)
def test_lane_replicas_are_one_wavefront_per_update_whatever_the_data(dist):
    c = H.presets("uint8")["lane_rep32"]
    pat = S.smem_pattern(c, "uint8", dist)
    s = score(pat, S.layout(c, "uint8"))
    assert s.wavefronts == s.ideal == len(pat)  # lane l always lands in bank l
    plain = H.presets("uint8")["unpadded"]
    if dist == "uniform":  # one shared copy: 32 random bins of 256 share banks, ~3 wavefronts per update
        p2 = S.smem_pattern(plain, "uint8", dist)
        assert score(p2, S.layout(plain)).wavefronts > 2.5 * len(p2)


@pytest.mark.parametrize("dtype", H.DTYPES)
def test_thread_bytes_are_a_conflict_free_load_and_store(dtype):
    c = H.presets(dtype)["thread_bytes"]
    pat = S.smem_pattern(c, dtype, "single")
    s = score(pat, S.layout(c, dtype))
    assert s.wavefronts == s.ideal == len(pat)  # word (b // 4) * THREADS + t: lane t in bank t % 32
    assert {i.op for i in pat} == {"load", "store"}
    assert S.smem_bytes(c, dtype) == 256 * c["THREADS"] + 4 * 256  # the bytes, then the block's totals


def test_thread_byte_flush_arithmetic():
    """histogram.cu's ap_flush8 in numpy: a row's bytes summed on two 16-bit lanes of a word per lane,
    then split into four counts and summed across the warp, equal the plain sums and never carry."""
    rng = np.random.default_rng(2)
    for threads in (256, 1024):
        b = rng.integers(0, 256, (threads, 4)).astype(np.uint64)  # byte k of thread t's word
        b[rng.random(threads) < 0.1] = 255
        words = b[:, 0] | b[:, 1] << 8 | b[:, 2] << 16 | b[:, 3] << 24
        lanes = []
        for lane in range(32):
            e = o = 0
            for t in range(lane, threads, 32):
                v = int(words[t])
                e += v & 0x00FF00FF
                o += (v >> 8) & 0x00FF00FF
            assert e < 2**32 and o < 2**32 and max(e & 0xFFFF, e >> 16, o & 0xFFFF, o >> 16) <= 255 * 32
            lanes.append([e & 0xFFFF, o & 0xFFFF, e >> 16, o >> 16])
        assert (np.sum(lanes, axis=0) == b.sum(axis=0)).all()


def test_sixteen_bit_counters_need_their_aggregations():
    p = H.presets("int32", 65536)
    lay = S.layout(p["c16"])
    assert lay.footprint == 65536 * 2

    def wf(name, dist):
        return score(S.smem_pattern(p[name], "int32", dist), lay).wavefronts

    assert wf("c16", "single") >= 30 * wf("c16_agg_uniform", "single")  # ATOMS.ADD: 32 lanes serialise
    assert wf("c16_runs", "sorted") < wf("c16", "sorted") / 2  # a run is one update
    assert wf("c16_split", "skewed") < 0.8 * wf("c16", "skewed")  # hot even bins by POPC.INC


def test_run_length_arithmetic_counts_every_value():
    """histogram.cu's AGG 3 in numpy: leaders, ballot, the lanes above, __ffs, the run length."""
    rng = np.random.default_rng(1)
    lane = np.arange(32, dtype=np.uint64)
    for _ in range(200):
        b = np.sort(rng.integers(-1, 5, 32)) if rng.random() < 0.5 else rng.integers(-1, 3, 32)
        prev = np.concatenate([[b[0]], b[:-1]])  # __shfl_up_sync(b, 1): lane 0 keeps its own
        lead = (lane == 0) | (b != prev)
        ballot = int(sum(1 << i for i in range(32) if lead[i]))
        counts = np.zeros(8, dtype=np.int64)
        for i in range(32):
            after = ballot & ((0xFFFFFFFE << i) & 0xFFFFFFFF)
            nxt = (after & -after).bit_length() - 1 if after else 32
            if lead[i] and b[i] >= 0:
                counts[b[i]] += nxt - i
        assert (counts == np.bincount(b[b >= 0], minlength=8)).all()


def test_sixteen_bit_counters_cannot_overflow_between_scans():
    for threads in H.SPACE["THREADS"]:
        for items in H.SPACE["ITEMS"]:
            per = 4
            c = {"THREADS": threads, "ITEMS": items}
            every = H._scan_every(c, per)
            assert every >= 1
            # after a scan every counter is < SPILL_AT; then `every` iterations and a tail of < PER values
            assert H.SPILL_AT - 1 + every * threads * items * per + per - 1 <= 65535


def test_restriction_strings_match_the_python_rules():
    names = sorted(H.SPACE)
    rng = np.random.default_rng(0)
    pts = [{n: int(rng.choice(H.SPACE[n])) for n in names} for _ in range(4000)]
    env = {n: np.array([p[n] for p in pts]) for n in names}
    env["E"] = 4
    vec = np.ones(len(pts), dtype=bool)
    for r in H.RESTRICTIONS:
        vec &= np.broadcast_to(compile_expr(r)(env), vec.shape)
    for p, v in zip(pts, vec):
        py = H._broken_rule(p) is None and S.smem_bytes(p) <= H.ARCH.smem_per_block
        py = py and (S.smem_bytes(p) + 1024) * p["BLOCKS_PER_SM"] <= H.ARCH.smem_per_sm
        assert py == bool(v), p


def test_legal_rejects_bad_candidates():
    ok = dict(H.DEFAULTS)
    assert S.legal(ok, (1000, 256), "int32")
    assert not S.legal(dict(ok, BINS_PER_PASS=65536), (1000, 256), "int32")  # wasteful and too big
    assert not S.legal(dict(ok, BINS_PER_PASS=65536), (1000, 65536), "int32")  # 256 KB > 227 KB
    assert not S.legal(ok, (1000, 1024), "uint8")
    assert not S.legal(dict(ok, REPLICAS=16), (1000, 256), "int32")  # 8 warps
    assert not S.legal(dict(ok, THREADS=1024, BLOCKS_PER_SM=4), (1000, 256), "int32")
    assert not S.legal(dict(ok, INTERLEAVED=1), (1000, 256), "int32")
    assert S.legal(dict(ok, BINS_PER_PASS=256), (1000, 1000), "int32")  # four passes
    assert S.launch_info(dict(ok, BINS_PER_PASS=256), (1000, 1000), "int32")["passes"] == 4
    c16 = H.presets("int32", 65536)["c16"]
    assert S.legal(c16, (1000, 65536), "int32") and S.legal(c16, (1000, 40000), "int32")
    assert not S.legal(c16, (1000, 70000), "int32")  # one pass only
    assert not S.legal(dict(c16, BLOCKS_PER_SM=2), (1000, 65536), "int32")  # 2 x 128 KB
    assert not S.legal(dict(c16, AGG=1), (1000, 65536), "int32")
    assert not S.legal(dict(ok, PRIV=1), (1000, 256), "int32")  # one replica is PRIV 0
    assert not S.legal(dict(ok, PRIV=2, THREADS=1024, BLOCKS_PER_SM=1), (1000, 256), "uint8")  # 257 KB
    assert not S.legal(dict(ok, PRIV=2, REPLICAS=2), (1000, 256), "uint8")
    assert not S.legal(dict(ok, AGG=3), (1000, 256), "int32")  # runs are the 16-bit counters'
    assert not S.legal(dict(ok, COUNTER=16), (1000, 256), "uint8")
    assert not S.legal(ok, (0, 256), "int32") and not S.legal(ok, (2**31, 256), "int32")


def test_tiles_per_block_are_the_busiest_sms_share_of_the_chunks():
    """The grid-stride loop deals chunk k to block k % grid and block b runs on SM b % 132, so the busiest
    SM runs ceil(chunks / 132) chunks among its BLOCKS_PER_SM blocks (H200 run 41, uint8 10000019 x 100:
    charging every block a second iteration made 4 blocks an SM look 1.6x their work, and 512 x 4 x 2 is
    the measured best there, 9.9 us)."""
    base = dict(H.DEFAULTS, THREADS=512, ITEMS=2, BLOCKS_PER_SM=4)
    n = 10000019  # 625,001 vectors of 16 uint8 values: 611 chunks of 512 x 2, 5 on the busiest SM
    assert S.launch_info(base, (n, 100), "uint8")["tiles_per_block"] == pytest.approx(5 / 4)
    one = dict(base, THREADS=1024, BLOCKS_PER_SM=1)  # 306 chunks of 2,048 vectors: 3 on the busiest SM
    assert S.launch_info(one, (n, 100), "uint8")["tiles_per_block"] == 3
    assert S.launch_info(base, (1000, 100), "uint8")["tiles_per_block"] == pytest.approx(1 / 4)  # one chunk
    # passes multiply it; a large input is within one chunk per SM of a block's own count
    four = S.launch_info(dict(base, BINS_PER_PASS=1024), (1 << 26, 4096), "int32")
    assert four["tiles_per_block"] == pytest.approx(4 * 125 / 4)  # 16,384 chunks: 125 on the busiest SM


def test_check_shape_and_inputs_from():
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match="n, bins"):
        S.check_shape((5,))
    with pytest.raises(ValueError, match="bins >= 1"):
        S.check_shape((5, 0))
    x = torch.zeros(7, dtype=torch.int32)
    inp = H.inputs_from(x, 300)
    assert inp.shape == (7, 300) and inp[0] is x and inp[2] == 300
    assert tuple(H.alloc_output(inp).shape) == (300,)


def test_registry_spec_and_presets():
    spec = builtin_spec("histogram", "cuda")
    assert isinstance(spec, KernelSpec) and spec.NAME == "histogram" and "sorted" in spec.DISTS
    assert set(spec.DEFAULTS) == set(spec.SPACE) and spec.legal(spec.DEFAULTS, (1 << 20, 256), "int32")
    assert set(H.presets("int32", 65536)) >= {"c16", "c16_runs", "c16_split", "c16_agg_uniform"}
    assert H.WEIGHTED.NAME == "histogram_weighted"  # moved to histogram_weighted.py; the old name works


def _compile_jobs() -> dict[str, dict]:
    """Every distinct build of the presets (blocks per SM only changes the launch)."""
    jobs: dict[str, dict] = {}
    for dt, bins in (("int32", 256), ("uint8", 256), ("int32", 65536)):
        for k, c in H.presets(dt, bins).items():
            d = S.defines(c, dt)
            if d not in jobs.values():
                jobs[f"{dt} {bins} {k}"] = d
    # the widest block iteration of each dtype (every kernel of the file is compiled: their static checks
    # must hold for every candidate's constants, not only their own kernel's)
    for dt in H.DTYPES:
        jobs[f"{dt} widest"] = S.defines(dict(H.DEFAULTS, THREADS=1024, ITEMS=4, BLOCKS_PER_SM=1), dt)
    return jobs


@needs_nvcc
def test_compiles_for_sm90(monkeypatch, tmp_path):
    monkeypatch.setenv("AUTOPAD_CUDA_COMPILER", "nvcc")
    src = H._SOURCE.read_text()
    jobs = _compile_jobs()
    with ThreadPoolExecutor(4) as pool:
        cubins = dict(pool.map(lambda j: (j[0], rt.compile_cubin(src, j[1], "sm_90", "h")), jobs.items()))
    assert len(cubins) >= 16 and all(b"\x7fELF" in b for b in cubins.values())
    tool = Path(__import__("triton").__file__).parent / "backends/nvidia/bin/cuobjdump"
    if not tool.exists():
        return
    path = tmp_path / "split.cubin"
    blob = cubins["int32 65536 c16_split"]
    path.write_bytes(blob[blob.index(b"\x7fELF") :])
    sass = subprocess.run([str(tool), "-sass", str(path)], capture_output=True, text=True).stdout
    body = sass.split("Function : hist16_kernel")[1].split("Function :")[0]
    # the even bins' +1 stays ATOMS.POPC.INC, the odd bins' +0x10000 is ATOMS.ADD (not merged into one)
    assert "ATOMS.POPC.INC" in body and "ATOMS.ADD" in body
    # programmatic dependent launch: the zeroing lets the pass launch at once (PREEXIT is
    # griddepcontrol.launch_dependents), the passes wait for it (ACQBULK: griddepcontrol.wait)
    funcs = {f.split()[0]: f for f in sass.split("Function : ")[1:]}
    assert "PREEXIT" in funcs["hist_zero"] and "ACQBULK" not in funcs["hist_zero"]
    assert "ACQBULK" not in funcs["hist16_reduce"]  # launched in plain stream order
    # each overlapped kernel waits before its first global atomic (REDG / ATOMG; ATOMS are shared memory)
    key8 = next(k for k, d in jobs.items() if d.get("PRIV") == 2)
    path8 = tmp_path / "priv2.cubin"
    blob8 = cubins[key8]
    path8.write_bytes(blob8[blob8.index(b"\x7fELF") :])
    sass8 = subprocess.run([str(tool), "-sass", str(path8)], capture_output=True, text=True).stdout
    funcs.update({f.split()[0]: f for f in sass8.split("Function : ")[1:]})
    for name in ("hist_kernel", "hist16_kernel", "hist8_kernel"):
        lines = funcs[name].splitlines()
        wait = next(i for i, ln in enumerate(lines) if "ACQBULK" in ln)
        first = next(i for i, ln in enumerate(lines) if "REDG" in ln or "ATOMG" in ln)
        assert wait < first, name


def test_launcher_zeroes_then_overlaps_each_pass_and_not_the_reduce(monkeypatch):
    """The order of the launches a call makes, and which carry the overlap attribute: hist_zero first
    (plain), every pass overlapping the kernel before it (it waits before adding to out), the 16-bit
    path's reduce in plain order (it reads the workspace the pass wrote)."""
    made, fired = {}, []

    def fake_launch_fn(kernel, grid, block, smem, overlap=False):
        made[kernel] = overlap
        return lambda args: fired.append((kernel, args[1] if kernel == "zero" else args[-2]))

    monkeypatch.setattr(H, "launch_fn", fake_launch_fn)
    monkeypatch.setattr(H, "_sm_count", lambda: 4)
    monkeypatch.setattr(H, "_sm90", lambda: True)
    monkeypatch.setattr(H, "_aligned", lambda x: x)
    c = dict(H.DEFAULTS, BINS_PER_PASS=1024)
    built = H.Built(("main", "zero"), c, "int32")
    S.launcher(built, (1000, 2500), "int32")(("x",), "out")
    assert made == {"zero": False, "main": True}
    assert [(k, int(a)) for k, a in fired] == [("zero", 2500), ("main", 0), ("main", 1024), ("main", 2048)]
    fired.clear()
    c16 = H.presets("int32", 65536)["c16"]
    built16 = H.Built(("main16", "reduce", "zero"), c16, "int32")
    monkeypatch.setattr(H.Built, "workspace", lambda self, dev, words: "ws")
    S.launcher(built16, (1000, 65536), "int32")((SimpleNamespace(device="cpu"),), "out")
    assert made["main16"] is True and made["reduce"] is False
    assert [k for k, _ in fired] == ["zero", "main16", "reduce"]
    monkeypatch.setattr(H, "_sm90", lambda: False)  # before sm_90 the wait is no wait: no overlap
    made.clear()
    S.launcher(H.Built(("main", "zero"), c, "int32"), (1000, 2500), "int32")
    assert made == {"zero": False, "main": False}


# ---- GPU ------------------------------------------------------------------------------------------------
def _run(spec, c, shape, dtype, dist, seed):
    import torch

    assert spec.legal(c, shape, dtype), spec.legal(c, shape, dtype)
    inputs = spec.make_inputs(shape, dtype, "cuda", seed, dist)
    out = spec.alloc_output(inputs, c)
    for o in out if isinstance(out, tuple) else (out,):
        o.fill_(-7)  # poison: run() must zero and fill every bin
    spec.run(spec.build(c, dtype), inputs, out)
    torch.cuda.synchronize()
    ok, msg = spec.check(out, spec.expected(inputs))
    assert ok, f"{c} {shape} {dtype} {dist}: {msg}"


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", H.DTYPES)
@pytest.mark.parametrize("dist", H.DISTS)
def test_gpu_exact_counts(dtype, dist):
    for bins in (256, 37) if dtype == "uint8" else (256, 1000, 40000, 65536):
        for c in H.presets(dtype, bins).values():
            for n in (1, 31, 33, 1000, 4097 * 37):
                _run(S, c, (n, bins), dtype, dist, seed=n + bins)
    c = H.presets(dtype)["lane_rep32"]
    _run(S, c, (1 << 24, 256), dtype, dist, seed=3)


@pytest.mark.gpu
@pytest.mark.parametrize("agg", [0, 2, 3, 4])
def test_gpu_sixteen_bit_counters_spill_before_they_overflow(agg):
    # 2^24 equal values on 132 blocks: ~127,000 per block on one bin, twice what 16 bits hold
    c = dict(H.presets("int32", 65536)["c16"], AGG=agg, ITEMS=4)
    for dist in ("single", "sorted", "skewed"):
        _run(S, c, ((1 << 24) + 3, 65536), "int32", dist, seed=agg)


@pytest.mark.gpu
def test_gpu_multi_pass_out_of_range_and_misaligned_values():
    import torch

    multi = dict(H.presets("int32", 1000)["agg_match"], BINS_PER_PASS=256)
    _run(S, multi, (100003, 1000), "int32", "uniform", 5)
    x = torch.tensor([-1, 0, 5, 999, 1000, 2**30, 5], dtype=torch.int32, device="cuda")
    for c in (multi, H.presets("int32", 1000)["unpadded"]):
        inp = H.inputs_from(x, 1000)
        out = H.alloc_output(inp).fill_(-3)
        H.run(H.build(c, "int32"), inp, out)
        assert torch.equal(out.cpu(), H.expected(inp)[0].cpu()) and out.sum().item() == 4
    big = torch.randint(0, 256, (4097 * 33 + 1,), dtype=torch.int32, device="cuda")[1:]  # 4 bytes off 16
    for c in H.presets("int32", 256).values():
        inp = H.inputs_from(big, 256)
        out = H.alloc_output(inp).fill_(-3)
        fn = H.launcher(H.build(c, "int32"), inp.shape, "int32")
        fn(inp, out)
        fn(inp, out)  # the fast path again: zeroes first, same answer
        assert torch.equal(out.long(), torch.bincount(big.long(), minlength=256))


@pytest.mark.parametrize("dtype", H.DTYPES)
def test_batch_hooks_agree_with_legal_and_launch_info(dtype):
    shapes = [(1 << 24, 256), (1 << 24, 4096), (1000003, 100000), (1, 1), (5, 70000), (1 << 20, 200)]
    hooks_agree(builtin_spec("histogram", "cuda"), H, dtype, shapes)
