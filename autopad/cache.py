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

Untrusted contents: a file is read without following a symlink, only if it is a regular file (a FIFO
would block) and no larger than ``$AUTOPAD_CACHE_MAX_MB`` (32 MiB, some 250,000 measurements; a 198 MiB
file cost 3.2 s and 829 MB per hit). Every value is checked on the way in (``results.*.from_dict``): a
constant that is a float or a bool, a time that is negative, NaN or text, is never coerced; the entry
(one measurement, or the stored result) is dropped with one warning naming the file and the field, and
the next write leaves it out. Whether cached constants are *legal* for the kernel is the tuner's check.

Speed of a hit: the file is written with the small result before the bulky measurements, and a hit
parses only the file's head (header, key, result): 0.5 ms on a file of 100,000 measurements (15 MiB),
which took 2.1 s and 84 MiB when the whole file was parsed. Files of the older layout are still read.

Unusable folders (read-only, a file where the folder should be, no permission, a lock file that is a
folder or a symlink): one warning per process and folder; a folder that cannot be read acts as empty, one
that cannot be written keeps nothing new (a read-only folder still serves what it holds), so ``tune``
runs uncached rather than failing.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import hashlib
import json
import math
import os
import re
import stat
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, NamedTuple

from .files import open_lock, write_atomic
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
MAX_MB = 32.0  # default size cap on a cache file read ($AUTOPAD_CACHE_MAX_MB): ~250,000 measurements
_HEAD = 1 << 20  # a hit parses the header, key and result from this much of the file (they come first)
_ORDER = ("format", "format_version", "autopad_version", "key", "result", "measurements")  # as written
_WARNED: set[tuple[str, str]] = set()  # (folder, what) already warned about in this process
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_FOLDER_ERRNOS = {errno.EACCES, errno.EPERM, errno.ENOTDIR, errno.EROFS}


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
        """From a file, strictly: the shape is a list of positive integers (no floats, bools or zeros)."""
        if not isinstance(d, dict):
            raise TypeError(f"key: expected an object, got {type(d).__name__}")
        shape = d["shape"]
        if not isinstance(shape, list) or not all(
            isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in shape
        ):
            raise ValueError(f"key.shape: expected a list of positive integers, got {shape!r}")
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


def _warn(path: Path, problem: str, stacklevel: int) -> None:
    msg = f"autopad cache: ignoring {path}: {problem}; the next write replaces it"
    warnings.warn(msg, stacklevel=stacklevel + 1)


def _warn_dropped(path: Path, dropped: tuple[str, ...], stacklevel: int) -> None:
    """One warning for every bad entry of one file read: the first three named, the rest counted."""
    if not dropped:
        return
    more = f"; and {len(dropped) - 3} more" if len(dropped) > 3 else ""
    what = "entry" if len(dropped) == 1 else f"{len(dropped)} entries"
    msg = f"autopad cache: dropping {what} of {path}: {'; '.join(dropped[:3])}{more}"
    warnings.warn(msg + " (the next write removes it)", stacklevel=stacklevel + 1)


def _once(folder: Path, what: str, msg: str, stacklevel: int) -> None:
    """Warn about an unusable folder once per process (per folder and per reading or writing)."""
    if (str(folder), what) in _WARNED:
        return
    _WARNED.add((str(folder), what))
    warnings.warn(msg, stacklevel=stacklevel + 1)


def max_bytes() -> int:
    """The largest cache file that is read: ``$AUTOPAD_CACHE_MAX_MB`` MiB (default 32; bad values too)."""
    text = os.environ.get("AUTOPAD_CACHE_MAX_MB", "").strip()
    try:
        mb = float(text) if text else MAX_MB
    except ValueError:
        mb = MAX_MB
    return int((mb if math.isfinite(mb) and mb > 0 else MAX_MB) * (1 << 20))


def _norm(params: dict[str, Any]) -> Any:
    """Search parameters as JSON sees them (tuples become lists), for storing and comparing."""
    return json.loads(json.dumps(params, sort_keys=True, default=str))


