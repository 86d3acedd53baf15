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
* **A phase from several lines** (H100 run 187, 971 targeted probes, benchmarks/probe_cp_async_ca.py; H200
  run 188, the 235 phases of several lines of H100 run 181's random probes, each alone and in two other lane
  orders): two lanes from two lines share a wavefront unless they write one bank or read the same slot of
  their lines (slot = ``w``-byte position in the 128-byte line: the L1 reads slot k of every line from the
  same banks); k lines each at slot 0 cost k, k lines each at its own slot 1; the order of the lanes never
  matters. The rule: with ``W[j]`` the lanes writing unit-bank ``j`` and ``R[s]`` the distinct lines reading
  slot ``s``, the phase costs the most of ``max W``, ``max R`` and, over every pair ``(j, s)`` that some lane
  links (it writes ``j`` and reads ``s``), ``W[j] + R[s] - L[j, s]`` (``L``: the distinct lines among the
  linking lanes). Each lane joins its bank's queue to its slot's: the other writers of j and the other
  lines at s then take a wavefront each, one after the other. For a phase from one line it
  is the store count above (every ``R`` is 0 or 1 and every linked pair gives ``W[j]``).
* **How it was found and checked:** run 187's probes first (the line packing of the twenty-sixth session,
  in CP_ASYNC_REPLAY.md, predicted all 971 and was adopted for an hour); run 188 then showed that the
  packing, whose answer depends on which line comes first, misses 120 of the 235 phases while the hardware
  ignores lane order. The pair rule was read off runs 187 and 188 together (all 1,206 of their phases
  agree; run 188's phases are H100 run 181's copies, whose 372 whole instructions agree too). Not read off,
  and all agreeing: the fixture's 144 and H200 run 157's 162 + 252 (their 113 from sources permuted across
  lines included, which the lines-summed rule got 30 of and the packing 48). 1,901 of 1,901 recorded
  ``.ca`` probes in all. Then held out, drawn after the rule was committed: H200 run 189's 1,494 ``.ca``
  probes (``autopad validate`` seeds 3 and 4; 326 from sources permuted across lines), all agreeing:
  3,395 of 3,395.

``cp.async.cg`` follows another rule, op ``"cp.async.cg"`` (model_cp_async_cg.py).

