"""A spec's ``SPACE`` less what its ``RESTRICTIONS`` reject, one int64 column per constant (``restricted``).

The product is built in ``itertools.product`` order over the sorted names without ever holding it: a row
is one integer (its digits in the product so far, ``_Product``), a step's restriction sees the rows so far
as (n, 1) columns against the new constant's (1, values) (``_Env``), and a column is read out of the
integers only when a restriction asks for it (the CUDA transpose: 1.5 million points, 24,000 kept, in
about 0.05 s). Restrictions are expression strings (``autopad.expr``) or callables (``_restrictions``).

Why a module of its own: enumerating and pruning the product is done once per spec and dtype and knows
nothing of shapes, layouts or scores, which the kept ``Space`` (space.py) holds per candidate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .expr import ExprError, compile_expr
from .spec import DTYPE_BYTES, KernelSpec, SpecError

__all__ = ["restricted"]


def _restrictions(spec: KernelSpec) -> list[tuple[str, Callable[[Mapping[str, Any]], Any]]]:
    out = []
    for r in getattr(spec, "RESTRICTIONS", ()) or ():
        if isinstance(r, str):
            try:
                out.append((r, compile_expr(r)))
            except ExprError as e:
                raise SpecError(f"RESTRICTIONS: {e}") from None
        elif callable(r):
            out.append((getattr(r, "__name__", repr(r)), r))
        else:
            raise SpecError(f"RESTRICTIONS: {r!r} is neither an expression string nor a callable")
    return out


def restricted(spec: KernelSpec, dtype: str) -> dict[str, np.ndarray]:
    """The product of the spec's ``SPACE`` (``itertools.product`` order over the sorted names) less what its
    restrictions reject, as one int64 column per name. Restrictions see the constants and ``E``, the element
    size in bytes.

    The product is built one constant at a time, and a restriction is applied as soon as every name it
    reads is there (on the rows the restrictions before it kept), so the table never holds the millions of
    points a restriction would drop at once (the CUDA transpose: 1.5 million points, 24,000 kept). A row
    is held as one integer, its position in the product so far (``_Product``); a column is read out of it
    only when a restriction reads it. Where every restriction is text, the constants that more of them
    read come first (``_build_order``; the CUDA transpose's table then peaks at a tenth of the 1.2 million
    rows of the sorted order, 0.08 -> 0.02 s in fp16) and the rows are sorted back into product order.
    """
    from .expr import names_in

    names = sorted(spec.SPACE)
    e = DTYPE_BYTES.get(dtype, 4)
    rules = _restrictions(spec)
    raw = list(getattr(spec, "RESTRICTIONS", ()) or ())
    needs = [
        (set(names_in(r)) - {"E"}) & set(names) if isinstance(r, str) else set(names) for r in raw
    ]  # a callable sees the whole point: it runs last
    order = _build_order(names, needs, raw, spec.SPACE)
    if order != names:
        # built in an order that applies the restrictions sooner (smaller tables), then put back in
        # product order; a restriction then also sees rows that one of another order would have dropped
        # first, so its numpy warnings on them are silenced, and any error rebuilds in product order
        try:
            with np.errstate(all="ignore"):
                table = _build(spec, order, needs, rules, raw, e)
            cols = _in_product_order(table, names, spec.SPACE)
        except SpecError:
            cols = None
        if cols is not None:
            for v in cols.values():
                v.flags.writeable = False
            return cols
    table = _build(spec, names, needs, rules, raw, e)
    cols = {k: table.column(k) for k in names}
    for v in cols.values():
        v.flags.writeable = False
    return cols


def _build(
    spec: KernelSpec, order: list[str], needs: list[set[str]], rules: list[Any], raw: list[Any], e: int
) -> _Product:
    """The product of the constants in ``order``, each restriction applied at the step that completes
    the names it reads (in the restrictions' order within a step)."""
    table = _Product()
    done = [False] * len(rules)
    for i, name in enumerate(order):
        vals = np.asarray(spec.SPACE[name], dtype=np.int64)
        have = set(order[: i + 1])
        now = [j for j in range(len(rules)) if not done[j] and needs[j] <= have]
        # the step's rows are (row so far) x (value of this constant): the first restriction sees the
        # columns so far as (n, 1) and this one as (1, values), its answer broadcast over that grid; the
        # next ones see the rows it kept
        grid = _Env(table, e, name, vals)
        keep = np.ones((len(table), len(vals)), dtype=bool)
        if now:
            keep &= _apply(rules[now[0]], raw[now[0]], grid, keep.shape)
        table.extend(name, vals, keep.ravel())
        for j in now[1:]:
            table.keep(_apply(rules[j], raw[j], _Env(table, e), (len(table),)))
        for j in now:
            done[j] = True
    return table


def _build_order(names: list[str], needs: list[set[str]], raw: list[Any], space: Mapping) -> list[str]:
    """The order to build the product in: constants read by more string restrictions first (fewer values
    first among equals), so that restrictions apply on small tables; the product order (sorted names)
    where a restriction is a callable (it runs last either way) or there is nothing to gain."""
    if not raw or not all(isinstance(r, str) for r in raw):
        return names
    uses = {k: sum(k in n for n in needs) for k in names}
    return sorted(names, key=lambda k: (-uses[k], len(space[k]), k))


def _in_product_order(table: _Product, names: list[str], space: Mapping) -> dict[str, np.ndarray] | None:
    """``table``'s columns with its rows in ``itertools.product`` order over ``names`` (each row's value
    indices as one mixed-radix number, sorted); None where the table was rebased (no indices kept)."""
    if table.base:
        return None
    digits = table.digits()
    code = np.zeros(len(table), dtype=np.int64)
    for k in names:
        code = code * len(space[k]) + digits[k]
    order = np.argsort(code, kind="stable")
    return {k: np.asarray(space[k], dtype=np.int64)[digits[k][order]] for k in names}


def _apply(
    rule: tuple[str, Callable[[Mapping[str, Any]], Any]], raw: Any, env: _Env, shape: tuple
) -> np.ndarray:
    """One restriction's answer over ``env``'s rows, as booleans of ``shape``."""
    text, fn = rule
    try:
        ok = fn(env) if isinstance(raw, str) else fn(env.flat())
    except (ExprError, KeyError, TypeError, ZeroDivisionError, FloatingPointError) as exc:
        raise SpecError(f"RESTRICTIONS: {text!r} failed: {exc}") from None
    ok = np.asarray(ok)
    if ok.ndim == 1 and ok.size == math.prod(shape):  # a callable's answer, one per row
        ok = ok.reshape(shape)
    ok = np.broadcast_to(ok, shape)
    if ok.dtype != bool:
        raise SpecError(f"RESTRICTIONS: {text!r} gave {ok.dtype} values, not True/False")
    return ok


class _Product:
    """Rows of a growing product, each one int: ``base row * S + digits``, the digits (each value's index
    in its constant's values, earlier constants more significant) of the constants added since the base
    (``S``: their product). Product order is the order of these ints, so dropping rows keeps it."""

    def __init__(self) -> None:
        self.base: dict[str, np.ndarray] = {}  # columns of the base rows
        self.rows = 1  # base rows
        self.code = np.zeros(1, dtype=np.int64)
        self.since: list[tuple[str, np.ndarray]] = []  # constants after the base and their values
        self.size = 1  # S

    def __len__(self) -> int:
        return len(self.code)

    def extend(self, name: str, vals: np.ndarray, keep: np.ndarray) -> None:
        """Every row times every value of ``name``, less the pairs ``keep`` (row-major) drops."""
        if self.rows * self.size * len(vals) >= 2**62:  # rebase: the rows so far become the base
            self.base = {k: self.column(k) for k in self.names()}
            self.rows, self.code, self.since, self.size = len(self.code), np.arange(len(self.code)), [], 1
        code = (self.code[:, None] * len(vals) + np.arange(len(vals))).ravel()
        self.code = code if keep.all() else code[keep]
        self.since.append((name, vals))
        self.size *= len(vals)

    def keep(self, ok: np.ndarray) -> None:
        if not ok.all():
            self.code = self.code[ok]

    def names(self) -> list[str]:
        return [*self.base, *(k for k, _ in self.since)]

    def digits(self) -> dict[str, np.ndarray]:
        """Each constant's value index per row (constants added since the base only)."""
        out, below = {}, 1
        for k, vals in reversed(self.since):
            out[k] = (self.code // below) % len(vals)
            below *= len(vals)
        return out

    def column(self, name: str) -> np.ndarray:
        below = 1
        for k, vals in reversed(self.since):
            if k == name:
                return vals[(self.code // below) % len(vals)]
            below *= len(vals)
        return self.base[name][self.code // self.size]  # KeyError: not a constant


class _Env(Mapping):
    """What a restriction sees of the table: its columns (each read out of the ``_Product`` when first
    asked for) and ``E``; on a product step, the columns so far as (n, 1) and the step's constant as
    (1, values)."""

    def __init__(
        self, table: _Product, e: int, name: str | None = None, vals: np.ndarray | None = None
    ) -> None:
        self.table, self.e, self.name, self.vals = table, e, name, vals
        self.got: dict[str, np.ndarray] = {}

    def _names(self) -> list[str]:
        return [*self.table.names(), *([self.name] if self.name is not None else [])]

    def __getitem__(self, k: str) -> Any:
        if k == "E":
            return self.e
        if k == self.name and self.vals is not None:
            return self.vals[None, :]
        if k not in self.got:
            col = self.table.column(k)
            self.got[k] = col[:, None] if self.vals is not None else col
        return self.got[k]

    def __iter__(self) -> Any:
        return iter([*self._names(), "E"])

    def __len__(self) -> int:
        return len(self._names()) + 1

    def flat(self) -> dict[str, Any]:
        """Every column over the rows, one dimension (what a callable restriction is given)."""
        if self.vals is None:
            out: dict[str, Any] = {k: self[k] for k in self._names()}
        else:
            shape = (len(self.table), len(self.vals))
            out = {k: np.broadcast_to(self[k], shape).ravel() for k in self._names()}
        out["E"] = self.e
        return out
