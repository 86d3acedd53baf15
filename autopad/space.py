"""A kernel spec's space as columns, and what each candidate of it keeps from one ranking to the next.

``restricted`` builds the product of the spec's ``SPACE`` less what its ``RESTRICTIONS`` reject, in
``itertools.product`` order over the sorted names, without ever holding the product: a row is one integer
(its digits in the product so far, ``_Product``), a step's restriction sees the rows so far as (n, 1)
columns against the new constant's (1, values), and a column is read out of the integers only when a
restriction asks for it (the CUDA transpose: 1.5 million points, 24,000 kept, in about 0.05 s).

``Space`` keeps, per spec and dtype, the restricted columns and per candidate what does not depend on the
problem's shape: its frozen constants, its layout, its score per (dist, arch); and per shape which
candidates are legal (``legal_batch`` over the columns where the spec has it, else ``legal`` one by one).
A spec may name the constants its ``layout`` reads (``LAYOUT_READS``, an optional spec attribute): the
layouts are then asked for once per distinct combination of them (the CUDA transpose: 900 calls for
30,000 candidates), and the spec must answer alike for rows that agree on them.
``space(spec, dtype)`` finds it again while the space, the restrictions and the functions whose answers it
keeps are the same objects (a patched function is a new space).
"""

from __future__ import annotations

import math
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .arch import Arch
from .expr import ExprError, compile_expr
from .layouts import Legality
from .spec import DTYPE_BYTES, KernelSpec, SpecError, row_codes
from .spec import value_ranks as _values

__all__ = ["Space", "space", "restricted", "check_legal", "layout_of"]


def check_legal(spec: KernelSpec, constants: dict[str, int], shape: tuple[int, ...], dtype: str) -> Legality:
    """The spec's validity predicate, as a Legality; a return that is neither is a SpecError naming it."""
    res = spec.legal(constants, shape, dtype)
    if isinstance(res, Legality):
        return res
    if isinstance(res, (bool, np.bool_)):
        return Legality(bool(res), "" if res else "rejected by the spec's legal()")
    raise SpecError(
        f"legal: returned {res!r} ({type(res).__name__}) for {constants}; return a bool or an "
        f"autopad.layouts.Legality(ok, reason)"
    )


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


