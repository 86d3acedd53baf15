"""Tests for the access patterns (autopad.access): the shapes they produce, their errors, and ``score``.

Lane numbering follows CUDA: lane = tx + ty * block_x within a block, 32 consecutive lanes to a warp.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autopad.access import (
    Group,
    Instruction,
    Stacked,
    addresses,
    block_tile,
    column_walk,
    field_read,
    histogram_updates,
    row_walk,
    score,
)
from autopad.layouts import Padded, Replicated
from autopad.model import analyze_batch

LANE = np.arange(32)


def test_row_walk():
    ins = row_walk(3)
    assert (ins.op, ins.access_bytes, ins.count) == ("load", 4, 1)
    assert (ins.rows == 3).all() and (ins.cols == LANE).all()
    vec = row_walk(0, op="store", elem_bytes=2, vec=8)
    assert (vec.op, vec.access_bytes) == ("store", 16)
    assert (vec.cols == 8 * LANE).all()


def test_column_walk():
    ins = column_walk(7, elem_bytes=8)
    assert ins.access_bytes == 8
    assert (ins.rows == LANE).all() and (ins.cols == 7).all()
    assert len(column_walk(0, warp=64).rows) == 64


def test_block_tile_transpose_write_shape():
    """32x8 threads over a 32x32 tile: 8 warps (one per ty), 4 j steps each -> 32 instructions."""
    pattern = block_tile(32, 32, 32, 8, "store")
    assert len(pattern) == 32
    assert len({ins.name for ins in pattern}) == 32
    seen = set()
    for ins in pattern:
        assert ins.op == "store" and ins.access_bytes == 4 and len(ins.rows) == 32
        assert len(set(ins.rows.tolist())) == 1  # a warp is one row of the tile: ty + j
        assert (ins.cols == LANE).all()
        seen.update(zip(ins.rows.tolist(), ins.cols.tolist(), strict=True))
    assert seen == {(r, c) for r in range(32) for c in range(32)}  # every element exactly once


def test_block_tile_transposed_read_shape():
    pattern = block_tile(32, 32, 32, 8, "load", transposed=True)
    assert len(pattern) == 32
    cols = sorted(int(ins.cols[0]) for ins in pattern)
    assert cols == list(range(32))  # each instruction is one column walk
    for ins in pattern:
        assert (ins.rows == LANE).all() and len(set(ins.cols.tolist())) == 1


def test_block_tile_small_block_x_spans_rows():
    """A 16x8 block over a 16-wide tile: one warp covers two rows (ty and ty + 1)."""
    pattern = block_tile(32, 16, 16, 8, "load")
    assert len(pattern) == 4 * 4  # 128 threads = 4 warps, rows 0, 8, 16, 24 -> 4 j steps
    first = pattern[0]
    assert first.rows.tolist() == [0] * 16 + [1] * 16
    assert first.cols.tolist() == list(range(16)) * 2


def test_block_tile_vectorised():
    pattern = block_tile(32, 32, 8, 4, "load", vec=4)
    assert len(pattern) == 8  # one warp, rows j = 0, 4, .., 28
    assert pattern[0].access_bytes == 16
    assert pattern[0].cols.tolist() == [4 * tx for tx in range(8)] * 4
    assert pattern[0].rows.tolist() == [ty for ty in range(4) for _ in range(8)]
    transposed = block_tile(32, 32, 16, 2, "load", vec=2, transposed=True)
    assert all(ins.access_bytes == 4 for ins in transposed)  # each v is its own scalar access
    assert len(transposed) == 32 // 2 * 2  # 1 warp x 16 j steps x 2 v


@pytest.mark.parametrize(
    "args,kwargs,match",
    [
        ((32, 32, 32, 3, "load"), {}, "divide"),  # 96 threads is 3 warps, but 32 rows % 3 != 0
        ((32, 32, 16, 3, "load"), {}, "whole number"),  # 48 threads
        ((32, 32, 16, 8, "load"), {}, "cover"),  # 16 threads do not cover 32 columns
        ((32, 32, 32, 8, "load"), {"vec": 2}, "cover"),
        ((24, 32, 32, 16, "load"), {}, "divide"),
    ],
)
def test_block_tile_errors(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        block_tile(*args, **kwargs)


def test_field_read():
    ins = field_read(20, 2, field_bytes=8)
    assert ins.access_bytes == 8
    assert ins.rows.tolist() == list(range(20)) + [-1] * 12  # records beyond count: inactive lanes
    assert (ins.cols == 2).all()


def test_histogram_updates_shapes():
    values = np.arange(70) % 256
    ups = histogram_updates(values)
    assert len(ups) == 3
    assert all(u.op == "atomic" and u.access_bytes == 4 for u in ups)
    assert ups[0].cols.tolist() == list(range(32))
    assert ups[2].rows.tolist() == [0] * 6 + [-1] * 26  # a 6-value tail leaves 26 lanes inactive
    assert ups[2].cols[:6].tolist() == list(range(64, 70))
    reps = histogram_updates([1] * 32, replica_of_lane=LANE % 4)
    assert reps[0].rows.tolist() == (LANE % 4).tolist()
    assert histogram_updates(iter([3, 4]))[0].cols[:2].tolist() == [3, 4]
    assert histogram_updates([]) == ()


def test_histogram_updates_errors():
    with pytest.raises(ValueError, match="replica_of_lane"):
        histogram_updates([1, 2, 3], replica_of_lane=[0, 1])


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"op": "read"}, "^op:"),
        ({"access_bytes": 3}, "^access_bytes:"),
        ({"rows": np.arange(31)}, "equal length"),
        ({"rows": np.zeros((32, 1))}, "1-D"),
    ],
)
def test_instruction_errors(kwargs, match):
    base = {"name": "x", "op": "load", "access_bytes": 4, "rows": LANE, "cols": LANE}
    with pytest.raises(ValueError, match=match):
        Instruction(**{**base, **kwargs})


def test_instruction_converts_to_int_arrays():
    ins = Instruction("x", "load", 4, list(range(32)), [0] * 32)
    assert ins.rows.dtype == np.int64 and ins.cols.dtype == np.int64


def test_addresses_uses_the_layout():
    ins = column_walk(1)
    assert addresses(ins, Padded(32, 32, 4, pad=1)).tolist() == [4 * (33 * r + 1) for r in range(32)]


def test_score_aggregates_counts():
    """A column walk (32 wavefronts) run 3 times and a row walk (1) run 5 times: 3*32 + 5*1 per tile."""
    col = Instruction("col", "load", 4, LANE, np.zeros(32, dtype=int), count=3)
    row = Instruction("row", "load", 4, np.zeros(32, dtype=int), LANE, count=5)
    cost = score((col, row), Padded(32, 32, 4))
    assert (cost.wavefronts, cost.ideal, cost.conflicts) == (3 * 32 + 5, 3 + 5, 3 * 31)
    assert cost.per_instruction == (("col", 3, 32, 1), ("row", 5, 1, 1))
    assert cost.degree == pytest.approx(101 / 8)


def test_score_mixes_ops_and_widths():
    """Stores, loads and atomics of different widths are batched separately and kept in order."""
    pattern = (
        Instruction("st", "store", 8, LANE, np.zeros(32, dtype=int)),
        Instruction("ld", "load", 4, LANE, np.zeros(32, dtype=int)),
        Instruction("atom", "atomic", 4, np.zeros(32, dtype=int), np.full(32, 5)),
        Instruction("ld2", "load", 4, np.zeros(32, dtype=int), LANE),
    )
    cost = score(pattern, Padded(32, 32, 8))
    # fp64 column: byte 256 r; 16-lane phases, each lane's 2 words in banks 0-1 -> 16 per phase -> 32
    # 4-byte loads of element starts (byte 256 r): all bank 0 -> 32; atomics on one address -> 32; row: lane c
    # at byte 8 c, words 2c in 16 even banks, two each -> 2
    assert [p[2] for p in cost.per_instruction] == [32, 32, 32, 2]
    assert [p[0] for p in cost.per_instruction] == ["st", "ld", "atom", "ld2"]
    assert cost.ideal == 2 + 1 + 1 + 1


def test_score_checks_lanes_against_the_arch():
    with pytest.raises(ValueError, match="64"):
        score((column_walk(0),), Padded(64, 32, 4), arch="cdna3")
    assert score((column_walk(0, warp=64),), Padded(64, 32, 4, pad=1), arch="cdna3").wavefronts == 2


def test_empty_pattern_scores_zero():
    cost = score((), Padded(32, 32, 4))
    assert (cost.wavefronts, cost.ideal, cost.degree) == (0, 0, 1.0)


def test_histogram_hot_bin_score():
    """Data all equal to 5, one shared histogram: every update instruction costs 32."""
    cost = score(histogram_updates([5] * 96), Replicated(256))
    assert (cost.wavefronts, cost.ideal) == (96, 3)


@given(
    extra=st.integers(0, 40),
    first=st.integers(0, 64),
    col=st.integers(0, 31),
    active=st.lists(st.booleans(), min_size=32, max_size=32),
    op=st.sampled_from(["load", "store"]),
)
@settings(max_examples=80, deadline=None)
def test_padding_a_32_wide_fp32_column_walk_by_one_removes_all_conflicts(extra, first, col, active, op):
    """Any 32 consecutive rows of one column: words 33 r + c hit banks (r + c) mod 32, all distinct."""
    rows = first + 32 + extra
    r = np.where(active, first + LANE, -1)
    ins = (Instruction("col", op, 4, r, np.full(32, col)),)
    padded = score(ins, Padded(rows, 32, 4, pad=1))
    assert padded.conflicts == 0
    assert padded.wavefronts == (1 if any(active) else 0)
    unpadded = score(ins, Padded(rows, 32, 4))
    assert unpadded.wavefronts == len({int(x) for x in r if x >= 0})  # one bank, a distinct word per row


def test_block_tile_transposed_errors_name_the_right_dimension():
    with pytest.raises(ValueError, match="64 rows"):
        block_tile(64, 32, 32, 8, "load", transposed=True)  # 32 threads cannot cover 64 rows
    with pytest.raises(ValueError, match="24 columns"):
        block_tile(32, 24, 32, 16, "load", transposed=True)  # the j loop walks 24 columns


# ---- the stacked form -------------------------------------------------------------------------------------


def _stack(groups, index, size, namer=None):
    return Stacked(tuple(groups), tuple(np.asarray(i) for i in index), size, namer)


def test_stacked_form_scores_like_the_instructions():
    """The same three instructions as Instructions and stacked by hand: same totals and per-instruction
    costs, in the pattern's order although the groups interleave it."""
    col = Instruction("col", "load", 4, LANE, np.zeros(32, dtype=int), count=3)
    st8 = Instruction("st8", "store", 8, LANE, np.zeros(32, dtype=int))
    row = Instruction("row", "load", 4, np.zeros(32, dtype=int), LANE, count=5)
    loads = Group("load", 4, np.stack([col.rows, row.rows]), np.stack([col.cols, row.cols]), np.array([3, 5]))
    stores = Group("store", 8, st8.rows[None], st8.cols[None], np.array([1]))
    stacked = _stack([loads, stores], [[0, 2], [1]], 3, lambda: ["col", "st8", "row"])
    lay = Padded(32, 32, 8)
    a, b = score(stacked, lay), score((col, st8, row), lay)
    assert (a.wavefronts, a.ideal) == (b.wavefronts, b.ideal) == (3 * 32 + 32 + 5 * 2, 3 + 2 + 5)
    assert a.per_instruction == b.per_instruction
    assert stacked.counts.tolist() == [3, 1, 5]
    assert stacked["store", 8] is stores and dict(stacked.items())[("load", 4)] is loads
    with pytest.raises(KeyError):
        stacked["atomic", 4]
    back = stacked.instructions()
    assert [i.name for i in back] == ["col", "st8", "row"] and back[2].count == 5
    assert (back[1].rows == st8.rows).all() and back[1].access_bytes == 8
    assert _stack([stores], [[0]], 1).names == ("instruction 0",)


