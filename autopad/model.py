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

**ldmatrix, stmatrix: measured; cp.async: derived, and the probes disagree** (``OP_STATUS``; ``autopad
validate --ops ldmatrix,stmatrix,cp.async`` measured 728 probes on the H200 on 2026-12-01: all 536
ldmatrix/stmatrix ones agree with the rules below, 118 of the 192 cp.async ones do not: the LSU wavefront
counters read 0 for cp.async.cg, so the rule below stays a derivation). What the rules rest on:

* ``ldmatrix.sync.aligned.m8n8.xK[.trans].shared.b16`` (op ``"ldmatrix.xK"``, ``"ldmatrix"`` = x4,
  ``access_bytes=16``): lanes 8i..8i+7 give the start addresses of the eight 16-byte rows of matrix i,
  for K = 1, 2, 4 matrices (lanes 0-7, 0-15, 0-31); the other lanes are ignored; every row is 16-byte
  aligned; ``.trans`` transposes inside the registers, not which shared bytes are read (PTX ISA,
  "Warp-level matrix load instruction: ldmatrix"; CCCL's cuda::ptx list: ldmatrix sm_75, stmatrix sm_90).
  Model: matrix i is phase i, 8 rows x 16 bytes = 128 bytes, costed like the 8-lane phase of a 16-byte
  load (the busiest of 8 four-bank groups; rows repeated inside a matrix broadcast). No pair merge: an
  .x4 writes 4 registers per lane, 512 bytes, and the return path moves 128 bytes a cycle (NVIDIA forum
  t/77228 ties the LDS.128 merge to packing registers), so the floor is K wavefronts. NVIDIA forum
  t/278716 ("Understanding the behavior of ldmatrix in terms of shared memory access") describes the same
  8-thread groups of at most 128 bytes, one per matrix; Nsight Compute counts them apart from plain loads
  ("Shared Load Matrix", metrics ``*_mem_shared_op_ldsm``).
* ``stmatrix`` (sm_90): the same addressing and phases, a store (``*_op_stsm``).
* ``cp.async.{ca,cg}.shared.global`` of 4, 8 or 16 bytes (op ``"cp.async"``): the shared side is costed
  as a store of that width (phases of 32, 16, 8 lanes, inactive lanes allowed). Caveat, unmeasured here:
  NVIDIA/cutlass issue #2212 reports different conflict counts for ``.ca`` and ``.cg`` with one shared
  layout, and forum t/245066 conflicts under cp.async where ld/st of the same shared pattern had none,
  so the global side may group the writes; the probes vary it (``*_op_ldgsts``).

Backends: a numba kernel (_model_numba.py: one pass per instruction, all cores) when numba imports, else
this module's numpy code (each phase a row, one sort per row, running sums count distinct words per bank;
atomics, which never broadcast, one bincount of lanes per bank).
Both give identical numbers; ``AUTOPAD_MODEL_BACKEND=numpy`` forces numpy, ``=numba`` requires numba.
numba loads lazily, never at ``import autopad``: under the default ``auto`` a process scores its first
``NUMPY_FIRST`` instructions with numpy and loads numba only when it needs more. Loading numba and its cached
kernel takes 0.6-0.8 s on this project's 2-core machine, in which numpy scores about 500,000 instructions,
so a process that ranks one space (a few tens of thousands of distinct instructions) never pays for it.

``analyze_distinct`` scores each distinct instruction of a batch once: a uniform shift of every active lane
by a whole turn of the banks (``shift_period``) cannot change a cost, so instructions equal after moving
their lowest address into the first turn are one (a tuner's batch of hundreds of thousands of
instructions holds a few tens of thousands).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .arch import Arch, get_arch

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

