"""Gluon GEMM: legality, epilogue model, sm_90 compile (wgmma, shared size), tl.dot baseline under the
interpreter, and (marked gpu) both against an fp64 reference."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from autopad.access import score

G = pytest.importorskip("autopad.kernels.triton.matmul")

TY = {"bfloat16": "bf16", "float16": "fp16", "tf32": "fp32"}


def test_legal():
    assert G.legal(G.DEFAULTS, (8192, 8192, 8192), "bfloat16")
    assert not G.legal({**G.DEFAULTS, "SWIZZLE": 0}, (8192, 8192, 8192), "bfloat16")
    assert not G.legal(G.DEFAULTS, (8192, 8191, 8192), "bfloat16")  # TMA stride alignment
    assert not G.legal({**G.DEFAULTS, "STAGES": 5, "BK": 128}, (8192, 8192, 8192), "bfloat16")  # smem


def test_epilogue_swizzle_beats_narrow_swizzle():
    wide = score(G.smem_pattern(G.DEFAULTS, "bfloat16"), G.layout(G.DEFAULTS, "bfloat16"))
    c32 = {**G.DEFAULTS, "SWIZZLE": 32}
    narrow = score(G.smem_pattern(c32, "bfloat16"), G.layout(c32, "bfloat16"))
    assert wide.conflicts == 0
    assert narrow.wavefronts >= wide.wavefronts


def _compile(c, dt):
    from autopad.gluon_model import compile_sm90

    lay = G.nvmma(c["SWIZZLE"], dt)
    t = TY[dt]
    sig = {
        "a_desc": f"tensordesc<{t}[{c['BM']}, {c['BK']}],{lay!r}>",
        "b_desc": f"tensordesc<{t}[{c['BN']}, {c['BK']}],{lay!r}>",
        "c_desc": f"tensordesc<{t}[{c['BM']}, {c['BN']}],{lay!r}>",
        "M": "i32",
        "N": "i32",
        "K": "i32",
    }
    return compile_sm90(
        G.matmul_gluon,
        sig,
        {"STAGES": c["STAGES"], "GROUP_M": c["GROUP_M"], "num_warps": c["WARPS"]},
        num_warps=c["WARPS"],
    )


@pytest.mark.parametrize(
    "dt,c",
    [
        ("bfloat16", G.DEFAULTS),
        ("bfloat16", {**G.DEFAULTS, "SWIZZLE": 64}),
        ("float16", {**G.DEFAULTS, "BN": 128, "STAGES": 4, "SWIZZLE": 32}),
        ("bfloat16", {**G.DEFAULTS, "BM": 64, "BN": 128, "WARPS": 4, "STAGES": 4}),
        ("tf32", {**G.DEFAULTS, "BN": 128, "BK": 32, "STAGES": 4}),
    ],
)
def test_gluon_gemm_compiles_for_sm90(dt, c):
    pytest.importorskip("triton")
    assert G.legal(c, (4096, 4096, 4096), dt)
    k = _compile(c, dt)
    ptx = k.asm["ptx"]
    assert re.search(r"wgmma\.mma_async", ptx)
    assert k.metadata.shared == G.smem_bytes(c, dt)


_INTERP = r"""
import os
os.environ["TRITON_INTERPRET"] = "1"
import torch
from autopad.kernels.triton import matmul as G
for (m, n, k) in [(1, 8, 16), (33, 40, 24), (17, 24, 40)]:
    a, b = G.make_inputs((m, n, k), "tf32", "cpu", seed=m)
    out = torch.full((m, n), float("nan"))
    G.run_tl((a, b), out, bm=16, bn=16, bk=16, warps=4)
    ok, why = G.check(out, G.reference((a, b)))
    assert ok, ((m, n, k), why)
print("OK")
"""


def test_tl_dot_baseline_under_interpreter():
    pytest.importorskip("triton")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    r = subprocess.run([sys.executable, "-c", _INTERP], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr[-3000:]


@pytest.mark.gpu
@pytest.mark.parametrize("dt", G.DTYPES)
def test_gluon_gemm_matches_fp64_on_gpu(dt):
    import torch

    cfgs = (
        [G.DEFAULTS, {**G.DEFAULTS, "SWIZZLE": 64}]
        if dt != "tf32"
        else [{**G.DEFAULTS, "BN": 128, "BK": 32, "STAGES": 4}]
    )
    for c in cfgs:
        built = G.build(c, dt)
        for i, shape in enumerate([(1, 8, 16), (33, 40, 24), (1000, 1032, 520), (257, 384, 4104)]):
            assert G.legal(c, shape, dt)
            for dist in ("uniform", "skewed"):
                x = G.make_inputs(shape, dt, "cuda", seed=7 + i, dist=dist)
                out = G.alloc_output(x).fill_(float("nan"))
                G.run(built, x, out)
                torch.cuda.synchronize()
                ok, why = G.check(out, G.reference(x))
                assert ok, (dt, c, shape, dist, why)
                out.fill_(float("nan"))
                G.run_tl(x, out, bm=64, bn=64, bk=32, stages=3, warps=4)
                ok, why = G.check(out, G.reference(x))
                assert ok, ("tl.dot", dt, shape, dist, why)
