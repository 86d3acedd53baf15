"""The bank map of a layout under an access pattern, computed once for every rendering of it.

For each element of the logical grid (a tile's rows and columns, a struct array's records and fields, a
privatised histogram's replicas and bins): the bank of the word holding its first byte, ``(offset // 4) %
32`` on sm_90; the banks of a padded tile's padding; which elements the chosen warp instruction touches;
that instruction's phases (banks touched, the busiest bank and how many words it must serve, the
wavefronts the model counts); and the whole pattern's cost (``access.score``).

Why a module of its own: the text (explain.py) and the picture (explain_figure.py) draw the same numbers,
and the model decides every one of them (``access.score``, ``model.analyze``); this is where they are
asked for, and the size checks happen (``explain_parse.check_tile``) before anything is computed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .access import Instruction, PatternCost, Stacked, addresses, score
from .arch import Arch, get_arch
from .explain_parse import check_tile
from .layouts import Replicated, Structs, Tile
from .model import analyze

__all__: list[str] = []


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


def _cg_lines(ins: Instruction, addr: np.ndarray, a: Arch) -> list[str]:
    """cp.async.cg: one line per global line of its lane-ordered source (lanes 8k..8k+7 copy line k) with a
    copy that counts; its cost is in sector moves, not in a busiest bank (model_cp_async_cg.py)."""
    from .model_cp_async_cg import first_writers

    result = analyze([int(x) if x >= 0 else None for x in addr], ins.access_bytes, ins.op, a)
    kept = first_writers(np.asarray(addr, dtype=np.int64)[None, :])[0]
    per = 128 // ins.access_bytes
    lines_used = sorted({lane // per for lane in range(len(addr)) if kept[lane]})
    out = [
        f"  global line {k} (lanes {k * per}-{(k + 1) * per - 1}): "
        f"{int(kept[k * per : (k + 1) * per].sum())} counted -> "
        f"{_n(int(cost), 'wavefront')}"
        for k, cost in zip(lines_used, result.phase_costs)
    ]
    active = _n(int((addr >= 0).sum()), "active lane")
    head = (
        f"instruction {{i}} {ins.name!r}: cp.async.cg of {ins.access_bytes} bytes per lane, {active} "
        f"({int(kept.sum())} counted: a word written twice counts once), from "
        f"{_n(len(lines_used), 'global line')}: {_n(result.wavefronts, 'wavefront')} (sector moves of one "
        f"line into one row share a wavefront where they agree in half set, half swap and sector parity)"
    )
    return [head, *out]


def _side_lines(ins: Instruction, addr: np.ndarray, a: Arch) -> list[str]:
    """A copy that gives its global side (``Instruction.global_offsets``): one line per 128-byte global
    line it reads with a copy that counts, lowest first, with the lanes reading it and what the line's
    copies alone would cost (``Analysis.phase_costs``)."""
    from .model_cp_async_cg import first_writers

    glob = np.asarray(ins.global_offsets, dtype=np.int64)
    result = analyze([int(x) if x >= 0 else None for x in addr], ins.access_bytes, ins.op, a,
                     global_addresses=glob)  # fmt: skip
    counted = addr >= 0
    if ins.op == "cp.async.cg":  # a word written twice counts once
        counted = first_writers(np.asarray(addr, dtype=np.int64)[None, :])[0] & counted
    lines = sorted({int(g) // 128 for g, c in zip(glob.tolist(), counted.tolist()) if c})
    out = []
    for line, cost in zip(lines, result.phase_costs):
        lanes = [lane for lane in range(len(addr)) if counted[lane] and glob[lane] // 128 == line]
        out.append(f"  global line {line} (lanes {', '.join(map(str, lanes))}): alone "
                   f"{_n(int(cost), 'wavefront')}")  # fmt: skip
    how = (
        "sector moves of one line into one row share a wavefront where they agree in half set, half swap "
        "and sector parity"
        if ins.op == "cp.async.cg"
        else "per store phase the most of: lanes writing one bank, lines reading one slot, and a lane's bank "
        "queue joined to its slot's; so not the lines' sum"
    )
    head = (
        f"instruction {{i}} {ins.name!r}: {ins.op} of {ins.access_bytes} bytes per lane, "
        f"{_n(int((addr >= 0).sum()), 'active lane')}, from {_n(len(lines), 'global line')} (its global "
        f"side): {_n(result.wavefronts, 'wavefront')}, ideal {result.ideal} ({how})"
    )
    return [head, *out]


def _phase_lines(ins: Instruction, addr: np.ndarray, a: Arch) -> list[str]:
    """One line per non-empty phase: banks touched, the busiest bank and how many words it must serve."""
    if getattr(ins, "global_offsets", None) is not None:
        return _side_lines(ins, addr, a)
    if ins.op == "cp.async.cg":
        return _cg_lines(ins, addr, a)
    result = analyze([int(x) if x >= 0 else None for x in addr], ins.access_bytes, ins.op, a)
    per = a.warp_size // max(1, len(result.phase_costs))
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
    pad = layout.pad if isinstance(layout, Tile) else 0
    check_tile(rows, cols, pad)  # the padding cells are drawn too
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
