"""Access patterns: which logical element each lane of a warp touches in each shared-memory instruction.

A pattern is a tuple of ``Instruction``s, each a warp-wide shared-memory instruction given as per-lane
logical coordinates (row, col) into a tile, plus how many times it runs per tile. A layout turns the
coordinates into byte addresses and the model (``model.analyze_batch``) turns those into wavefronts:

    pattern x layout -> addresses -> model -> wavefronts per tile

Kernels ship their own pattern, derived from the same constants that configure them (see the kernel
modules under kernels/, and ``autopad.pattern`` for the declarative form); this module holds the
vocabulary and the common shapes: row and column walks, a tile read by a TILE_C/VEC x BLOCK_Y thread block
with a j loop (the transpose), strided and struct-field reads, and histogram updates drawn from a data
distribution.

The model scores instructions of one (op, width) together, so a pattern is scored in its *stacked* form:
one ``Group`` per (op, width) holding rows and cols ``(n, warp)`` and counts ``(n,)``. ``score`` takes a
tuple of Instructions (stacked once and cached on the tuple) or a ``Stacked`` directly (what
``autopad.pattern`` produces without building an Instruction per warp).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import NamedTuple

import numpy as np

from .arch import Arch, get_arch
from .model import OPS, WIDTHS, analyze_batch

COPY_OPS = ("cp.async", "cp.async.cg")  # the ops with a global side (``Instruction.global_offsets``)

__all__ = [
    "Instruction",
    "Group",
    "Stacked",
    "PatternCost",
    "score",
    "addresses",
    "row_walk",
    "column_walk",
    "block_tile",
    "field_read",
    "histogram_updates",
]


@dataclass(frozen=True, eq=False)
class Instruction:
    """One warp instruction: lane i touches element (rows[i], cols[i]); a row of -1 marks an inactive lane.

    ``access_bytes`` is the width of each lane's access (a vector of several elements starts at the given
    element). ``count`` is how many times the instruction runs per tile, so that a pattern's wavefronts
    are per tile.

    ``global_offsets`` (ops "cp.async" and "cp.async.cg" only): each lane's global source, in bytes from a
    128-byte-aligned base (any base: only each source's 128-byte line and its place in the line matter).
    A cp.async's cost depends on it: the lanes of a store phase that read one slot of several global lines
    queue, and ``.cg`` moves merge only within one line (model_cp_async.py, model_cp_async_cg.py). Without
    it the model assumes lane ``l`` copies ``base + l * access_bytes``, one line for each 128 bytes of
    lanes; give it where a tile row is shorter than 128 bytes or rows are not line-aligned (a 32-element
    bf16 row: two lines in one staging row).
    """

    name: str
    op: str
    access_bytes: int
    rows: np.ndarray
    cols: np.ndarray
    count: int = 1
    global_offsets: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"op: {self.op!r} is not one of {', '.join(OPS)}")
        if self.access_bytes not in WIDTHS:
            raise ValueError(f"access_bytes: {self.access_bytes!r} is not one of {WIDTHS}")
        r = np.asarray(self.rows, dtype=np.int64)
        c = np.asarray(self.cols, dtype=np.int64)
        if r.shape != c.shape or r.ndim != 1:
            raise ValueError(f"rows and cols must be 1-D and of equal length, got {r.shape} and {c.shape}")
        object.__setattr__(self, "rows", r)
        object.__setattr__(self, "cols", c)
        if self.global_offsets is not None:
            object.__setattr__(self, "global_offsets", _global_side(self.name, self.op, self.access_bytes, r,
                                                                    self.global_offsets))  # fmt: skip


def _global_side(name: str, op: str, width: int, rows: np.ndarray, glob: object) -> np.ndarray:
    """``global_offsets`` checked: a cp.async op, one int per lane, each active lane's a non-negative
    multiple of the access width (the copy's alignment); inactive lanes' values are ignored (set to 0)."""
    if op not in COPY_OPS:
        raise ValueError(
            f"instruction {name!r}: global_offsets is for the copies into shared memory "
            f"({', '.join(COPY_OPS)}); op {op!r} has no global side"
        )
    try:
        g = np.asarray(glob)
    except (TypeError, ValueError) as e:
        raise ValueError(f"instruction {name!r}: global_offsets must be integers, one a lane ({e})") from None
    if g.shape != rows.shape or not (g.size == 0 or np.issubdtype(g.dtype, np.integer)):
        raise ValueError(
            f"instruction {name!r}: global_offsets must be integers, one a lane ({rows.shape[0]}), "
            f"got {g.dtype} of shape {g.shape}"
        )
    big = (rows >= 0) & (g > np.iinfo(np.int64).max) if g.dtype.kind == "u" else np.zeros(0, bool)
    if big.any():  # an active lane's unsigned offset that int64 would wrap negative
        lane = int(np.argmax(big))
        raise ValueError(
            f"instruction {name!r}: lane {lane}'s global offset {int(g[lane])} is beyond 2**63 - 1 bytes"
        )
    g = np.where(rows >= 0, g.astype(np.int64), 0)
    bad = (g < 0) | (g % width != 0)
    if bad.any():
        lane = int(np.argmax(bad))
        raise ValueError(
            f"instruction {name!r}: lane {lane}'s global offset {int(g[lane])} is not a non-negative "
            f"multiple of its {width}-byte copy"
        )
    return g


class Group(NamedTuple):
    """Every instruction of one (op, access width), stacked: lane i of instruction k touches
    (rows[k, i], cols[k, i]); counts[k] executions per tile."""

    op: str
    access_bytes: int
    rows: np.ndarray  # (n, warp) int64, -1 = inactive lane
    cols: np.ndarray  # (n, warp) int64
    counts: np.ndarray  # (n,) int64


@dataclass(frozen=True, eq=False)
class Stacked:
    """A pattern in the model's form: one ``Group`` per (op, width), in first-seen order.

    ``index[g]`` holds the positions of group g's instructions in the pattern's order (0 .. size - 1), so a
    score can be reported per instruction. ``names`` are built only when asked for (``namer``), since the
    tuner scores thousands of stacks and never reads them. ``globs``: empty, or one entry a group, None or
    the group's global sources ``(n, warp)`` (a cp.async group whose instructions give ``global_offsets``;
    those that give none copy lane-ordered).
    """

    groups: tuple[Group, ...]
    index: tuple[np.ndarray, ...]
    size: int
    namer: Callable[[], Sequence[str]] | None = field(default=None, repr=False)
    globs: tuple[np.ndarray | None, ...] = ()

    def __post_init__(self) -> None:
        if len(self.index) != len(self.groups):
            raise ValueError(f"index: {len(self.index)} entries for {len(self.groups)} groups")
        if self.globs and len(self.globs) != len(self.groups):
            raise ValueError(f"globs: {len(self.globs)} entries for {len(self.groups)} groups")
        for g, glob in zip(self.groups, self.globs):
            if glob is not None and (g.op not in COPY_OPS or np.shape(glob) != g.rows.shape):
                raise ValueError(
                    f"globs: group ({g.op}, {g.access_bytes}) gets a global side of shape {np.shape(glob)}; "
                    f"only {', '.join(COPY_OPS)} groups take one, shaped like their rows {g.rows.shape}"
                )
        for g, idx in zip(self.groups, self.index, strict=True):
            if g.op not in OPS:
                raise ValueError(f"op: {g.op!r} is not one of {', '.join(OPS)}")
            if g.access_bytes not in WIDTHS:
                raise ValueError(f"access_bytes: {g.access_bytes!r} is not one of {WIDTHS}")
            n = len(idx)
            if g.rows.ndim != 2 or g.rows.shape != g.cols.shape or len(g.rows) != n or g.counts.shape != (n,):
                raise ValueError(
                    f"group ({g.op}, {g.access_bytes}): rows {g.rows.shape}, cols {g.cols.shape}, counts "
                    f"{g.counts.shape} and {n} positions do not agree"
                )

    def __getitem__(self, key: tuple[str, int]) -> Group:
        for g in self.groups:
            if (g.op, g.access_bytes) == key:
                return g
        raise KeyError(key)

    def items(self) -> Iterator[tuple[tuple[str, int], Group]]:
        """((op, access_bytes), group) for each group."""
        return (((g.op, g.access_bytes), g) for g in self.groups)

    @cached_property
    def counts(self) -> np.ndarray:
        """Executions per tile of every instruction, in pattern order."""
        out = np.zeros(self.size, dtype=np.int64)
        for g, idx in zip(self.groups, self.index, strict=True):
            out[idx] = g.counts
        return out

    @cached_property
    def names(self) -> tuple[str, ...]:
        if self.namer is None:
            return tuple(f"instruction {i}" for i in range(self.size))
        return tuple(self.namer())

    def glob(self, g: int) -> np.ndarray | None:
        """Group ``g``'s global sources ``(n, warp)``, or None (lane-ordered, or not a copy)."""
        return self.globs[g] if self.globs else None

    def instructions(self) -> tuple[Instruction, ...]:
        """The pattern as Instructions, in order (for ``explain`` and reports; scoring needs none)."""
        slot: list[tuple[int, int]] = [None] * self.size  # type: ignore[list-item]
        for j, idx in enumerate(self.index):
            for k, i in enumerate(idx.tolist()):
                slot[i] = (j, k)
        out = []
        for name, (j, k) in zip(self.names, slot, strict=True):
            g, glob = self.groups[j], self.glob(j)
            out.append(Instruction(name, g.op, g.access_bytes, g.rows[k], g.cols[k], int(g.counts[k]),
                                   None if glob is None else glob[k]))  # fmt: skip
        return tuple(out)

    @staticmethod
    def from_instructions(pattern: Sequence[Instruction], warp: int = 32) -> Stacked:
        """Stack a tuple of Instructions (cached on the tuple: instructions hash by identity)."""
        return _grouped(tuple(pattern), warp)


@dataclass(frozen=True, eq=False)
class PatternCost:
    """Wavefronts per tile for a pattern under a layout, with the conflict-free count and each instruction."""

    wavefronts: int
    ideal: int
    pattern: tuple[Instruction, ...] | Stacked
    instruction_wavefronts: np.ndarray  # per execution of each instruction
    instruction_ideal: np.ndarray

    @property
    def conflicts(self) -> int:
        return self.wavefronts - self.ideal

    @property
    def degree(self) -> float:
        return self.wavefronts / self.ideal if self.ideal else 1.0

    @property
    def per_instruction(self) -> tuple[tuple[str, int, int, int], ...]:
        """(name, count, wavefronts, ideal) of each instruction, per execution."""
        if isinstance(self.pattern, Stacked):
            names, counts = self.pattern.names, self.pattern.counts.tolist()
        else:
            names, counts = [i.name for i in self.pattern], [i.count for i in self.pattern]
        return tuple(
            (name, count, int(w), int(d))
            for name, count, w, d in zip(names, counts, self.instruction_wavefronts, self.instruction_ideal)
        )


def addresses(instr: Instruction, layout: object) -> np.ndarray:
    """Per-lane byte addresses of one instruction under ``layout`` (-1 for inactive lanes)."""
    return layout.offsets(instr.rows, instr.cols)  # type: ignore[attr-defined]


@lru_cache(maxsize=256)
def _grouped(pattern: tuple[Instruction, ...], warp: int) -> Stacked:
    """The instructions stacked per (op, width).

    Cached on the pattern object itself (instructions hash by identity), so scoring one pattern under
    many layouts stacks it once.
    """
    return stack(pattern, warp)


def copy_sides(
    sides: Sequence[np.ndarray | None], sizes: Sequence[int], warp: int, width: int
) -> np.ndarray | None:
    """A copy group's global sources ``(n, warp)`` from its parts' (each ``(size, warp)`` or None), or None
    where no part gives one: the parts that give none copy in lane order (lane ``l`` from ``l * width``)."""
    if all(s is None for s in sides):
        return None
    lane_ordered = np.arange(warp, dtype=np.int64) * width
    parts = zip(sides, sizes, strict=True)
    return np.concatenate([np.broadcast_to(lane_ordered, (k, warp)) if s is None else s for s, k in parts])


def stack(pattern: Sequence[Instruction], warp: int) -> Stacked:
    """``_grouped`` uncached: any objects with an Instruction's fields (name, op, access_bytes, rows, cols,
    count, and ``global_offsets`` or not), hashable or not (score.py stacks a spec's pattern once a chunk)."""
    groups: dict[tuple[str, int], list[int]] = {}
    for i, ins in enumerate(pattern):
        if len(ins.rows) != warp:
            raise ValueError(
                f"instruction {ins.name!r} has {len(ins.rows)} lanes; this arch's warps have {warp}"
            )
        groups.setdefault((ins.op, ins.access_bytes), []).append(i)
    out, index, globs = [], [], []
    for (op, width), idx in groups.items():
        rows = np.stack([pattern[i].rows for i in idx])
        cols = np.stack([pattern[i].cols for i in idx])
        counts = np.array([pattern[i].count for i in idx], dtype=np.int64)
        out.append(Group(op, width, rows, cols, counts))
        index.append(np.asarray(idx, dtype=np.int64))
        sides = [getattr(pattern[i], "global_offsets", None) for i in idx]
        globs.append(copy_sides([None if s is None else s[None] for s in sides], [1] * len(idx), warp, width))
    return Stacked(tuple(out), tuple(index), len(pattern), lambda: [ins.name for ins in pattern],
                   tuple(globs) if any(g is not None for g in globs) else ())  # fmt: skip


def score(
    pattern: Sequence[Instruction] | Stacked, layout: object, arch: str | Arch = "sm_90"
) -> PatternCost:
    """Wavefronts per tile: every instruction's addresses through the model, weighted by its count.

    ``pattern`` is a sequence of Instructions or its ``Stacked`` form (``autopad.pattern`` makes one
    directly). Instructions of one (op, width) go through the layout and the model as one vectorised batch.
    """
    a = get_arch(arch)
    if isinstance(pattern, Stacked):
        stacked = pattern
        for g in stacked.groups:
            if g.rows.shape[1] != a.warp_size:
                raise ValueError(
                    f"group ({g.op}, {g.access_bytes}) has {g.rows.shape[1]} lanes; this arch's warps have "
                    f"{a.warp_size}"
                )
    else:
        pattern = tuple(pattern)
        stacked = _grouped(pattern, a.warp_size)
    wave = np.zeros(stacked.size, dtype=np.int64)
    ideal = np.zeros(stacked.size, dtype=np.int64)
    for j, (g, idx) in enumerate(zip(stacked.groups, stacked.index, strict=True)):
        offsets = layout.offsets(g.rows, g.cols)  # type: ignore[attr-defined]
        wave[idx], ideal[idx] = analyze_batch(
            offsets, g.access_bytes, g.op, a, global_addresses=stacked.glob(j)
        )
    return PatternCost(int(wave @ stacked.counts), int(ideal @ stacked.counts), pattern, wave, ideal)


def _lanes(warp: int) -> np.ndarray:
    return np.arange(warp, dtype=np.int64)


def row_walk(
    row: int = 0, op: str = "load", elem_bytes: int = 4, vec: int = 1, warp: int = 32
) -> Instruction:
    """Lane i touches elements (row, i*vec .. i*vec+vec-1): a contiguous read along one row."""
    lane = _lanes(warp)
    return Instruction(f"row {row}", op, elem_bytes * vec, np.full(warp, row), lane * vec)


def column_walk(col: int = 0, op: str = "load", elem_bytes: int = 4, warp: int = 32) -> Instruction:
    """Lane i touches element (i, col): a read down one column, the transpose's hard case."""
    lane = _lanes(warp)
    return Instruction(f"column {col}", op, elem_bytes, lane, np.full(warp, col))


def block_tile(
    tile_rows: int,
    tile_cols: int,
    block_x: int,
    block_y: int,
    op: str,
    elem_bytes: int = 4,
    vec: int = 1,
    transposed: bool = False,
    warp: int = 32,
) -> tuple[Instruction, ...]:
    """Every warp instruction of a ``block_x x block_y`` thread block sweeping a tile with a j loop.

    Thread (tx, ty) handles elements (ty + j, tx * vec + v) for j = 0, block_y, 2 block_y, ... . With
    ``transposed`` the roles of row and column swap: (tx * vec + v, ty + j), the read-out of a transpose,
    where each v is a separate ``elem_bytes`` access (the vector runs down a column). Lanes are numbered
    tx + ty * block_x, 32 to a warp, as CUDA numbers them.
    """
    threads = block_x * block_y
    if threads % warp:
        raise ValueError(f"block {block_x}x{block_y} is not a whole number of {warp}-lane warps")
    across, across_name = (tile_rows, "rows") if transposed else (tile_cols, "columns")
    span, span_name = (tile_cols, "columns") if transposed else (tile_rows, "rows")
    if block_x * vec != across:
        raise ValueError(f"block_x {block_x} x vec {vec} must cover the tile's {across} {across_name}")
    if span % block_y:
        raise ValueError(f"block_y {block_y} does not divide the tile's {span} {span_name}")
    out = []
    tid = np.arange(threads, dtype=np.int64)
    tx, ty = tid % block_x, tid // block_x
    for w in range(threads // warp):
        sl = slice(w * warp, (w + 1) * warp)
        for j in range(0, span, block_y):
            if transposed:
                for v in range(vec):
                    out.append(
                        Instruction(f"warp {w} j {j} v {v}", op, elem_bytes, tx[sl] * vec + v, ty[sl] + j)
                    )
            else:
                out.append(Instruction(f"warp {w} j {j}", op, elem_bytes * vec, ty[sl] + j, tx[sl] * vec))
    return tuple(out)


def field_read(
    count: int, field_index: int, op: str = "load", field_bytes: int = 4, warp: int = 32
) -> Instruction:
    """Lane i reads field ``field_index`` of record i (AoS vs SoA is the layout's business)."""
    lane = _lanes(warp)
    rows = np.where(lane < count, lane, -1)
    return Instruction(f"field {field_index}", op, field_bytes, rows, np.full(warp, field_index))


def histogram_updates(
    values: Iterable[int] | np.ndarray,
    replica_of_lane: Sequence[int] | np.ndarray | None = None,
    warp: int = 32,
    name: str = "update",
) -> tuple[Instruction, ...]:
    """Shared atomics of a warp binning ``values`` 32 at a time: lane i adds 1 to bin values[k*32 + i].

    ``replica_of_lane`` picks which sub-histogram (replica) each lane updates; by default all use replica 0.
    A tail shorter than a warp leaves the remaining lanes inactive.
    """
    v = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=np.int64).ravel()
    rep = np.zeros(warp, dtype=np.int64) if replica_of_lane is None else np.asarray(replica_of_lane, np.int64)
    if rep.shape != (warp,):
        raise ValueError(f"replica_of_lane: need {warp} entries, got {rep.shape}")
    out = []
    for k in range(0, len(v), warp):
        chunk = v[k : k + warp]
        rows = np.full(warp, -1, dtype=np.int64)
        cols = np.zeros(warp, dtype=np.int64)
        rows[: len(chunk)] = rep[: len(chunk)]
        cols[: len(chunk)] = chunk
        out.append(Instruction(f"{name} {k // warp}", "atomic", 4, rows, cols))
    return tuple(out)
