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

The package, one concern a module: ``escaping`` (text that cannot escape), ``tile_spec`` (the layout's
checked parameters and offsets), ``facts`` (what a result says), ``header``, ``merged`` (several devices
in one header), ``pymodule``; JSON, the format rule and the file writing are here. Importing it loads no
more than ``autopad.results`` does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..files import write_file
from ..results import TuneResult
from .escaping import _comment, c_name, device_macro
from .header import render_header
from .merged import merge_header, render_merged_header
from .pymodule import PY_RESERVED, render_python
from .tile_spec import layout_spec, spec_offset

__all__ = [
    "FORMATS",
    "PY_RESERVED",
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


def render(result: TuneResult, fmt: str, path: str | Path | None = None, name: str | None = None) -> str:
    """The text ``export_result`` would write for ``fmt`` (".json", ".h", ".py", or without the dot);
    ``path`` names a header's include guard (default ``autopad.h``), ``name`` its macros' prefix (a header's
    only: a .json or .py export has no global names to clash, and is refused one)."""
    f = _format(Path(path or "autopad"), fmt)
    if f == ".h":
        return render_header(result, Path(path or "autopad.h"), name)
    if name is not None:
        raise ValueError(f"name: names a header's macros (.h); a {f} export takes none")
    return {".json": render_json, ".py": render_python}[f](result)


def export_result(
    result: TuneResult,
    path: str | Path,
    fmt: str | None = None,
    overwrite: bool = False,
    name: str | None = None,
) -> Path:
    """Write ``result`` to ``path`` as .json, .h or .py (by suffix unless ``fmt`` says); returns the path.
    ``name`` prefixes a header's macros (``AUTOPAD_<NAME>_...``; default the kernel's)."""
    path = Path(path)
    return write_file(path, render(result, _format(path, fmt), path, name), overwrite)


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
