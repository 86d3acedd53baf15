"""The layout's parameters as exporters use them: the checked layout spec of a result, the element offset
it gives (the formula the header's ``SMEM_OFF`` macro spells), its footprint, and its CuTe swizzle.

Why apart: the header and the Python module both need the same validated spec; a spec read from a result
file is untrusted, so every field is range-checked here once (``_check_spec``) before any text is made.
"""

from __future__ import annotations

import re
from typing import Any

from ..results import TuneResult
from .escaping import _INT32

_LIMIT = 1 << 20  # largest tile extent, pad or swizzle parameter accepted from a layout spec


def _extra(result: TuneResult) -> dict[str, Any]:
    extra = result.best.extra
    return extra if isinstance(extra, dict) else {}


def _pow2(x: int) -> bool:
    return x > 0 and x & (x - 1) == 0


def _int(spec: dict[str, Any], key: str, lo: int, hi: int, default: Any = ...) -> int:
    v = spec.get(key, default)
    if v is ...:
        raise ValueError(f"layout_spec: {spec.get('kind')!r} needs {key!r}")
    if hasattr(v, "item") and not isinstance(v, (bool, int)):
        v = v.item()
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise ValueError(f"layout_spec: {key} must be an int in [{lo}, {hi}], got {v!r}")
    return int(v)


def _flag(spec: dict[str, Any], key: str) -> bool:
    v = spec.get(key, False)
    if v not in (True, False, 0, 1):
        raise ValueError(f"layout_spec: {key} must be true or false, got {v!r}")
    return bool(v)


def _check_spec(spec: Any) -> dict[str, Any] | None:
    """``spec`` validated and normalised (ints, bools); None for a kind this autopad does not know."""
    if not isinstance(spec, dict):
        raise ValueError(f"layout_spec: expected a dict with a 'kind', got {type(spec).__name__}")
    kind = spec.get("kind")
    eb = (1, 2, 4, 8)
    if kind == "tile":
        out: dict[str, Any] = {"kind": "tile"}
        for key in ("rows", "cols"):
            out[key] = _int(spec, key, 1, _LIMIT) if spec.get(key) is not None or key == "cols" else None
        out["elem_bytes"] = _int(spec, "elem_bytes", 1, 8) if spec.get("elem_bytes") is not None else None
        if out["elem_bytes"] is not None and out["elem_bytes"] not in eb:
            raise ValueError(f"layout_spec: elem_bytes must be one of {eb}, got {out['elem_bytes']}")
        out["pad"] = _int(spec, "pad", 0, _LIMIT, 0)
        for key in ("sw_vec", "per_phase", "max_phase"):
            out[key] = _int(spec, key, 1, _LIMIT, 1)
            if not _pow2(out[key]):
                raise ValueError(f"layout_spec: {key} must be a power of two, got {out[key]}")
        if out["max_phase"] > 1 and out["cols"] % (out["sw_vec"] * out["max_phase"]):
            raise ValueError(
                f"layout_spec: {out['cols']} columns are not a multiple of sw_vec x max_phase = "
                f"{out['sw_vec'] * out['max_phase']}, so the swizzle would leave the row"
            )
    elif kind == "replicated":
        out = {
            "kind": "replicated",
            "bins": _int(spec, "bins", 1, 1 << 24),
            "replicas": _int(spec, "replicas", 1, 1 << 16, 1),
            "elem_bytes": _int(spec, "elem_bytes", 1, 8, 4),
            "interleaved": _flag(spec, "interleaved"),
            "pad": _int(spec, "pad", 0, _LIMIT, 0),
        }
        if out["elem_bytes"] not in eb:
            raise ValueError(f"layout_spec: elem_bytes must be one of {eb}, got {out['elem_bytes']}")
    elif kind == "structs":
        fields = spec.get("fields", [4])
        if not isinstance(fields, (list, tuple)) or not 1 <= len(fields) <= 64:
            raise ValueError(f"layout_spec: fields must be a list of 1 to 64 byte sizes, got {fields!r}")
        sizes = [_int({"f": f}, "f", 1, 16) for f in fields]
        out = {
            "kind": "structs",
            "count": _int(spec, "count", 1, 1 << 24),
            "fields": sizes,
            "aos": _flag(spec, "aos") if "aos" in spec else True,
            "pad": _int(spec, "pad", 0, _LIMIT, 0),
        }
        from ..layouts import Structs

        out["_layout"] = Structs(out["count"], tuple(sizes), out["aos"], out["pad"])  # validates the rest
    else:
        return None
    foot = _footprint(out)
    if foot is not None and foot >= _INT32:
        raise ValueError(f"layout_spec: footprint of {foot} bytes does not fit a 32-bit offset")
    return out


def _elem_bytes(dtype: Any) -> int | None:
    try:
        from ..spec import DTYPE_BYTES
    except ImportError:  # pragma: no cover
        return None
    return DTYPE_BYTES.get(str(dtype))


