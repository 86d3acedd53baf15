"""Tests for the bank maps (autopad.explain): the parsers, the text picture and its data (the PNG's tests are
in test_explain_figure.py, the computed map's own in test_explain_map.py).

The bank printed in each cell is checked against bank = (byte offset // 4) % 32 computed here from the
textbook formulas (row r, column c of a [R][C + pad] array is word r (C + pad) + c for fp32), not against
the layout module's own offsets.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from autopad.access import block_tile, field_read
from autopad.explain import (
    MAX_ELEMENTS,
    explain_data,
    explain_text,
    parse_dtype,
    parse_layout,
    parse_pattern,
    parse_tile,
)
from autopad.layouts import Padded, Replicated, Structs, Swizzle, Swizzled, Tile


def grid(text: str, rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    """Parse the bank map back: (banks, marked) for the rows x cols cells (padding cells dropped)."""
    banks = np.zeros((rows, cols), dtype=int)
    marked = np.zeros((rows, cols), dtype=bool)
    lines = [ln for ln in text.splitlines() if re.match(r"^\s*r\d+ ", ln)]
    assert len(lines) == rows
    label = len(f"r{rows - 1}")
    for r, line in enumerate(lines):
        body = line[label + 1 :].split("|")[0]
        cells = [body[i : i + 4] for i in range(0, 4 * cols, 4)]
        for c, cell in enumerate(cells):
            marked[r, c] = cell.startswith("[")
            banks[r, c] = int(cell.strip("[] "))
    return banks, marked


def total_line(text: str) -> list[str]:
    line = next(ln for ln in text.splitlines() if "total per tile" in ln)
    return line.split("total per tile")[1].split()


# ---- parsers ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec", ["swizzle=vec4,vec8", "swizzle=phase1,per_phase2", "swizzle=max8,max_phase4"]
)
def test_a_swizzle_setting_given_twice_is_refused(spec):
    """``swizzle=vec4,vec8`` was read as vec 8 (the last one won, without a word): 8x instead of 4x on a
    column walk. Which was meant is the user's to say."""
    with pytest.raises(ValueError, match=r"^layout: .* given twice"):
        parse_layout(spec, 32, 32, 4)


def test_parse_tile_and_dtype():
    assert parse_tile("32x32") == (32, 32)
    assert parse_tile(" 64X16 ") == (64, 16)
    assert parse_dtype("float32") == 4 and parse_dtype("bf16") == 2 and parse_dtype("torch.float64") == 8
    assert parse_dtype("int8") == 1
    for bad in ("32", "0x32", "axb", "32x"):
        with pytest.raises(ValueError, match="^tile:"):
            parse_tile(bad)
    with pytest.raises(ValueError, match="^dtype:.*float32"):
        parse_dtype("complex64")


def test_parse_layout_forms():
    assert parse_layout("pad=0", 32, 32, 4) == Padded(32, 32, 4)
    assert parse_layout("none", 32, 32, 4) == Padded(32, 32, 4)
    assert parse_layout("pad=1", 32, 32, 2) == Padded(32, 32, 2, pad=1)
    assert parse_layout("swizzle=vec4,phase1,max8", 32, 32, 4) == Swizzled(32, 32, 4, sw_vec=4, max_phase=8)
    assert parse_layout("swizzle=vec=2,per_phase=2,max_phase=16", 64, 32, 2) == Swizzled(
        64, 32, 2, sw_vec=2, per_phase=2, max_phase=16
    )
    assert parse_layout("swizzle=vec1", 32, 32, 4) == Swizzled(32, 32, 4, max_phase=32)  # max = whole row
    assert parse_layout("cute=3,2,3", 64, 32, 4) == Swizzled.from_cute(3, 2, 3, 64, 32, 4)


@pytest.mark.parametrize(
    "spec",
    ["pad=", "pad=-1", "padding=1", "foo", "swizzle=", "swizzle=vec3,max8", "swizzle=tile8", "cute=3,0,3"],
)
def test_parse_layout_errors_name_the_layout(spec):
    with pytest.raises(ValueError, match="^layout:"):
        parse_layout(spec, 32, 32, 4)


