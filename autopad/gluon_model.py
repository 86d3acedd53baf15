"""Gluon layouts -> autopad's bank-conflict model (numpy only), plus a no-GPU sm_90 compile helper.

A Gluon kernel moves a register tensor to or from shared memory with ``smem.store(x)`` / ``smem.load(L)``.
Which lane touches which element in each ``st.shared`` / ``ld.shared`` follows from two things: the
register layout (a ``gl.BlockedLayout``: size_per_thread, threads_per_warp, warps_per_cta, order) and the
shared layout (``gl.SwizzledSharedLayout`` / ``gl.PaddedSharedLayout``, here an autopad ``Tile``: ``Swizzled``
or ``Padded``). This module rebuilds what Triton's lowering does, vectorised with numpy:

1. The blocked layout as a *linear layout*: each bit of the register, lane and warp index contributes one
   basis vector (a power of two along one tensor dimension); register bits first cover ``size_per_thread``
   (fastest dimension first, as ``order`` says), lane bits ``threads_per_warp``, warp bits
   ``warps_per_cta``; further register bits repeat the CTA tile until it covers the tensor. A lane or warp
   basis that points past the tensor becomes zero (those threads hold copies: broadcast).
2. The vector width: the longest run of leading register bits that step one element at a time along the
   shared layout's contiguous dimension (row-major, ``order=[1, 0]``), capped at 16 bytes and, for an XOR
   swizzle, at ``sw_vec`` (chunks are permuted independently, so a vector may not straddle two).
3. One instruction per warp per vector of registers: lane ``l`` accesses the element its registers
   ``[j*v, (j+1)*v)`` hold, ``v * elem_bytes`` bytes wide. The layout turns (row, col) into byte addresses
   and the model (``autopad.access.score``) counts wavefronts: 32 banks of 4 bytes, bank ``(addr // 4) % 32``.

Why it matters: with an fp32 ``[1, 4]`` register layout writing a ``[64, 64]`` tile row-major, eight lanes
cover one 128-byte row (all 32 banks) and each 16-byte store phase serves 8 lanes, so no conflict; reading
the same tile down its columns (``order=[0, 1]``) puts lanes 0..31 in rows 0..31 of one column: a row is
256 bytes = two full turns of the banks, so all 32 lanes hit one bank (32 wavefronts). Padding each row
by one word, or XOR-swizzling its 16-byte chunks by row, spreads them over 32 banks (1 wavefront).

``compile_sm90`` compiles a (Gluon or plain Triton) kernel for sm_90 without a GPU; ``shared_bytes`` and
``bank_conflicts_gluon`` read what the compiler says (allocation size; Triton's own conflict counter).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .access import Instruction, PatternCost, score
from .expr import evaluate
from .layouts import Swizzled, Tile

__all__ = [
    "Blocked",
    "lane_elements",
    "vector_cap",
    "vector_width",
    "instructions",
    "instruction_arrays",
    "moves",
    "Moves",
    "score_layouts",
    "to_gluon",
    "compile_sm90",
]


_FIELDS = ("size_per_thread", "threads_per_warp", "warps_per_cta", "order")


@dataclass(frozen=True)
class Blocked:
    """A 2-D ``gl.BlockedLayout`` (no CGA): its four parameters, as plain tuples.

    Entries may be expressions over a kernel's constants (``Blocked((1, "VEC"), (8, 4), ("WARPS", 1))``, as
    ``autopad.pattern.gluon_store`` takes them): such a layout is ``symbolic`` and ``resolve(constants)``
    turns it into a concrete one, validated then.
    """

    size_per_thread: tuple[int | str, int | str]
    threads_per_warp: tuple[int | str, int | str]
    warps_per_cta: tuple[int | str, int | str]
    order: tuple[int | str, int | str] = (1, 0)

    def __post_init__(self) -> None:
        for name in _FIELDS:
            v = tuple(getattr(self, name))
            if len(v) != 2:
                raise ValueError(f"{name}: need two entries (a 2-D layout), got {v}")
            object.__setattr__(self, name, v)
        # whether some entry is an expression, once (``symbolic`` is read at every use of the layout)
        object.__setattr__(
            self, "_symbolic", any(isinstance(x, str) for n in _FIELDS for x in getattr(self, n))
        )
        if self._symbolic:
            return
        for name in ("size_per_thread", "threads_per_warp", "warps_per_cta"):
            v = tuple(int(x) for x in getattr(self, name))
            if len(v) != 2 or any(x <= 0 or x & (x - 1) for x in v):
                raise ValueError(f"{name}: need two powers of two, got {v}")
            object.__setattr__(self, name, v)
        if self.threads_per_warp[0] * self.threads_per_warp[1] != 32:
            raise ValueError(f"threads_per_warp {self.threads_per_warp} must multiply to 32")
        if tuple(sorted(self.order)) != (0, 1):
            raise ValueError(f"order {self.order} must be a permutation of (0, 1)")
        object.__setattr__(self, "order", tuple(int(x) for x in self.order))

    @property
    def symbolic(self) -> bool:
        """Whether some entry is an expression still to be resolved against a kernel's constants."""
        return self._symbolic

    def resolve(self, constants: Mapping[str, int]) -> Blocked:
        """This layout with every expression evaluated over ``constants`` (``autopad.expr`` arithmetic).

        Also its ``__call__``: a template works wherever a ``constants -> Blocked`` function is expected."""
        if not self.symbolic:
            return self
        return Blocked(*(tuple(int(evaluate(x, constants)) for x in getattr(self, f)) for f in _FIELDS))

    __call__ = resolve

    def _concrete(self) -> None:
        if self.symbolic:
            raise ValueError(f"{self}: has expressions; resolve(constants) it first")

    @property
    def num_warps(self) -> int:
        self._concrete()
        return self.warps_per_cta[0] * self.warps_per_cta[1]

    def gluon(self) -> object:
        """The ``gl.BlockedLayout`` itself (imports triton)."""
        from triton.experimental.gluon import language as gl

        self._concrete()
        return gl.BlockedLayout(
            list(self.size_per_thread),
            list(self.threads_per_warp),
            list(self.warps_per_cta),
            list(self.order),
        )


