"""Writers for a tuning result: JSON (everything), a C/CUDA header, a Python module; per-device headers.

Why: the tuned constants have to reach code that never imports autopad: a CUDA kernel takes them as
``#define``s (as in Kernel Tuner), a Triton/Gluon kernel as Python constants, a CuTe kernel as its
``Swizzle<B, M, S>``. The JSON keeps every candidate and the environment, so a result can be reloaded
(``load_result``) and re-exported later.

- ``.json``: ``TuneResult.to_dict()``; round-trips through ``load_result``.
- ``.h``: ``#define AUTOPAD_<KERNEL>_<NAME> value`` per constant of ``result.best``, plus ``_LAYOUT`` (a
  string), and when ``best.extra`` carries them the CuTe spelling (``_CUTE_SWIZZLE_B/_M/_S`` and
  ``_CUTE_SWIZZLE`` = ``cute::Swizzle<B, M, S>``) and the Gluon spelling (a comment); device, shape, dtype
  and times as comments. Names are upper-cased and reduced to C identifier characters.
- ``.py``: the constants as ``UPPER_CASE = value``, ``CONSTANTS`` (a dict), ``CUTE_SWIZZLE`` (a tuple) and
  ``GLUON_LAYOUT`` (a string) when present, ``DEVICE``, ``CC``, ``SHAPE``, ``DTYPE``, ``LAYOUT``, times.
- ``merge_header``: one header for several devices' results of one kernel: an ``#if defined(
  AUTOPAD_DEVICE_<GPU>)`` block per device (``-DAUTOPAD_DEVICE_NVIDIA_H200`` picks one), then an
  ``__CUDA_ARCH__`` block per compute capability (its first device), then ``#else`` the first result.

Every file is written atomically; an existing different file is never replaced unless ``overwrite=True``.
"""

from __future__ import annotations

import contextlib
import json
import keyword
import math
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from .cache import write_atomic
from .results import TuneResult

__all__ = ["FORMATS", "export_result", "load_result", "merge_header", "c_name", "device_macro"]

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
    "CONSTANTS",
    "CUTE_SWIZZLE",
    "GLUON_LAYOUT",
)


def c_name(text: str) -> str:
    """``text`` as an upper-case C identifier fragment: runs of other characters become one underscore."""
    out = re.sub(r"[^A-Za-z0-9]+", "_", str(text)).strip("_").upper()
    if not out:
        raise ValueError(f"name: {text!r} has no letters or digits to make a C identifier from")
    return out


def device_macro(gpu: str) -> str:
    """The macro picking a device's block of a merged header: "NVIDIA H200" -> AUTOPAD_DEVICE_NVIDIA_H200."""
    return f"AUTOPAD_DEVICE_{c_name(gpu)}"


def _cc(device: dict[str, Any]) -> str:
    """Compute capability as digits ("90"), from "90", "9.0", 90 or (9, 0); "" when unknown."""
    cc = device.get("cc", "")
    if isinstance(cc, (tuple, list)):
        cc = "".join(str(int(x)) for x in cc)
    return re.sub(r"\D", "", str(cc))


def _cute(extra: dict[str, Any]) -> tuple[int, int, int] | None:
    """CuTe ``Swizzle<B, M, S>`` from ``extra['cute_swizzle']`` (or 'cute'): [b,m,s] or "Swizzle<b,m,s>"."""
    v = extra.get("cute_swizzle", extra.get("cute"))
    if v is None:
        return None
    if isinstance(v, str):
        v = re.findall(r"-?\d+", v)
    b, m, s = (int(x) for x in v)
    return b, m, s


def _gluon(extra: dict[str, Any]) -> str | None:
    """The Gluon layout spelling from ``extra['gluon_layout']`` (a string, or a ``gluon_spec()`` dict)."""
    v = extra.get("gluon_layout", extra.get("gluon"))
    if v is None or isinstance(v, str):
        return v
    if v.get("kind") == "swizzled":
        return (
            f"gl.SwizzledSharedLayout(vec={v['vec']}, per_phase={v['per_phase']}, "
            f"max_phase={v['max_phase']}, order={list(v['order'])})"
        )
    if v.get("kind") == "padded":
        return (
            f"gl.PaddedSharedLayout.with_identity_for({v['interval_padding']}, {list(v['shape'])}, "
            f"{list(v['order'])})"
        )
    return json.dumps(v, sort_keys=True)


def _constants(result: TuneResult) -> dict[str, int]:
    """The best constants under their upper-case identifier names (clashes are an error, not a surprise)."""
    out: dict[str, int] = {}
    for name, value in sorted(result.best.constants.items()):
        n = c_name(name)
        if n in out:
            raise ValueError(f"constants: {name!r} and another constant both become {n!r} as identifiers")
        out[n] = int(value)
    return out


