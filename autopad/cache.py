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
nothing (tested: 4 writers x 50 entries, 8 tuners at once, 30 writers SIGKILLed mid-write). A truncated,
corrupt, foreign or other-version file is ignored with a warning (naming the file and the problem) and
replaced by the next write; it never raises.

Unusable folders (read-only, a file where the folder should be, no permission, a lock file that is a
folder or a symlink): one warning per process and folder; a folder that cannot be read acts as empty, one
that cannot be written keeps nothing new (a read-only folder still serves what it holds), so ``tune``
runs uncached rather than failing.

Where the code lives: ``cache_key`` (``CacheKey``, ``bucket``), ``cache_file`` (one file's format, reading
and checks: untrusted contents, the speed of a hit) and this module (the folder: ``Cache``, its locks, its
in-process memo). This module re-exports the other two's names, for the old import paths (private ones too,
read from their module when asked for: ``__getattr__`` below). An attribute set here reaches only this
module's own code (``Cache``'s reads of ``open_lock``, ``write_atomic``, ``_read_file``, ...), never the code
of ``cache_file`` or ``cache_key``: patch a name in the module that reads it (``cache_file._read_bytes``,
``cache_file.max_bytes``).
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any

from . import cache_file, cache_key
from .cache_file import (
    FORMAT,
    FORMAT_VERSION,
    _dump,
    _File,
    _norm,
    _peek_key,
    _read_file,
    _warn,
    _warn_dropped,
)
from .cache_key import CacheKey, _slug, bucket
from .files import open_lock, write_atomic
from .results import Measurement, TuneResult

try:  # POSIX; elsewhere writes stay atomic but concurrent writers are not serialised
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

__all__ = ["FORMAT", "FORMAT_VERSION", "CacheKey", "Cache", "bucket", "cache_dir", "write_atomic"]

SUBDIR = "tune"
_NAME = re.compile(r"^[a-z0-9_]{1,40}-[0-9a-f]{24}\.json$")
_TMP = re.compile(r"^\.[a-z0-9_]{1,40}-[0-9a-f]{24}\.json\..*\.tmp$")
_STALE_TMP_S = 600.0
_MEMO: dict[str, tuple[tuple[int, ...], Any, TuneResult]] = {}  # path -> (file signature, params, result)
_MEMO_SIZE = 32
_WARNED: set[tuple[str, str]] = set()  # (folder, what) already warned about in this process


