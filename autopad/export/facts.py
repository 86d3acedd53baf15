"""What a result says, read defensively for exporters: device, compute capability, shape, constants under
identifier names, the Gluon spelling, and the lines that describe what was tuned.

Why apart: the header, the merged header and the Python module describe a result the same way, and a
result loaded from a file may be malformed: these readers never raise on a missing or odd field except
where an identifier would be wrong (``_constants``).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from ..results import TuneResult
from .escaping import _comment, c_name
from .tile_spec import _cute, _extra


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


def _version() -> str:
    from .. import __version__

    return _comment(__version__, 40)
