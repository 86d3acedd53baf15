"""Tests for the tile layout (autopad/layout_tile.py): padded tiles, legality, and padding and a swizzle
composed into one tile (the formula, its CUDA macro, its Gluon and CuTe spellings).

Wavefront counts are derived by hand in each test's docstring from bank = (byte offset // 4) % 32.
"""

from __future__ import annotations

import dataclasses
import pickle
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_layouts import composed, cute_swizzle, formula

from autopad.access import column_walk, score
from autopad.layouts import (
    Legality,
    Padded,
    Replicated,
    Structs,
    Swizzle,
    Swizzled,
    Tile,
    compose,
)

# ---- Padded ----------------------------------------------------------------------------------------------


@given(
    rows=st.integers(1, 70),
    cols=st.integers(1, 140),
    pad=st.integers(0, 9),
    elem=st.sampled_from([1, 2, 4, 8]),
)
@settings(max_examples=60, deadline=None)
def test_padded_offsets_and_footprint(rows, cols, pad, elem):
    lay = Padded(rows, cols, elem, pad=pad)
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    off = lay.offsets(r, c)
    assert off.shape == (rows, cols)
    assert (off == (r * (cols + pad) + c) * elem).all()
    assert lay.footprint == rows * (cols + pad) * elem
    assert lay.row_stride == cols + pad
    assert off.max() + elem <= lay.footprint
    assert len(np.unique(off)) == rows * cols  # no two elements share bytes


def test_inactive_rows_stay_minus_one():
    for lay in (Padded(32, 32, 4, pad=1), Swizzled(32, 32, 4, max_phase=8)):
        assert lay.offsets(np.array([-1, 0, 1]), np.array([3, 3, 3])).tolist()[0] == -1


def test_padded_textbook_tile():
    """tile[32][33] of floats: element (r, c) at byte 4 * (33 r + c); 32 * 33 * 4 = 4224 bytes."""
    lay = Padded(32, 32, 4, pad=1)
    assert lay.offsets(np.array([0, 1, 31]), np.array([0, 0, 31])).tolist() == [0, 132, 4 * (33 * 31 + 31)]
    assert lay.footprint == 4224
    assert lay.describe() == "pad 1"
    assert Padded(32, 32, 4).describe() == "unpadded"


@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"rows": 0, "cols": 32}, "rows"),
        ({"rows": 32, "cols": -1}, "cols"),
        ({"rows": 32, "cols": 32, "elem_bytes": 3}, "elem_bytes"),
        ({"rows": 32, "cols": 32, "pad": -1}, "pad"),
        ({"rows": 32, "cols": 32, "pad": 1.5}, "pad"),
    ],
)
def test_padded_rejects_bad_parameters(kwargs, name):
    with pytest.raises(ValueError, match=rf"^{name}:"):
        Padded(**kwargs)


def test_a_tile_beyond_32_bit_shared_addresses_is_refused():
    """Shared memory is addressed with 32 bits (the model refuses addresses from 2**32 on). A tile spanning
    more was built, and its int64 offsets wrapped: with rows 2**64 bytes apart every row of a column landed
    on byte 0, and the column walk scored 1 wavefront (a broadcast) instead of refusing."""
    for make in (
        lambda: Padded(32, 1, 4, pad=2**62 - 1),  # was built; offsets all 0
        lambda: Padded(32, 32, 4, pad=2**25),  # 4.3e9 bytes: was built; the model then refused its addresses
        lambda: Tile(2**16, 2**14, 4, pad=1, swizzle=Swizzle(4, 1, 8)),
    ):
        with pytest.raises(ValueError, match=r"^rows, cols, pad, elem_bytes: .* below 2\*\*32"):
            make()
    big = Padded(1, 2**30 - 1, 4)  # the largest addressable row of fp32 is still a tile
    assert big.footprint == 2**32 - 4


