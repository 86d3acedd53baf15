"""Tests for the layouts (autopad.layouts): offsets, footprints, legality, the CuTe <-> Gluon swizzle forms,
and the cases where the textbook "+1 padding" habit goes wrong.

Every wavefront count below is derived by hand in its test's docstring from bank = (byte offset // 4) % 32
and the phase rules in ../shared/hardware/README.md, then checked through the layout, the access pattern
and the model together.
"""

from __future__ import annotations

import dataclasses
import json
import pickle
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autopad import analyze_batch
from autopad.access import Instruction, block_tile, column_walk, field_read, histogram_updates, score
from autopad.layouts import (
    Legality,
    Padded,
    Replicated,
    Structs,
    Swizzle,
    Swizzled,
    Tile,
    compose,
    from_dict,
)

LANE = np.arange(32)


def cute_swizzle(o: np.ndarray, b: int, m: int, s: int) -> np.ndarray:
    """CuTe's Swizzle<B, M, S> on an offset: XOR bits [M+S, M+S+B) into bits [M, M+B)."""
    return o ^ ((o >> s) & (((1 << b) - 1) << m))


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


# ---- Swizzled and CuTe ------------------------------------------------------------------------------------


@st.composite
def swizzles(draw):
    """(rows, cols, elem, B, M, S) with a power-of-two row and M + B <= log2 cols <= M + S."""
    log_cols = draw(st.integers(1, 7))
    b = draw(st.integers(0, log_cols))
    m = draw(st.integers(0, log_cols - b))
    s = draw(st.integers(log_cols - m, log_cols - m + 4))
    rows = draw(st.integers(1, 80))
    elem = draw(st.sampled_from([1, 2, 4, 8]))
    return rows, 1 << log_cols, elem, b, m, s


@given(swizzles())
@settings(max_examples=150, deadline=None)
def test_cute_formula_gives_the_swizzled_offsets(params):
    rows, cols, elem, b, m, s = params
    lay = Swizzled.from_cute(b, m, s, rows, cols, elem)
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    expected = cute_swizzle(r * cols + c, b, m, s) * elem
    assert (lay.offsets(r, c) == expected).all()
    assert lay.to_cute() == (b, m, s)  # CuTe -> Gluon -> CuTe
    assert lay.footprint == rows * cols * elem


@given(swizzles())
@settings(max_examples=100, deadline=None)
def test_gluon_to_cute_round_trip(params):
    rows, cols, elem, b, m, s = params
    lay = Swizzled(
        rows, cols, elem, sw_vec=1 << m, per_phase=1 << (m + s - (cols.bit_length() - 1)), max_phase=1 << b
    )
    assert Swizzled.from_cute(*lay.to_cute(), rows, cols, elem) == lay  # Gluon -> CuTe -> Gluon
    spec = lay.gluon_spec()
    assert (spec["vec"], spec["per_phase"], spec["max_phase"]) == (lay.sw_vec, lay.per_phase, lay.max_phase)


@given(swizzles())
@settings(max_examples=100, deadline=None)
def test_swizzle_permutes_within_each_row(params):
    """A swizzle moves elements only within their own row and never onto each other (non-square tiles too)."""
    rows, cols, elem, b, m, s = params
    lay = Swizzled.from_cute(b, m, s, rows, cols, elem)
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    off = lay.offsets(r, c) // elem
    assert (off // cols == r).all()
    assert (np.sort(off, axis=1) == np.arange(cols) + cols * np.arange(rows)[:, None]).all()


def test_known_cute_forms():
    """Swizzle<5,0,5> is the 32x32 fp32 'col ^ row'; Swizzle<3,2,3> permutes 4-float chunks by row % 8."""
    assert Swizzled(32, 32, 4, sw_vec=1, per_phase=1, max_phase=32).to_cute() == (5, 0, 5)
    assert Swizzled.from_cute(3, 2, 3, 64, 32, 4) == Swizzled(64, 32, 4, sw_vec=4, per_phase=1, max_phase=8)
    assert Swizzled(32, 128, 4, sw_vec=1, per_phase=1, max_phase=32).to_cute() == (5, 0, 7)
    assert Swizzled(64, 32, 2, sw_vec=2, per_phase=2, max_phase=16).to_cute() == (4, 1, 5)


def test_cute_conversion_errors():
    with pytest.raises(ValueError, match="M \\+ S"):
        Swizzled.from_cute(3, 0, 3, 32, 32)  # would XOR column bits into column bits
    with pytest.raises(ValueError, match="beyond"):
        Swizzled.from_cute(4, 2, 5, 32, 32)  # bits [2, 6) of a 5-bit column
    with pytest.raises(ValueError, match="power-of-two"):
        Swizzled.from_cute(1, 0, 5, 32, 24)
    with pytest.raises(ValueError, match="power-of-two"):
        Swizzled(32, 24, 4, sw_vec=1, max_phase=8).to_cute()


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"sw_vec": 3}, "^sw_vec:"),
        ({"per_phase": 0}, "^per_phase:"),
        ({"max_phase": 6}, "^max_phase:"),
        ({"pad": 1}, "padding"),
        ({"sw_vec": 4, "max_phase": 16}, "^swizzle:"),  # 64 elements of a 32-element row
    ],
)
def test_swizzled_rejects_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Swizzled(32, 32, 4, **kwargs)


