"""Tests for the layouts (autopad.layouts): the cases where the textbook "+1 padding" habit goes wrong, the
JSON form, and the helpers the other layout tests share (each layout module has its own test file:
test_layout_tile.py, test_layout_swizzle.py, test_layout_arrays.py).

Every wavefront count below is derived by hand in its test's docstring from bank = (byte offset // 4) % 32
and the phase rules in ../shared/hardware/README.md, then checked through the layout, the access pattern
and the model together.
"""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from split_checks import assert_reexported

from autopad import analyze_batch
from autopad.access import Instruction, block_tile, column_walk, score
from autopad.layouts import (
    Padded,
    Replicated,
    Structs,
    Swizzle,
    Swizzled,
    Tile,
    from_dict,
)

LANE = np.arange(32)


def cute_swizzle(o: np.ndarray, b: int, m: int, s: int) -> np.ndarray:
    """CuTe's Swizzle<B, M, S> on an offset: XOR bits [M+S, M+S+B) into bits [M, M+B)."""
    return o ^ ((o >> s) & (((1 << b) - 1) << m))


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


def test_layout_addresses_feed_the_model_directly():
    """Layout offsets are the model's byte addresses: a column of [32][32] through analyze_batch -> 32."""
    off = Padded(32, 32, 4).offsets(LANE, np.zeros(32, dtype=int))
    assert analyze_batch(off[None, :], 4, "load")[0].tolist() == [32]


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

    from autopad.layouts import Padded, Swizzled, Tile

    t = Swizzled(64, 64, 2, sw_vec=8, per_phase=1, max_phase=8)
    h = hash(t)
    copy = pickle.loads(pickle.dumps(t))
    assert "_hash" not in copy.__dict__ and copy == t and hash(copy) == h
    assert hash(Padded(32, 32, 4, pad=1)) == hash(Tile(32, 32, 4, 1))


def test_names_split_out_of_layouts_stay_importable_from_it():
    """layouts.py was split one concern a module; every name it defined is still an attribute of
    autopad.layouts, the very object of its new home."""
    from autopad import layout_arrays, layout_checks, layout_swizzle, layout_tile, layouts

    homes = {
        layout_checks: "ELEM_BYTES _DEFAULT_BUDGET Legality _OK _pow2 _is_int _positive _pow2_param _pad "
        "_elem _log2 _vector_check _budget_check",
        layout_swizzle: "Swizzle CuteSwizzle _SWIZZLES _cute_xor",
        layout_tile: "Tile _Tile Padded Swizzled _tile compose",
        layout_arrays: "Structs Replicated",
    }
    assert_reexported(layouts, homes)
    assert layouts.Layout == Tile | Structs | Replicated
    assert callable(layouts.from_dict) and callable(layouts._SCHEMA.get)
