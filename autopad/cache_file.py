"""One tuning-cache file: how it is written (``_dump``) and how it is read and checked (``_read_bytes``,
``_scan_head``, ``_validate``), with the warnings that name a bad file or entry.

Untrusted contents: a file is read without following a symlink, only if it is a regular file (a FIFO
would block) and no larger than ``$AUTOPAD_CACHE_MAX_MB`` (32 MiB, some 250,000 measurements; a 198 MiB
file cost 3.2 s and 829 MB per hit). Every value is checked on the way in (``results.*.from_dict``): a
constant that is a float or a bool, a time that is negative, NaN or text, is never coerced; the entry
(one measurement, or the stored result) is dropped with one warning naming the file and the field, and
the next write leaves it out. Whether cached constants are *legal* for the kernel is the tuner's check.

Speed of a hit: the file is written with the small result before the bulky measurements, and a hit
parses only the file's head (header, key, result): 0.5 ms on a file of 100,000 measurements (15 MiB),
which took 2.1 s and 84 MiB when the whole file was parsed. Files of the older layout are still read.

Why a module of its own: the file format (its members, their order, the exact bytes written for given
contents) and the checks on reading one are one concern; the folder, its locks and the in-process memo
are ``cache``'s. Split out of ``cache``, which re-exports every name.
"""

from __future__ import annotations

import codecs
import errno
import json
import math
import os
import re
import stat
import warnings
from pathlib import Path
from typing import Any, NamedTuple

from .cache_key import CacheKey
from .results import Measurement, TuneResult

__all__ = ["FORMAT", "FORMAT_VERSION", "MAX_MB", "max_bytes"]

FORMAT = "autopad-tune-cache"
FORMAT_VERSION = 1
MAX_MB = 32.0  # default size cap on a cache file read ($AUTOPAD_CACHE_MAX_MB): ~250,000 measurements
_ORDER = ("format", "format_version", "autopad_version", "key", "result", "measurements")  # as written
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_HEAD = 1 << 20  # a hit parses the header, key and result from this much of the file (they come first)
_FOLDER_ERRNOS = {errno.EACCES, errno.EPERM, errno.ENOTDIR, errno.EROFS}


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


def _read_file(path: Path, key: CacheKey | None = None, lazy: bool = False) -> _File:
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
