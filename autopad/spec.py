"""The kernel spec: everything the tuner may know about a kernel, and nothing more; checked with reasons.

A kernel (built-in or a user's own) is a module or object with the names below. Most users derive from
``autopad.CudaKernel`` or ``autopad.TritonKernel`` (autopad/bases.py), which derive everything but the
kernel, its space, its launch geometry, its arguments and its reference. The tuner enumerates ``SPACE``,
keeps what ``RESTRICTIONS`` and ``legal`` accept (the one validity predicate, shared by the enumerator, the
model and the benchmark), scores each candidate from ``smem_pattern`` through its ``layout`` and the model,
and benchmarks the shortlist with ``build`` / ``run`` against ``reference``. It never looks inside.

For ranking (the model; numpy only) a spec needs (``constants``: tunable name -> int; ``dtype``: "float32"):

    NAME: str                                   kernel name, e.g. "transpose"
    BACKEND: str                                "cuda" or "triton"
    DTYPES: tuple[str, ...]                     element types it supports
    SPACE: dict[str, tuple[int, ...]]           every tunable and the values to try
    legal(constants, shape, dtype) -> Legality | bool
    layout(constants, dtype) -> layout          the shared-memory layout (autopad.layouts) it uses
    smem_pattern(constants, dtype) -> instructions of one block over one tile (autopad.access/pattern)
    launch_info(constants, shape, dtype) -> dict
                                                {"blocks": int, "threads": int; optional "smem_bytes",
                                                 "tiles_per_block" (default 1), "inflight_bytes" (per
                                                 thread) and "dram_efficiency" (<= 1)}
    traffic(shape, dtype) -> dict               {"bytes": global bytes read + written, "flops": int}

For measuring it also needs (the bases derive all of them):

    make_inputs(shape, dtype, device, seed, dist="uniform") -> tuple of tensors
    alloc_output(inputs, constants) -> tensor or tuple of tensors (the harness poisons them)
    build(constants, dtype) -> object           compile (thread-safe; may raise with the compiler's log)
    run(built, inputs, out) -> None             launch on torch's current stream
    reference(inputs) -> tensor(s)              the torch answer
    check(out, ref) -> tuple[bool, str]         exact or within a stated tolerance

Optional: ``DEFAULTS`` (the unpadded baseline), ``textbook(shape, dtype)`` (the +1 pad), ``RESTRICTIONS``
(expressions over the constants, or vectorised callables, that prune the space before ``legal``),
``SOURCE_FILES`` (the code that runs; it keys the cache, default: the module file), ``PATTERN_KEYS`` (the
constants ``smem_pattern`` depends on), ``LAYOUT_KEYS`` (the constants that only choose the layout),
``LAYOUT_READS`` (every constant ``layout`` reads: a ranking then makes one layout per distinct combination),
``FAMILY_KEYS`` (the constants that switch the kernel's code path, such as a vector width: the tuner measures
each family's best-predicted candidate and searches from each; see autopad/strategies/model.py),
``ACCUMULATES`` (``run`` adds into ``out``: the harness zeroes it first), ``DISTS`` (input classes that
change the speed; ``smem_pattern`` then takes ``dist=``), ``check_shape(shape)`` and ``inputs_from(*args)``.

Optional, for speed (the tuner ranks spaces of tens of thousands of candidates): ``legal_batch(columns,
shape, dtype)`` and ``launch_info_batch(columns, shape, dtype)`` take the candidates as columns (constant
name -> int64 array, one entry per candidate) and return ``legal``'s answers as a bool array and
``launch_info``'s as a dict of arrays. They must agree with ``legal`` and ``launch_info`` entry for entry
(the CUDA transpose has both, and its tests hold them to it); ``legal`` and ``launch_info`` stay the
definition, used for a single candidate.

``KernelSpec`` checks the static parts when it wraps a spec, and the tuner checks what the functions return
the first time it calls them, so a mistake is reported as the spec function's name and what was wrong.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

__all__ = [
    "KernelSpec",
    "SpecError",
    "REQUIRED",
    "BENCH_REQUIRED",
    "DTYPE_BYTES",
    "spec_name",
    "per_distinct",
    "distinct_combinations",
    "combine_codes",
    "row_codes",
    "value_ranks",
    "batched_info",
]

REQUIRED = ("NAME", "BACKEND", "DTYPES", "SPACE", "legal", "layout", "smem_pattern", "launch_info", "traffic")
BENCH_REQUIRED = ("make_inputs", "alloc_output", "build", "run", "reference", "check")
BACKENDS = ("cuda", "triton")
BATCHED = ("legal_batch", "launch_info_batch")  # optional: legal and launch_info over many candidates

DTYPE_BYTES = {
    "float64": 8,
    "float32": 4,
    "tf32": 4,  # float32 storage, tensor-core arithmetic
    "float16": 2,
    "bfloat16": 2,
    "float8_e4m3fn": 1,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint8": 1,
}


class SpecError(ValueError):
    """A kernel spec that cannot be used: the message names the spec function or field and what is wrong."""


def spec_name(impl: Any) -> str:
    """A readable name for a spec object or module."""
    if isinstance(impl, ModuleType):
        return impl.__name__
    n = getattr(impl, "NAME", None)
    return n if isinstance(n, str) and n else type(impl).__name__


def _check_static(impl: Any) -> None:
    what = spec_name(impl)
    missing = [name for name in REQUIRED if not hasattr(impl, name)]
    if missing:
        hint = ""
        if not isinstance(impl, ModuleType) and not hasattr(impl, "layout"):
            hint = " (derive from autopad.CudaKernel or autopad.TritonKernel to get the rest derived)"
        raise SpecError(f"kernel: {what} is not a kernel spec; it lacks {', '.join(missing)}{hint}")
    name = impl.NAME
    if not isinstance(name, str) or not name.strip():
        raise SpecError(f"NAME: must be a non-empty string, got {name!r}")
    if impl.BACKEND not in BACKENDS:
        raise SpecError(f"BACKEND: {impl.BACKEND!r} is not one of {', '.join(BACKENDS)}")
    dtypes = impl.DTYPES
    if isinstance(dtypes, str) or not isinstance(dtypes, (tuple, list)) or not dtypes:
        raise SpecError(
            f"DTYPES: must be a non-empty tuple of dtype names such as ('float32',), got {dtypes!r}"
        )
    bad = [d for d in dtypes if d not in DTYPE_BYTES]
    if bad:
        raise SpecError(f"DTYPES: {bad} are not known dtypes; known: {', '.join(DTYPE_BYTES)}")
    space = impl.SPACE
    if not isinstance(space, Mapping) or not space:
        raise SpecError(f"SPACE: must be a non-empty dict of constant name -> tuple of ints, got {space!r}")
    for k, values in space.items():
        if not isinstance(k, str) or not k.isidentifier():
            raise SpecError(f"SPACE: constant name {k!r} is not an identifier (it becomes a #define)")
        if isinstance(values, (str, bytes)) or not hasattr(values, "__len__") or len(values) == 0:
            raise SpecError(
                f"SPACE: {k!r} maps to {values!r}; give a non-empty tuple of ints such as (32, 64)"
            )
        for v in values:
            if isinstance(v, bool) or not isinstance(v, int):
                hint = (
                    " (a numpy integer: write tuple(int(x) for x in values))"
                    if isinstance(v, np.integer)
                    else ""
                )
                raise SpecError(
                    f"SPACE: {k!r} holds {v!r} ({type(v).__name__}); every value must be a Python int{hint}"
                )
        if len(set(values)) != len(values):
            raise SpecError(f"SPACE: {k!r} repeats a value: {tuple(values)!r}")
    for fn in ("legal", "layout", "smem_pattern", "launch_info", "traffic"):
        if not callable(getattr(impl, fn)):
            raise SpecError(f"{fn}: must be a function, got {getattr(impl, fn)!r}")
    for fn in BATCHED:
        if getattr(impl, fn, None) is not None and not callable(getattr(impl, fn)):
            raise SpecError(f"{fn}: must be a function (or absent), got {getattr(impl, fn)!r}")
    defaults = getattr(impl, "DEFAULTS", None)
    if defaults is not None:
        if not isinstance(defaults, Mapping) or set(defaults) != set(space):
            raise SpecError(
                f"DEFAULTS: must give every SPACE constant ({', '.join(sorted(space))}) a value, "
                f"got {defaults!r}"
            )
    for attr in ("PATTERN_KEYS", "LAYOUT_KEYS", "LAYOUT_READS", "FAMILY_KEYS"):
        keys = getattr(impl, attr, None)
        if isinstance(keys, str):  # (iterating it would name its letters)
            raise SpecError(
                f"{attr}: give a tuple of constant names such as ({keys!r},), got the string {keys!r}"
            )
        if keys is not None:
            unknown = [k for k in keys if k not in space]
            if unknown:
                raise SpecError(f"{attr}: {keys!r} names constants not in SPACE ({unknown})")
    # optional fields read later (the space's pruning, the measured outputs' check): a string of
    # restrictions was iterated character by character, a tolerance of the wrong type silently replaced
    restrictions = getattr(impl, "RESTRICTIONS", None)
    if restrictions is not None and (
        isinstance(restrictions, (str, bytes))
        or callable(restrictions)
        or not hasattr(restrictions, "__iter__")
    ):
        raise SpecError(
            f"RESTRICTIONS: give a tuple of expressions or functions, such as ('ROWS <= TILE',), "
            f"got {restrictions!r}"
        )
    tol = getattr(impl, "TOLERANCE", None)
    if tol is not None and not (
        is_tolerance(tol) or (isinstance(tol, Mapping) and all(is_tolerance(v) for v in tol.values()))
    ):
        raise SpecError(
            f"TOLERANCE: a number, or a dict of dtype name -> number (a relative error >= 0), got {tol!r}"
        )
    # a base spec's expressions (GRID, BLOCK, ...) name only what they are evaluated with
    check = getattr(impl, "check_expressions", None)
    if callable(check):
        check()


def is_tolerance(v: Any) -> bool:
    """Whether ``v`` is a relative error the outputs' check can use: a finite number >= 0."""
    return (
        isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and 0 <= v < np.inf
    )


