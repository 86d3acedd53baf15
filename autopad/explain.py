"""Bank maps: which bank every element of a tile lands in, and why an access pattern conflicts.

``explain_text`` prints the tile row by row, each cell the bank of the word holding that element, with the
elements one chosen warp instruction touches in brackets, then every instruction's wavefronts against the
conflict-free count. ``explain_png`` draws the same map (cells shaded by bank with a cyclic colormap, the
touched cells outlined, the degree in the title). Two pictures side by side make the textbook fix obvious:
in a 32x32 fp32 tile a column is one colour (one bank, 32-way), in 32x33 it is every colour (1 wavefront).

The model decides every number shown (``access.score`` and ``model.analyze``); this module only draws.
``parse_layout``, ``parse_pattern``, ``parse_tile`` and ``parse_dtype`` (explain_parse.py, re-exported
here) turn the CLI's strings into objects;
``explain_data`` gives the same numbers as a dict (``autopad explain --json``). matplotlib is imported only
inside ``bank_map_figure``.

Sizes: a shared-memory tile is at most 227 KiB (sm_90), so a tile of more than ``MAX_ELEMENTS`` (2**20)
elements, its rows' padding included (the padding cells are drawn too), is refused with a ValueError
before anything is computed (an 8192x8192 map once ran for 270 s and printed 420 MB). Above ``MAP_CELLS``
(256) rows or columns (padding included) the text shows a corner of the map and lists the chosen
instruction's elements instead of every cell, and above ``TABLE_ROWS`` instructions the table lists the
first ones and the chosen one; the totals always count every instruction. ``explain_png`` renders to
memory and writes through ``files.write_file`` (atomic, never through a symlink).

Where each part lives (explain.py was split, one concern a module; every name it defined is still
importable from here): explain_map.py (the computed map: banks, the chosen instruction's phases, the
pattern's cost), explain_figure.py (``bank_map_figure``, ``explain_png``: the picture); here, the text
(``explain_text``, its summarised map and instruction table) and the same numbers as a dict
(``explain_data``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .access import Instruction, Stacked
from .arch import Arch
from .explain_figure import bank_map_figure, explain_png
from .explain_map import (  # noqa: F401  (the names explain.py defined before the split, importable as before)
    _build,
    _degree,
    _describe,
    _grid,
    _instructions,
    _Map,
    _n,
    _phase_lines,
)
from .explain_parse import (
    DTYPE_BYTES,
    MAX_ELEMENTS,
    PATTERNS,
    check_tile,
    parse_dtype,
    parse_layout,
    parse_pattern,
    parse_tile,
)

__all__ = [
    "DTYPE_BYTES",
    "MAX_ELEMENTS",
    "MAP_CELLS",
    "PATTERNS",
    "TABLE_ROWS",
    "bank_map_figure",
    "check_tile",
    "explain_data",
    "explain_text",
    "explain_png",
    "parse_dtype",
    "parse_layout",
    "parse_pattern",
    "parse_tile",
]

_ANSI_MARK, _ANSI_DIM, _ANSI_OFF = "\x1b[7m", "\x1b[2m", "\x1b[0m"
MAP_CELLS = 256  # rows or columns above which the text map is summarised, not printed cell by cell
CORNER = 32  # rows and columns of the corner shown in a summarised map
TABLE_ROWS = 64  # instructions listed one per line; beyond, the first ones and the chosen one


def _listed(n: int, chosen: int) -> list[int]:
    """Which instructions the table lists: all up to ``TABLE_ROWS``, else the first ones and the chosen."""
    if n <= TABLE_ROWS:
        return list(range(n))
    head = list(range(TABLE_ROWS - 2))
    return head + ([chosen] if chosen >= len(head) else [])


def _table(pattern: Sequence[Instruction], m: _Map) -> list[str]:
    width = max(len("total per tile"), *(len(ins.name) for ins in pattern))
    opw = max(6, *(len(ins.op) for ins in pattern))  # "ldmatrix.x4.trans", "cp.async.cg" are longer
    out = [f"  {'#':>4}  {'instruction':<{width}}  {'op':<{opw}} {'bytes':>5} {'count':>5}  "
           f"{'wavefronts':>10} {'ideal':>6} {'degree':>7}"]  # fmt: skip
    listed = _listed(len(pattern), m.index)
    for n, i in enumerate(listed):
        if n and i != listed[n - 1] + 1:
            out.append(f"  {'...':>4}")
        ins, (_, count, wave, ideal) = pattern[i], m.cost.per_instruction[i]
        flag = " <" if i == m.index else ""
        out.append(
            f"  {i:>4}  {ins.name:<{width}}  {ins.op:<{opw}} {ins.access_bytes:>5} {count:>5}  {wave:>10} "
            f"{ideal:>6} {_degree(wave, ideal):>7}{flag}"
        )
    if len(listed) < len(pattern):
        out.append(f"  ... {len(pattern) - len(listed)} more instructions, all counted in the total")
    c = m.cost
    out.append(
        f"  {'':>4}  {'total per tile':<{width}}  {'':<{opw}} {'':>5} {'':>5}  {c.wavefronts:>10} "
        f"{c.ideal:>6} {_degree(c.wavefronts, c.ideal):>7}  ({c.conflicts} conflict wavefronts)"
    )
    return out


def _map_lines(m: _Map, color: bool) -> list[str]:
    """The map cell by cell; above ``MAP_CELLS`` rows or columns only its top-left corner."""
    rows, cols = m.banks.shape
    npad = m.pad_banks.shape[1]
    big = rows > MAP_CELLS or cols + npad > MAP_CELLS  # the padding cells print after each row's
    show_r, show_c = (min(rows, CORNER), min(cols, CORNER)) if big else (rows, cols)
    label = len(f"r{show_r - 1}")
    out = [" " * (label + 1) + "".join(f"{c:>3} " for c in range(show_c)).rstrip()]
    for r in range(show_r):
        cells = []
        for c in range(show_c):
            b = int(m.banks[r, c])
            if m.marked[r, c]:
                cell = f"[{b:>2}]"
                cells.append(f"{_ANSI_MARK}{cell}{_ANSI_OFF}" if color else cell)
            else:
                cells.append(f" {b:>2} ")
        line = f"{'r' + str(r):>{label}} " + "".join(cells)
        if npad and not big:
            padding = "".join(f" {int(b):>2} " for b in m.pad_banks[r])
            line += " |" + (f"{_ANSI_DIM}{padding}{_ANSI_OFF}" if color else padding)
        out.append(line.rstrip())
    if big:
        marked = np.argwhere(m.marked)
        padding = f" with {npad} element{'s' * (npad != 1)} of padding a row" if npad else ""
        cells = ", ".join(f"({r},{c})->{int(m.banks[r, c])}" for r, c in marked[:64])
        more = f", ... {len(marked) - 64} more" if len(marked) > 64 else ""
        out += [
            f"(map summarised: {rows}x{cols}{padding} is over {MAP_CELLS}x{MAP_CELLS} cells; the corner "
            f"above is rows 0-{show_r - 1}, columns 0-{show_c - 1}; --png draws the whole map)",
            f"instruction {m.index} touches (row,col)->bank: {cells}{more}",
        ]
    return out


def explain_text(
    layout: object,
    pattern: Sequence[Instruction] | Stacked,
    arch: str | Arch = "sm_90",
    instruction: int = 0,
    color: bool = False,
) -> str:
    """The bank map of ``layout`` under ``pattern`` as text, with every instruction's cost.

    Each cell is the bank of the word holding that element; ``[nn]`` marks the elements instruction
    ``instruction`` touches (also in reverse video when ``color``); cells after ``|`` are row padding.
    ``pattern`` may be the stacked form (``autopad.pattern.Pattern.stacked``).
    """
    pattern = _instructions(pattern)
    m = _build(layout, pattern, arch, instruction)
    a = m.arch
    out = [
        f"bank map: {m.title} ({a.name}: {a.banks} banks x {a.bank_bytes} bytes, "
        f"bank = byte offset // {a.bank_bytes} % {a.banks})",
        f"cell = bank of element (row, col); [nn] = touched by instruction {m.index}"
        + ("; after | = row padding" if m.pad_banks.shape[1] else ""),
        "",
        *_map_lines(m, color),
    ]
    out += ["", *m.lines, "", *_table(pattern, m)]
    return "\n".join(out) + "\n"


def explain_data(
    layout: object,
    pattern: Sequence[Instruction] | Stacked,
    arch: str | Arch = "sm_90",
    instruction: int = 0,
) -> dict[str, Any]:
    """``explain_text``'s numbers as a dict (``autopad explain --json``): the chosen instruction's phases,
    every instruction's wavefronts (the first ``TABLE_ROWS`` * 64 of them), the totals, and the bank of
    every cell when the tile has at most ``MAP_CELLS`` rows and columns (of every padding cell when its
    rows, padding included, have at most ``MAP_CELLS`` columns)."""
    pattern = _instructions(pattern)
    m = _build(layout, pattern, arch, instruction)
    rows, cols = m.banks.shape
    c = m.cost
    keep = TABLE_ROWS * 64
    small = rows <= MAP_CELLS and cols <= MAP_CELLS
    npad = m.pad_banks.shape[1]  # its cells are left out where the rows with them are over MAP_CELLS
    return {
        "title": m.title,
        "arch": m.arch.name,
        "rows": int(rows),
        "cols": int(cols),
        "instruction": m.index,
        "chosen": list(m.lines),
        "banks_touched": m.touched,
        "instructions": [
            {
                "name": ins.name,
                "op": ins.op,
                "bytes": ins.access_bytes,
                "count": int(count),
                "wavefronts": int(wave),
                "ideal": int(ideal),
            }
            for ins, (_, count, wave, ideal) in zip(pattern[:keep], c.per_instruction[:keep], strict=True)
        ],  # fmt: skip
        "instructions_total": len(pattern),
        "total": {"wavefronts": int(c.wavefronts), "ideal": int(c.ideal), "conflicts": int(c.conflicts)},
        "banks": m.banks.tolist() if small else None,
        "padding_banks": m.pad_banks.tolist() if small and cols + npad <= MAP_CELLS else None,
        "marked": [[int(r), int(col)] for r, col in np.argwhere(m.marked)],
    }
