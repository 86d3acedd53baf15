"""kernels/cuda/histogram_cost.py, the predictor's side of the CUDA histogram: AGG 2's uniform test per value
(``UNIFORM_TEST_CYCLES``) in ``launch_info`` and ``launch_info_batch`` and the measured effect it reproduces,
the busiest SM's share of the grid-stride chunks, the 16-bit counters' scans, the flushes (CPU only)."""

from __future__ import annotations

import numpy as np
import pytest
from autopad.kernels.cuda import histogram as H
from autopad.kernels.cuda import histogram_cost as HC

from autopad.kernels_registry import builtin_spec
from autopad.search import predict

S = H.SPEC
BASE = dict(H.DEFAULTS, THREADS=1024, BLOCKS_PER_SM=2, ITEMS=2)


@pytest.mark.parametrize("dtype,per", [("int32", 4), ("uint8", 16)])
def test_uniform_test_is_charged_per_value_of_every_warp(dtype, per):
    shape = (1 << 24, 256)
    agg0 = S.launch_info(dict(BASE, AGG=0), shape, dtype)
    agg2 = S.launch_info(dict(BASE, AGG=2), shape, dtype)
    assert "issue_cycles" not in agg0
    assert agg2["issue_cycles"] == pytest.approx(H.UNIFORM_TEST_CYCLES * 32 * 2 * per)
    # the rest of the launch is AGG 0's: the test is the only difference the predictor is told of
    assert {k: v for k, v in agg2.items() if k != "issue_cycles"} == agg0
    # AGG 1's warp match is charged as before, not the uniform test
    agg1 = S.launch_info(dict(BASE, AGG=1), shape, dtype)
    assert agg1["issue_cycles"] == pytest.approx(H.MATCH_ANY_CYCLES * 32 * 2 * per)


def test_uniform_test_in_the_16_bit_counters_too():
    c16 = dict(H.DEFAULTS, BINS_PER_PASS=65536, COUNTER=16, THREADS=1024, BLOCKS_PER_SM=1, ITEMS=2)
    shape = (1 << 24, 65536)
    assert S.legal(dict(c16, AGG=2), shape, "int32")
    assert S.launch_info(dict(c16, AGG=2), shape, "int32")["issue_cycles"] == pytest.approx(
        H.UNIFORM_TEST_CYCLES * 32 * 2 * 4
    )
    assert "issue_cycles" not in S.launch_info(dict(c16, AGG=0), shape, "int32")


def test_batch_agrees_on_the_uniform_test():
    rows = [dict(BASE, AGG=a, ITEMS=i, THREADS=t) for a in (0, 1, 2) for i in (1, 2, 4) for t in (256, 512)]
    cols = {k: np.array([r[k] for r in rows]) for k in H.SPACE}
    for dtype in ("int32", "uint8"):
        batch = S.launch_info_batch(cols, (10000019, 100), dtype)
        one = [S.launch_info(r, (10000019, 100), dtype) for r in rows]
        assert np.allclose(batch["issue_cycles"], [i.get("issue_cycles", 0.0) for i in one])


def test_uniform_test_slows_uint8_not_int32_streams():
    """H200 study run 1, the fastest AGG 0 configuration's AGG 2 twin: uint8 2^28 x 256 measured 1.325x
    (issue-bound: 16 values a 16-byte load), int32 2^26 x 256 1.024x (DRAM-bound: the test hides). The
    predictor, told of the test, must see uint8's AGG 2 slower by a visible margin and int32's by little
    (without the term both ratios are exactly 1)."""
    ratio = {}
    for dtype, n in (("uint8", 1 << 28), ("int32", 1 << 26)):
        spec = builtin_spec("histogram", "cuda")
        t = [predict(spec, dict(BASE, AGG=a), (n, 256), dtype, dist="uniform").seconds for a in (0, 2)]
        ratio[dtype] = t[1] / t[0]
    assert 1.06 < ratio["uint8"] < 1.325  # 1.09 today: the model still under-charges uint8's issue
    assert 1.0 <= ratio["int32"] < 1.05  # 1.04: only the streams' imperfect overlap
    assert ratio["uint8"] - 1 > 2 * (ratio["int32"] - 1)


def test_sixteen_bit_counters_cannot_overflow_between_scans():
    for threads in H.SPACE["THREADS"]:
        for items in H.SPACE["ITEMS"]:
            per = 4
            c = {"THREADS": threads, "ITEMS": items}
            every = H._scan_every(c, per)
            assert every >= 1
            # after a scan every counter is < SPILL_AT; then `every` iterations and a tail of < PER values
            assert H.SPILL_AT - 1 + every * threads * items * per + per - 1 <= 65535


