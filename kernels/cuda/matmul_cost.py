"""What the CUDA SIMT GEMM costs beyond its shared-memory pattern: ``launch_info`` (one candidate) and
``launch_info_batch`` (columns of them), the grid and the terms the predictor adds, with the constants
they take from the compiler and from H200 runs.

The grid is one block per output tile and split; through L2, A is read once per column of tiles and B
once per row. Beyond the pattern: the registers a thread holds (``register_need``: the tile's count from
matmul_regs.py plus what a swizzle adds; ``register_cap``: what ``__launch_bounds__`` allows), which limit
the blocks an SM holds; what a cap below the need costs the arithmetic (``flops_efficiency``,
``REG_CAP_COST``, fitted on run 2); the swizzled address arithmetic, once per instruction
(``swizzle_accesses``); what else the k-loop issues besides its FFMAs, each an issue slot they need: its
compiled instructions counted per build (matmul_loop.py), or, for a build that table lacks, the warp
instructions a block issues to shared memory (``smem_instructions``); the checked k-loop on shapes off its
grid, issue slots too
(``loop_slots``, ``CHECKED_LOAD_SLOTS``); and split-K's workspace, written and read back once
(``dram_efficiency``).

Why a module of its own: this is the model's side of the spec, apart from what the tuner enumerates
(matmul_space.py) and from the build and launch (matmul.py); each term is one place to read with the
runs it comes from.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from autopad.spec import batched_info, per_distinct

from .matmul_loop import CONFIG_KEYS, LAYOUT_KEYS, loop_instructions, loop_instructions_batch
from .matmul_regs import REGS_SM90, REGS_SWIZZLE_SM90
from .matmul_tile import _ARCH, _threads, k_per_split

if TYPE_CHECKING:
    from .matmul import MatmulCuda

# What a register cap costs the inner loop: MIN_BLOCKS = 2 makes ``__launch_bounds__`` cap the registers at
# 65536 / (2 x threads). A build whose uncapped count (the need) is at most REG_CAP_SLACK over the cap
# mostly fits under it with few or no spills: compiled at sm_90 with the cap, 30 of the 38 capped builds
# within 0.2 of their need have no local-memory instruction, against 13 of the 112 beyond 0.3 (nvcc 13.0
# here; the tuner's NVRTC on the H100: 29 and 12; benchmarks/matmul_registers.py --spills,
# benchmarks/results/cpu/matmul_cap_spills_nvcc13.csv and h100/2026-12-05/run183). Not all: the unpadded
# 128x128x16 8x8 (0.195) spills 22-24 loads at THREAD_MAP 0 and, under NVRTC, 3 at THREAD_MAP 1; what
# carries the slack is time: that tile's capped build measured 1.032 of its twin where both run one block
# an SM (below), and 0.958 of it at 4096^3 on an H100, where the cap buys a second block (runs 181, 183).
# Beyond the slack (need / cap = 1 + REG_CAP_SLACK + x) the compiler spills and re-computes, and the
# arithmetic runs at 1 / (1 + REG_CAP_COST x) of its rate. Fitted on today's kernel where both twins of a
# capped tile run one block per SM and differ in the cap alone (H200 run 55's 1536x1000x2000, 96 blocks,
# SPLIT_K 1): the best MIN_BLOCKS 2 over the best MIN_BLOCKS 1 of the two 512-thread 128x128 tiles, 1.195
# and 1.229 at x = 0.284 (0.68 and 0.81 per unit); 128x128x16 8x8, within the slack, 1.032. Until
# 2026-12-05 every register over the cap was charged at 0.50 (run 2's older builds), which put the capped
# 128x128x16 8x8 5.5% behind its twin at 4096^3.
REG_CAP_COST = 0.75
REG_CAP_SLACK = 0.2
REGS_PER_SM = _ARCH.regs_per_sm  # the register file that __launch_bounds__ divides

# What the checked k-loop costs: matmul.cu runs one of two k-loops for the whole grid. Where K is a multiple
# of BK and K and N of 4 (``full``, ``checked_loop`` False) no global load tests its bounds; otherwise every
# 16-byte load of every k-step tests its row and k range first and branches (``load_global<false>``). Timed
# on every launch configuration at K 1000 and 1008 (M = N = 2048; a BK 16 build runs the same 63 k-steps
# checked and unchecked, a BK 8 build unchecked at both: the control; H100 run 219,
# benchmarks/profile_simt_checked.py), the checked loop cost the BK 16 builds a median 5.7% (1.016-1.307),
# and what it costs grows with the thread tile: 1.02-1.06 at 4x4, 1.02-1.09 at 4x8 and 8x4, 1.05-1.31 at
# 8x8 (a charge by the warp loads alone would put most on the small thread tiles, which issue the most
# loads an FFMA). So each warp 16-byte load of a k-step is charged CHECKED_LOAD_SLOTS issue slots at an
# 8x8 thread tile, TM x TN / 64 of that at others (``loop_slots``), taken from the FFMAs as the shared
# accesses' are (``smem_instructions``). The value is the profile's: the one whose BK 16 builds' median log
# error equals the BK 8 builds' (rms 0.043 over the 52, against 0.052 for slots by the loads alone). What
# showed it: at K 1000 (1000^3 and 3072x3072x1000, H100 and H200 samples) the BK 16 builds read 0.06 in
# log slower against the BK 8 builds than the model put them, where on the other twenty SIMT GEMM shapes
# they read 0.03 faster (NOTES, forty-second session).
CHECKED_LOAD_SLOTS = 20.0
# Not charged: where K or N is off the 4-element grid the checked loop loads that operand as four 4-byte
# loads a vector (``vec_a`` / ``vec_b`` false). Timed on every launch configuration at 2048x2044x1004
# against K 1003 and N 2045 (H100 run 222, benchmarks/profile_simt_scalar.py) it cost a median 3.2% (A)
# and 4.3% (B), 0.82-1.13 by build, growing with the threads a block runs (64: 0.96-1.02, 512: 1.05-1.08),
# not with its loads per FFMA. Charged as issue slots (on top of the checked charge, scaled by the thread
# tile, or in place of it: 33 slots a warp load, the profile's value) it lowered the rank correlation on
# all six studies with an operand off the grid (3001x2047x1536 on both cards and round 14's four: by
# 0.008-0.020 in place of the checked charge, 0.003-0.033 on top of it) and moved no pick: a build's own
# share of a cost every build pays, which issue slots do not place (NOTES, forty-third session).


def _regs_estimate(bm: int, bn: int, bk: int, tm: int, tn: int) -> int:
    """Registers a tile needs without a cap: ``REGS_SM90``, else a least-squares fit to it (accumulators,
    fragments, the prefetched vectors of the next k-step, ~30 for addresses and loop state)."""
    got = REGS_SM90.get((bm, bn, bk, tm, tn))
    if got is not None:
        return got
    t = (bn // tn) * (bm // tm)
    vectors = (bm * bk // 4 + bn * bk // 4) // max(t, 1)
    return round(30 + tm * tn + 1.5 * (tm + tn) + 2.4 * 4 * vectors)


def register_need(c: Any) -> Any:
    """Registers a candidate's thread needs without a cap, its layout included: the tile's
    (``_regs_estimate``) plus what a swizzle adds (``REGS_SWIZZLE_SM90``; the larger operand's where both
    are swizzled; a tile not listed adds none). Scalars (a candidate's dict) or int arrays (columns)."""
    keys = ("BM", "BN", "BK", "TM", "TN")
    if np.ndim(c["BM"]) == 0:
        t = tuple(int(c[k]) for k in keys)
        da, db = REGS_SWIZZLE_SM90.get(t, (0, 0))
        return _regs_estimate(*t) + max(0, da * (c["SW_MAX_PHASE_A"] > 1), db * (c["SW_MAX_PHASE_B"] > 1))
    cols = {k: np.asarray(c[k], dtype=np.int64) for k in (*keys, "SW_MAX_PHASE_A", "SW_MAX_PHASE_B")}
    rows, at = per_distinct(cols, keys)
    base = np.array([_regs_estimate(*(r[k] for k in keys)) for r in rows], dtype=np.int64)[at]
    extra = np.array([REGS_SWIZZLE_SM90.get(tuple(r[k] for k in keys), (0, 0)) for r in rows])
    extra = extra.reshape(-1, 2)[at]
    sw_a, sw_b = cols["SW_MAX_PHASE_A"] > 1, cols["SW_MAX_PHASE_B"] > 1
    return base + np.maximum(0, np.maximum(extra[:, 0] * sw_a, extra[:, 1] * sw_b))


def register_cap(c: dict[str, int]) -> int:
    """The registers per thread ``__launch_bounds__(THREADS, MIN_BLOCKS)`` allows (8s, <= 255)."""
    return min(255, REGS_PER_SM // (c.get("MIN_BLOCKS", 1) * _threads(c)[2]) // 8 * 8)


def flops_efficiency(c: dict[str, int]) -> float:
    """The share of the fp32 rate the inner loop keeps under its register cap (1 where the tile and its
    layout fit: ``register_need``)."""
    return float(cap_efficiency(register_need(c) / register_cap(c) - 1.0))


def cap_efficiency(over: Any) -> Any:
    """1 / (1 + REG_CAP_COST x) for x = ``over`` less REG_CAP_SLACK where positive, else 1 (scalars or
    arrays): the arithmetic's share of its rate under a register cap ``over`` below the need."""
    x = np.maximum(np.asarray(over, dtype=np.float64) - REG_CAP_SLACK, 0.0)
    return 1.0 / (1.0 + REG_CAP_COST * x)


def swizzle_accesses(c: Any) -> Any:
    """Warp instructions per block per k-step that compute a swizzled shared address: As's 4 single-word
    stores per A vector and TM/4 fragment loads per k where A is swizzled, Bs's vector stores and TN/4
    fragment loads per k where B is (``smem_pattern``'s instructions). The XOR is a thread's arithmetic,
    once per instruction: a 16-byte fragment load spans 4 phases but computes one address, so the
    predictor's per-phase charge over-counted a swizzle 2.6x on this kernel (its ``swizzle_accesses``).
    Scalars (a candidate's dict) or int arrays (columns of candidates)."""
    t = (c["BN"] // c["TN"]) * (c["BM"] // c["TM"])
    warps, bk = t // 32, c["BK"]
    a = warps * (4 * (c["BM"] * bk // 4 // t) + bk * (c["TM"] // 4))
    b = warps * ((c["BN"] * bk // 4) // t + bk * (c["TN"] // 4))
    return a * (c["SW_MAX_PHASE_A"] > 1) + b * (c["SW_MAX_PHASE_B"] > 1)


def smem_instructions(c: Any) -> Any:
    """Warp instructions per block per k-step that access shared memory (``smem_pattern``'s, counted):
    As's 4 single-word stores per A vector (BM BK / 32 in all), Bs's 16-byte stores (BN BK / 128) and the
    fragment loads, TM / 4 + TN / 4 per k a warp. The predictor charges them issue slots at the FFMA rate
    (``Constants.smem_issue`` each, what the k-loop issues for each: H100 run 171's ncu counts), since the
    warps that issue them issue the FFMAs too; ``launch_info`` states them only for a build the compiled
    k-loop table (matmul_loop.py) lacks. Scalars (a candidate's dict) or int arrays (columns)."""
    warps = (c["BN"] // c["TN"]) * (c["BM"] // c["TM"]) // 32
    bk = c["BK"]
    return c["BM"] * bk // 32 + c["BN"] * bk // 128 + warps * bk * (c["TM"] // 4 + c["TN"] // 4)


def checked_loop(c: Any, shape: tuple[int, ...]) -> Any:
    """Whether matmul.cu runs the checked k-loop on ``shape`` (the kernel's ``full`` negated): K not a
    multiple of BK, or K or N not of 4 (each block's K range, ``k_per_split``, is whole BK steps whatever
    SPLIT_K). Scalars (a candidate's dict) or int arrays (columns)."""
    _, n, k = shape
    return (k % c["BK"] != 0) | (k % 4 != 0) | (n % 4 != 0)


def loop_slots(c: Any, shape: tuple[int, ...]) -> Any:
    """Issue slots per block per k-step the checked k-loop takes from the FFMAs: ``CHECKED_LOAD_SLOTS`` per
    warp 16-byte load (BM BK / 4 vectors of A and BK BN / 4 of B a k-step, 32 a warp instruction) at an 8x8
    thread tile, TM TN / 64 of that at others; 0 where the unchecked loop runs. Scalars or int arrays."""
    loads = (c["BM"] * c["BK"] + c["BK"] * c["BN"]) // 4 / 32
    return CHECKED_LOAD_SLOTS * loads * (c["TM"] * c["TN"] / 64) * checked_loop(c, shape)


_SWIZZLE_READS = ("BM", "BN", "BK", "TM", "TN", "SW_MAX_PHASE_A", "SW_MAX_PHASE_B")


def launch_info(
    spec: MatmulCuda, constants: dict[str, int], shape: tuple[int, ...], dtype: str = "float32"
) -> dict:
    """The grid, the traffic through L2 and the predictor's extra terms of one candidate (see above)."""
    c = constants
    m, n, k = shape
    s = c.get("SPLIT_K", 1)
    info = {
        "blocks": math.ceil(m / c["BM"]) * math.ceil(n / c["BN"]) * s,
        "threads": _threads(c)[2],
        "smem_bytes": spec.layout(c).footprint,
        "tiles_per_block": math.ceil(k_per_split(c, k) / c["BK"]) if s > 1 else math.ceil(k / c["BK"]),
        # through L2: A once per column of tiles, B once per row of tiles, C written once
        "l2_bytes": 4 * (m * k * math.ceil(n / c["BN"]) + k * n * math.ceil(m / c["BM"]) + m * n),
    }
    # the registers each thread holds (its need, the layout's swizzle included, or the cap below it): they
    # limit the blocks an SM holds
    info["regs_per_thread"] = min(register_cap(c), register_need(c))
    info["swizzle_accesses"] = int(swizzle_accesses(c))
    # what the k-loop issues besides its FFMAs, each an issue slot: the compiled count where the table has
    # the build (matmul_loop.py; the shared accesses are among them), else the shared instructions, which
    # the predictor charges ``Constants.smem_issue`` slots each
    slots = float(loop_slots(c, shape))
    counted = loop_instructions(c)
    if counted is None:
        info["smem_instructions"] = int(smem_instructions(c))
    else:
        slots += counted * info["threads"] // 32
    if slots:
        info["loop_slots"] = slots
    # launch bounds that cap the registers below the tile's need (REG_CAP_COST)
    eff = flops_efficiency(c)
    if eff < 1.0:
        info["flops_efficiency"] = eff
    if s > 1:  # the partial tiles are written and read back once: extra bytes at the same bandwidth
        base = spec.traffic(shape, dtype)["bytes"]
        info["dram_efficiency"] = base / (base + 2 * s * m * n * 4)
        info["l2_bytes"] += 2 * s * m * n * 4
    return info


def launch_info_batch(
    spec: MatmulCuda, columns: dict[str, np.ndarray], shape: tuple[int, ...], dtype: str
) -> dict:
    """``launch_info`` of many candidates at once, as a dict of arrays: asked once per distinct tile,
    thread tile and split (what it reads besides the layout), the footprint once per distinct layout."""
    reads = ("BM", "BN", "BK", "TM", "TN", "MIN_BLOCKS", "SPLIT_K")
    out = batched_info(spec, columns, shape, dtype, reads, ("BM", "BN", "BK", *spec.LAYOUT_KEYS))
    # the keys that read the layout (whether each operand is swizzled), as array arithmetic: the swizzled
    # accesses, and the registers (a swizzle adds to the need: ``register_need``) with what a cap costs
    cols = {k: np.asarray(columns[k], dtype=np.int64) for k in {*_SWIZZLE_READS, *CONFIG_KEYS, *LAYOUT_KEYS}}
    out["swizzle_accesses"] = swizzle_accesses(cols).astype(np.float64)
    need = register_need(cols)
    threads = (cols["BN"] // cols["TN"]) * (cols["BM"] // cols["TM"])
    cap = np.minimum(255, REGS_PER_SM // (cols["MIN_BLOCKS"] * threads) // 8 * 8)
    out["regs_per_thread"] = np.minimum(cap, need).astype(np.float64)
    out["flops_efficiency"] = cap_efficiency(need / cap - 1.0)
    # the k-loop's compiled count reads THREAD_MAP and the layout too (launch_info above took each
    # distinct tile's first candidate's): per candidate here, the shared instructions where it is absent
    counted = loop_instructions_batch(cols)
    absent = np.isnan(counted)
    out["loop_slots"] = loop_slots(cols, shape) + np.where(absent, 0.0, counted) * (threads // 32)
    if absent.any():
        out["smem_instructions"] = np.where(absent, smem_instructions(cols), 0).astype(np.float64)
    else:
        out.pop("smem_instructions", None)
    return out
