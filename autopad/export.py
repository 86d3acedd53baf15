"""Writers for a tuning result: JSON (everything), a C/CUDA header, a Python module; per-device headers.

Why: the tuned constants have to reach code that never imports autopad, with no glue: a CUDA kernel takes
them as ``#define``s (as in Kernel Tuner) plus the layout's offset macro, a Triton kernel as
``tl.constexpr`` globals and a ``triton.Config``, a Gluon kernel as its ``gl.*SharedLayout``, a CuTe kernel
as its ``cute::Swizzle<B, M, S>``. The JSON keeps every candidate and the environment, so a result can be
reloaded (``load_result``) and re-exported later.

- ``.json``: ``TuneResult.to_dict()`` with sorted keys: the same result always gives the same bytes, and
  any string round-trips (non-ASCII and control characters are escaped).
- ``.h``: ``AUTOPAD_<KERNEL>_<NAME>`` per constant, ``_LAYOUT`` (a string), and from the layout's
  parameters (``best.extra["layout_spec"]``, else the constants PAD/SW_*/TILE_N) the offset macro
  ``_SMEM_OFF(r, c)`` in elements, ``_SMEM_BYTE_OFF``, ``_SMEM_BYTES`` and the parameters; the CuTe
  ``_CUTE_SWIZZLE`` when it is exact; ``autopad_<kernel>_config_for_cc(cc)``, the same values as a struct.
- ``.py``: the constants as ints that are also ``tl.constexpr`` (so ``from cfg import BM`` works inside
  ``@triton.jit``), ``CONSTANTS``, ``CONFIG`` (only the kernel's own arguments), ``NUM_WARPS``,
  ``NUM_STAGES``, ``triton_config()``, ``gluon_layout()`` and what was tuned (``DEVICE``, ``SHAPE`` ...).
- ``merge_header``: one header for several devices' results of one kernel, in which host and device code
  can never see different constants (see its docstring).

No string of a result can escape where it is written: comments carry printable ASCII only, with escapes
that can neither end the line, continue it (a trailing backslash) nor form a trigraph or ``*/``; C strings
use octal escapes; Python literals are ``ascii()``; names are reduced to identifiers or rejected. Files
are written by ``files.write_file``: atomically, never through a symlink, never over a different file
unless ``overwrite=True``.
"""

from __future__ import annotations

import json
import keyword
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .files import write_file
from .results import TuneResult

__all__ = [
    "FORMATS",
    "render",
    "export_result",
    "load_result",
    "merge_header",
    "render_header",
    "render_merged_header",
    "render_python",
    "render_json",
    "layout_spec",
    "spec_offset",
    "c_name",
    "device_macro",
]

FORMATS = (".json", ".h", ".py")
_META = (
    "KERNEL",
    "BACKEND",
    "DEVICE",
    "CC",
    "SHAPE",
    "DTYPE",
    "DIST",
    "ARCH",
    "MODE",
    "LAYOUT",
    "MEASURED_MS",
    "PREDICTED_S",
    "MESSAGE",
    "ENVIRONMENT",
)
PY_RESERVED = _META + (
    "CONSTANTS",
    "CONFIG",
    "NUM_WARPS",
    "NUM_STAGES",
    "LAUNCH",
    "LAYOUT_SPEC",
    "CUTE_SWIZZLE",
    "GLUON_LAYOUT",
)
_COMMENT_MAX = 240  # characters of one result string in a comment
_CSTRING_MAX = 1000  # bytes of the layout description in the _LAYOUT string
_LIMIT = 1 << 20  # largest tile extent, pad or swizzle parameter accepted from a layout spec
_INT32 = 1 << 31


# ---- text that cannot escape --------------------------------------------------------------------------


def c_name(text: Any) -> str:
    """``text`` as an upper-case C identifier fragment: runs of other characters become one underscore."""
    out = re.sub(r"[^A-Za-z0-9]+", "_", str(text)).strip("_").upper()
    if not out:
        raise ValueError(f"name: {text!r} has no letters or digits to make a C identifier from")
    return out


def device_macro(gpu: str) -> str:
    """The macro picking a device's block of a merged header: "NVIDIA H200" -> AUTOPAD_DEVICE_NVIDIA_H200."""
    return f"AUTOPAD_DEVICE_{c_name(gpu)}"


def _comment(text: Any, limit: int = _COMMENT_MAX) -> str:
    """``text`` as printable ASCII safe in a ``//`` or ``#`` comment line.

    Whitespace runs (CR, LF, tab, form feed, U+2028 ...) become one space; every other character outside
    printable ASCII, and the backslash, becomes a ``\\xNN``/``\\uNNNN`` escape, which ends in a hex digit,
    so the line can never end in a backslash (a C line continuation); the second ``?`` of ``??`` and the
    ``*``/``/`` of ``/*`` and ``*/`` are escaped too (no trigraph, no comment delimiter). At most ``limit``
    characters of the text are kept.
    """
    out: list[str] = []
    prev, size = " ", 0
    for ch in " ".join(str(text).split()):
        if size >= limit:
            out.append("...")
            break
        o = ord(ch)
        if ch == "\\" or not 0x20 <= o < 0x7F:
            piece = f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"
        elif (ch == "?" and prev == "?") or (ch == "*" and prev == "/") or (ch == "/" and prev == "*"):
            piece = f"\\x{o:02x}"
        else:
            piece = ch
        out.append(piece)
        prev, size = piece[-1], size + 1
    return "".join(out)


def _c_string(text: Any, limit: int = _CSTRING_MAX) -> str:
    """A C string literal of ``text`` (UTF-8): printable ASCII kept, quote, backslash and ``?`` escaped,
    every other byte in octal."""
    data = str(text).encode("utf-8", "backslashreplace")
    if len(data) > limit:
        data = data[:limit] + b"..."
    out = ['"']
    for b in data:
        ch = chr(b)
        if ch in '"\\?':
            out.append("\\" + ch)
        elif 0x20 <= b < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\{b:03o}")  # exactly three digits: the next character cannot extend it
    return "".join(out) + '"'


