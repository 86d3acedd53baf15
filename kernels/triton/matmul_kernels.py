"""The GEMM kernels behind autopad's Triton matmul spec (kernels/triton/matmul.py): Gluon sm_90, plain Triton.

* ``matmul_gluon``: one program per output tile (or per tile and K slice under split-K). TMA loads A and B
  into a ring of ``STAGES`` NVMMA-swizzled buffers (one mbarrier each), wgmma consumes them with one group
  kept in flight, the accumulator goes through a swizzled C tile to a TMA store.
* ``matmul_gluon_persistent``: one program per SM walking tiles ``pid, pid + nprog, ...`` in the same
  grouped order. An outer loop over tiles and an inner loop over K (the accumulator is never read inside
  the K loop: the previous version's epilogue sat in a branch of one flattened loop, and ptxas then
  injected a ``warpgroup.wait`` into every step, "C7517", serialising wgmma: 0.64-0.75 of the plain
  kernel on the H200). Loads run over the program's steps as one sequence (step p: K step p % k_tiles
  of its tile p // k_tiles), so the last ``STAGES - 1`` steps of a tile load the next tile's first ones,
  for any K; the TMA store of tile t drains while tile t + 1 computes (its own C buffer;
  ``store_wait`` only before the buffer is rewritten).
* ``splitk_reduce``: sums split-K's fp32 partial tiles into C.
* ``matmul_tl``: plain ``tl.dot`` with masked pointer loads (Triton pipelines them with cp.async and
  picks the shared layouts): the PATH 1 fallback for shapes TMA cannot describe (a row stride that is not
  a multiple of 16 bytes), and the baseline the benchmarks compare with.

Ring bookkeeping shared by both Gluon kernels: global step g lives in buffer ``g % STAGES`` and its
mbarrier completes phase ``(g // STAGES) & 1``; step g + STAGES - 1 is loaded right after the wgmma of
step g is issued and the one of step g - 1 has retired (``warpgroup_mma_wait(1)``), into the buffer that
step g - 1 used. ``tests/test_triton_matmul.py`` replays these schedules in numpy.
"""

from __future__ import annotations

from typing import Any

try:  # triton is optional: the spec's enumeration and scoring need numpy only
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

_BITS = {"bfloat16": 16, "float16": 16, "tf32": 32}
# registers per thread of the second ping-pong consumer (a worker partition must be given its count; the
# default partition gets what is left of the kernel's maxnreg budget, see matmul.ws_maxnreg)
CONSUMER_REGS = 240


def nvmma(swizzle: int, dtype: str) -> Any:
    """The NVMMA shared layout of a TMA/wgmma tile: ``swizzle`` bytes of XOR swizzle."""
    return gl.NVMMASharedLayout(swizzle_byte_width=swizzle, element_bitwidth=_BITS[dtype], rank=2)