@dataclass(frozen=True)
class KernelSpec:
    """A checked wrapper around a kernel module or object that provides ``REQUIRED``."""

    impl: Any

    def __post_init__(self) -> None:
        _check_static(self.impl)

    def __getattr__(self, name: str) -> Any:
        # only for names the wrapper lacks; ``impl`` itself and the dunders pickle and copy probe for
        # (``__setstate__``, ``__reduce_ex__``...) on an instance whose ``impl`` is not set yet must fail
        # here, not ask ``self.impl`` again and recurse until the interpreter gives up
        if name == "impl" or (name.startswith("__") and name.endswith("__")):
            raise AttributeError(name)
        return getattr(self.impl, name)

    def expected(self, inputs: Any) -> Any:
        """The reference answer for ``inputs``: a base spec's ``reference`` takes the non-output arguments
        one by one (``expected``), a plain spec's takes the inputs tuple."""
        fn = getattr(self.impl, "expected", None)
        return fn(inputs) if callable(fn) else self.impl.reference(inputs)

    def check_bench(self) -> None:
        """Raise SpecError unless the spec can be measured (the bases always can)."""
        missing = [n for n in BENCH_REQUIRED if not callable(getattr(self.impl, n, None))]
        if missing:
            raise SpecError(
                f"kernel: {spec_name(self.impl)} cannot be measured; it lacks {', '.join(missing)} "
                f"(derive from autopad.CudaKernel or autopad.TritonKernel to get them)"
            )


