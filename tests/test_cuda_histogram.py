"""CUDA histogram (kernels/cuda/histogram.py, the spec tying its split modules to histogram.cu): every name it
defined is still importable from it, histogram.cu's arithmetic in numpy, shapes and presets, nvcc compiles
(CPU); exact counts on odd shapes (GPU). The pattern, legality, cost and launch have test files of their
own (test_cuda_histogram_pattern, _space, _cost, _launch, _inputs)."""

from __future__ import annotations

import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from autopad.kernels.cuda import histogram as H
from batch_hooks import hooks_agree
from split_checks import assert_reexported

from autopad import cuda_runtime as rt
from autopad.kernels_registry import builtin_spec
from autopad.spec import KernelSpec

needs_nvcc = pytest.mark.skipif(not shutil.which("nvcc"), reason="needs nvcc")
S = H.SPEC


def test_every_name_histogram_defined_is_the_object_of_its_new_home():
    from autopad.kernels.cuda import (
        histogram_cost,
        histogram_inputs,
        histogram_launch,
        histogram_pattern,
        histogram_space,
    )

    homes = {
        histogram_inputs: "DISTS _DIST_ALIASES SORTED_RUN _MAX_DRAW canonical_dist _draw sample block_values "
        "draw_values",
        histogram_pattern: "POPC_INC_AGGREGATES first_lanes uniform_rows aggregate _frozen _iid_lanes _lanes "
        "Pattern _group _pattern",
        histogram_space: "ARCH _FOOTPRINT _fit_pass _broken_rule _KEYS _static _LAYOUT_READS _static_smem "
        "_rules_batch _legal_bins _replicated SPACE DEFAULTS LAYOUT_KEYS PATTERN_KEYS LAYOUT_READS "
        "RESTRICTIONS",
        histogram_cost: "SPILL_AT FLUSH_WARP_CYCLES FLUSH_BIN_CYCLES MATCH_ANY_CYCLES UNIFORM_TEST_CYCLES "
        "_AGG_CYCLES _scan_every _busiest_sm_tiles _flush_cycles",
        histogram_launch: "RED_SPLIT launch_fn Built _PROPS _props _sm90 _sm_count _aligned",
    }
    assert_reexported(H, homes)
    for name in ("SPACE", "DEFAULTS", "LAYOUT_KEYS", "PATTERN_KEYS", "LAYOUT_READS", "RESTRICTIONS"):
        assert getattr(H.HistogramCuda, name) is getattr(histogram_space, name), name
    # the module-level names are SPEC's, as before (legal, launcher, ... are its bound methods)
    assert H.legal == S.legal and H.launcher == S.launcher and H.smem_pattern == S.smem_pattern
    # the cache key: the kernels and the two modules that decide what is built and launched
    here = H._SOURCE.parent
    assert H.SOURCE_FILES == tuple(
        str(here / f) for f in ("histogram.cu", "common.cuh", "histogram.py", "histogram_launch.py")
    )


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
