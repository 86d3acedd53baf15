"""The GEMM spec's model side: which candidates are legal on a shape, the C tile's layout, the shared
stores the bank model scores, and what the predictor is told of the tensor cores, L2 and TMA.

PATH 0 (the Gluon TMA kernel) is scored on its epilogue, the accumulator (wgmma's register layout) stored
into the NVMMA-swizzled C tile before the TMA store; PATH 1 (``tl.dot``) on one k-step's ``cp.async.cg``
copies of A and B into Triton's NVMMA-swizzled operand tiles, with their global side (``_path1_copies``).
TMA's writes and wgmma's reads of the operand ring are not LSU instructions: ``launch_info`` hands them
to the predictor as ``extra_wavefronts`` (matmul_tiles.py).

Why a module of its own: this is the numpy-only half of the spec (what the tuner enumerates, prunes and
scores), apart from the launch (matmul_launch.py) and the kernels (matmul_kernels.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from autopad.access import Instruction
from autopad.layouts import Legality, Swizzled

from .matmul_path1_regs import path1_usage
from .matmul_path1_spills import loop_locals
from .matmul_tiles import (
    _ARCH,
    _EB,
    _cdiv,
    _wgmma_warps,
    b_kn,
    c_bytes,
    epilogue_rows,
    smem_bytes,
    tma_ok,
    tma_wgmma_rows,
)

if TYPE_CHECKING:
    from .matmul import MatmulGluon

__all__ = ["layout", "legal", "smem_pattern", "launch_info"]


def layout(constants: dict[str, int], dtype: str) -> Swizzled:
    """PATH 0: the C tile's NVMMA swizzle as autopad's Swizzled over ``SWIZZLE``-byte rows (column blocks
    stacked). NVMMA swizzle S bytes: 16-byte chunk j of the 128-byte line L is stored at
    ``j ^ (L % (S/16))``; with S-byte rows that is ``sw_vec = 16 / eb``, ``per_phase = 128 / S``,
    ``max_phase = S / 16``. Under split-K the tile holds fp32 partial sums. PATH 1: one k-step's A and
    B tiles as 128-byte lines under the 128-byte swizzle (A's lines, then B's); where Triton swizzles an
    operand by 64 bytes (BK 32 in 16 bits), ``_path1_copies`` writes its lanes' places in these
    coordinates."""
    c = constants
    if c.get("PATH", 0):
        eb = _EB[dtype]
        rows = (c["BM"] + c["BN"]) * c["BK"] * eb // 128
        return Swizzled(rows, 128 // eb, eb, sw_vec=16 // eb, per_phase=1, max_phase=8)
    eb = c_bytes(c, dtype)
    s = c["SWIZZLE"]
    width = (s // eb) if s else c["BN"]
    blocks = c["BN"] // width
    if not s:
        return Swizzled(c["BM"] * blocks, width, eb)
    return Swizzled(c["BM"] * blocks, width, eb, sw_vec=16 // eb, per_phase=128 // s, max_phase=s // 16)


# the constants ``legal`` reads without a default, every one on the way to a legal answer (PATH, SPLIT_K and
# PERSIST default to 0, 1, 0; GROUP_M is not read): what ``legal_preamble`` asks to be given
_REQUIRED = ("BM", "BN", "BK", "STAGES", "WARPS", "SWIZZLE")


def legal(spec: MatmulGluon, constants: dict[str, int], shape: tuple[int, ...], dtype: str) -> Legality:
    c = constants
    ok = spec.legal_preamble(c, shape, dtype, _REQUIRED)  # check_shape: (M, N, K), each at least 1
    if not ok:
        return ok
    m, n, k = shape
    eb = _EB[dtype]
    if c["BM"] < 64 or c["WARPS"] < 4:
        return Legality(False, "wgmma needs a warpgroup: BM >= 64 and 4+ warps")
    if c["BM"] * c["BN"] // (32 * c["WARPS"]) > 128:
        return Legality(False, "accumulator over 128 fp32 registers per thread: spills")
    budget = _ARCH.smem_per_block
    if smem_bytes(c, dtype) > budget:
        return Legality(False, f"{smem_bytes(c, dtype)} bytes of shared memory exceed {budget}")
    if c.get("PATH", 0):
        if (c["SWIZZLE"], c.get("SPLIT_K", 1), c.get("PERSIST", 0)) != (128, 1, 0):
            return Legality(False, "PATH 1 (tl.dot) has no SWIZZLE, SPLIT_K or PERSIST: spelt 128, 1, 0")
        return Legality(True)
    if not tma_ok(shape, dtype):
        return Legality(
            False,
            f"TMA needs 16-byte-aligned row strides: K*{eb} and N*{eb} must be multiples of 16 "
            "(PATH 1 takes any shape)",
        )
    if c["SWIZZLE"] == 0:
        return Legality(
            False,
            "Triton 3.6 cannot lower an unswizzled NVMMA tile here ('Failed to find a valid layout')",
        )
    kb = c["BK"] * eb
    if kb % c["SWIZZLE"]:
        return Legality(
            False, f"K tile of {kb} bytes is not a whole number of {c['SWIZZLE']}-byte swizzle rows"
        )
    if (c["BN"] * eb) % c["SWIZZLE"]:
        return Legality(False, "C tile row is not a whole number of swizzle rows")
    tiles = _cdiv(m, c["BM"]) * _cdiv(n, c["BN"])
    k_tiles = _cdiv(k, c["BK"])
    s = c.get("SPLIT_K", 1)
    if s > 1:
        if tiles * s > _ARCH.sm_count:
            return Legality(
                False, f"split-K only while the {tiles} output tiles x {s} splits fit one wave of SMs"
            )
        if k_tiles < s * c["STAGES"]:
            return Legality(
                False, f"{k_tiles} K tiles are too few for {s} splits of a {c['STAGES']}-deep ring"
            )
        if s * _cdiv(m, c["BM"]) * c["BM"] * n >= 2**31:
            return Legality(False, "split-K workspace over 2**31 elements (32-bit offsets)")
    if c.get("PERSIST", 0):
        if s > 1:
            return Legality(False, "persistent programs do not split K")
        if c["PERSIST"] == 3 and c["WARPS"] != 4:
            return Legality(False, "ping-pong consumers are one warpgroup each: WARPS 4")
        if tiles <= _ARCH.sm_count:
            return Legality(False, "persistent needs more output tiles than SMs (one tile each otherwise)")
    return Legality(True)


def smem_pattern(spec: MatmulGluon, constants: dict[str, int], dtype: str) -> tuple[Instruction, ...]:
    """PATH 0: the epilogue's shared stores of the accumulator (wgmma layout) into the C tile, per warp.

    wgmma's accumulator: warp w of a warpgroup owns rows 16 w .. 16 w + 15 of each 64-row slab; lane l
    holds rows ``l // 4`` and ``l // 4 + 8``, columns ``8 j + 2 (l % 4) + {0, 1}``. For 16-bit outputs
    Triton emits ``stmatrix.x4`` (seen in the PTX): lane l gives the 16-byte row ``l % 8`` of 8x8
    matrix ``l // 8`` (matrices: rows +0/+8, columns +0/+8 of a 16x16 block), one 8-lane phase per
    matrix. For fp32 (tf32, or split-K's partial sums) it emits ``st.shared.v2.b32``: each lane stores
    its two neighbouring columns, 8 bytes. Built for all warps, row repeats and column steps at once.

    PATH 1: one k-step's ``cp.async.cg`` copies of A and B with their global side (``_path1_copies``).
    """
    c = constants
    if c.get("PATH", 0):
        eb = _EB[dtype]
        a = _path1_copies("A", c["BM"], c["BK"] * eb, 0, c["WARPS"], eb)
        # B as its rows lie in global memory: [K, N] (16-bit) rows of BN, or tf32's [N, K] rows of BK
        rows, width = (c["BK"], c["BN"] * eb) if b_kn(dtype) else (c["BN"], c["BK"] * eb)
        return a + _path1_copies("B", rows, width, c["BM"] * c["BK"] * eb // 128, c["WARPS"], eb)
    eb = c_bytes(c, dtype)
    width = spec.layout(c, dtype).cols
    wm, wn = _wgmma_warps(c["BM"], c["WARPS"])
    cpw = c["BN"] // wn  # columns per warp
    reps = c["BM"] // (16 * wm)
    lane = np.arange(32)
    w = np.arange(c["WARPS"])
    wr, wc = w % wm, w // wm
    if eb == 2:  # (warp, rep, j) x lane, 16-byte stmatrix rows
        j = np.arange(cpw // 16)
        ww, rr, jj = (x.ravel()[:, None] for x in np.meshgrid(w, np.arange(reps), j, indexing="ij"))
        q = lane // 8
        rows = rr * 16 * wm + 16 * wr[ww] + (q % 2) * 8 + lane % 8
        cols = wc[ww] * cpw + 16 * jj + (q // 2) * 8
        nbytes = 16
    else:  # (warp, rep, half, j) x lane, 8-byte st.shared.v2
        j = np.arange(cpw // 8)
        grid = np.meshgrid(w, np.arange(reps), (0, 8), j, indexing="ij")
        ww, rr, hh, jj = (x.ravel()[:, None] for x in grid)
        rows = rr * 16 * wm + 16 * wr[ww] + lane // 4 + hh
        cols = wc[ww] * cpw + 8 * jj + 2 * (lane % 4)
        nbytes = 8
    # stacked column blocks of the NVMMA tile: (r, col) -> (block * BM + r, col % width)
    srows = (cols // width) * c["BM"] + rows
    scols = cols % width
    return tuple(Instruction(f"st{i}", "store", nbytes, r, s) for i, (r, s) in enumerate(zip(srows, scols)))


def _path1_copies(
    name: str, rows: int, width: int, first: int, warps: int, eb: int
) -> tuple[Instruction, ...]:
    """One operand's k-step copies on PATH 1, as Triton 3.6 compiles ``tl.dot``'s pipelined loads for sm_90
    on rows it can prove 16-byte aligned (benchmarks/triton_path1_compiled.py reads the TTGIR): the tile
    is ``rows`` rows of ``width`` bytes in global memory (A: BM rows of BK; B [K, N]: BK rows of BN),
    copied by ``cp.async.cg``, 16 bytes a lane, lanes along a row first (``threadsPerWarp`` [32 / t, t],
    t = min(32, width / 16) chunks a row), warps stacked down the rows, repeated to cover the tile (every
    tile of the spec's SPACE is covered exactly once; where the warps' rows overrun a tile they wrap, as a
    Triton layout larger than its tensor repeats it).

    Shared side: Triton's NVMMA layout of S = min(128, width)-byte rows, in column blocks of 128 bytes
    stacked where a row is wider; 16-byte chunk j of 128-byte line L (lines counted from the operand's
    ``first`` line of the layout) lands at chunk ``j ^ (L % (S / 16))``. At S = 64 (BK 32 in 16 bits) two
    rows share a line and only the low two chunk bits flip. The spec's PATH 1 layout is those lines under
    the 128-byte swizzle, so each lane's place is written in its coordinates (the swizzle undone:
    ``j ^ (L % (S/16)) ^ (L % 8)``). Global side: row r from ``r * pitch``, its lines apart (pitch the
    width rounded up to 128 bytes, rows line-aligned as where K and N are multiples of 64 elements):
    with 64-byte rows the 8 lanes of a staging line read two global lines, which ``.cg`` costs two
    wavefronts where one line costs one. H100 run 190 (2026-12-06, ncu, bf16 2048³, 128 x 128 tiles, 8
    warps): the whole kernel's ldgsts wavefronts agree exactly with this pattern at BK 32 and BK 64, the
    tile's copies listed as stores or lane-ordered said 2/3 of it at BK 32."""
    s = min(128, width)
    per_row = width // 16  # 16-byte chunks a row
    t = min(32, per_row)
    lane = np.arange(32)
    lr, lc = lane // t, lane % t  # the lane's row within the instruction's rows and its chunk
    instr_rows = 32 // t
    reps = max(1, -(-rows // (instr_rows * warps)))
    pitch = -(-width // 128) * 128  # global bytes between rows: the width, each row from a new line
    out = []
    for rep in range(reps):
        for w in range(warps):
            for col0 in range(0, per_row, t):
                r = (rep * warps * instr_rows + w * instr_rows + lr) % rows
                j = col0 + lc  # chunk of the row
                block, jj = j // (s // 16), j % (s // 16)  # column block of S-byte rows, chunk in it
                byte = block * rows * s + r * s + 16 * jj  # in the operand's area, before the swizzle
                line = first + byte // 128
                phys = (byte % 128) // 16 ^ (line % (s // 16))
                logical = phys ^ (line % 8)  # the layout's 128-byte swizzle undone
                out.append(Instruction(f"cp{name}{len(out)}", "cp.async.cg", 16, line, logical * (16 // eb),
                                       global_offsets=r * pitch + 16 * j))  # fmt: skip
    return tuple(out)


def path1_elementwise(shape: tuple[int, ...], dtype: str) -> tuple[bool, bool]:
    """Whether ``matmul_tl`` (PATH 1) loads A, B element by element through registers. Their row strides
    are the integer arguments K and N (B [K, N] in 16 bits; tf32's B [N, K]: K), and Triton specialises an
    integer argument only on divisibility by 16 (elements): for N = 1000 it knows nothing, even where TMA
    (16-byte strides: 2000 bytes) is legal. In 16 bits such an operand is then ``tt.load``-ed (one
    ``ld.global.b16`` an element, a warp 32 elements of one row) and stored to a single shared buffer from
    registers, unpipelined, while the other operand keeps its pipelined 16-byte ``cp.async`` ring (the
    sm_90 TTGIR and PTX: benchmarks/triton_path1_compiled.py; the ring's size: the compiled shared bytes of
    matmul_path1_regs.py). A tf32 row stays a pipelined ``cp.async`` of 4-byte elements (the TTGIR), so
    nothing is element-wise there (what the narrow copies cost: ``path1_narrow_copies``); its reads span a
    sector more as well (``sector_factor`` 1.22 on an odd K), but they are ``cp.async.ca``, through L1, and
    whether L2 sees the repeats was not measured, so tf32 is charged its bytes alone (its three H100
    studies: Spearman 0.41-0.89 without it, 0.43-0.89 with it, no pick moved; and run 208's profile: K 1000,
    rows on the sector grid, ran as K 1001)."""
    _, n, k = shape
    if _EB[dtype] == 4:
        return False, False
    return k % 16 != 0, (n if b_kn(dtype) else k) % 16 != 0


# What a 4-byte ``cp.async`` warp instruction of PATH 1 costs (``path1_narrow_copies``), in SM cycles: on the
# issue stream, NARROW_COPY_CYCLES a copy, whatever the SM holds; and what a block waits on its copies that
# other resident blocks fill (``wait_cycles``, charged over the blocks an SM holds): NARROW_COPY_WAIT a copy
# of the block (its warps meet at every k-step's barrier) and, in a build at the register cap
# (CAPPED_REGS or more a thread), NARROW_COPY_CHAIN a copy of one warp (a warp's copies are a chain of about
# 8 dependent instructions each, which a build with registers to spare hoists and overlaps). Both are the
# SM's throughput, not latency that more warps a scheduler hide (``cycles_off_knee``). The form is run
# 208's profile's (per copy, an SM spent 10.4-10.9 cycles at one 8-warp block, 6.4-7.3 at two to four 64-row
# blocks: a share that other blocks hide). The thirty-eighth session charged the chain in every build and
# both terms on the warp knee (4 / 1 / 15, chosen on H100 runs 193 and 200); the residuals of all eight
# tf32 studies on both cards (H100 runs 193, 200, 208; H200 run 212) then read -0.21..-0.34 in log for the
# 4-warp builds alone on their SM below the cap, about 0 for those at it, and a 4-warp block ran as fast as
# an 8-warp one of the same tile and blocks an SM (1536x3072x999: 64 x 128 x 32, 0.116 / 0.118 ms at two
# blocks an SM, 0.129 / 0.133 at one) where the knee and the chain put it 21-46% slower. The values were
# chosen on those eight studies (a grid of 192 triples with the knee on or off each term), for the highest
# mean Spearman among those with their picks unchanged and the lowest shape at 0.77 or more: in sample, mean
# 0.827 / 0.836 -> 0.836 / 0.847 (H100 / H200), min 0.687 / 0.693 -> 0.773 / 0.775 (1536x3072x999). Held
# out on eight new tf32 shapes (H100 runs 215b and 216, timed after both this and the reloads below were
# committed): Spearman mean 0.790 / 0.785 -> 0.822 / 0.817 -> 0.850 / 0.845 (this form, then the reloads),
# min 0.637 / 0.633 -> 0.718 -> 0.732, no pick moved
NARROW_COPY_CYCLES = 5.0
NARROW_COPY_WAIT = 3.0
NARROW_COPY_CHAIN = 10.0
CAPPED_REGS = 250
# What a narrow-copy build waits for each local load or store its k-loop issues (matmul_path1_spills.py: the
# copies' spilled addresses, reloaded one after another at the register cap), in SM cycles: one L2 round trip,
# as benchmarks/probe_l2_latency.py measured it (H100 run 213: 146-147 ns, 290 cycles at 1,980 MHz; L1 is
# mostly shared memory in these builds). Not fitted: on the eight tf32 studies of both cards 200-400 cycles
# scored alike (Spearman mean 0.865-0.873 / 0.874-0.882 on the H100 / H200 against 0.836 / 0.847 without),
# and those builds (88 of the sixteen studies' rows, 18 or more reloads a k-step) read +0.74 in log without
# the wait, +0.00 at 240 cycles, -0.11 at 290
SPILL_RELOAD_CYCLES = 290.0


def path1_narrow_copies(shape: tuple[int, ...], dtype: str) -> bool:
    """Whether ``matmul_tl`` (PATH 1) copies tf32 operands 4 bytes an element: A's and B's row stride is K
    (tf32's B is [N, K]), and where K is not a multiple of 16 Triton cannot prove a row 16-byte aligned, so
    its pipelined copies shrink from ``cp.async.cg`` of 16 bytes to ``cp.async.ca`` of 4 (the PTX: 48 a
    thread a k-step at 128 x 256 x 32 on 8 warps, 12 where K is a multiple of 16), each with its own address
    and predicate arithmetic (about 8 warp instructions a copy against 3.5 per 4 bytes copied 16 at a time).

    H100 run 208 (``benchmarks/profile_tf32_path1.py``, ten builds at 2048x2048 and K 1001 / 1000 / 1008,
    timed, then counted under ncu): every build ran 1.60-2.15x slower at K 1001 than at K 1008, and K 1000,
    whose rows are 16-byte aligned though Triton cannot tell, ran as K 1001 (0.90-1.02x): the copies' width,
    not the rows' alignment or their sectors, sets the cost. No unit is saturated (ncu: issue active 23-36%,
    L1 38-64%, L2 19-51% of peak; the warps wait on the long scoreboard and fixed latencies), and the time
    per copy falls as an SM holds more blocks: 10.4-10.9 SM cycles a warp copy at one 8-warp 128 x 256 block
    an SM, 6.4-7.3 at two to four blocks of 64-row tiles. The predictor charges each copy
    ``NARROW_COPY_CYCLES`` SM cycles (``issue_cycles``: the issue stream), and what a block waits on its
    copies (``wait_cycles``: NARROW_COPY_WAIT a copy of the block and, at the register cap,
    NARROW_COPY_CHAIN a copy of one of its warps), which the other blocks an SM holds fill; both off the
    warp knee (``cycles_off_knee``); the 16-byte copies' builds pay neither.
    Without them the model put these builds at half their measured time and ordered runs 193 and 200 at
    Spearman 0.54 / 0.41; 6 cycles a copy alone (the thirty-fifth session) 0.73 / 0.70, with the wait 0.795 /
    0.861 (the ten builds of run 208 at K 1001: 0.70 -> 0.85 -> 0.90). Run 208's six studies, measured before
    either and not used to choose them (though seen while the wait's values were tried): 0.52 / 0.43 / 0.55 /
    0.47 / 0.55 / 0.50 -> 0.70 / 0.65 / 0.74 / 0.75 / 0.78 / 0.76 -> 0.79 / 0.69 / 0.82 / 0.87 / 0.90 / 0.89,
    no pick moved by the wait (4096x1024x1501, 1536x3072x999, 1024x4096x1234, 5000x1000x703, 2500x2500x1111,
    3000x3000x510). Those figures are the thirty-eighth session's form; the form of today (above
    ``NARROW_COPY_CYCLES``) was chosen on all eight tf32 studies of both cards (0.89 on run 208's ten
    builds). Not modelled: the narrow copies' shared-memory side: ``smem_pattern`` still scores PATH 1's
    16-byte ``cp.async.cg`` copies (run 208's ncu read about 2.2 shared wavefronts a 4-byte warp copy at
    128 x 256, where 16-byte copies write 128 bytes in one; the shared stream was not these builds' bound)."""
    return _EB[dtype] == 4 and shape[2] % 16 != 0


def sector_factor(stride: int, eb: int) -> float:
    """Global bytes an element-wise warp load moves per byte it uses: 32 lanes read 32 consecutive elements
    of a row (``32 eb`` bytes), from a row start ``r * stride * eb`` that is off the 32-byte sector grid
    unless the stride says otherwise, so most such reads span one sector more than their bytes need. Over
    the rows' offsets mod 32 (a cycle of at most 32 rows): an odd stride in 16 bits touches 2.94 sectors
    for 2 sectors of data, 1.47x; a stride of 8 mod 16 elements (1000) 1.25x."""
    width = 32 * eb
    offsets = (np.arange(32) * stride * eb) % 32
    return float(np.ceil((offsets + width) / 32).mean() * 32 / width)


def launch_info(spec: MatmulGluon, constants: dict[str, int], shape: tuple[int, ...], dtype: str) -> dict:
    """Blocks, threads, shared memory, and what the tensor cores and TMA do beyond the pattern.

    ``mma_bytes``: wgmma's operand size (the tensor-core rate). ``l2_bytes``: A is read once per column
    of tiles and B once per row of tiles through L2, C written once (split-K: its fp32 partials written
    and read back). ``extra_wavefronts``: wgmma's reads of every k-step's A and B tiles and TMA's
    writes of them, and the TMA store's reads of the C tile: one wavefront per ``SWIZZLE``-byte row
    (``tma_wgmma_rows``, ``epilogue_rows``; wgmma reads B once per 64-row slab and A once per
    warpgroup along N, ``wgmma_read_bytes``). ``inflight_bytes``: STAGES - 1 k-steps of A and B in
    flight per thread. A persistent kernel reports its own launch: one program per SM, each walking
    its share of the tiles (see below). PATH 1's pattern is one k-step's,
    so it counts ``tiles_per_block`` k-steps. ``l2_async``: the re-reads are asynchronous bulk copies,
    TMA's (PATH 0) or the pipelined cp.async of PATH 1, which stream at the predictor's async L2 rate; on
    today's space (H200 runs 47-48, every candidate measured) that took Spearman from 0.77 / 0.78 / 0.65
    to 0.90 / 0.87 / 0.82 (bf16 2048^3 / 4096^3 / 3000 x 1000 x 2000), the picks unchanged. An operand
    PATH 1 loads element by element (rows Triton cannot prove 16-byte aligned: ``path1_elementwise``) is
    the exception: ``_path1_elementwise_info``. ``regs_per_thread`` and ``smem_bytes`` (PATH 1): the
    build's compiled registers and shared bytes (matmul_path1_regs.py), and where it spills, its stack
    bytes written and read back every k-step as ``l2_bytes``."""
    c = constants
    m, n, k = shape
    eb = _EB[dtype]
    bm, bn, bk = c["BM"], c["BN"], c["BK"]
    tiles = _cdiv(m, bm) * _cdiv(n, bn)
    s = c.get("SPLIT_K", 1)
    steps = _cdiv(_cdiv(k, bk), s)  # k-steps per program
    ring_step = (bm + bn) * bk * eb  # one k-step of A and B
    a_l2 = eb * m * k * _cdiv(n, bn)  # A read once per column of tiles, B once per row of tiles
    b_l2 = eb * n * k * _cdiv(m, bm)
    threads = 32 * c["WARPS"]
    info = {
        "blocks": tiles * s,
        "threads": threads,
        "smem_bytes": smem_bytes(c, dtype),
        "tiles_per_block": 1,
        "mma_bytes": eb,
        "l2_bytes": a_l2 + b_l2 + eb * m * n,
        "extra_wavefronts": steps * tma_wgmma_rows(c, dtype) + epilogue_rows(c, dtype),
        "inflight_bytes": (c["STAGES"] - 1) * ring_step / threads,
        "l2_async": 1,
    }
    if c.get("PERSIST", 0):
        # a persistent launch is what it is: one program per SM (min(tiles, SMs)), each walking
        # ceil(tiles / programs) tiles, never two programs an SM (the plain grid of one block a tile let
        # the predictor put two small-tile blocks on an SM and hide latency it cannot hide). Its last round
        # leaves the SMs whose walk is shorter idle: the tensor cores reach tiles / (per x programs) of
        # their rate (192 tiles on 132 programs: 0.73). Today's space (H200 runs 47-48, every candidate
        # measured): Spearman 0.90 / 0.87 / 0.82 -> 0.96 / 0.96 / 0.86, the picks unchanged
        progs = min(tiles, _ARCH.sm_count)
        per = _cdiv(tiles, progs)
        info["blocks"] = progs
        info["tiles_per_block"] = per
        info["extra_wavefronts"] *= per
        info["flops_efficiency"] = tiles / (per * progs)
    if c.get("PATH", 0):
        info["tiles_per_block"] = steps
        use = path1_usage(c, shape, dtype)
        if use is not None:
            # the build's registers (compiled, matmul_path1_regs.py) set how many blocks an SM holds; where
            # it spills, each thread writes its stack to local memory and reads it back every k-step, bytes
            # that go through L1 to L2 (charged at the L2 rate, with the re-reads). On rows Triton cannot
            # prove aligned the operand comes in element by element through registers and some tiles spill:
            # H100 run 192 (bf16 2048 x 1536 x 2049, PATH 1's 114 candidates) measured its ten slowest builds
            # all spilling (153-454 us, the fastest 60; the eleventh spilling build 115), 1.4-3.3 TB/s of
            # these bytes over what the predictor said without them; the model-only pick, a spilling 128 x
            # 256 x 128, ran 2.55x the best
            regs, stack, shared = use
            info["regs_per_thread"] = regs
            spill = 2 * stack * threads * info["blocks"] * steps
            # the spill moves through L1 as plain loads and stores, never the asynchronous copies: out of the
            # async share (tf32 builds spill on rows off the grid while both operands stay pipelined)
            info["l2_async"] = info["l2_bytes"] / (info["l2_bytes"] + spill)
            info["l2_bytes"] += spill
            info["smem_bytes"] = shared  # the compiled build's (an element-wise operand takes one buffer)
        _path1_elementwise_info(info, c, shape, dtype, a_l2, b_l2)
        if path1_narrow_copies(shape, dtype):
            copies = (bm + bn) * bk / 32  # a k-step's 4-byte warp copies (the block's)
            capped = info.get("regs_per_thread", 0) >= CAPPED_REGS
            info["issue_cycles"] = NARROW_COPY_CYCLES * copies
            info["wait_cycles"] = NARROW_COPY_WAIT * copies + capped * NARROW_COPY_CHAIN * copies / c["WARPS"]
            info["wait_cycles"] += SPILL_RELOAD_CYCLES * loop_locals(c, shape, dtype)[0]
            info["cycles_off_knee"] = 1
    if s > 1:
        base = spec.traffic(shape, dtype)["bytes"]
        extra = 2 * s * _cdiv(m, bm) * bm * n * 4  # partial sums written, then read back
        info["dram_efficiency"] = base / (base + extra)
        info["l2_bytes"] += extra
        # ... by a second launch (matmul_launch.py: ``splitk_reduce`` after the GEMM), which costs the
        # predictor's launch_s: at tf32 1000^3 (H100 run 215, every candidate timed) the split-K builds ran
        # 18.8-21 us where the model said 11.4-12.1 and the best, one launch, 15.6; the model-only pick, a
        # split-K build, went from 1.28x the best to 1.09x with the second launch counted
        info["passes"] = 2
    return info


def _path1_elementwise_info(
    info: dict, c: dict[str, int], shape: tuple[int, ...], dtype: str, a_l2: float, b_l2: float
) -> None:
    """What an operand PATH 1 loads element by element (``path1_elementwise``) changes in ``info``
    (``a_l2``, ``b_l2``: A's and B's re-read bytes, as ``launch_info`` counts them).

    - Its re-reads move ``sector_factor`` times their bytes (unaligned 64-byte warp reads) and go through
      registers at the plain L2 rate; the other operand's stay asynchronous (``l2_async``: the share of
      ``l2_bytes`` its pipelined copies move; C's stores and any spill are plain too).
    - Bytes in flight: the pipelined operand's STAGES - 1 k-steps and the element-wise one's single step.
    - ``latency_phases``: every k-step waits for its element-wise loads (the loop loads, stores to shared
      memory, then waits for its wgmma: ``warp_group_dot_wait`` of 0 pending), so an SM's resident blocks
      queue for the round trip, shared memory, the tensor cores and issue (predict_queue.py) and one block
      alone on its SM pays the round trip every k-step.

    H100 runs 192-196 (PATH 1's every candidate timed on five 16-bit shapes with an element-wise operand):
    the fastest builds are 64 x 256 at 4 warps, two blocks an SM, where the model without these terms picked
    128 x 256 at 8 warps, one block, 1.19-1.27x slower (quality/NOTES.md, thirty-third session)."""
    a_elem, b_elem = path1_elementwise(shape, dtype)
    if not (a_elem or b_elem):
        return
    m, n, k = shape
    eb = _EB[dtype]
    bm, bn, bk = c["BM"], c["BN"], c["BK"]
    a_step, b_step = bm * bk * eb, bn * bk * eb
    b_stride = n if b_kn(dtype) else k
    extra = (a_l2 * (sector_factor(k, eb) - 1) if a_elem else 0.0) + (
        b_l2 * (sector_factor(b_stride, eb) - 1) if b_elem else 0.0
    )
    info["l2_bytes"] += extra
    piped = (0 if a_elem else a_l2) + (0 if b_elem else b_l2)
    info["l2_async"] = piped / info["l2_bytes"]
    one = (a_step if a_elem else 0) + (b_step if b_elem else 0)
    info["inflight_bytes"] = ((c["STAGES"] - 1) * (a_step + b_step - one) + one) / info["threads"]
    info["latency_phases"] = 1
    info["latency_from_l2"] = 1
