"""The analytical bank-conflict model: one warp instruction -> wavefronts, ideal, conflicts.

The rules for ``load``, ``store`` and ``atomic`` (fitted to 558 Nsight Compute probes on an H200, see
../shared/hardware/README.md, and re-checked on 1,328 by ``autopad validate``):

* bank of byte address ``a`` is ``(a // 4) % 32``; an access of ``w`` bytes covers ``max(1, w // 4)``
  consecutive 4-byte words;
* the warp is cut into phases of consecutive lanes (``Arch.phase_lanes``); 8- and 16-byte loads merge two
  neighbouring phases when every active lane ``n`` reads the same address as lane ``n ^ 1`` (or every one
  as lane ``n ^ 2``), an inactive partner counting as a match: the pair needs half the data, so twice the
  lanes fit in one 128-byte phase;
* a phase costs the largest number of *distinct words* that fall in one bank: lanes that ask for the same
  word share it (broadcast; a 1-byte and a 2-byte access to one word are one word);
* atomics never broadcast: every active lane's word counts, so 32 lanes adding to one counter cost 32;
* wavefronts = sum of phase costs, ideal = number of non-empty phases, conflicts = wavefronts - ideal.

The README's fitted rules also floor a load phase at ``ceil(distinct addresses * width / 128)``. For
width-aligned addresses that floor never binds (aligned accesses of 4 bytes or more cover disjoint words,
so the busiest bank already holds ``distinct * width / 128`` of them; narrower ones move at most 64 bytes),
so the model leaves it out; tests/test_model.py checks the literal rule against the model.

Where each part lives (model.py was split, one concern a module; every name it defined is still importable
from here):

* model_rules.py: the op vocabulary (``OPS``, ``WIDTHS``, ``OP_STATUS``) and ``_Rule``, how an (op, width,
  arch) is costed; its docstring has the rules for **ldmatrix, stmatrix and cp.async** (``OP_STATUS``:
  ldmatrix/stmatrix measured on the H200, cp.async.ca and cp.async.cg read off targeted probes);
* model_cp_async.py: cp.async with ``global_addresses``: per store phase, the lanes a shared bank takes,
  the lines a slot of a global line is read from, and the pairs a lane links (numpy; _model_numba_ca.py
  compiles the same rule for large batches);
* model_cp_async_cg.py: cp.async.cg (op "cp.async.cg"): 32-byte sector moves gathered into wavefronts
  (numpy; _model_numba_cg.py compiles the same rule for large batches);
* model_addresses.py: caller input -> an int64 (n, warp) array, and the errors that name a bad row and lane;
* model_numpy.py: the numpy backend's per-phase costs;
* model_backend.py: numba or numpy (``backend``, ``NUMPY_FIRST``), and the drivers that run either on
  every core; _model_numba.py is the compiled kernel;
* distinct.py: distinct rows matched by a 64-bit hash (``row_hashes``, ``distinct_rows``);
* here: the public API, ``analyze``, ``analyze_batch``, ``analyze_distinct``, ``shift_period``.

``analyze_distinct`` scores each distinct instruction of a batch once: a uniform shift of every active lane
by a whole turn of the banks (``shift_period``) cannot change a cost, so instructions equal after moving
their lowest address into the first turn are one (a tuner's batch of hundreds of thousands of
instructions holds a few tens of thousands).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .arch import Arch, get_arch

# besides what this module uses, the names model.py defined before the split, importable from here as
# before (tests and other modules use some of the private ones)
from .distinct import (  # noqa: F401
    _DISTINCT_CHUNK,
    _HASH,
    _groups,
    _moved_rows,
    _normalised,
    _shift,
    _splitmix64,
    distinct_rows,
    moved_distinct,
    row_hashes,
)
from .model_addresses import (  # noqa: F401
    _SHAPE,
    _address_error,
    _as_address_array,
    _check_numpy,
    _lanes_to_array,
    _plain_batch,
)
from .model_backend import (  # noqa: F401
    _CHUNK,
    _NUMBA,
    _NUMBA_CHUNK,
    _NUMPY_DONE,
    NUMPY_FIRST,
    _compiled_fits,
    _numba_module,
    _run,
    _run_numba,
    _run_numpy,
    _threads,
    backend,
)
from .model_cp_async import as_global_array, ca_compiled, check_global, line_costs
from .model_cp_async_cg import cg_compiled, cg_costs
from .model_numpy import _COUNT_ROWS, _count_costs, _numpy_costs, _phase_cost, _phase_lanes  # noqa: F401
from .model_rules import (  # noqa: F401
    _MATRIX,
    _MATRIX_RE,
    _MIN_SM,
    _OP_WIDTHS,
    _OPS_TEXT,
    ADDRESS_LIMIT,
    OP_STATUS,
    OPS,
    WIDTHS,
    _family,
    _Rule,
    _rule,
    _rule_cached,
    op_status,
)

__all__ = [
    "Analysis",
    "analyze",
    "analyze_batch",
    "analyze_distinct",
    "backend",
    "distinct_rows",
    "op_status",
    "row_hashes",
    "shift_period",
    "OPS",
    "OP_STATUS",
    "WIDTHS",
]


@dataclass(frozen=True)
class Analysis:
    """The cost of one warp instruction, in Nsight Compute's units."""

    wavefronts: int
    ideal: int
    conflicts: int
    phase_costs: tuple[int, ...]

    @property
    def degree(self) -> float:
        """Slowdown over a conflict-free instruction (1.0 = no conflict)."""
        return self.wavefronts / self.ideal if self.ideal else 1.0