WIDTHS = (1, 2, 4, 8, 16)
_MATRIX = tuple(
    f"{b}{x}{t}" for b in ("ldmatrix", "stmatrix") for x in ("", ".x1", ".x2", ".x4") for t in ("", ".trans")
)
OPS = ("load", "store", "atomic", "cp.async", *_MATRIX)  # every spelling analyze accepts
_OPS_TEXT = "load, store, atomic, cp.async, ldmatrix[.x1|.x2|.x4][.trans], stmatrix[.x1|.x2|.x4][.trans]"
_OP_WIDTHS = {"atomic": (4, 8), "cp.async": (4, 8, 16), "ldmatrix": (16,), "stmatrix": (16,)}
_MIN_SM = {"ldmatrix": 75, "cp.async": 80, "stmatrix": 90}
OP_STATUS = {
    "load": "measured",
    "store": "measured",
    "atomic": "measured (4-byte adds; 8-byte assumed to follow the 8-byte store phases)",
    # H200, 2026-12-01 (benchmarks/results/h200/validate_matrix): Nsight Compute's LSU wavefront counters
    # read 0 for every cp.async.cg probe and disagree on 70 of 144 cp.async.ca ones, so its shared-memory
    # writes are not counted (or not counted as stores) there; no autopad kernel issues cp.async
    "cp.async": "derived; disagrees with Nsight Compute on 118 of 192 H200 probes (do not rely on it)",
    "ldmatrix": "measured (H200, 2026-12-01: 268 of 268 probes agree)",
    "stmatrix": "measured (H200, 2026-12-01: 268 of 268 probes agree)",
}
ADDRESS_LIMIT = 1 << 32  # shared memory is addressed with 32 bits
_CHUNK = 1 << 15  # numpy: instructions per vectorised block (bounds memory at a few tens of MB)
_NUMBA_CHUNK = 1 << 14  # numba: fewest instructions worth a thread of their own
_MATRIX_RE = re.compile(r"^(ldmatrix|stmatrix)(?:\.x([124]))?(?:\.trans)?$")


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


@dataclass(frozen=True)
class _Rule:
    """How one (op, width, arch) is costed; both backends read only this."""

    op: str
    width: int  # bytes per lane (a matrix row for ldmatrix/stmatrix)
    unit: int  # bytes counted as one unit: the width, or one bank for narrower accesses
    unit_banks: int  # banks * bank_bytes // unit: a 16-byte unit spans 4 banks, so 8 unit-banks
    lanes: int  # lanes per phase before any merge
    merge: bool  # 8/16-byte loads: lanes paired on one address merge two phases
    broadcast: bool  # lanes asking for one word share it (not atomics)
    used: int  # lanes that take part: 8 per matrix for ldmatrix/stmatrix, else the warp
    need_all: bool  # .sync.aligned matrix ops: every lane that takes part gives an address


def _family(op: str) -> tuple[str, int]:
    """("ldmatrix", 4) for "ldmatrix.x4.trans"; (op, 0) for the others."""
    m = _MATRIX_RE.match(op)
    return (m.group(1), int(m.group(2) or 4)) if m else (op, 0)


def op_status(op: str) -> str:
    """The status of an op's rule ("measured", or "derived, not yet probed"), any spelling in ``OPS``."""
    if not isinstance(op, str) or op not in OPS:
        raise ValueError(f"op: {op!r} is not one of {_OPS_TEXT}")
    return OP_STATUS[_family(op)[0]]


def _rule(op: object, access_bytes: object, arch: Arch) -> _Rule:
    """Check op and width (types first, so the cache never sees an unhashable key) and build the rule."""
    if not isinstance(op, str) or op not in OPS:
        raise ValueError(f"op: {op!r} is not one of {_OPS_TEXT}")
    if isinstance(access_bytes, bool) or not isinstance(access_bytes, (int, np.integer)):
        raise ValueError(f"access_bytes: expected an int, one of {WIDTHS}; got {access_bytes!r}")
    return _rule_cached(op, int(access_bytes), arch)


@lru_cache(maxsize=512)
def _rule_cached(op: str, width: int, arch: Arch) -> _Rule:
    family, matrices = _family(op)
    allowed = _OP_WIDTHS.get(family, WIDTHS)
    if width not in allowed:
        if family in ("load", "store"):
            raise ValueError(f"access_bytes: {width!r} is not one of {allowed}")
        what = {"atomic": "atomics are", "cp.async": "cp.async copies are"}.get(family, f"{family} rows are")
        widths = ", ".join(map(str, allowed[:-1])) + (" or " if len(allowed) > 1 else "") + str(allowed[-1])
        raise ValueError(f"access_bytes: {what} {widths} bytes wide, got {width}")
    if family in _MIN_SM:
        sm = re.fullmatch(r"sm_(\d+)", arch.name)
        if arch.warp_size != 32 or (sm and int(sm.group(1)) < _MIN_SM[family]):
            raise ValueError(
                f"op: {op} is an NVIDIA sm_{_MIN_SM[family]}+ instruction; arch {arch.name} does not have it"
            )
    unit = max(width, arch.bank_bytes)
    return _Rule(
        op=op,
        width=width,
        unit=unit,
        unit_banks=arch.banks * arch.bank_bytes // unit,
        lanes=arch.phase_lanes(width),
        merge=op == "load" and arch.merge_paired_loads and width > arch.bank_bytes,
        broadcast=op != "atomic",
        used=8 * matrices if matrices else arch.warp_size,
        need_all=bool(matrices),
    )


# ---- validation -------------------------------------------------------------------------------------------

_SHAPE = "integer byte addresses of shape (n, {w}) or ({w},), -1 for an inactive lane"


def _as_address_array(addresses: object, warp: int) -> np.ndarray:
    """Convert to an int64 array (n, warp), -1 = inactive; type, shape and range checked, not alignment."""
    if isinstance(addresses, np.ndarray):
        arr = addresses
    elif addresses is None or isinstance(addresses, (str, bytes, int, float)):
        raise ValueError(f"addresses: expected {_SHAPE.format(w=warp)}; got {addresses!r}")
    else:
        try:
            rows = list(addresses)  # type: ignore[call-overload]
        except TypeError:
            raise ValueError(f"addresses: expected {_SHAPE.format(w=warp)}; got {addresses!r}") from None
        if not rows:
            arr = np.zeros((0, warp), dtype=np.int64)
        elif not any(isinstance(a, (list, tuple, np.ndarray)) for a in rows):
            return _lanes_to_array(rows, warp)  # one instruction, None = inactive (analyze's form)
        else:
            arr = np.asarray(rows)
    if arr.dtype.kind not in "iu" or arr.ndim not in (1, 2):
        hint = "; use -1, not None, for an inactive lane" if arr.dtype.kind == "O" else ""
        raise ValueError(
            f"addresses: expected {_SHAPE.format(w=warp)}; got dtype {arr.dtype} and shape {arr.shape}{hint}"
        )
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.shape[1] != warp:
        raise ValueError(f"addresses: need one entry per lane ({warp} for this arch), got {arr.shape[1]}")
    if arr.dtype.kind == "u" and arr.size and arr.max() >= ADDRESS_LIMIT:  # before the cast wraps it
        r, lane = np.unravel_index(int(np.argmax(arr >= ADDRESS_LIMIT)), arr.shape)
        raise ValueError(_address_error(int(r), int(lane), int(arr[r, lane]), 2, None, arr.shape[0]))
    return np.ascontiguousarray(arr, dtype=np.int64)


def _lanes_to_array(rows: list, warp: int) -> np.ndarray:
    out = np.full((1, len(rows)), -1, dtype=np.int64)
    for lane, a in enumerate(rows):
        if a is None:
            continue
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)):
            raise ValueError(f"addresses: lane {lane} is {a!r}; each lane is an int byte address or None")
        if a < 0:
            raise ValueError(f"addresses: lane {lane} has negative address {a}; None marks an inactive lane")
        if a >= ADDRESS_LIMIT:
            raise ValueError(_address_error(0, lane, int(a), 2, None, 1))
        out[0, lane] = a
    if len(rows) != warp:
        raise ValueError(f"addresses: need one entry per lane ({warp} for this arch), got {len(rows)}")
    return out


def _address_error(r: int, lane: int, a: int, code: int, rule: _Rule | None, n: int) -> str:
    """The ValueError text for a bad address (codes as in _model_numba: 1 negative, 2 range, 3 align, 4
    missing), with the row named when the batch has more than one."""
    where = f"row {r} lane {lane}" if n > 1 else f"lane {lane}"
    if code == 1:
        return (
            f"addresses: {where} has negative address {a}; -1 (array) or None (list) marks an inactive lane"
        )
    if code == 2:
        return f"addresses: {where} address {a} is out of range: shared memory addresses are below 2**32"
    assert rule is not None
    if code == 3:
        return (
            f"addresses: {where} address {a} is not aligned to the {rule.width}-byte access width; "
            "shared-memory accesses must be aligned to their width"
        )
    return (
        f"addresses: {where} has no address; every lane 0-{rule.used - 1} of {rule.op} gives the start of a "
        "16-byte matrix row (.sync.aligned: no inactive lanes)"
    )


def _plain_batch(arr: np.ndarray, rule: _Rule) -> bool:
    """Whether a 2-D integer batch passes ``_check_numpy`` by its quick test (entries -1 or aligned
    addresses below ``ADDRESS_LIMIT``; no lane that must be active), in any integer type."""
    if rule.need_all or not arr.size or arr.min() < -1 or arr.max() >= ADDRESS_LIMIT:
        return False
    mask = rule.width - 1
    return not mask or np.count_nonzero(arr & mask) == np.count_nonzero(arr == -1)