def cache_dir() -> Path:
    """The cache root: ``$AUTOPAD_CACHE_DIR``, else ``$XDG_CACHE_HOME/autopad``, else ``~/.cache/autopad``."""
    env = os.environ.get("AUTOPAD_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "autopad"


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    """Exclusive flock on ``lock_path``; retried if the lock file was replaced (clear()) while we waited.

    The lock file is opened by ``files.open_lock``: never through a symlink, only a regular file (a
    symlink planted there used to make this create or lock whatever it pointed at).
    """
    if fcntl is None:  # pragma: no cover
        yield
        return
    while True:
        fd = open_lock(lock_path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            held = os.fstat(fd)
            try:
                now = os.lstat(lock_path)
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


def _once(folder: Path, what: str, msg: str, stacklevel: int) -> None:
    """Warn about an unusable folder once per process (per folder and per reading or writing)."""
    if (str(folder), what) in _WARNED:
        return
    _WARNED.add((str(folder), what))
    warnings.warn(msg, stacklevel=stacklevel + 1)


class Cache:
    """The tuning cache under ``root / "tune"`` (``root`` defaults to ``cache_dir()``).

    No method raises on a bad file or an unusable folder (read-only, a file where the folder should be, a
    lock file that is a folder or a symlink, no permission): the folder is warned about once per process;
    what cannot be read reads as empty and what cannot be written is not kept, so ``tune`` runs uncached.
    """

    def __init__(self, root: str | Path | None = None) -> None:
        self.root = Path(root) if root is not None else cache_dir()
        self.dir = self.root / SUBDIR

    def path(self, key: CacheKey) -> Path:
        return self.dir / key.filename

    def _cannot_read(self, err: OSError, stacklevel: int) -> None:
        _once(
            self.dir,
            "read",
            f"autopad cache: cannot read {self.dir} ({err.strerror or err}); tuning runs uncached",
            stacklevel + 1,
        )

    def _cannot_write(self, err: OSError, stacklevel: int) -> None:
        _once(
            self.dir,
            "write",
            f"autopad cache: cannot write to {self.dir} ({err}); tuning goes on, its results are not cached",
            stacklevel + 1,
        )

    # ---- reading -------------------------------------------------------------------------------------------

    def _read(self, path: Path, key: CacheKey | None = None, lazy: bool = False) -> _File:
        """The file at ``path``, validated; ``lazy``: its head only (``cache_file._read_file``)."""
        return _read_file(path, key, lazy)

    def _report(self, path: Path, f: _File, stacklevel: int) -> None:
        if f.unusable is not None:
            self._cannot_read(f.unusable, stacklevel + 1)
        elif f.problem:
            _warn(path, f.problem, stacklevel + 1)
        _warn_dropped(path, f.dropped, stacklevel + 1)

    def load(self, key: CacheKey) -> dict[str, Any]:
        """The file's contents for ``key``; {} when absent, or (with a warning) when it cannot be used.
        Entries that fail their checks are left out, with one warning naming the file and each field."""
        path = self.path(key)
        f = self._read(path, key)
        self._report(path, f, stacklevel=2)
        return f.data

    def measurements(self, key: CacheKey) -> dict[str, Measurement]:
        """Every measured candidate of ``key`` that passes its checks, by candidate key."""
        path = self.path(key)
        f = self._read(path, key)
        self._report(path, f, stacklevel=2)
        return dict(f.meas)

    def get_result(self, key: CacheKey, params: dict[str, Any]) -> TuneResult | None:
        """The stored result if it was produced with the same search ``params``; else None.

        Only the head of the file is parsed (header, key, result; the measurements follow them). A result
        read once is kept in memory for as long as its file is unchanged (same inode, size and mtime;
        every write replaces the inode), so a repeated lookup in one process costs one ``stat``. The
        returned object is shared between such lookups: treat it as read-only.
        """
        path, want = self.path(key), _norm(params)
        try:
            st = os.lstat(path)
            sig = (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns)
        except OSError:
            sig = None
        memo = _MEMO.get(str(path))
        if sig is not None and memo is not None and memo[0] == sig and memo[1] == want:
            return memo[2]
        f = self._read(path, key, lazy=True)
        self._report(path, f, stacklevel=2)
        if f.result is None or f.data["result"]["params"] != want:
            return None
        if sig is not None:
            _MEMO.pop(str(path), None)
            _MEMO[str(path)] = (sig, want, f.result)
            while len(_MEMO) > _MEMO_SIZE:
                _MEMO.pop(next(iter(_MEMO)))
        return f.result

    def _files(self) -> list[Path]:
        try:
            return sorted(p for p in self.dir.iterdir() if _NAME.match(p.name) and p.is_file())
        except FileNotFoundError:
            return []
        except OSError as e:
            self._cannot_read(e, stacklevel=3)
            return []

    def nearest(self, key: CacheKey) -> tuple[CacheKey, TuneResult] | None:
        """The tuned entry of ``key``'s context whose shape is nearest in log space, or None.

        Same context means same version, GPU, cc, backend, kernel, source, dtype and dist; only the shape
        may differ, and only shapes of the same rank are considered. Entries in ``key``'s own bucket come
        first, then the smallest sum of squared log2 ratios; remaining ties go to the smaller shape.
        Unusable files and results that fail their checks are skipped silently (``load`` and ``entries``
        report them).
        """
        want, ctx = bucket(key.shape), key.context()
        best: tuple[tuple, CacheKey, TuneResult] | None = None
        for path in self._files():
            if not path.name.startswith(_slug(key.kernel) + "-"):
                continue
            other = _peek_key(path)
            if other is None or other.context() != ctx or len(other.shape) != len(key.shape):
                continue
            dist = sum((math.log2(a / b)) ** 2 for a, b in zip(key.shape, other.shape, strict=True))
            rank = (bucket(other.shape) != want, dist, other.shape)
            if best is None or rank < best[0]:
                f = self._read(path, other, lazy=True)  # only candidates are read, and only their head
                if f.result is not None:
                    best = (rank, other, f.result)
        return None if best is None else (best[1], best[2])

    def entries(self) -> list[dict[str, Any]]:
        """One row per cache file (for ``autopad cache list``): key fields, counts, path, size, problem."""
        rows = []
        for path in self._files():
            f = self._read(path)
            data = f.data
            key = data.get("key") or {fl.name: None for fl in fields(CacheKey)}
            try:
                size = os.lstat(path).st_size
            except OSError:
                size = 0
            problem = f.problem or (f"unreadable ({f.unusable})" if f.unusable else None)
            if f.dropped:
                problem = "; ".join(filter(None, [problem, f"{len(f.dropped)} bad entries: {f.dropped[0]}"]))
            rows.append(
                {
                    **key,
                    "measurements": len(f.meas),
                    "has_result": f.result is not None,
                    "path": str(path),
                    "size": size,
                    "problem": problem,
                }
            )
        return rows

    # ---- writing -------------------------------------------------------------------------------------------

    def _write(self, key: CacheKey, change: Callable[[dict[str, Any]], None]) -> bool:
        """Read-merge-write of ``key``'s file under its lock: ``change`` mutates the merged contents. An
        unusable folder is warned about once and nothing is written (False)."""
        path = self.path(key)
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            with _locked(path.with_suffix(".lock")):
                f = self._read(path, key)
                if f.unusable is not None:
                    raise f.unusable
                if f.problem:
                    _warn(path, f.problem, stacklevel=4)
                _warn_dropped(path, f.dropped, stacklevel=4)
                data = {
                    "format": FORMAT,
                    "format_version": FORMAT_VERSION,
                    "autopad_version": key.autopad_version,
                    "key": key.to_dict(),
                    "measurements": dict(f.data.get("measurements", {})),
                    "result": f.data.get("result"),
                }
                change(data)
                write_atomic(path, _dump(data))
        except OSError as e:
            self._cannot_write(e, stacklevel=4)
            return False
        return True

    def put_measurements(self, key: CacheKey, measurements: dict[str, Measurement]) -> None:
        """Add or replace measured candidates of ``key`` (others already stored are kept)."""

        def change(data: dict[str, Any]) -> None:
            for k, m in measurements.items():
                data["measurements"][str(k)] = {**m.to_dict(), "key": str(k)}

        self._write(key, change)

    def put_result(self, key: CacheKey, result: TuneResult, params: dict[str, Any]) -> None:
        """Store ``result`` with the search ``params`` (top_k, budget, ...) that produced it.

        Its candidates' measurements are merged into the per-candidate entries as well.
        """

        def change(data: dict[str, Any]) -> None:
            for c in result.candidates:
                if c.measurement is not None:
                    data["measurements"][c.key] = {**c.measurement.to_dict(), "key": c.key}
            data["result"] = {"params": _norm(params), "result": result.to_dict()}

        if not self._write(key, change):
            return
        path = self.path(key)
        try:  # this process need not read back what it just wrote
            st = os.lstat(path)
            _MEMO[str(path)] = ((st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns), _norm(params), result)
        except OSError:
            pass

    def clear(self, kernel: str | None = None) -> int:
        """Delete autopad's tune-cache files (only one kernel's, if given); returns how many were removed.

        Only files named like this module's own (``<kernel>-<hash>.json``, their ``.lock`` sidecars and
        ``.tmp`` leftovers) are touched; anything else in the folder is left alone. What cannot be removed
        (a read-only folder) is warned about once and left.
        """
        removed = 0
        for path in self._files():
            if kernel is not None:
                data = self._read(path).data
                name = data["key"]["kernel"] if data else None
                if name != kernel and not (name is None and path.name.startswith(_slug(kernel) + "-")):
                    continue
            lock = path.with_suffix(".lock")
            try:
                with _locked(lock):
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()
                        removed += 1
                    with contextlib.suppress(FileNotFoundError):
                        lock.unlink()
            except OSError as e:
                self._cannot_write(e, stacklevel=2)
        try:
            leftovers = sorted(self.dir.iterdir()) if kernel is None and self.dir.is_dir() else []
        except OSError:
            leftovers = []
        for p in leftovers:
            try:
                if p.suffix == ".lock" and _NAME.match(p.stem + ".json"):  # a lock whose file is gone
                    with _locked(p), contextlib.suppress(FileNotFoundError):
                        p.unlink()
                elif _TMP.match(p.name):  # a crashed writer's temporary; a live one is seconds old at most
                    with contextlib.suppress(FileNotFoundError):
                        if time.time() - p.stat().st_mtime > _STALE_TMP_S:
                            p.unlink()
            except OSError as e:
                self._cannot_write(e, stacklevel=2)
        return removed


# a module that defines a name comes before those that import it: a read of the name takes the first
_HOMES = (cache_key, cache_file)


def __getattr__(name: str) -> Any:
    """Every other name of ``cache_key`` and ``cache_file`` (``max_bytes``, ``MAX_MB``, ``_why``, ...)."""
    for home in _HOMES:
        if name in home.__dict__:
            return home.__dict__[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
