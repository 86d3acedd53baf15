"""The C/CUDA header of one result: ``AUTOPAD_<KERNEL>_<NAME>`` per constant, the layout's offset macros
(``_SMEM_OFF(r, c)``, ``_SMEM_BYTE_OFF``, ``_SMEM_BYTES`` and its parameters), the CuTe swizzle where it is
exact, and ``autopad_<kernel>_config_for_cc(cc)`` (the same values as a struct).

The macro lists of one result (``_block``) are what the merged header (merged.py) combines per device.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..results import TuneResult
from .escaping import _INT32, _c_int, _c_string, _comment, c_name, header_prefix
from .facts import _cc, _constants, _describe, _device, _version
from .tile_spec import _cute, _footprint, _struct_table, layout_spec


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


def _guard(path: Path, name: str | None = None) -> str:
    """The include guard: the file's name, and a header's own ``name`` where it has one (two named headers
    of one file name, in two folders or written to stdout, must not guard each other out)."""
    try:
        stem = c_name(path.name)
    except ValueError:
        stem = "HEADER"
    return f"AUTOPAD_GUARD_{c_name(name) + '_' if name else ''}{stem}_"


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


def render_header(result: TuneResult, path: str | Path = "autopad.h", name: str | None = None) -> str:
    """The text of ``result``'s C/CUDA header (``path`` only names the include guard; ``name``, the macros'
    prefix, ``AUTOPAD_<NAME>_...``, default the kernel's: see ``escaping.header_prefix``)."""
    prefix = header_prefix(result.kernel, name)
    guard = _guard(Path(path), name)
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
