"""The strings of ``autopad explain`` turned into objects: a dtype's size, a tile, a layout, an access
pattern (the warp instructions of a named pattern over a tile).

Why apart from the drawing (explain.py): these are the CLI's argument checks, and each names what it could
not read, so that a typo is one line before anything is computed. A tile of more than ``MAX_ELEMENTS``
elements is refused here: nothing in shared memory is that large (227 KiB at most on sm_90), and its map
would take minutes.
"""

from __future__ import annotations

import re

import numpy as np

from .access import Instruction, block_tile
from .layouts import Padded, Swizzle, Tile

__all__ = [
    "DTYPE_BYTES",
    "MAX_ELEMENTS",
    "PATTERNS",
    "check_tile",
    "parse_dtype",
    "parse_layout",
    "parse_pattern",
    "parse_tile",
]

DTYPE_BYTES = {
    "float64": 8, "fp64": 8, "double": 8, "int64": 8, "uint64": 8,
    "float32": 4, "fp32": 4, "float": 4, "int32": 4, "uint32": 4,
    "float16": 2, "fp16": 2, "half": 2, "bfloat16": 2, "bf16": 2, "int16": 2, "uint16": 2,
    "float8": 1, "fp8": 1, "int8": 1, "uint8": 1,
}  # fmt: skip
PATTERNS = ("row", "column", "transpose-read", "transpose-write", "tile BXxBY")
MAX_ELEMENTS = 1 << 20  # 4 MiB of fp32: 18x the largest shared memory (227 KiB); beyond, refused


def parse_dtype(name: str) -> int:
    """Bytes per element of a dtype name such as "float32", "fp16", "bf16", "int8"."""
    key = str(name).lower().removeprefix("torch.")
    if key not in DTYPE_BYTES:
        raise ValueError(f"dtype: unknown {name!r}; known: {', '.join(DTYPE_BYTES)}")
    return DTYPE_BYTES[key]


def check_tile(rows: int, cols: int, pad: int = 0) -> None:
    """A ValueError naming the tile when it has more than ``MAX_ELEMENTS`` elements, or when the ``pad``
    elements that end each row (drawn too) more than double it: nothing to draw in shared memory is that
    large, and its map would take minutes and hundreds of MB (pad=1000000 on a 32x32 tile printed 128 MB),
    while the largest tile padded as layouts pad it (1024x1024, pad 1) is explained."""
    if rows * cols > MAX_ELEMENTS or rows * (cols + pad) > 2 * MAX_ELEMENTS:
        padding = f" with {pad:,} element{'s' * (pad != 1)} of padding a row" if pad else ""
        raise ValueError(
            f"tile: {rows}x{cols}{padding} is {rows * (cols + pad):,} elements; explain draws tiles of up "
            f"to {MAX_ELEMENTS:,} elements, with padding up to as many again (shared memory holds at most "
            f"227 KiB, e.g. 256x256 fp32 is 256 KiB)"
        )


def parse_tile(spec: str) -> tuple[int, int]:
    """ "32x32" -> (32, 32): rows x columns of the tile, in elements (at most ``MAX_ELEMENTS`` of them)."""
    m = re.fullmatch(r"\s*(\d+)\s*[xX*]\s*(\d+)\s*", str(spec))
    if not m or int(m[1]) <= 0 or int(m[2]) <= 0:
        raise ValueError(f"tile: expected ROWSxCOLS such as 32x32, got {spec!r}")
    check_tile(int(m[1]), int(m[2]))
    return int(m[1]), int(m[2])


