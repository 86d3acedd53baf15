"""Hopper GEMM in Gluon (TMA -> NVMMA-swizzled shared memory -> wgmma), and the plain ``tl.dot`` baseline.

``C[M, N] = A[M, K] @ B[N, K]^T`` (B stored K-major, the ``nn.Linear`` weight convention; both operands
K-major is what wgmma needs for tf32, and cuBLAS runs the same "TN" problem as fast as any). Dtypes:
bf16 and fp16 (bf16/fp16 out, fp32 accumulate) and tf32 (fp32 in and out, tf32 tensor-core products).

Shared memory: A and B tiles live in ``gl.NVMMASharedLayout`` with ``SWIZZLE`` bytes of XOR swizzle
(0, 32, 64, 128). The tensor-memory-access engine (TMA) writes them and wgmma reads them, neither through
the load/store unit, so bank conflicts there are the hardware's business: the swizzle width instead sets
how many TMA messages and wgmma descriptors a tile needs (128 bytes is one message per 128-byte row
segment). What autopad's bank model does see is the epilogue: the accumulator (wgmma's register layout)
stored to the C tile in shared memory before the TMA store. There the swizzle matters the usual way: an
unswizzled 128-byte-row tile puts the 8 row-groups of a warp's stores in the same banks.

Pipeline: a ring of ``STAGES`` A/B buffers, one mbarrier each; ``STAGES - 1`` tiles are in flight while
wgmma (asynchronous, one group kept outstanding) works on the current one; programs are ordered in groups
of ``GROUP_M`` row-blocks so neighbouring programs share A and B tiles in L2.
Constants: ``BM, BN, BK, STAGES, WARPS, SWIZZLE, GROUP_M``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from autopad.access import Instruction
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

NAME = "matmul"
BACKEND = "triton"
DTYPES = ("bfloat16", "float16", "tf32")
SPACE: dict[str, tuple[int, ...]] = {
    "BM": (64, 128),
    "BN": (64, 128, 256),
    "BK": (32, 64, 128),
    "STAGES": (2, 3, 4, 5),
    "WARPS": (4, 8),
    "SWIZZLE": (0, 32, 64, 128),
    "GROUP_M": (8,),
}
LAYOUT_KEYS = ("SWIZZLE",)
DEFAULTS = {"BM": 128, "BN": 256, "BK": 64, "STAGES": 3, "WARPS": 8, "SWIZZLE": 128, "GROUP_M": 8}
BASELINE_TL = {"BM": 128, "BN": 256, "BK": 64, "STAGES": 3, "WARPS": 8}
_EB = {"bfloat16": 2, "float16": 2, "tf32": 4}
_SMEM_BUDGET = 227 * 1024


def textbook(shape: tuple[int, ...], dtype: str) -> dict[str, int]:
    """Triton's default NVMMA choice: the widest swizzle the tile's K extent allows."""
    return dict(DEFAULTS)


def _wgmma_warps(bm: int, warps: int) -> tuple[int, int]:
    """warps_per_cta for the accumulator: 4-warp atom along M, doubled along M while M has 16-row slabs."""
    wm, wn = 4, 1
    while wm * wn < warps:
        if bm > 16 * wm:
            wm *= 2
        else:
            wn *= 2
    return wm, wn


def _instr_n(bm: int, bn: int, warps: int) -> int:
    wm, wn = _wgmma_warps(bm, warps)
    n = min(256, bn // wn)
    while bn % n or n % 8:
        n -= 8
    return n


def smem_bytes(c: dict[str, int], dtype: str) -> int:
    """A/B ring or C tile (Triton reuses the dead ring for the epilogue) + one 8-byte mbarrier per stage."""
    eb = _EB[dtype]
    ring = c["STAGES"] * (c["BM"] + c["BN"]) * c["BK"] * eb
    return max(ring, c["BM"] * c["BN"] * eb) + 8 * c["STAGES"]


def legal(c: dict[str, int], shape: tuple[int, ...], dtype: str) -> Legality:
    if dtype not in DTYPES:
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
            False, "Triton 3.6 cannot lower an unswizzled NVMMA tile here ('Failed to find a valid layout')"
        )
    if c["BM"] < 64 or c["WARPS"] < 4:
        return Legality(False, "wgmma needs a warpgroup: BM >= 64 and 4+ warps")
    if c["BM"] * c["BN"] // (32 * c["WARPS"]) > 128:
        return Legality(False, "accumulator over 128 fp32 registers per thread: spills")
    kb = c["BK"] * eb
    if kb > 256 and c["SWIZZLE"] == 0:
        return Legality(False, "unswizzled K rows over 256 bytes")
    if c["SWIZZLE"] and kb % c["SWIZZLE"]:
        return Legality(
            False, f"K tile of {kb} bytes is not a whole number of {c['SWIZZLE']}-byte swizzle rows"
        )
    if c["SWIZZLE"] and (c["BN"] * eb) % c["SWIZZLE"]:
        return Legality(False, "C tile row is not a whole number of swizzle rows")
    if smem_bytes(c, dtype) > _SMEM_BUDGET:
        return Legality(False, f"{smem_bytes(c, dtype)} bytes of shared memory exceed {_SMEM_BUDGET}")
    return Legality(True)


def layout(c: dict[str, int], dtype: str) -> Swizzled:
    """The C tile's NVMMA swizzle as autopad's Swizzled over ``SWIZZLE``-byte rows (column blocks stacked).

    NVMMA swizzle S bytes: 16-byte chunk j of the 128-byte line L is stored at ``j ^ (L % (S/16))``; with
    S-byte rows that is ``sw_vec = 16 / eb``, ``per_phase = 128 / S``, ``max_phase = S / 16``.
    """
    eb = _EB[dtype]
    s = c["SWIZZLE"]
    width = (s // eb) if s else c["BN"]
    blocks = c["BN"] // width
    if not s:
        return Swizzled(c["BM"] * blocks, width, eb)
    return Swizzled(c["BM"] * blocks, width, eb, sw_vec=16 // eb, per_phase=128 // s, max_phase=s // 16)


def smem_pattern(c: dict[str, int], dtype: str) -> tuple[Instruction, ...]:
    """The epilogue's shared stores of the accumulator (wgmma layout) into the C tile, per warp.

    wgmma's accumulator: warp w of a warpgroup owns rows 16 w .. 16 w + 15 of each 64-row slab; lane l
    holds rows ``l // 4`` and ``l // 4 + 8``, columns ``8 j + 2 (l % 4) + {0, 1}``. For 16-bit outputs
    Triton emits ``stmatrix.x4`` (seen in the PTX): lane l gives the 16-byte row ``l % 8`` of 8x8 matrix
    ``l // 8`` (matrices: rows +0/+8, columns +0/+8 of a 16x16 block), one 8-lane phase per matrix. For
    fp32 (tf32) it emits ``st.shared.v2.b32``: each lane stores its two neighbouring columns, 8 bytes.
    """
    eb = _EB[dtype]
    lay = layout(c, dtype)
    width = lay.cols
    wm, wn = _wgmma_warps(c["BM"], c["WARPS"])
    lane = np.arange(32)
    out = []
    rows_per_rep = 16 * wm
    cols_per_warp = c["BN"] // wn

    def put(name: str, nbytes: int, r: np.ndarray, col: np.ndarray) -> None:
        # stacked column blocks of the NVMMA tile: (r, col) -> (block * BM + r, col % width)
        out.append(Instruction(name, "store", nbytes, (col // width) * c["BM"] + r, col % width))

    for w in range(c["WARPS"]):
        wr, wc = w % wm, w // wm
        for rep in range(c["BM"] // rows_per_rep):
            r0 = rep * rows_per_rep + 16 * wr
            if eb == 2:
                q = lane // 8
                for j in range(cols_per_warp // 16):
                    put(
                        f"w{w} r{rep} j{j}",
                        16,
                        r0 + (q % 2) * 8 + lane % 8,
                        wc * cols_per_warp + 16 * j + (q // 2) * 8,
                    )
            else:
                for half in (0, 8):
                    for j in range(cols_per_warp // 8):
                        put(
                            f"w{w} r{rep} h{half} j{j}",
                            2 * eb,
                            r0 + lane // 4 + half,
                            wc * cols_per_warp + 8 * j + 2 * (lane % 4),
                        )
    return tuple(out)


def launch_info(c: dict[str, int], shape: tuple[int, ...], dtype: str) -> dict[str, int]:
    m, n, _ = shape
    blocks = -(-m // c["BM"]) * -(-n // c["BN"])
    return {
        "blocks": blocks,
        "threads": 32 * c["WARPS"],
        "smem_bytes": smem_bytes(c, dtype),
        "tiles_per_block": 1,
    }


def traffic(shape: tuple[int, ...], dtype: str) -> dict[str, int]:
    m, n, k = shape
    eb = _EB[dtype]
    return {"bytes": (m * k + n * k + m * n) * eb, "flops": 2 * m * n * k}


# --------------------------------------------------------------------------------------------------------
# torch / triton side


def _tdt(dtype: str) -> Any:
    import torch

    return torch.float32 if dtype == "tf32" else getattr(torch, dtype)


def make_inputs(
    shape: tuple[int, ...], dtype: str, device: str = "cuda", seed: int = 0, dist: str = "uniform"
) -> tuple[Any, ...]:
    import torch

    m, n, k = shape
    g = torch.Generator(device="cpu").manual_seed(seed)
    a = torch.randn(m, k, generator=g)
    b = torch.randn(n, k, generator=g)
    if dist == "skewed":  # a few huge rows/cols: relative error must hold on non-uniform magnitudes
        a[:: max(1, m // 7)] *= 64
        b[:, :: max(1, k // 5)] *= 0.01
    return a.to(_tdt(dtype)).to(device), b.to(_tdt(dtype)).to(device)


def inputs_from(a: Any, b: Any) -> tuple[Any, Any]:
    """``autopad.ops.matmul(a, b)`` with b [K, N]: this kernel reads B as [N, K] (K-major for wgmma)."""
    return a, b.t().contiguous()


def alloc_output(inputs: tuple[Any, ...], constants: dict[str, int] | None = None) -> Any:
    import torch

    a, b = inputs
    return torch.empty(a.shape[0], b.shape[0], dtype=a.dtype, device=a.device)


def reference(inputs: tuple[Any, ...]) -> Any:
    """fp64 product of the exact inputs (on the inputs' device)."""
    a, b = inputs
    return a.double() @ b.double().T


def tolerance(dtype: str) -> float:
    """Relative Frobenius error allowed: bf16 output rounding ~2^-9, fp16 ~2^-11, tf32 products ~2^-11."""
    return {"bfloat16": 1e-2, "float16": 3e-3, "tf32": 3e-3}[dtype]


def check(out: Any, ref: Any) -> tuple[bool, str]:
    import torch

    if out.shape != ref.shape:
        return False, f"shape {tuple(out.shape)} != {tuple(ref.shape)}"
    o = out.double()
    if not torch.isfinite(o).all():
        return False, "non-finite output (unwritten or overflowed)"
    err = float(torch.linalg.norm(o - ref) / max(float(torch.linalg.norm(ref)), 1e-300))
    tol = 1e-2 if out.dtype == torch.bfloat16 else 3e-3
    return err <= tol, f"rel err {err:.2e} (tol {tol:.0e})"


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
    def matmul_gluon(
        a_desc, b_desc, c_desc, M, N, K, STAGES: gl.constexpr, GROUP_M: gl.constexpr, num_warps: gl.constexpr
    ):
        BM: gl.constexpr = c_desc.block_type.shape[0]
        BN: gl.constexpr = c_desc.block_type.shape[1]
        BK: gl.constexpr = a_desc.block_type.shape[1]
        dtype: gl.constexpr = a_desc.dtype
        # grouped program order: GROUP_M row-blocks share each B column-block while it is in L2
        pid = gl.program_id(0)
        n_m = gl.cdiv(M, BM)
        n_n = gl.cdiv(N, BN)
        per_group = GROUP_M * n_n
        first_m = (pid // per_group) * GROUP_M
        gsize = gl.minimum(n_m - first_m, GROUP_M)
        off_m = (first_m + (pid % per_group) % gsize) * BM
        off_n = ((pid % per_group) // gsize) * BN

        a_bufs = gl.allocate_shared_memory(dtype, [STAGES, BM, BK], a_desc.layout)
        b_bufs = gl.allocate_shared_memory(dtype, [STAGES, BN, BK], b_desc.layout)
        bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        for i in gl.static_range(STAGES):
            mbarrier.init(bars.index(i), count=1)
        nbytes: gl.constexpr = a_desc.block_type.nbytes + b_desc.block_type.nbytes
        k_tiles = gl.cdiv(K, BK)
        for i in gl.static_range(STAGES - 1):  # prologue: fill STAGES - 1 buffers
            p = i < k_tiles
            mbarrier.expect(bars.index(i), nbytes, pred=p)
            tma.async_copy_global_to_shared(a_desc, [off_m, i * BK], bars.index(i), a_bufs.index(i), pred=p)
            tma.async_copy_global_to_shared(b_desc, [off_n, i * BK], bars.index(i), b_bufs.index(i), pred=p)

        acc_layout: gl.constexpr = _acc_layout(BM, BN, num_warps, dtype.primitive_bitwidth)
        acc = gl.zeros((BM, BN), dtype=gl.float32, layout=acc_layout)
        for kt in range(k_tiles):
            s = kt % STAGES
            mbarrier.wait(bars.index(s), (kt // STAGES) & 1)
            acc = warpgroup_mma(a_bufs.index(s), b_bufs.index(s).permute((1, 0)), acc, is_async=True)
            # keep one wgmma in flight: the one of step kt-1 is done, so its buffer may be refilled
            acc = warpgroup_mma_wait(num_outstanding=1, deps=(acc,))
            nk = kt + STAGES - 1
            ns = nk % STAGES
            p = nk < k_tiles
            mbarrier.expect(bars.index(ns), nbytes, pred=p)
            tma.async_copy_global_to_shared(
                a_desc, [off_m, nk * BK], bars.index(ns), a_bufs.index(ns), pred=p
            )
            tma.async_copy_global_to_shared(
                b_desc, [off_n, nk * BK], bars.index(ns), b_bufs.index(ns), pred=p
            )
        acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
        for i in gl.static_range(STAGES):
            mbarrier.invalidate(bars.index(i))

        # epilogue: registers -> swizzled C tile (the st.shared autopad scores) -> TMA store
        c_smem = gl.allocate_shared_memory(c_desc.dtype, [BM, BN], c_desc.layout)
        c_smem.store(acc.to(c_desc.dtype))
        fence_async_shared()
        tma.async_copy_shared_to_global(c_desc, [off_m, off_n], c_smem)
        tma.store_wait(pendings=0)

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
            b = tl.load(
                b_ptr + rn[None, :] * K + kk[:, None], mask=(rn < N)[None, :] & (kk < K)[:, None], other=0
            )
            acc = tl.dot(a, b, acc, input_precision="tf32" if TF32 else None)
        tl.store(
            c_ptr + rm[:, None] * N + rn[None, :],
            acc.to(c_ptr.dtype.element_ty),
            mask=(rm < M)[:, None] & (rn < N)[None, :],
        )


def _gl_dtype(dtype: str) -> Any:
    return {"bfloat16": gl.bfloat16, "float16": gl.float16, "tf32": gl.float32}[dtype]


def nvmma(swizzle: int, dtype: str) -> Any:
    return gl.NVMMASharedLayout(swizzle_byte_width=swizzle, element_bitwidth=8 * _EB[dtype], rank=2)


def build(c: dict[str, int], dtype: str) -> dict[str, Any]:
    return {
        "kernel": matmul_gluon,
        "constants": dict(c),
        "dtype": dtype,
        "layout": nvmma(c["SWIZZLE"], dtype),
    }


def run(built: dict[str, Any], inputs: tuple[Any, ...], out: Any) -> None:
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    a, b = inputs
    c = built["constants"]
    lay = built["layout"]
    m, k = a.shape
    n = b.shape[0]
    a_desc = TensorDescriptor.from_tensor(a, [c["BM"], c["BK"]], lay)
    b_desc = TensorDescriptor.from_tensor(b, [c["BN"], c["BK"]], lay)
    c_desc = TensorDescriptor.from_tensor(out, [c["BM"], c["BN"]], lay)
    grid = (-(-m // c["BM"]) * -(-n // c["BN"]),)
    built["kernel"][grid](a_desc, b_desc, c_desc, m, n, k, c["STAGES"], c["GROUP_M"], num_warps=c["WARPS"])


def run_tl(
    inputs: tuple[Any, ...],
    out: Any,
    bm: int = 128,
    bn: int = 256,
    bk: int = 64,
    stages: int = 3,
    warps: int = 8,
) -> None:
    """The plain-Triton baseline (``tl.dot``; Triton pipelines and lays out shared memory itself)."""
    import torch

    a, b = inputs
    m, k = a.shape
    n = b.shape[0]
    grid = (-(-m // bm) * -(-n // bn),)
    matmul_tl[grid](
        a,
        b,
        out,
        m,
        n,
        k,
        bm,
        bn,
        bk,
        8,
        a.dtype == torch.float32,
        -(-k // bk),
        num_warps=warps,
        num_stages=stages,
    )
