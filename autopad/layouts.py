"""Shared-memory layouts: logical index -> byte offset, footprint, and legality.

A layout says where element ``(row, col)`` of a logical tile lives in shared memory. It is a pure function:
every layout here is a frozen dataclass with a vectorised ``offsets(rows, cols)`` (numpy in, byte offsets
out), a ``footprint`` in bytes and a ``check(vec, budget)`` that says whether a kernel accessing it ``vec``
elements at a time can use it, and why not. Parameters are validated once, at construction: a layout that
exists is a bijection onto distinct element slots. The CUDA kernels take the same layouts as macros
(``cuda_defines``, read by common.cuh's ``AP_SMEM_OFF``); the Gluon kernels take them as
``gl.*SharedLayout`` objects (``gluon_spec``). One formula covers row padding and XOR swizzles, alone or
together, so the model and the kernels cannot drift apart:

    offset(r, c) = r * (cols + pad) + (((c // vec) ^ ((r // per_phase) % max_phase)) * vec + c % vec)

in elements, times the element size. With ``max_phase = 1`` the XOR term is zero (plain padding); with
``pad = 0`` it is Gluon's ``SwizzledSharedLayout``. Why it works: a column walk of a 32-wide fp32 tile steps
32 words, one full turn of the 32 banks, so every lane lands in one bank; padding by one word shifts each
row one bank on; the XOR swizzle instead permutes the ``vec``-element chunks of each row so that
consecutive rows start in different banks without costing memory. Both at once (CuTe's
``composition(Swizzle, Layout)``) is ``Tile(..., pad=P, swizzle=Swizzle(...))``, also spelt
``Padded(...).swizzled(sw)`` or ``sw @ Padded(...)``; ``Padded`` and ``Swizzled`` are its two special cases.

``to_dict`` / ``from_dict`` give every layout a validated JSON form (the export writer stores it).

Where each part lives (layouts.py was split, one concern a module; every name it defined is still importable
from here): layout_checks.py (``Legality`` and the parameter checks), layout_swizzle.py (``Swizzle``,
``CuteSwizzle``), layout_tile.py (``Tile``, ``Padded``, ``Swizzled``, ``compose``), layout_arrays.py
(``Structs``, ``Replicated``); here, the ``Layout`` type and the JSON form.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# besides what this module uses, the names layouts.py defined before the split, importable from here as
# before (other modules and tests use some of the private ones)
from .layout_arrays import Replicated, Structs
from .layout_checks import (  # noqa: F401
    _DEFAULT_BUDGET,
    _OK,
    ELEM_BYTES,
    Legality,
    _budget_check,
    _elem,
    _is_int,
    _log2,
    _pad,
    _positive,
    _pow2,
    _pow2_param,
    _vector_check,
)
from .layout_swizzle import _SWIZZLES, CuteSwizzle, Swizzle, _cute_xor  # noqa: F401
from .layout_tile import Padded, Swizzled, Tile, _Tile, _tile, compose  # noqa: F401

__all__ = [
    "Legality",
    "Swizzle",
    "CuteSwizzle",
    "Tile",
    "Padded",
    "Swizzled",
    "Structs",
    "Replicated",
    "Layout",
    "compose",
    "from_dict",
    "ELEM_BYTES",
]


Layout = Tile | Structs | Replicated

# ---- JSON form ------------------------------------------------------------------------------------------

_SCHEMA: dict[str, tuple[tuple[str, type], ...]] = {
    "tile": tuple(
        (k, int) for k in ("rows", "cols", "elem_bytes", "pad", "sw_vec", "per_phase", "max_phase")
    ),
    "replicated": (
        ("bins", int),
        ("replicas", int),
        ("elem_bytes", int),
        ("interleaved", bool),
        ("pad", int),
    ),
    "structs": (("count", int), ("fields", list), ("aos", bool), ("pad", int)),
}


def from_dict(d: Mapping[str, Any]) -> Layout:
    """The layout a ``to_dict()`` wrote, validated: exactly the fields of its kind, ints that are ints (a bool
    is not), bools that are bools, and every range the constructors check. ValueError names the field.

    A tile comes back as the most specific class (Padded without a swizzle, Swizzled without padding, else
    Tile); tiles compare by parameters, so ``from_dict(x.to_dict()) == x`` for every layout ``x``.
    """
    if not isinstance(d, Mapping):
        raise ValueError(f"layout: expected a dict with a 'kind', got {type(d).__name__}")
    kind = d.get("kind")
    if kind not in _SCHEMA:
        raise ValueError(f"kind: {kind!r} is not one of {', '.join(map(repr, _SCHEMA))}")
    schema = dict(_SCHEMA[kind])
    for key in d:
        if key != "kind" and key not in schema:
            raise ValueError(f"{key}: not a field of a {kind} layout (fields: {', '.join(schema)})")
    values: dict[str, Any] = {}
    for key, want in schema.items():
        if key not in d:
            raise ValueError(f"{key}: missing from the {kind} layout")
        v = d[key]
        if want is int and not _is_int(v):
            raise ValueError(f"{key}: must be an int, got {v!r}")
        if want is bool and not isinstance(v, bool):
            raise ValueError(f"{key}: must be true or false, got {v!r}")
        if want is list and (not isinstance(v, (list, tuple)) or not all(_is_int(f) for f in v)):
            raise ValueError(f"fields: must be a list of byte sizes (ints), got {v!r}")
        values[key] = v
    if kind == "replicated":
        return Replicated(**values)
    if kind == "structs":
        return Structs(values["count"], tuple(values["fields"]), values["aos"], values["pad"])
    sw = Swizzle(*(_pow2_param(k, values[k]) for k in ("sw_vec", "per_phase", "max_phase")))
    return _tile(values["rows"], values["cols"], values["elem_bytes"], values["pad"], sw)
