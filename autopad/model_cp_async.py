"""cp.async.ca's shared-memory writes from the global lines each lane copies from.

Split from model.py (one concern a module): ``analyze`` and ``analyze_batch`` call ``line_costs`` when a
caller gives ``global_addresses`` for op "cp.async"; without them the plain rule (model_rules.py) applies,
which is the same rule for a lane-ordered source (below).

What Nsight Compute measured (``cp.async.ca`` of 4, 8 and 16 bytes; its counter
``..._op_ldgsts_cache_access``):

* **No broadcast** (H200, 2026-12-01, 144 probes, tests/fixtures/h200_cp_async_probes.json): 32 lanes
  copying into one shared word cost 32 wavefronts, where a store costs 1: every active lane's write is its
  own request, as for atomics.
* **Store phases never share a wavefront**: runs of ``128 / w`` lanes (H100 run 187: two lanes in two
  phases cost 2 whatever their lines, slots and banks). **Ideal** is what the conflict counter subtracts,
  the phases with an active lane (it matched on every probe).
* **A phase from one global line** costs its most lanes in one bank (a lane of ``w`` bytes covers ``w / 4``
  banks, and aligned lanes of one width meet the same competitors in each, so counting in units of ``w``
  bytes gives the same maximum). A lane-ordered source (lane ``l`` reads ``base + l * w``, ``base``
  line-aligned) is such a source, which is why the plain rule needs no global addresses; so is any source
  whose phases each copy from a line of their own, in any order inside it ("line-ordered": every such
  probe agrees, 117 + 129 + 199 on the H200, 293 and 456 on the H100).
* **A phase from several lines** (H100 run 187, 971 targeted probes, benchmarks/probe_cp_async_ca.py):
  two lanes from two lines share a wavefront unless they write one bank or read the same slot of their
  lines (slot = ``w``-byte position in the 128-byte line: the L1 reads slot k of every line from the same
  banks); k lines each at slot 0 cost k, k lines each at its own slot 1. The rule (``pack_phase``): each
  line's lanes are packed as a store's (the line's k-th lane in a bank to its k-th set), and the lines, in
  the order of their first lane, are placed whole at the first run of wavefronts where none of their sets
  meets a bank taken or a slot another line reads. Written down offline in the twenty-sixth session from
  the random probes (benchmarks/results/h200/validate_matrix/CP_ASYNC_REPLAY.md) and adopted after run 187:
  held out there it predicts all 971 (the rule before it, lines summed, 567); on ``autopad validate``'s
  random probes from sources permuted across lines, 23 of 79 (H100 run 181, held out; 16 before), 19 of 53
  and 18 of 33 (H200 run 157's seeds 1 and 0; 12 and 9 before), 11 of 27 (the fixture; 9), mostly under
  the measurement by 1-4 where it misses: some other clash among three or more lines is still missing.
  The fixture: 128 of 144 (126 before).

``cp.async.cg`` follows another rule, op ``"cp.async.cg"`` (model_cp_async_cg.py).

Speed: the phases from one line are counted at once (numpy, about a million random instructions a second
on this project's 2-core machine); a phase from several lines is packed in Python (``pack_phase``, some
20,000-40,000 instructions a second), or, for a chunk with ``PACK_NUMPY_BELOW`` phases to pack or more,
in one compiled pass (_model_numba_ca.py; about 0.5 million permuted instructions a second in all).
"""

from __future__ import annotations

import numpy as np

from .model_rules import _Rule

LINE_BYTES = 128  # the global line the lanes are grouped by
GLOBAL_LIMIT = 1 << 63  # global byte addresses: any non-negative int64


def _lane_value(a: object, where: str) -> int:
    """One lane of a list: None -> -1 (no source), an int as it is; anything else is an error."""
    if a is None:
        return -1
    if isinstance(a, bool) or not isinstance(a, (int, np.integer)):
        raise ValueError(f"global_addresses: {where} is {a!r}; each lane is an int byte address or None")
    if not -1 <= int(a) < GLOBAL_LIMIT:
        raise ValueError(f"global_addresses: {where} address {int(a)} is outside 0 .. 2**63 - 1")
    return int(a)


