"""Where the compiler schedules the SIMT GEMM's next k-step global loads, and what that costs (matmul.cu).

matmul.cu issues step k+1's global loads (16-byte LDGs into registers) at the top of step k, so their
latency hides under step k's FMAs; one barrier and the shared stores close the step. That is the source's
order, not the machine code's: ptxas (NVRTC 13.0, sm_90) keeps the loads ahead of the FMAs in some builds
and sinks them to the end of the step, just ahead of the shared stores that consume them, in others. A sunk
build waits out a global load's latency once per k-step, and only the other blocks an SM holds can fill it.
The source is the same for both; the compiled schedule is what differs (the same FFMA, LDS.128, STS and
LDG counts, the same registers within 4).

``LOADS_AHEAD_SM90`` is the compiler's schedule, read from the SASS (``cuobjdump -sass``) of the full-tile
main loop: the share of its FFMAs issued after the loop's first LDG (1: the loads ahead of every FMA, 0:
sunk behind all but the last two). 616 builds were read: all 19 tiles x both thread maps x both
MIN_BLOCKS, unpadded, PAD_A 4, PAD_B 4, A or B swizzled (4, 1, 8), both swizzled, and 210 of the 264
layouts of 128x128x8 8x8 with THREAD_MAP 1 (all 132 at MIN_BLOCKS 1). A pad sinks the loads in 144 of
the 180 padded builds (the other 36: PAD_A with B swizzled on 128x128x8 8x8, THREAD_MAP 1, where B's
swizzle keeps half of them ahead); unpadded and swizzled layouts keep them ahead by tile (the table; an
operand class that is not listed: sunk).
Keyed (BM, BN, BK, TM, TN, THREAD_MAP, MIN_BLOCKS, A, B) with A, B = 0 unpadded, 1 padded, 2 swizzled:
the median over the builds of that class (128x128x8 8x8 MIN_BLOCKS 2: 8 of its 9 A swizzles keep them
ahead, one sinks them).

Measured (H200 run 51, the median of each class's sunk builds over its hoisted ones, same tile, thread
map, cap and blocks an SM holds): one block an SM, 1.23-1.49 at 2048^3 (two rounds) and 1.08-1.37 at
1536x1000x2000; two, 1.05-1.13; three to five (64x64 tiles), 0.95-1.18. ``exposure`` charges it as a
loss of the arithmetic rate, 1 / (1 + (1 - ahead) x LOAD_LATENCY_CYCLES / (C x R^2)), C the cycles a
block's FMAs take per k-step on the SM's four schedulers and R the blocks an SM holds (the predictor's
count): a latency per step that the other resident blocks hide, fitted on those 49 pairs (RMS of log
ratio 0.07 at R^2 and 500 cycles; R^1.5 or R^3 fit no better).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from autopad.arch import get_arch

_ARCH = get_arch("sm_90")

# (BM, BN, BK, TM, TN, THREAD_MAP, MIN_BLOCKS, A class, B class) -> the share of the full-tile loop's FFMAs
# the next step's global loads are ahead of (0 unpadded, 1 padded, 2 swizzled); an absent class: 0 (sunk)
LOADS_AHEAD_SM90: dict[tuple[int, ...], float] = {
    (64, 64, 8, 4, 8, 0, 1, 2, 2): 1.0, (64, 64, 8, 4, 8, 0, 2, 2, 2): 1.0,
    (64, 64, 8, 4, 8, 1, 1, 0, 0): 1.0, (64, 64, 8, 4, 8, 1, 1, 0, 2): 0.81,
    (64, 64, 8, 4, 8, 1, 1, 2, 0): 1.0, (64, 64, 8, 4, 8, 1, 1, 2, 2): 0.9,
    (64, 64, 8, 4, 8, 1, 2, 0, 0): 1.0, (64, 64, 8, 4, 8, 1, 2, 0, 2): 0.81,
    (64, 64, 8, 4, 8, 1, 2, 2, 0): 1.0, (64, 64, 8, 4, 8, 1, 2, 2, 2): 0.9,
    (64, 64, 8, 8, 4, 0, 1, 0, 0): 1.0, (64, 64, 8, 8, 4, 0, 1, 0, 2): 1.0,
    (64, 64, 8, 8, 4, 0, 2, 0, 0): 1.0, (64, 64, 8, 8, 4, 0, 2, 0, 2): 1.0,
    (64, 64, 8, 8, 4, 1, 1, 0, 0): 1.0, (64, 64, 8, 8, 4, 1, 1, 0, 2): 0.93,
    (64, 64, 8, 8, 4, 1, 1, 2, 0): 1.0, (64, 64, 8, 8, 4, 1, 1, 2, 2): 0.91,
    (64, 64, 8, 8, 4, 1, 2, 0, 0): 1.0, (64, 64, 8, 8, 4, 1, 2, 0, 2): 0.93,
    (64, 64, 8, 8, 4, 1, 2, 2, 0): 1.0, (64, 64, 8, 8, 4, 1, 2, 2, 2): 0.91,
    (64, 64, 8, 8, 8, 0, 1, 2, 2): 1.0, (64, 64, 8, 8, 8, 0, 2, 2, 2): 1.0,
    (64, 64, 8, 8, 8, 1, 1, 2, 2): 1.0, (64, 64, 8, 8, 8, 1, 2, 2, 2): 1.0,
    (64, 64, 16, 4, 4, 0, 1, 0, 0): 1.0, (64, 64, 16, 4, 4, 0, 1, 2, 0): 1.0,
    (64, 64, 16, 4, 4, 0, 1, 2, 2): 1.0, (64, 64, 16, 4, 4, 0, 2, 0, 0): 1.0,
    (64, 64, 16, 4, 4, 0, 2, 2, 0): 1.0, (64, 64, 16, 4, 4, 0, 2, 2, 2): 1.0,
    (64, 64, 16, 4, 4, 1, 1, 0, 0): 1.0, (64, 64, 16, 4, 4, 1, 1, 0, 2): 1.0,
    (64, 64, 16, 4, 4, 1, 1, 2, 0): 1.0, (64, 64, 16, 4, 4, 1, 1, 2, 2): 0.91,
    (64, 64, 16, 4, 4, 1, 2, 0, 0): 1.0, (64, 64, 16, 4, 4, 1, 2, 0, 2): 1.0,
    (64, 64, 16, 4, 4, 1, 2, 2, 0): 1.0, (64, 64, 16, 4, 4, 1, 2, 2, 2): 0.91,
    (64, 64, 16, 4, 8, 0, 1, 2, 2): 1.0, (64, 64, 16, 4, 8, 0, 2, 2, 2): 1.0,
    (64, 64, 16, 4, 8, 1, 1, 0, 2): 1.0, (64, 64, 16, 4, 8, 1, 1, 2, 0): 1.0,
    (64, 64, 16, 4, 8, 1, 2, 0, 2): 1.0, (64, 64, 16, 4, 8, 1, 2, 2, 0): 1.0,
    (64, 64, 16, 8, 4, 0, 1, 0, 0): 1.0, (64, 64, 16, 8, 4, 0, 2, 0, 0): 1.0,
    (64, 64, 16, 8, 4, 1, 1, 0, 2): 1.0, (64, 64, 16, 8, 4, 1, 1, 2, 0): 1.0,
    (64, 64, 16, 8, 4, 1, 2, 0, 2): 1.0, (64, 64, 16, 8, 4, 1, 2, 2, 0): 1.0,
    (64, 64, 16, 8, 8, 0, 1, 0, 0): 1.0, (64, 64, 16, 8, 8, 0, 1, 0, 2): 1.0,
    (64, 64, 16, 8, 8, 0, 1, 2, 0): 1.0, (64, 64, 16, 8, 8, 0, 1, 2, 2): 1.0,
    (64, 64, 16, 8, 8, 0, 2, 0, 0): 1.0, (64, 64, 16, 8, 8, 0, 2, 0, 2): 1.0,
    (64, 64, 16, 8, 8, 0, 2, 2, 0): 1.0, (64, 64, 16, 8, 8, 0, 2, 2, 2): 1.0,
    (64, 64, 16, 8, 8, 1, 1, 0, 2): 1.0, (64, 64, 16, 8, 8, 1, 1, 2, 0): 1.0,
    (64, 64, 16, 8, 8, 1, 1, 2, 2): 1.0, (64, 64, 16, 8, 8, 1, 2, 0, 2): 1.0,
    (64, 64, 16, 8, 8, 1, 2, 2, 0): 1.0, (64, 64, 16, 8, 8, 1, 2, 2, 2): 1.0,
    (128, 64, 16, 8, 8, 0, 1, 2, 0): 1.0, (128, 64, 16, 8, 8, 0, 1, 2, 2): 1.0,
    (128, 64, 16, 8, 8, 0, 2, 2, 0): 1.0, (128, 64, 16, 8, 8, 0, 2, 2, 2): 1.0,
    (128, 64, 16, 8, 8, 1, 1, 2, 2): 1.0, (128, 64, 16, 8, 8, 1, 2, 2, 2): 1.0,
    (128, 128, 8, 8, 8, 1, 1, 0, 0): 1.0, (128, 128, 8, 8, 8, 1, 1, 0, 2): 0.53,
    (128, 128, 8, 8, 8, 1, 1, 1, 2): 0.53, (128, 128, 8, 8, 8, 1, 1, 2, 0): 1.0,
    (128, 128, 8, 8, 8, 1, 1, 2, 2): 1.0, (128, 128, 8, 8, 8, 1, 2, 0, 0): 1.0,
    (128, 128, 8, 8, 8, 1, 2, 0, 2): 0.53, (128, 128, 8, 8, 8, 1, 2, 1, 2): 0.53,
    (128, 128, 8, 8, 8, 1, 2, 2, 0): 1.0, (128, 128, 8, 8, 8, 1, 2, 2, 2): 1.0,
    (128, 128, 16, 4, 8, 0, 1, 0, 2): 0.94, (128, 128, 16, 4, 8, 0, 1, 2, 0): 1.0,
    (128, 128, 16, 4, 8, 0, 1, 2, 2): 0.94, (128, 128, 16, 4, 8, 0, 2, 0, 2): 0.32,
    (128, 128, 16, 4, 8, 0, 2, 2, 2): 0.38, (128, 128, 16, 4, 8, 1, 1, 0, 0): 1.0,
    (128, 128, 16, 4, 8, 1, 1, 0, 2): 1.0, (128, 128, 16, 4, 8, 1, 1, 2, 0): 1.0,
    (128, 128, 16, 4, 8, 1, 1, 2, 2): 0.94, (128, 128, 16, 4, 8, 1, 2, 0, 2): 0.31,
    (128, 128, 16, 4, 8, 1, 2, 2, 2): 0.42, (128, 128, 16, 8, 4, 0, 1, 0, 0): 1.0,
    (128, 128, 16, 8, 4, 0, 1, 2, 0): 1.0, (128, 128, 16, 8, 4, 0, 1, 2, 2): 1.0,
    (128, 128, 16, 8, 4, 1, 1, 0, 2): 1.0, (128, 128, 16, 8, 4, 1, 1, 2, 0): 1.0,
    (128, 128, 16, 8, 4, 1, 1, 2, 2): 0.92, (128, 128, 16, 8, 4, 1, 2, 0, 2): 0.23,
    (128, 128, 16, 8, 4, 1, 2, 2, 2): 0.39, (128, 128, 16, 8, 8, 0, 1, 0, 2): 1.0,
    (128, 128, 16, 8, 8, 0, 1, 2, 0): 1.0, (128, 128, 16, 8, 8, 0, 1, 2, 2): 1.0,
    (128, 128, 16, 8, 8, 0, 2, 2, 0): 1.0, (128, 128, 16, 8, 8, 0, 2, 2, 2): 1.0,
    (128, 128, 16, 8, 8, 1, 1, 0, 2): 1.0, (128, 128, 16, 8, 8, 1, 1, 2, 0): 1.0,
    (128, 128, 16, 8, 8, 1, 1, 2, 2): 1.0, (128, 128, 16, 8, 8, 1, 2, 0, 2): 1.0,
}  # fmt: skip
# The latency a sunk build waits out per k-step, in SM cycles, as the predictor's arithmetic stream sees it
# (fitted on H200 run 51's sunk/hoisted pairs, see the module docstring; runs 1, 2 and 20 are held out)
LOAD_LATENCY_CYCLES = 500.0
# Whether the spec charges it (matmul.py's launch_info and launch_info_batch). Off: the recorded studies of
# runs 1 and 2 measured the source before the FULL-tile main loop (commit 175ae14), whose builds keep the
# loads ahead in every layout (nvcc 13.0: 128x128x16 8x8 unpadded, PAD_A 4, PAD_B 4 all 1.0), and their
# sunk/hoisted classes measured the same (0.85-1.03); charged, run 2's 1024^3 model-only pick moves from
# 1.000 to 1.133 of its best. On, run 51's 2048^3 pick moves from 1.115 to 1.019 (simt_gemm_model_notes.md).
APPLY = False


# bits of each key in a candidate's code: BM, BN to 255, BK to 31, TM, TN to 15, THREAD_MAP 1, MIN_BLOCKS,
# the classes to 3 (37 bits in all; SPACE's values all fit, so two candidates share a code only if equal)
_BITS = (8, 8, 5, 4, 4, 1, 2, 2, 2)


def _cls(pad: Any, max_phase: Any) -> Any:
    """0 unpadded, 1 padded, 2 swizzled (scalars or arrays)."""
    return np.where(np.asarray(max_phase) > 1, 2, np.where(np.asarray(pad) > 0, 1, 0))


def loads_ahead(c: Any) -> Any:
    """``LOADS_AHEAD_SM90`` of a candidate (dict of scalars) or of columns (int arrays)."""
    keys = ("BM", "BN", "BK", "TM", "TN", "THREAD_MAP", "MIN_BLOCKS")
    a, b = _cls(c["PAD_A"], c["SW_MAX_PHASE_A"]), _cls(c["PAD_B"], c["SW_MAX_PHASE_B"])
    if np.ndim(c["BM"]) == 0:
        return LOADS_AHEAD_SM90.get((*(int(c[k]) for k in keys), int(a), int(b)), 0.0)
    # one int64 a candidate (_BITS per key), then the table once per distinct code: a few hundred lookups
    # for a space of ten thousand
    cols = [np.asarray(c[k], dtype=np.int64) for k in keys] + [a.astype(np.int64), b.astype(np.int64)]
    code = np.zeros(len(cols[0]), dtype=np.int64)
    for col, bits in zip(cols, _BITS, strict=True):
        code = (code << bits) | (col & ((1 << bits) - 1))
    uniq, at = np.unique(code, return_inverse=True)
    vals = np.array([_TABLE_BY_CODE.get(int(u), 0.0) for u in uniq])
    return vals[at.ravel()]


def _code(key: tuple[int, ...]) -> int:
    out = 0
    for v, bits in zip(key, _BITS, strict=True):
        out = (out << bits) | (v & ((1 << bits) - 1))
    return out


_TABLE_BY_CODE = {_code(k): v for k, v in LOADS_AHEAD_SM90.items()}


def resident_blocks(threads: Any, smem: Any, regs: Any, blocks: Any) -> Any:
    """Blocks an SM holds, as autopad.predict counts them: threads, shared memory (+1 KB a block), the
    register file in whole warp allocations, the block slots, and no more than the grid gives it."""
    a = _ARCH
    threads = np.asarray(threads, dtype=np.float64)
    per_sm = np.minimum(a.max_threads_per_sm // np.maximum(threads, 1), a.max_blocks_per_sm)
    per_sm = np.minimum(per_sm, a.smem_per_sm // (np.asarray(smem, dtype=np.float64) + 1024))
    per_warp = np.maximum(np.ceil(np.asarray(regs) * a.warp_size / a.reg_alloc_unit) * a.reg_alloc_unit, 1)
    by_regs = (a.regs_per_sm // per_warp) // np.maximum(threads // a.warp_size, 1)
    per_sm = np.minimum(per_sm, np.maximum(by_regs, 1))
    return np.maximum(1, np.minimum(per_sm, np.ceil(np.asarray(blocks) / a.sm_count)))


def runs_full_loop(bm: int, bn: int, bk: int, split: int, shape: tuple[int, ...]) -> bool:
    """Whether any block of the grid takes matmul.cu's unguarded loop (``mainloop<true>``): a whole BM x BN
    tile, rows of 16-byte vectors (K and N multiples of 4), and a K range of whole BK steps. The table is
    that loop's schedule: the guarded loop keeps its loads ahead in all 616 builds read, so a grid with no
    whole tile or no whole K range (1000^3 at BK 16: 1000 = 62.5 steps) is not charged."""
    m, n, k = shape
    if k % 4 or n % 4 or m < bm or n < bn:
        return False
    per = -(-k // split)
    per = -(-per // bk) * bk  # matmul.k_per_split: whole BK steps a split
    ranges = [min(k, (z + 1) * per) - z * per for z in range(split)]
    return any(r > 0 and r % bk == 0 for r in ranges)


def exposure(c: Any, threads: Any, smem: Any, regs: Any, blocks: Any) -> Any:
    """The share of the arithmetic rate a build keeps when its next-step loads are sunk (1 where they are
    ahead of every FMA): 1 / (1 + (1 - ahead) x LOAD_LATENCY_CYCLES / (C x R^2)), C = warps x TM x TN x BK / 4
    cycles of FMAs a block issues per k-step (one warp FFMA a cycle on each of the SM's 4 schedulers), R the
    blocks an SM holds. ``c["full"]`` (optional): whether the grid runs the unguarded loop
    (``runs_full_loop``). The spec multiplies its ``flops_efficiency`` by this where ``APPLY``."""
    behind = 1.0 - np.asarray(loads_ahead(c), dtype=np.float64)
    if "full" in c:  # where no block takes the unguarded loop (runs_full_loop), nothing waits
        behind = behind * np.asarray(c["full"], dtype=np.float64)
    cyc = np.asarray(threads) / 32 * c["TM"] * c["TN"] * c["BK"] / 4
    r = resident_blocks(threads, smem, regs, blocks)
    return 1.0 / (1.0 + behind * LOAD_LATENCY_CYCLES / (cyc * r**2))
