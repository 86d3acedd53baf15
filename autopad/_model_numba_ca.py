"""cp.async.ca's line packing (model_cp_async.py, ``line_costs``) compiled with numba.

Why: a store phase whose copies come from several global lines is packed line by line, a sequential
placement numpy cannot vectorise; model_cp_async.py does it in Python (``pack_phase``), some 20,000-40,000
such instructions a second on this project's 2-core machine, where the phases from one line are counted at
about a million a second. Batches with many packed phases come here: the same rule, every instruction in
one compiled pass, bit masks for the banks taken and the slots read in each wavefront.

The answers equal the numpy path's (tests/test_model_cp_async.py compares both on the recorded probes and
on random batches). The caller checks the addresses first (this kernel trusts them). Loaded by
model_cp_async.py only when numba is wanted (never at ``import autopad``); cached on disk like
_model_numba.py.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["ca_rows"]


@njit(nogil=True, cache=True)
def ca_rows(
    shared: np.ndarray, glob: np.ndarray, wave: np.ndarray, lanes: int, shift: int, ub: int
) -> None:  # pragma: no cover - compiled
    """Wavefronts of each row of ``shared`` / ``glob`` (checked int64 (n, warp), -1 inactive) into ``wave``:
    per store phase of ``lanes`` lanes, the lines in the order of their first lane, each packed as a store
    (``k``-th lane of the line in a unit-bank -> its ``k``-th set; unit-bank ``(s >> shift) & (ub - 1)``),
    its sets placed at the first run of wavefronts with none of their banks taken and none of their slots
    (``(g >> shift) & (ub - 1)``) read by another line; an instruction costs the sum over its phases."""
    n, warp = shared.shape
    phases = warp // lanes
    line_id = np.zeros(lanes, dtype=np.int64)  # the phase's lines, in first-lane order
    lane_of = np.zeros(lanes, dtype=np.int64)  # each lane's line index (-1: not copying)
    depth = np.zeros(ub, dtype=np.int64)  # a line's lanes so far in each unit-bank
    set_b = np.zeros(lanes, dtype=np.int64)  # a line's sets: banks, slots (bit masks)
    set_s = np.zeros(lanes, dtype=np.int64)
    wb = np.zeros(lanes, dtype=np.int64)  # the phase's wavefronts: banks taken, slots read
    ws = np.zeros(lanes, dtype=np.int64)
    for i in range(n):
        total = 0
        for p in range(phases):
            base = p * lanes
            nl = 0
            for k in range(lanes):
                s = shared[i, base + k]
                if s < 0:
                    lane_of[k] = -1
                    continue
                ln = glob[i, base + k] >> 7
                j = 0
                while j < nl and line_id[j] != ln:
                    j += 1
                if j == nl:
                    line_id[nl] = ln
                    nl += 1
                lane_of[k] = j
            nwave = 0
            for j in range(nl):
                for b in range(ub):
                    depth[b] = 0
                nsets = 0
                for k in range(lanes):
                    if lane_of[k] != j:
                        continue
                    b = (shared[i, base + k] >> shift) & (ub - 1)
                    d = depth[b]
                    depth[b] = d + 1
                    if d == nsets:
                        set_b[d] = 0
                        set_s[d] = 0
                        nsets += 1
                    set_b[d] |= 1 << b
                    set_s[d] |= 1 << ((glob[i, base + k] >> shift) & (ub - 1))
                t = 0
                while True:  # the first run of wavefronts where every set fits
                    ok = True
                    for d in range(nsets):
                        if t + d < nwave and ((wb[t + d] & set_b[d]) != 0 or (ws[t + d] & set_s[d]) != 0):
                            ok = False
                            break
                    if ok:
                        break
                    t += 1
                for d in range(nsets):
                    if t + d == nwave:
                        wb[nwave] = 0
                        ws[nwave] = 0
                        nwave += 1
                    wb[t + d] |= set_b[d]
                    ws[t + d] |= set_s[d]
            total += nwave
        wave[i] = total
