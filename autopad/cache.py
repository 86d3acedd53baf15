"""The on-disk tuning cache: one JSON file per tuning context, safe to share between processes.

Why: benchmarking candidates takes seconds; a repeated ``tune`` should take milliseconds, and adding one
candidate to a kernel's space should measure only that candidate. So the cache keeps one entry per measured
candidate (``measurements``) and, optionally, the finished ``TuneResult`` together with the search
parameters that produced it (``result``), under a ``CacheKey`` of everything that can change the answer:
autopad version, GPU name and compute capability, backend, kernel, kernel source hash, shape, dtype and
(for the histogram) the input distribution's class.

Where: ``cache_dir() / "tune"`` (``$AUTOPAD_CACHE_DIR``, else ``$XDG_CACHE_HOME/autopad``, else
``~/.cache/autopad``). Other autopad modules keep their own sub-folders beside it; this module reads,
writes and deletes only its own files there: ``<kernel>-<24 hex>.json``, their ``.lock`` sidecars and its
``.<name>.*.tmp`` temporaries.

Reliability: every write is read-merge-write under an exclusive ``fcntl.flock`` on the file's ``.lock``
sidecar, to a temporary file in the same folder that is fsynced and then ``os.replace``d over the old
one, so readers see the old file or the new one, never half of one, and two processes tuning at once lose
nothing. A truncated, corrupt, foreign or other-version file is ignored with a warning (naming the file
and the problem) and replaced by the next write; it never raises.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import time
import warnings
from collections.abc import Iterator
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from .files import write_atomic
from .results import Measurement, TuneResult

try:  # POSIX; elsewhere writes stay atomic but concurrent writers are not serialised
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

__all__ = ["FORMAT", "FORMAT_VERSION", "CacheKey", "Cache", "bucket", "cache_dir", "write_atomic"]

FORMAT = "autopad-tune-cache"
FORMAT_VERSION = 1
SUBDIR = "tune"
_NAME = re.compile(r"^[a-z0-9_]{1,40}-[0-9a-f]{24}\.json$")
_TMP = re.compile(r"^\.[a-z0-9_]{1,40}-[0-9a-f]{24}\.json\..*\.tmp$")
_STALE_TMP_S = 600.0
_MEMO: dict[str, tuple[tuple[int, ...], Any, TuneResult]] = {}  # path -> (file signature, params, result)
_MEMO_SIZE = 32


def cache_dir() -> Path:
    """The cache root: ``$AUTOPAD_CACHE_DIR``, else ``$XDG_CACHE_HOME/autopad``, else ``~/.cache/autopad``."""
    env = os.environ.get("AUTOPAD_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "autopad"


def bucket(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The lookup bucket of a shape: each dim above 16 rounded up to the next power of two, small dims exact.

    Small dims (<= 16) are kept exact because they usually are structural (a batch of 3, 4 channels),
    and a kernel's legal tiles change with them; large dims only move the wave count, smoothly.
    """
    out = []
    for d in shape:
        d = int(d)
        if d <= 0:
            raise ValueError(f"shape: dims must be positive, got {tuple(shape)!r}")
        out.append(d if d <= 16 else 1 << (d - 1).bit_length())
    return tuple(out)


def _slug(text: str) -> str:
    return (re.sub(r"[^a-z0-9_]+", "_", text.lower()).strip("_") or "kernel")[:40]


