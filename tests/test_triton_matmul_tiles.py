"""kernels/triton/matmul_tiles.py: the GEMM's tile arithmetic (wgmma's reads, the rows TMA and wgmma move
by swizzle width, the shared-memory bytes of each variant, the warp-specialized C buffers and register
cap, when TMA can describe the tensors), numpy only."""

from __future__ import annotations

import pytest

G = pytest.importorskip("autopad.kernels.triton.matmul")
from autopad.kernels.triton import matmul_tiles as MT  # noqa: E402

D = G.DEFAULTS


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


def test_shared_bytes_of_each_variant():
    """The plain kernel's C tile reuses the dead ring, the persistent one sits beside it, the tl.dot path
    is Triton's ring alone, and split-K's C tile holds fp32 partial sums."""
    ring = 3 * (128 + 256) * 64 * 2
    assert MT.smem_bytes(D, "bfloat16") == max(ring + 8 * 3, 128 * 256 * 2)
    assert MT.smem_bytes({**D, "PERSIST": 1}, "bfloat16") == ring + 8 * 3 + 128 * 256 * 2
    assert MT.smem_bytes({**D, "PATH": 1}, "bfloat16") == ring
    assert MT.c_bytes({**D, "SPLIT_K": 2}, "bfloat16") == 4 and MT.c_bytes(D, "bfloat16") == 2
    assert MT.epilogue_rows({**D, "PATH": 1}, "bfloat16") == 0  # tl.dot stores from registers


def test_register_cap_buffers_and_tma_alignment():
    ws = {**D, "PERSIST": 2}
    assert MT.ws_maxnreg(ws) == 168  # 8 consumers + 1 loader = 12 warps: 65536 / 384 = 170, in steps of 8
    assert MT.ws_maxnreg({**ws, "WARPS": 4}) == 256 and MT.c_bufs({**ws, "STAGES": 2}, "bfloat16") == 2
    assert MT.c_bufs(D, "bfloat16") == 1 and MT.c_bufs({**D, "PERSIST": 3}, "bfloat16") == 2
    assert MT.tma_ok((100, 8, 16), "bfloat16") and not MT.tma_ok((100, 8, 17), "bfloat16")
    assert MT.tma_ok((100, 4, 4), "tf32") and not MT.tma_ok((100, 3, 4), "tf32")
    assert MT._wgmma_warps(128, 8) == (8, 1) and MT._wgmma_warps(64, 8) == (4, 2)
    assert MT.b_kn("bfloat16") and not MT.b_kn("tf32")