def test_a_swizzle_phase_past_any_tile_is_refused():
    """per_phase 2**63 was accepted and offsets() raised OverflowError (``explain --layout cute=3,2,70``)."""
    with pytest.raises(ValueError, match=r"^per_phase: .* below 2\*\*32"):
        Tile(32, 32, 4, swizzle=Swizzle(4, 2**63, 8))
    with pytest.raises(ValueError, match=r"^per_phase:"):
        Swizzled.from_cute(3, 2, 70, 32, 32)
    lay = Swizzled.from_cute(3, 2, 30, 32, 32)  # 2**27 rows a phase: every row in phase 0, as before
    assert (lay.offsets(np.arange(32)[:, None], np.arange(32)) == Padded(32, 32, 4).offsets(
        np.arange(32)[:, None], np.arange(32))).all()  # fmt: skip


def test_padded_takes_no_swizzle():
    with pytest.raises(ValueError, match="Swizzled"):
        Padded(32, 32, 4, max_phase=8)


# ---- legality ----------------------------------------------------------------------------------------------


def test_padding_must_be_a_multiple_of_the_vector_width():
    """float4 reads of a [32][33] tile: row 1 starts at byte 132, not 16-byte aligned."""
    bad = Padded(32, 32, 4, pad=1).check(vec=4)
    assert not bad and isinstance(bad, Legality)
    assert "multiple of the vector width 4" in bad.reason
    assert Padded(32, 32, 4, pad=4).check(vec=4)
    assert Padded(32, 32, 4, pad=2).check(vec=2)
    assert not Padded(32, 32, 2, pad=4).check(vec=8).ok  # 8 halves = 16 bytes; 4 halves of pad = 8 bytes
    assert Padded(32, 32, 2, pad=8).check(vec=8)


def test_vector_wider_than_16_bytes_is_illegal():
    bad = Padded(32, 32, 4).check(vec=8)
    assert not bad and "16-byte" in bad.reason
    assert not Padded(32, 32, 8).check(vec=4)
    assert Padded(32, 32, 8).check(vec=2)
    assert Padded(32, 32, 1).check(vec=16)


def test_vector_width_must_be_a_power_of_two_and_fit_the_row():
    assert "power of two" in Padded(32, 32, 4).check(vec=3).reason
    assert "whole number" in Padded(32, 30, 4).check(vec=4).reason


def test_swizzle_chunk_narrower_than_the_vector_is_illegal():
    bad = Swizzled(32, 32, 4, sw_vec=2, max_phase=8).check(vec=4)
    assert not bad and "straddle" in bad.reason
    assert Swizzled(32, 32, 4, sw_vec=4, max_phase=8).check(vec=4)
    assert Swizzled(32, 32, 4, sw_vec=4, max_phase=8).check(vec=2)  # narrower vectors stay in one chunk


def test_over_the_shared_memory_budget():
    """256 x 256 floats = 256 KiB: more than sm_90's 227 KiB per block."""
    bad = Padded(256, 256, 4).check()
    assert not bad and "budget" in bad.reason and str(256 * 256 * 4) in bad.reason
    assert Padded(128, 128, 4).check()
    assert not Padded(32, 32, 4, pad=1).check(budget=4223)
    assert Padded(32, 32, 4, pad=1).check(budget=4224)
    assert not Swizzled(256, 256, 4, max_phase=8).check()
    assert not Structs(4096, (16, 16)).check(budget=1024)
    assert not Replicated(256, 64).check(budget=1024)


# ---- composed layouts: padding and a swizzle together ----------------------------------------------------


@given(composed())
@settings(max_examples=60, deadline=None)
def test_composed_offsets_are_the_formula(lay):
    r, c = np.meshgrid(np.arange(lay.rows), np.arange(lay.cols), indexing="ij")
    off = lay.offsets(r, c)
    expected = [[formula(lay, i, j) for j in range(lay.cols)] for i in range(lay.rows)]
    assert off.tolist() == expected


@given(composed())
@settings(max_examples=150, deadline=None)
def test_composed_offsets_are_a_bijection_onto_each_rows_element_slots(lay):
    """Every element has its own aligned slot inside the footprint; row r fills exactly its first cols slots
    (the padding is never addressed), so the swizzle only permutes within a row."""
    r, c = np.meshgrid(np.arange(lay.rows), np.arange(lay.cols), indexing="ij")
    off = lay.offsets(r, c)
    assert (off % lay.elem_bytes == 0).all()
    assert off.min() >= 0 and off.max() + lay.elem_bytes <= lay.footprint
    assert len(np.unique(off)) == lay.rows * lay.cols
    slots = off // lay.elem_bytes - (lay.cols + lay.pad) * np.arange(lay.rows)[:, None]
    assert (np.sort(slots, axis=1) == np.arange(lay.cols)).all()
    assert lay.footprint == lay.rows * (lay.cols + lay.pad) * lay.elem_bytes


def test_composition_spellings_agree():
    sw = Swizzle(4, 1, 8)
    tile = Tile(32, 32, 4, pad=4, swizzle=sw)
    assert Padded(32, 32, 4, pad=4).swizzled(sw) == tile
    assert sw @ Padded(32, 32, 4, pad=4) == tile
    assert compose(sw, Padded(32, 32, 4, pad=4)) == tile
    assert Swizzled(32, 32, 4, sw_vec=4, max_phase=8).padded(4) == tile
    assert Tile(32, 32, 4, pad=4, swizzle=Swizzle.cute(3, 2, 3)) == tile  # CuTe form resolved on the row
    assert Swizzle.cute(3, 2, 3) @ Padded(32, 32, 4, pad=4) == tile
    assert Swizzle.gluon(4, 1, 8) == sw and sw.identity is False and Swizzle().identity
    assert hash(tile) == hash(Padded(32, 32, 4, pad=4).swizzled(sw))
    assert tile.describe() == "pad 4 + swizzle vec=4 per_phase=1 max_phase=8"
    assert tile.cuda_defines() == {"PAD": 4, "SW_VEC": 4, "SW_PER_PHASE": 1, "SW_MAX_PHASE": 8}
    assert (tile.sw_vec, tile.per_phase, tile.max_phase, tile.row_stride) == (4, 1, 8, 36)


def test_composition_keeps_the_special_cases():
    """Padded and Swizzled are the two special cases: results take the most specific class, equality is by
    parameters whichever class built a tile, and frozen dataclass semantics hold."""
    sw = Swizzle(4, 1, 8)
    assert type(Padded(32, 32, 4).swizzled(sw)) is Swizzled
    assert type(Padded(32, 32, 4, pad=4).swizzled(sw)) is Tile
    assert type(Swizzled(32, 32, 4, sw_vec=4, max_phase=8).padded(0)) is Swizzled
    assert type(Tile(32, 32, 4, pad=1).padded(2)) is Padded
    assert isinstance(Padded(32, 32, 4), Tile) and isinstance(Swizzled(32, 32, 4), Tile)
    assert not isinstance(Padded(32, 32, 4, pad=4).swizzled(sw), (Padded, Swizzled))
    assert Padded(32, 32, 4, pad=1) == Tile(32, 32, 4, pad=1) and Padded(32, 32, 4) == Swizzled(32, 32, 4)
    assert Padded(32, 32, 4, pad=1) != Padded(32, 32, 4, pad=2) and Padded(32, 32, 4) != object()
    assert len({Padded(32, 32, 4, pad=1), Tile(32, 32, 4, 1), Padded(32, 32, 4, pad=2)}) == 2
    assert repr(Padded(32, 32, 4, pad=1)) == "Padded(rows=32, cols=32, elem_bytes=4, pad=1)"
    with pytest.raises(dataclasses.FrozenInstanceError):
        Padded(32, 32, 4).pad = 1  # type: ignore[misc]
    assert dataclasses.replace(Padded(32, 32, 4, pad=1), pad=2) == Padded(32, 32, 4, pad=2)
    assert pickle.loads(pickle.dumps(Padded(32, 32, 4, pad=4).swizzled(sw))) == Tile(32, 32, 4, 4, sw)
    assert Padded(32, 32, 4, pad=4).swizzled(Swizzle()) == Padded(32, 32, 4, pad=4)