@dataclass(frozen=True)
class CacheKey:
    """Everything that can change a tuning answer. ``gpu``/``cc`` are "" without a GPU."""

    autopad_version: str
    gpu: str
    cc: str
    backend: str
    kernel: str
    source_hash: str
    shape: tuple[int, ...]
    dtype: str
    dist: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name != "shape" and not (isinstance(v, str) or (f.name == "dist" and v is None)):
                raise TypeError(f"CacheKey.{f.name}: expected a string, got {v!r}")

    @classmethod
    def make(
        cls,
        kernel: str,
        shape: tuple[int, ...],
        dtype: str,
        backend: str,
        gpu: str = "",
        cc: str = "",
        source_hash: str = "",
        dist: str | None = None,
        version: str | None = None,
    ) -> CacheKey:
        """A key with this autopad's version filled in."""
        if version is None:
            from . import __version__ as version
        return cls(version, gpu, str(cc), backend, kernel, source_hash, tuple(shape), str(dtype), dist)

    def context(self) -> tuple[tuple[str, Any], ...]:
        """Every field but the shape: entries of one context differ only in shape (nearest-bucket lookup)."""
        return tuple((f.name, getattr(self, f.name)) for f in fields(self) if f.name != "shape")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["shape"] = list(self.shape)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CacheKey:
        return cls(**{f.name: d[f.name] for f in fields(cls)})

    @property
    def digest(self) -> str:
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:24]

    @property
    def filename(self) -> str:
        """Stable file name: the kernel (for people reading the folder) and a hash of the whole key."""
        return f"{_slug(self.kernel)}-{self.digest}.json"


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    """Exclusive flock on ``lock_path``; retried if the lock file was replaced (clear()) while we waited."""
    if fcntl is None:  # pragma: no cover
        yield
        return
    while True:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            held = os.fstat(fd)
            try:
                now = os.stat(lock_path)
            except FileNotFoundError:
                now = None
        except BaseException:
            os.close(fd)
            raise
        if now is not None and (now.st_ino, now.st_dev) == (held.st_ino, held.st_dev):
            break
        os.close(fd)
    try:
        yield
    finally:
        os.close(fd)  # releases the lock


def _warn(path: Path, problem: str, stacklevel: int) -> None:
    msg = f"autopad cache: ignoring {path}: {problem}; the next write replaces it"
    warnings.warn(msg, stacklevel=stacklevel + 1)


def _norm(params: dict[str, Any]) -> Any:
    """Search parameters as JSON sees them (tuples become lists), for storing and comparing."""
    return json.loads(json.dumps(params, sort_keys=True, default=str))


_KEY_FIELD = re.compile(rb'"key":(\{[^{}]*\})')


def _peek_key(path: Path) -> CacheKey | None:
    """The key of a cache file from its first few KB (files are written with sorted keys, so the small
    ``key`` object comes before the bulky measurements and result); None when it cannot be found."""
    try:
        with open(path, "rb") as f:
            m = _KEY_FIELD.search(f.read(4096))
        return CacheKey.from_dict(json.loads(m.group(1))) if m else None
    except (OSError, ValueError, TypeError, KeyError):
        return None


