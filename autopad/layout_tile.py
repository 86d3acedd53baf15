"""The tile layout: a row-major tile, rows padded, each row's chunks XOR-swizzled, by one formula.

Split from layouts.py (one concern a module; its docstring explains the formula and why it works):

    offset(r, c) = r * (cols + pad) + (((c // vec) ^ ((r // per_phase) % max_phase)) * vec + c % vec)

in elements, times the element size. ``Tile`` carries it, with its CUDA macros (``cuda_defines``, the same
formula as common.cuh's ``AP_SMEM_OFF``), its Gluon and CuTe spellings and its legality; ``Padded`` and
``Swizzled`` are its two special cases and ``compose`` (``sw @ tile``) is CuTe's ``composition(Swizzle, L)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .layout_checks import (
    _OK,
    Legality,
    _addressable,
    _budget_check,
    _elem,
    _log2,
    _pad,
    _positive,
    _pow2,
    _pow2_param,
    _vector_check,
)
from .layout_swizzle import _SWIZZLES, CuteSwizzle, Swizzle, _cute_xor
from .model_rules import ADDRESS_LIMIT

__all__ = ["Padded", "Swizzled", "Tile", "compose"]


@dataclass(frozen=True, eq=False)
class Tile:
    """A row-major ``rows x cols`` tile of ``elem_bytes``-byte elements, rows padded by ``pad`` elements, each
    row's ``vec``-element chunks XOR-permuted by ``swizzle`` (the module's one formula).

    ``swizzle`` takes a ``Swizzle`` or a ``CuteSwizzle`` (resolved against ``cols`` here). Tiles compare and
    hash by their parameters, whichever class built them: ``Padded(32, 32, 4, pad=1) == Tile(32, 32, 4, 1)``.
    """

    rows: int
    cols: int
    elem_bytes: int = 4
    pad: int = 0
    swizzle: Swizzle = Swizzle()

    def __post_init__(self) -> None:
        d = self.__dict__  # the checked values straight into the frozen instance's dict
        d["rows"] = _positive("rows", self.rows)
        d["cols"] = _positive("cols", self.cols)
        d["elem_bytes"] = _elem(self.elem_bytes)
        d["pad"] = _pad(self.pad)
        sw = self.swizzle
        if sw is None:
            sw = Swizzle()
        elif isinstance(sw, CuteSwizzle):
            sw = sw.on(self.cols)
        elif not isinstance(sw, Swizzle):
            raise ValueError(f"swizzle: expected Swizzle(...) or Swizzle.cute(b, m, s), got {sw!r}")
        d["swizzle"] = sw
        _addressable(
            "rows, cols, pad, elem_bytes",
            f"{self.rows} rows x ({self.cols} + {self.pad}) x {self.elem_bytes} bytes",
            self.footprint,
        )
        # r // per_phase runs in int64; a phase of 2**32 rows or more is more than any tile holds (and from
        # 2**63 on numpy raised OverflowError). A power of two: named by its exponent, as 2**999997 has
        # too many digits to print
        if sw.per_phase >= ADDRESS_LIMIT:
            raise ValueError(
                f"per_phase: 2**{_log2(sw.per_phase)} rows a phase is more than any tile holds (its byte "
                f"offsets are below 2**32)"
            )
        width = sw.vec * sw.max_phase
        if width > self.cols:
            raise ValueError(
                f"swizzle: sw_vec {sw.vec} x max_phase {sw.max_phase} = {width} elements is wider than the "
                f"{self.cols}-column row it permutes"
            )
        # chunk j ^ phase stays below cols / vec only if the row is whole groups of max_phase chunks;
        # otherwise two elements of a row would share an address (or spill into the next row)
        if sw.max_phase > 1 and self.cols % width:
            raise ValueError(
                f"swizzle: {self.cols} columns are not a multiple of sw_vec x max_phase = {width}: the XOR "
                f"would move chunks past the row's end, onto other elements"
            )

    # the formula's swizzle parameters under the names the kernels and the CUDA macro use
    @property
    def sw_vec(self) -> int:
        return self.swizzle.vec

    @property
    def per_phase(self) -> int:
        return self.swizzle.per_phase

    @property
    def max_phase(self) -> int:
        return self.swizzle.max_phase

    def _params(self) -> tuple[int, ...]:
        sw = self.swizzle
        return (self.rows, self.cols, self.elem_bytes, self.pad, sw.vec, sw.per_phase, sw.max_phase)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Tile):
            return self._params() == other._params()
        return NotImplemented

    def __hash__(self) -> int:
        # kept on the instance after the first call (a ranking hashes each of its layouts thousands of
        # times); never pickled, as a str's hash differs from process to process
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash(("tile", *self._params()))
            object.__setattr__(self, "_hash", h)
        return h

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

    @property
    def row_stride(self) -> int:
        """Elements from one row's start to the next."""
        return self.cols + self.pad

    @property
    def footprint(self) -> int:
        """Bytes of shared memory the tile occupies."""
        return self.rows * self.row_stride * self.elem_bytes

    def offsets(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Byte offsets of elements (rows, cols); entries where rows < 0 stay -1 (inactive lanes)."""
        r = np.asarray(rows, dtype=np.int64)
        c = np.asarray(cols, dtype=np.int64)
        v, pp, mp = self.swizzle.vec, self.swizzle.per_phase, self.swizzle.max_phase
        if mp > 1:  # chunk c // v moves to chunk (c // v) ^ phase(r); the element keeps its place c % v
            c = (c // v ^ (r // pp) % mp) * v + c % v
        off = (r * self.row_stride + c) * self.elem_bytes
        return np.where(r < 0, -1, off)

    def cuda_defines(self) -> dict[str, int]:
        """The macros the CUDA kernels read: AP_SMEM_OFF(r, c, COLS, PAD, SW_VEC, SW_PER_PHASE, SW_MAX_PHASE)
        in common.cuh is the same formula, padding and swizzle together."""
        return {
            "PAD": self.pad,
            "SW_VEC": self.sw_vec,
            "SW_PER_PHASE": self.per_phase,
            "SW_MAX_PHASE": self.max_phase,
        }

    def check(self, vec: int = 1, budget: int | None = None) -> Legality:
        """Legal for ``vec``-element accesses within ``budget`` bytes? Every vector must start aligned and
        stay in one piece: rows of whole vectors, padding in whole vectors (else row r starts r * pad
        elements off the vector grid), and no vector wider than a swizzle chunk (chunks move independently,
        so a vector spanning two would be split)."""
        v = _vector_check(vec, self.elem_bytes)
        if not v:
            return v
        if self.cols % vec:
            return Legality(False, f"{self.cols} columns are not a whole number of {vec}-element vectors")
        b = _budget_check(self.footprint, budget)
        if not b:
            return b
        if self.pad % vec:
            return Legality(
                False,
                f"padding of {self.pad} elements is not a multiple of the vector width {vec}: rows after "
                f"the first would start misaligned for {vec * self.elem_bytes}-byte accesses",
            )
        if self.max_phase > 1 and vec > self.sw_vec:
            return Legality(
                False,
                f"{vec}-element vector accesses straddle the swizzle's {self.sw_vec}-element chunks, "
                f"which are permuted independently",
            )
        return _OK

    # ---- composition ------------------------------------------------------------------------------------

    def swizzled(self, swizzle: Swizzle | CuteSwizzle) -> Tile:
        """This tile with its rows' chunks XOR-permuted by ``swizzle`` (padding kept): CuTe's
        ``composition(Swizzle, Layout)`` in this module's form. A tile carries one swizzle: two XOR swizzles
        do not in general make a third of this form, so swizzling a swizzled tile is an error."""
        if isinstance(swizzle, CuteSwizzle):
            swizzle = swizzle.on(self.cols)
        if not isinstance(swizzle, Swizzle):
            raise ValueError(f"swizzle: expected Swizzle(...) or Swizzle.cute(b, m, s), got {swizzle!r}")
        if not self.swizzle.identity:
            if swizzle.identity:
                return self
            raise ValueError(f"swizzle: {self.describe()} is already swizzled; a tile carries one swizzle")
        return _tile(self.rows, self.cols, self.elem_bytes, self.pad, swizzle)

    def padded(self, pad: int) -> Tile:
        """This tile with rows of ``cols + pad`` elements (replacing any padding; the swizzle is kept)."""
        return _tile(self.rows, self.cols, self.elem_bytes, _pad(pad), self.swizzle)

    # ---- other spellings ---------------------------------------------------------------------------------

    def gluon_spec(self) -> dict:
        """Arguments for the ``gl.*SharedLayout`` that stores this tile (``gluon_model.to_gluon`` builds it).

        ``{"kind": "swizzled", vec, per_phase, max_phase, order}`` without padding,
        ``{"kind": "padded", interval_padding, shape, order}`` without a swizzle, and
        ``{"kind": "unsupported", "reason": ...}`` for both: Triton 3.6 has no shared layout that pads and
        swizzles. ``PaddedSharedLayout`` takes a linear remapping, but its verifier requires each offset
        basis to move along one dimension ("Each offset basis must move in at most one dimension", and the
        process aborts); an XOR swizzle's row bases move along the row and the column at once.
        """
        if self.pad and self.max_phase > 1:
            return {
                "kind": "unsupported",
                "reason": (
                    f"Gluon (Triton 3.6) has no shared layout for {self.describe()}: PaddedSharedLayout's "
                    "offset bases may each move along one dimension only, and an XOR swizzle's move along "
                    "both; use padding or a swizzle"
                ),
            }
        if self.pad:
            return {
                "kind": "padded",
                "interval_padding": [[self.cols, self.pad]],
                "shape": [self.rows, self.cols],
                "order": [1, 0],
            }
        return {
            "kind": "swizzled",
            "vec": self.sw_vec,
            "per_phase": self.per_phase,
            "max_phase": self.max_phase,
            "order": [1, 0],
        }

    def to_cute(self) -> tuple[int, int, int]:
        """CuTe ``Swizzle<B, M, S>`` acting on the element offset ``r * cols + c``: exact for unpadded tiles
        with a power-of-two row length (``B = log2 max_phase``, ``M = log2 vec``,
        ``S = log2(cols * per_phase / vec)``). A padded tile has no such triple; see ``cute_layout``."""
        if self.pad:
            raise ValueError(
                f"to_cute: {self.describe()} is padded; Swizzle<B,M,S> on r * cols + c cannot space rows "
                f"out (cute_layout() gives the composed CuTe layout where one is exact)"
            )
        if not _pow2(self.cols):
            raise ValueError(f"to_cute: CuTe swizzles need a power-of-two row length, got {self.cols}")
        return _log2(self.max_phase), _log2(self.sw_vec), _log2(self.cols * self.per_phase // self.sw_vec)

    def cute_layout(self) -> str:
        """The CuTe C++ spelling ``composition(Swizzle<B,M,S>{}, Layout<Shape<R,C>, Stride<C+P,1>>{})`` where
        it equals this tile exactly, checked element by element here; else ValueError.

        The swizzle acts on the padded offset ``r * (C + P) + c``, so its source bits are the row only when
        ``C + P`` is a power of two. Brute force over small tiles (tests/test_layout_tile.py) finds that an
        XOR swizzle with padding is never exact for ``0 < P < C``, the paddings worth using; unswizzled
        padding is ``Swizzle<0,0,0>`` (the identity) with the padded stride.
        """
        stride = self.row_stride
        if self.max_phase == 1:
            b, m, s = 0, 0, 0
        elif _pow2(stride):
            b, m = _log2(self.max_phase), _log2(self.sw_vec)
            s = _log2(stride * self.per_phase) - m
        else:
            raise ValueError(
                f"cute_layout: {self.describe()} has no exact CuTe composition: Swizzle<B,M,S> on the padded "
                f"offset r * {stride} + c would XOR bits that mix row and column ({stride} is not a power "
                "of two)"
            )
        r, c = np.meshgrid(np.arange(self.rows), np.arange(self.cols), indexing="ij")
        if not (_cute_xor(r * stride + c, b, m, s) * self.elem_bytes == self.offsets(r, c)).all():
            raise ValueError(f"cute_layout: Swizzle<{b},{m},{s}> on stride {stride} differs from the tile")
        return (
            f"composition(Swizzle<{b},{m},{s}>{{}}, Layout<Shape<Int<{self.rows}>, Int<{self.cols}>>, "
            f"Stride<Int<{stride}>, _1>>{{}})"
        )

    def describe(self) -> str:
        """ "pad 1", "swizzle vec=4 per_phase=1 max_phase=8", or both: "pad 4 + swizzle vec=4 ..."."""
        parts = ([f"pad {self.pad}"] if self.pad else []) + (
            [self.swizzle.describe()] if self.max_phase > 1 else []
        )
        return " + ".join(parts) or "unpadded"

    def to_dict(self) -> dict[str, Any]:
        """``{"kind": "tile", rows, cols, elem_bytes, pad, sw_vec, per_phase, max_phase}`` (``from_dict``)."""
        keys = ("rows", "cols", "elem_bytes", "pad", "sw_vec", "per_phase", "max_phase")
        return {"kind": "tile", **dict(zip(keys, self._params(), strict=True))}


_Tile = Tile  # the name the tile base had before it was public


class Padded(Tile):
    """Row-major tile whose rows are ``pad`` elements longer than ``cols`` (the classic [32][33]).

    A ``Tile`` without a swizzle; ``Padded(...).swizzled(sw)`` (or ``sw @ Padded(...)``) adds one.
    """

    def __init__(
        self,
        rows: int,
        cols: int,
        elem_bytes: int = 4,
        pad: int = 0,
        sw_vec: int = 1,
        per_phase: int = 1,
        max_phase: int = 1,
        swizzle: Swizzle | None = None,
    ) -> None:
        if (sw_vec, per_phase, max_phase) != (1, 1, 1) or (swizzle is not None and swizzle != Swizzle()):
            raise ValueError(
                "Padded takes no swizzle parameters; use Swizzled, or for padding and a swizzle together "
                "Tile(rows, cols, elem_bytes, pad=, swizzle=Swizzle(...)) or Padded(...).swizzled(...)"
            )
        super().__init__(rows, cols, elem_bytes, pad)

    def __repr__(self) -> str:
        return f"Padded(rows={self.rows}, cols={self.cols}, elem_bytes={self.elem_bytes}, pad={self.pad})"


class Swizzled(Tile):
    """Row-major tile with Gluon's ``SwizzledSharedLayout(vec, per_phase, max_phase, order=[1, 0])``.

    Within row ``r`` the ``sw_vec``-element chunk ``j`` is stored at chunk
    ``j ^ ((r // per_phase) % max_phase)``.
    The same permutation is CuTe's ``Swizzle<B, M, S>`` on the element offset when the row length is a
    power of two: ``B = log2(max_phase)``, ``M = log2(vec)``, ``S = log2(cols * per_phase / vec)``.
    A ``Tile`` without padding; ``Swizzled(...).padded(pad)`` adds it.
    """

    def __init__(
        self,
        rows: int,
        cols: int,
        elem_bytes: int = 4,
        pad: int = 0,
        sw_vec: int = 1,
        per_phase: int = 1,
        max_phase: int = 1,
        swizzle: Swizzle | None = None,
    ) -> None:
        if pad:
            raise ValueError(
                "Swizzled takes no padding; for padding and a swizzle together use "
                "Tile(rows, cols, elem_bytes, pad=, swizzle=Swizzle(...)) or Swizzled(...).padded(pad)"
            )
        params = (
            _pow2_param("sw_vec", sw_vec),
            _pow2_param("per_phase", per_phase),
            _pow2_param("max_phase", max_phase),
        )
        sw = _SWIZZLES.get(params) or _SWIZZLES.setdefault(params, Swizzle(*params))
        if swizzle is not None:
            if sw != Swizzle():
                raise ValueError("Swizzled: give sw_vec/per_phase/max_phase or swizzle=, not both")
            sw = swizzle
        super().__init__(rows, cols, elem_bytes, 0, sw)

    def __repr__(self) -> str:
        return (
            f"Swizzled(rows={self.rows}, cols={self.cols}, elem_bytes={self.elem_bytes}, "
            f"sw_vec={self.sw_vec}, per_phase={self.per_phase}, max_phase={self.max_phase})"
        )

    @classmethod
    def from_cute(cls, b: int, m: int, s: int, rows: int, cols: int, elem_bytes: int = 4) -> Swizzled:
        """The Gluon-form swizzle equal to CuTe ``Swizzle<b, m, s>`` on a ``rows x cols`` row-major tile
        (``CuteSwizzle.on`` says how the bits map)."""
        return cls(rows, cols, elem_bytes, swizzle=CuteSwizzle(b, m, s).on(cols))

    def describe(self) -> str:
        return self.swizzle.describe() if self.max_phase > 1 else "unswizzled"


def _tile(rows: int, cols: int, elem_bytes: int, pad: int, swizzle: Swizzle) -> Tile:
    """The most specific class for these parameters: Padded without a swizzle, Swizzled without padding."""
    if swizzle == Swizzle():
        return Padded(rows, cols, elem_bytes, pad)
    if not pad:
        return Swizzled(rows, cols, elem_bytes, swizzle=swizzle)
    return Tile(rows, cols, elem_bytes, pad, swizzle)


def compose(swizzle: Swizzle | CuteSwizzle, tile: Tile) -> Tile:
    """``swizzle`` applied to ``tile``'s rows (``swizzle @ tile``): CuTe's ``composition(Swizzle, L)``."""
    if not isinstance(tile, Tile):
        raise ValueError(f"compose: a swizzle composes with a Tile (Padded, Swizzled), not {tile!r}")
    return tile.swizzled(swizzle)