def test_instructions_stack_once_per_tuple():
    pattern = tuple(block_tile(32, 32, 32, 8, "store")) + tuple(
        block_tile(32, 32, 32, 8, "load", transposed=True)
    )
    st = Stacked.from_instructions(pattern)
    assert st is Stacked.from_instructions(pattern)  # cached on the tuple
    assert [(op, w) for (op, w), _ in st.items()] == [("store", 4), ("load", 4)]
    op, width, rows, cols, counts = st.groups[1]  # unpacks as (op, width, rows, cols, counts)
    assert (op, width, rows.shape, cols.shape, counts.shape) == ("load", 4, (32, 32), (32, 32), (32,))
    assert st.index[1].tolist() == list(range(32, 64))


@pytest.mark.parametrize(
    "groups,index,size,match",
    [
        ([Group("read", 4, np.zeros((1, 32)), np.zeros((1, 32)), np.ones(1))], [[0]], 1, "^op:"),
        ([Group("load", 3, np.zeros((1, 32)), np.zeros((1, 32)), np.ones(1))], [[0]], 1, "^access_bytes:"),
        ([Group("load", 4, np.zeros((2, 32)), np.zeros((1, 32)), np.ones(2))], [[0, 1]], 2, "do not agree"),
        ([Group("load", 4, np.zeros(32), np.zeros(32), np.ones(1))], [[0]], 1, "do not agree"),
        ([Group("load", 4, np.zeros((1, 32)), np.zeros((1, 32)), np.ones(1))], [], 1, "^index:"),
    ],
)
def test_stacked_errors(groups, index, size, match):
    with pytest.raises(ValueError, match=match):
        _stack(groups, index, size)


