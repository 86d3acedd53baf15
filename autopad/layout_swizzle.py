"""Swizzles: Gluon's XOR swizzle of a row's chunks (``Swizzle``) and CuTe's ``Swizzle<B, M, S>``
(``CuteSwizzle``), as values that become layouts when composed with a tile (``sw @ tile``).

Split from layouts.py (one concern a module). Chunk ``j`` (``vec`` elements) of row ``r`` is stored at chunk
``j ^ ((r // per_phase) % max_phase)``: consecutive rows start in different banks without costing memory
(layouts.py's docstring has the formula and why it works).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .layout_checks import _is_int, _log2, _pow2, _pow2_param

if TYPE_CHECKING:
    from .layout_tile import Tile

__all__ = ["CuteSwizzle", "Swizzle"]


@dataclass(frozen=True)
class Swizzle:
    """Gluon's XOR swizzle of a row-major tile: chunk ``j`` (``vec`` elements) of row ``r`` is stored at chunk
    ``j ^ ((r // per_phase) % max_phase)``. ``Swizzle()`` (max_phase 1) is the identity.

    A value, not a layout: it becomes one when composed with a tile (``sw @ tile``, ``tile.swizzled(sw)``,
    ``Tile(..., swizzle=sw)``), which also checks that it fits the row.
    """

    vec: int = 1
    per_phase: int = 1
    max_phase: int = 1

    def __post_init__(self) -> None:
        for name in ("vec", "per_phase", "max_phase"):
            object.__setattr__(self, name, _pow2_param(name, getattr(self, name)))

    @classmethod
    def gluon(cls, vec: int = 1, per_phase: int = 1, max_phase: int = 1) -> Swizzle:
        """``gl.SwizzledSharedLayout(vec, per_phase, max_phase, order=[1, 0])``'s permutation."""
        return cls(vec, per_phase, max_phase)

    @staticmethod
    def cute(b: int, m: int, s: int) -> CuteSwizzle:
        """CuTe's ``Swizzle<B, M, S>``; it becomes a ``Swizzle`` once composed with a tile of known width."""
        return CuteSwizzle(b, m, s)

    @property
    def identity(self) -> bool:
        return self.max_phase == 1

    def __matmul__(self, tile: Tile) -> Tile:
        from .layout_tile import compose  # here: layout_tile imports this module

        return compose(self, tile)

    def describe(self) -> str:
        return f"swizzle vec={self.vec} per_phase={self.per_phase} max_phase={self.max_phase}"


@dataclass(frozen=True)
class CuteSwizzle:
    """CuTe's ``Swizzle<B, M, S>``: XOR offset bits ``[M+S, M+S+B)`` into bits ``[M, M+B)``.

    It acts on the element offset ``r * cols + c`` of an unpadded row-major tile whose row length is a power
    of two; ``on(cols)`` gives the equal Gluon-form ``Swizzle``. Bits from ``log2(cols)`` up are the row, so
    the XOR source must start at or above them (``M + S >= log2 cols``), with
    ``per_phase = 2 ** (M + S - log2 cols)``. Composed with a padded tile it still names the permutation of
    each row's ``cols`` elements (padding then spaces the rows); that is *not* CuTe's
    ``composition(Swizzle, Layout<Shape<R,C>, Stride<C+P,1>>)`` (see ``Tile.cute_layout``).
    """

    b: int
    m: int
    s: int

    def __post_init__(self) -> None:
        for name in ("b", "m", "s"):
            v = getattr(self, name)
            if not _is_int(v) or v < 0:
                raise ValueError(f"{name}: CuTe Swizzle<B, M, S> needs ints >= 0, got {v!r}")
            object.__setattr__(self, name, int(v))

    def on(self, cols: int) -> Swizzle:
        """The Gluon-form swizzle equal to this one on rows of ``cols`` elements."""
        b, m, s = self.b, self.m, self.s
        if not _is_int(cols) or not _pow2(int(cols)):
            raise ValueError(f"from_cute: needs a power-of-two row length, got {cols}")
        row_bit = _log2(int(cols))
        if m + s < row_bit:
            raise ValueError(
                f"from_cute: Swizzle<{b},{m},{s}> mixes bits within a row of {cols} elements; "
                f"need M + S >= log2(cols) = {row_bit}"
            )
        if m + b > row_bit:
            raise ValueError(f"from_cute: Swizzle<{b},{m},{s}> permutes bits beyond a {cols}-element row")
        if m + s - row_bit >= 32:  # 1 << (m + s - row_bit) rows a phase: refused before the shift builds it
            raise ValueError(
                f"per_phase: Swizzle<{b},{m},{s}> on {cols}-element rows is 2**{m + s - row_bit} rows a "
                f"phase, more than any tile holds (its byte offsets are below 2**32)"
            )
        return Swizzle(1 << m, 1 << (m + s - row_bit), 1 << b)

    def __matmul__(self, tile: Tile) -> Tile:
        from .layout_tile import compose  # here: layout_tile imports this module

        return compose(self, tile)


# Swizzles by their checked (vec, per_phase, max_phase): a value, so one object serves every tile that has
# it (a ranking builds hundreds of Swizzled tiles over a few dozen swizzles)
_SWIZZLES: dict[tuple[int, int, int], Swizzle] = {}


def _cute_xor(o: np.ndarray, b: int, m: int, s: int) -> np.ndarray:
    return o ^ ((o >> s) & (((1 << b) - 1) << m))