def test_swizzled_describe_and_defines():
    lay = Swizzled(32, 32, 4, sw_vec=4, per_phase=1, max_phase=8)
    assert "max_phase=8" in lay.describe()
    assert lay.cuda_defines() == {"PAD": 0, "SW_VEC": 4, "SW_PER_PHASE": 1, "SW_MAX_PHASE": 8}
    assert Swizzled(32, 32, 4).describe() == "unswizzled"


# ---- the cases naive padding gets wrong -------------------------------------------------------------------


def _transpose_read(elem: int, rows: int = 32, cols: int = 32, block_y: int = 8):
    return block_tile(rows, cols, rows, block_y, "load", elem_bytes=elem, transposed=True)


def test_fp16_pad_one_is_still_conflicted():
    """fp16 [32][33]: a read-out warp reads column c down 32 rows: byte 2 (33 tx + c), word (33 tx + c) // 2.

    c even: tx = 2m -> word 33m + c/2, tx = 2m+1 -> 33m + 16 + c/2: banks m + c/2 and m + 16 + c/2, all 32
    distinct -> 1. c odd: tx = 2m+1 -> word 33m + 17 + (c-1)/2; bank 0 (from c = 1) is hit by m = 0 even and
    m = 15 odd, different words -> 2. The 32 instructions read columns 0..31 once: 16 x 1 + 16 x 2 = 48.
    """
    cost = score(_transpose_read(2), Padded(32, 32, 2, pad=1))
    assert (cost.wavefronts, cost.ideal) == (48, 32)
    assert sorted(w for _, _, w, _ in cost.per_instruction) == [1] * 16 + [2] * 16


def test_fp16_pad_two_is_conflict_free():
    """fp16 [32][34]: word 17 tx + c // 2, 17 odd -> a bank permutation for every column -> 32 x 1."""
    cost = score(_transpose_read(2), Padded(32, 32, 2, pad=2))
    assert (cost.wavefronts, cost.ideal, cost.conflicts) == (32, 32, 0)


def test_fp16_unpadded():
    """fp16 [32][32]: word 16 tx + c // 2 -> banks c//2 and 16 + c//2, 16 words each -> 16 per column."""
    assert score(_transpose_read(2), Padded(32, 32, 2)).wavefronts == 32 * 16


def test_int8_pad_one_is_not_enough():
    """int8 [32][33]: tx = 4q + r, byte 132q + 33r + c, word 33q + f(r), f(r) = (33r + c) // 4, q = 0..7.

    Each r covers 8 consecutive banks from f(r); f(1)-f(0), f(2)-f(1), f(3)-f(2) >= 8, so they overlap only
    by wrapping: f(3) + 7 >= f(0) + 32, i.e. f(3) - f(0) = (99 + c % 4) // 4 = 25 for c % 4 in {1, 2, 3}:
    one bank holds two words -> 2; for c % 4 == 0, 24 -> 1. Over 32 columns: 8 x 1 + 24 x 2 = 56.
    """
    cost = score(_transpose_read(1), Padded(32, 32, 1, pad=1))
    assert (cost.wavefronts, cost.ideal) == (56, 32)


def test_int8_unpadded_and_pad_four():
    """int8 [32][32]: word 8 tx + c // 4 -> 4 banks x 8 words -> 8 each, 256. [32][36]: word 9 tx + c // 4,
    9 odd -> conflict-free, 32."""
    assert score(_transpose_read(1), Padded(32, 32, 1)).wavefronts == 256
    assert score(_transpose_read(1), Padded(32, 32, 1, pad=4)).wavefronts == 32