def test_stacked_lanes_must_match_the_arch():
    st = _stack([Group("load", 4, np.zeros((1, 32), int), np.zeros((1, 32), int), np.ones(1, int))], [[0]], 1)
    with pytest.raises(ValueError, match="32 lanes; this arch's warps have 64"):
        score(st, Padded(32, 32, 4), arch="cdna3")


# ---- copies into shared memory with their global side (Instruction.global_offsets) -----------------------


def _staging(pitch: int, op: str = "cp.async.cg", width: int = 16, with_side: bool = True):
    """A 32 x 32 bf16 tile (64-byte rows) filled by four warp-wide copies of ``width`` bytes a lane, its
    rows ``pitch`` bytes apart in global memory."""
    per_row = 64 // width
    out = []
    for i in range(4):
        q = 32 * i + np.arange(32)
        r, c = q // per_row, q % per_row
        side = r * pitch + c * width if with_side else None
        out.append(Instruction(f"cp{i}", op, width, r, c * (width // 2), global_offsets=side))
    return tuple(out)


def test_global_offsets_are_checked():
    lanes = np.arange(32)
    with pytest.raises(ValueError, match="no global side"):
        Instruction("st", "store", 16, lanes, lanes, global_offsets=lanes * 16)
    with pytest.raises(ValueError, match="one a lane"):
        Instruction("cp", "cp.async", 16, lanes, lanes, global_offsets=lanes[:8] * 16)
    with pytest.raises(ValueError, match="one a lane"):
        Instruction("cp", "cp.async", 16, lanes, lanes, global_offsets=lanes * 16.0)
    with pytest.raises(ValueError, match="lane 3's global offset -16 is not a non-negative multiple"):
        Instruction("cp", "cp.async", 16, lanes, lanes, global_offsets=np.where(lanes == 3, -16, lanes * 16))
    with pytest.raises(ValueError, match="lane 0's global offset 8 .* 16-byte copy"):
        Instruction("cp", "cp.async.cg", 16, lanes, lanes, global_offsets=lanes * 16 + 8)
    huge = (lanes * 16).astype(np.uint64)
    huge[7] = np.uint64(2**64 - 16)  # an unsigned offset past int64: named as it is, not wrapped negative
    with pytest.raises(ValueError, match=f"lane 7's global offset {2**64 - 16} is beyond 2\\*\\*63 - 1"):
        Instruction("cp", "cp.async", 16, lanes, lanes, global_offsets=huge)
    rows = np.where(lanes == 5, -1, 0)  # an inactive lane's source is ignored, an unsigned one too
    huge[7], huge[5] = 112, np.uint64(2**64 - 1)
    assert Instruction("cp", "cp.async", 16, rows, lanes, global_offsets=huge).global_offsets[5] == 0
    ins = Instruction("cp", "cp.async", 4, rows, lanes, global_offsets=np.where(lanes == 5, -7, lanes * 4))
    assert ins.global_offsets[5] == 0 and ins.global_offsets.dtype == np.int64


def test_a_copy_pattern_is_scored_on_its_global_side():
    """Rows 64 bytes long: with the rows 64 bytes apart in global memory a warp's 8 lanes of a 128-byte
    shared row read one line (lane-ordered: what the model assumes without the side); 4096 bytes apart,
    two lines. ``.cg`` then moves each line's half-row alone (twice the wavefronts), and ``.ca``'s two lines
    at the same slots queue; rows 4160 bytes apart put the two lines' halves at other slots, where ``.ca``
    shares a wavefront and ``.cg`` does not."""
    lay = Padded(32, 32, 2)
    got = {}
    for op in ("cp.async.cg", "cp.async"):
        for pitch in (64, 4096, 4160):
            pat = _staging(pitch, op)
            got[op, pitch] = score(pat, lay).wavefronts
            want = 0
            for ins in pat:
                addr = lay.offsets(ins.rows, ins.cols)[None]
                w, _ = analyze_batch(addr, 16, op, global_addresses=ins.global_offsets[None])
                want += int(w[0])
            assert got[op, pitch] == want
        assert score(_staging(0, op, with_side=False), lay).wavefronts == got[op, 64]
    assert got == {
        ("cp.async.cg", 64): 16, ("cp.async.cg", 4096): 32, ("cp.async.cg", 4160): 32,
        ("cp.async", 64): 16, ("cp.async", 4096): 32, ("cp.async", 4160): 16,
    }  # fmt: skip


def test_copies_without_a_side_beside_ones_with_copy_in_lane_order():
    lay = Padded(32, 32, 2)
    mixed = _staging(4096)[:2] + _staging(0, with_side=False)[2:]
    stacked = Stacked.from_instructions(mixed)
    assert len(stacked.globs) == 1 and (stacked.globs[0][2] == np.arange(32) * 16).all()
    assert score(mixed, lay).wavefronts == 16 + 8  # two instructions of two lines, two of one
    back = stacked.instructions()  # the round trip keeps each side
    assert [None if i.global_offsets is None else i.global_offsets.tolist() for i in back[:2]] == [
        i.global_offsets.tolist() for i in mixed[:2]
    ]
    assert Stacked.from_instructions(_staging(0, with_side=False)).globs == ()
    with pytest.raises(ValueError, match="only cp.async, cp.async.cg groups take one"):
        g = stacked.groups[0]
        Stacked((g._replace(op="store"),), stacked.index, stacked.size, None, stacked.globs)