class Cache:
    """The tuning cache under ``root / "tune"`` (``root`` defaults to ``cache_dir()``)."""

    def __init__(self, root: str | Path | None = None) -> None:
        self.root = Path(root) if root is not None else cache_dir()
        self.dir = self.root / SUBDIR

    def path(self, key: CacheKey) -> Path:
        return self.dir / key.filename

    # ---- reading -------------------------------------------------------------------------------------------

    def _read(self, path: Path, key: CacheKey | None = None) -> tuple[dict[str, Any], str | None]:
        """(data, None) for a good file, ({}, None) for a missing one, ({}, problem) for a bad one."""
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return {}, None
        except OSError as e:
            return {}, f"unreadable ({e.strerror or e})"
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            what = "truncated" if raw.strip() and not raw.rstrip().endswith(b"}") else "corrupt"
            return {}, f"{what} JSON ({e})"
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            return {}, "not an autopad tune cache file"
        if data.get("format_version") != FORMAT_VERSION:
            return {}, f"format version {data.get('format_version')!r}, this autopad reads {FORMAT_VERSION}"
        try:
            stored = CacheKey.from_dict(data["key"])
        except (KeyError, TypeError, ValueError) as e:
            return {}, f"malformed key ({e!r})"
        if data.get("autopad_version") != stored.autopad_version:
            return {}, f"header autopad {data.get('autopad_version')!r} != key's {stored.autopad_version!r}"
        if key is not None and stored != key:
            if stored.autopad_version != key.autopad_version:
                return {}, f"written by autopad {stored.autopad_version}, this is {key.autopad_version}"
            return {}, "holds another key's entries"
        if stored.filename != path.name:
            return {}, f"holds the entries of {stored.filename}, not of its own name"
        ms = data.get("measurements", {})
        if not isinstance(ms, dict):
            return {}, "malformed measurements"
        try:
            for k, m in ms.items():
                if Measurement.from_dict(m).key != k:
                    return {}, f"measurement {k!r} is stored under another key"
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            return {}, f"malformed measurement ({e!r})"
        res = data.get("result")
        if res is not None and not (isinstance(res, dict) and isinstance(res.get("result"), dict)):
            return {}, "malformed result"
        return data, None

    def load(self, key: CacheKey) -> dict[str, Any]:
        """The file's contents for ``key``; {} when absent, or (with a warning) when it cannot be used."""
        path = self.path(key)
        data, problem = self._read(path, key)
        if problem:
            _warn(path, problem, stacklevel=2)
        return data

    def measurements(self, key: CacheKey) -> dict[str, Measurement]:
        """Every measured candidate of ``key``, by candidate key."""
        return {k: Measurement.from_dict(m) for k, m in self.load(key).get("measurements", {}).items()}

    def get_result(self, key: CacheKey, params: dict[str, Any]) -> TuneResult | None:
        """The stored result if it was produced with the same search ``params``; else None.

        A result read once is kept in memory for as long as its file is unchanged (same inode, size and
        mtime; every write replaces the inode), so a repeated lookup in one process costs one ``stat``.
        The returned object is shared between such lookups: treat it as read-only.
        """
        path, want = self.path(key), _norm(params)
        try:
            st = path.stat()
            sig = (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns)
        except OSError:
            sig = None
        memo = _MEMO.get(str(path))
        if sig is not None and memo is not None and memo[0] == sig and memo[1] == want:
            return memo[2]
        res = self.load(key).get("result")
        if not res or res["params"] != want:
            return None
        try:
            out = TuneResult.from_dict(res["result"])
        except (KeyError, TypeError, ValueError) as e:
            _warn(path, f"stored result unreadable ({e!r})", stacklevel=2)
            return None
        if sig is not None:
            _MEMO.pop(str(path), None)
            _MEMO[str(path)] = (sig, want, out)
            while len(_MEMO) > _MEMO_SIZE:
                _MEMO.pop(next(iter(_MEMO)))
        return out

    def _files(self) -> list[Path]:
        try:
            return sorted(p for p in self.dir.iterdir() if _NAME.match(p.name) and p.is_file())
        except FileNotFoundError:
            return []

    def nearest(self, key: CacheKey) -> tuple[CacheKey, TuneResult] | None:
        """The tuned entry of ``key``'s context whose shape is nearest in log space, or None.

        Same context means same version, GPU, cc, backend, kernel, source, dtype and dist; only the shape
        may differ, and only shapes of the same rank are considered. Entries in ``key``'s own bucket come
        first, then the smallest sum of squared log2 ratios; remaining ties go to the smaller shape.
        Unusable files are skipped silently (``load`` and ``entries`` report them).
        """
        want, ctx = bucket(key.shape), key.context()
        best: tuple[tuple, CacheKey, dict] | None = None
        for path in self._files():
            if not path.name.startswith(_slug(key.kernel) + "-"):
                continue
            other = _peek_key(path)
            if other is None or other.context() != ctx or len(other.shape) != len(key.shape):
                continue
            dist = sum((math.log2(a / b)) ** 2 for a, b in zip(key.shape, other.shape, strict=True))
            rank = (bucket(other.shape) != want, dist, other.shape)
            if best is None or rank < best[0]:
                data, problem = self._read(path, other)  # only candidates are read in full
                if not problem and data.get("result"):
                    best = (rank, other, data["result"]["result"])
        if best is None:
            return None
        try:
            return best[1], TuneResult.from_dict(best[2])
        except (KeyError, TypeError, ValueError):
            return None

    def entries(self) -> list[dict[str, Any]]:
        """One row per cache file (for ``autopad cache list``): key fields, counts, path, size, problem."""
        rows = []
        for path in self._files():
            data, problem = self._read(path)
            key = data.get("key") or {f.name: None for f in fields(CacheKey)}
            size = path.stat().st_size if path.exists() else 0
            rows.append(
                {
                    **key,
                    "measurements": len(data.get("measurements", {})),
                    "has_result": bool(data.get("result")),
                    "path": str(path),
                    "size": size,
                    "problem": problem,
                }
            )
        return rows

    # ---- writing -------------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _update(self, key: CacheKey) -> Iterator[dict[str, Any]]:
        """Read-merge-write of ``key``'s file under its lock; the caller mutates the yielded dict."""
        self.dir.mkdir(parents=True, exist_ok=True)
        path = self.path(key)
        with _locked(path.with_suffix(".lock")):
            data, problem = self._read(path, key)
            if problem:
                _warn(path, problem, stacklevel=4)
            data = {
                "format": FORMAT,
                "format_version": FORMAT_VERSION,
                "autopad_version": key.autopad_version,
                "key": key.to_dict(),
                "measurements": dict(data.get("measurements", {})),
                "result": data.get("result"),
            }
            yield data
            write_atomic(path, json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n")

    def put_measurements(self, key: CacheKey, measurements: dict[str, Measurement]) -> None:
        """Add or replace measured candidates of ``key`` (others already stored are kept)."""
        with self._update(key) as data:
            for k, m in measurements.items():
                data["measurements"][str(k)] = {**m.to_dict(), "key": str(k)}

    def put_result(self, key: CacheKey, result: TuneResult, params: dict[str, Any]) -> None:
        """Store ``result`` with the search ``params`` (top_k, budget, ...) that produced it.

        Its candidates' measurements are merged into the per-candidate entries as well.
        """
        with self._update(key) as data:
            for c in result.candidates:
                if c.measurement is not None:
                    data["measurements"][c.key] = {**c.measurement.to_dict(), "key": c.key}
            data["result"] = {"params": _norm(params), "result": result.to_dict()}
        path = self.path(key)
        try:  # this process need not read back what it just wrote
            st = path.stat()
            _MEMO[str(path)] = ((st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns), _norm(params), result)
        except OSError:
            pass

    def clear(self, kernel: str | None = None) -> int:
        """Delete autopad's tune-cache files (only one kernel's, if given); returns how many were removed.

        Only files named like this module's own (``<kernel>-<hash>.json``, their ``.lock`` sidecars and
        ``.tmp`` leftovers) are touched; anything else in the folder is left alone.
        """
        removed = 0
        for path in self._files():
            if kernel is not None:
                data, _ = self._read(path)
                name = data["key"]["kernel"] if data else None
                if name != kernel and not (name is None and path.name.startswith(_slug(kernel) + "-")):
                    continue
            lock = path.with_suffix(".lock")
            with _locked(lock):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                    removed += 1
                with contextlib.suppress(FileNotFoundError):
                    lock.unlink()
        if kernel is None and self.dir.is_dir():
            for p in sorted(self.dir.iterdir()):
                if p.suffix == ".lock" and _NAME.match(p.stem + ".json"):  # a lock whose file is gone
                    with _locked(p), contextlib.suppress(FileNotFoundError):
                        p.unlink()
                elif _TMP.match(p.name):  # a crashed writer's temporary; a live one is seconds old at most
                    with contextlib.suppress(FileNotFoundError):
                        if time.time() - p.stat().st_mtime > _STALE_TMP_S:
                            p.unlink()
        return removed
