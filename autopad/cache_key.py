"""The key of a tuning-cache entry (``CacheKey``) and the shape bucket its nearest-shape lookup uses.

What: ``CacheKey`` holds everything that can change a tuning answer (autopad version, GPU name and compute
capability, backend, kernel, kernel source hash, shape, dtype and, for the histogram, the input
distribution's class); its ``filename`` (``<kernel>-<24 hex of the key's sha256>.json``) names the one
cache file of that key. ``bucket`` rounds a shape to the bucket ``Cache.nearest`` prefers.

Why a module of its own: the key is what the tuner, the ops layer and the CLI build (``tune.cache_key``)
and what a cache file's name and contents must agree with; how a file is read (``cache_file``) and how the
folder is shared (``cache``) are other concerns. The digest and the file name are part of the on-disk
format: a change here orphans every user's cache. Split out of ``cache``, which re-exports every name.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, fields
from typing import Any

__all__ = ["CacheKey", "bucket"]


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