def _c_int(v: int) -> str:
    """A C integer literal with the value ``v`` (int, else long long); negative ones in parentheses."""
    if v == -_INT32:
        return "(-2147483647 - 1)"
    if -_INT32 < v < _INT32:
        return str(v) if v >= 0 else f"({v})"
    if -(1 << 63) < v < (1 << 63):
        return f"{v}LL" if v >= 0 else f"({v}LL)"
    raise ValueError(f"constants: {v} does not fit in a 64-bit C integer")


def _py(value: Any, depth: int = 0) -> str:
    """A Python literal for ``value`` in pure ASCII: strings via ``ascii()``, inf/nan as float('inf')."""
    if depth > 32:
        raise ValueError("value: nested more than 32 levels deep")
    if hasattr(value, "item") and not isinstance(value, (list, tuple, dict, str)):
        value = value.item()  # numpy scalars
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return repr(int(value))
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f"float({str(value)!r})"
    if isinstance(value, str):
        return ascii(value)
    if isinstance(value, (list, tuple)):
        items = [_py(v, depth + 1) for v in value]
        if isinstance(value, tuple):
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        return "[" + ", ".join(items) + "]"
    if isinstance(value, dict):
        pairs = []
        for k, v in value.items():
            key = k if isinstance(k, (str, int, float, bool)) or k is None else str(k)
            pairs.append(f"{_py(key, depth + 1)}: {_py(v, depth + 1)}")
        return "{" + ", ".join(pairs) + "}"
    return ascii(str(value))


# ---- what a result says -------------------------------------------------------------------------------


def _device(result: TuneResult) -> dict[str, Any]:
    return result.device if isinstance(result.device, dict) else {}


def _cc(device: dict[str, Any]) -> str:
    """Compute capability as digits ("90"), from "90", "9.0", 90 or (9, 0); "" when unknown."""
    cc = device.get("cc", "")
    if isinstance(cc, (tuple, list)):
        cc = "".join(str(int(x)) for x in cc)
    digits = re.sub(r"[^0-9]", "", str(cc if cc is not None else "")).lstrip("0")
    if len(digits) > 4:
        raise ValueError(f"device: compute capability {cc!r} is not a version like 9.0 or 90")
    return digits


def _gpu(result: TuneResult) -> str:
    name = _device(result).get("name")
    return "" if name is None else str(name)


def _shape(result: TuneResult) -> str:
    try:
        return "x".join(str(d) for d in result.shape)
    except TypeError:
        return str(result.shape)


def _gluon(extra: dict[str, Any]) -> str | None:
    """The Gluon layout spelling from ``extra['gluon_layout']`` (a string, or a ``gluon_spec()`` dict)."""
    v = extra.get("gluon_layout", extra.get("gluon"))
    if v is None or isinstance(v, str):
        return v
    try:
        if v.get("kind") == "swizzled":
            return (
                f"gl.SwizzledSharedLayout(vec={int(v['vec'])}, per_phase={int(v['per_phase'])}, "
                f"max_phase={int(v['max_phase'])}, order={[int(x) for x in v['order']]})"
            )
        if v.get("kind") == "padded":
            return (
                "gl.PaddedSharedLayout.with_identity_for("
                f"{[[int(x) for x in p] for p in v['interval_padding']]}, {[int(x) for x in v['shape']]}, "
                f"{[int(x) for x in v['order']]})"
            )
    except (AttributeError, KeyError, TypeError, ValueError):
        pass
    return json.dumps(v, sort_keys=True, default=str)


def _extra(result: TuneResult) -> dict[str, Any]:
    extra = result.best.extra
    return extra if isinstance(extra, dict) else {}


def _constants(result: TuneResult) -> dict[str, int]:
    """The best constants under their upper-case identifier names (clashes are an error, not a surprise)."""
    out: dict[str, int] = {}
    for name, value in sorted(result.best.constants.items(), key=lambda kv: str(kv[0])):
        n = c_name(name)
        if n[0].isdigit():
            raise ValueError(f"constants: {name!r} starts with a digit, so it cannot be an identifier")
        if n in out:
            raise ValueError(f"constants: {name!r} and another constant both become {n!r} as identifiers")
        if isinstance(value, bool) or not isinstance(value, int):
            value = int(value)
        out[n] = value
    return out


def _fmt_time(value: Any, scale: float, unit: str, missing: str) -> str:
    if value is None:
        return missing
    try:
        v = float(value) * scale
    except (TypeError, ValueError):
        return str(value)
    return f"{v:.4g} {unit}" if math.isfinite(v) else "n/a"


def _describe(result: TuneResult) -> list[str]:
    """What was tuned, one line each; raw text (``_comment`` makes it safe)."""
    b = result.best
    cc = _cc(_device(result))
    lines = [
        f"kernel {result.kernel} [{result.backend}] on {_gpu(result) or 'no GPU'}"
        + (f" (sm_{cc})" if cc else ""),
        f"shape {_shape(result)}, dtype {result.dtype}"
        + (f", dist {result.dist}" if result.dist else "")
        + f", arch {result.arch}, mode {result.mode}",
        f"layout: {b.layout}; measured {_fmt_time(b.measured, 1, 'ms', 'not measured')}, "
        f"predicted {_fmt_time(b.predicted, 1e3, 'ms', 'n/a')}",
    ]
    cute = _cute(result)
    if cute:
        lines.append("CuTe: cute::Swizzle<{}, {}, {}>".format(*cute))
    gluon = _gluon(_extra(result))
    if gluon:
        lines.append(f"Gluon: {gluon}")
    if result.message:
        lines.append(f"message: {result.message}")
    env = result.environment if isinstance(result.environment, dict) else {}
    if env:
        lines.append("environment: " + ", ".join(f"{k}={v}" for k, v in env.items()))
    return lines