# ---- public API -------------------------------------------------------------------------------------------


def analyze_batch(
    addresses: np.ndarray,
    access_bytes: int = 4,
    op: str = "load",
    arch: str | Arch = "sm_90",
    *,
    validate: bool = True,
    global_addresses: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Wavefronts and ideal wavefronts for many instructions at once.

    ``addresses`` is an integer array (n, warp) of per-lane byte addresses, -1 for an inactive lane (a
    (warp,) array is one instruction). Returns two int64 arrays of length n: wavefronts and ideal
    (conflicts = wavefronts - ideal). An empty (0, warp) batch returns two empty arrays.

    ``validate=False`` is the fast path for callers that already hold a checked batch (the tuner stacks
    many candidates' addresses): ``addresses`` must then be an int64 array (n, warp) whose entries are -1
    or width-aligned addresses below 2**32 (for ldmatrix/stmatrix: no -1 in the lanes that take part).
    Op, width and arch are still checked; the addresses are not. Input outside that contract gives
    meaningless numbers, never a crash.

    ``global_addresses`` (ops "cp.async" and "cp.async.cg"): each lane's global source, shaped like
    ``addresses``; for "cp.async" each store phase is then costed by the 128-byte global lines and the
    slots in them its lanes copy from (model_cp_async.py). Without it a lane-ordered source is assumed
    (lane ``l`` copies ``base + l * access_bytes``). This path runs on numpy (0.15-0.35 M random
    instructions a second on 2 cores), or from 20,000 instructions on its numba kernel (_model_numba_ca.py,
    18-30 M where a store phase reads one global line, 5-12 M where phases mix lines, against tens of
    millions for the plain rule's), and always checks both sides, ``validate=False``
    or not. Op "cp.async.cg" always takes a
    path of its own (model_cp_async_cg.py), with or without ``global_addresses`` (lane-ordered without):
    numpy, about 0.2 M random instructions a second on 2 cores, or from 20,000 instructions on its numba
    kernel (_model_numba_cg.py), 16-21 M; both check both sides, ``validate=False`` or not.
    """
    if not isinstance(validate, (bool, np.bool_)):  # validate="no" read as true, 0 as false
        raise ValueError(f"validate: must be True or False, got {validate!r}")
    a = get_arch(arch)
    rule = _rule(op, access_bytes, a)
    if validate:
        arr = _as_address_array(addresses, a.warp_size)
    else:
        arr = np.ascontiguousarray(addresses, dtype=np.int64)
        arr = arr[None, :] if arr.ndim == 1 else arr
        if arr.ndim != 2 or arr.shape[1] != a.warp_size:  # the one check kept: the kernel reads 32 lanes
            raise ValueError(f"addresses: expected shape (n, {a.warp_size}), got {arr.shape}")
    if global_addresses is not None or rule.op == "cp.async.cg":
        return _cp_async_lines(arr, global_addresses, rule, False)[:2]
    if arr.shape[0] == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    wave, ideal, _ = _run(arr, rule, a, validate, False)
    return wave, ideal


def analyze(
    addresses: Sequence[int | None] | np.ndarray,
    access_bytes: int = 4,
    op: str = "load",
    arch: str | Arch = "sm_90",
    *,
    global_addresses: Sequence[int | None] | np.ndarray | None = None,
) -> Analysis:
    """Cost of one warp instruction: per-lane byte addresses (None = inactive lane) -> Analysis.

    ``op`` is one of ``OPS``: "load", "store", "atomic", "ldmatrix[.x1|.x2|.x4][.trans]" and
    "stmatrix[...]" (measured on the H200), "cp.async" (cp.async.ca, read off H100 and H200 probes) or
    "cp.async.cg" (16 bytes; read off its own probes, model_cp_async_cg.py); ``op_status`` says how far each
    is checked. For ldmatrix/stmatrix ``access_bytes`` is 16 (a matrix row) and ``phase_costs`` has one
    entry per matrix; for "cp.async.cg" one per global line with a copy that counts, lowest line first.

    ``global_addresses`` (ops "cp.async" and "cp.async.cg"): each lane's global source byte address. The
    lanes are then costed by 128-byte global line and ``phase_costs`` has one entry per line, lowest line
    first (for "cp.async": what the line's own copies need, summed over its store phases, its most lanes in
    one bank of each; lines of one phase share wavefronts or queue behind each other, so ``wavefronts`` may be
    less or more than their sum); without it lane ``l`` is taken to copy
    ``base + l * access_bytes`` (model_cp_async.py and model_cp_async_cg.py have the measured rules).

    >>> analyze([lane * 4 * 32 for lane in range(32)]).wavefronts   # column of a 32x32 fp32 tile
    32
    >>> analyze([lane * 4 * 33 for lane in range(32)]).wavefronts   # the same column, rows padded to 33
    1
    """
    a = get_arch(arch)
    rule = _rule(op, access_bytes, a)
    arr = _as_address_array(addresses, a.warp_size)
    if arr.shape[0] != 1:
        raise ValueError(f"addresses: analyze takes one instruction; got {arr.shape[0]}, use analyze_batch")
    if global_addresses is not None or rule.op == "cp.async.cg":
        wave, ideal, lines = _cp_async_lines(arr, global_addresses, rule, True)
        w, i = int(wave[0]), int(ideal[0])
        return Analysis(wavefronts=w, ideal=i, conflicts=w - i, phase_costs=lines[0])
    _, _, cost = _run(arr, rule, a, True, True)
    lanes = int(_phase_lanes(arr[:, : rule.used], rule)[0])
    costs = tuple(int(c) for c in cost[0, : max(1, rule.used // lanes)])
    wavefronts = sum(costs)
    ideal = sum(1 for c in costs if c)
    return Analysis(wavefronts=wavefronts, ideal=ideal, conflicts=wavefronts - ideal, phase_costs=costs)


def _cp_async_lines(arr: np.ndarray, global_addresses: object, rule: _Rule, per_line: bool):
    """``line_costs`` (cp.async.ca) or ``cg_costs`` (cp.async.cg, whose source is lane-ordered where no
    ``global_addresses`` are given) of a converted batch, after checking that the op takes a global side
    and that both sides are well formed."""
    if rule.op not in ("cp.async", "cp.async.cg"):
        raise ValueError(
            f"global_addresses: only ops 'cp.async' and 'cp.async.cg' copy from global memory; "
            f"op is {rule.op!r}"
        )
    try:
        glob = None if global_addresses is None else as_global_array(global_addresses, arr)
    except ValueError:
        _check_numpy(arr, rule)  # a bad shared address is reported first, as it always was
        raise
    if not per_line and (rule.op == "cp.async.cg" or glob is not None):  # compiled: checks as it counts
        got = cg_compiled(arr, glob) if rule.op == "cp.async.cg" else ca_compiled(arr, glob, rule)
        if got is not None:  # (None: numpy's turn: a small batch, no numba, or a bad address to word)
            return got
    _check_numpy(arr, rule)
    if glob is not None:
        check_global(glob, arr, rule.width)
    if rule.op == "cp.async.cg":
        return cg_costs(arr, glob, per_line)
    return line_costs(arr, glob, rule, per_line)


def shift_period(access_bytes: int = 4, op: str = "load", arch: str | Arch = "sm_90") -> int:
    """Bytes by which every active lane of an instruction may move together without changing its cost.

    One whole turn of the banks (``banks * bank_bytes``, 128 bytes on sm_90): a lane's unit number
    ``address // unit`` moves by ``unit_banks``, so every lane keeps its bank and every bank's distinct
    words stay distinct (or equal); the pair-merge test compares addresses, which move alike.
    """
    rule = _rule(op, access_bytes, get_arch(arch))
    return rule.unit * rule.unit_banks


def analyze_distinct(
    addresses: np.ndarray, access_bytes: int = 4, op: str = "load", arch: str | Arch = "sm_90"
) -> tuple[np.ndarray, np.ndarray]:
    """``analyze_batch``'s answer, scoring each distinct instruction once.

    Each row's active lanes move down together by whole ``shift_period`` turns until its lowest address
    lies in the first turn (inactive lanes, -1, stay); rows equal after that cost the same. Rows are
    grouped by a 64-bit hash of their moved lanes and each is then compared with its group's first row
    (a collision falls back on sorting the rows themselves). A batch with a bad address is handed to
    ``analyze_batch``, whose error names the caller's row. Atomics go to ``analyze_batch`` whole: numpy
    counts them without a sort (``_count_costs``) in less time than hashing them would take, and their
    rows (a histogram's sampled bins) are mostly distinct anyway.
    """
    a = get_arch(arch)
    rule = _rule(op, access_bytes, a)
    arr = addresses if isinstance(addresses, np.ndarray) else np.asarray(addresses)
    if rule.op == "cp.async.cg":  # only whole 128-byte rows move for free (its source fixes a lane's chunk)
        return analyze_batch(arr, access_bytes, op, a)
    if arr.ndim != 2 or arr.dtype.kind != "i" or arr.shape[0] < 2 or arr.shape[1] > _HASH.shape[1]:
        return analyze_batch(arr, access_bytes, op, a)
    if not rule.broadcast and not rule.merge:  # atomics: counting every row costs less than hashing it
        if _plain_batch(arr, rule):  # checked as analyze_batch would, without its int64 copy
            return _run(arr, rule, a, False, False)[:2]
        return analyze_batch(arr, access_bytes, op, a)
    top, low = int(arr.max()), int(arr.min())
    if top >= ADDRESS_LIMIT or low < -1:  # a bad address: analyze_batch raises, naming its row
        return analyze_batch(arr, access_bytes, op, a)
    # int32 when every address fits (the tile formula's are): half the bytes through every pass below
    work = arr.astype(np.int32 if top < 2**31 else np.int64, copy=False)
    reps, inverse = moved_distinct(work, rule.unit * rule.unit_banks, low >= 0)
    try:
        wave, ideal = analyze_batch(reps, access_bytes, op, a)
    except ValueError:
        analyze_batch(arr, access_bytes, op, a)  # raises, naming the caller's row
        raise
    return wave[inverse], ideal[inverse]
