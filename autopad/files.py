"""Writing files safely: atomic replacement, no-clobber creation, and never through a symlink.

Why: autopad writes into places a user shares with other programs and other users (an export next to
their sources, a cache folder, a PNG from ``explain``). Three things went wrong there before this module:
a half-written file could be seen by a reader, an export could replace a user's own file, and a symlink
planted at the destination made ``open(path, "w")`` write wherever it pointed (``explain --png``, the
cache's lock file). So every write here goes to a fresh temporary in the destination's folder
(``mkstemp``: ``O_EXCL``, mode 0600 until it is complete), is fsynced, and is then either renamed over the
destination (``os.replace`` replaces a symlink itself, never its target) or hard-linked into place
(``os.link`` fails if the name exists: create without clobbering). A symlink at the destination is
refused outright, and lock files are opened with ``O_NOFOLLOW``.

- ``write_atomic(path, data)``: replace ``path`` atomically (readers see the old file or the new one).
- ``write_file(path, data, overwrite=False)``: create ``path``; when it exists, do nothing if it already
  holds ``data``, refuse (``FileExistsError``) if it differs, unless ``overwrite``; refuse a symlink.
- ``open_lock(path)``: a descriptor on a regular lock file, created if needed, never through a symlink.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path

__all__ = ["UnsafePathError", "write_atomic", "write_file", "open_lock"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class UnsafePathError(OSError):
    """The destination is a symlink or not a regular file, so autopad will not write there."""


def _bytes(data: str | bytes) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else bytes(data)


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _refuse_special(path: Path) -> os.stat_result | None:
    """``lstat(path)``, or None when nothing is there; a symlink or non-regular file is an error."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        raise UnsafePathError(f"{path} is a symlink: refusing to write through it (remove it first)")
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(f"{path} is a directory, not a file to write")
    if not stat.S_ISREG(st.st_mode):
        raise UnsafePathError(f"{path} is not a regular file: refusing to replace it")
    return st


def _temporary(path: Path, data: bytes, mode: int) -> str:
    """A complete, fsynced copy of ``data`` next to ``path`` with ``mode``; returns its name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return tmp


def write_atomic(path: str | Path, data: str | bytes, mode: int | None = None) -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` via a fsynced temporary in its folder and ``os.replace``.

    The file keeps its existing permissions (or gets ``mode``, default 0o644 for a new file). A symlink at
    ``path`` is replaced by the file, never written through.
    """
    path = Path(path)
    if mode is None:
        try:
            st = os.lstat(path)
            mode = stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else 0o644
        except FileNotFoundError:
            mode = 0o644
    tmp = _temporary(path, _bytes(data), mode)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)
    return path


def _holds(path: Path, data: bytes) -> bool:
    """Whether the regular file at ``path`` (not followed if a symlink) holds exactly ``data``."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return False
        return f.read(len(data) + 1) == data


def write_file(path: str | Path, data: str | bytes, overwrite: bool = False) -> Path:
    """Create ``path`` with ``data``, atomically; never write through a symlink or clobber a different file.

    - nothing there: the file appears complete or not at all (hard link of a finished temporary);
    - a regular file holding ``data`` already: nothing to do;
    - a regular file holding something else: ``FileExistsError`` unless ``overwrite`` (then an atomic
      replace that keeps the file's permissions);
    - a symlink (even a dangling one) or anything but a regular file: ``UnsafePathError``.
    """
    path = Path(path)
    blob = _bytes(data)

    def refuse() -> FileExistsError:
        return FileExistsError(
            f"{path} already exists with different contents; pass overwrite=True (the CLI's --overwrite) "
            "to replace it"
        )

    st = _refuse_special(path)
    if st is not None:
        if _holds(path, blob):
            return path
        if not overwrite:
            raise refuse()
        return write_atomic(path, blob, stat.S_IMODE(st.st_mode))
    tmp = _temporary(path, blob, 0o644)
    try:
        try:
            os.link(tmp, path)  # fails if anything (a file, a symlink) took the name meanwhile
        except FileExistsError:
            _refuse_special(path)
            if not _holds(path, blob):
                if not overwrite:
                    raise refuse() from None
                os.replace(tmp, path)
        except OSError as err:
            if err.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                raise
            # no hard links on this file system: check again, then rename (a small window remains)
            if _refuse_special(path) is not None and not _holds(path, blob) and not overwrite:
                raise refuse() from None
            os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    _fsync_dir(path.parent)
    return path


def open_lock(path: str | Path, mode: int = 0o644) -> int:
    """An ``O_RDWR`` descriptor on the lock file ``path`` (created if missing), for ``fcntl.flock``.

    ``O_NOFOLLOW``: a symlink planted at ``path`` is an ``UnsafePathError``, not a file created or
    truncated wherever it points; a FIFO, device or folder there is refused as well.
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0), mode)
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.EMLINK) and os.path.islink(path):  # Linux/macOS, BSD
            raise UnsafePathError(f"{path} is a symlink: refusing to open a lock file through it") from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafePathError(f"{path} is not a regular file: refusing to use it as a lock file")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd
