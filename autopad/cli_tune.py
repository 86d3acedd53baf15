"""``autopad tune`` and the ``autopad validate`` wrapper (``autopad export`` is in cli_export.py).

tune: every argument is checked (``request.Request.make``, the export target, the cache folder) before any
ranking, so a bad one is one line and exit 2. The report's first line says which backend runs and why
(``--backend auto`` is a fixed rule of kernel and dtype: ``kernels_registry.auto_backend``). A cache hit is
printed from the candidates the cache stored, never by re-ranking the whole space (``--all`` does that).
A kernel is a built-in name or a user's spec file, ``my_kernel.py`` or ``my_kernel.py:Name``
(``cli_spec.load_kernel`` says how the spec is found).

validate needs an NVIDIA GPU; without one it is a one-line error, never the probe machinery's traceback.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from .cli import Failed, UsageError, add_json, emit_json

__all__ = [
    "EXPORT_FORMATS",
    "add_tune",
    "add_validate",
    "cli_message",
    "check_cache_dir",
    "dtype_hint",
    "export_target",
    "header_name",
    "request_message",
]

EXPORT_FORMATS = ("json", "h", "py")
_FLAGS = {  # tune()'s argument names as the CLI spells them, for error messages
    "kernel": "KERNEL",
    "shape": "--shape",
    "dtype": "--dtype",
    "backend": "--backend",
    "top_k": "--top-k",
    "budget": "--budget",
    "refine": "--refine",
    "dist": "--dist",
    "arch": "--arch",
    "device": "--device",
    "export": "--export",
}


def cli_message(err: Exception) -> str:
    """A library ValueError in the CLI's words: 'top_k: ...' -> '--top-k: ...', backend='x' -> --backend x."""
    text = str(err)
    name, sep, rest = text.partition(": ")
    if sep and name in _FLAGS:
        text = f"{_FLAGS[name]}: {rest}"
    text = text.replace("backend='cuda' or 'triton'", "--backend cuda or --backend triton")
    return re.sub(r"backend='(\w+)'", r"--backend \1", text)


def dtype_hint(kernel: str, dtype: str) -> str:
    """Which dtypes each backend of a built-in kernel takes, for an error about one it does not."""
    from .kernels_registry import BUILTIN, builtin_spec

    parts, takes = [], []
    for name, backend in BUILTIN:
        if name == kernel:
            try:
                dtypes = builtin_spec(name, backend).DTYPES
            except (ValueError, ImportError):
                continue
            parts.append(f"{backend} takes {', '.join(dtypes)}")
            takes += [backend] if dtype in dtypes else []
    if takes:
        return f"--backend {' or '.join(takes)} takes {dtype}"
    return f"no {kernel} backend takes {dtype}: {'; '.join(parts)}" if parts else ""


def request_message(err: ValueError, kernel: Any, dtype: str) -> str:
    """``Request.make``'s error in the CLI's words (``cli_message``); for a built-in kernel's dtype that its
    backend does not take, the library's guess ('try the other backend') becomes which backend takes it,
    if any (``dtype_hint``): tune and sweep say the same."""
    msg = cli_message(err)
    if msg.startswith("--dtype:") and isinstance(kernel, str) and "not a known" not in msg:
        hint = dtype_hint(kernel, req_dtype(dtype))
        if hint:
            msg = msg.split("; try the other backend")[0] + f" ({hint})"
    return msg


def req_dtype(text: str) -> str:
    """``text`` as a dtype name ('fp16' -> 'float16'), or as given when it is not one."""
    from .request import normalize_dtype

    try:
        return normalize_dtype(text)
    except ValueError:
        return text


def check_cache_dir(cmd: str) -> None:
    """The cache folder, or the first existing folder above it, must be a folder: one line, exit 2."""
    from .cache import cache_dir

    root = cache_dir()
    for p in (root / "tune", root, *root.parents):
        if p.exists():
            if not p.is_dir():
                raise UsageError(
                    f"autopad {cmd}: error: cache: {p} is a file, not a folder (set AUTOPAD_CACHE_DIR to a "
                    "folder" + (", or pass --no-cache)" if cmd == "tune" else ")")
                )
            return


