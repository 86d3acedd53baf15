"""Legality, and the parameter checks every layout's constructor shares.

Split from layouts.py (one concern a module): a layout's parameters are validated once, at construction,
with these helpers (ints that are ints, powers of two, element sizes), and ``check(vec, budget)`` answers
with a ``Legality`` that says why not. The kernels' specs share ``Legality`` with the layouts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .arch import Arch
from .model_rules import ADDRESS_LIMIT

__all__ = ["ELEM_BYTES", "Legality"]

ELEM_BYTES = (1, 2, 4, 8)
_DEFAULT_BUDGET = Arch.smem_per_block  # the default profile's (sm_90's) per-block shared-memory limit


@dataclass(frozen=True)
class Legality:
    """Whether a layout can be used, and if not, why. Truthy when legal."""

    ok: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.ok


_OK = Legality(True)


def _pow2(x: int) -> bool:
    return x > 0 and (x & (x - 1)) == 0


def _is_int(value: object) -> bool:
    if type(value) is int:  # the common case first (a ranking builds hundreds of layouts)
        return True
    return not isinstance(value, (bool, np.bool_)) and isinstance(value, (int, np.integer))


def _positive(name: str, value: object) -> int:
    if not _is_int(value) or value <= 0:  # type: ignore[operator]
        raise ValueError(f"{name}: must be a positive int, got {value!r}")
    return int(value)  # type: ignore[arg-type]


def _pow2_param(name: str, value: object) -> int:
    if not _is_int(value) or not _pow2(int(value)):  # type: ignore[arg-type]
        raise ValueError(f"{name}: must be a power of two >= 1, got {value!r}")
    return int(value)  # type: ignore[arg-type]


def _pad(value: object) -> int:
    if not _is_int(value) or value < 0:  # type: ignore[operator]
        raise ValueError(f"pad: must be an int >= 0 (elements added to each row), got {value!r}")
    return int(value)  # type: ignore[arg-type]


def _elem(elem_bytes: object) -> int:
    if not _is_int(elem_bytes) or elem_bytes not in ELEM_BYTES:
        raise ValueError(f"elem_bytes: {elem_bytes!r} is not one of {ELEM_BYTES}")
    return int(elem_bytes)  # type: ignore[arg-type]


def _addressable(names: str, what: str, footprint: int) -> None:
    """A layout must fit shared memory's 32-bit byte addresses (the model refuses any from 2**32 on). Why at
    construction: offsets are computed in int64, and a larger layout's wrapped silently (rows 2**64 bytes
    apart all landed on byte 0, scored as a broadcast) instead of being refused."""
    if footprint > ADDRESS_LIMIT:
        raise ValueError(
            f"{names}: {what} spans {footprint:,} bytes; shared memory is addressed with 32 bits (byte "
            f"offsets below 2**32)"
        )


def _log2(x: int) -> int:
    return x.bit_length() - 1


def _vector_check(vec: int, elem_bytes: int) -> Legality:
    if not _is_int(vec) or not _pow2(int(vec)):
        return Legality(False, f"vector width {vec} is not a power of two")
    if vec * elem_bytes > 16:
        return Legality(False, f"vector of {vec} x {elem_bytes} bytes exceeds the 16-byte access limit")
    return _OK


def _budget_check(footprint: int, budget: int | None) -> Legality:
    budget = _DEFAULT_BUDGET if budget is None else budget
    if footprint > budget:
        return Legality(
            False, f"footprint {footprint} bytes exceeds the shared-memory budget of {budget} bytes"
        )
    return _OK
