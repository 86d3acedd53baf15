"""``autopad cache`` (list, clear, path, pack, unpack) and ``autopad pretune``.

pretune tunes ahead of time the op calls a service will make (``autopad.ops.pretune``: a file of lines
``op SHAPE dtype [dist] [weights=DTYPE] [backend=B]``, or JSON), so that serving never tunes; ``cache pack``
and ``cache unpack`` carry the result (tuning entries and checked cubins) to the production machines
(``autopad.ops.cache_pack`` / ``cache_unpack``). Every item of a pretune is checked before the first one is
tuned; a cache folder that is a file, a pack that is not one, or a pack destination that exists are one line
and exit 2 (exit 1 for a destination that cannot be written).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .cli import Failed, UsageError, add_json, emit_json

__all__ = ["add_cache", "add_pretune"]


# ---- autopad cache ---------------------------------------------------------------------------------------


def add_cache(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "cache",
        help="list, clear, pack or unpack the tuning cache",
        description="The cache lives in $AUTOPAD_CACHE_DIR, else $XDG_CACHE_HOME/autopad, else "
        "~/.cache/autopad. pack writes its tuning entries (and checked cubins) to a .tar.gz for machines "
        "with the same GPU; unpack merges such a file in (only unpack packs you made: cubins are code).",
        epilog="examples: autopad cache list\n"
        "          autopad cache pack autopad-h200.tar.gz --kernel transpose\n"
        "          autopad cache unpack autopad-h200.tar.gz",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("action", choices=("list", "clear", "path", "pack", "unpack"))
    p.add_argument("file", nargs="?", help="pack: the .tar.gz to write; unpack: the one to read")
    p.add_argument("--kernel", action="append", help="clear/pack: only this kernel's entries (repeatable)")
    p.add_argument("--no-cubins", action="store_true", help="pack: leave the compiled cubins out")
    p.add_argument("--overwrite", action="store_true", help="pack: replace an existing file")
    add_json(p)
    p.set_defaults(handler=run_cache)


def run_cache(args: argparse.Namespace) -> int:
    """Handler of ``autopad cache``."""
    from .cli_tune import check_cache_dir

    needs_file = args.action in ("pack", "unpack")
    if needs_file and not args.file:
        raise UsageError(f"autopad cache: error: {args.action} needs a FILE (.tar.gz)")
    if not needs_file and args.file:
        raise UsageError(f"autopad cache: error: {args.action} takes no FILE (got {args.file!r})")
    check_cache_dir("cache")
    if args.action == "pack":
        return _pack(args)
    if args.action == "unpack":
        return _unpack(args)
    from .cache import Cache

    cache = Cache()
    if args.action == "path":
        emit_json({"path": str(cache.dir)}) if args.json else print(cache.dir)
    elif args.action == "list":
        entries = cache.entries()
        if args.json:
            emit_json(entries)
            return 0
        if not entries:
            print(f"no entries in {cache.dir}")
        for e in entries:
            print(_entry_line(e))
    else:
        n = sum(cache.clear(k) for k in args.kernel) if args.kernel else cache.clear(None)
        emit_json({"removed": n, "dir": str(cache.dir)}) if args.json else print(
            f"removed {n} cache files from {cache.dir}"
        )
    return 0


def _entry_line(e: dict[str, Any]) -> str:
    shape = "x".join(map(str, e.get("shape") or ())) or "?"
    note = ("  +result" if e.get("has_result") else "") + (
        f"  PROBLEM: {e['problem']}" if e.get("problem") else ""
    )
    kernel, backend, dtype = (str(e.get(k) or "?") for k in ("kernel", "backend", "dtype"))
    gpu = str(e.get("gpu") or "no GPU")
    n = e.get("measurements", 0)
    from .report import safe_text

    return safe_text(f"{kernel:10} {backend:7} {shape:16} {dtype:9} {gpu:14} {n:4} measured{note}")


def _pack(args: argparse.Namespace) -> int:
    import tempfile

    from .files import UnsafePathError, write_file
    from .ops import cache_pack

    out = Path(args.file)
    if not args.file.endswith((".tar.gz", ".tgz")):
        raise UsageError(f"autopad cache: error: FILE: {args.file!r} does not end in .tar.gz or .tgz")
    if out.is_symlink() or (out.exists() and not args.overwrite):
        why = "is a symlink" if out.is_symlink() else "exists (--overwrite replaces it)"
        raise UsageError(f"autopad cache: error: FILE: {args.file} {why}")
    if not out.parent.resolve().is_dir():
        raise Failed(f"autopad cache: error: cannot write {args.file}: no such directory")
    with tempfile.TemporaryDirectory(prefix="autopad-pack-") as tmp:
        counts = cache_pack(Path(tmp) / "pack.tar.gz", kernels=args.kernel, cubins=not args.no_cubins)
        try:  # written atomically, never through a symlink
            write_file(out, (Path(tmp) / "pack.tar.gz").read_bytes(), overwrite=True)
        except (UnsafePathError, OSError) as err:
            raise Failed(f"autopad cache: error: cannot write {args.file}: {err}") from None
    counts["path"] = str(out)
    if args.json:
        emit_json(counts)
    else:
        left = f"; {counts['skipped']} unreadable tuning files left out" if counts.get("skipped") else ""
        print(f"wrote {out}: {counts['tune_files']} tuning files, {counts['cubins']} cubins{left}")
    return 0


def _unpack(args: argparse.Namespace) -> int:
    import tarfile

    from .ops import cache_unpack

    src = Path(args.file)
    if not src.is_file():
        raise UsageError(f"autopad cache: error: FILE: no such file: {args.file}")
    if not tarfile.is_tarfile(src):
        raise UsageError(
            f"autopad cache: error: FILE: {args.file} is not a pack (autopad cache pack writes one)"
        )
    try:
        counts = cache_unpack(src)
    except (tarfile.TarError, EOFError, OSError) as err:
        raise UsageError(f"autopad cache: error: FILE: {args.file} cannot be read as a pack: {err}") from None
    if args.json:
        emit_json(counts)
    else:
        print(
            f"merged {counts['tune_entries']} tuning entries ({counts['for_this_gpu']} for this GPU) "
            f"and {counts['cubins']} cubins; refused {counts['refused']}"
        )
    return 0


# ---- autopad pretune -------------------------------------------------------------------------------------


def add_pretune(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "pretune",
        help="tune ahead of time the op calls a service will make (autopad.ops)",
        description="Tune every item now, so that autopad.ops finds each shape tuned. Items come from a "
        "file (one 'op SHAPE dtype [dist] [weights=DTYPE] [backend=B]' per line, '#' comments, or a JSON "
        "list; autopad.ops.record() writes one) or from --item. Every item is checked before the first is "
        "tuned; an item that fails later is reported and the others go on. Run it on a machine with the "
        "GPU that will serve: without a GPU the picks are the model's and keyed to no GPU.",
        epilog="examples: autopad pretune shapes.txt\n"
        "          autopad pretune --item 'transpose 4097x8191 float16' --item 'matmul 4096x4096x4096 bf16'",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("file", nargs="?", help="a file of items (text lines or JSON)")
    p.add_argument("--item", action="append", default=[], help="one item, e.g. 'transpose 4096x4096 float32'")
    p.add_argument("--device", type=int, default=0, help="CUDA device index")
    p.add_argument("--retune", action="store_true", help="ignore cached results")
    p.add_argument("--top-k", type=int, default=6)
    p.add_argument("--refine", type=int, default=16)
    p.add_argument("--no-progress", action="store_true")
    add_json(p)
    p.set_defaults(handler=run_pretune)


def _items(args: argparse.Namespace) -> list[Any]:
    from .ops import load_items
    from .ops.plans import plan
    from .request import Request

    if not args.file and not args.item:
        raise UsageError("autopad pretune: error: nothing to tune: give a FILE or --item")
    try:
        items = []
        if args.file:
            if not Path(args.file).is_file():
                raise ValueError(f"FILE: no such file: {args.file}")
            try:
                items += load_items(Path(args.file))
            except UnicodeDecodeError as err:  # the codec's words alone named neither the file nor the form
                raise ValueError(
                    f"FILE: {args.file} is not text ({err.reason} at byte {err.start}); give a file of lines "
                    "'op SHAPE dtype [dist]' or a JSON list (autopad.ops.record() writes one)"
                ) from None
        for text in args.item:
            try:
                items += load_items([text])
            except ValueError as err:
                raise ValueError(f"--item {text!r}: {err}") from None
        if not items:
            raise ValueError(f"FILE: {args.file} lists no items")
        for item in items:
            try:
                p = plan(item)
                # the checks tune() makes of the question the item becomes (a shape of 0, a dimension too
                # many), so that a bad item is found here and not as a failed row once the work has begun
                Request.make(p.spec, p.shape, p.dtype, dist=p.dist, top_k=args.top_k, refine=args.refine)
            except ValueError as err:
                raise ValueError(f"item {item.text()!r}: {err}") from None
    except (ValueError, TypeError, KeyError, UnicodeDecodeError) as err:
        raise UsageError(f"autopad pretune: error: {err}") from None
    return items


def run_pretune(args: argparse.Namespace) -> int:
    """Handler of ``autopad pretune``."""
    from .cli_progress import Bar
    from .cli_tune import check_cache_dir, cli_message
    from .device import device_info
    from .ops import pretune
    from .request import check_int

    for name, low in (("top_k", 1), ("refine", 0)):  # tune()'s check, so its message says what is allowed
        try:
            check_int(name, getattr(args, name), low)
        except ValueError as err:
            raise UsageError(f"autopad pretune: error: {cli_message(err)}") from None
    check_cache_dir("pretune")
    items = _items(args)
    if not device_info(args.device):
        print("autopad pretune: note: no GPU here: the picks are the model's, for machines without a GPU",
              file=sys.stderr)  # fmt: skip
    rows = []
    with Bar(len(items), "autopad pretune", enabled=False if args.no_progress else None) as bar:
        for n, item in enumerate(items):
            bar.update(n, len(items), item.text())
            rows += pretune([item], device=args.device, retune=args.retune, progress=False,
                            top_k=args.top_k, refine=args.refine)  # fmt: skip
        bar.update(len(items), len(items), "")
    failed = [r for r in rows if r.mode == "failed"]
    if args.json:
        emit_json([_row_dict(r) for r in rows])
    else:
        for r in rows:
            pick = " ".join(f"{k}={v}" for k, v in sorted((r.constants or {}).items()))
            what = f"{r.kernel} [{r.backend}]" if r.backend else r.kernel
            print(f"{r.item.text():40} {what:20} {r.mode:10} {r.seconds:7.2f} s  {pick or r.message}")
        print(f"pretuned {len(rows) - len(failed)} of {len(rows)} items")
    if failed:
        raise Failed(f"autopad pretune: {len(failed)} of {len(rows)} items failed (see their rows)")
    return 0


def _row_dict(r: Any) -> dict[str, Any]:
    return {
        "item": r.item.text(),
        "kernel": r.kernel,
        "backend": r.backend,
        "shape": list(r.shape),
        "dtype": r.dtype,
        "constants": r.constants,
        "mode": r.mode,
        "seconds": r.seconds,
        "message": r.message,
    }
