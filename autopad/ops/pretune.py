"""Tuning ahead of time, and shipping the result: ``pretune``, ``record``, ``cache_pack``, ``cache_unpack``.

Why: a first call that tunes takes 10-30 s on the H200. Serving code must never pay that, so the shapes it
will see are tuned before deployment, on a machine with the same GPU, and the cache travels with the
service:

    with autopad.ops.record() as shapes:          # every autopad.ops call inside, real or fake
        model(example_batch)                        # (under torch.compile or FakeTensorMode too)
    shapes.save("shapes.txt")                       # one "op SHAPE dtype [dist] [weights=..]" per line
    autopad.ops.pretune("shapes.txt")               # or a list: [("transpose", (4097, 8191), "float16")]
    autopad.ops.cache_pack("autopad-h200.tar.gz")   # tuned picks and their compiled cubins
    # on each production machine:
    autopad.ops.cache_unpack("autopad-h200.tar.gz") ; AUTOPAD_TUNE=offline

A pack holds the tuning cache's files (``tune/``: keyed by autopad version, GPU, compute capability,
kernel source, shape, dtype) and the checked cubins (``cubin/``); unpacking merges them through the
cache's own locked writes and re-checks every cubin's hash, and says how many entries are for this
machine's GPU. Only unpack packs you made: a cubin is code this process will run.
"""

from __future__ import annotations

import io
import json
import re
import sys
import tarfile
import tempfile
import time
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .plans import OPS, RECORDERS, Item, plan

__all__ = ["Recorder", "record", "load_items", "pretune", "PretuneRow", "cache_pack", "cache_unpack"]

_TUNE_NAME = re.compile(r"^[a-z0-9_]{1,40}-[0-9a-f]{24}\.json$")  # autopad.cache's file names
_CUBIN_NAME = re.compile(r"^[0-9a-f]{64}\.cubin$")  # autopad.cuda_runtime's
_MAX_MEMBER = 256 << 20


class Recorder:
    """The op calls seen inside a ``record()`` block, as ``Item``s (distinct, in order of first call)."""

    def __init__(self) -> None:
        self.items: list[Item] = []

    def __enter__(self) -> Recorder:
        RECORDERS.append(self.items)
        runner = sys.modules.get("autopad.ops.runner")
        if runner is not None:  # calls already bound skip the operator: bind them again, and see them
            runner.forget_fast()
        return self

    def __exit__(self, *exc: Any) -> None:
        RECORDERS.remove(self.items)

    def __iter__(self) -> Iterator[Item]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def lines(self) -> list[str]:
        return [i.text() for i in self.items]

    def save(self, path: str | Path) -> Path:
        """Write the items, one per line, in the format ``pretune`` and ``load_items`` read."""
        path = Path(path)
        path.write_text("".join(line + "\n" for line in self.lines()), encoding="utf-8")
        return path


def record() -> Recorder:
    """A context manager collecting the (op, shape, dtype, ...) of every ``autopad.ops`` call inside it,
    including calls traced with fake tensors (``torch.compile``, ``FakeTensorMode``), which run nothing."""
    return Recorder()


def _shape(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, str):
        try:
            return tuple(int(p) for p in shape.lower().split("x"))
        except ValueError:
            raise ValueError(f"shape: {shape!r} is not of the form 4096x4096") from None
    return tuple(shape)


def load_items(source: Any) -> list[Item]:
    """Items from a file (text: one per line, '#' comments; or JSON: a list of lists/objects), a string of
    such lines, or an iterable of ``Item``, tuples ``(op, shape, dtype[, dist])``, dicts or lines."""
    one_line = isinstance(source, str) and "\n" not in source
    if isinstance(source, Path) or (one_line and Path(source).is_file()):
        text = Path(source).read_text(encoding="utf-8")
        if text.lstrip().startswith("["):
            return load_items(json.loads(text))
        source = text
    if isinstance(source, str):
        return [Item.parse(line) for raw in source.splitlines() if (line := raw.split("#", 1)[0].strip())]
    out = []
    for entry in source:
        if isinstance(entry, Item):
            out.append(entry)
        elif isinstance(entry, str):
            out.append(Item.parse(entry))
        elif isinstance(entry, dict):
            d = dict(entry)
            d["shape"], d["dtype"] = _shape(d["shape"]), str(d["dtype"]).replace("torch.", "")
            out.append(Item(**d))
        elif isinstance(entry, (tuple, list)) and len(entry) >= 3:
            op, shape, dtype, *rest = entry
            out.append(Item(op, _shape(shape), str(dtype).replace("torch.", ""), *rest))
        else:
            raise ValueError(f"item: {entry!r} is not (op, shape, dtype[, dist]), a dict or a line ({OPS})")
    return out