@pytest.mark.parametrize(
    "make,match",
    [
        (lambda: Tile(32, 24, 4, swizzle=Swizzle(1, 1, 16)), "^swizzle: 24 columns are not a multiple"),
        (lambda: Tile(32, 32, 4, pad=1, swizzle=Swizzle(8, 1, 8)), "^swizzle: .* wider than"),
        (lambda: Tile(32, 32, 4, swizzle=(4, 1, 8)), "^swizzle: expected"),
        (lambda: Tile(32, 32, 4, pad=True), "^pad:"),
        (lambda: Tile(32, 32, True), "^elem_bytes:"),
        (lambda: Swizzle(3, 1, 8), "^vec:"),
        (lambda: Swizzle(4, 1, 0), "^max_phase:"),
        (lambda: Swizzle.cute(-1, 0, 5), "^b:"),
        (lambda: Swizzle(4, 1, 8) @ Swizzled(32, 32, 4, sw_vec=1, max_phase=32), "already swizzled"),
        (lambda: compose(Swizzle(4, 1, 8), Structs(32)), "^compose:"),
        (lambda: Padded(32, 32, 4, pad=1).swizzled(Swizzle.cute(3, 0, 3)), "M \\+ S"),
    ],
)
def test_composition_rejects_what_is_not_a_layout(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_check_reasons_about_padding_and_swizzle_together():
    sw = Swizzle(4, 1, 8)
    assert Tile(32, 32, 4, pad=4, swizzle=sw).check(vec=4)
    assert Tile(32, 32, 4, pad=8, swizzle=sw).check(vec=2)
    bad = Tile(32, 32, 4, pad=2, swizzle=sw).check(vec=4)  # the swizzle is fine, the padding is not
    assert not bad and "multiple of the vector width 4" in bad.reason
    straddle = Tile(32, 32, 2, pad=8, swizzle=Swizzle(4, 1, 8)).check(vec=8)  # padding fine, chunk too narrow
    assert not straddle and "straddle the swizzle's 4-element chunks" in straddle.reason
    over = Tile(256, 256, 4, pad=4, swizzle=sw).check(vec=4)
    assert not over and "budget" in over.reason and str(256 * 260 * 4) in over.reason
    assert Tile(32, 32, 4, pad=1, swizzle=sw).check(vec=1)


def test_composed_gluon_and_cute_spellings():
    tile = Tile(32, 32, 4, pad=4, swizzle=Swizzle(4, 1, 8))
    spec = tile.gluon_spec()
    assert spec["kind"] == "unsupported" and "PaddedSharedLayout" in spec["reason"]
    assert Padded(32, 32, 4, pad=4).gluon_spec()["kind"] == "padded"
    assert Swizzled(32, 32, 4, sw_vec=4, max_phase=8).gluon_spec()["kind"] == "swizzled"
    with pytest.raises(ValueError, match="padded"):
        tile.to_cute()
    with pytest.raises(ValueError, match="no exact CuTe composition"):
        tile.cute_layout()
    assert Swizzled(32, 32, 4, sw_vec=4, max_phase=8).cute_layout() == (
        "composition(Swizzle<3,2,3>{}, Layout<Shape<Int<32>, Int<32>>, Stride<Int<32>, _1>>{})"
    )
    assert "Swizzle<0,0,0>" in Padded(32, 32, 4, pad=1).cute_layout()  # padding alone: identity swizzle
    wide = Tile(32, 32, 4, pad=32, swizzle=Swizzle(4, 1, 8))  # rows of 64: the padded offset's bits are clean
    assert "Swizzle<3,2,4>" in wide.cute_layout() and "Stride<Int<64>, _1>" in wide.cute_layout()


def test_composed_gluon_layout_is_refused_before_triton_sees_it():
    from autopad.gluon_model import to_gluon

    with pytest.raises(ValueError, match="^to_gluon: Gluon"):
        to_gluon(Tile(32, 32, 4, pad=4, swizzle=Swizzle(4, 1, 8)))


@pytest.mark.parametrize("cols", [4, 8, 16])
def test_cute_composition_with_padding_is_exact_only_for_power_of_two_rows(cols):
    """CuTe's composition(Swizzle<B,M,S>, Layout<Shape<R,C>, Stride<C+P,1>>) XORs bits of the padded offset
    r (C + P) + c. Brute force over every Swizzle<B,M,S> with B, M < 5 and S < 10, 64 rows: for every
    padding 0 < P < C (the paddings worth using) none equals padding + swizzle; for C + P a power of two
    the one cute_layout() names does. (Very short tiles can match by accident, hence 64 rows.)"""
    rows = 64
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    bms = [(b, m, s) for b in range(1, 5) for m in range(5) for s in range(10)]
    for vec in (1, 2, 4):
        for max_phase in (2, 4, 8):
            if vec * max_phase > cols:
                continue
            for per_phase in (1, 2):
                for pad in [*range(1, cols), cols, 3 * cols]:
                    lay = Tile(rows, cols, 1, pad=pad, swizzle=Swizzle(vec, per_phase, max_phase))
                    off = lay.offsets(r, c)
                    o = r * (cols + pad) + c
                    exact = [x for x in bms if (cute_swizzle(o, *x) == off).all()]
                    power = (cols + pad) & (cols + pad - 1) == 0
                    assert bool(exact) == power, (vec, max_phase, per_phase, pad, exact)
                    if power:
                        assert "Swizzle<{},{},{}>".format(*exact[0]) in lay.cute_layout()


def test_cuda_macro_is_the_same_formula(tmp_path):
    """common.cuh's AP_SMEM_OFF, compiled by the host C++ compiler, against the layout for composed tiles."""
    cxx = shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no host C++ compiler")
    root = Path(__file__).resolve().parents[1]
    tiles = [
        Tile(8, 32, 4, pad=4, swizzle=Swizzle(4, 1, 8)),
        Tile(16, 16, 2, pad=1, swizzle=Swizzle(2, 2, 4)),
        Padded(4, 12, 8, pad=3),
        Swizzled(8, 64, 1, sw_vec=16, per_phase=4, max_phase=4),
    ]
    body = []
    for t in tiles:
        d = t.cuda_defines()
        body.append(
            f'for (int r = 0; r < {t.rows}; ++r) for (int c = 0; c < {t.cols}; ++c) printf("%d ", '
            f"AP_SMEM_OFF(r, c, {t.cols}, {d['PAD']}, {d['SW_VEC']}, {d['SW_PER_PHASE']}, "
            f'{d["SW_MAX_PHASE"]})); printf("\\n");'
        )
    src = tmp_path / "off.cpp"
    src.write_text('#include <cstdio>\n#include "common.cuh"\nint main() {\n' + "\n".join(body) + "\n}\n")
    exe = tmp_path / "off"
    subprocess.run([cxx, "-I", str(root / "kernels" / "cuda"), str(src), "-o", str(exe)], check=True)
    lines = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.splitlines()
    for t, line in zip(tiles, lines, strict=True):
        r, c = np.meshgrid(np.arange(t.rows), np.arange(t.cols), indexing="ij")
        assert [int(x) for x in line.split()] == (t.offsets(r, c) // t.elem_bytes).ravel().tolist(), t


def test_model_scores_a_composed_layout_on_a_column_walk():
    """32x32 fp32, scalar reads down column c (lane = row r = 8a + b), q = c // 4, bank = word % 32.

    pad 1 + swizzle(vec 4, max 8): word 33 r + 4 (q ^ b) + c % 4 -> bank 8a + f(b) mod 32 with
    f(b) = b + 4 ((q ^ b) & 1) mod 8 a permutation of 0..7 -> 32 distinct banks -> 1 wavefront.
    pad 4 + the same swizzle: word 36 r + 4 (q ^ b) + c % 4 -> bank 4 (b + (q ^ b)) + c % 4 mod 32 (the 32a
    drops out). For q = 0 that is 8b: banks 0, 8, 16, 24, 8 rows each -> 8. For q = 7, b + (7 ^ b) = 7 for
    every b: all 32 rows in bank 31 -> 32. The swizzle undoes the padding's one-chunk shift per row: padding
    alone (pad 4: bank 4r, 8 banks -> 4) or the swizzle alone (4) would each do better.
    """
    good = Padded(32, 32, 4, pad=1).swizzled(Swizzle(4, 1, 8))
    bad = Padded(32, 32, 4, pad=4).swizzled(Swizzle(4, 1, 8))
    for col in range(32):
        assert score((column_walk(col),), good).wavefronts == 1
    assert score((column_walk(0),), bad).wavefronts == 8
    assert score((column_walk(31),), bad).wavefronts == 32
    assert score((column_walk(0),), Padded(32, 32, 4, pad=4)).wavefronts == 4
    whole = score([column_walk(c) for c in range(32)], good)
    assert (whole.wavefronts, whole.ideal) == (32, 32)
