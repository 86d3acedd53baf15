"""Shared-memory layouts: logical index -> byte offset, footprint, and legality.

A layout says where element ``(row, col)`` of a logical tile lives in shared memory. It is a pure function:
every layout here is a frozen dataclass with a vectorised ``offsets(rows, cols)`` (numpy in, byte offsets
out), a ``footprint`` in bytes and a ``check(vec, budget)`` that says whether a kernel accessing it ``vec``
elements at a time can use it, and why not. Parameters are validated once, at construction: a layout that
exists is a bijection onto distinct element slots. The CUDA kernels take the same layouts as macros
(``cuda_defines``, read by common.cuh's ``AP_SMEM_OFF``); the Gluon kernels take them as
``gl.*SharedLayout`` objects (``gluon_spec``). One formula covers row padding and XOR swizzles, alone or
together, so the model and the kernels cannot drift apart:

    offset(r, c) = r * (cols + pad) + (((c // vec) ^ ((r // per_phase) % max_phase)) * vec + c % vec)

in elements, times the element size. With ``max_phase = 1`` the XOR term is zero (plain padding); with
``pad = 0`` it is Gluon's ``SwizzledSharedLayout``. Why it works: a column walk of a 32-wide fp32 tile steps
32 words, one full turn of the 32 banks, so every lane lands in one bank; padding by one word shifts each
row one bank on; the XOR swizzle instead permutes the ``vec``-element chunks of each row so that
consecutive rows start in different banks without costing memory. Both at once (CuTe's
``composition(Swizzle, Layout)``) is ``Tile(..., pad=P, swizzle=Swizzle(...))``, also spelt
``Padded(...).swizzled(sw)`` or ``sw @ Padded(...)``; ``Padded`` and ``Swizzled`` are its two special cases.

``to_dict`` / ``from_dict`` give every layout a validated JSON form (the export writer stores it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .arch import Arch

__all__ = [
    "Legality",
    "Swizzle",
    "CuteSwizzle",
    "Tile",
    "Padded",
    "Swizzled",
    "Structs",
    "Replicated",
    "Layout",
    "compose",
    "from_dict",
    "ELEM_BYTES",
]

ELEM_BYTES = (1, 2, 4, 8)
_DEFAULT_BUDGET = Arch.smem_per_block  # the default profile's (sm_90's) per-block shared-memory limit


@dataclass(frozen=True)
class Legality:
    """Whether a layout can be used, and if not, why. Truthy when legal."""

    ok: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.ok


_OK = Legality(True)


def _pow2(x: int) -> bool:
    return x > 0 and (x & (x - 1)) == 0


def _is_int(value: object) -> bool:
    if type(value) is int:  # the common case first (a ranking builds hundreds of layouts)
        return True
    return not isinstance(value, (bool, np.bool_)) and isinstance(value, (int, np.integer))


def _positive(name: str, value: object) -> int:
    if not _is_int(value) or value <= 0:  # type: ignore[operator]
        raise ValueError(f"{name}: must be a positive int, got {value!r}")
    return int(value)  # type: ignore[arg-type]


def _pow2_param(name: str, value: object) -> int:
    if not _is_int(value) or not _pow2(int(value)):  # type: ignore[arg-type]
        raise ValueError(f"{name}: must be a power of two >= 1, got {value!r}")
    return int(value)  # type: ignore[arg-type]


def _pad(value: object) -> int:
    if not _is_int(value) or value < 0:  # type: ignore[operator]
        raise ValueError(f"pad: must be an int >= 0 (elements added to each row), got {value!r}")
    return int(value)  # type: ignore[arg-type]


def _elem(elem_bytes: object) -> int:
    if not _is_int(elem_bytes) or elem_bytes not in ELEM_BYTES:
        raise ValueError(f"elem_bytes: {elem_bytes!r} is not one of {ELEM_BYTES}")
    return int(elem_bytes)  # type: ignore[arg-type]


def _log2(x: int) -> int:
    return x.bit_length() - 1


def _vector_check(vec: int, elem_bytes: int) -> Legality:
    if not _is_int(vec) or not _pow2(int(vec)):
        return Legality(False, f"vector width {vec} is not a power of two")
    if vec * elem_bytes > 16:
        return Legality(False, f"vector of {vec} x {elem_bytes} bytes exceeds the 16-byte access limit")
    return _OK


def _budget_check(footprint: int, budget: int | None) -> Legality:
    budget = _DEFAULT_BUDGET if budget is None else budget
    if footprint > budget:
        return Legality(
            False, f"footprint {footprint} bytes exceeds the shared-memory budget of {budget} bytes"
        )
    return _OK


# ---- swizzles --------------------------------------------------------------------------------------------


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
        return Swizzle(1 << m, 1 << (m + s - row_bit), 1 << b)

    def __matmul__(self, tile: Tile) -> Tile:
        return compose(self, tile)


# Swizzles by their checked (vec, per_phase, max_phase): a value, so one object serves every tile that has
# it (a ranking builds hundreds of Swizzled tiles over a few dozen swizzles)
_SWIZZLES: dict[tuple[int, int, int], Swizzle] = {}


def _cute_xor(o: np.ndarray, b: int, m: int, s: int) -> np.ndarray:
    return o ^ ((o >> s) & (((1 << b) - 1) << m))


# ---- tiles ------------------------------------------------------------------------------------------------


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
        ``C + P`` is a power of two. Brute force over small tiles (tests/test_layouts.py) finds that an XOR
        swizzle with padding is never exact for ``0 < P < C``, the paddings worth using; unswizzled padding
        is ``Swizzle<0,0,0>`` (the identity) with the padded stride.
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


@dataclass(frozen=True)
class Structs:
    """``count`` records of fields with the given byte sizes, as array-of-structs or struct-of-arrays.

    Logical index (i, f) is field f of record i. AoS puts record i at ``i * stride`` (fields packed in order,
    the stride rounded up to the widest field's alignment plus ``pad`` bytes), so a warp reading one field
    of consecutive records walks memory with the struct size as its stride: a 16-byte struct read one
    float at a time is a 4-way conflict. SoA stores each field as its own array, and the same read is a
    stride-one walk.
    """

    count: int
    fields: tuple[int, ...] = (4,)
    aos: bool = True
    pad: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "count", _positive("count", self.count))
        fields = self.fields
        if (
            not isinstance(fields, (tuple, list))
            or not fields
            or any(not _is_int(f) or f not in ELEM_BYTES + (16,) for f in fields)
        ):
            raise ValueError(f"fields: byte sizes must each be one of 1, 2, 4, 8, 16; got {fields!r}")
        object.__setattr__(self, "fields", tuple(int(f) for f in fields))
        if not isinstance(self.aos, (bool, np.bool_)):
            raise ValueError(
                f"aos: must be True (array of structs) or False (struct of arrays), got {self.aos!r}"
            )
        object.__setattr__(self, "aos", bool(self.aos))
        if not _is_int(self.pad) or self.pad < 0 or self.pad % max(self.fields):
            raise ValueError(f"pad: must be >= 0 and a multiple of the widest field {max(self.fields)}")
        object.__setattr__(self, "pad", int(self.pad))

    @property
    def field_offsets(self) -> tuple[int, ...]:
        """Byte offset of each field within a record (each aligned to its own size)."""
        out, at = [], 0
        for f in self.fields:
            at = -(-at // f) * f
            out.append(at)
            at += f
        return tuple(out)

    @property
    def stride(self) -> int:
        """Bytes from one record to the next in AoS form."""
        end = self.field_offsets[-1] + self.fields[-1]
        align = max(self.fields)
        return -(-end // align) * align + self.pad

    @property
    def footprint(self) -> int:
        if self.aos:
            return self.count * self.stride
        return sum(self._soa_bases()[-1:]) + self.count * self.fields[-1]

    def _soa_bases(self) -> list[int]:
        bases, at = [], 0
        for f in self.fields:
            at = -(-at // 16) * 16  # each field array starts 16-byte aligned
            bases.append(at)
            at += self.count * f + (self.pad if self.pad else 0)
        return bases

    def offsets(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Byte offsets of (record, field); -1 where record < 0."""
        i = np.asarray(rows, dtype=np.int64)
        f = np.asarray(cols, dtype=np.int64)
        if self.aos:
            off = i * self.stride + np.asarray(self.field_offsets, dtype=np.int64)[f]
        else:
            off = (
                np.asarray(self._soa_bases(), dtype=np.int64)[f]
                + i * np.asarray(self.fields, dtype=np.int64)[f]
            )
        return np.where(i < 0, -1, off)

    def check(self, vec: int = 1, budget: int | None = None) -> Legality:
        return _budget_check(self.footprint, budget)

    def describe(self) -> str:
        return ("AoS" if self.aos else "SoA") + (f" pad {self.pad}" if self.pad else "")

    def to_dict(self) -> dict[str, Any]:
        """``{"kind": "structs", count, fields (list), aos, pad}`` (``from_dict``)."""
        return {
            "kind": "structs",
            "count": self.count,
            "fields": list(self.fields),
            "aos": self.aos,
            "pad": self.pad,
        }


@dataclass(frozen=True)
class Replicated:
    """``replicas`` copies of a ``bins``-entry array (privatised sub-histograms).

    Logical index (r, b) is bin b of replica r. Replica-major stores replica r at ``r * (bins + pad)``:
    with pad = 1 (one word), replica r's bin b sits one bank further on than replica r-1's, so warps that
    use different replicas for the same hot bin hit different banks. Interleaved stores bin b's replicas
    side by side at ``b * (replicas + pad) + r``.
    """

    bins: int
    replicas: int = 1
    elem_bytes: int = 4
    interleaved: bool = False
    pad: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "bins", _positive("bins", self.bins))
        object.__setattr__(self, "replicas", _positive("replicas", self.replicas))
        object.__setattr__(self, "elem_bytes", _elem(self.elem_bytes))
        if not isinstance(self.interleaved, (bool, np.bool_)):
            raise ValueError(f"interleaved: must be True or False, got {self.interleaved!r}")
        object.__setattr__(self, "interleaved", bool(self.interleaved))
        if not _is_int(self.pad) or self.pad < 0:
            raise ValueError(f"pad: must be an int >= 0, got {self.pad!r}")
        object.__setattr__(self, "pad", int(self.pad))

    @property
    def footprint(self) -> int:
        if self.interleaved:
            return self.bins * (self.replicas + self.pad) * self.elem_bytes
        return self.replicas * (self.bins + self.pad) * self.elem_bytes

    def offsets(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        r = np.asarray(rows, dtype=np.int64)
        b = np.asarray(cols, dtype=np.int64)
        if self.interleaved:
            off = b * (self.replicas + self.pad) + r
        else:
            off = r * (self.bins + self.pad) + b
        return np.where(r < 0, -1, off * self.elem_bytes)

    def cuda_defines(self) -> dict[str, int]:
        return {
            "BINS": self.bins,
            "REPLICAS": self.replicas,
            "INTERLEAVED": int(self.interleaved),
            "PAD": self.pad,
        }

    def check(self, vec: int = 1, budget: int | None = None) -> Legality:
        return _budget_check(self.footprint, budget)

    def describe(self) -> str:
        kind = "interleaved" if self.interleaved else "replica-major"
        return f"{self.replicas} replicas {kind}" + (f" pad {self.pad}" if self.pad else "")

    def to_dict(self) -> dict[str, Any]:
        """``{"kind": "replicated", bins, replicas, elem_bytes, interleaved, pad}`` (``from_dict``)."""
        return {
            "kind": "replicated",
            "bins": self.bins,
            "replicas": self.replicas,
            "elem_bytes": self.elem_bytes,
            "interleaved": self.interleaved,
            "pad": self.pad,
        }


Layout = Tile | Structs | Replicated

# ---- JSON form ------------------------------------------------------------------------------------------

_SCHEMA: dict[str, tuple[tuple[str, type], ...]] = {
    "tile": tuple(
        (k, int) for k in ("rows", "cols", "elem_bytes", "pad", "sw_vec", "per_phase", "max_phase")
    ),
    "replicated": (
        ("bins", int),
        ("replicas", int),
        ("elem_bytes", int),
        ("interleaved", bool),
        ("pad", int),
    ),
    "structs": (("count", int), ("fields", list), ("aos", bool), ("pad", int)),
}


def from_dict(d: Mapping[str, Any]) -> Layout:
    """The layout a ``to_dict()`` wrote, validated: exactly the fields of its kind, ints that are ints (a bool
    is not), bools that are bools, and every range the constructors check. ValueError names the field.

    A tile comes back as the most specific class (Padded without a swizzle, Swizzled without padding, else
    Tile); tiles compare by parameters, so ``from_dict(x.to_dict()) == x`` for every layout ``x``.
    """
    if not isinstance(d, Mapping):
        raise ValueError(f"layout: expected a dict with a 'kind', got {type(d).__name__}")
    kind = d.get("kind")
    if kind not in _SCHEMA:
        raise ValueError(f"kind: {kind!r} is not one of {', '.join(map(repr, _SCHEMA))}")
    schema = dict(_SCHEMA[kind])
    for key in d:
        if key != "kind" and key not in schema:
            raise ValueError(f"{key}: not a field of a {kind} layout (fields: {', '.join(schema)})")
    values: dict[str, Any] = {}
    for key, want in schema.items():
        if key not in d:
            raise ValueError(f"{key}: missing from the {kind} layout")
        v = d[key]
        if want is int and not _is_int(v):
            raise ValueError(f"{key}: must be an int, got {v!r}")
        if want is bool and not isinstance(v, bool):
            raise ValueError(f"{key}: must be true or false, got {v!r}")
        if want is list and (not isinstance(v, (list, tuple)) or not all(_is_int(f) for f in v)):
            raise ValueError(f"fields: must be a list of byte sizes (ints), got {v!r}")
        values[key] = v
    if kind == "replicated":
        return Replicated(**values)
    if kind == "structs":
        return Structs(values["count"], tuple(values["fields"]), values["aos"], values["pad"])
    sw = Swizzle(*(_pow2_param(k, values[k]) for k in ("sw_vec", "per_phase", "max_phase")))
    return _tile(values["rows"], values["cols"], values["elem_bytes"], values["pad"], sw)
