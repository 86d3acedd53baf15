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
elements is refused with a ValueError before anything is computed (an 8192x8192 map once ran for 270 s and
printed 420 MB). Above ``MAP_CELLS`` (256) rows or columns the text shows a corner of the map and lists the
chosen instruction's elements instead of every cell, and above ``TABLE_ROWS`` instructions the table lists
the first ones and the chosen one; the totals always count every instruction. ``explain_png`` renders to
memory and writes through ``files.write_file`` (atomic, never through a symlink).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .access import Instruction, PatternCost, Stacked, addresses, score
from .arch import Arch, get_arch
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
from .files import write_file
from .layouts import Replicated, Structs, Tile
from .model import analyze

if TYPE_CHECKING:  # matplotlib is optional and imported only when drawing
    from matplotlib.figure import Figure

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


# ---- the bank map ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Map:
    """Everything both renderings need, computed once."""

    banks: np.ndarray  # (rows, cols) bank of each element's first byte
    pad_banks: np.ndarray  # (rows, pad) banks of the padding elements at the end of each row (Padded)
    marked: np.ndarray  # (rows, cols) bool: touched by the chosen instruction
    title: str
    cost: PatternCost
    lines: tuple[str, ...]  # the chosen instruction, phase by phase
    index: int
    arch: Arch
    touched: int  # distinct banks the chosen instruction's words fall in


def _grid(layout: object) -> tuple[int, int, np.ndarray]:
    """(rows, cols, bytes per element of each column) of the logical grid a layout stores."""
    if isinstance(layout, Tile):
        return layout.rows, layout.cols, np.full(layout.cols, layout.elem_bytes)
    if isinstance(layout, Structs):
        return layout.count, len(layout.fields), np.array(layout.fields)
    if isinstance(layout, Replicated):
        return layout.replicas, layout.bins, np.full(layout.bins, layout.elem_bytes)
    raise ValueError(
        f"layout: explain draws tiles (Padded, Swizzled, Tile), Structs and Replicated layouts, not "
        f"{layout!r}"
    )


def _describe(layout: object, rows: int, cols: int) -> str:
    what = layout.describe() if hasattr(layout, "describe") else type(layout).__name__
    if isinstance(layout, Tile):
        return f"{rows}x{cols} tile of {layout.elem_bytes}-byte elements, {what}"
    if isinstance(layout, Structs):
        return f"{rows} records of fields {layout.fields} bytes, {what}"
    return f"{rows} replicas x {cols} bins, {what}"