@dataclass(frozen=True)
class PretuneRow:
    """One pretuned item: what it tuned (kernel, backend, kernel shape and dtype) and how it went."""

    item: Item
    kernel: str
    backend: str
    shape: tuple[int, ...]
    dtype: str
    constants: dict[str, int] | None
    mode: str  # "measured", "model-only", "cached", or "failed"
    seconds: float
    message: str


def pretune(
    items: Any,
    device: int = 0,
    retune: bool = False,
    progress: bool | None = None,
    **tune_kwargs: Any,
) -> list[PretuneRow]:
    """Tune every item now (``load_items`` reads ``items``), so that ``autopad.ops`` finds each shape tuned.

    Each item is mapped to its kernel question exactly as the op maps the call (``plans``), then
    ``autopad.tune`` runs (or answers from the cache). An item that fails is reported in its row and the
    others go on. ``tune_kwargs`` pass through to ``autopad.tune`` (``top_k``, ``refine``, ...: a different
    search finds a different pick, and the op uses whatever is cached for the shape).
    """
    from ..tune import tune

    todo = load_items(items)
    rows = []
    for n, item in enumerate(todo, 1):
        t0 = time.perf_counter()
        try:
            p = plan(item)
            if progress or (progress is None and sys.stderr.isatty()):
                sys.stderr.write(f"autopad pretune [{n}/{len(todo)}] {item.text()}\n")
            res = tune(p.spec.impl, p.shape, p.dtype, device=device, dist=p.dist, retune=retune,
                       progress=progress, **tune_kwargs)  # fmt: skip
        except Exception as exc:  # one bad item must not stop the rest
            rows.append(PretuneRow(item, item.op, "", item.shape, item.dtype, None, "failed",
                                   time.perf_counter() - t0, f"{type(exc).__name__}: {exc}"))  # fmt: skip
            continue
        mode = "cached" if getattr(res, "cache_hit", False) else res.mode
        rows.append(PretuneRow(item, p.spec.NAME, p.spec.BACKEND, p.shape, p.dtype, dict(res.best.constants),
                               mode, time.perf_counter() - t0, res.message))  # fmt: skip
    runner = sys.modules.get("autopad.ops.runner")
    if runner is not None:  # this process may have bound some of these shapes untuned: decide again
        runner.forget()
    return rows


# ---- shipping the cache ---------------------------------------------------------------------------------


def _roots() -> tuple[Path, Path]:
    from .. import cuda_runtime
    from ..cache import Cache

    return Cache().dir, cuda_runtime.cache_dir()


def cache_pack(path: str | Path, kernels: Iterable[str] | None = None, cubins: bool = True) -> dict[str, Any]:
    """Write this machine's tuning cache (and its checked cubins) to ``path``, a .tar.gz.

    ``kernels`` keeps only those kernels' tuning files. Tuning files are read through the cache's own
    checks, as ``cache_unpack`` reads them, and cubins are checked (``read_cubin``) before they go in: a
    corrupt file is left out (``cache_unpack`` would refuse it) and counted. Returns {"path", "tune_files",
    "cubins", "skipped"}.
    """
    from ..cuda_runtime import read_cubin

    tune_dir, cubin_dir = _roots()
    keep = None if kernels is None else {k.lower() for k in kernels}
    n_tune = n_cubin = skipped = 0
    path = Path(path)
    with (
        tarfile.open(path, "w:gz") as tar,
        tempfile.TemporaryDirectory(prefix="autopad-pack-") as tmp,
    ):
        staging = _staging(tmp)
        for f in sorted(tune_dir.glob("*.json")) if tune_dir.is_dir() else []:
            if not _TUNE_NAME.match(f.name) or not f.is_file() or f.is_symlink():
                continue
            if keep is not None and f.name.rsplit("-", 1)[0] not in keep:
                continue
            data = f.read_bytes()
            if _checked_tuning(data, f.name, staging) is None:
                skipped += 1
                continue
            info = tar.gettarinfo(f, arcname=f"tune/{f.name}")
            info.size = len(data)  # the bytes checked, not the file as it may be by now
            tar.addfile(info, io.BytesIO(data))
            n_tune += 1
        for f in sorted(cubin_dir.glob("*.cubin")) if cubins and cubin_dir.is_dir() else []:
            if not _CUBIN_NAME.match(f.name) or read_cubin(f) is None:
                continue
            tar.add(f, arcname=f"cubin/{f.name}", recursive=False)
            n_cubin += 1
    return {"path": str(path), "tune_files": n_tune, "cubins": n_cubin, "skipped": skipped}


