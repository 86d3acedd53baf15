"""Hopper GEMM spec: Gluon (TMA -> NVMMA-swizzled shared memory -> wgmma), and a plain ``tl.dot`` path.

``C[M, N] = A[M, K] @ B`` with B as the caller holds it: ``[K, N]`` row-major for bf16 and fp16 (wgmma
reads a 16-bit B tile in either majorness, so TMA loads ``[BK, BN]`` tiles of the user's tensor and no
copy is made), ``[N, K]`` for tf32 (wgmma's tf32 needs a K-major B: ``inputs_from`` transposes B once,
the only copy left; ``autopad.ops.matmul`` never takes this path, float32 goes to the CUDA kernel).
Dtypes: bf16 and fp16 (bf16/fp16 out, fp32 accumulate) and tf32 (fp32 in and out, tf32 products). The
kernels themselves are in ``matmul_kernels.py``.

Shared memory: A, B and C tiles live in ``gl.NVMMASharedLayout`` with ``SWIZZLE`` bytes of XOR swizzle
(32, 64, 128). TMA writes the operand tiles and wgmma reads them, neither through the load/store unit; the
model is told their wavefronts (``extra_wavefronts``: one per ``SWIZZLE``-byte row that TMA writes and
wgmma reads, so a narrower swizzle costs more: ``tma_wgmma_rows``) and the tensor-core rate
(``mma_bytes``). What the bank model scores is the epilogue: the accumulator (wgmma's register layout)
stored to the C tile before the TMA store, where an unswizzled 128-byte-row tile puts the 8 row-groups of
a warp's stores in the same banks.

Constants: ``BM, BN, BK, STAGES, WARPS, SWIZZLE, GROUP_M, SPLIT_K, PERSIST, PATH``. Variants, each with a
``legal`` that keeps it to the shapes where it can run and pay:

* ``SPLIT_K`` (1, 2, 4): when the output has fewer tiles than SMs (decode-like M = 128), each program
  reduces a 1/SPLIT_K slice of K into an fp32 workspace and a small Triton kernel sums the slices into C.
  The model is charged the workspace's bytes (written and read once).
* ``PERSIST`` (0, 1, 2, 3): one program per SM walks its tiles (outer loop) and their K steps (inner loop).
  1: the consumer warps also issue the loads; the next tile's first loads fly during this tile's last
  steps and epilogue, and its TMA store drains while the next tile computes. 2: warp-specialized
  (``matmul_gluon_ws``): a one-warp loader partition keeps the ring full across tiles while the WARPS
  consumer warps run wgmma and the epilogue; the C tile is double-buffered where shared memory allows
  (``c_bufs``). 3: ping-pong (``matmul_gluon_pingpong``, WARPS 4 only): two 4-warp consumers take
  alternate tiles and turns at the tensor cores, so one's epilogue overlaps the other's wgmma; each
  holds a BM x BN accumulator, so BM * BN <= 16384 (128 fp32 registers a thread). 2 and 3 launch with a
  register cap (``ws_maxnreg``) so that the extra warpgroup fits the register file. Legal when there are
  more tiles than SMs, for 16-bit and tf32 alike. The model sees the tile geometry of the plain kernel
  (the overlap is invisible to it), so all are measured.
* ``PATH`` (0, 1): 0 is the Gluon TMA kernel; 1 the plain ``tl.dot`` kernel with masked pointer loads
  (Triton stages them with cp.async into NVMMA 128-byte-swizzled tiles), legal for every shape: TMA needs
  row strides that are multiples of 16 bytes, so a 16-bit N or K that is not a multiple of 8 has PATH 1
  alone. Its pattern is the cp.async stores of each k-step (the model has no cp.async op: they are scored
  as 16-byte shared stores, which is what they write), charged per k-step, so it ranks below PATH 0
  wherever both are legal. SWIZZLE, SPLIT_K and PERSIST are not its knobs (held at 128, 1, 0).
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import numpy as np
from autopad.kernels.triton import matmul_kernels as _k

from autopad.access import Instruction
from autopad.arch import get_arch
from autopad.bases import Inputs, Out, TritonKernel
from autopad.layouts import Legality, Swizzled
from autopad.triton_launch import FastLaunch

HAS_TRITON = _k.HAS_TRITON
nvmma = _k.nvmma
if HAS_TRITON:  # module names: build() and the launchers look them up here (tests substitute recorders)
    matmul_gluon, matmul_gluon_persistent = _k.matmul_gluon, _k.matmul_gluon_persistent
    matmul_gluon_ws, matmul_gluon_pingpong = _k.matmul_gluon_ws, _k.matmul_gluon_pingpong
    matmul_tl, splitk_reduce = _k.matmul_tl, _k.splitk_reduce

_ARCH = get_arch("sm_90")
_EB = {"bfloat16": 2, "float16": 2, "tf32": 4}
_REDUCE_BLOCK = 1024
_HERE = Path(__file__).resolve()


def b_kn(dtype: str) -> bool:
    """True when the kernel reads B as the user holds it, ``[K, N]`` (16-bit); False for tf32 (``[N, K]``)."""
    return _EB[dtype] == 2


def c_bytes(c: dict[str, int], dtype: str) -> int:
    """Bytes per element of the C tile in shared memory: fp32 partial sums under split-K."""
    return 4 if c.get("SPLIT_K", 1) > 1 else _EB[dtype]


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def tma_ok(shape: tuple[int, ...], dtype: str) -> bool:
    """TMA describes a tensor whose row strides are multiples of 16 bytes: K and N times the element size."""
    _, n, k = shape
    return (k * _EB[dtype]) % 16 == 0 and (n * _EB[dtype]) % 16 == 0


def _wgmma_warps(bm: int, warps: int) -> tuple[int, int]:
    """warps_per_cta for the accumulator: 4-warp atom along M, doubled along M while M has 16-row slabs."""
    wm, wn = 4, 1
    while wm * wn < warps:
        if bm > 16 * wm:
            wm *= 2
        else:
            wn *= 2
    return wm, wn


# bytes Triton 3.6 keeps in shared memory for the values a warp_specialize hands its partitions (the
# captures), after the barriers: measured from ``metadata.shared`` of sm_90 compiles (the tests compare)
_WS_CAPTURES = {2: 116, 3: 152}


def _ws_bytes(c: dict[str, int], n_c: int, eb: int, cb: int) -> int:
    """Warp-specialized kernels: the ring, ``n_c`` C tiles, the barrier arrays (each starting on 16 bytes:
    ready and empty of STAGES 8-byte mbarriers; ping-pong adds its two turn barriers) and the captures."""
    ring = c["STAGES"] * (c["BM"] + c["BN"]) * c["BK"] * eb
    bars = 8 * c["STAGES"]
    pad = -(-bars // 16) * 16
    bars = pad + bars if c["PERSIST"] == 2 else 2 * pad + 16
    return ring + n_c * c["BM"] * c["BN"] * cb + bars + _WS_CAPTURES[c["PERSIST"]]


def c_bufs(c: dict[str, int], dtype: str) -> int:
    """C tiles in shared memory: two under ping-pong (one per consumer) and under PERSIST 2 where two fit
    beside the ring (tile t's TMA store then drains while tile t + 1 computes and is stored: BM 128 x
    BN 256 x BK 64 fits 2 stages with two, 3 with one), else one."""
    p = c.get("PERSIST", 0)
    if p == 3:
        return 2
    if p == 2:
        eb = _EB[dtype]
        return 2 if _ws_bytes(c, 2, eb, eb) <= _ARCH.smem_per_block else 1
    return 1


def ws_maxnreg(c: dict[str, int]) -> int:
    """Register cap of a warp-specialized launch: the partitions' warps, rounded up to whole warpgroups
    (the loader's one warp takes a warpgroup of its own), share the 64K-register file; e.g. 8 consumer
    warps + 1 loader = 12 warps: 65536 / 384 = 170, 168 in steps of 8. Triton then gives the loader 24
    and the consumers what is left (240 each with 12 warps)."""
    consumers = c["WARPS"] * (2 if c.get("PERSIST", 0) == 3 else 1)
    warps = -(-(consumers + 1) // 4) * 4
    return min(256, 65536 // (32 * warps) // 8 * 8)


def wgmma_read_bytes(c: dict[str, int], dtype: str) -> int:
    """Shared-memory bytes wgmma reads per k-step: a wgmma is one warpgroup's m64 x n x k16, and each reads
    its own operands. B's [BK, BN / wn] slice is read once per 64-row slab (``BM / 64`` times, whichever
    warpgroup owns the slab), A's [BM, BK] once per warpgroup along N (``wn``: BM 64 with 8 warps splits N
    in two, and both warpgroups read all of A)."""
    _, wn = _wgmma_warps(c["BM"], c["WARPS"])
    return c["BK"] * _EB[dtype] * (c["BN"] * c["BM"] // 64 + c["BM"] * wn)


def tma_wgmma_rows(c: dict[str, int], dtype: str) -> int:
    """Shared-memory wavefronts of one k-step that no LSU instruction lists: one per ``SWIZZLE``-byte row.

    An NVMMA tile of S-byte swizzle is S-byte rows (column blocks stacked): TMA writes it a box row of S
    bytes at a time (the box's inner dimension cannot exceed the swizzle span, so Triton splits a wider
    tile into S-byte boxes) and wgmma reads its 8-row core matrices from rows that a narrower swizzle
    leaves in the same banks; either way one wavefront per S-byte row, so 32-byte swizzle moves a k-step
    in 4x the wavefronts of 128-byte swizzle. H200 study (run 2, 298 candidates x 3 shapes): SWIZZLE 32
    measured a median 1.6-2.0x SWIZZLE 64 and SWIZZLE 64 1.16-1.26x SWIZZLE 128 at equal tiles, where the
    reads alone (the previous term, ``ring / S``) predicted 1.05x and 1.03x. PATH 1: cp.async writes the
    ring (the pattern lists those stores); only wgmma's reads of its 128-byte-swizzled tiles are extra."""
    if c.get("PATH", 0):
        return wgmma_read_bytes(c, dtype) // 128
    ring_step = (c["BM"] + c["BN"]) * c["BK"] * _EB[dtype]
    return (ring_step + wgmma_read_bytes(c, dtype)) // c["SWIZZLE"]


def epilogue_rows(c: dict[str, int], dtype: str) -> int:
    """Wavefronts of the TMA store's reads of the C tile (S-byte box rows, like the loads); the pattern
    lists the accumulator's stores into it. PATH 1 stores from registers: none."""
    if c.get("PATH", 0):
        return 0
    return c["BM"] * c["BN"] * c_bytes(c, dtype) // c["SWIZZLE"]


def smem_bytes(c: dict[str, int], dtype: str) -> int:
    """PATH 0: the A/B ring with one 8-byte mbarrier per stage, then the C tile: in the dead ring's place
    (Triton's allocator reuses it) or, persistent, beside it (the ring stays live across tiles); the
    warp-specialized kernels (PERSIST 2, 3): ``_ws_bytes``. PATH 1: Triton's cp.async ring alone (the
    epilogue stores from registers). All match the compiler's ``metadata.shared`` (compiled for sm_90;
    PATH 1 with 16-byte-aligned rows, the case it pipelines)."""
    eb = _EB[dtype]
    ring = c["STAGES"] * (c["BM"] + c["BN"]) * c["BK"] * eb
    if c.get("PATH", 0):
        return ring
    if c.get("PERSIST", 0) >= 2:
        return _ws_bytes(c, c_bufs(c, dtype), eb, c_bytes(c, dtype))
    ring += 8 * c["STAGES"]
    ctile = c["BM"] * c["BN"] * c_bytes(c, dtype)
    return ring + ctile if c.get("PERSIST", 0) else max(ring, ctile)