def _check_numpy(arr: np.ndarray, rule: _Rule) -> None:
    """The checks the numba kernel makes, vectorised: raises on the first bad (row, lane)."""
    if not rule.need_all and arr.size and arr.min() >= -1 and arr.max() < ADDRESS_LIMIT:
        # every entry is -1 or an address: -1 has every bit of the alignment mask set, an aligned address
        # none, so the batch is aligned exactly when the set masks are the -1 entries
        mask = rule.width - 1
        if not mask or np.count_nonzero(arr & mask) == np.count_nonzero(arr == -1):
            return
    bad = (arr < -1) | (arr >= ADDRESS_LIMIT) | ((arr >= 0) & ((arr & (rule.width - 1)) != 0))
    if rule.need_all:
        bad[:, : rule.used] |= arr[:, : rule.used] < 0
    if not bad.any():
        return
    r, lane = np.unravel_index(int(np.argmax(bad)), bad.shape)
    a = int(arr[r, lane])
    code = 1 if a < -1 else 2 if a >= ADDRESS_LIMIT else 3 if a >= 0 else 4
    raise ValueError(_address_error(int(r), int(lane), a, code, rule, arr.shape[0]))


# ---- the numpy backend ------------------------------------------------------------------------------------


def _phase_lanes(addr: np.ndarray, rule: _Rule) -> np.ndarray:
    """Lanes per phase for each instruction of the batch (merging paired wide loads)."""
    n, w = addr.shape
    lanes = np.full(n, rule.lanes, dtype=np.int64)
    if rule.merge and rule.lanes < w:
        # Every active lane n must read what lane n^1 (or n^2) reads; a partner that is inactive (-1)
        # does not break the pairing (measured: `autopad validate` on the H200, 2026-11-29).
        def paired(a: np.ndarray, b: np.ndarray, axes: int | tuple[int, int]) -> np.ndarray:
            return ((a == b) | (a < 0) | (b < 0)).all(axis=axes)

        pairs1 = addr.reshape(n, w // 2, 2)
        pairs2 = addr.reshape(n, w // 4, 2, 2)
        merged = paired(pairs1[:, :, 0], pairs1[:, :, 1], 1)
        merged |= paired(pairs2[:, :, 0, :], pairs2[:, :, 1, :], (1, 2))
        lanes[merged] = rule.lanes * 2
    return lanes


def _phase_cost(lanes: np.ndarray, broadcast: bool, unit: int, unit_banks: int) -> np.ndarray:
    """Cost of each row of ``lanes`` (one phase each; -1 = inactive): most distinct units in one bank."""
    top = int(lanes.max(initial=0)) // unit
    shift = max(1, top.bit_length())
    dtype = np.int32 if shift + (unit_banks - 1).bit_length() < 31 else np.int64
    word = lanes.astype(dtype) // unit  # an inactive lane (-1) stays negative
    # key = (bank, word) packed in one integer; sorting makes each bank's words contiguous, equal words
    # side by side. Inactive lanes get key -1 and sort first.
    key = ((word % unit_banks) << shift) | word
    key[word < 0] = -1
    key.sort(axis=1)
    counted = key >= 0  # atomics: no broadcast, every active lane's word is its own request
    if broadcast:
        counted[:, 1:] &= key[:, 1:] != key[:, :-1]  # a word counts once: where it differs from its left
    # rank of each entry among the counted words of its bank, via running sums:
    # rank = counted so far - counted before the bank's run began; the phase costs the largest rank
    bank = key >> shift
    running = np.cumsum(counted, axis=1, dtype=dtype)
    starts = np.ones(key.shape, dtype=bool)
    np.not_equal(bank[:, 1:], bank[:, :-1], out=starts[:, 1:])
    before = running - counted
    before *= starts
    np.maximum.accumulate(before, axis=1, out=before)
    running -= before
    return running.max(axis=1)


_COUNT_ROWS = 4096  # _count_costs: phases counted at a time (the per-bank counts stay in cache)


def _count_costs(addr: np.ndarray, rule: _Rule) -> np.ndarray:
    """``_numpy_costs`` for a rule without broadcast (atomics) and without merged phases: every active
    lane's unit counts, so a phase costs the most active lanes in one unit-bank, counted with one
    ``np.bincount`` per block of phases (no sort; a tenth of ``_phase_cost``'s time)."""
    n, w = addr.shape
    lanes, ub = rule.lanes, rule.unit_banks
    per = w // lanes
    phases = addr.reshape(-1, lanes)  # phases are runs of consecutive lanes: a row each
    dtype = np.int32 if int(phases.max(initial=0)) < 2**31 and _COUNT_ROWS * ub < 2**31 else np.int64
    out = np.empty(len(phases), dtype=np.int64)
    base = (np.arange(_COUNT_ROWS, dtype=dtype) * ub)[:, None]
    pow2 = not (rule.unit & (rule.unit - 1) or ub & (ub - 1))  # (the rules' units and banks are)
    for s in range(0, len(phases), _COUNT_ROWS):
        part = phases[s : s + _COUNT_ROWS].astype(dtype, copy=False)
        m = len(part)
        if pow2:  # shifts and masks: integer division is the slowest step otherwise
            idx = (part >> (rule.unit.bit_length() - 1)) & (ub - 1)
            idx += base[:m]
        else:
            idx = (part // rule.unit) % ub + base[:m]
        idx[part < 0] = m * ub  # inactive lanes: one bin past the counted ones
        out[s : s + m] = np.bincount(idx.ravel(), minlength=m * ub + 1)[:-1].reshape(m, ub).max(axis=1)
    return out.reshape(n, per)


def _numpy_costs(addr: np.ndarray, rule: _Rule) -> np.ndarray:
    """Per-phase costs (n, phases before any merge) of a validated batch; lanes past ``rule.used`` ignored."""
    addr = addr[:, : rule.used]
    n, w = addr.shape
    if not rule.broadcast and not rule.merge and w % rule.lanes == 0:
        return _count_costs(addr, rule)
    lanes = _phase_lanes(addr, rule)
    # A width-aligned access of k = width/4 words covers banks 4j..4j+k-1 of one aligned group of k
    # banks, and every word of it meets exactly the same competitors. So counting in "units" of the
    # access width over banks/k unit-banks gives the same per-bank maximum as counting all k words.
    # Narrower accesses count in whole words: bytes of one word are one word (they broadcast).
    cost = np.zeros((n, max(1, w // rule.lanes)), dtype=np.int64)
    sizes = np.unique(lanes, return_counts=True)[0]  # (with counts: no lazy numpy.ma import, 20 ms)
    for size in sizes:  # at most two: plain phases and merged ones
        rows = np.nonzero(lanes == size)[0] if len(sizes) > 1 else slice(None)
        per_phase = w // int(size)
        part = addr[rows].reshape(-1, int(size))  # phases are runs of consecutive lanes: a row each
        cost[rows, :per_phase] = _phase_cost(part, rule.broadcast, rule.unit, rule.unit_banks).reshape(
            -1, per_phase
        )
    return cost


# ---- the numba backend ------------------------------------------------------------------------------------

_NUMBA: list = []  # [module or None, why not]: filled when numba is first needed
# instructions the ``auto`` backend scores with numpy before it loads numba: about what numpy does in the
# time numba takes to load (see the module docstring); both backends give identical numbers
NUMPY_FIRST = 300_000
_NUMPY_DONE = [0]  # instructions numpy has scored under ``auto`` while numba was not loaded


def _numba_module():
    """_model_numba, or None (numba missing, or AUTOPAD_MODEL_BACKEND=numpy)."""
    choice = os.environ.get("AUTOPAD_MODEL_BACKEND", "auto").strip().lower() or "auto"
    if choice not in ("auto", "numba", "numpy"):
        raise ValueError(f"AUTOPAD_MODEL_BACKEND: {choice!r} is not one of auto, numba, numpy")
    if choice == "numpy":
        return None
    if not _NUMBA:
        try:
            from . import _model_numba
        except Exception as exc:  # numba missing, or too old/new for this numpy
            _NUMBA[:] = [None, f"{type(exc).__name__}: {exc}"]
        else:
            _NUMBA[:] = [_model_numba, ""]
    if _NUMBA[0] is None and choice == "numba":
        raise RuntimeError(f"AUTOPAD_MODEL_BACKEND=numba, but numba does not load ({_NUMBA[1]})")
    return _NUMBA[0]


def backend(arch: str | Arch = "sm_90") -> str:
    """Which backend analyze_batch uses now for ``arch``: "numba" or "numpy" (loads numba if needed)."""
    a = get_arch(arch)
    mod = _numba_module()
    return "numba" if mod is not None and _compiled_fits(_rule("load", 16, a), a, mod) else "numpy"


def _compiled_fits(rule: _Rule, arch: Arch, mod) -> bool:
    """The kernel serves 32-lane warps, phases of 8/16/32 lanes, at most 32 power-of-two unit-banks."""
    lanes = {rule.lanes, rule.lanes * 2} if rule.merge else {rule.lanes}
    pow2 = rule.unit_banks & (rule.unit_banks - 1) == 0 and rule.unit & (rule.unit - 1) == 0
    return arch.warp_size == 32 and lanes <= set(mod.SUPPORTED_LANES) and pow2 and rule.unit_banks <= 32


@lru_cache(maxsize=1)
def _threads() -> int:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(8, cores))


def _run(arr: np.ndarray, rule: _Rule, arch: Arch, check: bool, phases: bool):
    """(wavefronts, ideal, per-phase costs or None) of a converted batch, on the fastest backend: numba
    once loaded; before that, numpy while this process's numpy work stays under ``NUMPY_FIRST`` (atomics,
    counted without a sort, do not draw on it)."""
    if not _NUMBA and os.environ.get("AUTOPAD_MODEL_BACKEND", "auto").strip().lower() in ("", "auto"):
        if not rule.broadcast and not rule.merge:  # counted without a sort (_count_costs): no budget
            return _run_numpy(arr, rule, check, phases)
        if _NUMPY_DONE[0] + arr.shape[0] <= NUMPY_FIRST:
            _NUMPY_DONE[0] += arr.shape[0]
            return _run_numpy(arr, rule, check, phases)
    mod = _numba_module()
    if mod is not None and _compiled_fits(rule, arch, mod):
        return _run_numba(mod, arr, rule, arch, check, phases)
    return _run_numpy(arr, rule, check, phases)


def _run_numpy(arr: np.ndarray, rule: _Rule, check: bool, phases: bool):
    n = arr.shape[0]
    if check:
        _check_numpy(arr, rule)
    wave, ideal = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    costs = np.zeros((n, max(1, rule.used // rule.lanes)), dtype=np.int64) if phases else None

    def run(start: int) -> None:
        sl = slice(start, start + _CHUNK)
        cost = _numpy_costs(arr[sl], rule)
        wave[sl], ideal[sl] = cost.sum(axis=1), (cost > 0).sum(axis=1)
        if costs is not None:
            costs[sl] = cost

    starts = range(0, n, _CHUNK)
    if len(starts) < 4 or not rule.broadcast:  # atomics are counted, not sorted: no thread pays for itself
        for s in starts:
            run(s)
    else:  # numpy's sorts and ufuncs release the GIL, so chunks run in parallel on every core
        from concurrent.futures import ThreadPoolExecutor  # here: most processes never need threads

        with ThreadPoolExecutor(max_workers=_threads()) as pool:
            list(pool.map(run, starts))
    return wave, ideal, costs


def _run_numba(mod, arr: np.ndarray, rule: _Rule, arch: Arch, check: bool, phases: bool):
    arr = np.ascontiguousarray(arr, dtype=np.int64)  # the kernel's type (analyze_distinct's may be int32)
    n = arr.shape[0]
    params = np.array(
        [
            rule.unit.bit_length() - 1,  # log2(unit): address >> this = unit number
            rule.unit_banks.bit_length() - 1,  # log2(unit-banks): unit & (unit_banks - 1) = its unit-bank
            rule.lanes,
            rule.used,
            rule.merge,
            not rule.broadcast,
            rule.need_all,
            rule.width - 1,  # alignment mask
            ADDRESS_LIMIT,
            check,
        ],
        dtype=np.int64,
    )
    net = mod.network(rule.lanes * 2 if rule.merge else rule.lanes)  # a merged phase sorts as one
    wave, ideal = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    costs = np.zeros((n, 32 // rule.lanes) if phases else (0, 0), dtype=np.int64)
    threads = _threads()
    parts = max(1, min(4 * threads, n // _NUMBA_CHUNK))  # a few parts per core balance a busy machine
    errs = np.zeros((parts, 3), dtype=np.int64)

    def run(i: int) -> int:
        lo, hi = n * i // parts, n * (i + 1) // parts
        c = costs[lo:hi] if phases else costs
        got = mod.analyze_rows(arr[lo:hi], net, params, wave[lo:hi], ideal[lo:hi], c, errs[i])
        if got >= 0:
            errs[i, 0] += lo
        return int(got)

    if parts == 1:
        answers = [run(0)]
    else:  # the kernel releases the GIL: parts run on every core
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(threads, parts)) as pool:
            answers = list(pool.map(run, range(parts)))
    if mod.NEED_NUMPY in answers:  # an address of 2**29 or more: numpy counts it (and checks everything)
        return _run_numpy(arr, rule, check, phases)
    for i, got in enumerate(answers):  # parts are in order: the first failing part has the first bad row
        if got >= 0:
            row, lane, code = (int(v) for v in errs[i])
            raise ValueError(_address_error(row, lane, int(arr[row, lane]), code, rule, n))
    return wave, ideal, (costs[:, : max(1, rule.used // rule.lanes)] if phases else None)


# ---- public API -------------------------------------------------------------------------------------------


def analyze_batch(
    addresses: np.ndarray,
    access_bytes: int = 4,
    op: str = "load",
    arch: str | Arch = "sm_90",
    *,
    validate: bool = True,
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
    """
    a = get_arch(arch)
    rule = _rule(op, access_bytes, a)
    if validate:
        arr = _as_address_array(addresses, a.warp_size)
    else:
        arr = np.ascontiguousarray(addresses, dtype=np.int64)
        arr = arr[None, :] if arr.ndim == 1 else arr
        if arr.ndim != 2 or arr.shape[1] != a.warp_size:  # the one check kept: the kernel reads 32 lanes
            raise ValueError(f"addresses: expected shape (n, {a.warp_size}), got {arr.shape}")
    if arr.shape[0] == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    wave, ideal, _ = _run(arr, rule, a, validate, False)
    return wave, ideal


def analyze(
    addresses: Sequence[int | None] | np.ndarray,
    access_bytes: int = 4,
    op: str = "load",
    arch: str | Arch = "sm_90",
) -> Analysis:
    """Cost of one warp instruction: per-lane byte addresses (None = inactive lane) -> Analysis.

    ``op`` is one of ``OPS``: "load", "store", "atomic" (measured), "cp.async", "ldmatrix[.x1|.x2|.x4]"
    or "stmatrix[...]" (derived, not yet probed; ``op_status``). For ldmatrix/stmatrix ``access_bytes``
    is 16 (a matrix row) and ``phase_costs`` has one entry per matrix.

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
    _, _, cost = _run(arr, rule, a, True, True)
    lanes = int(_phase_lanes(arr[:, : rule.used], rule)[0])
    costs = tuple(int(c) for c in cost[0, : max(1, rule.used // lanes)])
    wavefronts = sum(costs)
    ideal = sum(1 for c in costs if c)
    return Analysis(wavefronts=wavefronts, ideal=ideal, conflicts=wavefronts - ideal, phase_costs=costs)


def shift_period(access_bytes: int = 4, op: str = "load", arch: str | Arch = "sm_90") -> int:
    """Bytes by which every active lane of an instruction may move together without changing its cost.

    One whole turn of the banks (``banks * bank_bytes``, 128 bytes on sm_90): a lane's unit number
    ``address // unit`` moves by ``unit_banks``, so every lane keeps its bank and every bank's distinct
    words stay distinct (or equal); the pair-merge test compares addresses, which move alike.
    """
    rule = _rule(op, access_bytes, get_arch(arch))
    return rule.unit * rule.unit_banks


def _splitmix64(seed: int, n: int) -> np.ndarray:
    """``n`` pseudo-random odd int64 multipliers (SplitMix64 from ``seed``): the row hashes' weights,
    made without importing numpy.random (its import is a tenth of ``import autopad``'s own time)."""
    mask, out, x = (1 << 64) - 1, [], seed
    for _ in range(n):
        x = (x + 0x9E3779B97F4A7C15) & mask
        z = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        out.append(((z ^ (z >> 31)) >> 2) | 1)  # below 2**62, odd
    return np.array(out, dtype=np.int64)


_HASH = _splitmix64(0x0DDBA11, 128).reshape(2, 64)
_DISTINCT_CHUNK = 1 << 12  # rows normalised and hashed at a time (temporaries stay in cache)


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
    n, w = work.shape
    period = rule.unit * rule.unit_banks
    # each row's shift and hash; the moved rows themselves are made again where they are compared, a block
    # at a time, rather than kept (a first ranking pays for every fresh page: 19 MB for the fp16 transpose)
    shift, h = np.empty(n, dtype=work.dtype), np.empty(n, dtype=np.int64)
    m = _HASH[0, :w]
    dense = low >= 0  # every lane active (tile walks): no lane to leave where it is

    def moved(s: int, e: int, by: np.ndarray) -> np.ndarray:
        part = work[s:e]
        return part - by[:, None] if dense else np.where(part >= 0, part - by[:, None], part)

    # with every lane active, a row moved by ``shift`` hashes to its own hash - shift * sum(m) (the hash
    # is linear, and wraps around 2**64 alike), so the moved rows are not made for hashing
    m_sum = int(m.sum(dtype=np.uint64).astype(np.int64))  # (wrapped as the hash wraps)
    for s in range(0, n, _DISTINCT_CHUNK):
        e = s + _DISTINCT_CHUNK
        with np.errstate(over="ignore"):  # the hash wraps around 2**64
            if dense:
                lo = work[s:e].min(axis=1)
                shift[s:e] = lo - lo % period
                h[s:e] = work[s:e] @ m - shift[s:e].astype(np.int64) * np.int64(m_sum)
            else:
                shift[s:e] = _shift(work[s:e], period)
                h[s:e] = moved(s, e, shift[s:e]) @ m
    first, inverse = _groups(h)
    reps = work[first] - shift[first][:, None] if dense else _moved_rows(work[first], shift[first])
    for s in range(0, n, _DISTINCT_CHUNK):  # every row equals its representative, or hashes collided
        e = s + _DISTINCT_CHUNK
        if not (reps[inverse[s:e]] == moved(s, e, shift[s:e])).all():
            norm = moved(0, n, shift)
            _, first, inverse = np.unique(norm, axis=0, return_index=True, return_inverse=True)
            inverse = inverse.ravel()
            reps = norm[first]
            break
    try:
        wave, ideal = analyze_batch(reps, access_bytes, op, a)
    except ValueError:
        analyze_batch(arr, access_bytes, op, a)  # raises, naming the caller's row
        raise
    return wave[inverse], ideal[inverse]


def _moved_rows(rows: np.ndarray, by: np.ndarray) -> np.ndarray:
    """``rows`` with each row's active lanes moved down by ``by`` (inactive lanes, negative, stay)."""
    return np.where(rows >= 0, rows - by[:, None], rows)


def _groups(h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(one index holding each distinct value, each entry's distinct index) of ``h``: one sort, and no
    second one for the first occurrences (``np.unique``'s return_index). Hashes are grouped by their
    high bits, each packed with its entry's index into one int64 and sorted as values (several times
    faster than an argsort): entries whose hashes differ only in the low bits fall in one group, which
    the caller's exact check of every row against its group's first treats as any other collision."""
    bits = max(1, (len(h) - 1).bit_length())
    if bits <= 31:
        key = ((h.view(np.uint64) >> np.uint64(bits + 1)).view(np.int64) << bits) | np.arange(len(h))
        s = np.sort(key)
        order = s & ((1 << bits) - 1)
        s >>= bits
    else:
        order = np.argsort(h)
        s = h[order]
    new = np.empty(len(h), dtype=bool)
    new[:1] = True
    np.not_equal(s[1:], s[:-1], out=new[1:])
    inverse = np.empty(len(h), dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    return order[new], inverse


def _normalised(rows: np.ndarray, period: int) -> np.ndarray:
    """``rows`` (int64) with each row's active lanes moved down by whole periods, its lowest address now
    below ``period``; inactive lanes (negative) unchanged."""
    rows = rows.astype(np.int64, copy=False)
    return np.where(rows >= 0, rows - _shift(rows, period)[:, None], rows)


def _shift(rows: np.ndarray, period: int) -> np.ndarray:
    """Each row's shift: its lowest active address rounded down to a whole period (0 for a row with no
    active lane), in the rows' type. An inactive lane (negative) read as unsigned is larger than any
    address, so the unsigned minimum is the lowest active address."""
    unsigned = np.dtype(f"u{rows.dtype.itemsize}")
    lo = rows.view(unsigned).min(axis=1)  # the largest unsigned value: no active lane
    return np.where(lo == np.iinfo(unsigned).max, 0, lo - lo % period).astype(rows.dtype)


def row_hashes(m: np.ndarray, start: int = 0) -> np.ndarray:
    """The 64-bit hash by which ``distinct_rows`` matches the rows of an integer matrix, for columns
    ``start``.. of a wider one (the wider matrix's hash is the sum of its column blocks' hashes; at most
    128 columns in all)."""
    with np.errstate(over="ignore"):
        return m.astype(np.int64, copy=False) @ _HASH.ravel()[start : start + m.shape[1]]


def distinct_rows(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index of each distinct row's first occurrence, each row's distinct index) of an integer matrix: rows
    matched by a 64-bit hash of their entries, then confirmed exactly (a collision falls back on sorting
    the rows themselves). The distinct rows come in the hashes' order."""
    m = np.asarray(m)
    if len(m) < 2 or m.shape[1] > _HASH.shape[1]:
        _, first, inverse = np.unique(m, axis=0, return_index=True, return_inverse=True)
        return first, inverse.ravel()
    _, first, inverse = np.unique(row_hashes(m), return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    reps = m[first]
    step = _DISTINCT_CHUNK
    if not all((reps[inverse[s : s + step]] == m[s : s + step]).all() for s in range(0, len(m), step)):
        # two distinct rows share a hash
        _, first, inverse = np.unique(m, axis=0, return_index=True, return_inverse=True)
        inverse = inverse.ravel()
    return first, inverse
