"""``autopad sweep``: tune kernels x shapes x dtypes, one worker per GPU, to sweep.csv and sweep.png.

Every combination is checked before the first is tuned, with the same checks ``autopad tune`` makes
(``request.Request.make``). A combination a kernel does not take (histogram in float32: it counts integers;
matmul given a 2-D shape) is not an error of the whole sweep: it is skipped, listed with its reason in the
output and as a ``skipped`` row of the CSV, and the others run. The sweep exits 2 only when no
combination can run, 1 when a tuned item failed, else 0. ``--dist`` goes to the kernels that take an input
class (histogram) and is left out for the others. ``--gpus`` is ``all`` or distinct device indices that
the driver shows (any index is refused on a machine without a GPU except 0).

``--ray [ADDRESS]`` hands each item to Ray instead (``sweep_ray.run_sweep_ray``: one task per item and GPU,
on a running cluster or one started on this host); Ray then chooses the GPUs, so ``--gpus`` is refused
beside it. The CSV is the same, with the node, GPU type and attempts of each row; one result JSON per item
and GPU type goes under ``OUT/results`` for ``autopad export``. Ctrl-C cancels the tasks in flight and
writes what finished.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .cli import Failed, UsageError, add_json, emit_json

__all__ = ["add_sweep", "plan_items", "parse_gpus"]


def add_sweep(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep",
        help="tune kernels x shapes x dtypes to a CSV and a PNG",
        description="Tune every combination, one worker process per GPU (a dying worker is replaced and "
        "its item retried once), and write sweep.csv and sweep.png. Combinations a kernel does not take "
        "are skipped and listed with the reason.",
        epilog="example: autopad sweep --kernels transpose,histogram --shapes 4096x4096 --dtypes int32",
    )
    p.add_argument("--kernels", default="transpose", help="comma-separated kernel names")
    p.add_argument("--shapes", default="4096x4096", help="comma-separated shapes")
    p.add_argument("--dtypes", default="float32", help="comma-separated element types")
    p.add_argument("--backend", default="auto", choices=("auto", "cuda", "triton"))
    p.add_argument("--dist", help="histogram input class (uniform, skewed, single, sorted)")
    p.add_argument("--gpus", default="0", help="comma-separated device indices, or 'all'")
    p.add_argument("--out", default="autopad-sweep", help="folder for sweep.csv and sweep.png")
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the sweep.csv / sweep.png of an earlier sweep in --out",
    )
    p.add_argument("--no-png", action="store_true", help="write only the CSV")
    p.add_argument("--no-progress", action="store_true")
    ray = p.add_argument_group("Ray (pip install 'autopad[ray]')")
    ray.add_argument(
        "--ray",
        nargs="?",
        const="",
        metavar="ADDRESS",
        help="run each item as a Ray task asking for one GPU: on ADDRESS ('auto', host:6379, "
        "ray://host:10001), else $RAY_ADDRESS, else a cluster started on this host",
    )
    ray.add_argument(
        "--gpu-types",
        help="with --ray: run each item once per Ray accelerator type (comma-separated, e.g. H100,A100, "
        "or 'all' the cluster shows)",
    )
    ray.add_argument(
        "--max-attempts",
        type=int,
        default=2,
        help="with --ray: attempts per item when its worker or node dies (default 2)",
    )
    add_json(p)
    p.set_defaults(handler=run_sweep)


def parse_gpus(text: str) -> list[int]:
    """'all' or '0,1' -> device indices; a ValueError names --gpus and what is wrong."""
    from .device import device_count

    n = device_count()
    if text == "all":
        return list(range(max(n, 1)))
    out = []
    for part in text.split(","):
        if not part.strip().isdigit():
            raise ValueError(f"--gpus: {part!r} is not a device index; give e.g. 0,1 or all")
        out.append(int(part))
    if not out:
        raise ValueError("--gpus: no device given")
    if len(set(out)) != len(out):
        raise ValueError(f"--gpus: {text!r} names a device twice")
    limit = max(n, 1)
    bad = [g for g in out if g >= limit]
    if bad:
        have = f"{n} GPU(s): 0..{n - 1}" if n else "no GPU (model-only sweeps use 0)"
        raise ValueError(f"--gpus: {bad[0]} is not a device here; the driver shows {have}")
    return out


def plan_items(
    kernels: list[str], shapes: list[Any], dtypes: list[str], backend: str, dist: str | None
) -> tuple[list[Any], list[dict[str, Any]]]:
    """(items to tune, rows of the skipped combinations with their reasons), checked as ``tune`` would."""
    from .cli_tune import request_message
    from .request import Request, normalize_dtype
    from .sweep import SweepItem

    todo, skipped = [], []
    for k in kernels:
        for s in shapes:
            for d in dtypes:
                try:
                    spec = Request.make(k, s, d, backend).spec  # no dist yet: its own check below
                    item_dist = dist if getattr(spec, "DISTS", None) else None
                    req = Request.make(k, s, d, backend, dist=item_dist)
                except ValueError as err:
                    skipped.append(
                        {
                            "kernel": k,
                            "backend": backend,
                            "shape": "x".join(map(str, s)),
                            "dtype": normalize_dtype(d),
                            "dist": "",
                            "mode": "skipped",
                            "error": request_message(err, k, d),  # which backend takes d, as tune says
                        }
                    )
                    continue
                todo.append(SweepItem(k, req.shape, req.dtype, backend, req.dist if dist else None))
    return todo, skipped


def run_sweep(args: argparse.Namespace) -> int:
    """Handler of ``autopad sweep``."""
    from .cli_tune import check_cache_dir, cli_message
    from .kernels_registry import kernel_names
    from .request import normalize_dtype, normalize_shape

    try:
        kernels = [k.strip() for k in args.kernels.split(",") if k.strip()]
        for k in kernels:
            if k not in kernel_names():
                raise ValueError(f"--kernels: unknown kernel {k!r}; built-in: {', '.join(kernel_names())}")
        dtypes = [normalize_dtype(d.strip()) for d in args.dtypes.split(",") if d.strip()]
        shapes = [normalize_shape(s.strip()) for s in args.shapes.split(",") if s.strip()]
        for name, vals in (("--kernels", kernels), ("--shapes", shapes), ("--dtypes", dtypes)):
            if not vals:
                raise ValueError(f"{name}: nothing given")
        devices = parse_gpus(args.gpus) if args.ray is None else []
        _check_ray_args(args)
    except ValueError as err:
        raise UsageError(f"autopad sweep: error: {cli_message(err)}") from None
    check_cache_dir("sweep")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"autopad sweep: error: --out: {out} is a file, not a folder")
    # an earlier sweep's table is the user's: said before the work, not found replaced after it
    earlier = [p for p in (out / "sweep.csv", out / "sweep.png") if p.exists() or p.is_symlink()]
    if earlier and not args.overwrite:
        raise Failed(
            f"autopad sweep: error: {earlier[0]} holds an earlier sweep; give another --out, or --overwrite "
            "to replace it"
        )
    todo, skipped = plan_items(kernels, shapes, dtypes, args.backend, args.dist)
    if not todo:
        why = "; ".join(f"{r['kernel']} {r['shape']} {r['dtype']}: {r['error']}" for r in skipped[:3])
        raise UsageError(f"autopad sweep: error: no combination can be tuned ({why})")
    for r in skipped:
        print(
            f"autopad sweep: skipping {r['kernel']} {r['shape']} {r['dtype']}: {r['error']}", file=sys.stderr
        )
    from . import sweep

    progress = not args.no_progress and sys.stderr.isatty()
    interrupted = None
    if args.ray is None:
        rows = sweep.run_sweep(todo, devices, progress=progress)
    else:
        rows, interrupted = _ray_rows(args, todo, out, progress)
    rows = _in_order(rows + skipped, kernels, shapes, dtypes)
    try:
        extra = ("node", "gpu_type") if args.ray is not None else ()  # what a Ray sweep's rows add
        csv_path = sweep.write_csv(rows, out / "sweep.csv", extra=extra)
    except OSError as err:
        raise Failed(f"autopad sweep: error: cannot write {out / 'sweep.csv'}: {err}") from None
    png_path = None
    if not args.no_png:
        try:
            png_path = sweep.plot([r for r in rows if r.get("mode") != "skipped"], out / "sweep.png")
        except ImportError:
            print("autopad sweep: note: no matplotlib, so no sweep.png (pip install 'autopad[plot]')",
                  file=sys.stderr)  # fmt: skip
        except OSError as err:
            raise Failed(f"autopad sweep: error: cannot write {out / 'sweep.png'}: {err}") from None
    if interrupted is not None:  # the finished rows are written; main() says "interrupted", exit 130
        print(f"autopad sweep: {interrupted}; the finished rows are in {csv_path}", file=sys.stderr)
        raise KeyboardInterrupt
    failed = sum(1 for r in rows if r.get("mode") == "failed")
    if args.json:
        emit_json({"csv": str(csv_path), "png": png_path and str(png_path), "rows": rows})
    else:
        for r in rows:
            print(_row_line(r))
        wrote = f"{csv_path}" + (f" and {png_path}" if png_path else "")
        print(f"wrote {wrote}: {len(rows)} items, {failed} failed, {len(skipped)} skipped")
    if failed:
        raise Failed(f"autopad sweep: {failed} of {len(todo)} items failed (see the error column)")
    return 0


def _check_ray_args(args: argparse.Namespace) -> None:
    """--gpus, --gpu-types and --max-attempts against --ray (ValueErrors naming the option)."""
    if args.ray is None:
        if args.gpu_types is not None or args.max_attempts != 2:
            opt = "--gpu-types" if args.gpu_types is not None else "--max-attempts"
            raise ValueError(f"{opt}: only with --ray (the local pool retries a dead worker's item once)")
        return
    if args.gpus != "0":
        raise ValueError("--gpus: not with --ray (Ray chooses the GPUs; --gpu-types picks their kind)")
    if args.max_attempts < 1:
        raise ValueError(f"--max-attempts: need at least 1, got {args.max_attempts}")
    if args.gpu_types is not None and not [t for t in args.gpu_types.split(",") if t.strip()]:
        raise ValueError("--gpu-types: nothing given; name accelerator types (H100,A100) or 'all'")


def _ray_rows(args: argparse.Namespace, todo: list[Any], out: Path, progress: bool) -> tuple[list, Any]:
    """Rows of a Ray sweep and, after Ctrl-C, the interruption (the finished rows are kept)."""
    import time

    from . import sweep_ray

    types = None
    if args.gpu_types is not None:
        types = [t.strip() for t in args.gpu_types.split(",") if t.strip()]
        types = "all" if types == ["all"] else types
    t0 = time.perf_counter()
    try:
        rows = sweep_ray.run_sweep_ray(
            todo,
            address=args.ray or None,
            gpu_types=types,
            max_attempts=args.max_attempts,
            results_dir=out / "results",
            progress=progress,
        )
    except ImportError as err:
        raise UsageError(f"autopad sweep: error: --ray: {err}") from None
    except sweep_ray.SweepInterrupted as stop:
        return stop.rows, stop
    except ValueError as err:  # e.g. --gpu-types the cluster does not have
        raise UsageError(f"autopad sweep: error: --ray: {err}") from None
    print(sweep_ray.summary(rows, time.perf_counter() - t0), file=sys.stderr)
    return rows, None


def _in_order(rows: list[dict[str, Any]], kernels: list[str], shapes: list[Any], dtypes: list[str]) -> list:
    """Rows in the order of the combinations asked for (kernel, then shape, then dtype)."""
    order = {
        (k, "x".join(map(str, s)), d): i
        for i, (k, s, d) in enumerate((k, s, d) for k in kernels for s in shapes for d in dtypes)
    }
    return sorted(rows, key=lambda r: order.get((r["kernel"], r["shape"], r["dtype"]), len(order)))


def _row_line(r: dict[str, Any]) -> str:
    from .report import safe_text

    return safe_text(_row_text(r))


def _row_text(r: dict[str, Any]) -> str:
    what = f"{r['kernel']:10} {r['shape']:16} {r['dtype']:9}"
    if r.get("mode") == "skipped":
        return f"{what} skipped: {r['error']}"
    if r.get("mode") == "failed":
        return f"{what} FAILED: {r.get('error', '')}"
    ms = r.get("best_ms")
    t = f"{float(ms):.4f} ms" if ms not in (None, "") else f"predicted {float(r['predicted_us']):.1f} us"
    return f"{what} {r.get('backend', ''):7} {r.get('mode', ''):10} {t:20} {r.get('best', '')}"
