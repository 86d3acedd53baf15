"""kernels/cuda/histogram_space.py: the histogram's restrictions (the strings the enumerator evaluates agree
with the Python and numpy rules) and what ``legal`` refuses, and why."""

from __future__ import annotations

import numpy as np
from autopad.kernels.cuda import histogram as H
from autopad.kernels.cuda import histogram_space as HS

from autopad.expr import compile_expr

S = H.SPEC


def test_restriction_strings_match_the_python_rules():
    names = sorted(H.SPACE)
    rng = np.random.default_rng(0)
    pts = [{n: int(rng.choice(H.SPACE[n])) for n in names} for _ in range(4000)]
    env = {n: np.array([p[n] for p in pts]) for n in names}
    env["E"] = 4
    vec = np.ones(len(pts), dtype=bool)
    for r in H.RESTRICTIONS:
        vec &= np.broadcast_to(compile_expr(r)(env), vec.shape)
    for p, v in zip(pts, vec):
        py = H._broken_rule(p) is None and S.smem_bytes(p) <= H.ARCH.smem_per_block
        py = py and (S.smem_bytes(p) + 1024) * p["BLOCKS_PER_SM"] <= H.ARCH.smem_per_sm
        assert py == bool(v), p


def test_legal_rejects_bad_candidates():
    ok = dict(H.DEFAULTS)
    assert S.legal(ok, (1000, 256), "int32")
    assert not S.legal(dict(ok, BINS_PER_PASS=65536), (1000, 256), "int32")  # wasteful and too big
    assert not S.legal(dict(ok, BINS_PER_PASS=65536), (1000, 65536), "int32")  # 256 KB > 227 KB
    assert not S.legal(ok, (1000, 1024), "uint8")
    assert not S.legal(dict(ok, REPLICAS=16), (1000, 256), "int32")  # 8 warps
    assert not S.legal(dict(ok, THREADS=1024, BLOCKS_PER_SM=4), (1000, 256), "int32")
    assert not S.legal(dict(ok, INTERLEAVED=1), (1000, 256), "int32")
    assert S.legal(dict(ok, BINS_PER_PASS=256), (1000, 1000), "int32")  # four passes
    assert S.launch_info(dict(ok, BINS_PER_PASS=256), (1000, 1000), "int32")["passes"] == 4
    c16 = H.presets("int32", 65536)["c16"]
    assert S.legal(c16, (1000, 65536), "int32") and S.legal(c16, (1000, 40000), "int32")
    assert not S.legal(c16, (1000, 70000), "int32")  # one pass only
    assert not S.legal(dict(c16, BLOCKS_PER_SM=2), (1000, 65536), "int32")  # 2 x 128 KB
    assert not S.legal(dict(c16, AGG=1), (1000, 65536), "int32")
    assert not S.legal(dict(ok, PRIV=1), (1000, 256), "int32")  # one replica is PRIV 0
    assert not S.legal(dict(ok, PRIV=2, THREADS=1024, BLOCKS_PER_SM=1), (1000, 256), "uint8")  # 257 KB
    assert not S.legal(dict(ok, PRIV=2, REPLICAS=2), (1000, 256), "uint8")
    assert not S.legal(dict(ok, AGG=3), (1000, 256), "int32")  # runs are the 16-bit counters'
    assert not S.legal(dict(ok, COUNTER=16), (1000, 256), "uint8")
    assert not S.legal(ok, (0, 256), "int32") and not S.legal(ok, (2**31, 256), "int32")


def test_the_rules_three_ways_agree_and_the_bins_pick_a_pass_width():
    names = sorted(HS.SPACE)
    rng = np.random.default_rng(1)
    pts = [{n: int(rng.choice(HS.SPACE[n])) for n in names} for _ in range(2000)]
    cols = {n: np.array([p[n] for p in pts]) for n in names}
    assert HS._rules_batch(cols).tolist() == [HS._broken_rule(p) is None for p in pts]
    assert [HS._fit_pass(b) for b in (1, 256, 257, 5000, 65536, 70000)] == [
        256,
        256,
        1024,
        16384,
        65536,
        65536,
    ]
    assert HS.legal(S, {}, (1000, 256), "int32").reason.startswith("missing constants")
    why = HS.legal(S, dict(HS.DEFAULTS), (1000, 256), "float32").reason
    assert why == "dtype float32 is not one of ('int32', 'uint8')"
    assert HS.legal_batch(S, cols, (1000, 256), "float32").tolist() == [False] * len(pts)


def test_bins_beyond_a_32_bit_int_are_refused():
    """histogram.cu takes the bin count as a C int: from 2**31 bins no candidate is legal, and the reason
    says why (tune() said nothing and answered a pick that could not run)."""
    c = dict(H.DEFAULTS)
    assert "32-bit" not in H.SPEC.legal(c, (100, 2**31 - 1), "int32").reason  # the largest count it takes
    bad = H.SPEC.legal(c, (100, 2**31), "int32")
    assert not bad and "32-bit int, at most 2**31 - 1" in bad.reason
    cols = {k: np.array([v]) for k, v in c.items()}
    assert not HS.legal_batch(H.SPEC, cols, (100, 2**31), "int32").any()