def test_parse_pattern_row_and_column():
    rows = parse_pattern("row", 32, 32, 4)
    assert len(rows) == 32
    assert all((ins.rows == r).all() and (ins.cols == np.arange(32)).all() for r, ins in enumerate(rows))
    cols = parse_pattern("column", 32, 32, 4)
    assert len(cols) == 32
    assert all((ins.cols == c).all() and (ins.rows == np.arange(32)).all() for c, ins in enumerate(cols))
    assert {ins.op for ins in rows + cols} == {"load"}


def test_parse_pattern_vectors_and_tails():
    vec_cols = parse_pattern("column", 32, 32, 4, vec=4)
    assert len(vec_cols) == 8
    assert vec_cols[1].access_bytes == 16 and (vec_cols[1].cols == 4).all()
    vec_rows = parse_pattern("row", 32, 32, 2, vec=8)  # 4 vectors per row: 8 rows per instruction
    assert len(vec_rows) == 4 and vec_rows[0].access_bytes == 16
    tail = parse_pattern("row", 5, 10, 4)  # 50 elements: 32 + 18
    assert len(tail) == 2
    assert int((tail[1].rows >= 0).sum()) == 18


def test_parse_pattern_blocks():
    read = parse_pattern("transpose-read", 32, 32, 4)
    expected = block_tile(32, 32, 32, 8, "load", transposed=True)
    assert [i.name for i in read] == [i.name for i in expected]
    assert all(
        (a.rows == b.rows).all() and (a.cols == b.cols).all() for a, b in zip(read, expected, strict=True)
    )
    write = parse_pattern("transpose-write", 32, 32, 4, block_y=4)
    assert len(write) == 32 and {i.op for i in write} == {"store"}
    tile = parse_pattern("tile 8x4", 32, 32, 4, vec=4)
    assert len(tile) == 8 and tile[0].access_bytes == 16
    assert len(parse_pattern("tile=32x8", 32, 32, 4)) == 32


@pytest.mark.parametrize(
    "args",
    [
        ("diagonal", 32, 32, 4),
        ("row", 32, 30, 4, 4),
        ("tile 16x8", 32, 32, 4),
        ("transpose-read", 32, 32, 4, 1, 7),
    ],
)
def test_parse_pattern_errors(args):
    with pytest.raises(ValueError, match="^pattern:"):
        parse_pattern(*args)


# ---- the text picture ------------------------------------------------------------------------------------


def test_unpadded_column_is_one_bank():
    """[32][32] fp32: element (r, c) is word 32 r + c, bank c; column 0 is all bank 0 -> 32 wavefronts."""
    text = explain_text(Padded(32, 32, 4), parse_pattern("column", 32, 32, 4))
    banks, marked = grid(text, 32, 32)
    r, c = np.meshgrid(np.arange(32), np.arange(32), indexing="ij")
    assert (banks == (32 * r + c) % 32).all()
    assert (marked == (c == 0)).all()
    assert "busiest bank 0 holds 32 distinct words -> 32 wavefronts" in text
    assert total_line(text)[:3] == ["1024", "32", "32x"]


def test_padded_column_is_every_bank():
    """[32][33] fp32: word 33 r + c, bank (r + c) % 32; column 0 covers all 32 banks -> 1 wavefront."""
    text = explain_text(Padded(32, 32, 4, pad=1), parse_pattern("column", 32, 32, 4))
    banks, marked = grid(text, 32, 32)
    r, c = np.meshgrid(np.arange(32), np.arange(32), indexing="ij")
    assert (banks == (33 * r + c) % 32).all()
    assert sorted(banks[marked]) == list(range(32))
    assert "32 banks touched" in text
    assert total_line(text)[:3] == ["32", "32", "1x"]
    pads = [int(ln.split("|")[1]) for ln in text.splitlines() if "|" in ln and re.match(r"^\s*r\d+ ", ln)]
    assert pads == [(33 * r + 32) % 32 for r in range(32)]  # the padding word of row r


