"""Shared-memory layouts: logical index -> byte offset, footprint, and legality.

A layout says where element ``(row, col)`` of a logical tile lives in shared memory. Every layout here is a
frozen dataclass with a vectorised ``offsets(rows, cols)`` (numpy in, byte offsets out), a ``footprint``
in bytes and a ``check(vec, budget)`` that says whether a kernel accessing it ``vec`` elements at a time
can use it, and why not. The CUDA kernels take the same layouts as macros (``cuda_defines``); the Gluon
kernels take them as ``gl.*SharedLayout`` objects (``gluon_spec``). One formula covers row padding and
XOR swizzles, so the model and the kernels cannot drift apart:

    offset(r, c) = r * (cols + pad) + (((c // vec) ^ ((r // per_phase) % max_phase)) * vec + c % vec)

in elements, times the element size. With ``max_phase = 1`` the XOR term is zero (plain padding). Why it
works: a column walk of a 32-wide fp32 tile steps 32 words, one full turn of the 32 banks, so every lane
lands in one bank; padding by one word shifts each row one bank on; the XOR swizzle instead permutes the
16-byte (or ``vec``-element) chunks of each row so that consecutive rows start in different banks without
costing any extra memory.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Legality", "Padded", "Swizzled", "Structs", "Replicated", "Layout", "ELEM_BYTES"]

ELEM_BYTES = (1, 2, 4, 8)
_DEFAULT_BUDGET = 227 * 1024  # sm_90's per-block shared-memory limit (arch.Arch.smem_per_block)


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


def _positive(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{name}: must be a positive int, got {value!r}")


def _elem(elem_bytes: object) -> None:
    if elem_bytes not in ELEM_BYTES:
        raise ValueError(f"elem_bytes: {elem_bytes!r} is not one of {ELEM_BYTES}")


def _vector_check(vec: int, elem_bytes: int) -> Legality:
    if not _pow2(vec):
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


@dataclass(frozen=True)
class _Tile:
    """Row-major tile with optional row padding and XOR swizzle (the shared formula above)."""

    rows: int
    cols: int
    elem_bytes: int = 4

    def _validate(self) -> None:
        _positive("rows", self.rows)
        _positive("cols", self.cols)
        _elem(self.elem_bytes)

    # the shared formula's four parameters; each subclass fixes the ones it does not vary
    pad: int = 0
    sw_vec: int = 1
    per_phase: int = 1
    max_phase: int = 1

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
        swz = (c // self.sw_vec ^ (r // self.per_phase) % self.max_phase) * self.sw_vec + c % self.sw_vec
        off = (r * self.row_stride + swz) * self.elem_bytes
        return np.where(r < 0, -1, off)

    def cuda_defines(self) -> dict[str, int]:
        """The macros the CUDA kernels read: SMEM_OFF(r, c) is built from these."""
        return {
            "PAD": self.pad,
            "SW_VEC": self.sw_vec,
            "SW_PER_PHASE": self.per_phase,
            "SW_MAX_PHASE": self.max_phase,
        }

    def _check_common(self, vec: int, budget: int | None) -> Legality:
        v = _vector_check(vec, self.elem_bytes)
        if not v:
            return v
        if self.cols % vec:
            return Legality(False, f"{self.cols} columns are not a whole number of {vec}-element vectors")
        return _budget_check(self.footprint, budget)


@dataclass(frozen=True)
class Padded(_Tile):
    """Row-major tile whose rows are ``pad`` elements longer than ``cols`` (the classic [32][33])."""

    def __post_init__(self) -> None:
        self._validate()
        if isinstance(self.pad, bool) or not isinstance(self.pad, (int, np.integer)) or self.pad < 0:
            raise ValueError(f"pad: must be an int >= 0 (elements added to each row), got {self.pad!r}")
        if (self.sw_vec, self.per_phase, self.max_phase) != (1, 1, 1):
            raise ValueError("Padded takes no swizzle parameters; use Swizzled")

    def check(self, vec: int = 1, budget: int | None = None) -> Legality:
        """Legal for ``vec``-element accesses within ``budget`` bytes? Padding must keep vectors aligned."""
        base = self._check_common(vec, budget)
        if not base:
            return base
        if self.pad % vec:
            return Legality(
                False,
                f"padding of {self.pad} elements is not a multiple of the vector width {vec}: rows after "
                f"the first would start misaligned for {vec * self.elem_bytes}-byte accesses",
            )
        return _OK

    def gluon_spec(self) -> dict:
        """Arguments for ``gl.PaddedSharedLayout.with_identity_for([[interval, padding]], shape, order)``."""
        return {
            "kind": "padded",
            "interval_padding": [[self.cols, self.pad]] if self.pad else [],
            "shape": [self.rows, self.cols],
            "order": [1, 0],
        }

    def describe(self) -> str:
        return f"pad {self.pad}" if self.pad else "unpadded"


@dataclass(frozen=True)
class Swizzled(_Tile):
    """Row-major tile with Gluon's ``SwizzledSharedLayout(vec, per_phase, max_phase, order=[1, 0])``.

    Within row ``r`` the ``sw_vec``-element chunk ``j`` is stored at chunk
    ``j ^ ((r // per_phase) % max_phase)``.
    The same permutation is CuTe's ``Swizzle<B, M, S>`` on the element offset when the row length is a
    power of two: ``B = log2(max_phase)``, ``M = log2(vec)``, ``S = log2(cols * per_phase / vec)``.
    """

    def __post_init__(self) -> None:
        self._validate()
        for name in ("sw_vec", "per_phase", "max_phase"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not _pow2(v):
                raise ValueError(f"{name}: must be a power of two >= 1, got {v!r}")
        if self.pad:
            raise ValueError("Swizzled takes no padding; a swizzle needs none (use Padded for padding)")
        if self.sw_vec * self.max_phase > self.cols:
            raise ValueError(
                f"swizzle: sw_vec {self.sw_vec} x max_phase {self.max_phase} = "
                f"{self.sw_vec * self.max_phase} "
                f"elements is wider than the {self.cols}-column row it permutes"
            )

    def check(self, vec: int = 1, budget: int | None = None) -> Legality:
        """Legal for ``vec``-element accesses? A vector must not straddle two swizzled chunks."""
        base = self._check_common(vec, budget)
        if not base:
            return base
        if self.max_phase > 1 and vec > self.sw_vec:
            return Legality(
                False,
                f"{vec}-element vector accesses straddle the swizzle's {self.sw_vec}-element chunks, "
                f"which are permuted independently",
            )
        if self.cols % (self.sw_vec * self.max_phase):
            return Legality(False, f"{self.cols} columns are not a multiple of vec x phases")
        return _OK

    def gluon_spec(self) -> dict:
        """Arguments for ``gl.SwizzledSharedLayout(vec, per_phase, max_phase, order)``."""
        return {
            "kind": "swizzled",
            "vec": self.sw_vec,
            "per_phase": self.per_phase,
            "max_phase": self.max_phase,
            "order": [1, 0],
        }

    def to_cute(self) -> tuple[int, int, int]:
        """CuTe ``Swizzle<B, M, S>`` acting on the element offset ``r * cols + c`` (cols a power of two)."""
        if not _pow2(self.cols):
            raise ValueError(f"to_cute: CuTe swizzles need a power-of-two row length, got {self.cols}")
        b = self.max_phase.bit_length() - 1
        m = self.sw_vec.bit_length() - 1
        s = (self.cols * self.per_phase // self.sw_vec).bit_length() - 1
        return b, m, s

    @classmethod
    def from_cute(cls, b: int, m: int, s: int, rows: int, cols: int, elem_bytes: int = 4) -> Swizzled:
        """The Gluon-form swizzle equal to CuTe ``Swizzle<b, m, s>`` on a ``rows x cols`` row-major tile.

        ``Swizzle<B,M,S>`` XORs offset bits [M+S, M+S+B) into bits [M, M+B). Bits [M, ...) of the offset are
        the chunk index within a row; bits from log2(cols) up are the row. So the XOR source must start at
        or above the row bits (M + S >= log2 cols), and per_phase = 2 ** (M + S - log2 cols).
        """
        if not _pow2(cols):
            raise ValueError(f"from_cute: needs a power-of-two row length, got {cols}")
        row_bit = cols.bit_length() - 1
        if b < 0 or m < 0 or m + s < row_bit:
            raise ValueError(
                f"from_cute: Swizzle<{b},{m},{s}> mixes bits within a row of {cols} elements; "
                f"need M + S >= log2(cols) = {row_bit}"
            )
        if m + b > row_bit:
            raise ValueError(f"from_cute: Swizzle<{b},{m},{s}> permutes bits beyond a {cols}-element row")
        return cls(rows, cols, elem_bytes, sw_vec=1 << m, per_phase=1 << (m + s - row_bit), max_phase=1 << b)

    def describe(self) -> str:
        b = f"swizzle vec={self.sw_vec} per_phase={self.per_phase} max_phase={self.max_phase}"
        return b if self.max_phase > 1 else "unswizzled"


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
        _positive("count", self.count)
        if not self.fields or any(f not in ELEM_BYTES + (16,) for f in self.fields):
            raise ValueError(f"fields: byte sizes must each be one of 1, 2, 4, 8, 16; got {self.fields!r}")
        if self.pad < 0 or self.pad % max(self.fields):
            raise ValueError(f"pad: must be >= 0 and a multiple of the widest field {max(self.fields)}")

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
        _positive("bins", self.bins)
        _positive("replicas", self.replicas)
        _elem(self.elem_bytes)
        if self.pad < 0:
            raise ValueError(f"pad: must be >= 0, got {self.pad}")

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


Layout = Padded | Swizzled | Structs | Replicated
