"""From an op call to the tuning question it asks: which spec, which kernel shape and dtype. numpy only.

One mapping serves the running op (``runner``), the fake implementations' shape recorder and
``pretune``, so that a shape tuned ahead of time is exactly the one the op later looks up:

- **transpose** of [..., M, N]: the kernel sees [M, N] or [B, M, N] (leading dims folded into B). A
  transpose moves bits, so a dtype the kernel lacks runs as the same-size dtype it has (int32 as float32,
  int64 and complex64 as float64, bool as uint8): a free ``view``, one tuned entry per element size.
- **histogram** of n values into ``bins``: (n, bins) with the input class. Values in int32 and uint8 are
  read as they are; other integer types are narrowed to int32 first (one extra pass; int64 is clamped to
  [-1, bins] so that a value beyond int32 never wraps into a bin). With ``weights`` the weighted (count,
  sum) kernel runs, whose struct layout (AoS or SoA) autopad picks: spec ``histogram_weighted``.
- **matmul** of [M, K] x [K, N]: (M, N, K) in the inputs' dtype, B read as the caller holds it.

``Item`` is the op-level description that ``pretune`` takes and ``record`` collects, with a one-line text
form ("transpose 4097x8191 float16", "histogram 16777216x4096 int32 uniform weights=float32",
"matmul 4096x4096x4096 bfloat16": matmul shapes are M x N x K, as ``autopad tune`` takes them).
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass

from ..kernels_registry import builtin_spec
from ..spec import DTYPE_BYTES, KernelSpec, SpecError
from .policy import normalize_dist

__all__ = [
    "OPS",
    "SIZES",
    "Item",
    "Plan",
    "plan",
    "plan_transpose",
    "plan_histogram",
    "plan_matmul",
    "RECORDERS",
    "note",
]

OPS = ("transpose", "histogram", "matmul")
# element sizes of every torch dtype an op may see (DTYPE_BYTES names the ones kernels are written for)
SIZES = {
    **DTYPE_BYTES,
    "bool": 1,
    "uint16": 2,
    "uint32": 4,
    "uint64": 8,
    "complex32": 4,
    "complex64": 8,
    "complex128": 16,
    "float8_e5m2": 1,
    "float8_e4m3fnuz": 1,
    "float8_e5m2fnuz": 1,
}
INTEGER = ("int32", "uint8", "int64", "int16", "int8", "uint16", "uint32", "uint64")
WEIGHT_DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8")
INT32_MAX = 2**31 - 1
RECORDERS: list[list[Item]] = []  # the item lists of the active ``autopad.ops.record()`` blocks


@dataclass(frozen=True)
class Item:
    """One op call to tune for: op, shape (transpose: the tensor's; histogram: (n, bins); matmul: (M, N,
    K)), dtype (of the input values), input class and the weights' dtype (weighted histogram)."""

    op: str
    shape: tuple[int, ...]
    dtype: str
    dist: str | None = None
    weights: str | None = None
    backend: str = "auto"

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"op: {self.op!r} is not one of {', '.join(OPS)}")
        shape = tuple(self.shape)
        if not shape or any(isinstance(d, bool) or not isinstance(d, int) or d < 0 for d in shape):
            raise ValueError(f"shape: {self.shape!r} must be a tuple of non-negative ints")
        object.__setattr__(self, "shape", tuple(int(d) for d in shape))

    def text(self) -> str:
        parts = [self.op, "x".join(map(str, self.shape)), self.dtype]
        if self.dist:
            parts.append(self.dist)
        if self.weights:
            parts.append(f"weights={self.weights}")
        if self.backend != "auto":
            parts.append(f"backend={self.backend}")
        return " ".join(parts)

    @classmethod
    def parse(cls, line: str) -> Item:
        """``op SHAPE dtype [dist] [weights=DTYPE] [backend=B]``, e.g. ``transpose 4097x8191 float16``."""
        words = line.split()
        if len(words) < 3:
            raise ValueError(f"item: {line!r} is not 'op SHAPE dtype [dist] [weights=DTYPE] [backend=B]'")
        op, shape_text, dtype, *rest = words
        try:
            shape = tuple(int(p) for p in shape_text.lower().split("x"))
        except ValueError:
            raise ValueError(f"item: {line!r}: shape {shape_text!r} is not of the form 4096x4096") from None
        kw: dict[str, str] = {}
        for w in rest:
            if "=" in w:
                k, v = w.split("=", 1)
                if k not in ("weights", "backend"):
                    raise ValueError(f"item: {line!r}: unknown option {k!r} (weights=, backend=)")
                kw[k] = v
            elif "dist" in kw:
                raise ValueError(f"item: {line!r}: more than one input class")
            else:
                kw["dist"] = w
        return cls(op, shape, dtype, **kw)


@dataclass(frozen=True)
class Plan:
    """The kernel question of an op call: spec, kernel shape and dtype, input class, and what the op does
    to its input first (``view``: reinterpret as this same-size dtype; ``convert``: cast to it)."""

    spec: KernelSpec
    shape: tuple[int, ...]
    dtype: str
    dist: str | None = None
    view: str | None = None
    convert: str | None = None