def test_swizzled_map_is_col_xor_row():
    text = explain_text(Swizzled(32, 32, 4, max_phase=32), parse_pattern("column", 32, 32, 4), instruction=5)
    banks, marked = grid(text, 32, 32)
    r, c = np.meshgrid(np.arange(32), np.arange(32), indexing="ij")
    assert (banks == (c ^ r)).all()
    assert (marked == (c == 5)).all()
    assert total_line(text)[:3] == ["32", "32", "1x"]


def test_fp16_pad_one_text_shows_the_two_way_columns():
    """Hand-derived in test_layouts: odd columns of the fp16 [32][33] read-out are 2-way, 48 in all."""
    text = explain_text(Padded(32, 32, 2, pad=1), parse_pattern("transpose-read", 32, 32, 2), instruction=4)
    assert total_line(text)[:3] == ["48", "32", "1.5x"]
    banks, marked = grid(text, 32, 32)
    r, c = np.meshgrid(np.arange(32), np.arange(32), indexing="ij")
    assert (banks == ((33 * r + c) * 2 // 4) % 32).all()
    assert (marked == (c == 1)).all()  # instruction 4: warp 1 (ty = 1), j = 0 -> column 1
    assert "-> 2 wavefronts" in text


def test_vector_marks_cover_the_whole_vector():
    text = explain_text(Padded(32, 32, 4, pad=4), parse_pattern("column", 32, 32, 4, vec=4))
    _, marked = grid(text, 32, 32)
    assert marked.sum() == 32 * 4 and marked[:, :4].all()
    assert "4 phases of 8 lanes" in text


def test_every_instruction_in_the_table():
    pattern = parse_pattern("transpose-read", 32, 32, 4)
    text = explain_text(Padded(32, 32, 4), pattern, instruction=3)
    rows = [ln for ln in text.splitlines() if re.match(r"^\s+\d+\s+warp", ln)]
    assert len(rows) == len(pattern)
    assert rows[3].rstrip().endswith("<")
    assert all(ln.split()[-2 if ln.rstrip().endswith("<") else -1] == "32x" for ln in rows)


def test_colour_only_when_asked():
    pattern = parse_pattern("column", 32, 32, 4)
    assert "\x1b" not in explain_text(Padded(32, 32, 4, pad=1), pattern)
    coloured = explain_text(Padded(32, 32, 4, pad=1), pattern, color=True)
    assert coloured.count("\x1b[7m") == 32


def test_structs_and_replicas_can_be_explained():
    text = explain_text(Structs(32, (4, 4, 4, 4)), (field_read(32, 0),))
    assert "holds 4 distinct words -> 4 wavefronts" in text
    assert total_line(text)[:3] == ["4", "1", "4x"]
    from autopad.access import histogram_updates

    text = explain_text(Replicated(64, 1), histogram_updates([5] * 32))
    assert "holds 32 updates -> 32 wavefronts" in text


def test_cdna3_explains_two_half_wave_phases():
    pattern = parse_pattern("column", 64, 32, 4, warp=64)
    text = explain_text(Padded(64, 32, 4), pattern, arch="cdna3")
    assert "2 phases of 32 lanes: 64 wavefronts" in text
    assert "phase 1 (lanes 32-63)" in text


def test_explain_errors():
    pattern = parse_pattern("column", 32, 32, 4)
    with pytest.raises(ValueError, match="^instruction:"):
        explain_text(Padded(32, 32, 4), pattern, instruction=32)
    with pytest.raises(ValueError, match="^instruction:"):
        explain_text(Padded(32, 32, 4), pattern, instruction=-1)
    with pytest.raises(ValueError, match="^pattern:"):
        explain_text(Padded(32, 32, 4), ())
    with pytest.raises(ValueError, match="^layout:"):
        explain_text(object(), pattern)
    with pytest.raises(ValueError, match="^arch:"):
        explain_text(Padded(32, 32, 4), pattern, arch="sm_1")


# ---- the text's layout ------------------------------------------------------------------------------------


def test_table_columns_line_up():
    """The wavefront counts of every row, and the total, end under the 'wavefronts' header."""
    text = explain_text(Padded(32, 32, 4), parse_pattern("column", 32, 32, 4))
    lines = text.splitlines()
    head = next(i for i, ln in enumerate(lines) if "wavefronts" in ln and "ideal" in ln and "#" in ln)
    end = lines[head].index("wavefronts") + len("wavefronts")
    for ln in lines[head + 1 :]:
        if ln.strip():
            assert ln[end - 1].isdigit() and ln[end] == " ", ln


# ---- composed layouts -------------------------------------------------------------------------------------


def test_parse_layout_composes_padding_and_a_swizzle():
    want = Tile(32, 32, 4, pad=4, swizzle=Swizzle(4, 1, 8))
    for spec in (
        "pad=4+swizzle=vec4,phase1,max8",
        "pad=4,swizzle=vec4,phase1,max8",
        "swizzle=vec4,phase1,max8+pad=4",
        "swizzle=vec4,phase1,max8,pad=4",
        "pad=4 + cute=3,2,3",
    ):
        got = parse_layout(spec, 32, 32, 4)
        assert got == want and type(got) is Tile, spec
    assert type(parse_layout("pad=0+swizzle=vec4,max8", 32, 32, 4)) is Swizzled
    assert parse_layout("pad=2+swizzle=vec1,max1", 32, 32, 4).describe() == "pad 2"
    for bad in ("pad=4+pad=2", "pad=4+swizzle=vec4,max16", "pad=4+", "swizzle=vec4+cute=3,2,3"):
        with pytest.raises(ValueError, match="^layout:"):
            parse_layout(bad, 32, 32, 4)


def test_composed_map_shows_the_swizzle_and_the_padding():
    """pad 1 + swizzle(vec 4, max 8), fp32: element (r, c) is word 33 r + 4 ((c // 4) ^ (r % 8)) + c % 4, so
    its bank is (r + 4 ((c // 4) ^ (r % 8)) + c % 4) % 32; the padding word of row r is 33 r + 32. A column
    walk is conflict-free (derived in test_layouts): 32 wavefronts for the 32 columns."""
    lay = parse_layout("pad=1+swizzle=vec4,phase1,max8", 32, 32, 4)
    text = explain_text(lay, parse_pattern("column", 32, 32, 4))
    banks, _ = grid(text, 32, 32)
    r, c = np.meshgrid(np.arange(32), np.arange(32), indexing="ij")
    assert (banks == (r + 4 * ((c // 4) ^ (r % 8)) + c % 4) % 32).all()
    pads = [int(ln.split("|")[1]) for ln in text.splitlines() if "|" in ln and re.match(r"^\s*r\d+ ", ln)]
    assert pads == [(33 * r + 32) % 32 for r in range(32)]
    assert "pad 1 + swizzle vec=4 per_phase=1 max_phase=8" in text.splitlines()[0]
    assert total_line(text)[:3] == ["32", "32", "1x"]


def test_cli_explains_a_composed_layout(capsys):
    from autopad.cli import main

    args = [
        "explain",
        "--layout",
        "pad=4+swizzle=vec4,phase1,max8",
        "--pattern",
        "column",
        "--instruction",
        "31",
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "pad 4 + swizzle vec=4 per_phase=1 max_phase=8" in out
    assert "busiest bank 31 holds 32 distinct words -> 32 wavefronts" in out  # the swizzle undoes the pad


def test_explain_takes_the_stacked_form():
    from autopad.pattern import Pattern, load

    walk = Pattern(block=32, accesses=[load(row="tid", col="c", loops={"c": 32}, name="column")])
    text = explain_text(Padded(32, 32, 4), walk.stacked({}, 4), instruction=3)
    assert "instruction 3 \"load 'column' w0 c=3\"" in text and total_line(text)[:3] == ["1024", "32", "32x"]


# ---- sizes, the data form, safe PNG writing ----------------------------------------------------------------


def test_too_big_to_explain_is_refused_by_the_library_too():
    with pytest.raises(ValueError, match="tile: 2048x1024"):
        parse_tile("2048x1024")
    big = Padded(2048, 1024, 4)
    assert 2048 * 1024 > MAX_ELEMENTS
    with pytest.raises(ValueError, match="tile: 2048x1024 is 2,097,152 elements"):
        explain_text(big, parse_pattern("row", 32, 32, 4))  # refused before the map is computed


def test_the_largest_tile_is_explained_padded_as_layouts_pad_it():
    """1024x1024 is the largest tile explain takes, and padding it (pad 1 .. 1024: as many cells again) is
    still explained; only padding beyond that doubles what is drawn."""
    from autopad.explain_parse import check_tile

    for pad in (0, 1, 32, 1024):
        check_tile(1024, 1024, pad)
    with pytest.raises(ValueError, match=r"^tile: 1024x1024 with 1,025 elements of padding a row"):
        check_tile(1024, 1024, 1025)
    with pytest.raises(ValueError, match=r"^tile: 1024x1025 is "):
        check_tile(1024, 1025)


def test_padding_counts_towards_what_explain_draws():
    """The padding cells are drawn too (after the ``|``, in the JSON's padding_banks, shaded in the PNG), but
    only rows x cols was checked: ``--layout pad=1000000`` on a 32x32 tile printed 128 MB of text (310 MB of
    JSON) and pad=10,000,000 drew a PNG for 135 s in 8.8 GB."""
    pattern = parse_pattern("column", 32, 32, 4)
    with pytest.raises(ValueError, match=r"^tile: 32x32 with 1,000,000 elements of padding a row is "):
        explain_text(Padded(32, 32, 4, pad=1_000_000), pattern)  # refused before the map is computed
    with pytest.raises(ValueError, match=r"^tile: 32x32 with 1,000,000 elements of padding a row is "):
        explain_data(Padded(32, 32, 4, pad=1_000_000), pattern)
    # within the limit, padding that makes the rows wider than MAP_CELLS is summarised as a wide tile is
    wide = Padded(32, 32, 4, pad=4000)
    text = explain_text(wide, pattern)
    assert len(text) < 20_000 and "map summarised: 32x32 with 4000 elements of padding a row" in text
    assert grid(text, 32, 32)[0][1, 0] == 4032 % 32  # the corner still holds every cell of the tile
    d = explain_data(wide, pattern)
    assert d["padding_banks"] is None and np.array(d["banks"]).shape == (32, 32)
    assert d["total"]["wavefronts"] == 1024  # rows 4032 words apart: a column is one bank


def test_summarised_map_keeps_the_banks_of_the_corner():
    rows, cols = 260, 64  # over 256 rows: summarised, the corner is rows 0-31 x columns 0-31
    text = explain_text(Padded(rows, cols, 4, pad=1), parse_pattern("column", rows, cols, 4))
    banks, marked = grid(text, 32, 32)  # the corner is all the map there is
    r, c = np.meshgrid(np.arange(32), np.arange(32), indexing="ij")
    assert (banks == (r * 65 + c) % 32).all()  # bank of (r, c) in a [260][65] fp32 array
    assert marked[:, 0].all() and not marked[:, 1:].any()  # instruction 0: column 0, rows 0-31
    assert "map summarised: 260x64" in text


def test_explain_data_matches_the_text():
    layout, pattern = Padded(32, 32, 2, pad=1), parse_pattern("transpose-read", 32, 32, 2)
    d = explain_data(layout, pattern)
    assert total_line(explain_text(layout, pattern))[:3] == [
        str(d["total"]["wavefronts"]),
        str(d["total"]["ideal"]),
        "1.5x",
    ]
    assert sum(i["wavefronts"] * i["count"] for i in d["instructions"]) == d["total"]["wavefronts"]
    assert np.array(d["banks"]).shape == (32, 32)


def test_every_name_explain_defined_is_the_object_of_its_new_home():
    from split_checks import assert_reexported

    from autopad import explain, explain_figure, explain_map, explain_parse

    homes = {
        explain_map: "_Map _grid _describe _phase_lines _instructions _build _n _degree",
        explain_figure: "bank_map_figure explain_png",
        explain_parse: "DTYPE_BYTES MAX_ELEMENTS PATTERNS check_tile parse_dtype parse_layout parse_pattern "
        "parse_tile",
    }
    assert_reexported(explain, homes)
    assert all(hasattr(explain, n) for n in explain.__all__) and len(explain.__all__) == 14