Speed: numpy (bincounts over (instruction, phase, bank, slot) keys), 0.15-0.35 million random instructions
a second on this project's 2-core machine; batches of ``NUMPY_BELOW`` or more (and all of them under
``AUTOPAD_MODEL_BACKEND=numba``) take the same rule compiled (_model_numba_ca.py, addresses checked first),
in parts on plain threads (model_backend's ``_on_every_core``). Since 2026-12-06 (new kernel: phases from
one line counted without tables, else lane masks and a stamped unit table): batches of 1,000,000 on the
shared 2-core machine, 4 pairs run alternately with the previous code, sources of one line a phase
(lane-ordered at every width, 4-byte copies permuted inside their line) 7.4-30 million a second, most runs
18-27, against 4.0-12.8 before; sources from several lines a phase (8- and 16-byte permuted lines, random
lines) 5.4-12.4, most 7.5-11.5, against 4.1-11.5: 10 million is not reached there on every run
(benchmarks/results/cpu/cp_async_ca_speed_2026-12-06c.txt, benchmarks/bench_ca_speed.py; 100,000 and
400,000 a batch in the same file). Since 2026-12-06d 16-byte copies are counted by all pairs of a phase's 8
lanes, without tables: one core 99-103 ns an instruction against 146-166 on permuted and random lines; on
2 cores, the two kernels alternated in one process (``bench_ca_speed.py --against``, 10 rounds), 16-byte
permuted and random lines 12.5 / 12.2 million a second (medians) against 7.1 / 7.1, the 4- and 8-byte
kernels unchanged (4-byte random 8.5 against 8.5, 8-byte 7.0-7.5 against 7.2-7.2, in an hour when the
shared machine ran slow). Again at 22:52, each batch in analyze_batch's own parts: 16-byte 18.1 / 14.7
against 11.9 / 10.0, 8-byte 11.8 / 11.4 against 11.1 / 10.7, 4-byte random 13.7 against 13.5. So the 10
million bar on lines mixed in a phase is met at 16 bytes in every run, at 8 and 4 bytes in some hours of
the shared machine and not others (benchmarks/results/cpu/cp_async_ca_speed_2026-12-06d.txt).
``per_line`` always takes numpy.
"""

from __future__ import annotations

import numpy as np

from .model_backend import RULE_NUMPY_BELOW, compiled_wanted
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


_ROWS = 4096  # instructions counted at a time: the (bank, slot) counts stay small (4096 x 32 x 32 at most)


def _dense_lines(lines: np.ndarray) -> np.ndarray:
    """Each lane's line as its rank among its instruction's distinct lines (0 .. warp - 1), so that keys
    of (instruction, phase, slot, line) fit an int64 and a bincount."""
    m, warp = lines.shape
    order = np.argsort(lines, axis=1, kind="stable")
    ranked = np.take_along_axis(lines, order, axis=1)
    new = np.ones((m, warp), dtype=bool)
    new[:, 1:] = ranked[:, 1:] != ranked[:, :-1]
    rank = np.empty((m, warp), dtype=np.int64)
    np.put_along_axis(rank, order, np.cumsum(new, axis=1) - 1, axis=1)
    return rank


def _distinct(keys: np.ndarray, groups: np.ndarray, size: int) -> np.ndarray:
    """How many distinct ``keys`` each group has (``groups``: each key's group, 0 .. size - 1)."""
    _, first = np.unique(keys, return_index=True)
    return np.bincount(groups[first], minlength=size)


def line_costs(
    shared: np.ndarray, glob: np.ndarray, rule: _Rule, per_line: bool = False
) -> tuple[np.ndarray, np.ndarray, list]:
    """(wavefronts, ideal, per-row tuples of line costs lowest line first, or [] unless ``per_line``) of a
    checked batch.

    Per store phase (phases never share a wavefront; the instruction costs their sum): ``W[j]`` the lanes
    writing unit-bank ``j``, ``R[s]`` the distinct lines reading slot ``s``, and for each pair ``(j, s)`` that
    a lane links (it writes ``j`` and reads ``s``), ``W[j] + R[s] - L[j, s]``, ``L`` the distinct lines among
    the lanes that link them: the phase costs the most of ``max W``, ``max R`` and those. All of it is
    counted with bincounts over (instruction, phase, bank, slot) keys, a chunk of instructions at a time. A
    line's cost in ``per_line`` is what its own copies need, summed over the phases it appears in: the most
    of them in one unit-bank of each phase (the instruction may cost less or more than their sum: lines of
    one phase share wavefronts, or queue behind each other where a lane links a bank and a slot).
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
    for lo in range(0, n, _ROWS):
        part, gpart = shared[lo : lo + _ROWS], glob[lo : lo + _ROWS]
        m = len(part)
        active = part >= 0
        line = _dense_lines(np.where(active, gpart // LINE_BYTES, never))
        bank = (part >> shift) & (ub - 1)
        slot = (gpart >> shift) & (ub - 1)
        group = np.arange(m)[:, None] * phases + np.arange(warp) // lanes  # (instruction, phase)
        g, b, sl, ln = group[active], bank[active], slot[active], line[active]
        size = m * phases
        w = np.bincount(g * ub + b, minlength=size * ub)  # W: lanes a (phase, bank)
        r = _distinct((g * ub + sl) * warp + ln, g * ub + sl, size * ub)  # R: lines a (phase, slot)
        pair = (g * ub + b) * ub + sl
        link = _distinct(pair * warp + ln, pair, size * ub * ub)  # L: lines a linked (phase, bank, slot)
        cost = np.maximum(w.reshape(size, ub).max(axis=1), r.reshape(size, ub).max(axis=1))
        linked = w[g * ub + b] + r[g * ub + sl] - link[pair]
        np.maximum.at(cost, g, linked)
        wave[lo : lo + m] = cost.reshape(m, phases).sum(axis=1)
        if per_line:  # each line's own copies: its most lanes in one unit-bank of each phase, summed
            key = ((np.arange(m)[:, None] * warp + line) * phases + np.arange(warp) // lanes) * ub + bank
            per = np.bincount(key[active], minlength=m * warp * phases * ub)
            own = per.reshape(m, warp, phases, ub).max(axis=3).sum(axis=2)  # (instruction, line rank)
            costs += [tuple(int(c) for c in row[row > 0]) for row in own]
    return wave, ideal, costs


NUMPY_BELOW = RULE_NUMPY_BELOW  # batches this large or larger take the compiled rule (model_backend)


def ca_compiled(
    shared: np.ndarray, glob: np.ndarray, rule: _Rule
) -> tuple[np.ndarray, np.ndarray, list] | None:
    """``line_costs`` without per-line costs on the compiled rule, which checks the addresses as it goes
    (``shared`` and ``glob`` int64 (n, warp), -1 inactive), or None where numpy should do it: a batch under
    ``NUMPY_BELOW`` (``auto``), no numba, a warp of other than 32 lanes, an arch whose banks are not 32 of 4
    bytes, or a bad address (the numpy checks then say which and why). The backend choice and numba's
    loading are model_backend's, as for every other op; the batch runs in model_backend's ``_parts`` on
    plain threads (``_on_every_core``, as .cg's does: no pool made and closed a call), each part writing its
    own slices of ``wave`` and ``ideal``, so their fresh pages are first touched on every core."""
    from .model_backend import _on_every_core, _parts
    from .model_rules import ADDRESS_LIMIT

    n, warp = shared.shape
    # the kernel fixes a store phase at 128 / width lanes over 128 / width unit-banks of width bytes (32
    # banks of 4 bytes): an arch of another bank geometry (a user's Arch) takes the numpy rule
    lanes = 128 // rule.width
    standard = rule.lanes == lanes and rule.unit_banks == lanes and rule.unit == rule.width
    if warp != 32 or not standard or not compiled_wanted(n, NUMPY_BELOW):
        return None
    from ._model_numba_ca import ca_rows

    shared = np.ascontiguousarray(shared, dtype=np.int64)
    glob = np.ascontiguousarray(glob, dtype=np.int64)
    wave = np.empty(n, dtype=np.int64)
    ideal = np.empty(n, dtype=np.int64)
    parts = _parts(n)
    bad = [False] * parts

    def run(p: int) -> None:
        lo, hi = n * p // parts, n * (p + 1) // parts
        bad[p] = (
            ca_rows(shared[lo:hi], glob[lo:hi], wave[lo:hi], ideal[lo:hi], ADDRESS_LIMIT, rule.width) >= 0
        )

    _on_every_core(parts, run)
    return None if any(bad) else (wave, ideal, [])