def _staging(folder: str) -> Any:
    """An empty cache in ``folder`` that ``_checked_tuning`` reads files through."""
    from ..cache import Cache

    staging = Cache(folder)
    staging.dir.mkdir(parents=True, exist_ok=True)
    return staging


def _checked_tuning(data: bytes, name: str, staging: Any) -> tuple[Any, dict[str, Any]] | None:
    """(key, what the cache reads) of a tuning file's bytes, read through the cache's own checks in the
    ``staging`` cache (types, ranges, the key), or None where they refuse it."""
    from ..cache import CacheKey

    try:
        key = CacheKey.from_dict(json.loads(data.decode("utf-8"))["key"])
        (staging.dir / name).write_bytes(data)
        with warnings.catch_warnings():  # its warning would name the staging copy; the caller counts it
            warnings.simplefilter("ignore")
            stored = staging.load(key)
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None
    finally:
        (staging.dir / name).unlink(missing_ok=True)
    return (key, stored) if stored else None


def _members(tar: tarfile.TarFile) -> Iterator[tuple[str, str, bytes]]:
    """(kind, name, bytes) of the pack's regular files named as autopad names them; nothing else is read
    (no links, devices, absolute paths or '..')."""
    for m in tar.getmembers():
        kind, _, name = m.name.partition("/")
        ok_name = (kind == "tune" and _TUNE_NAME.match(name)) or (kind == "cubin" and _CUBIN_NAME.match(name))
        if not m.isreg() or not ok_name or m.size > _MAX_MEMBER:
            continue
        f = tar.extractfile(m)
        if f is not None:
            yield kind, name, f.read()


def cache_unpack(path: str | Path) -> dict[str, Any]:
    """Merge a ``cache_pack`` file into this machine's caches; returns counts and how many of the tuning
    entries are for this machine's GPU ({"tune_entries", "for_this_gpu", "cubins", "refused"})."""
    from .. import cuda_runtime
    from ..cache import Cache
    from ..device import device_info
    from ..results import Measurement, TuneResult

    here = device_info(0)
    store = Cache()
    counts = {"tune_entries": 0, "for_this_gpu": 0, "cubins": 0, "refused": 0}
    with tarfile.open(path, "r:gz") as tar, tempfile.TemporaryDirectory(prefix="autopad-unpack-") as tmp:
        staging = _staging(tmp)
        for kind, name, data in _members(tar):
            if kind == "cubin":
                payload = cuda_runtime.unwrap_cubin(data)  # header and sha256 checked
                if payload is None:
                    counts["refused"] += 1
                    continue
                cuda_runtime.write_cubin(cuda_runtime.cache_dir() / name, payload)
                counts["cubins"] += 1
                continue
            checked = _checked_tuning(data, name, staging)  # the cache's own checks, before merging
            if checked is None:
                counts["refused"] += 1
                continue
            key, stored = checked
            ms = {k: Measurement.from_dict(m) for k, m in stored.get("measurements", {}).items()}
            if ms:
                store.put_measurements(key, ms)
            res = stored.get("result")
            if res:
                store.put_result(key, TuneResult.from_dict(res["result"]), res["params"])
            counts["tune_entries"] += 1
            counts["for_this_gpu"] += int(bool(here) and (key.gpu, key.cc) == (here["name"], here["cc"]))
    runner = sys.modules.get("autopad.ops.runner")
    if runner is not None:
        runner.forget()
    return counts
