"""kernels/cuda/histogram_pattern.py: the model's view of the histogram's shared-memory updates, exactly the
per-instruction pattern it replaced, with the kernel's and the hardware's aggregation (ATOMS.POPC.INC serves
equal addresses once: ``POPC_INC_AGGREGATES``, read in that module)."""

from __future__ import annotations

import numpy as np
import pytest
from autopad.kernels.cuda import histogram as H
from autopad.kernels.cuda import histogram_pattern as HP

from autopad.access import score
from autopad.spec import DTYPE_BYTES

S = H.SPEC


def _old_pattern(c: dict, dtype: str, dist: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """The pattern as the previous spec built it: one warp instruction at a time, np.unique per warp."""
    dist = {"skewed": "zipf", "single": "equal"}.get(dist, dist)
    per, warps = 16 // DTYPE_BYTES[dtype], c["THREADS"] // 32
    size, bins = warps * 32 * c["ITEMS"] * per, c["BINS_PER_PASS"]
    rng = np.random.default_rng(0)
    if dist == "uniform":
        vals = rng.integers(0, bins, size)
    elif dist == "zipf":
        vals = (rng.zipf(1.5, size) - 1) % bins
    else:
        vals = np.full(size, min(5, bins - 1))
    vals = vals.reshape(warps, c["ITEMS"], per, 32)
    out = []
    for w in range(warps):
        for it in range(c["ITEMS"]):
            for q in range(per):
                b = vals[w, it, q]
                if c["AGG"] == 2 and (b == b[0]).all():
                    act = np.arange(32) == 0
                else:
                    act = np.zeros(32, dtype=bool)
                    act[np.unique(b, return_index=True)[1]] = True
                out.append((np.where(act, w % c["REPLICAS"], -1), np.where(act, b, 0)))
    return out


@pytest.mark.parametrize("dtype", H.DTYPES)
@pytest.mark.parametrize("dist", ["uniform", "skewed", "single"])
def test_vectorised_pattern_is_the_per_instruction_one(dtype, dist):
    base = dict(H.DEFAULTS)
    configs = [
        base,
        dict(base, AGG=1, ITEMS=1, THREADS=1024, BLOCKS_PER_SM=2),
        dict(base, AGG=2, REPLICAS=4, PAD=1, ITEMS=4),
        dict(base, REPLICAS=8, INTERLEAVED=1, PAD=2, THREADS=512),
        dict(base, BINS_PER_PASS=1024, AGG=2, REPLICAS=2) if dtype == "int32" else base,
    ]
    for c in configs:
        new = sorted((tuple(i.rows), tuple(i.cols)) for i in S.smem_pattern(c, dtype, dist))
        old = sorted((tuple(r), tuple(k)) for r, k in _old_pattern(c, dtype, dist))
        assert new == old, c
        lay = S.layout(c, dtype)
        a = score(S.smem_pattern(c, dtype, dist), lay)
        assert a.wavefronts >= a.ideal > 0


def test_equal_bins_are_one_update_per_warp_instruction():
    # +1 updates compile to ATOMS.POPC.INC, which serves each distinct address once (measured: equal data
    # bins as fast as uniform); the explicit aggregations do the same in software
    p = H.presets("int32")
    for name in ("unpadded", "agg_match", "agg_uniform", "agg_uniform_rep4"):
        s = score(S.smem_pattern(p[name], "int32", "single"), S.layout(p[name]))
        assert s.wavefronts == s.ideal, name
    HP.POPC_INC_AGGREGATES = False  # where aggregate and the pattern's cache key read it
    try:
        s = score(S.smem_pattern(p["unpadded"], "int32", "single"), S.layout(p["unpadded"]))
        assert s.wavefronts == 32 * s.ideal  # lane by lane, atomics never broadcast
    finally:
        HP.POPC_INC_AGGREGATES = True


@pytest.mark.parametrize("dist", H.DISTS)
def test_lane_replicas_are_one_wavefront_per_update_whatever_the_data(dist):
    c = H.presets("uint8")["lane_rep32"]
    pat = S.smem_pattern(c, "uint8", dist)
    s = score(pat, S.layout(c, "uint8"))
    assert s.wavefronts == s.ideal == len(pat)  # lane l always lands in bank l
    plain = H.presets("uint8")["unpadded"]
    if dist == "uniform":  # one shared copy: 32 random bins of 256 share banks, ~3 wavefronts per update
        p2 = S.smem_pattern(plain, "uint8", dist)
        assert score(p2, S.layout(plain)).wavefronts > 2.5 * len(p2)


@pytest.mark.parametrize("dtype", H.DTYPES)
def test_thread_bytes_are_a_conflict_free_load_and_store(dtype):
    c = H.presets(dtype)["thread_bytes"]
    pat = S.smem_pattern(c, dtype, "single")
    s = score(pat, S.layout(c, dtype))
    assert s.wavefronts == s.ideal == len(pat)  # word (b // 4) * THREADS + t: lane t in bank t % 32
    assert {i.op for i in pat} == {"load", "store"}
    assert S.smem_bytes(c, dtype) == 256 * c["THREADS"] + 4 * 256  # the bytes, then the block's totals


def test_sixteen_bit_counters_need_their_aggregations():
    p = H.presets("int32", 65536)
    lay = S.layout(p["c16"])
    assert lay.footprint == 65536 * 2

    def wf(name, dist):
        return score(S.smem_pattern(p[name], "int32", dist), lay).wavefronts

    assert wf("c16", "single") >= 30 * wf("c16_agg_uniform", "single")  # ATOMS.ADD: 32 lanes serialise
    assert wf("c16_runs", "sorted") < wf("c16", "sorted") / 2  # a run is one update
    assert wf("c16_split", "skewed") < 0.8 * wf("c16", "skewed")  # hot even bins by POPC.INC


def test_aggregate_keeps_one_lane_per_address_or_lane_zero_of_a_uniform_warp():
    keys = np.array([[3] * 16 + [5] * 16, [7] * 32])
    first = HP.first_lanes(keys)
    assert np.flatnonzero(first[0]).tolist() == [0, 16] and np.flatnonzero(first[1]).tolist() == [0]
    match = HP.aggregate(keys, 1)  # AGG 1: a leader per distinct address
    assert match.sum(axis=1).tolist() == [2, 1]
    uni = HP.aggregate(keys, 2, increment=False)  # AGG 2, an ATOMS.ADD: only the uniform warp is reduced
    assert uni[0].all() and uni[1].tolist() == [True] + [False] * 31
    assert HP.uniform_rows(keys).tolist() == [False, True]


def test_the_pattern_is_cached_per_flag_and_stacked_per_instruction():
    c = H.presets("int32")["agg_uniform_rep4"]
    key = tuple(sorted((k, int(c[k])) for k in H.PATTERN_KEYS))
    a = HP.block_pattern(key, "int32", "skewed")
    assert a is S.smem_pattern(c, "int32", "zipf")  # "skewed" is "zipf": one cached pattern
    assert len(a) == sum(1 for _ in a) == 8 * 2 * 4  # warps x ITEMS x values per 16 bytes
    assert {i.op for i in a} == {"atomic"} and all(i.access_bytes == 4 for i in a)
