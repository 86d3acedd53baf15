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
* **Ideal** is what Nsight Compute's conflict counter subtracts: the number of store phases (runs of
  ``128 / w`` lanes) with an active lane, whatever the lines; wavefronts - ideal matched its conflicts on
  all 144 probes.
* **Where it is short:** the rule was fitted to these probes (not held out). 4 bytes agree on 48 of 48,
  8 and 16 bytes on 78 of 96, 126 of 144 in all, and every one of the 113 probes whose source is
  lane-ordered agrees (without ``global_addresses`` too). Every miss copies 8 or 16 bytes from a source
  permuted across the lanes into scattered shared words, and costs 1-8 wavefronts more than the sum above
  (never fewer); a permuted source into conflict-free words agrees. validate_probes.py has cases for the
  next run that ask whether the order inside a line matters. ``cp.async.cg`` was not measured: the run
  read the ``.ca`` counter for it (zero); validate_ncu.py now reads the ``_cache_bypass`` one for ``.cg``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .model_numpy import _count_costs
from .model_rules import _Rule

LINE_BYTES = 128  # the global line the lanes are grouped by
GLOBAL_LIMIT = 1 << 63  # global byte addresses: any non-negative int64


def as_global_array(glob: object, shared: np.ndarray) -> np.ndarray:
    """The callers' global byte addresses as int64 (n, warp), checked against the shared batch: the same
    shape; a non-negative address, aligned to the copy's width, on every lane that copies (a lane inactive
    on the shared side may give anything, -1 or None included)."""
    n, warp = shared.shape
    if isinstance(glob, np.ndarray):
        arr = glob
    else:
        try:
            rows = list(glob)  # type: ignore[call-overload]
        except TypeError:
            raise ValueError(
                f"global_addresses: expected integer byte addresses shaped like addresses ({n}, {warp}); "
                f"got {glob!r}"
            ) from None
        flat = rows if not any(isinstance(r, (list, tuple, np.ndarray)) for r in rows) else None
        if flat is not None:
            bad = [
                i
                for i, a in enumerate(flat)
                if a is not None and (isinstance(a, bool) or not isinstance(a, (int, np.integer)))
            ]
            if bad:
                raise ValueError(
                    f"global_addresses: lane {bad[0]} is {flat[bad[0]]!r}; each lane is an int or None"
                )
            rows = [[-1 if a is None else int(a) for a in flat]]
        try:
            arr = np.asarray(rows)
        except (ValueError, OverflowError):
            raise ValueError("global_addresses: rows of unequal length or values past int64") from None
    if arr.dtype.kind not in "iu" or arr.ndim not in (1, 2):
        raise ValueError(
            f"global_addresses: expected integer byte addresses shaped like addresses ({n}, {warp}); "
            f"got dtype {arr.dtype} and shape {arr.shape}"
        )
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) >= GLOBAL_LIMIT:
        raise ValueError("global_addresses: an address is past 2**63")
    arr = np.ascontiguousarray(arr.reshape(1, -1) if arr.ndim == 1 else arr, dtype=np.int64)
    if arr.shape != shared.shape:
        raise ValueError(f"global_addresses: shape {arr.shape} does not match the addresses' {shared.shape}")
    return arr


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
    why = (
        "is negative (every copying lane needs a source)"
        if a < 0
        else f"is not aligned to the {width}-byte copy"
    )
    raise ValueError(f"global_addresses: {where} source {a} {why}")


def line_costs(shared: np.ndarray, glob: np.ndarray, rule: _Rule) -> tuple[np.ndarray, np.ndarray, list]:
    """(wavefronts, ideal, per-row tuples of line costs in order of line address) of a checked batch.

    Each (instruction, global line) pair becomes one row holding only that line's lanes, costed as one
    phase of the whole warp without broadcast (``_count_costs``: the most lanes in one unit-bank).
    """
    n, warp = shared.shape
    active = shared >= 0
    rows_i, lanes_i = np.nonzero(active)
    lines = glob[rows_i, lanes_i] // LINE_BYTES
    # dense id of each (row, line) pair, pairs sorted by row then line
    pairs = np.stack([rows_i, lines], axis=1)
    uniq, group = np.unique(pairs, axis=0, return_inverse=True)
    group = group.reshape(-1)
    spread = np.full((len(uniq), warp), -1, dtype=np.int64)
    spread[group, lanes_i] = shared[rows_i, lanes_i]
    whole = dataclasses.replace(rule, lanes=warp, broadcast=False, merge=False)
    cost = _count_costs(spread, whole).reshape(-1) if len(uniq) else np.zeros(0, dtype=np.int64)
    owner = uniq[:, 0] if len(uniq) else np.zeros(0, dtype=np.int64)
    wave = np.bincount(owner, weights=cost, minlength=n).astype(np.int64)
    per = shared.reshape(n, warp // rule.lanes, rule.lanes)
    ideal = (per >= 0).any(axis=2).sum(axis=1).astype(np.int64)
    splits = np.searchsorted(owner, np.arange(1, n))
    costs = [tuple(int(c) for c in part) for part in np.split(cost, splits)]
    return wave, ideal, costs
