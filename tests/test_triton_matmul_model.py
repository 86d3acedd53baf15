"""The Gluon GEMM's model terms against what the H200 study measured (run 2: all 298 candidates of three
bf16 shapes, ``benchmarks/results/h200/quality``; the study is read, nothing runs on a GPU).

What the measurements show that the model did not see: the NVMMA swizzle width. At equal tiles, stages
and warps, SWIZZLE 32 ran a median 1.6-2.0x SWIZZLE 64 and SWIZZLE 64 1.16-1.26x SWIZZLE 128, where the
old term (wgmma's reads only, one wavefront per S-byte row) predicted 1.05x and 1.03x. TMA writes the
operand tiles an S-byte box row at a time as well, and wgmma reads B once per 64-row slab and A once per
warpgroup along N: ``matmul.tma_wgmma_rows`` counts all of those rows."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

G = pytest.importorskip("autopad.kernels.triton.matmul")

ROOT = Path(__file__).resolve().parent.parent
SHAPES = ("4096x4096x4096", "2048x2048x2048", "3000x1000x2000")


def test_wgmma_reads_b_per_64_row_slab_and_a_per_warpgroup_along_n():
    c = {**G.DEFAULTS, "BM": 128, "BN": 256, "BK": 64, "WARPS": 8}  # two warpgroups along M
    assert G.wgmma_read_bytes(c, "bfloat16") == 64 * 2 * (256 * 2 + 128)
    c = {**c, "BM": 64, "BN": 128, "WARPS": 8}  # BM 64: the second warpgroup splits N, both read all of A
    assert G.wgmma_read_bytes(c, "bfloat16") == 64 * 2 * (128 + 64 * 2)
    assert G.wgmma_read_bytes({**c, "WARPS": 4}, "bfloat16") == 64 * 2 * (128 + 64)


def test_rows_scale_with_the_swizzle_width():
    c = {**G.DEFAULTS, "BM": 64, "BN": 64, "BK": 64, "WARPS": 4}
    rows = {s: G.tma_wgmma_rows({**c, "SWIZZLE": s}, "bfloat16") for s in (32, 64, 128)}
    # a k-step: TMA writes 16 KB, wgmma reads 16 KB: 256 rows of 128 bytes, 512 of 64, 1024 of 32
    assert rows == {128: 256, 64: 512, 32: 1024}
    assert G.epilogue_rows({**c, "SWIZZLE": 32}, "bfloat16") == 64 * 64 * 2 // 32


@pytest.fixture(scope="module")
def study():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import model_only_report as mo
    from quality_report import load_rows

    rows = load_rows(mo.DIR / "run2_quality_rows.csv.gz")
    shapes = {
        key[3]: mo._features(*key, r, "run2")
        for key, r in rows.items()
        if key[:3] == ("matmul", "triton", "bfloat16")
    }
    assert set(shapes) == set(SHAPES)
    return mo, shapes


def _ratios(s, values):
    """Median over the candidates' (BM, BN, BK, STAGES, WARPS) of values at SWIZZLE 32 / 64 and 64 / 128."""
    by: dict[tuple, dict[int, float]] = {}
    for c, v in zip(s.consts, values):
        by.setdefault(tuple(c[k] for k in ("BM", "BN", "BK", "STAGES", "WARPS")), {})[c["SWIZZLE"]] = v
    r1 = [d[32] / d[64] for d in by.values() if 32 in d and 64 in d]
    r2 = [d[64] / d[128] for d in by.values() if 64 in d and 128 in d]
    return float(np.median(r1)), float(np.median(r2))


@pytest.mark.parametrize("shape", SHAPES)
def test_narrow_swizzles_cost_what_was_measured(study, shape):
    mo, shapes = study
    s = shapes[shape]
    m32, m64 = _ratios(s, s.ms)
    assert m32 > 1.5 and m64 > 1.15  # the measured effect (1.57-1.93 and 1.18-1.23)
    p32, p64 = _ratios(s, mo.predicted(s))
    # the model now charges a narrow swizzle (1.36-1.40x and 1.06x; the L2 stream, at the predictor's
    # effective 5 TB/s, still binds most tiles and hides part of it), never more than measured
    assert 1.25 < p32 <= m32 and 1.04 < p64 <= m64


@pytest.mark.parametrize("shape", SHAPES)
def test_model_ranks_the_study_and_keeps_its_pick(study, shape):
    mo, shapes = study
    s = shapes[shape]
    f = mo.figures(s, mo.predicted(s))
    # Spearman 0.60-0.63 before the swizzle rows, 0.80-0.86 with them; the pick stays within 1% of the best
    assert f["spearman"] > 0.79, f
    assert f["pick_over_best"] < 1.01, f
