"""The ``autopad`` command line: one subcommand per job, each in its own ``_add_<name>`` + ``_run_<name>``.

Exit codes: 0 success, 1 a failure while doing the work (a file that cannot be written, matplotlib
missing), 2 bad arguments, reported as one line on stderr without a traceback. ``main(argv)`` returns the
code instead of exiting, so tests call it in-process. Importing this module loads argparse and nothing
heavy: each handler imports what it needs when it runs.

To add a subcommand: write ``_add_<name>(subparsers)`` that creates its parser and sets
``handler=_run_<name>``, write ``_run_<name>(args) -> int``, and call ``_add_<name>`` in ``build_parser``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["main", "build_parser", "UsageError"]


class UsageError(Exception):
    """Bad arguments: main() prints the message on one line and returns 2."""


class _Parser(argparse.ArgumentParser):
    """argparse that raises UsageError instead of printing the usage block and exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: error: {message} (see '{self.prog} --help')")


# ---- autopad explain ---------------------------------------------------------------------------------------

_EXPLAIN_EPILOG = """\
layouts:  pad=N                    N elements of padding per row (pad=0: the plain tile)
          swizzle=vecV,phaseP,maxM Gluon SwizzledSharedLayout(V, P, M): chunk j of V elements of row r
                                   goes to j ^ ((r // P) % M); phase and max default to 1 and cols / V
          cute=B,M,S               CuTe Swizzle<B,M,S> on the element offset r * cols + c
patterns: row                      the tile read row by row, VEC elements per lane
          column                   column by column (lane i reads row i)
          transpose-read           a transpose's read-out: a (rows/VEC) x BLOCK_Y block walking columns
          transpose-write          a transpose's fill: a (cols/VEC) x BLOCK_Y block storing rows
          "tile BXxBY"             a BX x BY thread block loading rows with a j loop

example:  autopad explain --tile 32x32 --dtype float32 --layout pad=1 --pattern column --png bank.png
"""


def _add_explain(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "explain",
        help="print (or draw) the bank map of a layout under an access pattern",
        description="Show which shared-memory bank every element of a tile lands in under a layout, the "
        "elements one warp instruction touches, and every instruction's wavefronts against the "
        "conflict-free count (the analytical model, no GPU needed).",
        epilog=_EXPLAIN_EPILOG,
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
    p.add_argument("--block-y", type=int, default=8, help="thread rows of the transpose block (default 8)")
    p.add_argument("--instruction", type=int, default=0, help="which instruction to mark (default 0)")
    p.add_argument(
        "--arch", default="sm_90", help="bank geometry: sm_90 (measured), sm_80, cdna3, ... (default sm_90)"
    )
    p.add_argument("--png", metavar="FILE", help="also draw the map to this PNG (needs matplotlib)")
    p.add_argument(
        "--color", choices=("auto", "always", "never"), default="auto", help="mark cells in colour"
    )
    p.set_defaults(handler=_run_explain)


def _run_explain(args: argparse.Namespace) -> int:
    from . import explain
    from .arch import get_arch

    try:
        arch = get_arch(args.arch)
        rows, cols = explain.parse_tile(args.tile)
        elem = explain.parse_dtype(args.dtype)
        layout = explain.parse_layout(args.layout, rows, cols, elem)
        pattern = explain.parse_pattern(
            args.pattern, rows, cols, elem, args.vec, args.block_y, arch.warp_size
        )
        legal = layout.check(args.vec, budget=1 << 62)  # any size can be drawn; the budget is only a note
        if not legal:
            raise ValueError(f"layout: {args.layout} cannot take {args.vec}-element accesses: {legal.reason}")
        fits = layout.check(args.vec, budget=arch.smem_per_block)
        color = args.color == "always" or (
            args.color == "auto" and sys.stdout.isatty() and not os.environ.get("NO_COLOR")
        )
        text = explain.explain_text(layout, pattern, arch, args.instruction, color=color)
    except ValueError as err:
        raise UsageError(f"autopad explain: error: {err}") from None
    sys.stdout.write(text)
    if not fits:
        print(f"note: {fits.reason} on {arch.name}", file=sys.stderr)
    if args.png:
        if not Path(args.png).resolve().parent.is_dir():
            print(f"autopad explain: error: cannot write {args.png}: no such directory", file=sys.stderr)
            return 1
        try:
            path = explain.explain_png(layout, pattern, args.png, arch, args.instruction)
        except ImportError:
            print(
                "autopad explain: error: --png needs matplotlib (pip install 'autopad[plot]')",
                file=sys.stderr,
            )
            return 1
        except OSError as err:
            print(f"autopad explain: error: cannot write {args.png}: {err.strerror or err}", file=sys.stderr)
            return 1
        print(f"wrote {path}")
    return 0


# ---- the entry point ---------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The ``autopad`` parser with every subcommand."""
    parser = _Parser(
        prog="autopad",
        description="Pick shared-memory layouts for GPU kernels with an analytical bank-conflict model.",
    )
    from . import __version__

    parser.add_argument("--version", action="version", version=f"autopad {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    from . import cli_tune

    cli_tune.add_tune(sub)
    cli_tune.add_sweep(sub)
    cli_tune.add_export(sub)
    cli_tune.add_cache(sub)
    _add_explain(sub)
    cli_tune.add_validate(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``autopad`` with ``argv`` (default: sys.argv[1:]); returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv) if argv is not None else None)
        if getattr(args, "handler", None) is None:
            raise UsageError("autopad: error: choose a command (see 'autopad --help')")
        return int(args.handler(args))
    except UsageError as err:
        print(str(err), file=sys.stderr)
        return 2
    except SystemExit as err:  # --help and --version exit through argparse
        return err.code if isinstance(err.code, int) else (0 if err.code is None else 2)
    except BrokenPipeError:  # e.g. `autopad explain | head`
        return 0


if __name__ == "__main__":
    sys.exit(main())