def _vector_column(rows: int = 32, chunk: int = 0) -> tuple[Instruction, ...]:
    """Lane i reads the float4 at (row i, cols 4 chunk .. 4 chunk + 3): 16-byte accesses down a column."""
    return (Instruction("vec column", "load", 16, np.arange(rows), np.full(rows, 4 * chunk)),)


def test_16_byte_vectors_need_padding_in_multiples_of_4_floats():
    """float4 down a column of a [32][32+pad] tile, phases of 8 lanes (nothing pairs), unit = 16 bytes,
    8 unit-banks: pad 0 -> address 128 i, all in unit-bank 0 -> 8 per phase, 32; pad 4 -> 144 i = 9 units
    per row -> 8 distinct unit-banks -> 1 per phase, 4; pad 8 -> 160 i = 10 units -> unit-bank 2i mod 8,
    2-way -> 8. pad 1 is not even legal: row 1 starts at byte 132."""
    assert score(_vector_column(), Padded(32, 32, 4)).wavefronts == 32
    pad4 = score(_vector_column(), Padded(32, 32, 4, pad=4))
    assert (pad4.wavefronts, pad4.ideal) == (4, 4)
    assert score(_vector_column(), Padded(32, 32, 4, pad=8)).wavefronts == 8
    assert not Padded(32, 32, 4, pad=1).check(vec=4)
    with pytest.raises(ValueError, match="aligned"):
        score(_vector_column(), Padded(32, 32, 4, pad=1))


def test_16_byte_row_reads_are_free_with_legal_padding():
    """A 8x4 block reading float4s along rows: each 8-lane phase is one row's 128 contiguous bytes -> 1."""
    pattern = block_tile(32, 32, 8, 4, "load", elem_bytes=4, vec=4)
    for pad in (0, 4, 8):
        cost = score(pattern, Padded(32, 32, 4, pad=pad))
        assert (cost.wavefronts, cost.ideal) == (32, 32), pad


def test_swizzle_64x32_fp32_transpose_read():
    """64 rows x 32 floats read out by a 64x4 block: each warp reads one column down 32 rows. Unswizzled:
    word 32 r + c, one bank -> 32 each; chunk c ^ (r % 32): bank c ^ (r % 32), distinct -> 1 each. 8 warps
    x 8 j = 64 instructions."""
    pattern = block_tile(64, 32, 64, 4, "load", transposed=True)
    assert len(pattern) == 64
    assert score(pattern, Swizzled(64, 32, 4)).wavefronts == 64 * 32
    sw = score(pattern, Swizzled(64, 32, 4, sw_vec=1, per_phase=1, max_phase=32))
    assert (sw.wavefronts, sw.conflicts) == (64, 0)


def test_swizzle_64x32_fp16_needs_per_phase_two():
    """fp16 rows of 32 are 16 words: two rows per pass over the banks. sw_vec 2 (one word), max_phase 16:
    word 16 r + (c//2 ^ phase(r)), bank 16 (r % 2) + (c//2 ^ phase(r)). With per_phase 1, phase = r % 16 and
    rows r, r + 16 collide -> 2. With per_phase 2, phase = (r // 2) % 16: (r % 2, r // 2) distinct -> 1."""
    for rows in (LANE, LANE + 32):
        for col in (0, 5, 31):
            ins = (Instruction("col", "load", 2, rows, np.full(32, col)),)
            one = Swizzled(64, 32, 2, sw_vec=2, per_phase=1, max_phase=16)
            two = Swizzled(64, 32, 2, sw_vec=2, per_phase=2, max_phase=16)
            assert score(ins, one).wavefronts == 2
            assert score(ins, two).wavefronts == 1