# ---- autopad tune ----------------------------------------------------------------------------------------


def add_tune(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tune",
        help="tune one kernel for one shape and dtype",
        description="Enumerate legal layouts, rank them with the model, benchmark the shortlist on the GPU "
        "(without one: rank by the model alone, and say so), print the candidates and the pick, optionally "
        "export it. The first line says which backend runs and why.",
        epilog="examples: autopad tune transpose --shape 8192x8192 --dtype float32 --export transpose.h\n"
        "          autopad tune matmul --shape 4096x4096x4096 --dtype bfloat16 --json\n"
        "          autopad tune my_kernel.py:Transpose --shape 4096x4096",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "kernel", help="transpose | matmul | histogram, or your spec file: my_kernel.py or my_kernel.py:Name"
    )
    p.add_argument("--shape", required=True, help="e.g. 8192x8192 (histogram: Nxbins; matmul: MxNxK)")
    p.add_argument("--dtype", default="float32", help="element type (default float32)")
    p.add_argument(
        "--backend", default="auto", choices=("auto", "cuda", "triton"), help="auto: a fixed rule per kernel"
    )
    p.add_argument("--top-k", type=int, default=6, help="candidates to measure besides the baselines")
    p.add_argument("--budget", type=int, help="measure at most this many candidates")
    p.add_argument(
        "--refine",
        type=int,
        default=16,
        help="measure up to this many more after the first round: twins, then a local search (0: off)",
    )
    p.add_argument("--dist", help="histogram input class: uniform (default) | skewed | single | sorted")
    p.add_argument("--device", type=int, default=0, help="CUDA device index")
    p.add_argument(
        "--arch",
        help="the GPU the model plans for: sm_90 (H200), h100, sm_80, ... (default: this GPU's, else sm_90)",
    )
    p.add_argument("--export", metavar="FILE", help="write the pick as .json, .h or .py ('-': stdout)")
    p.add_argument(
        "--format", choices=EXPORT_FORMATS, help="export format (default: from the suffix; needed for -)"
    )
    p.add_argument("--overwrite", action="store_true", help="let --export replace a different file")
    p.add_argument("--name", help="a .h export's macro prefix, AUTOPAD_<NAME>_ (default: the kernel's)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the tuning cache")
    p.add_argument("--retune", action="store_true", help="ignore a cached result (cached timings are reused)")
    p.add_argument("--limit", type=int, default=12, help="unmeasured candidates to list (default 12)")
    p.add_argument("--all", action="store_true", help="list every legal candidate (re-ranks a cache hit)")
    p.add_argument("--verbose", "-v", action="store_true", help="show the predictor's terms per candidate")
    p.add_argument("--quiet", "-q", action="store_true", help="print only the pick, as NAME=VALUE words")
    p.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    add_json(p)
    p.set_defaults(handler=run_tune)


def export_target(path: str | None, fmt: str | None, cmd: str) -> str | None:
    """The export format ('.json', '.h', '.py') from --format or the suffix; a bad one is exit 2, a
    destination whose folder does not exist exit 1."""
    if path is None:
        if fmt is not None:
            raise UsageError(f"autopad {cmd}: error: --format needs an export destination")
        return None
    # as explain --png and cache pack, before the tune: a folder that is not there is a typo to report, not a
    # tree of folders to make (the writer makes missing folders, /nonexistent/dir/ included); a folder or a
    # symlink where the file should go is refused by the writer, but only once the tune was done
    dest = Path(path)
    if path != "-" and not dest.parent.is_dir():
        raise Failed(f"autopad {cmd}: error: cannot write {path}: no such directory {str(dest.parent)!r}")
    if path != "-" and (dest.is_symlink() or dest.is_dir()):
        why = "it is a symlink (remove it first)" if dest.is_symlink() else "it is a directory"
        raise Failed(f"autopad {cmd}: error: cannot write {path}: {why}")
    if fmt is not None:
        return "." + fmt
    if path == "-":
        raise UsageError(f"autopad {cmd}: error: exporting to stdout (-) needs --format json, h or py")
    suffix = Path(path).suffix.lower()
    if suffix not in tuple("." + f for f in EXPORT_FORMATS):
        raise UsageError(
            f"autopad {cmd}: error: {'--export' if cmd == 'tune' else '-o'}: {path!r} does not end in .json, "
            ".h or .py (or give --format)"
        )
    return suffix


