"""The checked on-disk cubin format: a header with the payload's sha256; read only when it may be trusted.

What: ``write_cubin`` stores a cubin under autopad's header (16 bytes of magic, the 32-byte sha256 of the
payload, the payload), atomically, 0600 in a 0700 folder; ``read_cubin`` returns the payload only from a
regular file (not a symlink) owned by this user, writable by no one else, whose hash matches, and warns once
per file otherwise; ``unwrap_cubin`` checks bytes already read (``autopad.ops``' cache packs).

Why: a cubin is machine code that this process will run, and its file name is predictable (a hash of the
source and defines), so a file planted or damaged in the cache folder must never reach the GPU: anything
refused is compiled afresh (``cuda_compile.compile_cubin``) and the fresh copy replaces it. Split out of
``cuda_runtime`` (which re-exports every name): the file format is one concern, the compiler another.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
import warnings
from pathlib import Path

__all__ = ["CUBIN_MAGIC", "read_cubin", "unwrap_cubin", "write_cubin"]

_WARNED: set[str] = set()

# ---- the checked on-disk cubin format -------------------------------------------------------------------
# header: 16 bytes of magic, then the 32-byte sha256 of the payload, then the payload (the cubin itself)
CUBIN_MAGIC = b"autopad-cubin\x00v1"
_HEADER = len(CUBIN_MAGIC) + 32
_MAX_CUBIN = 256 << 20  # no kernel of autopad's comes near this; a larger file is not one of ours
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _warn_once(path: Path, why: str) -> None:
    key = f"{path}:{why}"
    if key not in _WARNED:
        _WARNED.add(key)
        warnings.warn(f"autopad: refusing cached cubin {path}: {why}; compiling it afresh", stacklevel=4)


def read_cubin(path: str | Path) -> bytes | None:
    """The payload of a checked cubin file, or None (with a warning) when it may not be trusted.

    Trusted means: a regular file (opened without following a symlink), owned by this user, writable by
    no one else, starting with autopad's header whose sha256 matches the payload. A missing file or a
    cubin from before the header existed is None without a warning (it is simply compiled again).
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as e:  # ELOOP: a symlink at the final component
        _warn_once(path, f"cannot be opened safely ({e.strerror or e})")
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            _warn_once(path, "not a regular file")
            return None
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            _warn_once(path, f"owned by uid {st.st_uid}, not by this user ({os.getuid()})")
            return None
        if st.st_mode & 0o022:
            _warn_once(path, f"writable by group or others (mode {stat.S_IMODE(st.st_mode):o})")
            return None
        if st.st_size > _MAX_CUBIN + _HEADER:
            _warn_once(path, f"{st.st_size} bytes, larger than any cubin autopad writes")
            return None
        with os.fdopen(fd, "rb") as f:
            fd = -1
            data = f.read()
    finally:
        if fd >= 0:
            os.close(fd)
    if not data.startswith(CUBIN_MAGIC):
        if not data.startswith(b"\x7fELF"):  # an unheadered ELF is an older autopad's cubin: quietly redo
            _warn_once(path, "not in autopad's checked cubin format")
        return None
    payload = unwrap_cubin(data)
    if payload is None:
        _warn_once(path, "its sha256 does not match its contents (damaged or altered)")
    return payload


def unwrap_cubin(data: bytes) -> bytes | None:
    """The payload of a checked cubin's bytes (header + sha256 + payload), or None if they do not check."""
    if not data.startswith(CUBIN_MAGIC) or len(data) < _HEADER:
        return None
    digest, payload = data[len(CUBIN_MAGIC) : _HEADER], data[_HEADER:]
    return payload if hashlib.sha256(payload).digest() == digest else None


def write_cubin(path: str | Path, payload: bytes) -> Path:
    """Write ``payload`` under autopad's header, atomically (a reader sees the old file or the new one),
    mode 0600 in a folder created 0700; a symlink at ``path`` is replaced, never followed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem[:16]}-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(CUBIN_MAGIC + hashlib.sha256(payload).digest() + payload)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path
