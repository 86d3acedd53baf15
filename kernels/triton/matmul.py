"""Hopper GEMM in Gluon (TMA -> NVMMA-swizzled shared memory -> wgmma), and the plain ``tl.dot`` baseline.

``C[M, N] = A[M, K] @ B`` with B as the caller holds it: ``[K, N]`` row-major for bf16 and fp16 (wgmma
reads a 16-bit B tile in either majorness, so TMA loads ``[BK, BN]`` tiles of the user's tensor and no
copy is made), ``[N, K]`` for tf32 (wgmma's tf32 needs a K-major B: ``inputs_from`` transposes B once,
the only copy left; ``autopad.ops.matmul`` never takes this path, float32 goes to the CUDA kernel).
Dtypes: bf16 and fp16 (bf16/fp16 out, fp32 accumulate) and tf32 (fp32 in and out, tf32 products).

Shared memory: A, B and C tiles live in ``gl.NVMMASharedLayout`` with ``SWIZZLE`` bytes of XOR swizzle
(32, 64, 128). TMA writes the operand tiles and wgmma reads them, neither through the load/store unit, so
bank conflicts there are the hardware's business: the swizzle width sets how many TMA messages and wgmma
descriptors a tile needs. What autopad's bank model does see is the epilogue: the accumulator (wgmma's
register layout) stored to the C tile in shared memory before the TMA store. There the swizzle matters
the usual way: an unswizzled 128-byte-row tile puts the 8 row-groups of a warp's stores in the same banks.

Pipeline: a ring of ``STAGES`` A/B buffers, one mbarrier each; ``STAGES - 1`` tiles are in flight while
wgmma (asynchronous, one group kept outstanding) works on the current one; programs are ordered in groups
of ``GROUP_M`` row-blocks so neighbouring programs share A and B tiles in L2. Two variants enter as
constants, each with a ``legal`` that keeps it to the shapes where it can pay:

* ``SPLIT_K`` (1, 2, 4): when the output has fewer tiles than SMs (decode-like M = 128), each program
  reduces a 1/SPLIT_K slice of K into an fp32 workspace and a small Triton kernel sums the slices into C.
  The model is charged the workspace's bytes (written and read once) through ``dram_efficiency``.
* ``PERSIST`` (0, 1): one program per SM walks its tiles as one flattened (tile, k) loop, so the loads of
  the next tile are in flight during this tile's epilogue, and the TMA store of tile t drains while tile
  t + 1 computes (the C tile gets its own buffer: the ring stays live). Worth it when K is short and the
  epilogue is a large share of a tile's time (3000x5000x1000). The model sees the same tile geometry as
  the plain kernel (the overlap is invisible to it), so both are measured.

Constants: ``BM, BN, BK, STAGES, WARPS, SWIZZLE, GROUP_M, SPLIT_K, PERSIST``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from autopad.access import Instruction
from autopad.arch import get_arch
from autopad.bases import Inputs, Out, TritonKernel
from autopad.layouts import Legality, Swizzled

try:  # triton is optional: enumeration and scoring need numpy only
    import triton
    import triton.language as tl
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.hopper import (
        fence_async_shared,
        mbarrier,
        tma,
        warpgroup_mma,
        warpgroup_mma_wait,
    )

    HAS_TRITON = True
except ImportError:  # pragma: no cover
    HAS_TRITON = False

_ARCH = get_arch("sm_90")
_EB = {"bfloat16": 2, "float16": 2, "tf32": 4}
_REDUCE_BLOCK = 1024


def b_kn(dtype: str) -> bool:
    """True when the kernel reads B as the user holds it, ``[K, N]`` (16-bit); False for tf32 (``[N, K]``)."""
    return _EB[dtype] == 2


def c_bytes(c: dict[str, int], dtype: str) -> int:
    """Bytes per element of the C tile in shared memory: fp32 partial sums under split-K."""
    return 4 if c.get("SPLIT_K", 1) > 1 else _EB[dtype]


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _wgmma_warps(bm: int, warps: int) -> tuple[int, int]:
    """warps_per_cta for the accumulator: 4-warp atom along M, doubled along M while M has 16-row slabs."""
    wm, wn = 4, 1
    while wm * wn < warps:
        if bm > 16 * wm:
            wm *= 2
        else:
            wn *= 2
    return wm, wn


def smem_bytes(c: dict[str, int], dtype: str) -> int:
    """A/B ring with one 8-byte mbarrier per stage, then the C tile: in the dead ring's place (Triton's
    allocator reuses it) or, persistent, beside it (the ring stays live across tiles). Matches the
    compiler's ``metadata.shared`` on every legal candidate (checked by compiling them for sm_90)."""
    eb = _EB[dtype]
    ring = c["STAGES"] * (c["BM"] + c["BN"]) * c["BK"] * eb + 8 * c["STAGES"]
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
        "PERSIST": (0, 1),
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
    }
    LAYOUT_KEYS = ("SWIZZLE",)
    PATTERN_KEYS = ("BM", "BN", "WARPS", "SWIZZLE", "SPLIT_K")  # what the epilogue's stores depend on
    # cheap necessary conditions of ``legal`` over the whole space (E: element bytes)
    RESTRICTIONS = (
        "SWIZZLE > 0",
        "BM * BN // (32 * WARPS) <= 128",
        "(BK * E) % max(SWIZZLE, 1) == 0 and (BN * E) % max(SWIZZLE, 1) == 0",
        f"STAGES * (BM + BN) * BK * E <= {_ARCH.smem_per_block}",
        "PERSIST == 0 or SPLIT_K == 1",
    )
    FLOPS = "2 * M * N * K"
    KERNEL = staticmethod(lambda: matmul_gluon)
    NUM_WARPS = "WARPS"
    TOLERANCE = {"bfloat16": 1e-2, "float16": 3e-3, "float32": 3e-3}
    BASELINE_TL = {"BM": 128, "BN": 256, "BK": 64, "STAGES": 3, "WARPS": 8}

    # ---- the tuner's side (numpy only) ------------------------------------------------------------------

    def check_shape(self, shape: tuple[int, ...]) -> None:
        if len(shape) != 3:
            raise ValueError(f"shape: matmul takes (M, N, K), got {tuple(shape)!r}")

    def textbook(self, shape: tuple[int, ...], dtype: str) -> dict[str, int]:
        """Triton's default NVMMA choice: the widest swizzle the tile's K extent allows."""
        return dict(self.DEFAULTS)

    def smem_bytes(self, constants: dict[str, int], dtype: str) -> int:
        return smem_bytes(constants, dtype)

    def layout(self, constants: dict[str, int], dtype: str) -> Swizzled:
        """The C tile's NVMMA swizzle as autopad's Swizzled over ``SWIZZLE``-byte rows (column blocks
        stacked). NVMMA swizzle S bytes: 16-byte chunk j of the 128-byte line L is stored at
        ``j ^ (L % (S/16))``; with S-byte rows that is ``sw_vec = 16 / eb``, ``per_phase = 128 / S``,
        ``max_phase = S / 16``. Under split-K the tile holds fp32 partial sums."""
        c = constants
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
        if (k * eb) % 16 or (n * eb) % 16:
            return Legality(
                False, f"TMA needs 16-byte-aligned row strides: K*{eb} and N*{eb} must be multiples of 16"
            )
        if c["SWIZZLE"] == 0:
            return Legality(
                False,
                "Triton 3.6 cannot lower an unswizzled NVMMA tile here ('Failed to find a valid layout')",
            )
        if c["BM"] < 64 or c["WARPS"] < 4:
            return Legality(False, "wgmma needs a warpgroup: BM >= 64 and 4+ warps")
        if c["BM"] * c["BN"] // (32 * c["WARPS"]) > 128:
            return Legality(False, "accumulator over 128 fp32 registers per thread: spills")
        kb = c["BK"] * eb
        if kb % c["SWIZZLE"]:
            return Legality(
                False, f"K tile of {kb} bytes is not a whole number of {c['SWIZZLE']}-byte swizzle rows"
            )
        if (c["BN"] * eb) % c["SWIZZLE"]:
            return Legality(False, "C tile row is not a whole number of swizzle rows")
        budget = _ARCH.smem_per_block
        if smem_bytes(c, dtype) > budget:
            return Legality(False, f"{smem_bytes(c, dtype)} bytes of shared memory exceed {budget}")
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
            if tiles <= _ARCH.sm_count:
                return Legality(
                    False, "persistent needs more output tiles than SMs (one tile each otherwise)"
                )
        return Legality(True)

    def smem_pattern(self, constants: dict[str, int], dtype: str) -> tuple[Instruction, ...]:
        """The epilogue's shared stores of the accumulator (wgmma layout) into the C tile, per warp.

        wgmma's accumulator: warp w of a warpgroup owns rows 16 w .. 16 w + 15 of each 64-row slab; lane l
        holds rows ``l // 4`` and ``l // 4 + 8``, columns ``8 j + 2 (l % 4) + {0, 1}``. For 16-bit outputs
        Triton emits ``stmatrix.x4`` (seen in the PTX): lane l gives the 16-byte row ``l % 8`` of 8x8
        matrix ``l // 8`` (matrices: rows +0/+8, columns +0/+8 of a 16x16 block), one 8-lane phase per
        matrix. For fp32 (tf32, or split-K's partial sums) it emits ``st.shared.v2.b32``: each lane stores
        its two neighbouring columns, 8 bytes. Built for all warps, row repeats and column steps at once.
        """
        c = constants
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
        """Blocks, threads, shared memory; under split-K the workspace's extra bytes as an efficiency.

        A persistent kernel reports the same tile geometry as the plain one (one tile per block): the
        predictor's wave term then charges the tile quantisation that persistence does not remove."""
        c = constants
        m, n, k = shape
        tiles = _cdiv(m, c["BM"]) * _cdiv(n, c["BN"])
        s = c.get("SPLIT_K", 1)
        info = {
            "blocks": tiles * s,
            "threads": 32 * c["WARPS"],
            "smem_bytes": smem_bytes(c, dtype),
            "tiles_per_block": 1,
        }
        if s > 1:
            base = self.traffic(shape, dtype)["bytes"]
            extra = 2 * s * _cdiv(m, c["BM"]) * c["BM"] * n * 4  # partial sums written, then read back
            info["dram_efficiency"] = base / (base + extra)
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

    def build(self, constants: dict[str, int], dtype: str) -> dict[str, Any]:
        c = dict(constants)
        persistent = bool(c.get("PERSIST", 0))
        return {
            "kernel": matmul_gluon_persistent if persistent else matmul_gluon,
            "constants": c,
            "dtype": dtype,
            "layout": nvmma(c["SWIZZLE"], dtype),
            "c_layout": nvmma(c["SWIZZLE"], "tf32" if c.get("SPLIT_K", 1) > 1 else dtype),
        }

    def launcher(
        self, built: dict[str, Any], shape: tuple[int, ...], dtype: str, kn: bool | None = None
    ) -> Any:
        """Everything shape-dependent done once (grid, block shapes, layouts, the workspace's shape); a call
        makes the three host-side TMA descriptors (they hold the pointers) and launches. ``kn`` overrides
        B's form (False: a 16-bit B given as [N, K], to compare with the previous kernel)."""
        from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

        c = built["constants"]
        m, n, k = shape
        bm, bn, bk, s = c["BM"], c["BN"], c["BK"], c.get("SPLIT_K", 1)
        kn = b_kn(dtype) if kn is None else kn
        lay, c_lay = built["layout"], built["c_layout"]
        tiles = _cdiv(m, bm) * _cdiv(n, bn)
        kernel = built["kernel"]
        a_block, b_block, c_block = [bm, bk], ([bk, bn] if kn else [bn, bk]), [bm, bn]
        ws_rows = s * _cdiv(m, bm) * bm
        opts = {"num_warps": c["WARPS"]}
        if c.get("PERSIST", 0):
            grid: tuple[int, ...] = (min(tiles, _sm_count()),)
            extra = (c["STAGES"], c["GROUP_M"], kn)
        else:
            grid = (tiles * s,)
            extra = (c["STAGES"], c["GROUP_M"], s, kn)
        red_grid = (_cdiv(m * n, _REDUCE_BLOCK),)

        def go(inputs: Any, out: Any) -> None:
            import torch

            a, b = inputs[0], inputs[1]
            a_desc = TensorDescriptor.from_tensor(a, a_block, lay)
            b_desc = TensorDescriptor.from_tensor(b, b_block, lay)
            if s == 1:
                c_desc = TensorDescriptor.from_tensor(out, c_block, c_lay)
                kernel[grid](a_desc, b_desc, c_desc, m, n, k, *extra, **opts)
                return
            ws = torch.empty((ws_rows, n), dtype=torch.float32, device=a.device)
            c_desc = TensorDescriptor.from_tensor(ws, c_block, c_lay)
            kernel[grid](a_desc, b_desc, c_desc, m, n, k, *extra, **opts)
            splitk_reduce[red_grid](ws, out, m * n, ws_rows // s * n, s, _REDUCE_BLOCK, num_warps=4)

        return go

    def run(self, built: dict[str, Any], inputs: Any, out: Any) -> None:
        a, b = inputs[0], inputs[1]
        shape = (a.shape[0], b.shape[1] if b_kn(built["dtype"]) else b.shape[0], a.shape[1])
        self.launcher(built, shape, built["dtype"])(inputs, out)


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


if HAS_TRITON:

    @gluon.constexpr_function
    def _acc_layout(bm, bn, warps, kbits):
        # self-contained (a constexpr function may not call module helpers): same rule as _wgmma_warps
        wm, wn = 4, 1
        while wm * wn < warps:
            if bm > 16 * wm:
                wm *= 2
            else:
                wn *= 2
        n = min(256, bn // wn)
        while bn % n or n % 8:
            n -= 8
        return gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[wm, wn], instr_shape=[16, n, 256 // kbits]
        )

    @gluon.jit
    def _tile_offsets(tile, n_m, n_n, BM: gl.constexpr, BN: gl.constexpr, GROUP_M: gl.constexpr):
        # grouped order: GROUP_M row-blocks share each B column-block while it is in L2
        per_group = GROUP_M * n_n
        first_m = (tile // per_group) * GROUP_M
        gsize = gl.minimum(n_m - first_m, GROUP_M)
        off_m = (first_m + (tile % per_group) % gsize) * BM
        off_n = ((tile % per_group) // gsize) * BN
        return off_m, off_n

    @gluon.jit
    def _load_ab(a_desc, b_desc, bar, a_buf, b_buf, off_m, off_n, kk, pred, B_KN: gl.constexpr):
        mbarrier.expect(bar, a_desc.block_type.nbytes + b_desc.block_type.nbytes, pred=pred)
        tma.async_copy_global_to_shared(a_desc, [off_m, kk], bar, a_buf, pred=pred)
        if B_KN:  # B [K, N]: a [BK, BN] tile, N-major in shared memory; wgmma takes it as is
            tma.async_copy_global_to_shared(b_desc, [kk, off_n], bar, b_buf, pred=pred)
        else:  # B [N, K]: a [BN, BK] tile, K-major; wgmma takes its transposed view
            tma.async_copy_global_to_shared(b_desc, [off_n, kk], bar, b_buf, pred=pred)

    @gluon.jit
    def _b_operand(b_buf, B_KN: gl.constexpr):
        if B_KN:
            return b_buf
        else:
            return b_buf.permute((1, 0))

    @gluon.jit
    def matmul_gluon(
        a_desc,
        b_desc,
        c_desc,
        M,
        N,
        K,
        STAGES: gl.constexpr,
        GROUP_M: gl.constexpr,
        SPLIT_K: gl.constexpr,
        B_KN: gl.constexpr,
        num_warps: gl.constexpr,
    ):
        BM: gl.constexpr = c_desc.block_type.shape[0]
        BN: gl.constexpr = c_desc.block_type.shape[1]
        BK: gl.constexpr = a_desc.block_type.shape[1]
        dtype: gl.constexpr = a_desc.dtype
        pid = gl.program_id(0)
        n_m = gl.cdiv(M, BM)
        n_n = gl.cdiv(N, BN)
        tiles = n_m * n_n
        split = pid // tiles  # split-major: programs of one split read the same slice of A
        off_m, off_n = _tile_offsets(pid % tiles, n_m, n_n, BM, BN, GROUP_M)
        k_all = gl.cdiv(K, BK)
        per_split = gl.cdiv(k_all, SPLIT_K)
        k_first = split * per_split
        k_tiles = gl.minimum(per_split, k_all - k_first)

        a_bufs = gl.allocate_shared_memory(dtype, [STAGES] + a_desc.block_type.shape, a_desc.layout)
        b_bufs = gl.allocate_shared_memory(dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
        bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        for i in gl.static_range(STAGES):
            mbarrier.init(bars.index(i), count=1)
        for i in gl.static_range(STAGES - 1):  # prologue: fill STAGES - 1 buffers
            _load_ab(a_desc, b_desc, bars.index(i), a_bufs.index(i), b_bufs.index(i), off_m, off_n,
                     (k_first + i) * BK, i < k_tiles, B_KN)  # fmt: skip

        acc_layout: gl.constexpr = _acc_layout(BM, BN, num_warps, dtype.primitive_bitwidth)
        acc = gl.zeros((BM, BN), dtype=gl.float32, layout=acc_layout)
        for kt in range(k_tiles):
            s = kt % STAGES
            mbarrier.wait(bars.index(s), (kt // STAGES) & 1)
            acc = warpgroup_mma(a_bufs.index(s), _b_operand(b_bufs.index(s), B_KN), acc, is_async=True)
            # keep one wgmma in flight: the one of step kt-1 is done, so its buffer may be refilled
            acc = warpgroup_mma_wait(num_outstanding=1, deps=(acc,))
            nk = kt + STAGES - 1
            ns = nk % STAGES
            _load_ab(a_desc, b_desc, bars.index(ns), a_bufs.index(ns), b_bufs.index(ns), off_m, off_n,
                     (k_first + nk) * BK, nk < k_tiles, B_KN)  # fmt: skip
        acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
        for i in gl.static_range(STAGES):
            mbarrier.invalidate(bars.index(i))

        # epilogue: registers -> swizzled C tile (the st.shared autopad scores) -> TMA store. Split-K
        # writes fp32 partial sums to rows split * (n_m * BM) + off_m of the workspace (padded to whole
        # tiles per split, so a tile never spills into the next split's rows)
        c_smem = gl.allocate_shared_memory(c_desc.dtype, [BM, BN], c_desc.layout)
        c_smem.store(acc.to(c_desc.dtype))
        fence_async_shared()
        tma.async_copy_shared_to_global(c_desc, [split * (n_m * BM) + off_m, off_n], c_smem)
        tma.store_wait(pendings=0)

    @gluon.jit
    def matmul_gluon_persistent(
        a_desc,
        b_desc,
        c_desc,
        M,
        N,
        K,
        STAGES: gl.constexpr,
        GROUP_M: gl.constexpr,
        B_KN: gl.constexpr,
        num_warps: gl.constexpr,
    ):
        BM: gl.constexpr = c_desc.block_type.shape[0]
        BN: gl.constexpr = c_desc.block_type.shape[1]
        BK: gl.constexpr = a_desc.block_type.shape[1]
        dtype: gl.constexpr = a_desc.dtype
        pid = gl.program_id(0)
        nprog = gl.num_programs(0)
        n_m = gl.cdiv(M, BM)
        n_n = gl.cdiv(N, BN)
        k_tiles = gl.cdiv(K, BK)
        my_tiles = gl.cdiv(n_m * n_n - pid, nprog)  # tiles pid, pid + nprog, ...
        total = my_tiles * k_tiles  # one flattened (tile, k) loop: loads run ahead across tiles

        a_bufs = gl.allocate_shared_memory(dtype, [STAGES] + a_desc.block_type.shape, a_desc.layout)
        b_bufs = gl.allocate_shared_memory(dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
        c_smem = gl.allocate_shared_memory(c_desc.dtype, [BM, BN], c_desc.layout)
        bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        for i in gl.static_range(STAGES):
            mbarrier.init(bars.index(i), count=1)
        for i in gl.static_range(STAGES - 1):
            lm, ln = _tile_offsets(pid + (i // k_tiles) * nprog, n_m, n_n, BM, BN, GROUP_M)
            _load_ab(a_desc, b_desc, bars.index(i), a_bufs.index(i), b_bufs.index(i), lm, ln,
                     (i % k_tiles) * BK, i < total, B_KN)  # fmt: skip

        acc_layout: gl.constexpr = _acc_layout(BM, BN, num_warps, dtype.primitive_bitwidth)
        acc = gl.zeros((BM, BN), dtype=gl.float32, layout=acc_layout)
        for it in range(total):
            kt = it % k_tiles
            s = it % STAGES
            mbarrier.wait(bars.index(s), (it // STAGES) & 1)
            # use_acc False on a tile's first step: the accumulator restarts without a zeroing pass
            acc = warpgroup_mma(
                a_bufs.index(s), _b_operand(b_bufs.index(s), B_KN), acc, use_acc=kt != 0, is_async=True
            )
            acc = warpgroup_mma_wait(num_outstanding=1, deps=(acc,))
            nx = it + STAGES - 1  # refill the buffer of step it - 1 (done), possibly for the next tile
            ns = nx % STAGES
            lm, ln = _tile_offsets(pid + (nx // k_tiles) * nprog, n_m, n_n, BM, BN, GROUP_M)
            _load_ab(a_desc, b_desc, bars.index(ns), a_bufs.index(ns), b_bufs.index(ns), lm, ln,
                     (nx % k_tiles) * BK, nx < total, B_KN)  # fmt: skip
            if kt == k_tiles - 1:  # the tile's last step: epilogue while the next tile's loads fly
                acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
                om, on = _tile_offsets(pid + (it // k_tiles) * nprog, n_m, n_n, BM, BN, GROUP_M)
                tma.store_wait(pendings=0)  # the previous tile's TMA store has read c_smem
                c_smem.store(acc.to(c_desc.dtype))
                fence_async_shared()
                tma.async_copy_shared_to_global(c_desc, [om, on], c_smem)
        tma.store_wait(pendings=0)
        for i in gl.static_range(STAGES):
            mbarrier.invalidate(bars.index(i))

    @triton.jit
    def splitk_reduce(ws_ptr, c_ptr, MN, SPLIT_STRIDE, SPLIT_K: tl.constexpr, BLOCK: tl.constexpr):
        # C (row-major, M x N) = sum over splits of the workspace's first M x N elements of each split
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < MN
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for s in tl.static_range(SPLIT_K):
            acc += tl.load(ws_ptr + s * SPLIT_STRIDE + offs, mask=mask, other=0.0)
        tl.store(c_ptr + offs, acc.to(c_ptr.dtype.element_ty), mask=mask)

    @triton.jit
    def matmul_tl(
        a_ptr,
        b_ptr,
        c_ptr,
        M,
        N,
        K,
        BM: tl.constexpr,
        BN: tl.constexpr,
        BK: tl.constexpr,
        GROUP_M: tl.constexpr,
        TF32: tl.constexpr,
        K_TILES: tl.constexpr,
        B_KN: tl.constexpr,
    ):
        pid = tl.program_id(0)
        n_m = tl.cdiv(M, BM)
        n_n = tl.cdiv(N, BN)
        per_group = GROUP_M * n_n
        first_m = (pid // per_group) * GROUP_M
        gsize = min(n_m - first_m, GROUP_M)
        pm = first_m + (pid % per_group) % gsize
        pn = (pid % per_group) // gsize
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K_TILES):  # constexpr trip count (also runs under TRITON_INTERPRET)
            kk = k * BK + rk
            a = tl.load(
                a_ptr + rm[:, None] * K + kk[None, :], mask=(rm < M)[:, None] & (kk < K)[None, :], other=0
            )
            b_off = kk[:, None] * N + rn[None, :] if B_KN else rn[None, :] * K + kk[:, None]
            b = tl.load(b_ptr + b_off, mask=(rn < N)[None, :] & (kk < K)[:, None], other=0)
            acc = tl.dot(a, b, acc, input_precision="tf32" if TF32 else None)
        tl.store(
            c_ptr + rm[:, None] * N + rn[None, :],
            acc.to(c_ptr.dtype.element_ty),
            mask=(rm < M)[:, None] & (rn < N)[None, :],
        )


def nvmma(swizzle: int, dtype: str) -> Any:
    return gl.NVMMASharedLayout(swizzle_byte_width=swizzle, element_bitwidth=8 * _EB[dtype], rank=2)


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
    matmul_tl[grid](
        a, b, out, m, n, k, bm, bn, bk, 8, not kn, _cdiv(k, bk), kn, num_warps=warps, num_stages=stages
    )


# the module is the spec the registry loads (autopad.kernels_registry.BUILTIN): expose SPEC's names
SPEC = MatmulGluon()
NAME, BACKEND, DTYPES, SPACE = SPEC.NAME, SPEC.BACKEND, SPEC.DTYPES, SPEC.SPACE
DEFAULTS, LAYOUT_KEYS, PATTERN_KEYS, RESTRICTIONS = (
    SPEC.DEFAULTS,
    SPEC.LAYOUT_KEYS,
    SPEC.PATTERN_KEYS,
    SPEC.RESTRICTIONS,
)
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
