"""Text that cannot escape where it is written: C identifiers, comments, C strings and integers, Python
literals.

Why: a result's strings (a device name, a layout description, an error message, a crafted result file)
end up inside C comments, C strings and Python source. Every writer goes through these functions, so that
no string can end a comment, continue a line, form a trigraph or inject a ``#define`` (fuzzed with gcc,
g++, nvcc and Python imports in tests/test_export_fuzz.py).
"""

from __future__ import annotations

import math
import re
from typing import Any

_COMMENT_MAX = 240  # characters of one result string in a comment


_CSTRING_MAX = 1000  # bytes of the layout description in the _LAYOUT string


_INT32 = 1 << 31


def c_name(text: Any) -> str:
    """``text`` as an upper-case C identifier fragment: runs of other characters become one underscore."""
    out = re.sub(r"[^A-Za-z0-9]+", "_", str(text)).strip("_").upper()
    if not out:
        raise ValueError(f"name: {text!r} has no letters or digits to make a C identifier from")
    return out


def header_prefix(kernel: str, name: str | None = None) -> str:
    """The macros' prefix of a header: ``AUTOPAD_<KERNEL>``, or ``AUTOPAD_<NAME>`` where the user names it, so
    that several results of one kernel (two dtypes, two backends) can be included in one translation unit
    without redefining each other's macros and struct. ``name`` must be an identifier (letters, digits and
    underscores, starting with a letter, no double underscore: C reserves those): it is part of every macro
    and function name of the header, upper-cased in the macros (so names that differ only in case clash), and
    may not start like the headers' own macros (DEVICE_, GUARD_, FN_, CXX14_)."""
    if name is None:
        return f"AUTOPAD_{c_name(kernel)}"
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name) or "__" in name:
        raise ValueError(
            f"name: {name!r} is not a C identifier starting with a letter, without a double underscore, "
            f"such as transpose_f16"
        )
    if re.match(r"(DEVICE|GUARD|FN|CXX14)(_|$)", name.upper()):
        raise ValueError(
            f"name: {name!r} starts like the headers' own AUTOPAD_DEVICE_/GUARD_/FN_/CXX14_ macros"
        )
    return f"AUTOPAD_{name.upper()}"


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
