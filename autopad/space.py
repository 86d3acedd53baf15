"""A kernel spec's space as columns, and what each candidate of it keeps from one ranking to the next.

``Space`` keeps, per spec and dtype, the restricted columns and per candidate what does not depend on the
problem's shape: its frozen constants, its layout, its score per (dist, arch); and per shape which
candidates are legal (``legal_batch`` over the columns where the spec has it, else ``legal`` one by one).
A spec may name the constants its ``layout`` reads (``LAYOUT_READS``, an optional spec attribute): the
layouts are then asked for once per distinct combination of them (the CUDA transpose: 900 calls for
30,000 candidates), and the spec must answer alike for rows that agree on them.
``space(spec, dtype)`` finds it again while the space, the restrictions and the functions whose answers it
keeps are the same objects (a patched function is a new space).

Where each part lives (space.py was split, one concern a module; every name it defined is still importable
from here): space_product.py (``restricted``: the product of the spec's ``SPACE`` less what its
``RESTRICTIONS`` reject, built without ever holding the whole product); here, ``Space``, ``space`` and the
checks of what a spec's ``legal`` and ``layout`` return.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .arch import Arch
from .layouts import Legality

# the part space.py was split into (see above); its names are importable from here as before
from .space_product import (  # noqa: F401
    _apply,
    _build,
    _build_order,
    _Env,
    _in_product_order,
    _Product,
    _restrictions,
    restricted,
)
from .spec import KernelSpec, SpecError, row_codes
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


class Space:
    """One spec's restricted space for one dtype, and what each candidate keeps from call to call: its
    frozen constants, its layout, its score per (dist, arch) and, per shape, which candidates are legal.
    None of these depends on the problem's shape except the last, which is keyed by it."""

    def __init__(self, cols: dict[str, np.ndarray]) -> None:
        self.names = tuple(sorted(cols))
        self.cols = cols
        self.n = len(cols[self.names[0]])
        # each row's _freeze'd constants, made when first asked for (a ranking asks for its legal rows only:
        # 2,732 of the Triton transpose's 48,600 in fp16), of (name, value) pairs shared between rows
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
