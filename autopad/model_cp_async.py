"""cp.async's shared-memory writes, grouped by the global line each lane copies from.

Split from model.py (one concern a module): ``analyze`` and ``analyze_batch`` call ``line_costs`` when a
caller gives ``global_addresses`` for op "cp.async"; without them the plain rule (model_rules.py) applies,
which is the same rule for a lane-ordered source (below).

What the H200 measured (``autopad validate --ops cp.async``, 2026-12-01, 144 ``cp.async.ca`` probes of 4, 8
and 16 bytes, benchmarks/results/h200/validate_matrix, tests/fixtures/h200_cp_async_probes.json):

* **No broadcast.** 32 lanes copying into one shared word cost 32 wavefronts, where a store costs 1: every
  active lane's write is its own request, as for atomics.
* **One group per 128-byte global line.** The lanes whose global source lies in one 128-byte line write
  together; the instruction costs, summed over lines, the most lanes of that line in one bank (a lane of
  ``w`` bytes covers ``w / 4`` banks, and aligned lanes of one width meet the same competitors in each of
  them, so counting in units of ``w`` bytes gives the same maximum). Moving the global side alone changes
  the cost: 32 lanes writing 32 consecutive shared words cost 1 wavefront from one line, 32 from 32 lines.
  A lane-ordered source (lane ``l`` reads ``base + l * w``, ``base`` line-aligned) puts lanes ``128/w * k
  ...`` in line ``k``: exactly the store phases, which is why the plain rule needs no global addresses.
  So does any source whose store phases each copy from a global line of their own, in any order inside
  it ("line-ordered" below; the 4-byte probes that permute their lanes inside one line agree).
* **Ideal** is what Nsight Compute's conflict counter subtracts: the number of store phases (runs of
  ``128 / w`` lanes) with an active lane, whatever the lines; wavefronts - ideal matched its conflicts on
  all 144 probes.
* **Where it is short:** the rule was fitted to these probes (not held out). 4 bytes agree on 48 of 48,
  8 and 16 bytes on 78 of 96, 126 of 144 in all. Every one of the 117 probes with a line-ordered source
  agrees, without ``global_addresses`` too (99 of them lane-ordered, 14 four-byte copies permuted inside
  their one line, 4 eight- and 16-byte copies whose lines are reversed). Every miss copies 8 or 16 bytes
  from a source permuted across lines into scattered shared words, and measured 1-8 wavefronts above the
  prediction (never below); a permuted source into conflict-free words agrees. validate_probes.py has 8-
  and 16-byte cases for the next run that ask whether the order inside a line matters there.
  ``cp.async.cg`` was not measured in that run (it read the ``.ca`` counter for it, zero); measured from
  its own counter since, it follows another rule, op ``"cp.async.cg"`` (model_cp_async_cg.py).
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


_ROWS = 8192  # instructions costed at a time: the per-bank counts stay small (8192 x 32 lines x 32 banks)


def line_costs(
    shared: np.ndarray, glob: np.ndarray, rule: _Rule, per_line: bool = False
) -> tuple[np.ndarray, np.ndarray, list]:
    """(wavefronts, ideal, per-row tuples of line costs lowest line first, or [] unless ``per_line``) of a
    checked batch.

    Each instruction's lanes are sorted by global line (a row of 32: numpy's small sorts are fast); the
    k-th distinct line of instruction i is group 32 i + k, and a group costs its most lanes in one unit-bank
    (a ``width``-byte unit over ``unit_banks`` of them: ``_count_costs``'s count, without broadcast),
    counted with one ``np.bincount`` over (group, unit-bank) per chunk of instructions.
    """
    n, warp = shared.shape
    wave = np.zeros(n, dtype=np.int64)
    per = shared.reshape(n, warp // rule.lanes, rule.lanes)
    ideal = (per >= 0).any(axis=2).sum(axis=1).astype(np.int64)
    costs: list = []
    shift = rule.unit.bit_length() - 1  # unit is a power of two (4, 8 or 16 bytes)
    ub = rule.unit_banks
    never = np.iinfo(np.int64).max  # the line of a lane that does not copy: sorts last
    for s in range(0, n, _ROWS):
        part, gpart = shared[s : s + _ROWS], glob[s : s + _ROWS]
        m = len(part)
        active = part >= 0
        lines = np.where(active, gpart // LINE_BYTES, never)
        order = np.argsort(lines, axis=1, kind="stable")
        sorted_lines = np.take_along_axis(lines, order, axis=1)
        new = np.ones((m, warp), dtype=bool)
        new[:, 1:] = sorted_lines[:, 1:] != sorted_lines[:, :-1]
        rank = np.cumsum(new, axis=1) - 1  # the line's rank in its instruction, per sorted lane
        sorted_active = np.take_along_axis(active, order, axis=1)
        bank = (np.take_along_axis(part, order, axis=1) >> shift) & (ub - 1)
        key = (np.arange(m)[:, None] * warp + rank) * ub + bank
        counts = np.bincount(key[sorted_active], minlength=m * warp * ub)
        cost = counts.reshape(m, warp, ub).max(axis=2)  # (instruction, line rank); 0 past its lines
        wave[s : s + m] = cost.sum(axis=1)
        if per_line:
            costs += [tuple(int(c) for c in row[row > 0]) for row in cost]
    return wave, ideal, costs
