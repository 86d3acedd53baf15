"""autopad/gluon_moves.py: the vector width a Gluon tile move gets (16 bytes, the swizzle chunk, the padding's
alignment), its instructions per warp and lane, their wavefronts, and the shared ``Moves`` objects."""

from __future__ import annotations

from autopad.gluon_blocked import Blocked
from autopad.gluon_moves import instruction_arrays, instructions, moves, score_layouts, vector_width
from autopad.layouts import Padded, Swizzle, Swizzled, Tile


def test_vector_width_and_padding_cap():
    lay = Blocked((1, 4), (4, 8), (8, 1), (1, 0))
    assert vector_width(lay, (64, 64), Swizzled(64, 64, 4)) == 4
    assert vector_width(lay, (64, 64), Swizzled(64, 64, 4, sw_vec=2, max_phase=8)) == 2
    assert vector_width(lay, (64, 64), Padded(64, 64, 4, pad=4)) == 4
    assert vector_width(Blocked((4, 1), (16, 2), (1, 8), (0, 1)), (64, 64), Swizzled(64, 64, 4)) == 1


def test_column_read_conflicts_and_fixes():
    col = Blocked((1, 1), (32, 1), (1, 8), (0, 1))  # lane l reads row l of one column
    plain = score_layouts(col, (64, 64), Swizzled(64, 64, 4), "load")
    pad = score_layouts(col, (64, 64), Padded(64, 64, 4, pad=1), "load")
    swz = score_layouts(col, (64, 64), Swizzled(64, 64, 4, sw_vec=1, max_phase=32), "load")
    assert plain.degree == 32  # rows of 256 bytes: all 32 lanes' words in one bank
    assert pad.conflicts == 0 and swz.conflicts == 0
    assert len(instructions(col, (64, 64), Swizzled(64, 64, 4), "load")) == 8 * 16


def test_instruction_arrays_are_the_instructions():
    lay = Blocked((1, 4), (4, 8), (8, 1), (1, 0))
    smem = Swizzled(64, 64, 4, sw_vec=2, max_phase=8)
    rows, cols, regs, width = instruction_arrays(lay, (64, 64), smem)
    ins = instructions(lay, (64, 64), smem, "store")
    assert width == 8 and rows.shape == cols.shape == (len(ins), 32) and regs.shape == (len(ins),)
    for k, i in enumerate(ins):
        assert (i.rows == rows[k]).all() and (i.cols == cols[k]).all() and i.name.endswith(f"reg {regs[k]}")


def test_vector_width_of_a_padded_and_swizzled_tile():
    """Both caps apply: a 4-element swizzle chunk, and padding of 2 keeps only 2-element vectors aligned."""
    lay = Blocked((1, 8), (8, 4), (4, 1), (1, 0))
    assert vector_width(lay, (64, 64), Tile(64, 64, 2, pad=8, swizzle=Swizzle(4, 1, 8))) == 4
    assert vector_width(lay, (64, 64), Tile(64, 64, 2, pad=2, swizzle=Swizzle(4, 1, 8))) == 2
    assert vector_width(lay, (64, 64), Tile(64, 64, 2, pad=8, swizzle=Swizzle(8, 1, 8))) == 8


def test_moves_are_made_once_per_vector_cap_and_iterate_as_the_instructions():
    """Two shared layouts with the same vector cap and element size give the very same Moves object (the
    tuner's candidates share one pattern); another cap gives another."""
    lay = Blocked((1, 4), (4, 8), (8, 1), (1, 0))
    a = moves((lay, (64, 64), Swizzled(64, 64, 4, sw_vec=4, max_phase=8), "store"))
    b = moves((lay, (64, 64), Padded(64, 64, 4, pad=4), "store"))
    c = moves((lay, (64, 64), Swizzled(64, 64, 4, sw_vec=2, max_phase=8), "store"))
    assert a is b and a is not c
    smem = Swizzled(64, 64, 4, sw_vec=2, max_phase=8)
    ins = instructions(lay, (64, 64), smem, "store")
    assert [(i.name, i.access_bytes) for i in c] == [(i.name, i.access_bytes) for i in ins]
    both = moves((lay, (64, 64), smem, "store"), (lay, (64, 64), smem, "load"))
    assert len(both) == 2 * len(ins) and both[-1].op == "load" and both[0].op == "store"