class Space:
    """One spec's restricted space for one dtype, and what each candidate keeps from call to call: its
    frozen constants, its layout, its score per (dist, arch) and, per shape, which candidates are legal.
    None of these depends on the problem's shape except the last, which is keyed by it."""

    def __init__(self, cols: dict[str, np.ndarray]) -> None:
        self.names = tuple(sorted(cols))
        self.cols = cols
        self.n = len(cols[self.names[0]])
        # each row's _freeze'd constants, made when first asked for (a ranking asks for its legal rows only:
        # 2,750 of the Triton transpose's 48,600), of (name, value) pairs shared between rows
        self._pairs = []
        for k in self.names:
            vals, at = _values(cols[k])
            objs = np.empty(len(vals), dtype=object)
            objs[:] = [(k, v) for v in vals.tolist()]
            self._pairs.append((objs, at.ravel()))
        self._frozen = np.full(self.n, None, dtype=object)  # (an object array: stored and read back in C)
        self._frozen_made = np.zeros(self.n, dtype=bool)
        self.masks: OrderedDict[Any, np.ndarray] = OrderedDict()  # shape -> legal rows
        self.scores: dict[Any, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}  # -> wave, ideal, known
        self._layouts = np.full(self.n, None, dtype=object)  # each row's layout, once made
        self._made = np.zeros(self.n, dtype=bool)

    def frozen_rows(self, rows: np.ndarray) -> list[tuple[tuple[str, int], ...]]:
        """The rows' frozen constants (``search._freeze`` of each row's constants), made once per row."""
        rows = np.asarray(rows, dtype=np.int64)
        at = rows[~self._frozen_made[rows]]
        if len(at):
            # each row's tuple made by zip over the columns' shared pairs, stored and read back as an object
            # array (no bytecode per row; fromiter keeps each tuple whole)
            made = zip(*(objs.take(of.take(at)).tolist() for objs, of in self._pairs))
            self._frozen[at] = np.fromiter(made, dtype=object, count=len(at))
            self._frozen_made[at] = True
        return self._frozen.take(rows).tolist()

    def constants(self, i: int) -> dict[str, int]:
        f = self._frozen[i]
        return dict(f if f is not None else self.frozen_rows(np.array([i]))[0])

    def find(self, frozen: tuple[tuple[str, int], ...]) -> int | None:
        """The row holding these frozen constants, if any."""
        if tuple(k for k, _ in frozen) != self.names:
            return None
        hit = np.ones(self.n, dtype=bool)
        for k, v in frozen:
            hit &= self.cols[k] == v
        rows = np.flatnonzero(hit)
        return int(rows[0]) if len(rows) else None

    def layouts(self, spec: KernelSpec, rows: np.ndarray, dtype: str) -> list[Any]:
        """Each row's layout, made once per row and kept; where the spec names the constants its ``layout``
        reads (``LAYOUT_READS``), once per distinct combination of them (the first row that has it asks)."""
        got, make, seen = self._layouts, spec.layout, set()

        def one(i: int) -> Any:
            c = self.constants(i)
            lay = make(c, dtype)
            if id(lay) not in seen:  # checked once per object: a spec's layouts are often shared
                _check_layout(lay, c)
                seen.add(id(lay))
            return lay

        reads = getattr(spec, "LAYOUT_READS", None)
        rows = np.asarray(rows, dtype=np.int64)
        at = rows[~self._made[rows]]
        if len(at) and reads is not None and set(reads) <= set(self.names):
            code = row_codes([self.cols[k][at] for k in reads], len(at))
            _, first, which = np.unique(code, return_index=True, return_inverse=True)
            made = np.empty(len(first), dtype=object)  # filled one by one: a layout may be a sequence
            for j, i in enumerate(at[first].tolist()):
                made[j] = one(i)
            got[at] = made[which.ravel()]
            self._made[at] = True
        else:
            for i in at.tolist():
                got[i] = one(i)
                self._made[i] = True
        return got[rows].tolist()

    def legal(self, spec: KernelSpec, shape: tuple[int, ...], dtype: str) -> np.ndarray:
        """Which rows ``legal`` accepts for ``shape``: ``legal_batch`` over the columns where the spec has
        one, else ``legal`` row by row (kept for the next call with this shape)."""
        try:
            key: Any = tuple(shape)
            hash(key)
        except TypeError:
            key = None
        hit = self.masks.get(key) if key is not None else None
        if hit is not None:
            return hit
        batch = getattr(spec, "legal_batch", None)
        if callable(batch):
            ok = np.array(batch(dict(self.cols), shape, dtype))  # a copy: it is kept read-only
            if ok.shape != (self.n,) or ok.dtype != bool:
                raise SpecError(
                    f"legal_batch: returned {ok.dtype} of shape {ok.shape}; want {self.n} booleans"
                )
        else:
            ok = np.fromiter(
                (bool(check_legal(spec, self.constants(i), shape, dtype)) for i in range(self.n)),
                dtype=bool,
                count=self.n,
            )
        ok.flags.writeable = False
        if key is not None:
            self.masks[key] = ok
            while len(self.masks) > 16:
                self.masks.popitem(last=False)
        return ok

    def score(
        self, spec: KernelSpec, rows: np.ndarray, layouts: list[Any], dtype: str, dist: str | None, arch: Arch
    ) -> tuple[np.ndarray, np.ndarray]:
        """Wavefronts and ideal per tile of ``rows``, scoring those not yet scored for (dist, arch)."""
        kept = self.scores.get((dist, arch))
        if kept is None:
            kept = self.scores[(dist, arch)] = (
                np.zeros(self.n, dtype=np.int64),
                np.zeros(self.n, dtype=np.int64),
                np.zeros(self.n, dtype=bool),
            )
        wave, ideal, known = kept
        todo = np.flatnonzero(~known[rows])
        if len(todo):
            at = rows[todo]
            lays = (
                list(layouts[: len(rows)]) if len(todo) == len(rows) else [layouts[i] for i in todo.tolist()]
            )
            keys = getattr(spec, "PATTERN_KEYS", None)
            memos = units = None
            if keys:
                memos = _Memos([self.cols[k][at] for k in keys])
                # a unit: the pattern's constants and the layout object, one code (layouts by identity)
                ids = np.unique(
                    np.fromiter(map(id, lays), dtype=np.int64, count=len(lays)), return_inverse=True
                )
                units = row_codes([*(self.cols[k][at] for k in keys), ids[1].ravel()], len(at))
            from .score import score_candidates

            w, d = score_candidates(spec, _Rows(self, at), lays, dtype, dist, arch, memos, units)
            wave[at], ideal[at] = w, d
            known[at] = True
        return wave[rows], ideal[rows]