def _bases(layout: Blocked, shape: Sequence[int]) -> tuple[list, list, list]:
    """Register, lane and warp basis vectors (row, col) of the blocked layout over ``shape``."""
    layout._concrete()
    shape = [int(s) for s in shape]
    if any(s <= 0 or s & (s - 1) for s in shape):
        raise ValueError(f"shape {shape} must be powers of two (Gluon tensors are)")

    def basis(dim: int, step: int) -> tuple[int, int]:
        if step >= shape[dim]:
            return (0, 0)  # points past the tensor: broadcast
        return (step, 0) if dim == 0 else (0, step)

    reg, lane, warp = [], [], []
    for dim in layout.order:
        reg += [basis(dim, 1 << b) for b in range(int(math.log2(layout.size_per_thread[dim])))]
    for dim in layout.order:
        s = layout.size_per_thread[dim]
        lane += [basis(dim, s << b) for b in range(int(math.log2(layout.threads_per_warp[dim])))]
    for dim in layout.order:
        s = layout.size_per_thread[dim] * layout.threads_per_warp[dim]
        warp += [basis(dim, s << b) for b in range(int(math.log2(layout.warps_per_cta[dim])))]
    reg = [b for b in reg if b != (0, 0)]  # register bits past the tensor are dropped, not broadcast
    for dim in layout.order:  # repeat the CTA tile until it covers the tensor
        tile = layout.size_per_thread[dim] * layout.threads_per_warp[dim] * layout.warps_per_cta[dim]
        while tile < shape[dim]:
            reg.append(basis(dim, tile))
            tile *= 2
    return reg, lane, warp