def as_global_array(glob: object, shared: np.ndarray) -> np.ndarray:
    """The callers' global byte addresses as int64 (n, warp), checked against the shared batch: the same
    shape, integers or None. Lanes inactive on the shared side may give anything (-1, None, a uint64 -1);
    ``check_global`` then checks the copying lanes' values."""
    n, warp = shared.shape
    want = f"integer byte addresses (None for no source) shaped like addresses, ({n}, {warp})"
    arr = glob
    if not isinstance(glob, np.ndarray) or glob.dtype.kind == "O":
        if isinstance(glob, (str, bytes, int, float, dict, set, frozenset)) or glob is None:
            raise ValueError(f"global_addresses: expected {want}; got {glob!r}")
        try:
            rows = glob.tolist() if isinstance(glob, np.ndarray) else list(glob)  # type: ignore[call-overload]
        except TypeError:
            raise ValueError(f"global_addresses: expected {want}; got {glob!r}") from None
        nested = any(isinstance(r, (list, tuple, np.ndarray)) for r in rows)
        rows = rows if nested else ([rows] if rows or n else [])
        table = []
        for r, row in enumerate(rows):
            lanes = list(row) if isinstance(row, (list, tuple, np.ndarray)) else None
            if lanes is None or len(lanes) != warp:
                got = "is not a row" if lanes is None else f"has {len(lanes)} entries"
                what = f"row {r} {got}" if nested else f"the instruction {got}"
                raise ValueError(f"global_addresses: {what}; each row needs one entry per lane ({warp})")
            head = f"row {r} " if nested else ""
            table.append([_lane_value(a, f"{head}lane {lane}") for lane, a in enumerate(lanes)])
        arr = np.array(table, dtype=np.int64).reshape(len(table), warp)
    if arr.dtype.kind not in "iu" or arr.ndim not in (1, 2):
        raise ValueError(f"global_addresses: expected {want}; got dtype {arr.dtype} and shape {arr.shape}")
    arr = arr.reshape(1, -1) if arr.ndim == 1 else arr
    if arr.shape != shared.shape:
        raise ValueError(f"global_addresses: shape {arr.shape} does not match the addresses' {shared.shape}")
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) >= GLOBAL_LIMIT:
        big = arr >= GLOBAL_LIMIT  # past int64: an error on a copying lane, "no source" elsewhere
        if (big & (shared >= 0)).any():
            r, lane = np.unravel_index(int(np.argmax(big & (shared >= 0))), arr.shape)
            raise ValueError(
                f"global_addresses: row {r} lane {lane} address {int(arr[r, lane])} is past 2**63 - 1"
            )
        arr = np.where(big, np.uint64(0), arr)
    return np.ascontiguousarray(arr, dtype=np.int64)


def check_global(glob: np.ndarray, shared: np.ndarray, width: int) -> None:
    """Raise, naming the first bad (row, lane), where a copying lane's source is negative or misaligned
    (cp.async needs its global source aligned to the copy size: PTX ISA, cp.async)."""
    active = shared >= 0
    bad = active & ((glob < 0) | ((glob & (width - 1)) != 0))
    if not bad.any():
        return
    r, lane = np.unravel_index(int(np.argmax(bad)), bad.shape)
    where = f"row {r} lane {lane}" if shared.shape[0] > 1 else f"lane {lane}"
    a = int(glob[r, lane])
    if a < 0:
        s = int(shared[r, lane])
        raise ValueError(
            f"global_addresses: {where} has no source ({'None or -1' if a == -1 else a}) but copies to "
            f"shared address {s}; every lane with a shared address needs a global one"
        )
    raise ValueError(f"global_addresses: {where} source {a} is not aligned to the {width}-byte copy")