def layout_spec(result: TuneResult) -> dict[str, Any] | None:
    """The best layout's parameters, validated: ``best.extra["layout_spec"]``, else (older results) a tile
    from the constants ``TILE_N`` and ``PAD`` (with ``SW_VEC``/``SW_PER_PHASE``/``SW_MAX_PHASE``,
    ``TILE_M``); None when neither says. A bad ``layout_spec`` is a ``ValueError``."""
    extra = _extra(result)
    if extra.get("layout_spec") is not None:
        return _check_spec(extra["layout_spec"])
    c = result.best.constants
    if "TILE_N" not in c or "PAD" not in c:
        return None
    guess = {
        "kind": "tile",
        "rows": c.get("TILE_M"),
        "cols": c["TILE_N"],
        "elem_bytes": _elem_bytes(result.dtype),
        "pad": c["PAD"],
        "sw_vec": c.get("SW_VEC", 1),
        "per_phase": c.get("SW_PER_PHASE", 1),
        "max_phase": c.get("SW_MAX_PHASE", 1),
    }
    try:
        return _check_spec(guess)
    except ValueError:
        return None  # constants that only look like a tile's


def _footprint(spec: dict[str, Any]) -> int | None:
    k = spec["kind"]
    if k == "tile":
        if spec["rows"] is None or spec["elem_bytes"] is None:
            return None
        return spec["rows"] * (spec["cols"] + spec["pad"]) * spec["elem_bytes"]
    if k == "replicated":
        if spec["interleaved"]:
            return spec["bins"] * (spec["replicas"] + spec["pad"]) * spec["elem_bytes"]
        return spec["replicas"] * (spec["bins"] + spec["pad"]) * spec["elem_bytes"]
    return int(spec["_layout"].footprint)


def spec_offset(spec: dict[str, Any], r: int, c: int) -> int:
    """The offset of (r, c) under ``spec`` (from ``layout_spec``): elements for tiles and replicated
    arrays, bytes for structs (record r, field c). The same formula the header's macros spell."""
    k = spec["kind"]
    if k == "tile":
        v, pp, mp = spec["sw_vec"], spec["per_phase"], spec["max_phase"]
        return r * (spec["cols"] + spec["pad"]) + ((c // v) ^ ((r // pp) % mp)) * v + c % v
    if k == "replicated":
        if spec["interleaved"]:
            return c * (spec["replicas"] + spec["pad"]) + r
        return r * (spec["bins"] + spec["pad"]) + c
    base, step = _struct_table(spec)
    return base[c] + r * step[c]


def _struct_table(spec: dict[str, Any]) -> tuple[list[int], list[int]]:
    """Per field f: the byte offset of record 0 and the step per record, read off autopad's own layout."""
    import numpy as np

    lay = spec["_layout"]
    f = np.arange(len(spec["fields"]))
    o0 = lay.offsets(np.zeros_like(f), f)
    o1 = lay.offsets(np.ones_like(f), f) if spec["count"] > 1 else o0 + np.asarray(spec["fields"])
    return [int(x) for x in o0], [int(x) for x in o1 - o0]


def _cute_of_spec(spec: dict[str, Any] | None) -> tuple[int, int, int] | None:
    """CuTe ``Swizzle<B, M, S>`` on the element offset ``r * cols + c`` when it equals the tile's layout."""
    if not spec or spec["kind"] != "tile" or spec["pad"] or spec["max_phase"] == 1 or not _pow2(spec["cols"]):
        return None
    v, pp, mp, cols = spec["sw_vec"], spec["per_phase"], spec["max_phase"], spec["cols"]
    b, m, s = mp.bit_length() - 1, v.bit_length() - 1, (cols * pp // v).bit_length() - 1
    if s < b or cols * pp % v:
        return None  # CuTe requires |S| >= B
    import numpy as np

    rows = min(spec["rows"] or 2 * pp * mp, 4 * pp * mp)
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    o = r * cols + c
    cute = o ^ ((o >> s) & (((1 << b) - 1) << m))
    ours = r * cols + ((c // v) ^ ((r // pp) % mp)) * v + c % v
    return (b, m, s) if bool((cute == ours).all()) else None


def _cute(result: TuneResult) -> tuple[int, int, int] | None:
    """The CuTe swizzle: from ``extra['layout_spec']`` if any (exact or None), else
    ``extra['cute_swizzle']``, else from the tile the constants describe."""
    extra = _extra(result)
    if extra.get("layout_spec") is not None:
        return _cute_of_spec(layout_spec(result))
    v = extra.get("cute_swizzle", extra.get("cute"))
    if v is None:
        return _cute_of_spec(layout_spec(result))  # an older result's tile, from its constants
    if isinstance(v, str):
        v = re.findall(r"-?[0-9]+", v)
    try:
        b, m, s = (int(x) for x in v)
    except (TypeError, ValueError):
        raise ValueError(f"cute_swizzle: expected [B, M, S] or 'Swizzle<B,M,S>', got {v!r}") from None
    if not (0 <= b < 32 and 0 <= m < 32 and -32 < s < 32):
        raise ValueError(f"cute_swizzle: Swizzle<{b},{m},{s}> is out of range")
    return b, m, s