def _comment(text: str) -> str:
    return " ".join(str(text).split())  # one line, so a // comment cannot swallow code


def _times(result: TuneResult) -> str:
    b = result.best
    meas = f"{b.measured:.4g} ms" if b.measured is not None else "not measured"
    pred = f"{b.predicted * 1e3:.4g} ms" if b.predicted is not None and math.isfinite(b.predicted) else "n/a"
    return f"measured {meas}, predicted {pred}"


def _describe(result: TuneResult) -> list[str]:
    dev = result.device.get("name") or "no GPU"
    cc = _cc(result.device)
    shape = "x".join(str(d) for d in result.shape)
    lines = [
        f"kernel {result.kernel} [{result.backend}] on {dev}" + (f" (sm_{cc})" if cc else ""),
        f"shape {shape}, dtype {result.dtype}"
        + (f", dist {result.dist}" if result.dist else "")
        + f", arch {result.arch}, mode {result.mode}",
        f"layout: {result.best.layout}; {_times(result)}",
    ]
    cute = _cute(result.best.extra)
    if cute:
        lines.append("CuTe: cute::Swizzle<{}, {}, {}>".format(*cute))
    gluon = _gluon(result.best.extra)
    if gluon:
        lines.append(f"Gluon: {gluon}")
    return lines


def _c_string(text: str) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def _defines(result: TuneResult, prefix: str, cute: bool = True, indent: str = "") -> list[str]:
    lines = [f"{indent}// {_comment(line)}" for line in _describe(result)]
    for name, value in _constants(result).items():
        lines.append(f"{indent}#define {prefix}_{name} " + (f"({value})" if value < 0 else str(value)))
    lines.append(f"{indent}#define {prefix}_LAYOUT {_c_string(result.best.layout)}")
    spelled = _cute(result.best.extra)
    if cute and spelled:
        for part, v in zip("BMS", spelled, strict=True):
            lines.append(f"{indent}#define {prefix}_CUTE_SWIZZLE_{part} {v}")
        lines.append(
            f"{indent}#define {prefix}_CUTE_SWIZZLE cute::Swizzle<{spelled[0]}, {spelled[1]}, {spelled[2]}>"
        )
    return lines


def _guard(path: Path) -> str:
    return f"AUTOPAD_GUARD_{c_name(path.name)}_"


def _version() -> str:
    from . import __version__

    return __version__


def render_header(result: TuneResult, path: str | Path = "autopad.h") -> str:
    """The text of ``result``'s C/CUDA header (``path`` only names the include guard)."""
    guard = _guard(Path(path))
    prefix = f"AUTOPAD_{c_name(result.kernel)}"
    lines = [
        f"// Generated by autopad {_version()}: shared-memory layout constants. Do not edit.",
        f"#ifndef {guard}",
        f"#define {guard}",
        "",
    ]
    lines += _defines(result, prefix)
    lines += ["", f"#endif  // {guard}", ""]
    return "\n".join(lines)


def _py(value: Any) -> str:
    """A Python literal for ``value`` (floats that repr cannot spell, such as inf, become float('inf'))."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({str(value)!r})"
    return repr(value)


def render_python(result: TuneResult) -> str:
    """The text of ``result``'s Python module of constants."""
    consts = _constants(result)
    for name in consts:
        if name in _META or keyword.iskeyword(name) or not name.isidentifier() or name[0].isdigit():
            raise ValueError(f"constants: {name!r} cannot be a module constant (it clashes or is not a name)")
    doc = "\n".join(_describe(result)).replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    lines = [
        f'"""Generated by autopad {_version()}: shared-memory layout constants. Do not edit.',
        "",
        doc,
        '"""',
        "",
    ]
    meta: dict[str, Any] = {
        "KERNEL": result.kernel,
        "BACKEND": result.backend,
        "DEVICE": result.device.get("name", ""),
        "CC": _cc(result.device),
        "SHAPE": tuple(result.shape),
        "DTYPE": result.dtype,
        "DIST": result.dist,
        "ARCH": result.arch,
        "MODE": result.mode,
        "LAYOUT": result.best.layout,
        "MEASURED_MS": result.best.measured,
        "PREDICTED_S": result.best.predicted,
    }
    lines += [f"{k} = {_py(v)}" for k, v in meta.items()]
    lines.append("")
    lines += [f"{k} = {v}" for k, v in consts.items()]
    lines.append(f"CONSTANTS = {consts!r}")
    cute, gluon = _cute(result.best.extra), _gluon(result.best.extra)
    if cute:
        lines.append(f"CUTE_SWIZZLE = {cute!r}  # cute::Swizzle<B, M, S>")
    if gluon:
        lines.append(f"GLUON_LAYOUT = {gluon!r}")
    return "\n".join(lines) + "\n"