class _Memos(Sequence):
    """Each row's ``PATTERN_KEYS`` values as a tuple of ints, made when asked for (from the columns);
    ``take`` makes those of many rows at once."""

    def __init__(self, cols: list[np.ndarray]) -> None:
        self.cols = cols

    def __len__(self) -> int:
        return len(self.cols[0]) if self.cols else 0

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return tuple(int(col[i]) for col in self.cols)

    def take(self, rows: np.ndarray) -> list[tuple[int, ...]]:
        return list(zip(*(col[rows].tolist() for col in self.cols)))


class _Rows(Sequence):
    """Rows of a ``Space`` as constants dicts, each made when asked for."""

    def __init__(self, space: Space, rows: np.ndarray) -> None:
        self.space, self.rows = space, rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return self.space.constants(int(self.rows[i]))


_SPACES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # spec impl -> {signature: Space}
_SPACES_LOCK = threading.Lock()


def _fn(obj: Any) -> Any:
    return getattr(obj, "__func__", obj)


def space(spec: KernelSpec, dtype: str) -> Space:
    """The spec's ``Space`` for ``dtype``, kept per spec object while the space, restrictions and the
    functions whose results it keeps (legal, legal_batch, layout, smem_pattern) stay the same."""
    impl = getattr(spec, "impl", spec)
    try:
        sig: Any = (
            dtype,
            tuple((k, tuple(int(v) for v in vals)) for k, vals in sorted(spec.SPACE.items())),
            tuple(getattr(spec, "RESTRICTIONS", ()) or ()),
            tuple(_fn(getattr(spec, f, None)) for f in ("legal", "legal_batch", "layout", "smem_pattern")),
        )
        hash(sig)
        with _SPACES_LOCK:
            per = _SPACES.setdefault(impl, OrderedDict())
            hit = per.get(sig)
            if hit is not None:
                per.move_to_end(sig)
                return hit
    except TypeError:  # an unhashable spec or restriction: nothing is kept
        return Space(restricted(spec, dtype))
    made = Space(restricted(spec, dtype))
    with _SPACES_LOCK:
        per[sig] = made
        while len(per) > 16:
            per.popitem(last=False)
    return made


def layout_of(spec: KernelSpec, c: Mapping[str, int], dtype: str) -> Any:
    return _check_layout(spec.layout(dict(c), dtype), c)


def _check_layout(lay: Any, c: Mapping[str, int]) -> Any:
    if lay is None or not hasattr(lay, "offsets"):
        raise SpecError(
            f"layout: returned {lay!r} for {dict(c)}; return an autopad.layouts layout (Padded, Swizzled, "
            f"Tile, Structs, Replicated) or an object with offsets(rows, cols) and footprint"
        )
    return lay