if HAS_TRITON:
    PP_REGS = gl.constexpr(CONSUMER_REGS)

    @gluon.constexpr_function
    def _acc_layout(bm, bn, warps, kbits):
        # self-contained (a constexpr function may not call module helpers): the spec's _wgmma_warps rule
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
        total = my_tiles * k_tiles  # steps: step p is K step p % k_tiles of tile p // k_tiles

        a_bufs = gl.allocate_shared_memory(dtype, [STAGES] + a_desc.block_type.shape, a_desc.layout)
        b_bufs = gl.allocate_shared_memory(dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
        c_smem = gl.allocate_shared_memory(c_desc.dtype, [BM, BN], c_desc.layout)
        bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        for i in gl.static_range(STAGES):
            mbarrier.init(bars.index(i), count=1)
        for i in gl.static_range(STAGES - 1):  # the first steps
            lm, ln = _tile_offsets(pid + (i // k_tiles) * nprog, n_m, n_n, BM, BN, GROUP_M)
            _load_ab(a_desc, b_desc, bars.index(i), a_bufs.index(i), b_bufs.index(i), lm, ln,
                     (i % k_tiles) * BK, i < total, B_KN)  # fmt: skip

        acc_layout: gl.constexpr = _acc_layout(BM, BN, num_warps, dtype.primitive_bitwidth)
        acc = gl.zeros((BM, BN), dtype=gl.float32, layout=acc_layout)
        # the refill's step p = g + STAGES - 1 is K step lk of the program's tile lt (offsets lm, ln), kept
        # as counters advanced by one a step: computing them from p (p // k_tiles, p % k_tiles, then the
        # grouped order's divisions) put ~130 integer instructions, four run-time divisions, between the
        # wgmmas of every step in the sm_90 SASS (the plain kernel has ~40), delaying the issue of a
        # step's later wgmmas
        lt = (STAGES - 1) // k_tiles
        lk = (STAGES - 1) % k_tiles
        lm, ln = _tile_offsets(pid + lt * nprog, n_m, n_n, BM, BN, GROUP_M)
        g = 0  # steps consumed: buffer g % STAGES, barrier phase (g // STAGES) & 1
        for t in range(my_tiles):
            off_m, off_n = _tile_offsets(pid + t * nprog, n_m, n_n, BM, BN, GROUP_M)
            for kt in range(k_tiles):  # the accumulator is not read in here: wgmma stays asynchronous
                s = g % STAGES
                mbarrier.wait(bars.index(s), (g // STAGES) & 1)
                # use_acc False on a tile's first step: the accumulator restarts without a zeroing pass
                acc = warpgroup_mma(
                    a_bufs.index(s), _b_operand(b_bufs.index(s), B_KN), acc, use_acc=kt > 0, is_async=True
                )
                acc = warpgroup_mma_wait(num_outstanding=1, deps=(acc,))
                # refill step g - 1's buffer with step g + STAGES - 1: near a tile's end, the next tile's
                ns = (g + STAGES - 1) % STAGES
                _load_ab(a_desc, b_desc, bars.index(ns), a_bufs.index(ns), b_bufs.index(ns), lm, ln,
                         lk * BK, g + STAGES - 1 < total, B_KN)  # fmt: skip
                lk += 1
                if lk == k_tiles:  # the next load starts tile lt + 1 (one division per tile, not per step)
                    lk = 0
                    lt += 1
                    lm, ln = _tile_offsets(pid + lt * nprog, n_m, n_n, BM, BN, GROUP_M)
                g += 1
            acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
            tma.store_wait(pendings=0)  # the previous tile's TMA store has read c_smem
            c_smem.store(acc.to(c_desc.dtype))
            fence_async_shared()
            tma.async_copy_shared_to_global(c_desc, [off_m, off_n], c_smem)
        tma.store_wait(pendings=0)
        for i in gl.static_range(STAGES):
            mbarrier.invalidate(bars.index(i))

    @gluon.jit
    def _ws_loader(
        a_desc, b_desc, c_desc, a_bufs, b_bufs, ready, empty, M, N, K,
        STAGES: gl.constexpr, GROUP_M: gl.constexpr, B_KN: gl.constexpr,
    ):  # fmt: skip
        # the producer (one warp): walks the program's tiles and their K steps in the consumer's order; step
        # g goes to slot g % STAGES once the slot's previous step, g - STAGES, has been released: that is
        # completion g // STAGES of empty[s] (completion i ends the wgmma of step s + (i - 1) * STAGES),
        # so it waits for parity (g // STAGES & 1) ^ 1, which a fresh barrier passes at once (g < STAGES)
        BM: gl.constexpr = c_desc.block_type.shape[0]
        BN: gl.constexpr = c_desc.block_type.shape[1]
        BK: gl.constexpr = a_desc.block_type.shape[1]
        pid = gl.program_id(0)
        nprog = gl.num_programs(0)
        n_m = gl.cdiv(M, BM)
        n_n = gl.cdiv(N, BN)
        k_tiles = gl.cdiv(K, BK)
        g = 0
        for t in range(gl.cdiv(n_m * n_n - pid, nprog)):
            off_m, off_n = _tile_offsets(pid + t * nprog, n_m, n_n, BM, BN, GROUP_M)
            for kt in range(k_tiles):
                s = g % STAGES
                mbarrier.wait(empty.index(s), ((g // STAGES) & 1) ^ 1)
                _load_ab(a_desc, b_desc, ready.index(s), a_bufs.index(s), b_bufs.index(s), off_m, off_n,
                         kt * BK, True, B_KN)  # fmt: skip
                g += 1

    @gluon.jit
    def _consume_steps(
        a_bufs, b_bufs, ready, empty, acc, g, k_tiles, STAGES: gl.constexpr, B_KN: gl.constexpr
    ):
        # one tile's K steps on the ring, from global step g (the warp-specialized consumers): wait for step
        # g's TMA bytes, issue its wgmma (use_acc False on the tile's first step: the accumulator restarts),
        # keep one group in flight, and release step g - 1's slot once it has retired (on a tile's first
        # step that is the previous tile's, released after that tile's full wait). Returns (acc, g after)
        for kt in range(k_tiles):
            s = g % STAGES
            mbarrier.wait(ready.index(s), (g // STAGES) & 1)
            acc = warpgroup_mma(
                a_bufs.index(s), _b_operand(b_bufs.index(s), B_KN), acc, use_acc=kt > 0, is_async=True
            )
            acc = warpgroup_mma_wait(num_outstanding=1, deps=(acc,))
            mbarrier.arrive(empty.index((g + STAGES - 1) % STAGES), pred=kt > 0)
            g += 1
        return acc, g

    @gluon.jit
    def _ws_consumer(
        a_desc, b_desc, c_desc, a_bufs, b_bufs, c_bufs, ready, empty, M, N, K,
        STAGES: gl.constexpr, GROUP_M: gl.constexpr, B_KN: gl.constexpr, C_BUFS: gl.constexpr,
        num_warps: gl.constexpr,
    ):  # fmt: skip
        # the default partition (num_warps warps): wgmma over the ring, then the epilogue. Step g is ready
        # at completion g // STAGES + 1 of ready[g % STAGES] (parity (g // STAGES) & 1, the TMA bytes of
        # its load). After issuing step g's wgmma it waits for step g - 1's (one group in flight) and
        # releases that slot (empty[(g - 1) % STAGES]); a tile's last step is released after the full
        # wait. The C tile alternates between two buffers: tile t writes c_bufs[t % 2] after
        # store_wait(1) has seen tile t - 2's store (the same buffer) finish reading it, so tile t - 1's
        # store still drains while tile t computes
        BM: gl.constexpr = c_desc.block_type.shape[0]
        BN: gl.constexpr = c_desc.block_type.shape[1]
        BK: gl.constexpr = a_desc.block_type.shape[1]
        dtype: gl.constexpr = a_desc.dtype
        pid = gl.program_id(0)
        nprog = gl.num_programs(0)
        n_m = gl.cdiv(M, BM)
        n_n = gl.cdiv(N, BN)
        k_tiles = gl.cdiv(K, BK)
        acc_layout: gl.constexpr = _acc_layout(BM, BN, num_warps, dtype.primitive_bitwidth)
        acc = gl.zeros((BM, BN), dtype=gl.float32, layout=acc_layout)
        g = 0
        for t in range(gl.cdiv(n_m * n_n - pid, nprog)):
            off_m, off_n = _tile_offsets(pid + t * nprog, n_m, n_n, BM, BN, GROUP_M)
            acc, g = _consume_steps(a_bufs, b_bufs, ready, empty, acc, g, k_tiles, STAGES, B_KN)
            acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
            mbarrier.arrive(empty.index((g + STAGES - 1) % STAGES))
            c_buf = c_bufs.index(t % C_BUFS)
            tma.store_wait(pendings=C_BUFS - 1)  # tile t - C_BUFS's store has read c_buf
            c_buf.store(acc.to(c_desc.dtype))
            fence_async_shared()
            tma.async_copy_shared_to_global(c_desc, [off_m, off_n], c_buf)
        tma.store_wait(pendings=0)

    @gluon.jit
    def matmul_gluon_ws(
        a_desc,
        b_desc,
        c_desc,
        M,
        N,
        K,
        STAGES: gl.constexpr,
        GROUP_M: gl.constexpr,
        B_KN: gl.constexpr,
        C_BUFS: gl.constexpr,
        num_warps: gl.constexpr,
    ):
        # the barriers and buffers both partitions share; the loader is a worker of one warp and 24
        # registers, the consumer the default partition (num_warps warps, the registers left)
        dtype: gl.constexpr = a_desc.dtype
        a_bufs = gl.allocate_shared_memory(dtype, [STAGES] + a_desc.block_type.shape, a_desc.layout)
        b_bufs = gl.allocate_shared_memory(dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
        c_bufs = gl.allocate_shared_memory(c_desc.dtype, [C_BUFS] + c_desc.block_type.shape, c_desc.layout)
        ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        for i in gl.static_range(STAGES):
            mbarrier.init(ready.index(i), count=1)
            mbarrier.init(empty.index(i), count=1)
        gl.warp_specialize(
            [
                (_ws_consumer, (a_desc, b_desc, c_desc, a_bufs, b_bufs, c_bufs, ready, empty, M, N, K,
                                STAGES, GROUP_M, B_KN, C_BUFS, num_warps)),
                (_ws_loader, (a_desc, b_desc, c_desc, a_bufs, b_bufs, ready, empty, M, N, K,
                              STAGES, GROUP_M, B_KN)),
            ],
            [1],
            [24],
        )  # fmt: skip

    @gluon.jit
    def _pp_consumer(
        a_desc, b_desc, c_desc, a_bufs, b_bufs, c_bufs, ready, empty, turn, M, N, K,
        STAGES: gl.constexpr, GROUP_M: gl.constexpr, B_KN: gl.constexpr, ME: gl.constexpr, NW: gl.constexpr,
    ):  # fmt: skip
        # ping-pong consumer ME (0: the default partition, 1: a worker; NW = 4 warps each): the program's
        # tiles t = ME, ME + 2, ... Their K loops take turns: consumer 0's loop of tile t follows consumer
        # 1's of tile t - 1 (completion t // 2 of turn[0], parity (t // 2 & 1) ^ 1: passes at once for
        # t = 0), consumer 1's of tile t follows consumer 0's of tile t - 1 (completion t // 2 + 1 of
        # turn[1], parity t // 2 & 1). Each hands the turn over once its last wgmma is issued and then
        # runs its epilogue while the other one's wgmmas run. The ring's steps are therefore waited for in
        # global order, as with one consumer (step g = t * k_tiles + kt: ready[g % STAGES], parity
        # (g // STAGES) & 1), which keeps every parity wait unambiguous. Each has its own C buffer.
        BM: gl.constexpr = c_desc.block_type.shape[0]
        BN: gl.constexpr = c_desc.block_type.shape[1]
        BK: gl.constexpr = a_desc.block_type.shape[1]
        dtype: gl.constexpr = a_desc.dtype
        pid = gl.program_id(0)
        nprog = gl.num_programs(0)
        n_m = gl.cdiv(M, BM)
        n_n = gl.cdiv(N, BN)
        k_tiles = gl.cdiv(K, BK)
        acc_layout: gl.constexpr = _acc_layout(BM, BN, NW, dtype.primitive_bitwidth)
        acc = gl.zeros((BM, BN), dtype=gl.float32, layout=acc_layout)
        c_buf = c_bufs.index(ME)
        for t in range(ME, gl.cdiv(n_m * n_n - pid, nprog), 2):
            off_m, off_n = _tile_offsets(pid + t * nprog, n_m, n_n, BM, BN, GROUP_M)
            mbarrier.wait(turn.index(ME), ((t // 2) & 1) ^ (1 - ME))
            g = t * k_tiles
            acc, g = _consume_steps(a_bufs, b_bufs, ready, empty, acc, g, k_tiles, STAGES, B_KN)
            mbarrier.arrive(turn.index(1 - ME))  # every wgmma of this tile is issued: the other's turn
            acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
            mbarrier.arrive(empty.index((g + STAGES - 1) % STAGES))
            tma.store_wait(pendings=0)  # this consumer's previous store has read c_buf
            c_buf.store(acc.to(c_desc.dtype))
            fence_async_shared()
            tma.async_copy_shared_to_global(c_desc, [off_m, off_n], c_buf)
        tma.store_wait(pendings=0)

    @gluon.jit
    def matmul_gluon_pingpong(
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
        # two 4-warp consumers (the default partition and a worker given CONSUMER_REGS registers) and the
        # one-warp loader of matmul_gluon_ws (which walks every tile of the program in order)
        dtype: gl.constexpr = a_desc.dtype
        a_bufs = gl.allocate_shared_memory(dtype, [STAGES] + a_desc.block_type.shape, a_desc.layout)
        b_bufs = gl.allocate_shared_memory(dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
        c_bufs = gl.allocate_shared_memory(c_desc.dtype, [2] + c_desc.block_type.shape, c_desc.layout)
        ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
        for i in gl.static_range(STAGES):
            mbarrier.init(ready.index(i), count=1)
            mbarrier.init(empty.index(i), count=1)
        for i in gl.static_range(2):
            mbarrier.init(turn.index(i), count=1)
        gl.warp_specialize(
            [
                (_pp_consumer, (a_desc, b_desc, c_desc, a_bufs, b_bufs, c_bufs, ready, empty, turn, M, N, K,
                                STAGES, GROUP_M, B_KN, 0, num_warps)),
                (_pp_consumer, (a_desc, b_desc, c_desc, a_bufs, b_bufs, c_bufs, ready, empty, turn, M, N, K,
                                STAGES, GROUP_M, B_KN, 1, num_warps)),
                (_ws_loader, (a_desc, b_desc, c_desc, a_bufs, b_bufs, ready, empty, M, N, K,
                              STAGES, GROUP_M, B_KN)),
            ],
            [num_warps, 1],
            [PP_REGS, 24],
        )  # fmt: skip

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
        B_KN: tl.constexpr,
    ):
        # C [M, N] = A [M, K] @ B (B_KN: [K, N], else [N, K]), row-major, any M, N, K (masked loads)
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
        for k0 in range(0, K, BK):
            kk = k0 + rk
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
