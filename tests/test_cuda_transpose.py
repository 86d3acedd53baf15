"""CUDA transpose: legality, the model's view of its pattern, nvcc compiles (CPU), and exactness (GPU)."""

from __future__ import annotations

import itertools
import random
import shutil
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from autopad.kernels.cuda import transpose as T

from autopad import cuda_runtime as rt
from autopad.access import score

needs_nvcc = pytest.mark.skipif(not shutil.which("nvcc"), reason="needs nvcc")


def _degree_of(name_prefix: str, c: dict, dtype: str) -> int:
    s = score(T.smem_pattern(c, dtype), T.layout(c, dtype))
    return max(w // d for n, _, w, d in s.per_instruction if n.startswith(name_prefix))


def test_unpadded_fp32_readout_is_32_way_and_textbook_is_conflict_free():
    assert _degree_of("ld", T.DEFAULTS, "float32") == 32
    tb = T.textbook((4096, 4096), "float32")
    assert tb is not None and tb["PAD"] == 1
    s = score(T.smem_pattern(tb, "float32"), T.layout(tb, "float32"))
    assert s.conflicts == 0


@pytest.mark.parametrize("dtype", T.DTYPES)
def test_swizzled_presets_beat_unpadded(dtype):
    p = T.presets(dtype)
    deg = {k: score(T.smem_pattern(c, dtype), T.layout(c, dtype)).degree for k, c in p.items()}
    assert deg["vec_swizzled"] <= 1.5
    assert deg["vec_swizzled"] < deg["vec_unpadded"]


def _space_sample(dtype: str, k: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    keys = list(T.SPACE)
    out, tries = [], 0
    while len(out) < k and tries < 200000:
        tries += 1
        c = {key: rng.choice(T.SPACE[key]) for key in keys}
        if rng.random() < 0.5:
            c.update(SW_VEC=1, SW_PER_PHASE=1, SW_MAX_PHASE=1)
        else:
            c["PAD"] = 0
        if T.legal(c, (1000, 1000), dtype):
            out.append(c)
    return out


@pytest.mark.parametrize("dtype", ["float32", "int8", "float64", "bfloat16"])
def test_pattern_touches_every_element_once(dtype):
    for c in list(T.presets(dtype).values()) + _space_sample(dtype, 5):
        stored, loaded = set(), []
        vec = c["VEC"]
        for ins in T.smem_pattern(c, dtype):
            pairs = list(zip(ins.rows.tolist(), ins.cols.tolist()))
            if ins.op == "store":
                for r, col in pairs:
                    stored.update((r, col + v) for v in range(vec))
            else:  # a READOUT=1 word load covers 4 / elem consecutive columns
                span = ins.access_bytes // T.DTYPE_BYTES[dtype]
                loaded.extend((r, col + g) for r, col in pairs for g in range(span))
        n = c["TILE_M"] * c["TILE_N"]
        assert len(stored) == n and len(loaded) == n and len(set(loaded)) == n


def test_register_readout_quarters_the_int8_wavefronts():
    p = T.presets("int8")
    rt_ = score(T.smem_pattern(p["rt_swizzled"], "int8"), T.layout(p["rt_swizzled"], "int8"))
    el = score(T.smem_pattern(p["vec_swizzled"], "int8"), T.layout(p["vec_swizzled"], "int8"))
    assert rt_.conflicts == 0 and rt_.wavefronts < el.wavefronts / 2
    assert not T.legal(dict(p["rt_swizzled"]), (64, 64), "float32")


def test_legal_rejects_bad_candidates():
    ok = dict(T.DEFAULTS)
    assert T.legal(ok, (64, 64), "float32")
    assert not T.legal(dict(ok, VEC=8), (64, 64), "float32")  # 32 bytes per access
    assert not T.legal(dict(T.DEFAULTS, VEC=4, THREADS=256, PAD=1), (64, 64), "float32")  # misaligned rows
    assert not T.legal(dict(ok, PAD=1, SW_VEC=4, SW_PER_PHASE=4, SW_MAX_PHASE=8), (64, 64), "float32")
    assert not T.legal(dict(ok, VEC=2, SW_VEC=1, SW_PER_PHASE=1, SW_MAX_PHASE=8), (64, 64), "float32")
    assert not T.legal(dict(ok, THREADS=96), (64, 64), "float32")
    assert not T.legal(dict(ok, TILE_M=128, TILE_N=128, VEC=1, THREADS=128), (64, 64), "float64")  # registers
    assert not T.legal(ok, (64, 64), "int64")
    assert not T.legal(ok, (0, 64), "float32")
    assert not T.legal({"TILE_M": 32}, (64, 64), "float32")


def test_launch_info_and_traffic():
    c = T.presets("float32")["vec_swizzled"]
    info = T.launch_info(c, (3, 1000, 37), "float32")
    assert info["threads"] == 256
    assert info["blocks"] == 1 * 32 * 3
    assert info["smem_bytes"] == c["TILE_M"] * c["TILE_N"] * 4
    assert T.traffic((3, 1000, 37), "float32")["bytes"] == 2 * 3 * 1000 * 37 * 4
    assert T.launch_info(T.DEFAULTS, (70000, 8, 8), "int8")["tiles_per_block"] == 2


@needs_nvcc
@pytest.mark.parametrize("dtype", T.DTYPES)
def test_every_dtype_compiles_for_sm90(dtype, monkeypatch):
    monkeypatch.setenv("AUTOPAD_CUDA_COMPILER", "nvcc")
    cands = list(T.presets(dtype).values()) + _space_sample(dtype, 3, seed=T.DTYPES.index(dtype))
    with ThreadPoolExecutor(8) as pool:
        cubins = list(
            pool.map(lambda c: rt.compile_cubin(T.source(), T.defines(c, dtype), "sm_90", "t"), cands)
        )
    assert all(b[:4] == b"\x7fELF" for b in cubins)


# ---- GPU ------------------------------------------------------------------------------------------------
SHAPES = [(1, 1), (1, 33), (31, 1), (31, 33), (33, 31), (1000, 37), (64, 128), (2, 65, 129), (5, 1, 7)]


def _run_check(name: str, c: dict, shape: tuple, dtype: str, seed: int) -> None:
    import torch

    assert T.legal(c, shape, dtype), T.legal(c, shape, dtype)
    inputs = T.make_inputs(shape, dtype, "cuda", seed)
    out = T.alloc_output(inputs, c)
    out.view(torch.uint8).fill_(0xA5)  # poison: every byte must be written
    T.run(T.build(c, dtype), inputs, out)
    torch.cuda.synchronize()
    ok, msg = T.check(out, T.reference(inputs))
    assert ok, f"{name} {dtype} {shape}: {msg}"


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", T.DTYPES)
def test_gpu_matches_torch_odd_shapes(dtype):
    for seed, (name, c) in enumerate(T.presets(dtype).items()):
        for shape in SHAPES:
            _run_check(name, c, shape, dtype, seed)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "int8", "float16", "float64"])