class MatmulGluon(TritonKernel):
    """The spec (autopad.bases.TritonKernel): what the tuner enumerates, scores, builds and runs."""

    NAME = "matmul"
    DTYPES = ("bfloat16", "float16", "tf32")
    SHAPE = ("M", "N", "K")
    SPACE: dict[str, tuple[int, ...]] = {
        "BM": (64, 128),
        "BN": (64, 128, 256),
        "BK": (32, 64, 128),
        "STAGES": (2, 3, 4, 5),
        "WARPS": (4, 8),
        "SWIZZLE": (0, 32, 64, 128),
        "GROUP_M": (8,),
        "SPLIT_K": (1, 2, 4),
        "PERSIST": (0, 1, 2, 3),
        "PATH": (0, 1),
    }
    DEFAULTS = {
        "BM": 128,
        "BN": 256,
        "BK": 64,
        "STAGES": 3,
        "WARPS": 8,
        "SWIZZLE": 128,
        "GROUP_M": 8,
        "SPLIT_K": 1,
        "PERSIST": 0,
        "PATH": 0,
    }
    LAYOUT_KEYS = ("SWIZZLE",)
    # what the patterns depend on: the epilogue's stores (PATH 0), the k-step's cp.async stores (PATH 1)
    PATTERN_KEYS = ("PATH", "BM", "BN", "BK", "WARPS", "SWIZZLE", "SPLIT_K")
    # cheap necessary conditions of ``legal`` over the whole space (E: element bytes)
    RESTRICTIONS = (
        "SWIZZLE > 0",
        "BM * BN // (32 * WARPS) <= 128",
        "PATH == 1 or ((BK * E) % max(SWIZZLE, 1) == 0 and (BN * E) % max(SWIZZLE, 1) == 0)",
        f"STAGES * (BM + BN) * BK * E <= {_ARCH.smem_per_block}",
        "PERSIST == 0 or SPLIT_K == 1",
        "PERSIST != 3 or WARPS == 4",
        "PATH == 0 or (SWIZZLE == 128 and SPLIT_K == 1 and PERSIST == 0)",
    )
    FLOPS = "2 * M * N * K"
    KERNEL = staticmethod(lambda: matmul_gluon)
    NUM_WARPS = "WARPS"
    TOLERANCE = {"bfloat16": 1e-2, "float16": 3e-3, "float32": 3e-3}
    BASELINE_TL = {"BM": 128, "BN": 256, "BK": 64, "STAGES": 3, "WARPS": 8}
    SOURCE_FILES = (str(_HERE), str(_HERE.with_name("matmul_kernels.py")))

    # ---- the tuner's side (numpy only) ------------------------------------------------------------------

    def check_shape(self, shape: tuple[int, ...]) -> None:
        if len(shape) != 3:
            raise ValueError(f"shape: matmul takes (M, N, K), got {tuple(shape)!r}")
        if min(shape) < 1:
            raise ValueError(f"shape: matmul takes M, N, K >= 1, got {tuple(shape)!r}")

    def textbook(self, shape: tuple[int, ...], dtype: str) -> dict[str, int]:
        """Triton's default NVMMA choice (the widest swizzle), on the TMA path where TMA can describe the
        tensors, else the same tile on the plain ``tl.dot`` path."""
        c = dict(self.DEFAULTS)
        return c if len(shape) != 3 or tma_ok(shape, dtype) else dict(c, PATH=1)

    def smem_bytes(self, constants: dict[str, int], dtype: str) -> int:
        return smem_bytes(constants, dtype)

    def layout(self, constants: dict[str, int], dtype: str) -> Swizzled:
        """PATH 0: the C tile's NVMMA swizzle as autopad's Swizzled over ``SWIZZLE``-byte rows (column blocks
        stacked). NVMMA swizzle S bytes: 16-byte chunk j of the 128-byte line L is stored at
        ``j ^ (L % (S/16))``; with S-byte rows that is ``sw_vec = 16 / eb``, ``per_phase = 128 / S``,
        ``max_phase = S / 16``. Under split-K the tile holds fp32 partial sums. PATH 1: one k-step's A and
        B tiles as the 128-byte rows of Triton's NVMMA 128-byte swizzle (A's rows, then B's)."""
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

    def legal(self, constants: dict[str, int], shape: tuple[int, ...], dtype: str) -> Legality:
        c = constants
        if dtype not in self.DTYPES:
            return Legality(False, f"dtype {dtype} not supported")
        if len(shape) != 3:
            return Legality(False, f"shape {shape} is not (M, N, K)")
        m, n, k = shape
        eb = _EB[dtype]
        if min(shape) < 1:
            return Legality(False, "empty problem")
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
                return Legality(
                    False, "persistent needs more output tiles than SMs (one tile each otherwise)"
                )
        return Legality(True)

    def smem_pattern(self, constants: dict[str, int], dtype: str) -> tuple[Instruction, ...]:
        """PATH 0: the epilogue's shared stores of the accumulator (wgmma layout) into the C tile, per warp.

        wgmma's accumulator: warp w of a warpgroup owns rows 16 w .. 16 w + 15 of each 64-row slab; lane l
        holds rows ``l // 4`` and ``l // 4 + 8``, columns ``8 j + 2 (l % 4) + {0, 1}``. For 16-bit outputs
        Triton emits ``stmatrix.x4`` (seen in the PTX): lane l gives the 16-byte row ``l % 8`` of 8x8
        matrix ``l // 8`` (matrices: rows +0/+8, columns +0/+8 of a 16x16 block), one 8-lane phase per
        matrix. For fp32 (tf32, or split-K's partial sums) it emits ``st.shared.v2.b32``: each lane stores
        its two neighbouring columns, 8 bytes. Built for all warps, row repeats and column steps at once.

        PATH 1: one k-step's cp.async stores (``sizePerThread [1, 8]``: 16 bytes a lane, 8 lanes to a
        128-byte row, seen in the TTGIR): chunk q of the k-step's A-then-B bytes goes to row q // 8, chunk
        q % 8 of the swizzled staging rows; a warp instruction covers 32 consecutive chunks.
        """
        c = constants
        if c.get("PATH", 0):
            eb = _EB[dtype]
            q = np.arange((c["BM"] + c["BN"]) * c["BK"] * eb // 16).reshape(-1, 32)
            return tuple(
                Instruction(f"cp{i}", "store", 16, r, s)
                for i, (r, s) in enumerate(zip(q // 8, (q % 8) * (16 // eb)))
            )
        eb = c_bytes(c, dtype)
        width = self.layout(c, dtype).cols
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
        return tuple(
            Instruction(f"st{i}", "store", nbytes, r, s) for i, (r, s) in enumerate(zip(srows, scols))
        )

    def launch_info(self, constants: dict[str, int], shape: tuple[int, ...], dtype: str) -> dict:
        """Blocks, threads, shared memory, and what the tensor cores and TMA do beyond the pattern.

        ``mma_bytes``: wgmma's operand size (the tensor-core rate). ``l2_bytes``: A is read once per column
        of tiles and B once per row of tiles through L2, C written once (split-K: its fp32 partials written
        and read back). ``extra_wavefronts``: wgmma's reads of every k-step's A and B tiles and TMA's
        writes of them, and the TMA store's reads of the C tile: one wavefront per ``SWIZZLE``-byte row
        (``tma_wgmma_rows``, ``epilogue_rows``; wgmma reads B once per 64-row slab and A once per
        warpgroup along N, ``wgmma_read_bytes``). ``inflight_bytes``: STAGES - 1 k-steps of A and B in
        flight per thread. A persistent kernel reports the plain kernel's tile geometry (one tile per
        block): the predictor's wave term then charges the tile quantisation that persistence does not
        remove. PATH 1's pattern is one k-step's,
        so it counts ``tiles_per_block`` k-steps; unaligned rows stop Triton from pipelining its loads (one
        stage in the sm_90 compile), so only one k-step is in flight."""
        c = constants
        m, n, k = shape
        eb = _EB[dtype]
        bm, bn, bk = c["BM"], c["BN"], c["BK"]
        tiles = _cdiv(m, bm) * _cdiv(n, bn)
        s = c.get("SPLIT_K", 1)
        steps = _cdiv(_cdiv(k, bk), s)  # k-steps per program
        ring_step = (bm + bn) * bk * eb  # one k-step of A and B
        threads = 32 * c["WARPS"]
        info = {
            "blocks": tiles * s,
            "threads": threads,
            "smem_bytes": smem_bytes(c, dtype),
            "tiles_per_block": 1,
            "mma_bytes": eb,
            "l2_bytes": eb * (m * k * _cdiv(n, bn) + n * k * _cdiv(m, bm) + m * n),
            "extra_wavefronts": steps * tma_wgmma_rows(c, dtype) + epilogue_rows(c, dtype),
            "inflight_bytes": (c["STAGES"] - 1) * ring_step / threads,
        }
        if c.get("PATH", 0):
            info["tiles_per_block"] = steps
            if not tma_ok(shape, dtype):
                info["inflight_bytes"] = ring_step / threads
        if s > 1:
            base = self.traffic(shape, dtype)["bytes"]
            extra = 2 * s * _cdiv(m, bm) * bm * n * 4  # partial sums written, then read back
            info["dram_efficiency"] = base / (base + extra)
            info["l2_bytes"] += extra
        return info

    def traffic(self, shape: tuple[int, ...], dtype: str) -> dict:
        m, n, k = shape
        eb = _EB[dtype]
        return {"bytes": (m * k + n * k + m * n) * eb, "flops": 2 * m * n * k}

    # ---- the measuring side (torch / triton) -------------------------------------------------------------

    def arguments(self, shape: tuple[int, ...], dtype: str, dist: str = "uniform") -> list:
        """A [M, K], B ([K, N] for 16-bit, [N, K] for tf32) and C. ``skewed``: a few huge rows of A and
        small columns of B, so the relative error must hold on non-uniform magnitudes."""
        import torch

        m, n, k = shape
        tdt = torch.float32 if dtype == "tf32" else getattr(torch, dtype)
        a = torch.randn(m, k)
        b = torch.randn(k, n)
        if dist == "skewed":
            a[:: max(1, m // 7)] *= 64
            b[:: max(1, k // 5)] *= 0.01
        if not b_kn(dtype):
            b = b.t().contiguous()
        return [a.to(tdt), b.to(tdt), Out((m, n), tdt)]

    def inputs_from(self, a: Any, b: Any) -> Inputs:
        """``autopad.ops.matmul(a, b)`` with b [K, N] as the user holds it: no copy for 16-bit; tf32 (fp32
        tensors) reads B as [N, K] and pays one transposing copy. The output is ``alloc_output``'s."""
        import torch

        m, k = a.shape
        n = b.shape[1]
        bb = b if a.dtype != torch.float32 else b.t().contiguous()
        return Inputs([a, bb], (m, n, k))

    def alloc_output(self, inputs: Any, constants: dict[str, int] | None = None) -> Any:
        """C [M, N] in A's dtype, from the inputs' shape (with or without an ``Out`` placeholder)."""
        import torch

        m, n, _ = inputs.shape
        return torch.empty((m, n), dtype=inputs[0].dtype, device=inputs[0].device)

    def expected(self, inputs: Any) -> tuple:
        """The harness's reference from the inputs (``make_inputs``' or ``inputs_from``'s form)."""
        return (self.reference(inputs[0], inputs[1]),)

    def reference(self, a: Any, b: Any) -> Any:
        """fp64 product of the exact inputs (on their device)."""
        return a.double() @ (b.double() if b_kn_tensor(a) else b.double().T)

    def cache_source(self) -> str:
        """Every kernel this spec may launch (both kernel modules' text) and the spec's own code."""
        return "\n".join(Path(f).read_text() for f in self.SOURCE_FILES) + inspect.getsource(type(self))

    def build(self, constants: dict[str, int], dtype: str) -> dict[str, Any]:
        c = dict(constants)
        built = {"constants": c, "dtype": dtype}
        if c.get("PATH", 0):
            return {**built, "kernel": matmul_tl}
        kernels = {0: matmul_gluon, 1: matmul_gluon_persistent, 2: matmul_gluon_ws, 3: matmul_gluon_pingpong}
        return {
            **built,
            "kernel": kernels[c.get("PERSIST", 0)],
            "layout": nvmma(c["SWIZZLE"], dtype),
            "c_layout": nvmma(c["SWIZZLE"], "tf32" if c.get("SPLIT_K", 1) > 1 else dtype),
        }

    def launcher(
        self, built: dict[str, Any], shape: tuple[int, ...], dtype: str, kn: bool | None = None
    ) -> Any:
        """Everything shape-dependent done once (grid, block shapes, layouts, the workspace's shape, the
        kernels' fixed arguments); a call passes the tensors. The first call goes through Triton's JIT with
        Gluon's ``TensorDescriptor``; later calls through the compiled kernel's own launcher
        (``autopad.triton_launch.FastLaunch``, given the tensors: it keeps their TMA tensor maps per
        address), unless a pointer, the device or a launch hook sends them to the JIT again. ``kn``
        overrides B's form (False: a 16-bit B given as [N, K], to compare with the [K, N] path)."""
        import torch

        c = built["constants"]
        m, n, k = shape
        bm, bn, bk, s = c["BM"], c["BN"], c["BK"], c.get("SPLIT_K", 1)
        kn = b_kn(dtype) if kn is None else kn
        tiles = _cdiv(m, bm) * _cdiv(n, bn)
        kernel = built["kernel"]
        if c.get("PATH", 0):
            args = (m, n, k, bm, bn, bk, c["GROUP_M"], dtype == "tf32", kn)
            fl_tl = FastLaunch(kernel, (tiles,), args, {"num_warps": c["WARPS"], "num_stages": c["STAGES"]})

            def go_tl(inputs: Any, out: Any) -> None:
                a, b = inputs[0], inputs[1]
                if not fl_tl.launch(a, b, out):
                    fl_tl.first(a, b, out)

            go_tl.fast = fl_tl  # type: ignore[attr-defined]
            return go_tl

        from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

        lay, c_lay = built["layout"], built["c_layout"]
        a_block, b_block, c_block = [bm, bk], ([bk, bn] if kn else [bn, bk]), [bm, bn]
        ws_rows = s * _cdiv(m, bm) * bm
        opts: dict[str, Any] = {"num_warps": c["WARPS"]}
        if c.get("PERSIST", 0):
            grid: tuple[int, ...] = (min(tiles, _sm_count()),)
            extra: tuple = (c["STAGES"], c["GROUP_M"], kn)
            if c["PERSIST"] == 2:
                extra += (c_bufs(c, dtype),)
            if c["PERSIST"] >= 2:
                opts["maxnreg"] = ws_maxnreg(c)
        else:
            grid = (tiles * s,)
            extra = (c["STAGES"], c["GROUP_M"], s, kn)
        fl = FastLaunch(kernel, grid, (m, n, k, *extra), opts)
        red = FastLaunch(
            splitk_reduce,
            (_cdiv(m * n, _REDUCE_BLOCK),),
            (m * n, ws_rows // s * n, s, _REDUCE_BLOCK),
            {"num_warps": 4},
        )
        td, f32 = TensorDescriptor.from_tensor, torch.float32

        def go(inputs: Any, out: Any) -> None:
            a, b = inputs[0], inputs[1]
            if (a.data_ptr() | b.data_ptr()) & 15:  # TMA reads from 16-byte-aligned addresses only: a view
                a, b = _aligned(a), _aligned(b)  # at an odd offset is copied to a fresh (aligned) block
            cc = out if s == 1 else torch.empty((ws_rows, n), dtype=f32, device=a.device)
            if not fl.launch(a, b, cc):
                fl.first(td(a, a_block, lay), td(b, b_block, lay), td(cc, c_block, c_lay))
            if s > 1 and not red.launch(cc, out):
                red.first(cc, out)

        go.fast = fl  # type: ignore[attr-defined]
        return go

    def run(self, built: dict[str, Any], inputs: Any, out: Any) -> None:
        a, b = inputs[0], inputs[1]
        shape = (a.shape[0], b.shape[1] if b_kn(built["dtype"]) else b.shape[0], a.shape[1])
        self.launcher(built, shape, built["dtype"])(inputs, out)


def _aligned(t: Any) -> Any:
    """``t`` if its address is a multiple of 16 bytes, else a copy in a fresh block (which is)."""
    return t if t.data_ptr() % 16 == 0 else t.clone()


def b_kn_tensor(a: Any) -> bool:
    """B's form from A's dtype (the reference sees tensors, not the dtype name): [K, N] unless fp32."""
    import torch

    return a.dtype != torch.float32


_SMS: dict[int, int] = {}


def _sm_count() -> int:
    """SMs of the current GPU (the persistent grid); the sm_90 profile's count where there is none."""
    import torch

    if not torch.cuda.is_available():
        return _ARCH.sm_count
    dev = torch.cuda.current_device()
    if dev not in _SMS:
        _SMS[dev] = torch.cuda.get_device_properties(dev).multi_processor_count
    return _SMS[dev]


def run_tl(
    inputs: Any,
    out: Any,
    bm: int = 128,
    bn: int = 256,
    bk: int = 64,
    stages: int = 3,
    warps: int = 8,
) -> None:
    """The plain-Triton baseline (``tl.dot``; Triton pipelines and lays out shared memory itself), on the
    spec's inputs (B [K, N] for 16-bit, [N, K] for fp32)."""
    import torch

    a, b = inputs[0], inputs[1]
    m, k = a.shape
    kn = a.dtype != torch.float32
    n = b.shape[1] if kn else b.shape[0]
    grid = (_cdiv(m, bm) * _cdiv(n, bn),)
    matmul_tl[grid](a, b, out, m, n, k, bm, bn, bk, 8, not kn, kn, num_warps=warps, num_stages=stages)


# the module is the spec the registry loads (autopad.kernels_registry.BUILTIN): expose SPEC's names
SPEC = MatmulGluon()
NAME, BACKEND, DTYPES, SPACE = SPEC.NAME, SPEC.BACKEND, SPEC.DTYPES, SPEC.SPACE
DEFAULTS, LAYOUT_KEYS, PATTERN_KEYS, RESTRICTIONS = (
    SPEC.DEFAULTS,
    SPEC.LAYOUT_KEYS,
    SPEC.PATTERN_KEYS,
    SPEC.RESTRICTIONS,
)
SOURCE_FILES = SPEC.SOURCE_FILES
BASELINE_TL, TOLERANCE = SPEC.BASELINE_TL, SPEC.TOLERANCE
legal, layout, smem_pattern, launch_info, traffic = (
    SPEC.legal,
    SPEC.layout,
    SPEC.smem_pattern,
    SPEC.launch_info,
    SPEC.traffic,
)
textbook, check_shape, inputs_from, launcher = (
    SPEC.textbook,
    SPEC.check_shape,
    SPEC.inputs_from,
    SPEC.launcher,
)
make_inputs, alloc_output, expected, check = SPEC.make_inputs, SPEC.alloc_output, SPEC.expected, SPEC.check
build, run, cache_source = SPEC.build, SPEC.run, SPEC.cache_source


def reference(inputs: Any) -> Any:
    """The fp64 answer from an inputs tuple (the older module-level form some scripts still call)."""
    return SPEC.expected(inputs)[0]
