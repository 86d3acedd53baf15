"""The thread-indexed accesses of ``autopad.pattern``: ``load``, ``store`` and ``atomic`` declarations.

What: an ``Access`` is one shared-memory instruction of a kernel's source as its threads' index arithmetic:
the row and column each lane touches, its vector (``vec`` elements, or ``width`` bytes a lane), the loops
around it (``_loops``: ``{name: (start, stop[, step]) or a count}``, nested in order), a lane mask
(``when``), executions per tile (``count``), a condition on the constants (``enabled``) and, for a copy
into shared memory, each lane's global source (``src``). ``store``, ``load``, ``atomic`` and ``cp_async``
make one, compiling and checking every expression at definition: a loop bound
may read only constants and the loops around it, and ``vec``, ``width``, ``count`` and ``enabled`` no
lane or loop value, since each is one value for the whole block.

Why a module of its own: these are declarations, checked when the spec is written; turning them into warp
instructions for given constants is the pattern's evaluation (pattern.py). The Gluon accesses, whose lanes
come from a register layout, are pattern_gluon.py's. Split out of ``autopad.pattern``, which re-exports
every name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .pattern_expr import RESERVED, THREAD_NAMES, Expr, _Expr, _expr

__all__ = ["Access", "load", "store", "atomic", "cp_async"]


@dataclass(frozen=True, eq=False)
class Access:
    """One shared-memory access in a kernel's source, as the threads' index arithmetic."""

    op: str
    row: _Expr
    col: _Expr
    vec: _Expr
    width: _Expr | None
    loops: tuple[tuple[str, _Expr, _Expr, _Expr], ...]
    when: _Expr | None
    count: _Expr
    enabled: _Expr | None
    name: str
    src: _Expr | None = None  # a copy's global source, bytes from a 128-byte-aligned base (``cp_async``)

    @property
    def label(self) -> str:
        return f"{self.op} {self.name!r}"

    def names(self) -> frozenset[str]:
        """Names read from outside the access: constants, lets, thread indices, E."""
        out: set[str] = set()
        for e in (self.row, self.col, self.vec, self.width, self.when, self.count, self.enabled, self.src):
            out |= e.names if e is not None else set()
        for _, *bounds in self.loops:
            out |= set().union(*(b.names for b in bounds))
        return frozenset(out - {v for v, *_ in self.loops})


def _loops(loops: Mapping[str, Any] | None, label: str) -> tuple[tuple[str, _Expr, _Expr, _Expr], ...]:
    out = []
    for var, spec in (loops or {}).items():
        if not isinstance(var, str) or not var.isidentifier() or var in RESERVED:
            raise ValueError(f"{label}: loop variable {var!r} must be a name other than {sorted(RESERVED)}")
        if isinstance(spec, (tuple, list)):
            if len(spec) not in (2, 3):
                raise ValueError(
                    f"{label}: loop {var!r} needs (start, stop) or (start, stop, step), got {spec!r}"
                )
            start, stop, step = (*spec, 1) if len(spec) == 2 else spec
        else:
            start, stop, step = 0, spec, 1
        bounds = tuple(_expr(b, f"{label}: loop {var!r}") for b in (start, stop, step))
        inner = {v for v, *_ in out}
        for b in bounds:  # a bound sees constants and the loops outside it, not the lanes
            wrong = b.names & (set(THREAD_NAMES) | ({var} | set(loops or {})) - inner)
            if wrong:
                raise ValueError(
                    f"{label}: loop {var!r} bound {b.text!r} reads {sorted(wrong)}; bounds may use constants "
                    f"and enclosing loops only (every lane runs the same iterations)"
                )
        out.append((var, *bounds))
    return tuple(out)


def _access(
    op: str,
    row: Expr,
    col: Expr,
    vec: Expr = 1,
    loops: Mapping[str, Any] | None = None,
    when: Expr | None = None,
    width: Expr | None = None,
    count: Expr = 1,
    name: str | None = None,
    enabled: Expr | None = None,
    src: Expr | None = None,
) -> Access:
    short = name or f"tile[{row}][{col}]".replace(" ", "")
    label = f"{op} {short!r}"
    loop_t = _loops(loops, label)
    fixed = set(THREAD_NAMES) | {v for v, *_ in loop_t}
    ex = {}
    for key, value in (("row", row), ("col", col), ("vec", vec), ("count", count)):
        ex[key] = _expr(value, f"{label}: {key}")
    for key, value in (("when", when), ("width", width), ("enabled", enabled), ("src", src)):
        ex[key] = None if value is None else _expr(value, f"{label}: {key}")
    for key in ("vec", "count", "width", "enabled"):  # one value for the whole block
        e = ex[key]
        if e is not None and e.names & fixed:
            raise ValueError(
                f"{label}: {key} {e.text!r} reads {sorted(e.names & fixed)}; it must be the same for every "
                f"lane and iteration"
            )
    return Access(
        op,
        ex["row"],
        ex["col"],
        ex["vec"],
        ex["width"],
        loop_t,
        ex["when"],
        ex["count"],
        ex["enabled"],
        short,
        ex["src"],
    )


def store(
    row: Expr,
    col: Expr,
    *,
    vec: Expr = 1,
    loops: Mapping[str, Any] | None = None,
    when: Expr | None = None,
    width: Expr | None = None,
    count: Expr = 1,
    name: str | None = None,
    enabled: Expr | None = None,
) -> Access:
    """A shared-memory store: each active lane writes ``vec`` elements from (row, col) along the row.

    ``loops``: {name: (start, stop[, step]) or a count}, nested in order; bounds may use constants and
    enclosing loops. ``when``: lane mask (false = inactive lane). ``width``: bytes per lane, instead of
    ``vec * E``. ``count``: executions per tile. ``name``: for reports. ``enabled``: a condition on the
    constants; when false the access is not part of this variant (no instructions at all).
    """
    return _access("store", row, col, vec, loops, when, width, count, name, enabled)


def load(
    row: Expr,
    col: Expr,
    *,
    vec: Expr = 1,
    loops: Mapping[str, Any] | None = None,
    when: Expr | None = None,
    width: Expr | None = None,
    count: Expr = 1,
    name: str | None = None,
    enabled: Expr | None = None,
) -> Access:
    """A shared-memory load of ``vec`` elements at (row, col); the keywords are ``store``'s."""
    return _access("load", row, col, vec, loops, when, width, count, name, enabled)