def _phase_lines(ins: Instruction, addr: np.ndarray, a: Arch) -> list[str]:
    """One line per non-empty phase: banks touched, the busiest bank and how many words it must serve."""
    result = analyze([int(x) if x >= 0 else None for x in addr], ins.access_bytes, ins.op, a)
    per = a.warp_size // len(result.phase_costs)
    nwords = max(1, ins.access_bytes // a.bank_bytes)
    lines = []
    for p, cost in enumerate(result.phase_costs):
        lanes = addr[p * per : (p + 1) * per]
        lanes = lanes[lanes >= 0]
        if not len(lanes):
            continue
        words = (lanes[:, None] // a.bank_bytes + np.arange(nwords)).ravel()
        banks = words % a.banks
        if ins.op == "atomic":  # every lane's word is its own request
            load = np.bincount(banks, minlength=a.banks)
            how = "update"
        else:
            uniq = np.unique(words)
            load = np.bincount(uniq % a.banks, minlength=a.banks)
            how = "distinct word"
        busiest = int(load.argmax())
        touched = _n(len(np.unique(banks)), "bank")
        lines.append(
            f"  phase {p} (lanes {p * per}-{(p + 1) * per - 1}): {touched} touched; "
            f"busiest bank {busiest} holds {_n(int(load.max()), how)} -> {_n(int(cost), 'wavefront')}"
        )
    active = _n(int((addr >= 0).sum()), "active lane")
    head = (
        f"instruction {{i}} {ins.name!r}: {ins.op} of {ins.access_bytes} bytes per lane, {active}, "
        f"{_n(len(result.phase_costs), 'phase')} of {per} lanes: {_n(result.wavefronts, 'wavefront')}, "
        f"ideal {result.ideal}"
    )
    return [head, *lines]


def _instructions(pattern: Sequence[Instruction] | Stacked) -> Sequence[Instruction]:
    return pattern.instructions() if isinstance(pattern, Stacked) else pattern


def _build(layout: object, pattern: Sequence[Instruction], arch: str | Arch, instruction: int) -> _Map:
    a = get_arch(arch)
    rows, cols, widths = _grid(layout)
    check_tile(rows, cols)
    if not pattern:
        raise ValueError("pattern: no instructions to explain")
    if isinstance(instruction, bool) or not isinstance(instruction, (int, np.integer)):
        raise ValueError(f"instruction: must be an int, got {instruction!r}")
    if not 0 <= instruction < len(pattern):
        n = len(pattern)
        raise ValueError(f"instruction: {instruction} is out of range; the pattern has {n} (0..{n - 1})")
    cost = score(pattern, layout, a)
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    banks = (np.asarray(layout.offsets(r, c)) // a.bank_bytes) % a.banks  # type: ignore[attr-defined]
    pad = layout.pad if isinstance(layout, Tile) else 0
    if pad:  # the swizzle permutes within each row's first cols elements: the padding stays at the end
        start = (np.arange(rows)[:, None] * layout.row_stride + cols + np.arange(pad)) * layout.elem_bytes
        pad_banks = (start // a.bank_bytes) % a.banks
    else:
        pad_banks = np.zeros((rows, 0), dtype=np.int64)
    ins = pattern[instruction]
    marked = np.zeros((rows, cols), dtype=bool)
    active = ins.rows >= 0
    for lr, lc in zip(ins.rows[active], ins.cols[active], strict=True):
        span = max(1, ins.access_bytes // int(widths[min(lc, cols - 1)]))
        if 0 <= lr < rows:
            marked[lr, max(lc, 0) : min(lc + span, cols)] = True
    addr = np.asarray(addresses(ins, layout), dtype=np.int64)
    lines = _phase_lines(ins, addr, a)
    lines[0] = lines[0].replace("{i}", str(instruction))
    live = addr[addr >= 0]
    words = (live[:, None] // a.bank_bytes + np.arange(max(1, ins.access_bytes // a.bank_bytes))).ravel()
    touched = len(np.unique(words % a.banks))
    title = _describe(layout, rows, cols)
    return _Map(banks, pad_banks, marked, title, cost, tuple(lines), instruction, a, touched)


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' * (count != 1)}"


def _degree(wave: int, ideal: int) -> str:
    d = wave / ideal if ideal else 1.0
    return f"{d:.2f}".rstrip("0").rstrip(".") + "x"


def _listed(n: int, chosen: int) -> list[int]:
    """Which instructions the table lists: all up to ``TABLE_ROWS``, else the first ones and the chosen."""
    if n <= TABLE_ROWS:
        return list(range(n))
    head = list(range(TABLE_ROWS - 2))
    return head + ([chosen] if chosen >= len(head) else [])


def _table(pattern: Sequence[Instruction], m: _Map) -> list[str]:
    width = max(len("total per tile"), *(len(ins.name) for ins in pattern))
    out = [f"  {'#':>4}  {'instruction':<{width}}  {'op':<6} {'bytes':>5} {'count':>5}  {'wavefronts':>10} "
           f"{'ideal':>6} {'degree':>7}"]  # fmt: skip
    listed = _listed(len(pattern), m.index)
    for n, i in enumerate(listed):
        if n and i != listed[n - 1] + 1:
            out.append(f"  {'...':>4}")
        ins, (_, count, wave, ideal) = pattern[i], m.cost.per_instruction[i]
        flag = " <" if i == m.index else ""
        out.append(
            f"  {i:>4}  {ins.name:<{width}}  {ins.op:<6} {ins.access_bytes:>5} {count:>5}  {wave:>10} "
            f"{ideal:>6} {_degree(wave, ideal):>7}{flag}"
        )
    if len(listed) < len(pattern):
        out.append(f"  ... {len(pattern) - len(listed)} more instructions, all counted in the total")
    c = m.cost
    out.append(
        f"  {'':>4}  {'total per tile':<{width}}  {'':<6} {'':>5} {'':>5}  {c.wavefronts:>10} {c.ideal:>6} "
        f"{_degree(c.wavefronts, c.ideal):>7}  ({c.conflicts} conflict wavefronts)"
    )
    return out


def _map_lines(m: _Map, color: bool) -> list[str]:
    """The map cell by cell; above ``MAP_CELLS`` rows or columns only its top-left corner."""
    rows, cols = m.banks.shape
    big = rows > MAP_CELLS or cols > MAP_CELLS
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
        if m.pad_banks.shape[1] and not big:
            padding = "".join(f" {int(b):>2} " for b in m.pad_banks[r])
            line += " |" + (f"{_ANSI_DIM}{padding}{_ANSI_OFF}" if color else padding)
        out.append(line.rstrip())
    if big:
        marked = np.argwhere(m.marked)
        cells = ", ".join(f"({r},{c})->{int(m.banks[r, c])}" for r, c in marked[:64])
        more = f", ... {len(marked) - 64} more" if len(marked) > 64 else ""
        out += [
            f"(map summarised: {rows}x{cols} is over {MAP_CELLS}x{MAP_CELLS} cells; the corner above is rows "
            f"0-{show_r - 1}, columns 0-{show_c - 1}; --png draws the whole map)",
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
    every cell when the tile has at most ``MAP_CELLS`` rows and columns."""
    pattern = _instructions(pattern)
    m = _build(layout, pattern, arch, instruction)
    rows, cols = m.banks.shape
    c = m.cost
    keep = TABLE_ROWS * 64
    small = rows <= MAP_CELLS and cols <= MAP_CELLS
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
        "padding_banks": m.pad_banks.tolist() if small else None,
        "marked": [[int(r), int(col)] for r, col in np.argwhere(m.marked)],
    }


def bank_map_figure(
    layout: object, pattern: Sequence[Instruction] | Stacked, arch: str | Arch = "sm_90", instruction: int = 0
) -> Figure:
    """The bank map as a matplotlib ``Figure`` on an Agg canvas (no pyplot, no GUI backend touched).

    Cells are shaded by bank with a cyclic colormap of one colour per bank, padding cells are faded after a
    vertical line, the cells instruction ``instruction`` touches are outlined, and the title gives its
    banks touched, wavefronts, ideal and degree, and the whole tile's.
    """
    pattern = _instructions(pattern)
    m = _build(layout, pattern, arch, instruction)
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import ListedColormap
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    a = m.arch
    rows, cols = m.banks.shape
    npad = m.pad_banks.shape[1]
    cmap = ListedColormap(matplotlib.colormaps["hsv"](np.linspace(0, 1, a.banks, endpoint=False)))
    cell = min(0.3, 14.0 / (cols + npad), 14.0 / rows)  # inches per cell: big tiles shrink, never distort
    width = max(7.0, (cols + npad) * cell + 2.6)
    height = max(4.0, rows * cell + 1.8)
    fig = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    kw = {"cmap": cmap, "vmin": -0.5, "vmax": a.banks - 0.5, "interpolation": "nearest", "aspect": "equal"}
    image = ax.imshow(m.banks, extent=(-0.5, cols - 0.5, rows - 0.5, -0.5), **kw)
    if npad:
        ax.imshow(m.pad_banks, extent=(cols - 0.5, cols + npad - 0.5, rows - 0.5, -0.5), alpha=0.3, **kw)
        ax.axvline(cols - 0.5, color="black", linewidth=1)
    ax.set_xlim(-0.5, cols + npad - 0.5)
    ax.set_ylim(rows - 0.5, -0.5)
    small = rows <= 48 and cols + npad <= 48
    if small:
        size = max(4.0, 7.0 - 0.05 * max(rows, cols))
        for (r, c), b in np.ndenumerate(m.banks):
            ax.text(c, r, str(b), ha="center", va="center", fontsize=size,
                    fontweight="bold" if m.marked[r, c] else "normal")  # fmt: skip
        for (r, c), b in np.ndenumerate(m.pad_banks):
            ax.text(cols + c, r, str(b), ha="center", va="center", fontsize=size, color="dimgray")
    for r, c in zip(*np.nonzero(m.marked), strict=True):
        ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=2.0))
    _, count, wave, ideal = m.cost.per_instruction[m.index]
    ins = pattern[m.index]
    fig.suptitle(  # on the figure, not the axes, so a narrow tile does not clip it
        f"{m.title}\ninstruction {m.index} ({ins.name}): {_n(m.touched, 'bank')} touched, "
        f"{_n(wave, 'wavefront')} for ideal {ideal} -> {_degree(wave, ideal)}\n"
        f"whole tile: {m.cost.wavefronts} wavefronts, ideal {m.cost.ideal} -> "
        f"{_degree(m.cost.wavefronts, m.cost.ideal)}",
        fontsize=9,
        y=1 - 0.1 / height,
        va="top",
    )
    ax.set_xlabel("column" + (" (shaded after the line: row padding)" if npad else ""))
    ax.set_ylabel("row")
    bar = fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02)
    bar.set_label(f"bank (byte offset // {a.bank_bytes} % {a.banks})")
    bar.set_ticks(list(range(0, a.banks, max(1, a.banks // 8))))
    fig.subplots_adjust(left=0.7 / width, right=1 - 0.9 / width, bottom=0.6 / height, top=1 - 0.9 / height)
    return fig


def explain_png(
    layout: object,
    pattern: Sequence[Instruction] | Stacked,
    path: str | Path,
    arch: str | Arch = "sm_90",
    instruction: int = 0,
    overwrite: bool = True,
) -> Path:
    """Draw the bank map (``bank_map_figure``) to a PNG at ``path`` and return the path.

    The image is rendered in memory and written by ``files.write_file``: atomically, never through a
    symlink, and (with ``overwrite=False``) never over a different existing file. Needs matplotlib
    (``pip install autopad[plot]``).
    """
    buf = io.BytesIO()
    bank_map_figure(layout, pattern, arch, instruction).savefig(buf, format="png")
    return write_file(Path(path), buf.getvalue(), overwrite=overwrite)