def line_ordered(shared: list, glob: list, width: int) -> bool:
    """Whether each store phase's copying lanes (runs of ``128 / width``) read one global line, a line of
    its own: the case where the lines group the lanes as the phases do, so the plain rule (no
    ``global_addresses``) gives the same cost. Lists of one instruction, None = inactive."""
    per = LINE_BYTES // width
    lines: dict[int, set[int]] = {}
    for lane, (s, g) in enumerate(zip(shared, glob)):
        if s is not None and s >= 0:
            lines.setdefault(lane // per, set()).add(int(g) // LINE_BYTES)
    if any(len(v) > 1 for v in lines.values()):
        return False
    return len({min(v) for v in lines.values()}) == len(lines)


_ROWS = 8192  # instructions counted at a time: the per-bank counts stay small (8192 x 32 groups x 32 banks)


def pack_phase(line: list[int], slot: list[int], bank: list[int]) -> int:
    """Wavefronts of one store phase whose copies come from several global lines (lists in lane order: each
    copying lane's global line, its slot in that line and its shared unit-bank, both in units of the copy).

    Each line's lanes are packed as a store's are, without broadcast (the k-th lane of the line in a bank
    goes to the line's k-th set), and the line's sets are placed, lines in the order of their first lane, at
    the first run of wavefronts where none of them meets a bank already taken or a slot another line
    already reads there (the L1 reads slot k of every line from the same banks: two lines at one slot
    clash, at two slots they do not)."""
    order: list[int] = []
    members: dict[int, list[int]] = {}
    for i, ln in enumerate(line):
        if ln not in members:
            members[ln] = []
            order.append(ln)
        members[ln].append(i)
    banks: list[int] = []  # per wavefront: the banks taken and the slots read (bit masks)
    slots: list[int] = []
    for ln in order:
        set_banks: list[int] = []
        set_slots: list[int] = []
        depth: dict[int, int] = {}
        for i in members[ln]:
            k = depth.get(bank[i], 0)
            depth[bank[i]] = k + 1
            if k == len(set_banks):
                set_banks.append(0)
                set_slots.append(0)
            set_banks[k] |= 1 << bank[i]
            set_slots[k] |= 1 << slot[i]
        t = 0
        while any(
            t + j < len(banks) and (banks[t + j] & b or slots[t + j] & sl)
            for j, (b, sl) in enumerate(zip(set_banks, set_slots))
        ):
            t += 1
        for j, (b, sl) in enumerate(zip(set_banks, set_slots)):
            if t + j == len(banks):
                banks.append(0)
                slots.append(0)
            banks[t + j] |= b
            slots[t + j] |= sl
    return len(banks)


# a chunk with this many phases to pack takes the compiled packing (_model_numba_ca.py) where numba loads:
# loading numba and the cached kernel took 0.2-0.25 s on the 2-core machine, what ``pack_phase`` spends on
# some 5,000-10,000 phases
PACK_NUMPY_BELOW = 5_000


def _packer(phases: int):
    """_model_numba_ca's ``ca_rows`` where a chunk with ``phases`` phases to pack should take it:
    ``AUTOPAD_MODEL_BACKEND=numba`` (numba must load) with any, or ``auto`` with ``PACK_NUMPY_BELOW`` or
    more and numba loading; else None (``pack_phase``). The choice and the loading are model_backend's."""
    if phases == 0:
        return None
    from .model_backend import _choice, _numba_module

    if _choice() == "auto" and phases < PACK_NUMPY_BELOW:
        return None
    if _numba_module() is None:  # numpy asked for, or numba missing (an error where numba was asked for)
        return None
    from ._model_numba_ca import ca_rows

    return ca_rows


def line_costs(
    shared: np.ndarray, glob: np.ndarray, rule: _Rule, per_line: bool = False
) -> tuple[np.ndarray, np.ndarray, list]:
    """(wavefronts, ideal, per-row tuples of line costs lowest line first, or [] unless ``per_line``) of a
    checked batch.

    Store phases never share a wavefront, so an instruction costs the sum over its phases. A phase whose
    copies come from one global line costs its most lanes in one unit-bank (no broadcast), counted for
    every such phase at once with one ``np.bincount`` per chunk of instructions; a phase from several lines
    is packed (``pack_phase``, one phase at a time). A line's cost in ``per_line`` is what its own copies
    need, summed over the phases it appears in: the most of them in one unit-bank of each phase (lines of
    one phase may share wavefronts, so the instruction's cost is at most the sum of its lines' costs).
    """
    n, warp = shared.shape
    lanes = rule.lanes
    phases = warp // lanes
    wave = np.zeros(n, dtype=np.int64)
    ideal = (shared.reshape(n, phases, lanes) >= 0).any(axis=2).sum(axis=1).astype(np.int64)
    costs: list = []
    shift = rule.unit.bit_length() - 1  # unit is a power of two (4, 8 or 16 bytes)
    ub = rule.unit_banks  # = 128 / width: also the slots of a global line
    never = np.iinfo(np.int64).max  # the line of a lane that does not copy: sorts last
    for s in range(0, n, _ROWS):
        part, gpart = shared[s : s + _ROWS], glob[s : s + _ROWS]
        m = len(part)
        active = part >= 0
        lines = np.where(active, gpart // LINE_BYTES, never)
        bank = (part >> shift) & (ub - 1)
        # phases from one line: the most lanes in one unit-bank; from several: packed below
        ph_lines = np.sort(lines.reshape(m, phases, lanes), axis=2)
        ph_active = ph_lines != never
        several = (ph_lines[:, :, 1:] != ph_lines[:, :, :-1]) & ph_active[:, :, 1:]
        several = several.any(axis=2)  # (instruction, phase)
        phase_of = np.broadcast_to(np.arange(warp) // lanes, (m, warp))
        key = (np.arange(m)[:, None] * phases + phase_of) * ub + bank
        counts = np.bincount(key[active], minlength=m * phases * ub).reshape(m, phases, ub).max(axis=2)
        counts[several] = 0
        wave[s : s + m] = counts.sum(axis=1)
        kernel = _packer(int(several.sum()))
        if kernel is not None:  # compiled: the rows with a packed phase, whole
            rows = np.nonzero(several.any(axis=1))[0]
            got = np.empty(len(rows), dtype=np.int64)
            kernel(np.ascontiguousarray(part[rows]), np.ascontiguousarray(gpart[rows]), got, lanes, shift, ub)
            wave[s + rows] = got
            several = several[:0]  # nothing left for the loop below
        slot = (gpart >> shift) & (ub - 1)
        for i, p in zip(*np.nonzero(several)):
            lo, hi = p * lanes, (p + 1) * lanes
            on = active[i, lo:hi]
            wave[s + i] += pack_phase(
                lines[i, lo:hi][on].tolist(), slot[i, lo:hi][on].tolist(), bank[i, lo:hi][on].tolist()
            )
        if per_line:  # each line's own copies: its most lanes in one unit-bank of each phase, summed
            order = np.argsort(lines, axis=1, kind="stable")
            sorted_lines = np.take_along_axis(lines, order, axis=1)
            new = np.ones((m, warp), dtype=bool)
            new[:, 1:] = sorted_lines[:, 1:] != sorted_lines[:, :-1]
            rank = np.empty((m, warp), dtype=np.int64)
            np.put_along_axis(rank, order, np.cumsum(new, axis=1) - 1, axis=1)  # the line's rank, per lane
            key = ((np.arange(m)[:, None] * warp + rank) * phases + phase_of) * ub + bank
            per = np.bincount(key[active], minlength=m * warp * phases * ub)
            cost = per.reshape(m, warp, phases, ub).max(axis=3).sum(axis=2)  # (instruction, line rank)
            costs += [tuple(int(c) for c in row[row > 0]) for row in cost]
    return wave, ideal, costs