def test_swizzle_32x128_fp32():
    """Rows of 128 floats are 4 passes over the banks: a column walk is 32-way (word 128 r + c -> bank c).
    Scalar swizzle c ^ r: bank (c % 32) ^ r -> 1. A float4 swizzle (chunk ^ r % 8) read one float at a time:
    bank 4 ((c//4 % 8) ^ (r % 8)) + c % 4 -> 8 banks x 4 rows -> 4, but read as float4s down the column
    (8-lane phases) each phase's rows 0..7 land in 8 distinct chunk slots -> 1 per phase -> 4 in all."""
    for col in (0, 37, 127):
        walk = (column_walk(col),)
        assert score(walk, Padded(32, 128, 4)).wavefronts == 32
        assert score(walk, Swizzled(32, 128, 4, sw_vec=1, per_phase=1, max_phase=32)).wavefronts == 1
        assert score(walk, Swizzled(32, 128, 4, sw_vec=4, per_phase=1, max_phase=8)).wavefronts == 4
    vec_sw = Swizzled(32, 128, 4, sw_vec=4, per_phase=1, max_phase=8)
    assert vec_sw.check(vec=4)
    for chunk in (0, 9, 31):
        assert score(_vector_column(chunk=chunk), Padded(32, 128, 4)).wavefronts == 32
        assert score(_vector_column(chunk=chunk), vec_sw).wavefronts == 4


# ---- Structs: AoS vs SoA ----------------------------------------------------------------------------------


def test_struct_field_offsets_and_strides():
    assert Structs(32, (4, 4, 4, 4)).field_offsets == (0, 4, 8, 12)
    assert Structs(32, (4, 4, 4, 4)).stride == 16
    assert Structs(32, (4, 4, 4)).stride == 12
    assert Structs(32, (4, 8)).field_offsets == (0, 8)  # the double aligns to 8
    assert Structs(32, (4, 8)).stride == 16
    assert Structs(32, (1, 2, 4)).field_offsets == (0, 2, 4)
    assert Structs(32, (1, 2, 4)).stride == 8
    assert Structs(32, (1, 16)).stride == 32
    assert Structs(32, (4, 4, 4, 4), pad=4).stride == 20


def test_aos_and_soa_offsets_and_footprints():
    aos = Structs(32, (4, 4, 4, 4))
    soa = Structs(32, (4, 4, 4, 4), aos=False)
    i = np.arange(32)
    for f in range(4):
        assert (aos.offsets(i, np.full(32, f)) == 16 * i + 4 * f).all()
        assert (soa.offsets(i, np.full(32, f)) == 128 * f + 4 * i).all()
    assert aos.footprint == soa.footprint == 512
    mixed = Structs(10, (1, 4), aos=False)  # field arrays start 16-byte aligned: 10 bytes, then 16..56
    assert mixed.offsets(np.array([0, 9]), np.array([1, 1])).tolist() == [16, 52]
    assert mixed.footprint == 56
    assert aos.describe() == "AoS" and soa.describe() == "SoA"


@pytest.mark.parametrize("field", range(4))
def test_aos_16_byte_struct_4_way_soa_free(field):
    """The seed's P4 {a, b, c, d}: AoS stride 4 words -> 4-way; SoA stride 1 -> 1; padded to 5 words -> 1."""
    read = (field_read(32, field),)
    assert score(read, Structs(32, (4, 4, 4, 4))).wavefronts == 4
    assert score(read, Structs(32, (4, 4, 4, 4), aos=False)).wavefronts == 1
    assert score(read, Structs(32, (4, 4, 4, 4), pad=4)).wavefronts == 1


def test_aos_12_byte_struct_conflict_free():
    assert score((field_read(32, 2),), Structs(32, (4, 4, 4))).wavefronts == 1


def test_aos_double_field():
    """{float; double}: the double of record i at byte 16 i + 8, words 4i+2, 4i+3. A 16-lane phase covers
    banks (4i + 2) mod 32 for i < 16: 8 values twice -> 2 per phase -> 4; SoA doubles are contiguous -> 2."""
    read = (field_read(32, 1, field_bytes=8),)
    cost = score(read, Structs(32, (4, 8)))
    assert (cost.wavefronts, cost.ideal) == (4, 2)
    assert score(read, Structs(32, (4, 8), aos=False)).wavefronts == 2


def test_structs_reject_bad_parameters():
    with pytest.raises(ValueError, match="^fields:"):
        Structs(32, (3,))
    with pytest.raises(ValueError, match="^fields:"):
        Structs(32, ())
    with pytest.raises(ValueError, match="^count:"):
        Structs(0, (4,))
    with pytest.raises(ValueError, match="^pad:"):
        Structs(32, (8, 4), pad=4)


# ---- Replicated: replica-major vs interleaved -------------------------------------------------------------