def render_json(result: TuneResult) -> str:
    return json.dumps(result.to_dict(), indent=2) + "\n"


def _write(path: Path, text: str, overwrite: bool) -> Path:
    """Write atomically; refuse to replace a different existing file unless ``overwrite``."""

    def same() -> bool:
        try:
            return path.read_text(encoding="utf-8") == text
        except (OSError, UnicodeDecodeError):
            return False

    def refuse() -> FileExistsError:
        return FileExistsError(
            f"{path} already exists with different contents; pass overwrite=True "
            f"(the CLI's --overwrite) to replace it"
        )

    if overwrite:
        return write_atomic(path, text)
    if path.exists():
        if same():
            return path
        raise refuse()
    # create without replacing: write a temporary, then hard-link it into place (fails if the name exists)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        try:
            os.link(tmp, path)
        except FileExistsError:
            if not same():
                raise refuse() from None
        except OSError:  # no hard links on this file system: check again, then replace
            if path.exists() and not same():
                raise refuse() from None
            os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    return path


def _format(path: Path, fmt: str | None) -> str:
    f = (fmt if fmt is not None else path.suffix).lower()
    f = f if f.startswith(".") else "." + f
    if f not in FORMATS:
        raise ValueError(
            f"format: {fmt or path.suffix or '(no suffix)'!r} of {path} is not one of {' '.join(FORMATS)}"
        )
    return f


def export_result(
    result: TuneResult, path: str | Path, fmt: str | None = None, overwrite: bool = False
) -> Path:
    """Write ``result`` to ``path`` as .json, .h or .py (by suffix unless ``fmt`` says); returns the path."""
    path = Path(path)
    f = _format(path, fmt)
    text = (
        {".json": render_json, ".py": render_python}[f](result) if f != ".h" else render_header(result, path)
    )
    return _write(path, text, overwrite)


def load_result(path: str | Path) -> TuneResult:
    """A result exported as JSON, read back."""
    return TuneResult.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))


def merge_header(results: list[TuneResult], path: str | Path, overwrite: bool = False) -> Path:
    """One header for several devices' results of one kernel, selected per device, per arch, or a default.

    Blocks in order: ``#if defined(AUTOPAD_DEVICE_<GPU>)`` for each named device; then
    ``#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ == <cc>0`` for each distinct compute capability (its
    first device's result); then ``#else`` the first result. Host code (no ``__CUDA_ARCH__``) gets the
    default unless a device macro is defined. Every block defines the same macro names.
    """
    results = list(results)
    if not results:
        raise ValueError("results: need at least one TuneResult to merge")
    kernels = {r.kernel for r in results}
    if len(kernels) > 1:
        raise ValueError(f"results: merge one kernel's results per header, got kernels {sorted(kernels)}")
    names = [set(_constants(r)) for r in results]
    if any(n != names[0] for n in names):
        raise ValueError(
            f"results: the devices' constants differ ({[sorted(n) for n in names]}); every block "
            "of a merged header must define the same macros"
        )
    path = Path(path)
    prefix = f"AUTOPAD_{c_name(results[0].kernel)}"
    cute = all(_cute(r.best.extra) for r in results)  # CuTe macros only if every block can define them
    branches: list[tuple[str, TuneResult]] = []
    seen: dict[str, TuneResult] = {}
    for r in results:
        name = r.device.get("name")
        if not name:
            continue
        macro = device_macro(name)
        if macro in seen:
            raise ValueError(f"results: two results for device {name!r} ({macro}); merge one per device")
        seen[macro] = r
        branches.append((f"defined({macro})", r))
    ccs: dict[str, TuneResult] = {}
    for r in results:
        cc = _cc(r.device)
        if cc and cc not in ccs:
            ccs[cc] = r
            branches.append((f"defined(__CUDA_ARCH__) && __CUDA_ARCH__ == {cc}0", r))
    guard = _guard(path)
    lines = [
        f"// Generated by autopad {_version()}: shared-memory layout constants for {len(results)} "
        "device(s). Do not edit.",
        f"// Define one of {', '.join(seen) or '(no named devices)'} to pick a device's block; otherwise "
        "device code gets its compute capability's block and host code the default.",
        f"#ifndef {guard}",
        f"#define {guard}",
        "",
    ]
    for i, (cond, r) in enumerate(branches):
        lines.append(f"{'#if' if i == 0 else '#elif'} {cond}")
        lines += _defines(r, prefix, cute, indent="  ")
    if branches:
        lines.append("#else  // default: the first result")
    lines += _defines(results[0], prefix, cute, indent="  " if branches else "")
    if branches:
        lines.append("#endif")
    lines += ["", f"#endif  // {guard}", ""]
    return _write(path, "\n".join(lines), overwrite)
