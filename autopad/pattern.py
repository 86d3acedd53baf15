"""Access patterns in a few declarative lines: how a block's threads index a tile, evaluated vectorised.

A kernel spec used to build its shared-memory instructions lane by lane with numpy. Here it says what each
thread touches, as the kernel's own index arithmetic, and the pattern derives every warp instruction:

    PATTERN = Pattern(
        block=("TILE_N // VEC", "BY"),
        let={"BY": "THREADS // (TILE_N // VEC)"},
        accesses=[
            store(row="ty + j", col="tx * VEC", vec="VEC", loops={"j": (0, "TILE_M", "BY")}),
            load(row="tx * VEC + v", col="ty + j", loops={"j": (0, "TILE_N", "BY"), "v": "VEC"}),
        ],
    )
    PATTERN.stacked(constants, elem_bytes)       # the model's form (access.Stacked), no Instruction objects
    PATTERN.instructions(constants, elem_bytes)  # the same as a tuple of access.Instruction

Threads are numbered as CUDA numbers them: ``tid = tx + bx * (ty + by * tz)`` for a block ``(bx, by, bz)``,
``lane = tid % 32``, ``warp = tid // 32``. Each access runs once per iteration of its ``loops`` (nested in
the order given; ``(start, stop[, step])`` or a count); every warp and iteration is one warp instruction of
``vec * E`` bytes per lane (``width=`` overrides), lanes where ``when`` is false are inactive (row -1).
A copy into shared memory, ``cp_async(row, col, src=...)``, also gives each lane's global source (bytes),
which its cost depends on (``access.Instruction.global_offsets``).
Instructions come out access by access, then warp by warp, then iteration by iteration.

Expressions are text over the thread indices (``tx ty tz tid lane warp``), loop variables, ``E`` (bytes per
element), ``let`` names and the spec's constants, in ``autopad.expr``'s integer arithmetic (``+ - * // % **
<< >> & | ^``, comparisons, ``and or not``, ``a if c else b``, ``min max abs cdiv``; compiled once per
text from an ``ast`` whitelist, never ``eval``); a division by zero or a float is an error naming the
expression. One access is one numpy pass over all its warps x iterations x lanes: no Python loop per lane
or per instruction.

For a Gluon kernel the lanes follow from its register layout: ``gluon_store(register=Blocked(...),
shape=(...))`` / ``gluon_load`` derive the instructions with ``gluon_model`` (the vector width depends on
the shared layout, so these need ``layout=``).

Where each part lives (pattern.py was split, one concern a module; every name it defined is still
importable from here): pattern_expr.py (the expressions: ``evaluate``, ``THREAD_NAMES``, ``RESERVED``),
pattern_access.py (``Access``, ``load``, ``store``, ``atomic``, ``cp_async`` and their loops),
pattern_gluon.py (``GluonAccess``, ``gluon_load``, ``gluon_store``); here, ``Pattern``, which evaluates
them for given constants into warp instructions, and its per-access result (``_Block``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from .access import Group, Instruction, Stacked, copy_sides
from .expr import ExprError  # noqa: F401  (importable from here, as before the split)
from .gluon_model import Blocked, instruction_arrays, vector_cap
from .model import WIDTHS
from .pattern_access import Access, _access, _loops, atomic, cp_async, load, store  # noqa: F401
from .pattern_expr import RESERVED, THREAD_NAMES, Expr, _Expr, _expr, _scalar, evaluate  # noqa: F401
from .pattern_gluon import GluonAccess, _gluon, gluon_load, gluon_store  # noqa: F401

__all__ = [
    "Pattern",
    "Access",
    "GluonAccess",
    "Blocked",
    "load",
    "store",
    "atomic",
    "cp_async",
    "gluon_load",
    "gluon_store",
    "evaluate",
]


@lru_cache(maxsize=64)
def _threads(bx: int, by: int, bz: int, warp: int) -> dict[str, np.ndarray]:
    """Thread indices shaped (warps, 1, lanes), so they broadcast against (1, iterations, 1) loop values."""
    tid = np.arange(bx * by * bz, dtype=np.int64).reshape(-1, 1, warp)
    out = {
        "tid": tid,
        "tx": tid % bx,
        "ty": tid // bx % by,
        "tz": tid // (bx * by),
        "lane": tid % warp,
        "warp": tid // warp,
    }
    for a in out.values():
        a.setflags(write=False)  # shared by every call through the cache
    return out


@dataclass(frozen=True, eq=False)
class _Block:
    """One access evaluated: its instructions (warp-major, then iteration) and how to name them."""

    label: str
    op: str
    width: int
    rows: np.ndarray  # (warps * per warp, lanes)
    cols: np.ndarray
    count: int
    warps: int
    iters: dict[str, np.ndarray]  # loop variable -> value in each of a warp's iterations
    regs: np.ndarray | None = None  # a Gluon access: the register each instruction starts at
    glob: np.ndarray | None = None  # a copy's global sources (``cp_async(src=...)``), like rows

    def where(self, i: int) -> str:
        """Warp and loop values (or register) of instruction ``i``, for names and messages."""
        w, k = divmod(i, max(1, len(self.rows) // self.warps))
        if self.regs is not None:
            return f"w{w} reg {int(self.regs[i])}"
        return " ".join([f"w{w}", *(f"{v}={int(x[k])}" for v, x in self.iters.items())])

    def names(self) -> list[str]:
        if self.regs is not None:
            return [f"{self.label} {self.where(i)}" for i in range(len(self.rows))]
        per_warp = len(self.rows) // self.warps
        values = [(v, x.tolist()) for v, x in self.iters.items()]
        loops = ["".join(f" {v}={x[k]}" for v, x in values) for k in range(per_warp)]
        return [f"{self.label} w{w}{it}" for w in range(self.warps) for it in loops]


@dataclass(frozen=True, eq=False, init=False, repr=False)
class Pattern:
    """How a thread block touches shared memory: a block shape and a list of accesses (module docstring).

    ``block``: ``(x[, y[, z]])`` ints or expressions (a single one for a 1-D block); optional when every
    access is a Gluon one (then the register layout's warps say it). ``tile``: ``(rows, cols)`` expressions
    that ``check`` holds the accesses to. ``let``: derived names, ``{"LX": "TILE_N // VEC", ...}``, evaluated
    in order from the constants and ``E``, usable in every expression. ``keys``: the constants the pattern
    reads; candidates equal on these (and the element size) have the same instructions.
    """

    block: tuple[_Expr, ...] | None
    accesses: tuple[Access | GluonAccess, ...]
    tile: tuple[_Expr, _Expr] | None
    let: tuple[tuple[str, _Expr], ...]
    warp: int
    keys: frozenset[str]

    def __init__(
        self,
        block: Expr | Sequence[Expr] | None = None,
        accesses: Sequence[Access | GluonAccess] = (),
        tile: Sequence[Expr] | None = None,
        let: Mapping[str, Expr] | None = None,
        warp: int = 32,
    ) -> None:
        if block is not None and not isinstance(block, (tuple, list)):
            block = (block,)
        if block is not None and not 1 <= len(block) <= 3:
            raise ValueError(f"block: need (x[, y[, z]]), got {block!r}")
        if tile is not None and len(tile) != 2:
            raise ValueError(f"tile: need (rows, cols), got {tile!r}")
        lets: list[tuple[str, _Expr]] = []
        for name, e in (let or {}).items():
            if not isinstance(name, str) or not name.isidentifier() or name in RESERVED:
                raise ValueError(f"let: {name!r} must be a name other than {sorted(RESERVED)}")
            ex = _expr(e, f"let {name}")
            if ex.names & set(THREAD_NAMES):
                raise ValueError(f"let {name}: {ex.text!r} reads thread indices; lets are block-wide values")
            lets.append((name, ex))
        for a in accesses:
            if not isinstance(a, (Access, GluonAccess)):
                raise ValueError(f"accesses: {a!r} is not a load/store/atomic/gluon_load/gluon_store access")
        if block is None and any(isinstance(a, Access) for a in accesses):
            raise ValueError("block: required when an access indexes by thread (load/store/atomic)")
        if isinstance(warp, bool) or not isinstance(warp, int) or warp <= 0:
            raise ValueError(f"warp: must be a positive int, got {warp!r}")
        fields = {
            "block": None if block is None else tuple(_expr(b, "block") for b in block),
            "accesses": tuple(accesses),
            "tile": None if tile is None else tuple(_expr(t, "tile") for t in tile),
            "let": tuple(lets),
            "warp": warp,
        }
        used: set[str] = set()
        for e in (*(fields["block"] or ()), *(fields["tile"] or ()), *(e for _, e in lets)):
            used |= e.names
        for a in fields["accesses"]:
            used |= a.names()
        fields["keys"] = frozenset(used - RESERVED - {n for n, _ in lets})
        for k, v in fields.items():
            object.__setattr__(self, k, v)

    def __repr__(self) -> str:
        return f"Pattern({len(self.accesses)} accesses, keys={sorted(self.keys)})"

    @property
    def needs_layout(self) -> bool:
        """Whether the instructions depend on the shared layout (Gluon accesses: the vector width)."""
        return any(isinstance(a, GluonAccess) for a in self.accesses)

    def memo_key(self, constants: Mapping[str, int], elem_bytes: int, layout: Any = None) -> tuple:
        """A hashable key: equal keys, equal instructions. The constants in ``keys``, ``elem_bytes``, and for
        a Gluon pattern the layout's vector cap (the only thing its instructions take from the layout)."""
        key: tuple = (elem_bytes, *sorted((k, constants.get(k)) for k in self.keys))
        if self.needs_layout and layout is not None:
            key += (("vector cap", vector_cap(layout)),)
        return key

    # ---- evaluation -------------------------------------------------------------------------------------

    def _env(self, constants: Mapping[str, int], elem_bytes: int) -> dict[str, Any]:
        if not isinstance(constants, Mapping):
            raise ValueError(f"constants: expected a name -> int mapping, got {type(constants).__name__}")
        clash = RESERVED & constants.keys()
        if clash:
            raise ValueError(f"constants: {sorted(clash)} are reserved names in patterns")
        if isinstance(elem_bytes, bool) or elem_bytes not in (1, 2, 4, 8, 16):
            raise ValueError(f"elem_bytes: {elem_bytes!r} is not one of 1, 2, 4, 8, 16")
        for k in self.keys & constants.keys():
            v = constants[k]
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                raise ValueError(f"constants: {k} = {v!r} is not an int")
        env: dict[str, Any] = dict(constants)
        env["E"] = int(elem_bytes)
        for name, e in self.let:
            env[name] = _scalar(e, env, f"let {name}")
        return env

    def _dims(self, env: Mapping[str, Any]) -> tuple[int, int, int]:
        if self.block is None:
            regs = [a.register.resolve(env) for a in self.accesses if isinstance(a, GluonAccess)]
            if not regs:
                raise ValueError("block: the pattern has no accesses to take a block shape from")
            dims = [self.warp * regs[0].num_warps]
        else:
            dims = [_scalar(e, env, "block") for e in self.block]
        if any(d <= 0 for d in dims):
            raise ValueError(f"block: {'x'.join(map(str, dims))} has an empty dimension")
        threads = int(np.prod(dims))
        if threads % self.warp:
            raise ValueError(
                f"block: {'x'.join(map(str, dims))} = {threads} threads is not a whole number of "
                f"{self.warp}-lane warps"
            )
        return (*dims, 1, 1)[:3]  # type: ignore[return-value]

    def _iterations(self, a: Access, env: dict[str, Any]) -> tuple[dict[str, np.ndarray], int]:
        """Every iteration of the nested loops, outer first: one (n,) array per loop variable."""
        it: dict[str, np.ndarray] = {}
        n = 1
        for var, start, stop, step in a.loops:
            if var in env:
                raise ValueError(f"loop variable {var!r} is also a constant or let name")
            scope = {**env, **it} if it else env
            try:
                s0, s1, st = (
                    np.broadcast_to(np.asarray(b(scope), np.int64), (n,)) for b in (start, stop, step)
                )
            except ValueError as err:
                raise ValueError(f"loop {var!r}: {err}") from None
            if (st <= 0).any():
                raise ValueError(f"loop {var!r}: step {step.text!r} = {int(st.min())} must be positive")
            cnt = np.maximum(0, -(-(s1 - s0) // st))
            outer = np.repeat(np.arange(n), cnt)
            k = np.arange(int(cnt.sum()), dtype=np.int64) - np.repeat(np.cumsum(cnt) - cnt, cnt)
            it = {v: x[outer] for v, x in it.items()}
            it[var] = s0[outer] + k * st[outer]
            n = len(k)
        return it, n

    def _access_block(self, a: Access, env: dict[str, Any], dims: tuple[int, int, int]) -> _Block | None:
        if a.enabled is not None and not _scalar(a.enabled, env, "enabled"):
            return None
        vec = _scalar(a.vec, env, "vec")
        if vec <= 0:
            raise ValueError(f"vec {a.vec.text!r} = {vec} must be positive")
        width = vec * env["E"] if a.width is None else _scalar(a.width, env, "width")
        if width not in WIDTHS:
            how = f"vec {vec} x {env['E']} bytes" if a.width is None else f"width {a.width.text!r}"
            raise ValueError(f"{how} = {width} bytes per lane is not one of {WIDTHS}")
        count = _scalar(a.count, env, "count")
        if count < 0:
            raise ValueError(f"count {a.count.text!r} = {count} must be >= 0")
        it, n = self._iterations(a, env)
        th = _threads(*dims, self.warp)
        full = {**env, **th, **{v: x.reshape(1, n, 1) for v, x in it.items()}}
        shape = (th["tid"].shape[0], n, self.warp)
        rows = np.broadcast_to(np.asarray(a.row(full), dtype=np.int64), shape)
        cols = np.broadcast_to(np.asarray(a.col(full), dtype=np.int64), shape)
        on = None if a.when is None else np.broadcast_to(np.asarray(a.when(full), dtype=bool), shape)
        negative = rows < 0 if on is None else on & (rows < 0)
        if negative.any():  # row -1 means an inactive lane to the model: say so rather than drop the lane
            w, k, lane = (int(x) for x in np.argwhere(negative)[0])
            raise ValueError(
                f"row {a.row.text!r} = {int(rows[w, k, lane])} is negative (warp {w}, lane {lane})"
            )
        glob = None
        if a.src is not None:
            glob = np.broadcast_to(np.asarray(a.src(full), dtype=np.int64), shape)
            live = rows >= 0 if on is None else on
            bad = live & ((glob < 0) | (glob % width != 0))
            if bad.any():
                w, k, lane = (int(x) for x in np.argwhere(bad)[0])
                raise ValueError(
                    f"src {a.src.text!r} = {int(glob[w, k, lane])} is not a non-negative multiple of the "
                    f"{width}-byte copy (warp {w}, lane {lane})"
                )
            glob = np.where(live, glob, 0).reshape(-1, self.warp)
        if on is not None:
            rows, cols = np.where(on, rows, -1), np.where(on, cols, 0)
        rows, cols = rows.reshape(-1, self.warp), cols.reshape(-1, self.warp)
        return _Block(a.label, a.op, width, rows, cols, count, shape[0], it, glob=glob)

    def _gluon_block(
        self, a: GluonAccess, env: dict[str, Any], dims: tuple[int, int, int], layout: Any
    ) -> _Block:
        if layout is None or not hasattr(layout, "max_phase"):
            raise ValueError(
                f"the shared layout (a Tile) sets the vector width: pass layout=, got {layout!r}"
            )
        if layout.elem_bytes != env["E"]:
            raise ValueError(
                f"layout of {layout.elem_bytes}-byte elements for a pattern of {env['E']}-byte ones"
            )
        reg = a.register.resolve(env)
        if self.warp * reg.num_warps != dims[0] * dims[1] * dims[2]:
            raise ValueError(
                f"{reg.num_warps} warps in the register layout, but the block has {np.prod(dims)} threads"
            )
        shape = tuple(_scalar(s, env, "shape") for s in a.shape)
        rows, cols, regs, width = instruction_arrays(reg, shape, layout)
        return _Block(
            a.label, a.op, width, rows, cols, _scalar(a.count, env, "count"), reg.num_warps, {}, regs
        )

    def _blocks(self, constants: Mapping[str, int], elem_bytes: int, layout: Any) -> list[_Block]:
        env = self._env(constants, elem_bytes)
        dims = self._dims(env)
        out = []
        for a in self.accesses:
            try:
                if isinstance(a, GluonAccess):
                    b = self._gluon_block(a, env, dims, layout)
                else:
                    b = self._access_block(a, env, dims)
            except ValueError as e:
                raise ValueError(f"{a.label}: {e}") from None
            if b is not None:
                out.append(b)
        return out

    def stacked(self, constants: Mapping[str, int], elem_bytes: int, layout: Any = None) -> Stacked:
        """The block's instructions in the model's form: one ``access.Group`` per (op, width) with rows and
        cols ``(n, warp)`` and counts ``(n,)``; ``access.score`` takes it as it is."""
        blocks = self._blocks(constants, elem_bytes, layout)
        keyed: dict[tuple[str, int], list[tuple[_Block, int]]] = {}
        at = 0
        for b in blocks:
            keyed.setdefault((b.op, b.width), []).append((b, at))
            at += len(b.rows)
        groups, index, globs = [], [], []
        for (op, width), parts in keyed.items():
            rows = np.concatenate([b.rows for b, _ in parts])
            cols = np.concatenate([b.cols for b, _ in parts])
            counts = np.concatenate([np.full(len(b.rows), b.count, dtype=np.int64) for b, _ in parts])
            groups.append(Group(op, width, rows, cols, counts))
            index.append(np.concatenate([np.arange(s, s + len(b.rows), dtype=np.int64) for b, s in parts]))
            # copies with a source given (cp_async(src=...)); a group's others copy in lane order
            sides, sizes = [b.glob for b, _ in parts], [len(b.rows) for b, _ in parts]
            globs.append(copy_sides(sides, sizes, self.warp, width))
        names = lambda: [n for b in blocks for n in b.names()]  # noqa: E731
        return Stacked(
            tuple(groups), tuple(index), at, names, tuple(globs) if any(g is not None for g in globs) else ()
        )

    def instructions(
        self, constants: Mapping[str, int], elem_bytes: int, layout: Any = None
    ) -> tuple[Instruction, ...]:
        """The block's instructions over one tile, access by access, warp by warp, iteration by iteration."""
        return self.stacked(constants, elem_bytes, layout).instructions()

    def check(self, constants: Mapping[str, int], elem_bytes: int = 4, layout: Any = None) -> None:
        """Raise ValueError naming the access and the problem: unknown names, a block that is not whole warps
        or over 1024 threads, bad widths or loops, and, where the tile is known (``tile=`` or a Tile
        ``layout``), lanes outside it or vectors not aligned to their own width."""
        blocks = self._blocks(constants, elem_bytes, layout)
        dims = self._dims(self._env(constants, elem_bytes))
        if int(np.prod(dims)) > 1024:
            raise ValueError(f"block: {'x'.join(map(str, dims))} = {int(np.prod(dims))} threads is over 1024")
        if self.tile is not None:
            env = self._env(constants, elem_bytes)
            nrows, ncols = (_scalar(t, env, "tile") for t in self.tile)
        elif layout is not None and hasattr(layout, "row_stride"):
            nrows, ncols = layout.rows, layout.cols
        else:
            return
        for b in blocks:
            span = max(1, b.width // elem_bytes)  # elements along the row one lane's access covers
            on = b.rows >= 0
            for bad, what in (
                (on & (b.rows >= nrows), f"row {{r}} is outside the {nrows}-row tile"),
                (
                    on & ((b.cols < 0) | (b.cols + span > ncols)),
                    f"columns {{c}}..{{e}} are outside the {ncols}-column tile",
                ),
                (on & (b.cols % span != 0), f"column {{c}} is not a multiple of the {span}-element access"),
            ):
                if bad.any():
                    i, lane = (int(x) for x in np.argwhere(bad)[0])
                    r, c = int(b.rows[i, lane]), int(b.cols[i, lane])
                    msg = what.format(r=r, c=c, e=c + span - 1)
                    raise ValueError(f"{b.label}: {msg} ({b.where(i)}, lane {lane})")
