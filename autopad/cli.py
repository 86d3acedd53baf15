"""The ``autopad`` command line: ``autopad COMMAND ...`` or ``python -m autopad COMMAND ...``.

Commands (each group in its own module, registered in ``build_parser``): ``tune`` (cli_tune.py),
``export`` (cli_export.py), ``sweep`` (cli_sweep.py), ``pretune`` and ``cache`` (cli_cache.py), ``explain``
(cli_explain.py), ``validate`` (validate.py's own parser, wrapped in cli_tune.py). Every command that prints
results takes ``--json``: one JSON document on stdout and nothing else there (notes go to stderr).

Exit codes: 0 success; 1 the work failed (no candidate ran correctly, a file could not be written, a sweep
item failed, a validation disagreed); 2 the command cannot run as asked: bad arguments, an input file that
is not what it should be, a cache folder that is a file, or a GPU-only command on a machine without a GPU.
Every error is one line on stderr, found before any work where it can be, never a traceback; an unexpected
exception is reported in one line too (exit 1), and ``AUTOPAD_DEBUG=1`` shows its traceback.

Why so lazy: ``autopad tune`` answered from the cache should take milliseconds, so only the parser of the
command being run is built in full (the others are one-line stubs; validate's parser loads its probe
machinery) and each handler imports what it needs when it runs.

To add a command: write ``add_<name>(subparsers)`` that creates its parser and sets ``handler``, and a
handler ``(args) -> int`` that raises ``UsageError`` (exit 2) or ``Failed`` (exit 1) with one line.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import sys
import warnings
from collections.abc import Sequence
from typing import Any

__all__ = ["main", "build_parser", "UsageError", "Failed", "emit_json", "add_json"]


class UsageError(Exception):
    """The command cannot run as asked: main() prints the message on one line and returns 2."""


class Failed(Exception):
    """The work failed: main() prints the message on one line and returns 1."""


class _Parser(argparse.ArgumentParser):
    """argparse that raises UsageError instead of printing the usage block and exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        # "--shape -3x5": argparse takes a value that starts with '-' for an option and says only that
        # --shape lacks its value; say how to give one, so that the value's own check can say what is wrong
        # (argparse names an option as defined: "--shape", "-o/--output" or "--output/-o")
        missing = re.fullmatch(r"argument (?:-\w/)?(--[\w-]+)(?:/-\w)?: expected one argument", message)
        if missing:
            message += f" (write {missing.group(1)}=VALUE for a value that starts with '-')"
        raise UsageError(f"{self.prog}: error: {message} (see '{self.prog} --help')")


def add_json(p: argparse.ArgumentParser) -> None:
    """The ``--json`` switch every command that prints results has."""
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout instead of text")


def emit_json(obj: Any) -> None:
    """``obj`` as indented JSON with sorted keys on stdout (tuples as lists, anything else as text)."""
    sys.stdout.write(json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


_HELP = {  # the one-line help of each command, for stubs (see build_parser)
    "tune": "tune one kernel for one shape and dtype",
    "sweep": "tune kernels x shapes x dtypes to a CSV and a PNG",
    "export": "write tuned constants as .json, .h or .py",
    "pretune": "tune ahead of time the op calls a service will make (autopad.ops)",
    "cache": "list, clear, pack or unpack the tuning cache",
    "explain": "print (or draw) the bank map of a layout under an access pattern",
    "validate": "check the bank-conflict model against the GPU (ncu or timing)",
}


def _command(argv: Sequence[str]) -> str | None:
    """The command word: the first argument that is not an option (top-level options take no value)."""
    return next((a for a in argv if not a.startswith("-")), None)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``autopad`` parser. With ``only`` (a command name), only that command's parser is built in
    full and the others are one-line stubs: argparse spends milliseconds per parser, which a cache hit
    should not pay, and validate's parser loads its probe machinery."""
    from . import __version__

    parser = _Parser(
        prog="autopad",
        description="Pick shared-memory layouts for GPU kernels with an analytical bank-conflict model, "
        "benchmark the best candidates on the GPU, export the winner's constants.",
        epilog="exit codes: 0 success, 1 the work failed, 2 bad arguments or a GPU-only command without "
        "a GPU (one line on stderr). Every command has --help.",
    )
    parser.add_argument("--version", action="version", version=f"autopad {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, help_text in _HELP.items():
        if only is not None and only != name:
            sub.add_parser(name, help=help_text, add_help=False)
            continue
        module, add = _ADD[name]
        getattr(importlib.import_module(f"autopad.{module}"), add)(sub)
    return parser


_ADD = {
    "tune": ("cli_tune", "add_tune"),
    "sweep": ("cli_sweep", "add_sweep"),
    "export": ("cli_export", "add_export"),
    "pretune": ("cli_cache", "add_pretune"),
    "cache": ("cli_cache", "add_cache"),
    "explain": ("cli_explain", "add_explain"),
    "validate": ("cli_tune", "add_validate"),
}


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _warning_line(message: Warning | str, category: type[Warning], *_: Any, **__: Any) -> str:
    """A warning as the command line prints it: its text on one line (autopad's start 'autopad ...'; any
    other keeps its category's name)."""
    text = _one_line(message)
    return (text if text.startswith("autopad") else f"{category.__name__}: {text}") + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``autopad`` with ``argv`` (default: sys.argv[1:]); returns the exit code."""
    # a warning (a corrupt cache file, an unusable cache folder) is one line in its own words: Python's form
    # adds the file and line of the code that warned and that code's source, which reads like a traceback;
    # and the same text twice in one command (a bad cache file read, then replaced) is said once; the filter
    # goes last, so any the user set (-W, PYTHONWARNINGS, a caller's own: -W error still fails the command)
    # comes first and wins
    saved = warnings.formatwarning
    with warnings.catch_warnings():
        warnings.filterwarnings("once", category=UserWarning, append=True)
        warnings.formatwarning = _warning_line
        try:
            return _main(list(sys.argv[1:] if argv is None else argv))
        finally:
            warnings.formatwarning = saved


def _main(argv: list[str]) -> int:
    try:
        cmd = _command(argv)
        parser = build_parser(only=cmd if cmd in _HELP else "")  # "": every command a stub (help, typos)
        args = parser.parse_args(argv)
        if getattr(args, "handler", None) is None:
            raise UsageError("autopad: error: choose a command (see 'autopad --help')")
        return int(args.handler(args))
    except UsageError as err:
        print(_one_line(err), file=sys.stderr)
        return 2
    except Failed as err:
        print(_one_line(err), file=sys.stderr)
        return 1
    except SystemExit as err:  # --help and --version exit through argparse
        return err.code if isinstance(err.code, int) else (0 if err.code is None else 2)
    except BrokenPipeError:  # e.g. `autopad explain | head`
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (the interpreter flushes it at exit)
        except OSError:
            pass
        return 0
    except KeyboardInterrupt:
        print("autopad: interrupted", file=sys.stderr)
        return 130
    except Warning as err:  # a warning the user made an error (-W error): its own words, not a bug's
        print(_one_line(f"autopad {_command(argv) or ''}: error: {err}"), file=sys.stderr)
        return 1
    except Exception as err:  # a bug or an environment problem: one line, unless debugging
        if os.environ.get("AUTOPAD_DEBUG", "") not in ("", "0"):
            raise
        cmd = _command(argv) or ""
        print(
            _one_line(
                f"autopad {cmd}: error: {type(err).__name__}: {err} "
                "(AUTOPAD_DEBUG=1 shows the traceback; please report it)"
            ),
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":  # python -m autopad.cli: run the imported module, whose exception classes the
    from autopad.cli import main as _main  # handlers raise (this file as __main__ has copies of its own)

    sys.exit(_main())