# ---- the layout's parameters --------------------------------------------------------------------------


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
        from .layouts import Structs

        out["_layout"] = Structs(out["count"], tuple(sizes), out["aos"], out["pad"])  # validates the rest
    else:
        return None
    foot = _footprint(out)
    if foot is not None and foot >= _INT32:
        raise ValueError(f"layout_spec: footprint of {foot} bytes does not fit a 32-bit offset")
    return out


def _elem_bytes(dtype: Any) -> int | None:
    try:
        from .spec import DTYPE_BYTES
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


# ---- the macros of one result -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Macro:
    """One ``#define``: an int, a string, a function of (r, c) or a type; ``field`` names it in the struct."""

    suffix: str  # the name after the prefix
    kind: str  # "int" | "str" | "func" | "type"
    body: str  # replacement text (a function's uses its parameters)
    value: Any = None  # int or str, for the struct and for comparing blocks
    params: tuple[str, ...] = ()


def _layout_macros(spec: dict[str, Any], prefix: str) -> list[_Macro]:
    k = spec["kind"]
    out: list[_Macro] = []

    def num(name: str, v: int | None) -> None:
        if v is not None:
            out.append(_Macro(name, "int", _c_int(int(v)), int(v)))

    foot = _footprint(spec)
    if k == "tile":
        stride = spec["cols"] + spec["pad"]
        for key in ("rows", "cols", "elem_bytes", "pad", "sw_vec", "per_phase", "max_phase"):
            num(f"SMEM_{key.upper()}", spec[key])
        num("SMEM_ROW_STRIDE", stride)
        num("SMEM_ELEMS", spec["rows"] * stride if spec["rows"] else None)
        v, pp, mp = spec["sw_vec"], spec["per_phase"], spec["max_phase"]
        if mp == 1:
            off = f"((r) * {stride} + (c))"
        else:
            off = f"((r) * {stride} + (((((c) / {v}) ^ (((r) / {pp}) % {mp})) * {v}) + ((c) % {v})))"
        params = ("r", "c")
    elif k == "replicated":
        for key in ("bins", "replicas", "elem_bytes", "pad"):
            num(f"SMEM_{key.upper()}", spec[key])
        num("SMEM_INTERLEAVED", int(spec["interleaved"]))
        num("SMEM_ELEMS", foot // spec["elem_bytes"])
        if spec["interleaved"]:
            off = f"((c) * {spec['replicas'] + spec['pad']} + (r))"
        else:
            off = f"((r) * {spec['bins'] + spec['pad']} + (c))"
        params = ("r", "c")
    else:
        num("SMEM_COUNT", spec["count"])
        num("SMEM_FIELDS", len(spec["fields"]))
        num("SMEM_AOS", int(spec["aos"]))
        num("SMEM_PAD", spec["pad"])
        if spec["aos"]:
            num("SMEM_STRIDE", spec["_layout"].stride)
        num("SMEM_BYTES", foot)
        base, step = _struct_table(spec)
        terms = [f"{b} + (i) * {s}" for b, s in zip(base, step)]
        expr = terms[-1]
        for f in range(len(terms) - 2, -1, -1):
            expr = f"(f) == {f} ? {terms[f]} : {expr}"
        out.append(_Macro("SMEM_BYTE_OFF", "func", f"({expr})", None, ("i", "f")))
        return out
    num("SMEM_BYTES", foot)
    out.append(_Macro("SMEM_OFF", "func", off, None, params))
    eb = spec["elem_bytes"]
    if eb is not None:
        out.append(_Macro("SMEM_BYTE_OFF", "func", f"({off} * {eb})", None, params))
    return out


def _block(result: TuneResult, prefix: str) -> list[_Macro]:
    """Every macro ``result`` defines, in order; a name defined twice is an error."""
    macros = [_Macro(n, "int", _c_int(v), v) for n, v in _constants(result).items()]
    macros.append(_Macro("LAYOUT", "str", _c_string(result.best.layout), str(result.best.layout)))
    spec = layout_spec(result)
    if spec is not None:
        macros += _layout_macros(spec, prefix)
    cute = _cute(result)
    if cute is not None:
        for part, v in zip("BMS", cute):
            macros.append(_Macro(f"CUTE_SWIZZLE_{part}", "int", _c_int(v), v))
        macros.append(_Macro("CUTE_SWIZZLE", "type", "cute::Swizzle<{}, {}, {}>".format(*cute), cute))
    seen: set[str] = set()
    for m in macros:
        if m.suffix in seen:
            raise ValueError(
                f"constants: {prefix}_{m.suffix} would be defined twice (a constant named {m.suffix!r} "
                "clashes with a macro autopad generates); rename the constant"
            )
        seen.add(m.suffix)
    return macros


def _define(prefix: str, m: _Macro, indent: str = "", body: str | None = None) -> str:
    args = "(" + ", ".join(m.params) + ")" if m.params else ""
    return f"{indent}#define {prefix}_{m.suffix}{args} {m.body if body is None else body}"


# ---- C header -----------------------------------------------------------------------------------------

_FN = """\
#ifndef AUTOPAD_FN_
#  if defined(__cplusplus) && (__cplusplus >= 201402L || (defined(_MSVC_LANG) && _MSVC_LANG >= 201402L))
#    define AUTOPAD_CXX14_ 1
#  else
#    define AUTOPAD_CXX14_ 0
#  endif
#  if AUTOPAD_CXX14_ && defined(__CUDACC__)
#    define AUTOPAD_FN_ __host__ __device__ inline constexpr
#  elif AUTOPAD_CXX14_
#    define AUTOPAD_FN_ inline constexpr
#  else
#    define AUTOPAD_FN_ static inline
#  endif
#endif"""


def _guard(path: Path) -> str:
    try:
        return f"AUTOPAD_GUARD_{c_name(path.name)}_"
    except ValueError:
        return "AUTOPAD_GUARD_HEADER_"


def _version() -> str:
    from . import __version__

    return _comment(__version__, 40)


def _fields(blocks: list[list[_Macro]]) -> list[tuple[str, str]]:
    """(C type, name) of the struct's value fields: every int macro, then the layout string."""
    out = []
    for m in blocks[0]:
        if m.kind == "int":
            values = [next(x.value for x in b if x.suffix == m.suffix) for b in blocks]
            ctype = "int" if all(-_INT32 <= v < _INT32 for v in values) else "long long"
            out.append((ctype, m.suffix))
    return out


def _table(k: str, blocks: list[list[_Macro]], ccs: list[int]) -> list[str]:
    """The struct ``autopad_<k>_config`` and one function per block returning its row."""
    fields = _fields(blocks)
    lines = [
        f"typedef struct autopad_{k}_config {{",
        "  int found;  /* 1 when a tuned block applies */",
        "  int cc;     /* compute capability the block was tuned on (major * 10 + minor), 0 if none */",
    ]
    lines += [f"  {t} {name};" for t, name in fields]
    lines += ["  const char *layout;", f"}} autopad_{k}_config;", ""]
    zero = ", ".join(["0"] * (len(fields) + 3))
    lines += [
        f"AUTOPAD_FN_ autopad_{k}_config autopad_{k}_none(void) {{",
        f"  autopad_{k}_config c = {{{zero}}};",
        "  return c;",
        "}",
    ]
    for i, (block, cc) in enumerate(zip(blocks, ccs)):
        by = {m.suffix: m for m in block}
        values = ", ".join([f"1, {cc}"] + [by[name].body for _, name in fields] + [by["LAYOUT"].body])
        lines += [
            f"AUTOPAD_FN_ autopad_{k}_config autopad_{k}_block_{i}(void) {{",
            f"  autopad_{k}_config c = {{{values}}};",
            "  return c;",
            "}",
        ]
    return lines


def _cute_typedef(prefix: str, k: str) -> list[str]:
    return [
        "#if defined(__cplusplus) && (defined(AUTOPAD_WITH_CUTE) || defined(CUTE_HOST_DEVICE))",
        f"typedef {prefix}_CUTE_SWIZZLE autopad_{k}_cute_swizzle;  /* needs CuTe included first */",
        "#endif",
    ]


def _usage(prefix: str, k: str, block: list[_Macro]) -> list[str]:
    names = {m.suffix for m in block}
    lines = [
        f"// Use: {prefix}_<NAME> for each constant (host and device code alike), or",
        f"// autopad_{k}_config_for_cc(cc) for the same values as a struct (cfg.THREADS ...).",
    ]
    if "SMEM_OFF" in names:
        lines += [
            f"// {prefix}_SMEM_OFF(r, c) is the offset of element (r, c) of the shared tile in elements",
            f"// ({prefix}_SMEM_BYTE_OFF(r, c) in bytes); {prefix}_SMEM_BYTES is its size:",
            f"//   __shared__ __align__(16) unsigned char smem[{prefix}_SMEM_BYTES];",
            "//   float *tile = (float *)smem;",
            f"//   tile[{prefix}_SMEM_OFF(r, c)] = x;",
        ]
    elif "SMEM_BYTE_OFF" in names:
        lines.append(f"// {prefix}_SMEM_BYTE_OFF(i, f) is the byte offset of field f of record i.")
    if "CUTE_SWIZZLE" in names:
        lines += [
            f"// {prefix}_CUTE_SWIZZLE is the layout as a CuTe type; with CuTe included first",
            f"// (or AUTOPAD_WITH_CUTE defined) also the typedef autopad_{k}_cute_swizzle.",
        ]
    return lines


def render_header(result: TuneResult, path: str | Path = "autopad.h") -> str:
    """The text of ``result``'s C/CUDA header (``path`` only names the include guard)."""
    guard = _guard(Path(path))
    prefix = f"AUTOPAD_{c_name(result.kernel)}"
    k = prefix[len("AUTOPAD_") :].lower()
    block = _block(result, prefix)
    cc = _cc(_device(result))
    lines = [f"// Generated by autopad {_version()}: shared-memory layout constants. Do not edit."]
    lines += [f"// {_comment(line)}" for line in _describe(result)]
    lines += ["//", *_usage(prefix, k, block)]
    lines += [f"#ifndef {guard}", f"#define {guard}", ""]
    lines += [_define(prefix, m) for m in block]
    lines += ["", _FN, ""]
    lines += _table(k, [block], [int(cc or 0)])
    lines += [
        f"AUTOPAD_FN_ autopad_{k}_config autopad_{k}_config_for_cc(int cc) {{",
        "  (void)cc;  /* one result: the same values on every device */",
        f"  return autopad_{k}_block_0();",
        "}",
    ]
    if any(m.suffix == "CUTE_SWIZZLE" for m in block):
        lines += _cute_typedef(prefix, k)
    lines += ["", f"#endif  // {guard}", ""]
    return "\n".join(lines)


# ---- merged header: host and device agree ---------------------------------------------------------------


def _label(i: int, r: TuneResult, sources: Sequence[str] | None) -> str:
    where = f"{sources[i]}" if sources is not None and i < len(sources) else f"result {i + 1}"
    cc = _cc(_device(r))
    return f"{where} ({_gpu(r) or 'no GPU'}" + (f", sm_{cc})" if cc else ")")


def _identity(r: TuneResult) -> str:
    gpu, cc = _gpu(r), _cc(_device(r))
    if gpu:
        return f"device {device_macro(gpu)}"
    return f"compute capability {cc}" if cc else "no GPU"


def _check_merge(results: list[TuneResult], sources: Sequence[str] | None) -> None:
    def lab(i: int) -> str:
        return _comment(_label(i, results[i], sources), 120)  # printable: no control characters in errors

    for what, get in (
        ("kernel", lambda r: r.kernel),
        ("backend", lambda r: r.backend),
        ("dtype", lambda r: r.dtype),
    ):
        values = [str(get(r)) for r in results]
        if len(set(values)) > 1:
            listing = "; ".join(f"{lab(i)}: {_comment(v, 60)}" for i, v in enumerate(values))
            raise ValueError(
                f"results: a merged header holds one {what}'s results for several devices, got {listing}"
            )
    names = [set(_constants(r)) for r in results]
    for i, n in enumerate(names[1:], 1):
        if n != names[0]:
            raise ValueError(
                f"results: every block of a merged header must define the same constants; {lab(0)} has "
                f"{sorted(names[0] - n) or 'nothing'} that {lab(i)} lacks, and {lab(i)} has "
                f"{sorted(n - names[0]) or 'nothing'} that {lab(0)} lacks"
            )
    seen: dict[str, int] = {}
    for i, r in enumerate(results):
        try:
            ident = _identity(r)
        except ValueError as err:
            raise ValueError(f"results: {lab(i)}: {err}") from None
        if ident in seen:
            raise ValueError(
                f"results: {lab(seen[ident])} and {lab(i)} are both for {ident}; a merged header takes one "
                "result per device (name, else compute capability) and at most one without a GPU (the "
                "fallback for architectures no device covers); export them separately or drop one"
            )
        seen[ident] = i


def _poison(prefix: str, k: str, m: _Macro) -> tuple[list[str], str, str]:
    """For a macro whose value differs per architecture, in host code: (nvcc declarations, nvcc body,
    plain C/C++ body). Device code parsed in nvcc's host pass still compiles (a constexpr __device__
    function); host code using it does not ("calling a constexpr __device__ function from a __host__
    function is not allowed"), nor does an #if on it."""
    if m.kind == "type":
        body = f"cute::Swizzle<{prefix}_CUTE_SWIZZLE_B, {prefix}_CUTE_SWIZZLE_M, {prefix}_CUTE_SWIZZLE_S>"
        return [], body, body
    fn = f"autopad_{k}_device_only_{m.suffix}"
    plain = f"(autopad_{k}_{m.suffix}_differs_per_arch_use_autopad_{k}_config_for_cc / 0)"
    if m.kind == "int":
        ctype = "int" if -_INT32 <= m.value < _INT32 else "long long"
        decl = f"__device__ constexpr {ctype} {fn}() {{ return {m.body}; }}"
        return [decl], f"({fn}())", plain
    if m.kind == "str":
        return [f"__device__ constexpr const char *{fn}() {{ return {m.body}; }}"], f"({fn}())", plain
    params = ", ".join(f"int {p}" for p in m.params)
    decl = f"__device__ constexpr int {fn}({params}) {{ return {m.body}; }}"
    return [decl], f"({fn}(" + ", ".join(f"({p})" for p in m.params) + "))", plain


@dataclass(frozen=True)
class _Plan:
    """Which block each build sees: pinned devices, architectures (highest cc first), the fallback."""

    blocks: list[list[_Macro]]  # the same macro names in the same order in every block
    dropped: list[str]  # names not every block defines alike
    ccs: list[int]  # per result, 0 if unknown
    pins: list[tuple[str, int]]  # (AUTOPAD_DEVICE_<GPU>, block)
    arch: list[tuple[int, int]]  # (cc, block): the block of the highest cc <= the architecture
    default: int | None  # the result without a GPU: below every tuned architecture
    reachable: list[int]  # the blocks host code may stand for (by arch or default)


def _plan(results: list[TuneResult], prefix: str) -> _Plan:
    raw = [{m.suffix: m for m in _block(r, prefix)} for r in results]
    order = [
        s for s, m in raw[0].items()
        if all(s in b and (b[s].kind, b[s].params) == (m.kind, m.params) for b in raw[1:])
    ]  # fmt: skip
    if "CUTE_SWIZZLE" in order and not all(f"CUTE_SWIZZLE_{p}" in order for p in "BMS"):
        order.remove("CUTE_SWIZZLE")
    ccs = [int(_cc(_device(r)) or 0) for r in results]
    by_cc: dict[int, int] = {}
    for i, cc in enumerate(ccs):
        if cc:
            by_cc.setdefault(cc, i)  # two devices of one cc: the first given serves the architecture
    default = next((i for i, r in enumerate(results) if not _gpu(r) and not ccs[i]), None)
    return _Plan(
        blocks=[[b[s] for s in order] for b in raw],
        dropped=sorted({s for b in raw for s in b} - set(order)),
        ccs=ccs,
        pins=[(device_macro(_gpu(r)), i) for i, r in enumerate(results) if _gpu(r)],
        arch=sorted(by_cc.items(), reverse=True),
        default=default,
        reachable=sorted(set(by_cc.values()) | ({default} if default is not None else set())),
    )


def _merged_comments(results: list[TuneResult], plan: _Plan, k: str, lab: Any) -> list[str]:
    lines = [
        f"// Generated by autopad {_version()}: shared-memory layout constants of {len(results)} tuning "
        "results, selected per device. Do not edit.",
    ]
    for i, r in enumerate(results):
        lines.append(f"// block {i}: {lab(i)}")
        lines += [f"//   {_comment(line)}" for line in _describe(r)]
    lines += ["//", "// Which block applies (host and device code never see different values):"]
    if plan.pins:
        lines += [
            "// - -D" + " / -D".join(p for p, _ in plan.pins) + " pins that device's block for host and",
            "//   device code alike (for builds that target one device);",
        ]
    below = f"block {plan.default} (no GPU)" if plan.default is not None else "a compile error"
    lines += [
        "// - otherwise device code (__CUDA_ARCH__) gets the block of the highest tuned compute capability",
        "//   at or below its architecture: "
        + "; ".join([f"sm_{cc} and up: block {i}" for cc, i in plan.arch] + [f"below: {below}"])
        + ";",
        "// - host code gets a macro only where every such block agrees; one that differs per architecture",
        "//   is a compile error in host code. Launch with the values of the architecture the kernel was",
        "//   compiled for (ptxVersion is the __CUDA_ARCH__ / 10 it saw, also when the driver JIT-compiles",
        "//   PTX for a newer GPU):",
        "//     cudaFuncAttributes fa;",
        "//     cudaFuncGetAttributes(&fa, my_kernel);",
        f"//     autopad_{k}_config cfg = autopad_{k}_config_for_cc(fa.ptxVersion);",
        "//     if (!cfg.found) { /* no tuned block for this architecture */ }",
        "//     my_kernel<<<grid_from(cfg), cfg.THREADS, cfg.SMEM_BYTES>>>(...);",
        "//   In device code, test these macros with #if only inside #ifdef __CUDA_ARCH__.",
    ]
    if plan.dropped:
        lines.append(f"// Left out (not defined alike by every block): {_comment(', '.join(plan.dropped))}.")
    return lines


def _selector(plan: _Plan, k: str) -> list[str]:
    """``config_for_cc``: the rule the macro branches follow, as a function of the compute capability."""
    lines = [f"AUTOPAD_FN_ autopad_{k}_config autopad_{k}_config_for_cc(int cc) {{", "  (void)cc;"]
    for j, (macro, i) in enumerate(plan.pins):
        lines += [f"#{'if' if j == 0 else 'elif'} defined({macro})", f"  return autopad_{k}_block_{i}();"]
    if plan.pins:
        lines.append("#else")
    lines += [f"  if (cc >= {cc}) return autopad_{k}_block_{i}();" for cc, i in plan.arch]
    fallback = f"block_{plan.default}" if plan.default is not None else "none"
    lines.append(f"  return autopad_{k}_{fallback}();")
    if plan.pins:
        lines.append("#endif")
    return lines + ["}", ""]


def _branches(plan: _Plan, prefix: str, k: str, guard: str, lab: Any) -> tuple[list[str], list[str]]:
    """The #if chain of macro blocks (pinned, per architecture, host code); also the names host code has."""
    lines: list[str] = []
    for j, (macro, i) in enumerate(plan.pins):
        lines.append(f"#{'if' if j == 0 else 'elif'} defined({macro})  // pinned: {lab(i)}")
        lines += [_define(prefix, m, "  ") for m in plan.blocks[i]]
    lines.append(f"#{'elif' if plan.pins else 'if'} defined(__CUDA_ARCH__)  // device code")
    for j, (cc, i) in enumerate(plan.arch):
        lines.append(f"#  {'if' if j == 0 else 'elif'} __CUDA_ARCH__ >= {cc * 10}  // {lab(i)}")
        lines += [_define(prefix, m, "    ") for m in plan.blocks[i]]
    lines.append("#  else" if plan.arch else "#  if 1")
    if plan.default is not None:
        lines += [_define(prefix, m, "    ") for m in plan.blocks[plan.default]]
    else:
        lines.append(
            f'#    error "autopad {guard}: no tuned block for this __CUDA_ARCH__; compile for a tuned '
            'architecture or pin a device with -DAUTOPAD_DEVICE_<NAME>"'
        )
    lines += ["#  endif", "#else  // host code"]
    if not plan.reachable:
        lines.append(
            f'#  error "autopad {guard}: nothing for host code; pin one with -DAUTOPAD_DEVICE_<NAME>"'
        )
        return lines + ["#endif"], []
    agreed, decls, cuda, plain = [], [], [], []
    first = plan.blocks[plan.reachable[0]]
    for pos, m in enumerate(first):
        if all(plan.blocks[i][pos].body == m.body for i in plan.reachable):
            lines.append(_define(prefix, m, "  "))
            agreed.append(m.suffix)
            continue
        d, on_nvcc, elsewhere = _poison(prefix, k, m)
        decls += d
        cuda.append(_define(prefix, m, "    ", on_nvcc))
        plain.append(_define(prefix, m, "    ", elsewhere))
    if cuda:
        lines += [
            "#  if defined(__CUDACC__)",
            "#    if defined(__CUDACC_RELAXED_CONSTEXPR__) && !defined(AUTOPAD_ALLOW_RELAXED_CONSTEXPR)",
            f"#      error \"autopad {guard}: with --expt-relaxed-constexpr host code could read a device's "
            "constants; use autopad_<kernel>_config_for_cc, pin a device (-DAUTOPAD_DEVICE_<NAME>), or "
            'define AUTOPAD_ALLOW_RELAXED_CONSTEXPR"',
            "#    endif",
            *decls,
            *cuda,
            "#  else",
            *plain,
            "#  endif",
        ]
    return lines + ["#endif"], agreed


def _self_checks(plan: _Plan, prefix: str, k: str, agreed: list[str]) -> list[str]:
    """C++14 static_asserts: each device pass's macros are its host-table row; host macros are every
    reachable row's. A header edited (or generated) so that they differ does not compile."""
    fields = [name for _, name in _fields(plan.blocks)]
    row = f"autopad_{k}_config_for_cc(__CUDA_ARCH__ / 10)"
    lines = [
        "",
        "// self-check: the macros this compilation sees are the host table's row for it",
        "#if AUTOPAD_CXX14_ && defined(__CUDA_ARCH__)",
        f'static_assert({row}.found, "autopad: no host table row for this __CUDA_ARCH__");',
    ]
    lines += [
        f'static_assert({row}.{f} == {prefix}_{f}, "autopad: {prefix}_{f} differs between host and device");'
        for f in fields
    ]
    lines.append("#elif AUTOPAD_CXX14_")
    lines += [
        f"static_assert(autopad_{k}_config_for_cc({plan.ccs[i]}).{f} == {prefix}_{f}, "
        f'"autopad: host {prefix}_{f} differs from block {i}");'
        for i in plan.reachable
        for f in fields
        if f in agreed
    ]
    return lines + ["#endif"]


def render_merged_header(
    results: Sequence[TuneResult], path: str | Path = "autopad.h", sources: Sequence[str] | None = None
) -> str:
    """The text of ``merge_header``'s header (``sources`` names the results in errors and comments)."""
    results = list(results)
    if not results:
        raise ValueError("results: need at least one TuneResult to merge")
    _check_merge(results, sources)
    prefix = f"AUTOPAD_{c_name(results[0].kernel)}"
    k = prefix[len("AUTOPAD_") :].lower()
    plan = _plan(results, prefix)
    guard = _guard(Path(path))

    def lab(i: int) -> str:
        return _comment(_label(i, results[i], sources))

    lines = _merged_comments(results, plan, k, lab)
    lines += [f"#ifndef {guard}", f"#define {guard}", "", _FN, ""]
    lines += _table(k, plan.blocks, plan.ccs) + _selector(plan, k)
    branches, agreed = _branches(plan, prefix, k, guard, lab)
    lines += branches + _self_checks(plan, prefix, k, agreed)
    swizzles = {m.value for b in plan.blocks for m in b if m.suffix == "CUTE_SWIZZLE"}
    if len(swizzles) == 1:
        lines += _cute_typedef(prefix, k)  # a type cannot be kept from host code: only when all agree
    lines += ["", f"#endif  // {guard}", ""]
    return "\n".join(lines)


def merge_header(
    results: Sequence[TuneResult],
    path: str | Path,
    overwrite: bool = False,
    sources: Sequence[str] | None = None,
) -> Path:
    """One header for several devices' results of one kernel; host and device code always agree.

    Selection, in order: ``-DAUTOPAD_DEVICE_<GPU>`` pins one device's block for host and device code;
    otherwise device code (``__CUDA_ARCH__``) gets the block of the highest tuned compute capability at or
    below its architecture (else the result without a GPU, else a compile error); host code gets a macro
    only where all those blocks agree, and ``autopad_<kernel>_config_for_cc(cc)`` (the same rule as a
    function: pass the kernel's ``cudaFuncAttributes.ptxVersion``) for the rest. A macro that differs is a
    compile error in host code. In C++14 and later the header checks itself with ``static_assert``.

    Errors (``ValueError``, naming ``sources`` when given): results of different kernels, backends,
    dtypes or constant names; two results for one device, or two without a GPU.
    """
    return write_file(path, render_merged_header(results, path, sources), overwrite)


# ---- Python module ------------------------------------------------------------------------------------

_PY_CONSTANT = '''\
try:  # the constants are ints that @triton.jit code may also read as globals (tl.constexpr)
    import triton.language as _tl
except Exception:  # no (working) triton: plain ints
    _Constant = int
else:

    class _Constant(int, _tl.constexpr):
        """An int that Triton treats as a compile-time constant. Pass int(BM) as an ordinary (not
        constexpr) kernel argument; arithmetic with plain ints gives plain ints."""

        def __new__(cls, value):
            return int.__new__(cls, value)

        def __init__(self, value):
            _tl.constexpr.__init__(self, int(value))

        __repr__ = __str__ = int.__repr__
        __format__ = int.__format__
        __hash__ = int.__hash__

    def _op(name):
        as_int, as_constexpr = getattr(int, name), getattr(_tl.constexpr, name, None)

        def op(self, *other):
            if other and isinstance(other[0], _tl.constexpr) and not isinstance(other[0], int):
                return as_constexpr(self, *other)  # a literal inside a kernel: Triton's own rule
            out = as_int(self, *other)
            if type(out) is int and all(isinstance(o, _Constant) for o in other):
                return _Constant(out)  # made of tuned constants only: still one (BM * BN, -BM)
            return out  # mixed with a plain int (n // BM): a plain int, fit for a runtime argument

        return op

    for _name in (
        "add radd sub rsub mul rmul floordiv rfloordiv truediv rtruediv mod rmod pow lshift rlshift rshift "
        "rrshift and rand or ror xor rxor neg pos abs invert eq ne lt le gt ge"
    ).split():
        setattr(_Constant, f"__{_name}__", _op(f"__{_name}__"))
    del _name, _op
'''


def _kernel_args(result: TuneResult) -> dict[str, int]:
    """CONFIG: the kernel's own arguments (``extra['kernel_args']``), else every constant that is a name."""
    consts = result.best.constants
    extra = _extra(result)
    args = extra.get("kernel_args")
    if args is None:
        return {
            str(n): int(v)
            for n, v in sorted(consts.items(), key=lambda kv: str(kv[0]))
            if str(n).isidentifier() and str(n).isascii() and not keyword.iskeyword(str(n))
        }
    if not isinstance(args, (list, tuple)):
        raise ValueError(f"kernel_args: expected a list of constant names, got {type(args).__name__}")
    out: dict[str, int] = {}
    for a in args:
        if not (isinstance(a, str) and a.isidentifier() and a.isascii() and not keyword.iskeyword(a)):
            raise ValueError(
                f"kernel_args: {a!r} is not a Python identifier, so it cannot be a kernel argument"
            )
        if a not in consts:
            raise ValueError(f"kernel_args: {a!r} is not one of the constants {sorted(map(str, consts))}")
        out[a] = int(consts[a])
    return out


def _launch(result: TuneResult) -> dict[str, int]:
    launch = _extra(result).get("launch") or {}
    if not isinstance(launch, dict):
        raise ValueError(f"launch: expected a dict with num_warps / num_stages, got {type(launch).__name__}")
    out = {}
    for key in ("num_warps", "num_stages"):
        if launch.get(key) is not None:
            out[key] = _int(launch, key, 1, 1024)
    return out


def _gluon_code(spec: dict[str, Any] | None) -> str | None:
    """The expression building the Gluon shared layout of a tile spec, or None where Gluon has none."""
    if not spec or spec["kind"] != "tile":
        return None
    if spec["pad"] == 0:
        return (
            f"gl.SwizzledSharedLayout(vec={spec['sw_vec']}, per_phase={spec['per_phase']}, "
            f"max_phase={spec['max_phase']}, order=[1, 0])"
        )
    rows, cols, pad = spec["rows"], spec["cols"], spec["pad"]
    if spec["max_phase"] == 1 and rows and all(_pow2(x) for x in (rows, cols, pad)):
        return f"gl.PaddedSharedLayout.with_identity_for([[{cols}, {pad}]], [{rows}, {cols}], [1, 0])"
    return None


def render_python(result: TuneResult) -> str:
    """The text of ``result``'s Python module of constants (see the module docstring it carries)."""
    consts = _constants(result)
    for name in consts:
        if name in PY_RESERVED or keyword.iskeyword(name) or not name.isidentifier():
            raise ValueError(f"constants: {name!r} cannot be a module constant (it clashes or is not a name)")
    spec = layout_spec(result)
    config, launch, cute = _kernel_args(result), _launch(result), _cute(result)
    gluon_code = _gluon_code(spec)
    public_spec = None if spec is None else {key: v for key, v in spec.items() if not key.startswith("_")}
    lines = [
        f'"""Generated by autopad {_version()}: the tuned constants of one kernel. Do not edit.',
        "",
        "The constants are module globals that are ints on the host and tl.constexpr inside @triton.jit code",
        "(``from this_module import BM`` works in a kernel). CONFIG holds only the kernel's own arguments,",
        "LAUNCH its num_warps / num_stages: ``kernel[grid](x, y, **CONFIG, **LAUNCH)``, or",
        "``triton_config()`` for ``@triton.autotune``; ``gluon_layout()`` is the shared layout as a Gluon",
        "object (None where Gluon has no such layout). What was tuned: KERNEL, DEVICE, SHAPE, DTYPE, LAYOUT",
        "and the comments below.",
        '"""',
        "",
    ]
    lines += [f"# {_comment(line)}" for line in _describe(result)]
    lines += ["", _PY_CONSTANT]
    b = result.best
    env = result.environment if isinstance(result.environment, dict) else {}
    meta: dict[str, Any] = {
        "KERNEL": result.kernel,
        "BACKEND": result.backend,
        "DEVICE": _gpu(result),
        "CC": _cc(_device(result)),
        "SHAPE": tuple(result.shape) if isinstance(result.shape, (list, tuple)) else result.shape,
        "DTYPE": result.dtype,
        "DIST": result.dist,
        "ARCH": result.arch,
        "MODE": result.mode,
        "LAYOUT": b.layout,
        "MEASURED_MS": b.measured,
        "PREDICTED_S": b.predicted,
        "MESSAGE": result.message,
        "ENVIRONMENT": env,
    }
    lines += [f"{key} = {_py(v)}" for key, v in meta.items()]
    lines.append("")
    lines += [f"{key} = _Constant({v})" for key, v in consts.items()]
    lines += [
        "",
        f"CONSTANTS = {_py(consts)}",
        f"CONFIG = {_py(config)}  # the kernel's own arguments",
        f"NUM_WARPS = {_py(launch.get('num_warps'))}",
        f"NUM_STAGES = {_py(launch.get('num_stages'))}",
        f"LAUNCH = {_py(launch)}",
        f"LAYOUT_SPEC = {_py(public_spec)}",
        f"CUTE_SWIZZLE = {_py(cute)}  # cute::Swizzle<B, M, S> on the element offset, or None",
        f"GLUON_LAYOUT = {_py(_gluon(_extra(result)) or gluon_code)}",
        "",
        "",
        "def triton_config():",
        '    """``triton.Config(CONFIG, num_warps=NUM_WARPS, num_stages=NUM_STAGES)`` (imports triton)."""',
        "    import triton",
        "",
        "    return triton.Config(dict(CONFIG), **LAUNCH)",
        "",
        "",
        "def gluon_layout():",
        '    """The shared-memory layout as a ``gl.*SharedLayout`` (imports triton), or None."""',
    ]
    if gluon_code is None:
        lines.append("    return None")
    else:
        lines += ["    from triton.experimental.gluon import language as gl", "", f"    return {gluon_code}"]
    return "\n".join(lines) + "\n"


# ---- JSON, files ----------------------------------------------------------------------------------------


def _json_default(o: Any) -> Any:
    if hasattr(o, "tolist"):
        return o.tolist()
    if hasattr(o, "item"):
        return o.item()
    if isinstance(o, (set, frozenset)):
        return sorted(o, key=str)
    raise TypeError(f"{type(o).__name__} is not JSON serializable")


def render_json(result: TuneResult) -> str:
    """``result.to_dict()`` as JSON: sorted keys and ASCII escapes, so equal results give equal bytes."""
    return json.dumps(result.to_dict(), indent=2, sort_keys=True, default=_json_default) + "\n"


def _format(path: Path, fmt: str | None) -> str:
    f = (fmt if fmt is not None else path.suffix).lower()
    f = f if f.startswith(".") else "." + f
    if f not in FORMATS:
        raise ValueError(
            f"format: {fmt or path.suffix or '(no suffix)'!r} of {path} is not one of {' '.join(FORMATS)}"
        )
    return f


def render(result: TuneResult, fmt: str, path: str | Path | None = None) -> str:
    """The text ``export_result`` would write for ``fmt`` (".json", ".h", ".py", or without the dot);
    ``path`` names a header's include guard (default ``autopad.h``)."""
    f = _format(Path(path or "autopad"), fmt)
    if f == ".h":
        return render_header(result, Path(path or "autopad.h"))
    return {".json": render_json, ".py": render_python}[f](result)


def export_result(
    result: TuneResult, path: str | Path, fmt: str | None = None, overwrite: bool = False
) -> Path:
    """Write ``result`` to ``path`` as .json, .h or .py (by suffix unless ``fmt`` says); returns the path."""
    path = Path(path)
    return write_file(path, render(result, _format(path, fmt), path), overwrite)


def load_result(path: str | Path) -> TuneResult:
    """A result exported as JSON, read back; a file that is not one is a ValueError naming it."""
    want = "autopad tune --export x.json writes one"
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise ValueError(f"{path}: not an autopad result: not JSON ({_comment(err, 200)}); {want}") from None
    if not isinstance(data, dict) or not {"kernel", "best", "candidates"} <= set(data):
        kind = type(data).__name__
        what = "an empty object" if data == {} else f"a JSON {kind} without kernel/best/candidates"
        raise ValueError(f"{path}: not an autopad result: {what}; {want}")
    try:
        return TuneResult.from_dict(data)
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as err:
        raise ValueError(
            f"{path}: not an autopad result ({type(err).__name__}: {_comment(err, 200)})"
        ) from None
