"""Enumeration, prediction and shortlisting, on the fake transpose spec (no GPU)."""

from __future__ import annotations

import fake_kernel
import pytest

from autopad.search import baselines, enumerate_candidates, predict, rank, shortlist
from autopad.spec import KernelSpec

SPEC = KernelSpec(fake_kernel)
SHAPE = (4096, 4096)


def test_enumerates_only_legal_candidates():
    cands = enumerate_candidates(SPEC, SHAPE, "float32")
    assert cands, "the fake space has legal points"
    for c in cands:
        assert fake_kernel.legal(c, SHAPE, "float32")
    # PAD=1 with VEC=2 misaligns 8-byte accesses: never generated
    assert {"TILE": 32, "PAD": 1, "VEC": 2} not in cands
    assert {"TILE": 32, "PAD": 2, "VEC": 2} in cands


def test_prediction_sees_the_column_walk_conflict():
    unpadded = predict(SPEC, {"TILE": 32, "PAD": 0, "VEC": 1}, SHAPE, "float32")
    padded = predict(SPEC, {"TILE": 32, "PAD": 1, "VEC": 1}, SHAPE, "float32")
    # a 32x8 block is 8 warps, each taking 4 j-steps over the 32 rows: 32 row-writes at 1 wavefront,
    # then 32 column read-outs at 32 wavefronts each unpadded, 1 padded
    assert padded.wavefronts_per_tile == 32 + 32
    assert unpadded.wavefronts_per_tile == 32 + 32 * 32
    assert padded.conflict_degree == 1.0
    assert unpadded.seconds > padded.seconds


def test_rank_is_sorted_and_deterministic():
    a = rank(SPEC, SHAPE, "float32")
    b = rank(SPEC, SHAPE, "float32")
    assert [c.key for c in a] == [c.key for c in b]
    secs = [c.prediction.seconds for c in a]
    assert secs == sorted(secs)


def test_shortlist_always_keeps_the_baselines():
    ranked = rank(SPEC, SHAPE, "float32", extra=baselines(SPEC, SHAPE, "float32"))
    short = shortlist(ranked, 1)
    roles = {r for c in short for r in c.roles}
    assert {"unpadded", "textbook"} <= roles
    assert short[0] is ranked[0]
    with pytest.raises(ValueError, match="top_k"):
        shortlist(ranked, 0)