def test_gpu_large_odd_and_random_space(dtype):
    p = T.presets(dtype)
    for name in ("vec_swizzled", "textbook"):
        _run_check(name, p[name], (4097, 8191), dtype, 1)
    for i, c in enumerate(_space_sample(dtype, 4, seed=7)):
        for shape in itertools.islice(SHAPES, 3, None):
            _run_check(f"sample{i}", c, shape, dtype, 100 + i)


@pytest.mark.gpu
def test_gpu_batched_and_misaligned_view():
    import torch

    c = T.presets("float32")["vec_swizzled"]
    x = torch.randn(4, 200, 300, device="cuda")
    out = torch.full((4, 300, 200), float("nan"), device="cuda")
    T.run(T.build(c, "float32"), (x,), out)
    assert torch.equal(out, x.transpose(-1, -2))
    big = torch.randn(1 + 64 * 96, device="cuda")[1:].view(64, 96)  # 4-byte aligned only: scalar path
    out = torch.empty(96, 64, device="cuda")
    T.run(T.build(c, "float32"), (big,), out)
    assert torch.equal(out, big.t()) and np.isfinite(out.cpu().numpy()).all()


def test_check_is_bitwise_and_handles_size_one_dims():
    torch = pytest.importorskip("torch")
    for dtype in T.DTYPES:
        for shape in [(1, 1), (1, 33), (31, 1), (5, 1, 7)]:
            (x,) = T.make_inputs(shape, dtype, "cpu", 0)
            ref = T.reference((x,))  # a [.., N, 1] result keeps a stride != 1 on its size-1 dim
            assert T.check(ref.clone(), ref)[0]
            bad = ref.contiguous().clone()
            bad.flatten().view(torch.uint8)[0] ^= 1
            assert not T.check(bad, ref)[0]