def test_tiles_per_block_are_the_busiest_sms_share_of_the_chunks():
    """The grid-stride loop deals chunk k to block k % grid and block b runs on SM b % 132, so the busiest
    SM runs ceil(chunks / 132) chunks among its BLOCKS_PER_SM blocks (H200 run 41, uint8 10000019 x 100:
    charging every block a second iteration made 4 blocks an SM look 1.6x their work, and 512 x 4 x 2 is
    the measured best there, 9.9 us)."""
    base = dict(H.DEFAULTS, THREADS=512, ITEMS=2, BLOCKS_PER_SM=4)
    n = 10000019  # 625,001 vectors of 16 uint8 values: 611 chunks of 512 x 2, 5 on the busiest SM
    assert S.launch_info(base, (n, 100), "uint8")["tiles_per_block"] == pytest.approx(5 / 4)
    one = dict(base, THREADS=1024, BLOCKS_PER_SM=1)  # 306 chunks of 2,048 vectors: 3 on the busiest SM
    assert S.launch_info(one, (n, 100), "uint8")["tiles_per_block"] == 3
    assert S.launch_info(base, (1000, 100), "uint8")["tiles_per_block"] == pytest.approx(1 / 4)  # one chunk
    # passes multiply it; a large input is within one chunk per SM of a block's own count
    four = S.launch_info(dict(base, BINS_PER_PASS=1024), (1 << 26, 4096), "int32")
    assert four["tiles_per_block"] == pytest.approx(4 * 125 / 4)  # 16,384 chunks: 125 on the busiest SM


def test_the_flush_charges_every_bin_and_a_warp_per_bin_with_lane_replicas():
    c = dict(H.DEFAULTS, BINS_PER_PASS=256, THREADS=256)
    assert HC._flush_cycles(c, 1000) == pytest.approx(HC.FLUSH_BIN_CYCLES * 1000)
    lane = dict(c, PRIV=1)  # 8 warps take 256 bins a pass: 32 iterations each, four passes (the last 232)
    iters = 3 * 256 + 29 * 8
    # ... and each pass's busiest 128-byte line of the global histogram: 32 single-bin requests a block, every
    # block of the grid in turn (a block carries SMs x its own)
    line = 4 * 32 * HC.ARCH.sm_count
    assert HC._flush_cycles(lane, 1000) == pytest.approx(
        HC.FLUSH_WARP_CYCLES * iters + HC.FLUSH_BIN_CYCLES * 1000 + HC.FLUSH_LINE_CYCLES * line
    )
    assert S.launch_info(c, (1 << 20, 1000), "int32")["block_cycles"] == HC._flush_cycles(c, 1000)


def test_a_lane_replica_flush_of_few_bins_pays_the_line_its_bins_fill():
    # 20 bins fill 20 words of one line: 20 single-bin requests a block, not 32; PRIV 0's warp adds a line in
    # one request, so it pays no line term
    lane = dict(H.DEFAULTS, BINS_PER_PASS=256, THREADS=256, PRIV=1)
    iters = 3 * 8  # 8 warps take bins w, w + 8, w + 16: three iterations each (the last partly idle)
    assert HC._flush_cycles(lane, 20) == pytest.approx(
        HC.FLUSH_WARP_CYCLES * iters + HC.FLUSH_BIN_CYCLES * 20 + HC.FLUSH_LINE_CYCLES * 20 * HC.ARCH.sm_count
    )
    assert HC._flush_cycles(dict(lane, PRIV=0), 20) == pytest.approx(HC.FLUSH_BIN_CYCLES * 20)


def test_the_lane_replica_flush_s_line_term_moves_the_answer_off_it_at_30_million_bytes():
    # H100 run 229 (round 19): uint8 30,000,001 x 256, where the model answered PRIV 1 (32 interleaved lane
    # replicas, one 1024-thread block an SM), measured 1.45x the best; the PRIV 1 builds of one block an SM
    # in that sample ran 1.45-1.48x. With the line term the answer is a PRIV 0 build (1.05x there)
    shape = (30_000_001, 256)
    base = dict(H.DEFAULTS, THREADS=1024, BLOCKS_PER_SM=1, ITEMS=4, BINS_PER_PASS=256)
    lane = dict(base, PRIV=1, REPLICAS=32, INTERLEAVED=1)
    extra = HC.FLUSH_LINE_CYCLES * 32 * HC.ARCH.sm_count
    got = (
        S.launch_info(lane, shape, "uint8")["block_cycles"]
        - S.launch_info(base, shape, "uint8")["block_cycles"]
    )
    assert got == pytest.approx(HC.FLUSH_WARP_CYCLES * 256 + extra)
    # 4.3 us more for the grid at one block an SM (H200 clock)
    assert extra / HC.ARCH.clock_hz == pytest.approx(4.27e-6, rel=0.01)
    from autopad.search import rank

    first = rank(builtin_spec("histogram", "cuda"), shape, "uint8", dist="uniform")[0]
    assert first.params["PRIV"] == 0, first.params