def header_name(name: str | None, fmt: str | None, cmd: str) -> None:
    """--name, checked before any work: a C identifier, for a .h export only (exit 2 otherwise)."""
    if name is None:
        return
    if fmt != ".h":
        raise UsageError(f"autopad {cmd}: error: --name names a header's macros; give a .h destination")
    from .export.escaping import header_prefix

    try:
        header_prefix("kernel", name)
    except ValueError as err:
        raise UsageError(f"autopad {cmd}: error: --{err}") from None


def _stored_candidates(req: Any, res: Any, limit: int) -> list[Any] | None:
    """What a cache hit stored (measured candidates, baselines, the best predicted ones, in ranking order),
    cut to what a report lists, as ``report.shown`` would cut it; None if the cache no longer holds this
    result. Only the listed candidates are converted from their dict form."""
    from .cache import Cache
    from .device import device_info
    from .results import CandidateResult
    from .tune import cache_key

    key = cache_key(req.spec, req.shape, req.dtype, req.dist, device_info(req.device))
    stored = (Cache().load(key).get("result") or {}).get("result") or {}
    try:
        best = {str(k): int(v) for k, v in stored["best"]["constants"].items()}
        if best != res.best.constants:
            return None
        listed, others = [], 0
        for c in stored["candidates"]:
            keep = c.get("measurement") is not None or c.get("roles") or c["constants"] == best
            if keep or others < limit:
                others += not keep
                listed.append(CandidateResult.from_dict(c))
        return listed
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _request(args: argparse.Namespace, kernel: Any) -> Any:
    from .device import device_count, device_info
    from .request import Request

    gpu = device_info(args.device) if args.device >= 0 else {}
    try:
        return Request.make(
            kernel,
            args.shape,
            args.dtype,
            backend=args.backend,
            top_k=args.top_k,
            device=args.device,
            cache=not args.no_cache,
            budget=args.budget,
            dist=args.dist,
            arch=args.arch,
            retune=args.retune,
            refine=args.refine,
            gpu_cc=gpu.get("cc", ""),
            device_count=device_count(),
            gpu_name=gpu.get("name", ""),
        )
    except ValueError as err:
        raise UsageError(f"autopad tune: error: {request_message(err, kernel, args.dtype)}") from None


