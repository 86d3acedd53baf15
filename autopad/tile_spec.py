"""The shared tile in terms of a spec's constants (``TileLayout``, ``autopad.tile``), and the evaluation of
a spec's expressions (``_env``, ``_eval``).

What: ``tile("TILE", "TILE", pad="PAD")`` describes a spec's shared tile with ints or expressions over its
constants; ``TileLayout.make`` turns it into an ``autopad.layouts`` layout for one candidate. ``_eval``
evaluates one GRID / BLOCK / LAYOUT / FLOPS expression to an int, with an error naming where it came from;
``_env`` is the namespace it evaluates in (constants, shape names, ``E`` = element bytes).

Why apart: this is the numpy-only vocabulary a spec's constants are written in, shared by the spec bases
(kernel_base.py, triton_kernel.py) and by autopad/kt.py and autopad/triton_hook.py; it knows nothing of
launching. Moved from autopad/bases.py unchanged; ``autopad.bases`` re-exports every name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .expr import ExprError, compile_expr, names_in
from .layouts import Padded, Swizzled
from .spec import SpecError

__all__ = ["TileLayout", "tile"]


def _env(constants: Mapping[str, int], shape_names: Sequence[str], shape: Sequence[int], e: int) -> dict:
    env = dict(constants)
    env.update(zip(shape_names, shape))
    env["E"] = e
    return env


def _eval(expr: Any, env: Mapping[str, Any], where: str) -> int:
    try:
        v = compile_expr(expr)(env)
    except ExprError as e:
        raise SpecError(f"{where}: {e}") from None
    except ZeroDivisionError:
        raise SpecError(f"{where}: {expr!r} divides by zero for {dict(env)}") from None
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v.item()
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise SpecError(f"{where}: {expr!r} gave {v!r}, not an integer")
    return int(v)


@dataclass(frozen=True)
class TileLayout:
    """A shared tile described in terms of the spec's constants: rows, cols, padding, swizzle, vector.

    Every field is an int or an expression over the constants (``"TILE_M"``, ``"BN + 8"``); ``make``
    turns it into an ``autopad.layouts`` layout for one candidate. ``swizzle`` is the Gluon triple
    ``(vec, per_phase, max_phase)``; ``vec`` is the widest access the kernel makes to the tile, in
    elements (the layout's legality depends on it).
    """

    rows: Any
    cols: Any
    pad: Any = 0
    swizzle: tuple[Any, Any, Any] | None = None
    vec: Any = 1

    def names(self) -> frozenset[str]:
        parts = [self.rows, self.cols, self.pad, self.vec, *(self.swizzle or ())]
        return frozenset().union(*(names_in(p) for p in parts)) - {"E"}

    def layout_names(self) -> frozenset[str]:
        """The constants that choose only the layout (padding and swizzle), not the tile's shape."""
        parts = [self.pad, *(self.swizzle or ())]
        return frozenset().union(*(names_in(p) for p in parts)) - {"E"}

    def make(self, constants: Mapping[str, int], elem_bytes: int) -> Any:
        env = {**constants, "E": elem_bytes}
        r, c = _eval(self.rows, env, "LAYOUT rows"), _eval(self.cols, env, "LAYOUT cols")
        pad = _eval(self.pad, env, "LAYOUT pad")
        sw = tuple(_eval(x, env, "LAYOUT swizzle") for x in self.swizzle) if self.swizzle else (1, 1, 1)
        if sw[2] == 1:
            return Padded(r, c, elem_bytes, pad=pad)
        if pad == 0:
            return Swizzled(r, c, elem_bytes, sw_vec=sw[0], per_phase=sw[1], max_phase=sw[2])
        from . import layouts

        tile_cls = getattr(layouts, "Tile", None)
        if tile_cls is None:
            raise ValueError("padding and swizzle together need autopad.layouts.Tile")
        return tile_cls(r, c, elem_bytes, pad=pad, swizzle=layouts.Swizzle(*sw))

    def vec_of(self, constants: Mapping[str, int], elem_bytes: int) -> int:
        return _eval(self.vec, {**constants, "E": elem_bytes}, "LAYOUT vec")


def tile(
    rows: Any, cols: Any, pad: Any = 0, swizzle: tuple[Any, Any, Any] | None = None, vec: Any = 1
) -> TileLayout:
    """A ``rows x cols`` shared tile whose padding and swizzle come from the spec's constants.

    >>> tile("TILE", "TILE", pad="PAD")                                  # the classic [32][33]
    >>> tile("BM", "BK", swizzle=("SW_VEC", "SW_PER_PHASE", "SW_MAX_PHASE"), vec="VEC")
    """
    return TileLayout(rows, cols, pad, tuple(swizzle) if swizzle is not None else None, vec)
