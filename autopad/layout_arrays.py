"""Layouts of records and of replicated arrays: ``Structs`` (array-of-structs or struct-of-arrays) and
``Replicated`` (privatised sub-histograms, replica-major or interleaved).

Split from layouts.py (one concern a module): the layouts that are not row-major tiles, with the same
interface (``offsets``, ``footprint``, ``check``, ``describe``, ``to_dict``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .layout_checks import ELEM_BYTES, Legality, _addressable, _budget_check, _elem, _is_int, _positive

__all__ = ["Replicated", "Structs"]


@dataclass(frozen=True)
class Structs:
    """``count`` records of fields with the given byte sizes, as array-of-structs or struct-of-arrays.

    Logical index (i, f) is field f of record i. AoS puts record i at ``i * stride`` (fields packed in order,
    the stride rounded up to the widest field's alignment plus ``pad`` bytes), so a warp reading one field
    of consecutive records walks memory with the struct size as its stride: a 16-byte struct read one
    float at a time is a 4-way conflict. SoA stores each field as its own array, and the same read is a
    stride-one walk.
    """

    count: int
    fields: tuple[int, ...] = (4,)
    aos: bool = True
    pad: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "count", _positive("count", self.count))
        fields = self.fields
        if (
            not isinstance(fields, (tuple, list))
            or not fields
            or any(not _is_int(f) or f not in ELEM_BYTES + (16,) for f in fields)
        ):
            raise ValueError(f"fields: byte sizes must each be one of 1, 2, 4, 8, 16; got {fields!r}")
        object.__setattr__(self, "fields", tuple(int(f) for f in fields))
        if not isinstance(self.aos, (bool, np.bool_)):
            raise ValueError(
                f"aos: must be True (array of structs) or False (struct of arrays), got {self.aos!r}"
            )
        object.__setattr__(self, "aos", bool(self.aos))
        if not _is_int(self.pad) or self.pad < 0 or self.pad % max(self.fields):
            raise ValueError(f"pad: must be >= 0 and a multiple of the widest field {max(self.fields)}")
        object.__setattr__(self, "pad", int(self.pad))
        what = f"{self.count} {'AoS' if self.aos else 'SoA'} records of fields {self.fields} (pad {self.pad})"
        _addressable("count, fields, pad", what, self.footprint)  # int64 offsets must not wrap

    @property
    def field_offsets(self) -> tuple[int, ...]:
        """Byte offset of each field within a record (each aligned to its own size)."""
        out, at = [], 0
        for f in self.fields:
            at = -(-at // f) * f
            out.append(at)
            at += f
        return tuple(out)

    @property
    def stride(self) -> int:
        """Bytes from one record to the next in AoS form."""
        end = self.field_offsets[-1] + self.fields[-1]
        align = max(self.fields)
        return -(-end // align) * align + self.pad

    @property
    def footprint(self) -> int:
        if self.aos:
            return self.count * self.stride
        return sum(self._soa_bases()[-1:]) + self.count * self.fields[-1]

    def _soa_bases(self) -> list[int]:
        bases, at = [], 0
        for f in self.fields:
            at = -(-at // 16) * 16  # each field array starts 16-byte aligned
            bases.append(at)
            at += self.count * f + (self.pad if self.pad else 0)
        return bases

    def offsets(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Byte offsets of (record, field); -1 where record < 0."""
        i = np.asarray(rows, dtype=np.int64)
        f = np.asarray(cols, dtype=np.int64)
        if self.aos:
            off = i * self.stride + np.asarray(self.field_offsets, dtype=np.int64)[f]
        else:
            off = (
                np.asarray(self._soa_bases(), dtype=np.int64)[f]
                + i * np.asarray(self.fields, dtype=np.int64)[f]
            )
        return np.where(i < 0, -1, off)

    def check(self, vec: int = 1, budget: int | None = None) -> Legality:
        return _budget_check(self.footprint, budget)

    def describe(self) -> str:
        return ("AoS" if self.aos else "SoA") + (f" pad {self.pad}" if self.pad else "")

    def to_dict(self) -> dict[str, Any]:
        """``{"kind": "structs", count, fields (list), aos, pad}`` (``from_dict``)."""
        return {
            "kind": "structs",
            "count": self.count,
            "fields": list(self.fields),
            "aos": self.aos,
            "pad": self.pad,
        }


@dataclass(frozen=True)
class Replicated:
    """``replicas`` copies of a ``bins``-entry array (privatised sub-histograms).

    Logical index (r, b) is bin b of replica r. Replica-major stores replica r at ``r * (bins + pad)``:
    with pad = 1 (one word), replica r's bin b sits one bank further on than replica r-1's, so warps that
    use different replicas for the same hot bin hit different banks. Interleaved stores bin b's replicas
    side by side at ``b * (replicas + pad) + r``.
    """

    bins: int
    replicas: int = 1
    elem_bytes: int = 4
    interleaved: bool = False
    pad: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "bins", _positive("bins", self.bins))
        object.__setattr__(self, "replicas", _positive("replicas", self.replicas))
        object.__setattr__(self, "elem_bytes", _elem(self.elem_bytes))
        if not isinstance(self.interleaved, (bool, np.bool_)):
            raise ValueError(f"interleaved: must be True or False, got {self.interleaved!r}")
        object.__setattr__(self, "interleaved", bool(self.interleaved))
        if not _is_int(self.pad) or self.pad < 0:
            raise ValueError(f"pad: must be an int >= 0, got {self.pad!r}")
        object.__setattr__(self, "pad", int(self.pad))
        what = f"{self.replicas} replicas of {self.bins} bins (pad {self.pad}) x {self.elem_bytes} bytes"
        _addressable("bins, replicas, pad, elem_bytes", what, self.footprint)  # int64 offsets must not wrap

    @property
    def footprint(self) -> int:
        if self.interleaved:
            return self.bins * (self.replicas + self.pad) * self.elem_bytes
        return self.replicas * (self.bins + self.pad) * self.elem_bytes

    def offsets(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        r = np.asarray(rows, dtype=np.int64)
        b = np.asarray(cols, dtype=np.int64)
        if self.interleaved:
            off = b * (self.replicas + self.pad) + r
        else:
            off = r * (self.bins + self.pad) + b
        return np.where(r < 0, -1, off * self.elem_bytes)

    def cuda_defines(self) -> dict[str, int]:
        return {
            "BINS": self.bins,
            "REPLICAS": self.replicas,
            "INTERLEAVED": int(self.interleaved),
            "PAD": self.pad,
        }

    def check(self, vec: int = 1, budget: int | None = None) -> Legality:
        return _budget_check(self.footprint, budget)

    def describe(self) -> str:
        kind = "interleaved" if self.interleaved else "replica-major"
        return f"{self.replicas} replicas {kind}" + (f" pad {self.pad}" if self.pad else "")

    def to_dict(self) -> dict[str, Any]:
        """``{"kind": "replicated", bins, replicas, elem_bytes, interleaved, pad}`` (``from_dict``)."""
        return {
            "kind": "replicated",
            "bins": self.bins,
            "replicas": self.replicas,
            "elem_bytes": self.elem_bytes,
            "interleaved": self.interleaved,
            "pad": self.pad,
        }
