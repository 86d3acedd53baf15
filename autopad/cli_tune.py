"""The ``autopad`` subcommands around tuning: tune, sweep, export, cache, validate.

Each is an ``add_<name>(subparsers)`` that sets ``handler``; ``cli.build_parser`` calls them. Exit codes
are the CLI's: 0 success, 1 the work failed (no candidate ran correctly, a file could not be written, a
validation disagreed), 2 bad arguments (one line on stderr, no traceback).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["add_tune", "add_sweep", "add_export", "add_cache", "add_validate"]


class _Bad(ValueError):
    pass


def _usage(cmd: str, err: Exception) -> int:
    print(f"autopad {cmd}: error: {err}", file=sys.stderr)
    return 2


def _shapes(text: str) -> list[tuple[int, ...]]:
    from .tune import normalize_shape

    return [normalize_shape(s) for s in text.split(",") if s]


# ---- autopad tune ----------------------------------------------------------------------------------------


def add_tune(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tune",
        help="tune one kernel for one shape and dtype",
        description="Enumerate legal layouts, rank them with the model, benchmark the shortlist on the "
        "GPU (without one: rank by the model alone, and say so), print every candidate, optionally export.",
        epilog="example: autopad tune transpose --shape 8192x8192 --dtype float32 --export transpose.h",
    )
    p.add_argument("kernel", help="transpose | matmul | histogram")
    p.add_argument("--shape", required=True, help="e.g. 8192x8192 (histogram: Nxbins; matmul: MxNxK)")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--backend", default="auto", choices=("auto", "cuda", "triton"))
    p.add_argument("--top-k", type=int, default=6, help="candidates to measure besides the baselines")
    p.add_argument("--budget", type=int, help="measure at most this many candidates")
    p.add_argument(
        "--refine", type=int, default=16, help="measure up to this many more in a local search (0: off)"
    )
    p.add_argument("--dist", help="histogram input class: uniform | skewed | single")
    p.add_argument("--device", type=int, default=0, help="CUDA device index")
    p.add_argument("--arch", help="bank geometry for the model (default: the GPU's, else sm_90)")
    p.add_argument("--export", metavar="FILE", help="write the pick as .json, .h or .py")
    p.add_argument("--overwrite", action="store_true", help="let --export replace a different file")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the tuning cache")
    p.add_argument("--retune", action="store_true", help="ignore a cached result (cached timings are reused)")
    p.add_argument("--quiet", action="store_true", help="print only the pick")
    p.set_defaults(handler=_run_tune)


def _run_tune(args: argparse.Namespace) -> int:
    from .tune import tune

    try:
        res = tune(
            args.kernel,
            args.shape,
            args.dtype,
            backend=args.backend,
            top_k=args.top_k,
            budget=args.budget,
            refine=args.refine,
            dist=args.dist,
            device=args.device,
            arch=args.arch,
            cache=not args.no_cache,
            retune=args.retune,
            verbose=False,
        )
    except ValueError as err:
        return _usage("tune", err)
    if args.quiet:
        print(res.best.constants)
    else:
        print(res.table())
        print(f"\npick: {res.best.layout}  {res.best.constants}")
    if args.export:
        try:
            path = res.export(args.export, overwrite=args.overwrite)
        except (FileExistsError, OSError, ValueError) as err:
            print(f"autopad tune: error: {err}", file=sys.stderr)
            return 1
        print(f"wrote {path}")
    if res.mode == "measured" and res.best.measured is None:
        print("autopad tune: no candidate ran correctly", file=sys.stderr)
        return 1
    return 0


# ---- autopad sweep ---------------------------------------------------------------------------------------


def add_sweep(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep",
        help="tune kernels x shapes x dtypes to a CSV and a PNG",
        description="Tune every combination, one worker process per GPU (a dying worker is replaced and "
        "its item retried once), and write sweep.csv and sweep.png.",
        epilog="example: autopad sweep --kernels transpose,histogram --shapes 4096x4096 --dtypes float32",
    )
    p.add_argument("--kernels", default="transpose", help="comma-separated kernel names")
    p.add_argument("--shapes", default="4096x4096", help="comma-separated shapes")
    p.add_argument("--dtypes", default="float32", help="comma-separated element types")
    p.add_argument("--backend", default="auto", choices=("auto", "cuda", "triton"))
    p.add_argument("--dist", help="histogram input class")
    p.add_argument("--gpus", default="0", help="comma-separated device indices, or 'all'")
    p.add_argument("--out", default="autopad-sweep", help="folder for sweep.csv and sweep.png")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(handler=_run_sweep)


def _run_sweep(args: argparse.Namespace) -> int:
    from .sweep import items, plot, run_sweep, write_csv
    from .tune import normalize_dtype

    try:
        kernels = [k for k in args.kernels.split(",") if k]
        from .kernels_registry import kernel_names

        for k in kernels:
            if k not in kernel_names():
                raise _Bad(f"unknown kernel {k!r}; built-in: {', '.join(kernel_names())}")
        dtypes = [normalize_dtype(d) for d in args.dtypes.split(",") if d]
        shapes = _shapes(args.shapes)
        if args.gpus == "all":
            from .bench import gpu_available

            n = 0
            if gpu_available():
                import torch

                n = torch.cuda.device_count()
            devices = list(range(max(n, 1)))
        else:
            devices = [int(g) for g in args.gpus.split(",") if g]
    except ValueError as err:
        return _usage("sweep", err)
    work = items(kernels, shapes, dtypes, args.backend, args.dist)
    rows = run_sweep(work, devices, progress=not args.no_progress)
    out = Path(args.out)
    try:
        csv_path = write_csv(rows, out / "sweep.csv")
        png_path = plot(rows, out / "sweep.png")
    except (OSError, ImportError) as err:
        print(f"autopad sweep: error: {err}", file=sys.stderr)
        return 1
    failed = sum(1 for r in rows if r.get("mode") == "failed")
    print(f"wrote {csv_path} and {png_path}: {len(rows)} items, {failed} failed")
    return 1 if failed else 0


# ---- autopad export --------------------------------------------------------------------------------------


def add_export(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export",
        help="write tuned constants as .json, .h or .py",
        description="From saved results (autopad tune --export x.json) or from the cache. Several results "
        "(one per device) merge into one header with an #if/#elif block per device and a default.",
        epilog="examples: autopad export h200.json h100.json -o transpose.h\n"
        "          autopad export --kernel transpose --shape 8192x8192 --dtype float32 -o t.py",
    )
    p.add_argument("results", nargs="*", help="result .json files")
    p.add_argument("-o", "--output", required=True, help="file to write; the suffix picks the format")
    p.add_argument("--kernel", help="take the result from the cache: kernel name")
    p.add_argument("--shape")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--backend", default="auto", choices=("auto", "cuda", "triton"))
    p.add_argument("--dist", help="histogram input class the result was tuned for (default uniform)")
    p.add_argument("--overwrite", action="store_true", help="replace a different existing file")
    p.set_defaults(handler=_run_export)


def _run_export(args: argparse.Namespace) -> int:
    from .export import export_result, load_result, merge_header

    try:
        if args.kernel:
            if args.results:
                raise _Bad("give result files or --kernel, not both")
            if not args.shape:
                raise _Bad("--kernel needs --shape")
            results = [_from_cache(args.kernel, args.shape, args.dtype, args.backend, args.dist)]
        elif args.results:
            results = [load_result(p) for p in args.results]
        else:
            raise _Bad("nothing to export: give result .json files or --kernel/--shape")
        if len(results) > 1 and not args.output.endswith(".h"):
            raise _Bad("several results merge only into a .h header")
    except (ValueError, OSError) as err:
        return _usage("export", err)
    try:
        if len(results) > 1:
            path = merge_header(results, args.output, overwrite=args.overwrite)
        else:
            path = export_result(results[0], args.output, overwrite=args.overwrite)
    except (FileExistsError, OSError, ValueError) as err:
        print(f"autopad export: error: {err}", file=sys.stderr)
        return 1
    print(f"wrote {path}")
    return 0


def _from_cache(kernel: str, shape: str, dtype: str, backend: str, dist: str | None = None):
    from .bench import device_info
    from .cache import Cache
    from .kernels_registry import builtin_spec
    from .tune import cache_key, normalize_dtype, normalize_shape

    spec = builtin_spec(kernel, backend)
    if getattr(spec, "DISTS", None):
        dist = dist or spec.DISTS[0]
    key = cache_key(spec, normalize_shape(shape), normalize_dtype(dtype), dist, device_info(0))
    found = Cache().nearest(key)
    if found is None or found[0].shape != key.shape:
        raise _Bad(f"no cached result for {kernel} {shape} {dtype} on this machine; run autopad tune first")
    return found[1]


# ---- autopad cache ---------------------------------------------------------------------------------------


def add_cache(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "cache",
        help="list or clear the tuning cache",
        description="The cache lives in $AUTOPAD_CACHE_DIR or ~/.cache/autopad.",
    )
    p.add_argument("action", choices=("list", "clear", "path"))
    p.add_argument("--kernel", help="clear only this kernel's entries")
    p.set_defaults(handler=_run_cache)


def _run_cache(args: argparse.Namespace) -> int:
    from .cache import Cache

    cache = Cache()
    if args.action == "path":
        print(cache.dir)
    elif args.action == "list":
        entries = cache.entries()
        if not entries:
            print(f"no entries in {cache.dir}")
        for e in entries:
            shape = "x".join(map(str, e.get("shape", ()))) if e.get("shape") else "?"
            note = ("  +result" if e.get("has_result") else "") + (
                f"  PROBLEM: {e['problem']}" if e.get("problem") else ""
            )
            kernel, backend, dtype = (e.get(k) or "?" for k in ("kernel", "backend", "dtype"))
            gpu = e.get("gpu") or "no GPU"
            n = e.get("measurements", 0)
            print(f"{kernel:10} {backend:7} {shape:16} {dtype:9} {gpu:14} {n:4} measured{note}")
    else:
        n = cache.clear(args.kernel)
        print(f"removed {n} cache files from {cache.dir}")
    return 0


# ---- autopad validate ------------------------------------------------------------------------------------


def add_validate(sub: argparse._SubParsersAction) -> None:
    from .validate import add_validate_parser

    add_validate_parser(sub).set_defaults(handler=lambda args: int(args.func(args)))
