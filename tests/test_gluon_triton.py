"""autopad/gluon_triton.py: autopad layouts as Gluon layouts, and agreement with Triton's own
gl.bank_conflicts (run through Gluon's front end for sm_90, no GPU)."""

from __future__ import annotations

import pytest

from autopad.gluon_blocked import Blocked
from autopad.gluon_triton import bank_conflict_sweep, bank_conflicts_gluon, to_gluon
from autopad.layouts import Padded, Swizzle, Swizzled, Tile


def test_to_gluon_spells_the_swizzle_and_the_padding():
    pytest.importorskip("triton")
    from triton.experimental.gluon import language as gl

    sw = to_gluon(Swizzled(64, 64, 2, sw_vec=8, per_phase=1, max_phase=8))
    assert isinstance(sw, gl.SwizzledSharedLayout) and (sw.vec, sw.per_phase, sw.max_phase) == (8, 1, 8)
    assert isinstance(to_gluon(Padded(64, 64, 4, pad=1)), gl.PaddedSharedLayout)
    plain = to_gluon(Padded(64, 64, 4, pad=0))
    assert isinstance(plain, gl.SwizzledSharedLayout) and plain.max_phase == 1
    with pytest.raises(ValueError, match="to_gluon"):
        to_gluon(Tile(64, 64, 2, pad=8, swizzle=Swizzle(8, 1, 8)))  # no Gluon form in Triton 3.6


@pytest.mark.parametrize("elem_bytes", [4, 8])
def test_agrees_with_gl_bank_conflicts_for_word_accesses(elem_bytes):
    pytest.importorskip("triton")
    rows = bank_conflict_sweep(elem_bytes=(elem_bytes,), limit=80)
    bad = [r for r in rows if not r["agree"]]
    assert len(rows) == 80 and not bad, bad[:3]


def test_subword_differences_are_only_subword():
    """Where autopad and gl.bank_conflicts differ, the access is narrower than a bank word.

    Triton's counter treats each element position of a 128-byte line as its own bank; the H200 probes
    (tests/fixtures) show a bank is a 4-byte word. Measured: e.g. probe "stride2+0" (1-byte loads, lanes
    2 bytes apart) costs 1 wavefront on the H200; counting one-element banks would say 2.
    """
    pytest.importorskip("triton")
    rows = bank_conflict_sweep(elem_bytes=(1, 2), limit=120)
    assert any(r["agree"] for r in rows)
    for r in rows:
        if not r["agree"]:
            assert r["access_bytes"] < 4, r


def test_padded_layout_is_refused_by_the_triton_counter():
    pytest.importorskip("triton")
    with pytest.raises(TypeError):
        bank_conflicts_gluon(Blocked((1, 4), (4, 8), (8, 1)), (64, 64), Padded(64, 64, 4, pad=4))