def _dump(data: dict[str, Any]) -> str:
    """The file's text: members in ``_ORDER`` (the small result before the bulky measurements, so that a
    hit parses the head of the file only), each value with sorted keys, so equal contents are equal bytes."""
    parts = (f"{json.dumps(k)}:{json.dumps(data[k], sort_keys=True, separators=(',', ':'))}" for k in _ORDER)
    return "{" + ",".join(parts) + "}\n"


class _Refused(Exception):
    """A cache file that is not read at all: a symlink, not a regular file, or over the size cap."""


def _read_bytes(path: Path, head: int | None = None) -> tuple[bytes, int, bytes]:
    """(the first ``head`` bytes, or all; the file's size; its last 16 bytes) of a regular file, opened
    without following a symlink and without blocking on a FIFO; a file over ``max_bytes()`` is refused."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        if e.errno == errno.ELOOP and os.path.islink(path):
            raise _Refused("a symlink (not followed)") from None
        raise
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _Refused("not a regular file")
        cap = max_bytes()
        limit = f"the limit of {cap:,} bytes on a cache file (AUTOPAD_CACHE_MAX_MB, default {MAX_MB:g})"
        if st.st_size > cap:
            raise _Refused(f"{st.st_size:,} bytes, over {limit}")
        data = f.read(head if head is not None else cap + 1)
        if len(data) > cap:
            raise _Refused(f"grew over {limit}")
        tail = data[-16:] if len(data) == st.st_size else os.pread(fd, 16, max(0, st.st_size - 16))
    return data, st.st_size, tail


_WS = re.compile(r"[ \t\n\r]*")


def _scan_head(raw: bytes, complete: bool) -> dict[str, Any] | None:
    """The top-level members of a cache file up to its ``measurements``, parsed from its first bytes;
    None when they are not all there (a result after the measurements: a file of the older layout, or a
    head too short) or malformed: the caller then parses the whole file."""
    try:
        text = codecs.getincrementaldecoder("utf-8")().decode(raw, final=complete)  # a cut character waits
        dec = json.JSONDecoder()
        i = _WS.match(text).end()
        if text[i : i + 1] != "{":
            return None
        i, out = i + 1, {}
        while True:
            i = _WS.match(text, i).end()
            if text[i : i + 1] == "}":
                return out
            name, i = dec.raw_decode(text, i)
            i = _WS.match(text, i).end()
            if not isinstance(name, str) or text[i : i + 1] != ":":
                return None
            i = _WS.match(text, i + 1).end()
            if name == "measurements":  # not parsed: that is the point; but it must be an object
                return out if "result" in out and text[i : i + 1] == "{" else None
            out[name], i = dec.raw_decode(text, i)
            i = _WS.match(text, i).end()
            if text[i : i + 1] == ",":
                i += 1
            elif text[i : i + 1] != "}":
                return None
    except (ValueError, RecursionError, IndexError):
        return None


_KEY_FIELD = re.compile(rb'"key":(\{[^{}]*\})')


def _peek_key(path: Path) -> CacheKey | None:
    """The key of a cache file from its first few KB (the small ``key`` object comes before the bulky
    measurements and result); None when it cannot be found."""
    try:
        head, _, _ = _read_bytes(path, 4096)
        m = _KEY_FIELD.search(head)
        return CacheKey.from_dict(json.loads(m.group(1))) if m else None
    except (OSError, _Refused, ValueError, TypeError, KeyError):
        return None


def _why(e: BaseException) -> str:
    return f"missing field {e.args[0]!r}" if isinstance(e, KeyError) else str(e) or type(e).__name__


class _File(NamedTuple):
    """One cache file as read: its (validated) contents, or why it is ignored, and the entries dropped."""

    data: dict[str, Any]  # {} when missing, ignored or unreadable; else only the entries that passed
    problem: str | None = None  # why the whole file is ignored
    dropped: tuple[str, ...] = ()  # "measurements['K'].ms: why" / "the stored result, best.constants...: why"
    meas: dict[str, Measurement] = {}  # the measurements that passed (not read on a hit)
    result: TuneResult | None = None
    unusable: OSError | None = None  # the folder itself cannot be read


def _validate(path: Path, data: Any, key: CacheKey | None) -> _File:
    """Check a parsed file: header and key (else the file is ignored), then each measurement and the
    result (a bad one is dropped alone, by name, never coerced)."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return _File({}, "not an autopad tune cache file")
    if data.get("format_version") != FORMAT_VERSION:
        return _File(
            {}, f"format version {data.get('format_version')!r}, this autopad reads {FORMAT_VERSION}"
        )
    try:
        stored = CacheKey.from_dict(data["key"])
    except (KeyError, TypeError, ValueError) as e:
        return _File({}, f"malformed key ({_why(e)})")
    if data.get("autopad_version") != stored.autopad_version:
        return _File(
            {}, f"header autopad {data.get('autopad_version')!r} != key's {stored.autopad_version!r}"
        )
    if key is not None and stored != key:
        if stored.autopad_version != key.autopad_version:
            return _File({}, f"written by autopad {stored.autopad_version}, this is {key.autopad_version}")
        return _File({}, "holds another key's entries")
    if stored.filename != path.name:
        return _File({}, f"holds the entries of {stored.filename}, not of its own name")
    dropped: list[str] = []
    good: dict[str, Measurement] = {}
    if "measurements" in data:
        ms = data["measurements"]
        if not isinstance(ms, dict):
            return _File({}, "malformed measurements")
        for k, m in ms.items():
            try:
                got = Measurement.from_dict(m, f"measurements[{k!r}]")
            except (ValueError, TypeError, KeyError, RecursionError) as e:
                dropped.append(_why(e))
                continue
            if got.key != k:
                dropped.append(f"measurements[{k!r}].key: {got.key!r}, another candidate's")
                continue
            good[k] = got
        data["measurements"] = {k: ms[k] for k in good}
    res, result = data.get("result"), None
    if res is not None:
        try:
            if not isinstance(res, dict) or not isinstance(res.get("result"), dict) or "params" not in res:
                raise ValueError("expected an object with params and result")
            result = TuneResult.from_dict(res["result"])
            mine = (stored.kernel, stored.backend, stored.shape, stored.dtype, stored.dist)
            theirs = (result.kernel, result.backend, result.shape, result.dtype, result.dist)
            if mine != theirs:
                raise ValueError(f"it is the result of {theirs}, not of this file's key {mine}")
        except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as e:
            dropped.append(f"the stored result, {_why(e)}")
            data["result"], result = None, None
    return _File(data, None, tuple(dropped), good, result)


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
        """The file at ``path``, validated. ``lazy``: header, key and result only, from the file's first
        MiB where they are (a hit must not parse 100,000 measurements it does not use)."""
        try:
            raw, size, tail = _read_bytes(path, _HEAD if lazy else None)
        except FileNotFoundError:
            return _File({})
        except _Refused as e:
            return _File({}, str(e))
        except OSError as e:
            folder = e.errno == errno.ENOTDIR or (
                e.errno in _FOLDER_ERRNOS and not os.access(path.parent, os.R_OK | os.X_OK)
            )
            return _File({}, None, unusable=e) if folder else _File({}, f"unreadable ({e.strerror or e})")
        data = _scan_head(raw, len(raw) == size) if lazy else None
        if data is None or not tail.rstrip().endswith(b"}"):
            if len(raw) < size:
                try:
                    raw, size, tail = _read_bytes(path)
                except FileNotFoundError:
                    return _File({})
                except _Refused as e:
                    return _File({}, str(e))
                except OSError as e:
                    return _File({}, f"unreadable ({e.strerror or e})")
            try:
                data = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError, RecursionError) as e:
                what = "truncated" if raw.strip() and not raw.rstrip().endswith(b"}") else "corrupt"
                return _File({}, f"{what} JSON ({str(e)[:200]})")
        return _validate(path, data, key)

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