def _apply(bases: list, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r = np.zeros(index.shape, dtype=np.int64)
    c = np.zeros(index.shape, dtype=np.int64)
    for bit, (br, bc) in enumerate(bases):
        on = (index >> bit) & 1
        r ^= on * br
        c ^= on * bc
    return r, c


def lane_elements(layout: Blocked, shape: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols), each ``[warps, 32, registers]``: the element every register of every thread holds.

    Each index's bases apply to that index alone (a warp's, a lane's, a register's part of the element),
    and the element is the XOR of the three parts: worked out on each axis, then broadcast."""
    reg, lane, warp = _bases(layout, shape)
    nw, nr = layout.num_warps, 1 << len(reg)
    rr, rc = _apply(reg, np.arange(nr, dtype=np.int64))
    lr, lc = _apply(lane, np.arange(32, dtype=np.int64))
    wr, wc = _apply(warp, np.arange(nw, dtype=np.int64))
    rows = wr[:, None, None] ^ lr[None, :, None] ^ rr[None, None, :]
    cols = wc[:, None, None] ^ lc[None, :, None] ^ rc[None, None, :]
    return rows, cols


def vector_cap(smem: Tile) -> int:
    """The widest vector (in elements) Triton may use on ``smem``: 16 bytes, no wider than a swizzle chunk
    (chunks move independently, so a vector may not straddle two), and aligned under the padding (row r
    starts r * pad elements on, so only pad's lowest set bit keeps every row's vectors aligned)."""
    cap = max(1, 16 // smem.elem_bytes)
    if smem.max_phase > 1:
        cap = min(cap, smem.sw_vec)
    if smem.pad:
        cap = min(cap, smem.pad & -smem.pad)
    return cap


def _vector_bits(layout: Blocked, shape: Sequence[int], smem: Tile) -> list[int]:
    """Register bits that form one vector: bases (0, 1), (0, 2), (0, 4).. wherever they sit in the register
    index (Triton's ``largestVectorisation`` permutes registers to find them), capped at 16 bytes, at the
    swizzle's ``sw_vec`` chunk and at the padding's alignment (both, for a padded and swizzled tile)."""
    return _capped_bits(_bases(layout, shape)[0], vector_cap(smem))


def _capped_bits(reg: list, cap: int) -> list[int]:
    bits, v = [], 1
    while v < cap and (0, v) in reg:
        bits.append(reg.index((0, v)))
        v *= 2
    return bits


def vector_width(layout: Blocked, shape: Sequence[int], smem: Tile) -> int:
    """Elements per ``ld/st.shared``: registers holding consecutive elements of a row, at most 16 bytes."""
    return 1 << len(_vector_bits(layout, shape, smem))


def instruction_arrays(
    layout: Blocked, shape: Sequence[int], smem: Tile
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """``instructions`` as arrays, in the same order: rows and cols ``(n, 32)``, the register each
    instruction starts at ``(n,)`` (warp ``i // (n / warps)``), and the access width in bytes. The arrays
    are shared between calls (read-only): they depend on the shared layout only through its vector cap."""
    rows, cols, starts, elems = _arrays(layout, tuple(int(s) for s in shape), vector_cap(smem))
    return rows, cols, starts, elems * smem.elem_bytes


@lru_cache(maxsize=4096)
def _arrays(
    layout: Blocked, shape: tuple[int, ...], cap: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(rows, cols, starts, elements per vector) of ``instruction_arrays``, for a vector cap in elements."""
    rows, cols, reg = _lanes(layout, shape)
    vbits = _capped_bits(reg, cap)
    nw, lanes, nr = rows.shape
    vmask = sum(1 << b for b in vbits)
    starts = np.array([j for j in range(nr) if not j & vmask], dtype=np.int64)
    # (warp, lane, register) -> (warp, vector start, lane): one row per warp instruction, warp-major
    r = rows[:, :, starts].transpose(0, 2, 1).reshape(-1, lanes)
    c = cols[:, :, starts].transpose(0, 2, 1).reshape(-1, lanes)
    out = (r, c, np.tile(starts, nw))
    for a in out:
        a.setflags(write=False)
    return (*out, 1 << len(vbits))


@lru_cache(maxsize=1024)
def _lanes(layout: Blocked, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, list]:
    """``lane_elements`` and the register bases, once per (register layout, shape): the vector caps of
    every shared layout share them."""
    return (*lane_elements(layout, shape), _bases(layout, shape)[0])


def instructions(layout: Blocked, shape: Sequence[int], smem: Tile, op: str) -> tuple[Instruction, ...]:
    """Every warp's shared-memory instructions for one ``smem.store(x)`` (op="store") or ``load``.

    Registers are grouped into vectors (``_vector_bits``); one instruction per warp per group, lane l at the
    group's first element. Broadcast copies held by other warps are kept (they issue real instructions).
    """
    return tuple(moves((layout, shape, smem, op)))


class Moves(Sequence):
    """The instructions of one or more register <-> shared moves, in order (``instructions`` of each
    move, one after the other), kept as the scorer reads them: ``groups`` of (op, access bytes, rows
    (n, 32), cols (n, 32), counts (n,)), one per move. Iterating makes the ``Instruction`` objects, names
    and all (``explain``, ``access.score``); the tuner's scorer never does (``autopad.score``)."""

    def __init__(self, groups: tuple, warps: tuple[int, ...], starts: tuple[np.ndarray, ...]) -> None:
        self.groups, self._warps, self._starts = groups, warps, starts

    def __len__(self) -> int:
        return sum(len(g[2]) for g in self.groups)

    def __getitem__(self, i: int | slice) -> Instruction | list[Instruction]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        k = i + len(self) if i < 0 else i
        for (op, width, rows, cols, counts), nw, starts in zip(self.groups, self._warps, self._starts):
            if 0 <= k < len(rows):
                per_warp = len(rows) // max(1, nw)
                name = f"warp {k // per_warp} reg {int(starts[k])}"
                return Instruction(name, op, width, rows[k], cols[k], int(counts[k]))
            k -= len(rows)
        raise IndexError(i)

    def __iter__(self):  # noqa: ANN204
        return (self[i] for i in range(len(self)))


@lru_cache(maxsize=4096)
def _moves(key: tuple) -> Moves:
    groups, warps, starts = [], [], []
    for layout, shape, cap, elem_bytes, op in key:
        rows, cols, st, elems = _arrays(layout, shape, cap)
        counts = np.ones(len(rows), dtype=np.int64)
        counts.setflags(write=False)
        groups.append((op, elems * elem_bytes, rows, cols, counts))
        warps.append(layout.num_warps)
        starts.append(st)
    return Moves(tuple(groups), tuple(warps), tuple(starts))


def moves(*parts: tuple[Blocked, Sequence[int], Tile, str]) -> Moves:
    """The instructions of the moves ``(register layout, shape, shared tile, op)``, in order, as one
    ``Moves``: made once per distinct (layouts, shape, vector cap, element size, op) and then shared,
    so a tuner's thousands of candidates that differ only in the shared layout's other parameters
    hold one pattern object (``autopad.score`` scores a pattern object once per layout period)."""
    key = tuple(
        (layout, tuple(int(s) for s in shape), vector_cap(smem), smem.elem_bytes, op)
        for layout, shape, smem, op in parts
    )
    return _moves(key)


def score_layouts(
    layout: Blocked, shape: Sequence[int], smem: Tile, op: str, arch: str = "sm_90"
) -> PatternCost:
    """Wavefronts of one tile move between registers (``layout``) and shared memory (``smem``)."""
    return score(instructions(layout, shape, smem, op), smem, arch)


# --------------------------------------------------------------------------------------------------------
# Triton side (imports triton lazily)


def to_gluon(smem: Tile) -> object:
    """autopad layout -> ``gl.SwizzledSharedLayout`` or ``gl.PaddedSharedLayout`` (row-major).

    A padded *and* swizzled tile has no Gluon form in Triton 3.6 (``Tile.gluon_spec`` says why): ValueError,
    raised before Triton sees it (its verifier would abort the process).
    """
    spec = smem.gluon_spec()
    if spec["kind"] == "unsupported":
        raise ValueError(f"to_gluon: {spec['reason']}")
    from triton.experimental.gluon import language as gl

    if spec["kind"] == "swizzled":
        return gl.SwizzledSharedLayout(spec["vec"], spec["per_phase"], spec["max_phase"], spec["order"])
    if not spec["interval_padding"]:
        return gl.SwizzledSharedLayout(1, 1, 1, spec["order"])
    return gl.PaddedSharedLayout.with_identity_for(spec["interval_padding"], spec["shape"], spec["order"])


def compile_sm90(
    fn: object, signature: dict, constexprs: dict, num_warps: int = 4, num_stages: int = 3, arch: int = 90
) -> object:
    """Compile a ``@gluon.jit`` or ``@triton.jit`` function for sm_``arch`` without a GPU.

    ``signature`` maps every non-constexpr argument name to its type string ("*fp32", "i32",
    "tensordesc<bf16[128, 64],NVMMASharedLayout(...)>"); ``constexprs`` maps the rest to values.
    Returns the compiled kernel (``.metadata.shared`` is the shared memory it allocates, ``.asm["ptx"]``).
    """
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    sig = dict(signature)
    for k in constexprs:
        sig[k] = "constexpr"
    is_gluon = getattr(fn, "is_gluon", lambda: False)()
    if is_gluon:
        from triton.experimental.gluon._runtime import GluonASTSource

        src = GluonASTSource(fn, sig, constexprs=dict(constexprs))
    else:
        src = ASTSource(fn, sig, constexprs=dict(constexprs))
    return triton.compile(
        src, target=GPUTarget("cuda", arch, 32), options={"num_warps": num_warps, "num_stages": num_stages}
    )


_PROBE: dict[str, object] = {}


def _probe_kernel() -> object:
    """A Gluon kernel whose only job is to print ``gl.bank_conflicts`` for its constexpr layouts."""
    if "k" not in _PROBE:
        from triton.experimental import gluon
        from triton.experimental.gluon import language as gl

        @gluon.jit
        def bank_probe(
            BM: gl.constexpr, BN: gl.constexpr, DT: gl.constexpr, L: gl.constexpr, S: gl.constexpr
        ):
            x = gl.full([BM, BN], 0, DT, L)
            smem = gl.allocate_shared_memory(DT, [BM, BN], S)
            n: gl.constexpr = gl.bank_conflicts(x.type, smem.type)
            gl.static_print("AUTOPAD_BANK_CONFLICTS", n)

        _PROBE["k"] = bank_probe
    return _PROBE["k"]


_GL_DTYPES = {1: "int8", 2: "float16", 4: "float32", 8: "float64"}


def bank_conflicts_gluon(layout: Blocked, shape: Sequence[int], smem: Tile) -> int:
    """Triton's own counter, ``gl.bank_conflicts(register layout, shared layout)``, read at compile time.

    Runs only Gluon's front end for sm_90 (no GPU, no ptxas). Unpadded tiles only: in Triton 3.6 the
    counter aborts the whole process on a padded layout, so this refuses one.
    """
    if smem.pad:
        raise TypeError("gl.bank_conflicts aborts the process on padded layouts in Triton 3.6: refusing")
    import contextlib
    import io

    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon._runtime import GluonASTSource

    target = GPUTarget("cuda", 90, 32)
    backend = make_backend(target)
    options = backend.parse_options({"num_warps": layout.num_warps})
    ctx = ir.context()
    ir.load_dialects(ctx)
    backend.load_dialects(ctx)
    consts = {
        "BM": int(shape[0]),
        "BN": int(shape[1]),
        "DT": getattr(gl, _GL_DTYPES[smem.elem_bytes]),
        "L": layout.gluon(),
        "S": to_gluon(smem),
    }
    src = GluonASTSource(_probe_kernel(), {k: "constexpr" for k in consts}, constexprs=consts)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        src.make_ir(
            target, options, backend.get_codegen_implementation(options), backend.get_module_map(), ctx
        )
    for line in buf.getvalue().splitlines():
        if line.startswith("AUTOPAD_BANK_CONFLICTS"):
            return int(line.split()[-1])
    raise RuntimeError(f"gl.bank_conflicts printed nothing: {buf.getvalue()!r}")


SWEEP_SPT = ((1, 1), (1, 2), (1, 4), (1, 8), (1, 16), (2, 1), (4, 1), (8, 1), (2, 2))
SWEEP_TPW = ((1, 32), (4, 8), (8, 4), (32, 1), (16, 2))
SWEEP_WARPS = (((4, 1), (1, 0)), ((1, 4), (0, 1)), ((2, 2), (1, 0)))
SWEEP_SWIZZLES = ((1, 1, 1), (1, 1, 8), (4, 1, 8), (8, 1, 8), (2, 2, 4), (1, 1, 32), (8, 2, 4), (16, 1, 4))


def model_conflicts_per_wavefront(layout: Blocked, shape: Sequence[int], smem: Swizzled) -> int:
    """autopad's count in ``gl.bank_conflicts``' unit: the worst instruction's extra wavefronts per ideal one.

    Triton's counter reports, for the layout's ``ld.shared``, how many extra accesses each wavefront needs
    (an instruction of ``w`` wavefronts that ideally needs ``d`` reports ``w / d - 1``).
    """
    pc = score_layouts(layout, shape, smem, "load")
    return int(max(w // d - 1 for _, _, w, d in pc.per_instruction))


_SUBWORD = "sub-word access: Triton counts one-element banks; sm_90 banks are 4-byte words (H200 probes)"


def bank_conflict_sweep(
    shape: Sequence[int] = (64, 64), elem_bytes: Sequence[int] = (4, 8, 2, 1), limit: int | None = None
) -> list[dict]:
    """Rows comparing autopad with ``gl.bank_conflicts`` over register layouts x swizzles x dtypes."""
    out = []
    for eb in elem_bytes:
        for spt in SWEEP_SPT:
            for tpw in SWEEP_TPW:
                for wpc, order in SWEEP_WARPS:
                    lay = Blocked(spt, tpw, wpc, order)
                    for sv, pp, mp in SWEEP_SWIZZLES:
                        try:
                            smem = Swizzled(
                                int(shape[0]), int(shape[1]), eb, sw_vec=sv, per_phase=pp, max_phase=mp
                            )
                        except ValueError:
                            continue
                        v = vector_width(lay, shape, smem)
                        ours = model_conflicts_per_wavefront(lay, shape, smem)
                        theirs = bank_conflicts_gluon(lay, shape, smem)
                        why = ""
                        if ours != theirs:
                            why = _SUBWORD if v * eb < 4 else "unexplained"
                        out.append(
                            {
                                "elem_bytes": eb,
                                "shape": f"{shape[0]}x{shape[1]}",
                                "size_per_thread": f"{spt[0]}x{spt[1]}",
                                "threads_per_warp": f"{tpw[0]}x{tpw[1]}",
                                "warps_per_cta": f"{wpc[0]}x{wpc[1]}",
                                "order": f"{order[0]}{order[1]}",
                                "sw_vec": sv,
                                "per_phase": pp,
                                "max_phase": mp,
                                "access_bytes": v * eb,
                                "autopad": ours,
                                "gl_bank_conflicts": theirs,
                                "agree": int(ours == theirs),
                                "why": why,
                            }
                        )
                        if limit and len(out) >= limit:
                            return out
    return out