def atomic(
    row: Expr,
    col: Expr,
    *,
    vec: Expr = 1,
    loops: Mapping[str, Any] | None = None,
    when: Expr | None = None,
    width: Expr | None = None,
    count: Expr = 1,
    name: str | None = None,
    enabled: Expr | None = None,
) -> Access:
    """A shared-memory atomic (no broadcast: every lane is its own request); the keywords are ``store``'s."""
    return _access("atomic", row, col, vec, loops, when, width, count, name, enabled)


def cp_async(
    row: Expr,
    col: Expr,
    *,
    src: Expr | None = None,
    cg: bool = False,
    vec: Expr = 1,
    loops: Mapping[str, Any] | None = None,
    when: Expr | None = None,
    width: Expr | None = None,
    count: Expr = 1,
    name: str | None = None,
    enabled: Expr | None = None,
) -> Access:
    """A copy from global into shared memory (``cp.async.ca``, or ``.cg`` with ``cg=True``: 16 bytes a lane
    only): each active lane writes ``vec`` elements at (row, col), read from global byte ``src`` (from any
    128-byte-aligned base; the kernel's own source arithmetic over thread indices, loops and constants).
    A copy costs by the global lines its lanes read (``access.Instruction.global_offsets``); without
    ``src`` lane ``l`` is taken to read ``base + l * width``. The other keywords are ``store``'s."""
    if not isinstance(cg, bool):
        raise ValueError(f"cp_async: cg must be True or False, got {cg!r}")
    op = "cp.async.cg" if cg else "cp.async"
    return _access(op, row, col, vec, loops, when, width, count, name, enabled, src)
