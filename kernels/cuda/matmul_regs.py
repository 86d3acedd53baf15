"""Registers per thread of the CUDA SIMT GEMM (matmul.cu) at sm_90, compiled: the tile's and a swizzle's.

Two tables the compiler gives, nothing fitted: ``REGS_SM90`` (each legal tile, unpadded, no register cap)
and ``REGS_SWIZZLE_SM90`` (what swizzling A or B adds to it). They set how many blocks an SM holds and,
under ``MIN_BLOCKS`` 2's launch bounds, how far the cap falls below the need (matmul_cost.py reads both:
``register_need``). Kept apart from the cost model so that a kernel change which moves the registers is
one table to re-read, and tests/test_cuda_matmul.py compiles the tiles and compares against these tables.
"""

from __future__ import annotations

# Registers per thread the kernel takes when its launch bounds leave them free (MIN_BLOCKS = 1), by
# (BM, BN, BK, TM, TN): every legal tile of SPACE, read with ``cuobjdump --dump-resource-usage`` from the
# sm_90 cubins nvrtc 13.0 builds of the unpadded layout (the same counts on the H200 machine and here;
# tests/test_cuda_matmul.py compiles every tile and compares; `benchmarks/matmul_registers.py` re-reads both
# tables: last from the source with the clamped whole-step loads, which moved 64x128x16 and 128x64x16 8x4
# from 105 and 103 to 96 and two 64x64x8 tiles up by 2). The layouts move them (64x64x16 8x8 takes 193
# unpadded and 225 with A swizzled; nvcc: 167 and 205-215): a swizzle's registers are REGS_SWIZZLE_SM90's,
# below. A tile not listed takes matmul_cost.py's ``_regs_estimate``.
REGS_SM90: dict[tuple[int, int, int, int, int], int] = {
    (64, 64, 8, 4, 8): 109, (64, 64, 8, 8, 4): 95, (64, 64, 8, 8, 8): 157,
    (64, 64, 16, 4, 4): 77, (64, 64, 16, 4, 8): 139, (64, 64, 16, 8, 4): 109,
    (64, 64, 16, 8, 8): 193, (64, 128, 8, 8, 8): 161, (64, 128, 16, 4, 8): 95,
    (64, 128, 16, 8, 4): 96, (64, 128, 16, 8, 8): 163, (128, 64, 8, 8, 8): 155,
    (128, 64, 16, 4, 8): 123, (128, 64, 16, 8, 4): 96, (128, 64, 16, 8, 8): 181,
    (128, 128, 8, 8, 8): 127, (128, 128, 16, 4, 8): 95, (128, 128, 16, 8, 4): 95,
    (128, 128, 16, 8, 8): 153,
}  # fmt: skip
# Registers a swizzle adds to the tile's need (REGS_SM90), by tile: (A swizzled, B swizzled), each the
# median over the 9 swizzles of that operand (SW_VEC 4, SW_PER_PHASE 1/2/4, SW_MAX_PHASE 2/4/8) with the
# other operand unpadded, read like REGS_SM90 (nvrtc 13.0, sm_90, no register cap, THREAD_MAP 0) from today's
# matmul.cu (the warp barrier's moved five tiles by 2-4 from the source of runs 1-2, and 128x64x8 8x8 from
# (16, 4) to (12, 0), which matters: A-swizzled at 167 registers it holds 3 blocks of 128 threads an SM, at
# 171 only 2; the clamped whole-step loads moved eight tiles' by 1-9, mostly where the tile's own count
# moved). A pad adds ~none (on the source before the clamp every pad compiled to the unpadded count but
# 128x128x16 8x8's, 151 of 153, and 64x64x8 4x8's, 109 of 107): a padded offset is row x (BM + PAD) + col,
# constants the unrolled k loop folds into each access, while the XOR term differs per row and per thread.
# With both operands swizzled the compiler lands near the larger of the two additions, not their sum (108
# pairs sampled on the 128x128 tiles, the older source; 128x128x8 8x8: 143-165 registers against 147-157
# for the larger single swizzle and 167-185 for the sum), so ``register_need`` (matmul_cost.py) takes the
# larger.
REGS_SWIZZLE_SM90: dict[tuple[int, int, int, int, int], tuple[int, int]] = {
    (64, 64, 8, 4, 8): (4, -2), (64, 64, 8, 8, 4): (8, 0), (64, 64, 8, 8, 8): (6, 0),
    (64, 64, 16, 4, 4): (2, -1), (64, 64, 16, 4, 8): (8, 0), (64, 64, 16, 8, 4): (42, 0),
    (64, 64, 16, 8, 8): (26, 4), (64, 128, 8, 8, 8): (2, 2), (64, 128, 16, 4, 8): (10, 22),
    (64, 128, 16, 8, 4): (15, 9), (64, 128, 16, 8, 8): (36, 20), (128, 64, 8, 8, 8): (12, 0),
    (128, 64, 16, 4, 8): (12, -2), (128, 64, 16, 8, 4): (17, 5), (128, 64, 16, 8, 8): (22, -13),
    (128, 128, 8, 8, 8): (28, 20), (128, 128, 16, 4, 8): (0, 14), (128, 128, 16, 8, 4): (8, 0),
    (128, 128, 16, 8, 8): (30, 14),
}  # fmt: skip