def test_replicated_offsets_and_footprint():
    major = Replicated(256, 4, pad=1)
    inter = Replicated(256, 4, interleaved=True)
    r = np.array([0, 1, 3])
    b = np.array([5, 5, 255])
    assert major.offsets(r, b).tolist() == [4 * 5, 4 * (257 + 5), 4 * (3 * 257 + 255)]
    assert inter.offsets(r, b).tolist() == [4 * (5 * 4), 4 * (5 * 4 + 1), 4 * (255 * 4 + 3)]
    assert major.footprint == 4 * 257 * 4
    assert inter.footprint == 256 * 4 * 4
    assert Replicated(256, 4, interleaved=True, pad=1).footprint == 256 * 5 * 4
    assert major.offsets(np.array([-1]), np.array([0])).tolist() == [-1]
    assert "replica-major" in major.describe() and "interleaved" in inter.describe()
    assert major.cuda_defines() == {"BINS": 256, "REPLICAS": 4, "INTERLEAVED": 0, "PAD": 1}


def test_hot_bin_with_a_replica_per_lane():
    """32 lanes add to bin 5, lane i in replica i. Replica-major, 256 bins: word 256 i + 5, all bank 5 -> 32.
    Padded by one word: 257 i + 5 -> bank (i + 5) -> 1. Interleaved: word 5 * 32 + i -> bank i -> 1."""
    updates = histogram_updates([5] * 32, replica_of_lane=LANE)
    assert score(updates, Replicated(256, 32)).wavefronts == 32
    assert score(updates, Replicated(256, 32, pad=1)).wavefronts == 1
    assert score(updates, Replicated(256, 32, interleaved=True)).wavefronts == 1


def test_hot_bin_with_four_interleaved_replicas():
    """Lane i uses replica i % 4: four counters, eight lanes on each; atomics do not broadcast -> 8."""
    updates = histogram_updates([5] * 32, replica_of_lane=LANE % 4)
    assert score(updates, Replicated(256, 4, interleaved=True)).wavefronts == 8
    single = histogram_updates([5] * 32)
    assert score(single, Replicated(256, 1)).wavefronts == 32


def test_replicated_rejects_bad_parameters():
    with pytest.raises(ValueError, match="^bins:"):
        Replicated(0)
    with pytest.raises(ValueError, match="^replicas:"):
        Replicated(256, 0)
    with pytest.raises(ValueError, match="^pad:"):
        Replicated(256, 2, pad=-1)
    with pytest.raises(ValueError, match="^elem_bytes:"):
        Replicated(256, 2, elem_bytes=3)


def test_layout_addresses_feed_the_model_directly():
    """Layout offsets are the model's byte addresses: a column of [32][32] through analyze_batch -> 32."""
    off = Padded(32, 32, 4).offsets(LANE, np.zeros(32, dtype=int))
    assert analyze_batch(off[None, :], 4, "load")[0].tolist() == [32]


# ---- composed layouts: padding and a swizzle together ----------------------------------------------------


