"""The GEMM's tile arithmetic: shared-memory bytes, the wavefronts TMA and wgmma move that no LSU instruction
lists, the warp-specialized kernels' C buffers and register cap, and when TMA can describe the tensors.

Every number here follows from the constants and the element size alone (numpy-free, no Triton): the A/B
ring of STAGES k-steps, the C tile (in the dead ring's place, beside it when persistent, double-buffered
under warp specialization where it fits), the mbarriers and warp_specialize's captures (all matched to the
compiler's ``metadata.shared`` for sm_90 by the tests), and one wavefront per ``SWIZZLE``-byte row that
TMA writes or wgmma reads (``tma_wgmma_rows``), so a narrower swizzle costs more.

Why a module of its own: the legality (``smem_bytes`` against the block's budget), the model's terms
(matmul_model.py) and the launch (``c_bufs``, ``ws_maxnreg``: matmul_launch.py) all read it.
"""

from __future__ import annotations

from autopad.arch import get_arch

__all__ = [
    "b_kn",
    "c_bytes",
    "tma_ok",
    "c_bufs",
    "ws_maxnreg",
    "wgmma_read_bytes",
    "tma_wgmma_rows",
    "epilogue_rows",
    "smem_bytes",
]

_ARCH = get_arch("sm_90")
_EB = {"bfloat16": 2, "float16": 2, "tf32": 4}


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