@pytest.mark.parametrize("dtype,per", [("int32", 4), ("uint8", 16)])
@pytest.mark.parametrize("items", [1, 2, 4])
def test_per_thread_byte_counters_wait_a_chain_per_value(dtype, per, items):
    # PRIV 2: each thread's values are counted one after another, COUNT8_CHAIN_CYCLES each, in a tile of
    # ITEMS vectors of `per` values; the warp replicas (PRIV 0) atomics wait for nothing
    c = dict(H.DEFAULTS, PRIV=2, THREADS=512, BLOCKS_PER_SM=1, ITEMS=items, BINS_PER_PASS=256)
    shape = (1 << 26, 256)
    info = S.launch_info(c, shape, dtype)
    assert info["wait_cycles"] == pytest.approx(HC.COUNT8_CHAIN_CYCLES * items * per)
    assert "wait_cycles" not in S.launch_info(dict(c, PRIV=0), shape, dtype)
    # the batched path says the same
    cols = {k: np.array([v]) for k, v in c.items()}
    assert S.launch_info_batch(cols, shape, dtype)["wait_cycles"][0] == pytest.approx(info["wait_cycles"])


def test_the_byte_counters_chain_is_what_times_them_on_uint8():
    # H200 run 41 (uint8 2^28 x 256): the PRIV 2 builds of one 512-thread block an SM measured 283, 252 and
    # 267 us at ITEMS 1, 2 and 4; the model had put them at 267, 145 and 105 (falling with the bytes in
    # flight). With the chain, each thread's ~4,000 values at COUNT8_CHAIN_CYCLES put all three within 15%
    shape = (1 << 28, 256)
    spec = builtin_spec("histogram", "cuda")
    measured = {1: 283.4e-6, 2: 252.1e-6, 4: 267.0e-6}
    for items, ms in measured.items():
        c = dict(H.DEFAULTS, PRIV=2, THREADS=512, BLOCKS_PER_SM=1, ITEMS=items, BINS_PER_PASS=256)
        got = predict(spec, c, shape, "uint8", dist="uniform").seconds
        assert got == pytest.approx(ms, rel=0.15), (items, got)


def test_the_byte_counters_are_not_the_answer_at_45_million_uint8_values():
    # round 21's sample (drawn before the chain term): the model put PRIV 2 first at 45,000,007 x 256
    from autopad.search import rank

    first = rank(builtin_spec("histogram", "cuda"), (45_000_007, 256), "uint8", dist="uniform")[0]
    assert first.params["PRIV"] != 2, first.params


def test_on_the_h100_profile_the_lane_replicas_wait_for_twice_the_input():
    # H100 runs 230 and 232 (uint8 x 256): the lane-replica (PRIV 1) answers measured 1.25x the best at
    # 60,000,001 values and were the best at 180,000,001 and 2^28; that card's DRAM rate (h100) puts PRIV 0
    # first at 60 million, PRIV 1 at 180 million and 2^28, where the H200 profile has PRIV 1 from 60 million
    from autopad.search import rank

    spec = builtin_spec("histogram", "cuda")

    def first(n, arch):
        return rank(spec, (n, 256), "uint8", arch, dist="uniform")[0].params["PRIV"]

    assert [first(n, "sm_90") for n in (60_000_001, 180_000_001, 1 << 28)] == [1, 1, 1]
    assert [first(n, "h100") for n in (60_000_001, 180_000_001, 1 << 28)] == [0, 1, 1]


def _flush_cycles_by_pass(c, bins):
    """The flush charge as a walk over the passes (what _flush_cycles computed before its closed form)."""
    warps, iters, line = c["THREADS"] // 32, 0, 0
    if c["PRIV"] == 1:
        for lo in range(0, bins, c["BINS_PER_PASS"]):
            here = min(c["BINS_PER_PASS"], bins - lo)
            iters += -(-here // warps) * warps
            line += min(here, 32)
    return (
        HC.FLUSH_WARP_CYCLES * iters
        + HC.FLUSH_BIN_CYCLES * bins
        + HC.FLUSH_LINE_CYCLES * line * HC.ARCH.sm_count
    )


def test_the_flush_charge_takes_no_time_per_pass():
    """Its closed form gives the walk's numbers exactly (the walk took a minute a tune at 2**31 bins and hours
    at 10**12: autopad tune histogram --shape 100x1099511627775 seemed to hang; such bin counts are now
    refused, the kernel counting bins in a 32-bit int, but 2**31 - 1 still walked 8 million passes)."""
    for priv in (0, 1):
        for threads in (64, 96, 256, 1024):
            for per_pass in (1, 20, 32, 33, 256, 4096, 65536):
                for bins in (1, 2, 31, 32, 33, 255, 256, 257, 4097, 65535, 65536, 65537, 1_000_003):
                    c = dict(BASE, PRIV=priv, THREADS=threads, BINS_PER_PASS=per_pass)
                    assert HC._flush_cycles(c, bins) == _flush_cycles_by_pass(c, bins), (c, bins)