def formula(lay, r: int, c: int) -> int:
    """The one formula element by element in plain Python: r (cols + pad) + ((c // v) ^ phase(r)) v + c % v"""
    v, pp, mp = lay.sw_vec, lay.per_phase, lay.max_phase
    return (r * (lay.cols + lay.pad) + ((c // v) ^ ((r // pp) % mp)) * v + c % v) * lay.elem_bytes


@st.composite
def composed(draw):
    """A legal padded + swizzled tile: rows of whole groups of max_phase chunks of vec elements, any pad."""
    vec = 1 << draw(st.integers(0, 3))
    max_phase = 1 << draw(st.integers(0, 4))
    cols = vec * max_phase * draw(st.integers(1, 4))
    per_phase = 1 << draw(st.integers(0, 3))
    rows = draw(st.integers(1, 40))
    pad = draw(st.integers(0, 9))
    elem = draw(st.sampled_from([1, 2, 4, 8]))
    return Tile(rows, cols, elem, pad=pad, swizzle=Swizzle(vec, per_phase, max_phase))


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


# ---- the JSON form ----------------------------------------------------------------------------------------


@given(
    lay=st.one_of(
        composed(),
        st.builds(
            Replicated,
            st.integers(1, 4096),
            st.integers(1, 64),
            st.sampled_from([1, 2, 4, 8]),
            st.booleans(),
            st.integers(0, 4),
        ),
        st.builds(
            lambda n, fields, aos, k: Structs(n, tuple(fields), aos, k * max(fields)),
            st.integers(1, 512),
            st.lists(st.sampled_from([1, 2, 4, 8, 16]), min_size=1, max_size=5),
            st.booleans(),
            st.integers(0, 2),
        ),
    )
)
@settings(max_examples=120, deadline=None)
def test_to_dict_round_trips_through_json(lay):
    d = lay.to_dict()
    back = from_dict(json.loads(json.dumps(d)))
    assert back == lay and back.to_dict() == d
    if isinstance(lay, Tile):
        assert (
            back.offsets(np.arange(lay.rows), np.zeros(lay.rows, int))
            == lay.offsets(np.arange(lay.rows), np.zeros(lay.rows, int))
        ).all()


def test_to_dict_formats():
    assert Padded(32, 32, 4, pad=1).to_dict() == {
        "kind": "tile", "rows": 32, "cols": 32, "elem_bytes": 4, "pad": 1, "sw_vec": 1, "per_phase": 1,
        "max_phase": 1,
    }  # fmt: skip
    assert Replicated(256, 4, 4, True, 1).to_dict() == {
        "kind": "replicated", "bins": 256, "replicas": 4, "elem_bytes": 4, "interleaved": True, "pad": 1,
    }  # fmt: skip
    assert Structs(32, (4, 8), aos=False, pad=8).to_dict() == {
        "kind": "structs", "count": 32, "fields": [4, 8], "aos": False, "pad": 8,
    }  # fmt: skip
    assert type(from_dict(Swizzled(32, 32, 4, sw_vec=4, max_phase=8).to_dict())) is Swizzled
    assert type(from_dict(Padded(32, 32, 4, pad=2).to_dict())) is Padded
    assert Padded(np.int64(32), 32, 4).to_dict()["rows"].__class__ is int  # JSON-safe


TILE = Tile(32, 32, 4, pad=4, swizzle=Swizzle(4, 1, 8)).to_dict()


@pytest.mark.parametrize(
    "d,match",
    [
        ([1, 2], "^layout:"),
        ({**TILE, "kind": "padded"}, "^kind:"),
        ({k: v for k, v in TILE.items() if k != "kind"}, "^kind:"),
        ({k: v for k, v in TILE.items() if k != "pad"}, "^pad: missing"),
        ({**TILE, "swizzle": 1}, "^swizzle: not a field"),
        ({**TILE, "rows": True}, "^rows: must be an int"),
        ({**TILE, "rows": 32.0}, "^rows: must be an int"),
        ({**TILE, "rows": "32"}, "^rows: must be an int"),
        ({**TILE, "rows": 0}, "^rows:"),
        ({**TILE, "pad": -1}, "^pad:"),
        ({**TILE, "elem_bytes": 3}, "^elem_bytes:"),
        ({**TILE, "sw_vec": 3}, "^sw_vec:"),
        ({**TILE, "per_phase": 0}, "^per_phase:"),
        ({**TILE, "max_phase": False}, "^max_phase: must be an int"),
        ({**TILE, "max_phase": 16}, "^swizzle:.*max_phase 16"),
        ({**Replicated(256).to_dict(), "interleaved": 0}, "^interleaved: must be true or false"),
        ({**Replicated(256).to_dict(), "bins": -3}, "^bins:"),
        ({**Replicated(256).to_dict(), "pad": None}, "^pad: must be an int"),
        ({**Structs(32).to_dict(), "fields": [4, 3]}, "^fields:"),
        ({**Structs(32).to_dict(), "fields": "4"}, "^fields:"),
        ({**Structs(32).to_dict(), "fields": [True]}, "^fields:"),
        ({**Structs(32).to_dict(), "fields": []}, "^fields:"),
        ({**Structs(32).to_dict(), "aos": "yes"}, "^aos:"),
        ({**Structs(32, (8, 4)).to_dict(), "pad": 4}, "^pad:"),
    ],
)
def test_from_dict_rejects_and_names_the_field(d, match):
    with pytest.raises(ValueError, match=match):
        from_dict(d)


def test_a_tiles_kept_hash_is_not_pickled():
    """A tile keeps its hash after the first call; a pickled copy computes its own (a str's hash is not the
    same in another process), and equal tiles of either class still hash alike."""
    import pickle

    from autopad.layouts import Padded, Swizzled, Tile

    t = Swizzled(64, 64, 2, sw_vec=8, per_phase=1, max_phase=8)
    h = hash(t)
    copy = pickle.loads(pickle.dumps(t))
    assert "_hash" not in copy.__dict__ and copy == t and hash(copy) == h
    assert hash(Padded(32, 32, 4, pad=1)) == hash(Tile(32, 32, 4, 1))