def combine_codes(*cols: tuple[np.ndarray, int, int]) -> tuple[np.ndarray, int]:
    """(one int64 per row, equal exactly where every column is; the codes' bound) of columns given as
    (values, lowest, highest possible value): mixed radix, renumbering the combinations so far whenever
    the next radix would overflow."""
    code, size = np.zeros(len(cols[0][0]), dtype=np.int64), 1
    for col, lo, hi in cols:
        span = hi - lo + 1
        if size * span >= 2**62:
            code = np.unique(code, return_inverse=True)[1].ravel()
            size = int(code.max(initial=0)) + 1
        code *= span
        code += col - lo if lo else col
        size *= span
    return code, size


def value_ranks(col: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(col, return_inverse=True)`` of an int column; by marks in a table over its range where
    that is small (a tunable's few values: no sort)."""
    lo, hi = (int(col.min()), int(col.max())) if len(col) else (0, -1)
    if hi - lo >= 1 << 16:
        return np.unique(col, return_inverse=True)
    seen = np.zeros(hi - lo + 1, dtype=bool)
    seen[col - lo] = True
    rank = np.cumsum(seen) - 1
    return np.flatnonzero(seen) + lo, rank[col - lo]


def row_codes(cols: Sequence[np.ndarray], n: int) -> np.ndarray:
    """One int64 per row that is equal exactly where every column is, and ordered as the rows' values
    (column by column): integer columns by their range (no sort), any other by the ranks of its values."""
    if not cols or not n:
        return np.zeros(n, dtype=np.int64)
    spans = []
    for c in cols:
        c = np.asarray(c)
        if c.dtype.kind not in "iub":
            c = np.unique(c, return_inverse=True)[1].ravel()
        c = c.astype(np.int64, copy=False)
        spans.append((c, int(c.min()), int(c.max())))
    return combine_codes(*spans)[0]


def distinct_combinations(cols: Sequence[np.ndarray], n: int) -> tuple[np.ndarray, np.ndarray]:
    """(the first row holding each distinct combination of the columns' values, the combinations ordered
    by their values column by column, first column first; each row's combination) of ``n`` rows.

    Integer columns of a few values each (a space's tunables) are numbered by their values' ranks
    (``value_ranks``, no sort) into one mixed-radix code, and the codes marked in a table of every
    combination: no sort at all. Otherwise ``np.unique`` of ``row_codes``, in the same order."""
    ranks, size = [], 1
    for c in cols:
        c = np.asarray(c)
        if c.dtype.kind not in "iub" or (c.dtype.kind == "u" and c.dtype.itemsize == 8) or not n:
            size = None
            break
        vals, at = value_ranks(c.astype(np.int64, copy=False))
        ranks.append((at.ravel(), len(vals)))
        size *= len(vals)
    if size is None or size > max(8 * n, 1 << 20):
        _, first, index = np.unique(row_codes(cols, n), return_index=True, return_inverse=True)
        return first, index.ravel()
    code = np.zeros(n, dtype=np.int64)
    for at, span in ranks:  # (ranks of a column's values order its rows as the values do)
        code *= span
        code += at
    seen = np.zeros(size, dtype=bool)
    seen[code] = True
    rank = np.cumsum(seen, dtype=np.int64)
    rank -= 1
    index = rank[code]
    first = np.empty(int(rank[-1]) + 1, dtype=np.int64)
    first[index[::-1]] = np.arange(n - 1, -1, -1)  # (the last write of each is its first row)
    return first, index


def per_distinct(columns: Mapping[str, Any], names: Sequence[str]) -> tuple[list[dict[str, int]], np.ndarray]:
    """For a spec's batch hooks: the distinct combinations of the named columns (each the whole first row
    that has it, as a constants dict of Python ints) and each row's combination. A hook asks its scalar
    function once per combination of the constants that function reads and spreads the answers with the
    index (``answers[index]``)."""
    n = len(next(iter(columns.values()))) if columns else 0
    first, index = distinct_combinations([columns[k] for k in names], n)
    keys = list(columns)
    rows = [dict(zip(keys, v)) for v in zip(*(np.asarray(columns[k])[first].tolist() for k in keys))]
    return rows, index


def batched_info(
    spec: Any,
    columns: Mapping[str, Any],
    shape: tuple,
    dtype: str,
    reads: Sequence[str],
    layout: Sequence[str],
) -> dict[str, np.ndarray]:
    """A ``launch_info_batch`` from a spec's ``launch_info`` and ``smem_bytes``: ``launch_info`` once per
    distinct combination of the constants it ``reads`` (besides the layout's), ``smem_bytes`` once per
    distinct combination of the ``layout``'s. A key that some candidates leave out takes the predictor's
    default there (``autopad.predict.INFO_DEFAULTS``), or is dropped if the predictor does not read it."""
    from .predict import INFO_DEFAULTS

    rows, at = per_distinct(columns, reads)
    infos = [spec.launch_info(r, shape, dtype) for r in rows]
    tiles, at_tile = per_distinct(columns, layout)
    keys = {k for i in infos for k in i if k in INFO_DEFAULTS or all(k in j for j in infos)}
    out = {k: np.array([i.get(k, INFO_DEFAULTS.get(k, 0)) for i in infos])[at] for k in keys}
    out["smem_bytes"] = np.array([spec.smem_bytes(r, dtype) for r in tiles])[at_tile]
    return out
