"""``autopad export``: tuned constants as .json, .h or .py, from saved results or from the cache.

From result JSON files (several, one per device, merge into one header in which host and device code
always agree; errors name the files) or from the cache (``--kernel``, looked up exactly as ``autopad tune``
keys it: same spec resolution, default input class and device), to a file or to stdout (``-o -`` with
``--format``). A file that is not a result (not JSON, ``{}``, another JSON) is one line and exit 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .cli import Failed, UsageError, add_json, emit_json
from .cli_tune import EXPORT_FORMATS, check_cache_dir, cli_message, export_target, header_name

__all__ = ["add_export"]


# ---- autopad export --------------------------------------------------------------------------------------


def add_export(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export",
        help="write tuned constants as .json, .h or .py",
        description="From saved results (autopad tune --export x.json) or from the cache (--kernel, with "
        "the same --shape/--dtype/--backend/--dist as the tune). Several results (one per device) merge into "
        "one header in which host and device code always agree.",
        epilog="examples: autopad export h200.json h100.json -o transpose.h\n"
        "          autopad export --kernel transpose --shape 8192x8192 --dtype float32 -o t.py\n"
        "          autopad export t.json -o - --format h",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("results", nargs="*", help="result .json files")
    p.add_argument("-o", "--output", required=True, help="file to write ('-': stdout, with --format)")
    p.add_argument("--format", choices=EXPORT_FORMATS, help="output format (default: from the suffix)")
    p.add_argument("--kernel", help="take the result from the cache: kernel name")
    p.add_argument("--shape")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--backend", default="auto", choices=("auto", "cuda", "triton"))
    p.add_argument(
        "--dist",
        help="histogram input class it was tuned for: uniform (default), skewed, single, sorted",
    )
    p.add_argument("--device", type=int, default=0, help="the CUDA device whose result to take")
    p.add_argument("--overwrite", action="store_true", help="replace a different existing file")
    p.add_argument(
        "--name",
        help="a header's macro prefix, AUTOPAD_<NAME>_ (default: the kernel's): headers of one kernel "
        "(two dtypes, two backends) can then be included together",
    )
    add_json(p)
    p.set_defaults(handler=run_export)


def run_export(args: argparse.Namespace) -> int:
    """Handler of ``autopad export``."""
    from . import export

    if args.json and args.output == "-":  # as autopad tune's --json --export -
        raise UsageError("autopad export: error: --json and -o -: both would use stdout; choose one")
    fmt = export_target(args.output, args.format, "export")
    header_name(args.name, fmt, "export")
    try:
        if args.kernel:
            if args.results:
                raise ValueError("give result files or --kernel, not both")
            if not args.shape:
                raise ValueError("--kernel needs --shape")
            results = [_from_cache(args)]
        elif args.results:
            missing = [p for p in args.results if not Path(p).is_file()]
            if missing:
                raise ValueError(f"RESULTS: no such file: {missing[0]}")
            results = [export.load_result(p) for p in args.results]
        else:
            raise ValueError("nothing to export: give result .json files or --kernel/--shape")
        if len(results) > 1 and fmt != ".h":
            raise ValueError("several results merge only into a .h header")
    except (ValueError, OSError) as err:
        raise UsageError(f"autopad export: error: {cli_message(err)}") from None
    sources = list(args.results) or None
    try:
        if args.output == "-":
            if len(results) > 1:
                text = export.render_merged_header(results, "autopad.h", sources=sources, name=args.name)
            else:
                text = export.render(results[0], fmt, name=args.name)
            sys.stdout.write(text)
            return 0
        if len(results) > 1:
            path = export.merge_header(
                results, args.output, overwrite=args.overwrite, sources=sources, name=args.name
            )
        else:
            path = export.export_result(
                results[0], args.output, fmt=fmt, overwrite=args.overwrite, name=args.name
            )
    except FileExistsError as err:
        raise Failed(f"autopad export: error: {err}") from None
    except ValueError as err:  # results that cannot go together, or a name that cannot be a constant
        raise UsageError(f"autopad export: error: {err}") from None
    except OSError as err:
        raise Failed(f"autopad export: error: cannot write {args.output}: {err}") from None
    if args.json:
        emit_json({"wrote": str(path), "format": fmt, "results": len(results), "sources": sources})
    else:
        print(f"wrote {path}")
    return 0


def _from_cache(args: argparse.Namespace) -> Any:
    """The cached result of the tune ``autopad tune KERNEL --shape --dtype --backend --dist`` made here,
    looked up exactly as that tune keys it (same spec resolution, default input class and device)."""
    from .cache import Cache
    from .cli_spec import load_kernel
    from .device import device_info
    from .request import Request
    from .tune import cache_key

    check_cache_dir("export")
    kernel, _ = load_kernel(args.kernel, "export")
    req = Request.make(kernel, args.shape, args.dtype, backend=args.backend, dist=args.dist)
    key = cache_key(req.spec, req.shape, req.dtype, req.dist, device_info(args.device))
    found = Cache().nearest(key)
    if found is None or found[0].shape != key.shape:
        what = f"{req.spec.NAME} [{req.spec.BACKEND}] {args.shape} {req.dtype}" + (
            f" {req.dist}" if req.dist else ""
        )
        raise ValueError(f"no cached result for {what} on this machine; run autopad tune first")
    return found[1]
