"""autopad/explain_map.py: the computed bank map every rendering draws, checked against the textbook
formula (fp32 element (r, c) of a [R][C + pad] array is word r (C + pad) + c, bank word % 32), not against
the layout's own offsets."""

from __future__ import annotations

import numpy as np
import pytest

from autopad.explain import parse_pattern
from autopad.explain_map import _build, _degree, _grid, _n
from autopad.layouts import Padded, Replicated, Structs


@pytest.mark.parametrize("pad,wave,touched", [(0, 32, 1), (1, 1, 32)])
def test_a_column_read_of_a_32_wide_fp32_tile(pad, wave, touched):
    layout = Padded(32, 32, 4, pad=pad)
    m = _build(layout, parse_pattern("column", 32, 32, 4), "sm_90", 0)
    r, c = np.meshgrid(np.arange(32), np.arange(32), indexing="ij")
    assert (m.banks == (r * (32 + pad) + c) % 32).all()
    assert m.pad_banks.shape == (32, pad)
    if pad:
        assert (m.pad_banks[:, 0] == (np.arange(32) * 33 + 32) % 32).all()
    assert m.marked[:, 0].all() and m.marked.sum() == 32  # instruction 0: column 0
    assert m.touched == touched and m.cost.per_instruction[0][2] == wave
    assert m.lines[0].startswith("instruction 0 'column 0': load of 4 bytes per lane, 32 active lanes")
    assert m.title == f"32x32 tile of 4-byte elements, {layout.describe()}"


def test_the_grid_of_each_kind_of_layout():
    rows, cols, widths = _grid(Structs(64, (4, 2, 8), aos=True, pad=0))
    assert (rows, cols) == (64, 3) and list(widths) == [4, 2, 8]
    rows, cols, widths = _grid(Replicated(256, 4, 4, False, 1))
    assert (rows, cols) == (4, 256) and set(widths) == {4}
    with pytest.raises(ValueError, match="explain draws tiles"):
        _grid(object())


def test_the_chosen_instruction_must_exist_and_words_agree_in_number():
    pattern = parse_pattern("column", 32, 32, 4)
    with pytest.raises(ValueError, match="instruction: 32 is out of range; the pattern has 32"):
        _build(Padded(32, 32, 4), pattern, "sm_90", 32)
    with pytest.raises(ValueError, match="must be an int"):
        _build(Padded(32, 32, 4), pattern, "sm_90", True)
    assert (_n(1, "bank"), _n(2, "bank"), _degree(48, 32), _degree(32, 32), _degree(5, 0)) == (
        "1 bank",
        "2 banks",
        "1.5x",
        "1x",
        "1x",
    )


def test_a_cg_copy_is_explained_per_global_line_and_an_empty_one_does_not_crash():
    from autopad.access import Instruction
    from autopad.explain import explain_text
    from autopad.layouts import Tile

    lanes = np.arange(32)
    tile = Tile(64, 64, 2)  # 128-byte rows: lanes 8k..8k+7 copy tile row k, one global line each
    rows = lanes // 8
    rows[:8] = -1  # line 0 copies nothing
    m = _build(tile, [Instruction("cg", "cp.async.cg", 16, rows, (lanes % 8) * 8)], "sm_90", 0)
    assert m.lines[0].startswith("instruction 0 'cg': cp.async.cg of 16 bytes per lane, 24 active lanes")
    assert "from 3 global lines: 3 wavefronts" in m.lines[0]
    assert [line.split(":")[0].strip() for line in m.lines[1:4]] == [
        "global line 1 (lanes 8-15)",
        "global line 2 (lanes 16-23)",
        "global line 3 (lanes 24-31)",
    ]
    # a column copy: every lane its own row, a wavefront each; and an instruction that copies nothing
    col = _build(tile, [Instruction("c", "cp.async.cg", 16, lanes, np.zeros(32, int))], "sm_90", 0)
    assert col.cost.per_instruction[0][2] == 32
    none = Instruction("none", "cp.async.cg", 16, np.full(32, -1), np.zeros(32, int))
    text = explain_text(tile, [none])
    assert "0 active lanes" in text and "cp.async.cg    16" in text


def test_a_copy_with_its_global_side_is_drawn_by_global_line():
    """Rows of 64 bytes 4096 bytes apart in global memory: each instruction's 8 lanes of a staging row read
    two lines; explain lists every line read, its lanes and its cost alone, and the instruction's total
    (not the lines' sum for .ca: two lines at the same slots queue)."""
    import numpy as np

    from autopad.access import Instruction
    from autopad.explain import explain_data
    from autopad.layouts import Padded

    q = np.arange(32)
    r, c = q // 4, q % 4
    pat = [
        Instruction(f"{op}", op, 16, r, c * 8, global_offsets=r * 4096 + c * 16)
        for op in ("cp.async", "cp.async.cg")
    ]
    for i, total in ((0, 8), (1, 8)):
        lines = explain_data(Padded(32, 32, 2), pat, instruction=i)["chosen"]
        assert f"from 8 global lines (its global side): {total} wavefronts" in lines[0]
        assert lines[1:3] == ["  global line 0 (lanes 0, 1, 2, 3): alone 1 wavefront",
                              "  global line 32 (lanes 4, 5, 6, 7): alone 1 wavefront"]  # fmt: skip
        assert len(lines) == 9