def _swizzle_term(kind: str, value: str, spec: str, cols: int) -> Swizzle | None:
    """``swizzle=vec4,phase1,max8`` or ``cute=B,M,S`` as a Swizzle for rows of ``cols``; None if neither."""
    if kind == "swizzle" and value:
        parts = {"vec": 1, "phase": 1, "max": None}
        seen: set[str] = set()
        for part in value.split(","):
            m = re.fullmatch(r"(vec|per_phase|phase|max_phase|max)=?(\d+)", part)
            if not m:
                raise ValueError(f"layout: cannot read {part!r} in {spec!r}; expected e.g. vec4,phase1,max8")
            key = m[1].removeprefix("per_").removesuffix("_phase")
            if key in seen:  # vec4,vec8 was read as vec 8: the last one won without a word
                raise ValueError(f"layout: {key} given twice in {spec!r}; give each of vec, phase, max once")
            seen.add(key)
            parts[key] = int(m[2])
        vec, phase = parts["vec"], parts["phase"]
        top = parts["max"] if parts["max"] is not None else max(1, cols // max(vec, 1))
        return Swizzle(vec, phase, top)
    if kind == "cute" and re.fullmatch(r"\d+,\d+,\d+", value):
        b, m_, s = (int(x) for x in value.split(","))
        return Swizzle.cute(b, m_, s).on(cols)
    return None


def parse_layout(spec: str, rows: int, cols: int, elem_bytes: int) -> Tile:
    """A layout from a short spec, for a ``rows x cols`` tile of ``elem_bytes``-byte elements.

    ``pad=N`` (N elements of padding per row; ``pad=0`` or ``none`` is the plain tile),
    ``swizzle=vec4,phase1,max8`` (Gluon ``SwizzledSharedLayout(vec, per_phase, max_phase)``; max defaults
    to the whole row, cols // vec, and phase to 1) or ``cute=B,M,S`` (CuTe ``Swizzle<B, M, S>``), or a
    padding and a swizzle composed: ``pad=4+swizzle=vec4,phase1,max8`` (or ``pad=4,swizzle=...``).
    The result is ``Padded``, ``Swizzled`` or, for both, a ``Tile``.
    """
    text = str(spec).strip().lower().replace(" ", "")
    forms = "pad=N, swizzle=vecV,phaseP,maxM, cute=B,M,S, or pad=N+swizzle=... / pad=N+cute=..."
    try:
        if text in ("none", "plain", "unpadded"):
            return Padded(rows, cols, elem_bytes)
        terms = re.sub(r",(?=(pad|swizzle|cute)=)", "+", text).split("+")
        pad, swizzle = None, None
        for term in terms:
            kind, _, value = term.partition("=")
            if kind == "pad" and pad is None and re.fullmatch(r"\d+", value):
                pad = int(value)
                continue
            sw = None if swizzle is not None else _swizzle_term(kind, value, spec, cols)
            if sw is None:
                raise ValueError(f"layout: cannot read {term!r} in {spec!r}; expected {forms}")
            swizzle = sw
        if swizzle is None:
            return Padded(rows, cols, elem_bytes, pad=pad or 0)
        return Padded(rows, cols, elem_bytes, pad=pad or 0).swizzled(swizzle)
    except ValueError as err:
        msg = str(err)
        raise ValueError(msg if msg.startswith("layout:") else f"layout: {spec!r}: {msg}") from None


def _sweep(
    rows: int, cols: int, elem_bytes: int, vec: int, warp: int, by_column: bool
) -> tuple[Instruction, ...]:
    """Every element once, ``warp`` vectors per instruction, in row-major or column-major order."""
    vcols = cols // vec
    slots = np.arange(rows * vcols, dtype=np.int64)
    r, vc = (slots % rows, slots // rows) if by_column else (slots // vcols, slots % vcols)
    out = []
    for k, start in enumerate(range(0, len(slots), warp)):
        rr = np.full(warp, -1, dtype=np.int64)
        cc = np.zeros(warp, dtype=np.int64)
        n = min(warp, len(slots) - start)
        rr[:n], cc[:n] = r[start : start + n], vc[start : start + n] * vec
        if by_column:
            name = f"column {int(cc[0])}" if rows >= warp and rows % warp == 0 else f"column sweep {k}"
        else:
            name = f"row {int(rr[0])}" if vcols % warp == 0 and vcols == warp else f"row sweep {k}"
        out.append(Instruction(name, "load", elem_bytes * vec, rr, cc))
    return tuple(out)


def parse_pattern(
    name: str, rows: int, cols: int, elem_bytes: int, vec: int = 1, block_y: int = 8, warp: int = 32
) -> tuple[Instruction, ...]:
    """The warp instructions of a named access pattern over a ``rows x cols`` tile.

    ``row``: the tile read in row-major order, ``vec`` elements per lane, ``warp`` lanes per instruction.
    ``column``: the same in column-major order (lane i reads row i of a column; with ``vec`` > 1 each lane
    reads ``vec`` elements along its row). ``transpose-read``: the read-out of a transpose, a
    ``rows/vec x block_y`` block walking columns (``access.block_tile(..., transposed=True)``).
    ``transpose-write``: the same block filling rows (stores). ``tile BXxBY``: a ``BX x BY`` block loading
    rows with a j loop.
    """
    key = str(name).strip().lower()
    try:
        for arg, value in (("vec", vec), ("block_y", block_y)):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{arg} must be a positive int, got {value!r}")
        if cols % vec:
            raise ValueError(f"{cols} columns are not a whole number of {vec}-element vectors")
        if key in ("row", "rows"):
            return _sweep(rows, cols, elem_bytes, vec, warp, by_column=False)
        if key in ("column", "col", "columns"):
            return _sweep(rows, cols, elem_bytes, vec, warp, by_column=True)
        if key == "transpose-read":
            if rows % vec:
                raise ValueError(f"{rows} rows are not a whole number of {vec}-element vectors")
            return block_tile(rows, cols, rows // vec, block_y, "load", elem_bytes, vec, True, warp)
        if key == "transpose-write":
            return block_tile(rows, cols, cols // vec, block_y, "store", elem_bytes, vec, False, warp)
        m = re.fullmatch(r"tile[\s=:]*(\d+)\s*x\s*(\d+)", key)
        if m:
            return block_tile(rows, cols, int(m[1]), int(m[2]), "load", elem_bytes, vec, False, warp)
    except ValueError as err:
        raise ValueError(f"pattern: {name!r}: {err}") from None
    raise ValueError(f"pattern: unknown {name!r}; known: {', '.join(PATTERNS)}")