def _size(dtype: str) -> int:
    if dtype not in SIZES:
        raise ValueError(f"dtype: {dtype!r} is not a dtype autopad.ops knows; known: {', '.join(SIZES)}")
    return SIZES[dtype]


def plan_transpose(shape: tuple[int, ...], dtype: str, backend: str = "auto") -> Plan:
    if len(shape) < 2:
        raise ValueError(f"x: transpose takes a tensor of at least 2 dims [..., M, N], got shape {shape}")
    m, n = int(shape[-2]), int(shape[-1])
    kshape = (m, n) if len(shape) == 2 else (math.prod(shape[:-2]), m, n)
    size = _size(dtype)
    spec = builtin_spec("transpose", backend, dtype if dtype in DTYPE_BYTES else None)
    if dtype in spec.DTYPES:
        return Plan(spec, kshape, dtype)
    same = [d for d in spec.DTYPES if DTYPE_BYTES[d] == size]
    raw = ("uint8", "int8")  # plain bytes first, then the spec's own order
    same.sort(key=lambda d: (raw.index(d) if d in raw else len(raw), spec.DTYPES.index(d)))
    if not same:
        sizes = sorted({DTYPE_BYTES[d] for d in spec.DTYPES})
        raise ValueError(f"x: transpose [{spec.BACKEND}] moves elements of {sizes} bytes; {dtype} has {size}")
    return Plan(spec, kshape, same[0], view=same[0])


def weighted_spec() -> KernelSpec:
    """The weighted histogram spec: registered as "histogram_weighted", else its module, else the
    ``WEIGHTED`` spec of the CUDA histogram module."""
    try:
        return builtin_spec("histogram_weighted", "cuda")
    except ValueError:
        pass
    try:
        mod = importlib.import_module("autopad.kernels.cuda.histogram_weighted")
    except ImportError:
        mod = None
    if mod is not None:
        try:
            return KernelSpec(mod)
        except SpecError:
            for name in ("SPEC", "WEIGHTED", "HistogramWeighted"):
                obj = getattr(mod, name, None)
                if obj is not None:
                    return KernelSpec(obj() if isinstance(obj, type) else obj)
            raise
    from ..kernels.cuda import histogram

    return KernelSpec(histogram.WEIGHTED)


def plan_histogram(
    n: int, bins: int, dtype: str, dist: str | None = None, weights: str | None = None, backend: str = "auto"
) -> Plan:
    if isinstance(bins, bool) or not isinstance(bins, int) or bins < 1:
        raise ValueError(f"bins: must be a positive int, got {bins!r}")
    if dtype not in INTEGER:
        raise ValueError(f"x: histogram counts integer values ({', '.join(INTEGER)}), got {dtype}")
    if n > INT32_MAX:
        raise ValueError(f"x: {n} values; the kernels count in int32, so at most {INT32_MAX} per call")
    if bins > INT32_MAX:  # the kernels take the bin count as a C int: more would wrap
        raise ValueError(f"bins: {bins}; the kernels index bins in int32, so at most {INT32_MAX}")
    if weights is not None:
        if weights not in WEIGHT_DTYPES:
            raise ValueError(f"weights: {weights} is not a number type ({', '.join(WEIGHT_DTYPES)})")
        if backend not in ("auto", "cuda"):
            raise ValueError(f"backend: the weighted histogram is a CUDA kernel; got backend={backend!r}")
        spec = weighted_spec()
    else:
        spec = builtin_spec("histogram", backend, dtype)
    kd = dtype if dtype in spec.DTYPES else "int32"
    if kd not in spec.DTYPES:
        raise ValueError(f"x: histogram [{spec.BACKEND}] takes {', '.join(spec.DTYPES)}, not {dtype}")
    convert = None if kd == dtype else kd
    return Plan(spec, (int(n), int(bins)), kd, normalize_dist(spec, dist), convert=convert)


def plan_matmul(m: int, n: int, k: int, dtype: str, backend: str = "auto") -> Plan:
    spec = builtin_spec("matmul", backend, dtype if dtype in DTYPE_BYTES else None)
    if dtype not in spec.DTYPES:
        backends = ("cuda", "triton") if backend == "auto" else (backend,)
        takes = "; ".join(f"{', '.join(builtin_spec('matmul', b).DTYPES)} ({b})" for b in backends)
        raise ValueError(f"a, b: matmul takes {takes}; not {dtype}")
    return Plan(spec, (int(m), int(n), int(k)), dtype)


def plan(item: Item) -> Plan:
    """The plan of an op-level item (what ``pretune`` tunes)."""
    if item.op == "transpose":
        return plan_transpose(item.shape, item.dtype, item.backend)
    if len(item.shape) != (2 if item.op == "histogram" else 3):
        want = "(n, bins)" if item.op == "histogram" else "(M, N, K)"
        raise ValueError(f"shape: {item.op} items give {want}, got {item.shape}")
    if item.op == "histogram":
        n, bins = item.shape
        return plan_histogram(n, bins, item.dtype, item.dist, item.weights, item.backend)
    return plan_matmul(*item.shape, item.dtype, item.backend)


def note(item: Item) -> None:
    """Add ``item`` to every active recorder (once each)."""
    for items in list(RECORDERS):
        if item not in items:
            items.append(item)
