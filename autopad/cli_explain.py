"""``autopad explain``: the bank map of a layout under an access pattern, as text, JSON or a PNG.

Every string is parsed (autopad.explain's ``parse_*``) and the tile's size checked before anything is
computed, so a typo or an absurd tile (``--tile 100000x100000``) is one line and exit 2, not a 74 GiB
allocation. The model does the counting; no GPU is needed.
"""

from __future__ import annotations

import argparse
import os
import sys

from .cli import Failed, UsageError, add_json, emit_json

__all__ = ["add_explain"]

_EPILOG = """\
layouts:  pad=N                    N elements of padding per row (pad=0: the plain tile)
          swizzle=vecV,phaseP,maxM Gluon SwizzledSharedLayout(V, P, M): chunk j of V elements of row r
                                   goes to j ^ ((r // P) % M); phase and max default to 1 and cols / V
          cute=B,M,S               CuTe Swizzle<B,M,S> on the element offset r * cols + c
          pad=N+swizzle=...        padding and a swizzle composed
patterns: row                      the tile read row by row, VEC elements per lane
          column                   column by column (lane i reads row i)
          transpose-read           a transpose's read-out: a (rows/VEC) x BLOCK_Y block walking columns
          transpose-write          a transpose's fill: a (cols/VEC) x BLOCK_Y block storing rows
          "tile BXxBY"             a BX x BY thread block loading rows with a j loop

tiles of up to 1,048,576 elements; over 256 rows or columns the text shows a corner of the map.

example:  autopad explain --tile 32x32 --dtype float32 --layout pad=1 --pattern column --png bank.png
"""


def add_explain(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "explain",
        help="print (or draw) the bank map of a layout under an access pattern",
        description="Show which shared-memory bank every element of a tile lands in under a layout, the "
        "elements one warp instruction touches, and every instruction's wavefronts against the "
        "conflict-free count (the analytical model, no GPU needed).",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--tile", default="32x32", help="ROWSxCOLS in elements (default 32x32)")
    p.add_argument(
        "--dtype", default="float32", help="element type: float32, float16, bfloat16, float64, int8, ..."
    )
    p.add_argument(
        "--layout", default="pad=0", help="pad=N | swizzle=vecV,phaseP,maxM | cute=B,M,S (default pad=0)"
    )
    p.add_argument(
        "--pattern", default="column", help="row | column | transpose-read | transpose-write | 'tile BXxBY'"
    )
    p.add_argument("--vec", type=int, default=1, help="elements per lane per access (default 1)")
    p.add_argument(
        "--block-y", type=int, help="thread rows of the transpose block (transpose-read/-write; default 8)"
    )
    p.add_argument("--instruction", type=int, default=0, help="which instruction to mark (default 0)")
    p.add_argument(
        "--arch",
        default="sm_90",
        help="bank geometry: sm_90 (measured), h100, sm_80, cdna3, ... (default sm_90)",
    )
    p.add_argument("--png", metavar="FILE", help="also draw the map to this PNG (needs matplotlib)")
    p.add_argument("--overwrite", action="store_true", help="let --png replace a different existing file")
    p.add_argument(
        "--color", choices=("auto", "always", "never"), default="auto", help="mark cells in colour"
    )
    add_json(p)
    p.set_defaults(handler=run_explain)


def run_explain(args: argparse.Namespace) -> int:
    """Handler of ``autopad explain``."""
    from . import explain
    from .arch import get_arch
    from .model_rules import WIDTHS

    try:
        arch = get_arch(args.arch)
        rows, cols = explain.parse_tile(args.tile)
        elem = explain.parse_dtype(args.dtype)
        layout = explain.parse_layout(args.layout, rows, cols, elem)
        if args.vec < 1 or args.vec * elem not in WIDTHS:  # a lane's access: --vec elements of the dtype
            takes = ", ".join(str(w // elem) for w in WIDTHS if w >= elem)
            raise ValueError(
                f"vec: {args.vec} elements of {args.dtype} is {args.vec * elem} bytes a lane; an access is "
                f"{', '.join(map(str, WIDTHS))} bytes, so --vec {takes} for {args.dtype}"
            )
        if args.block_y is not None and args.pattern.strip() not in ("transpose-read", "transpose-write"):
            # the other patterns have no block of their own: the value would be dropped without a word
            raise ValueError(
                f"block-y: only the transpose-read and transpose-write patterns take it, not {args.pattern!r}"
            )
        block_y = 8 if args.block_y is None else args.block_y
        pattern = explain.parse_pattern(args.pattern, rows, cols, elem, args.vec, block_y, arch.warp_size)
        legal = layout.check(args.vec, budget=1 << 62)  # any size can be drawn; the budget is only a note
        if not legal:
            raise ValueError(f"layout: {args.layout} cannot take {args.vec}-element accesses: {legal.reason}")
        fits = layout.check(args.vec, budget=arch.smem_per_block)
        if args.png is not None and not args.png.lower().endswith(".png"):  # '' too: it is no file name
            raise ValueError(f"png: {args.png!r} does not end in .png")
        if args.png:
            _check_png(args.png)
        if args.json:
            data = explain.explain_data(layout, pattern, arch, args.instruction)
        else:
            color = args.color == "always" or (
                args.color == "auto" and sys.stdout.isatty() and not os.environ.get("NO_COLOR")
            )
            text = explain.explain_text(layout, pattern, arch, args.instruction, color=color)
    except ValueError as err:
        raise UsageError(f"autopad explain: error: {err}") from None
    note = None if fits else f"{fits.reason} on {arch.name}"
    if note:
        print(f"note: {note}", file=sys.stderr)
    png = None
    if args.png:
        try:
            png = str(explain.explain_png(layout, pattern, args.png, arch, args.instruction, args.overwrite))
        except ImportError:
            raise Failed(
                "autopad explain: error: --png needs matplotlib (pip install 'autopad[plot]')"
            ) from None
        except FileExistsError:
            raise Failed(
                f"autopad explain: error: {args.png} exists with another picture (--overwrite replaces it)"
            ) from None
        except OSError as err:
            raise Failed(f"autopad explain: error: cannot write {args.png}: {err.strerror or err}") from None
    if args.json:
        emit_json({**data, "layout": args.layout, "pattern": args.pattern, "note": note, "png": png})
    else:
        sys.stdout.write(text)
        if png:
            print(f"wrote {png}")
    return 0


def _check_png(path: str) -> None:
    """A --png destination that cannot be written fails before anything is drawn (exit 1, as any file
    that cannot be written): a missing folder, a folder where the file should go, a symlink."""
    from pathlib import Path

    p = Path(path)
    if not p.parent.resolve().is_dir():
        raise Failed(f"autopad explain: error: cannot write {path}: no such directory {str(p.parent)!r}")
    if p.is_dir():
        raise Failed(f"autopad explain: error: cannot write {path}: it is a directory")
    if p.is_symlink():
        raise Failed(f"autopad explain: error: cannot write {path}: it is a symlink (remove it first)")