def run_tune(args: argparse.Namespace) -> int:
    """Handler of ``autopad tune``."""
    from .cli_spec import load_kernel

    if args.json and args.quiet:
        raise UsageError("autopad tune: error: --json and --quiet: choose one")
    for name in ("verbose", "all"):  # --quiet prints the pick alone: what these add would be dropped
        if args.quiet and getattr(args, name):
            raise UsageError(f"autopad tune: error: --{name} and --quiet: choose one")
    if args.json and args.export == "-":
        raise UsageError("autopad tune: error: --json and --export -: both would use stdout; choose one")
    if args.limit < 0:
        raise UsageError(f"autopad tune: error: --limit: must be >= 0, got {args.limit}")
    fmt = export_target(args.export, args.format, "tune")
    header_name(args.name, fmt, "tune")
    if not args.no_cache:
        check_cache_dir("tune")
    kernel, source = load_kernel(args.kernel, "tune")
    req = _request(args, kernel)
    from .cli_progress import activity
    from .report import backend_line, report_dict, report_text, trust_statement
    from .tune import tune

    first = backend_line(req.spec.NAME, args.backend, req.spec.BACKEND, req.dtype, source)
    quiet_out = args.quiet or args.json
    if args.export == "-" and not args.quiet:  # the export owns stdout: the report goes to stderr
        print(first, file=sys.stderr)
    elif not quiet_out:
        print(first, flush=True)
    show = not args.no_progress and sys.stderr.isatty()
    try:
        with activity(f"ranking the {req.spec.NAME} candidates with the model", enabled=show):
            res = tune(
                kernel if source is None else req.spec.impl,
                req.shape,
                req.dtype,
                backend=args.backend,
                top_k=req.top_k,
                device=req.device,
                cache=req.cache,
                budget=req.budget,
                dist=req.dist,
                arch=args.arch,
                retune=req.retune,
                refine=req.refine,
                progress=False if args.no_progress else None,
            )
    except ValueError as err:
        raise UsageError(f"autopad tune: error: {cli_message(err)}") from None
    cands, hidden = _listed(args, req, res)
    trust = trust_statement(res)
    if args.json:
        choice = {"asked": args.backend, "chosen": res.backend, "line": first, "source": source}
        out = report_dict(res, cands, backend=choice, hidden=hidden, trust=trust)
        out["exported"] = _export(res, args, fmt) if args.export else None
        emit_json(out)
    else:
        if args.quiet:
            if args.export != "-":
                print(" ".join(f"{k}={v}" for k, v in sorted(res.best.constants.items())))
        else:
            text = report_text(res, cands, hidden=hidden, verbose=args.verbose, trust=trust)
            print(text, file=sys.stderr if args.export == "-" else sys.stdout)
        if args.export:
            path = _export(res, args, fmt)
            if path != "-" and not args.quiet:
                print(f"wrote {path}")
    if res.mode == "measured" and res.best.measured is None:
        raise Failed("autopad tune: no candidate ran correctly (see the FAILED notes above)")
    return 0


def _listed(args: argparse.Namespace, req: Any, res: Any) -> tuple[list[Any], int | None]:
    """The candidates to print and how many were left out (None: unknown, for a cache hit)."""
    from .report import shown

    if args.all:
        return list(res.candidates), 0
    if res.cache_hit:
        stored = _stored_candidates(req, res, args.limit)
        if stored is not None:
            return stored, None
    return shown(res.candidates, res.best.constants, args.limit)


def _export(res: Any, args: argparse.Namespace, fmt: str | None) -> str:
    """Write the pick to args.export (or stdout for '-'); a failure is one line and exit 1."""
    from . import export

    try:
        if args.export == "-":
            sys.stdout.write(export.render(res, fmt, name=args.name))
            sys.stdout.flush()
            return "-"
        return str(export.export_result(res, args.export, fmt=fmt, overwrite=args.overwrite, name=args.name))
    except FileExistsError as err:
        raise Failed(f"autopad tune: error: {err}") from None
    except (OSError, ValueError) as err:
        raise Failed(f"autopad tune: error: cannot export to {args.export}: {err}") from None


# ---- autopad validate ------------------------------------------------------------------------------------


def add_validate(sub: argparse._SubParsersAction) -> None:
    """validate.py's own parser, with a handler that needs a GPU first (one line and exit 2 without)."""
    from .validate import add_validate_parser

    add_validate_parser(sub).set_defaults(handler=run_validate)


def run_validate(args: argparse.Namespace) -> int:
    """Handler of ``autopad validate``: a GPU-only command."""
    from .device import device_count, device_info, gpu_available, no_bench

    if no_bench() or device_count() == 0:
        why = "AUTOPAD_NO_BENCH is set" if no_bench() else "the CUDA driver shows no GPU on this machine"
        raise UsageError(
            f"autopad validate: error: needs an NVIDIA GPU ({why}); the model itself needs none: "
            "try autopad explain"
        )
    if not gpu_available():
        raise UsageError(
            f"autopad validate: error: a GPU ({device_info(0).get('name', '?')}) is here but torch with CUDA "
            "is not (pip install torch with CUDA)"
        )
    try:
        return int(args.func(args))
    except (ImportError, RuntimeError, OSError) as err:
        raise Failed(f"autopad validate: error: {type(err).__name__}: {err}") from None
