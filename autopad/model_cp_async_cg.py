"""cp.async.cg's shared-memory writes: 32-byte sector moves, gathered into wavefronts.

``cp.async.cg.shared.global`` (16 bytes a lane; the L1-bypassing copy that Triton's pipelined ``tl.dot``
issues) does not write shared memory as a store does. Read off Nsight Compute's own counter for it
(``..._op_ldgsts_cache_bypass``) on 252 targeted probes (H100 run 179, 2026-12-05,
benchmarks/probe_cp_async_cg.py: pairs of copies, whole-line permutations, two writers of a word) and
checked on 144 earlier ones it was not read off (H200 run 157: every one agrees):

* **Words written twice count once**: of the lanes copying into the same 16-byte shared chunk, the lowest
  lane's copy is the one counted (32 lanes into one word cost 1 wavefront; ``.ca`` costs 32).
* **Sector moves.** A lane copies half ``h`` (16 bytes) of a 32-byte global sector ``S`` (0-3 in its
  128-byte line) to half ``e`` of a 32-byte shared sector ``D`` (0-3 in its 128-byte row). The copies of
  one (line, S) to one (row, D) with the same half swap ``h ^ e`` are one move; its half set is which of
  S's halves it carries ({lower}, {upper} or both).
* **A wavefront carries moves of one global line into one shared row** that read the same half set, swap
  halves alike and move their sector by the same parity, ``(S ^ D) & 1``: the 64-byte half of the row a
  sector lands in is free, its place inside that half is not. So a line copied into a row under any XOR
  of its chunks costs 1 (the NVMMA swizzles), a rotation by 2 chunks 1, by one chunk 2; two lanes copying
  the lower halves of sectors 0 and 1 to chunks 0 and 2 (or 0 and 6) share a wavefront, to chunks 0 and 4
  do not, and chunk 0 with chunk 3 of the same line never (their half sets differ).
* **One move a source sector a wavefront**: a sector whose halves go to two places takes two.

Wavefronts = over the groups (line, row, parity, half swap, half set), the most moves any one source sector
makes in the group, summed. Nsight Compute reports no bank conflicts for ``.cg`` (its conflict counter read
0 on all 396 probes), so ``ideal`` here is the wavefronts themselves. Without ``global_addresses`` the
source is lane-ordered: lane ``l`` copies ``16 l`` from a line-aligned base (8 lanes a line).

Where the built-in kernels issue it: Triton's ``tl.dot`` path of the GEMM (kernels/triton/matmul.py, PATH
1) copies each k-step with 8 lanes a 128-byte staging row under the NVMMA 128-byte swizzle, which the rule
costs as a store does (one global line into one row under an XOR: 1 wavefront) where a tile row is 128
bytes or more; with 64-byte tile rows (BK 32 at 16 bits) the 8 lanes copy two global lines into one row,
2 wavefronts where the store pattern that spec scores counts 1. The spec's pattern has no global side, so
that case is not charged (its time effect is unmeasured).
"""

from __future__ import annotations

import numpy as np

WIDTH = 16  # .cg copies 16 bytes only (PTX ISA: cp-size 16 for .cg)


def lane_ordered(n: int, warp: int) -> np.ndarray:
    """The default global side: lane ``l`` copies bytes ``16 l`` .. ``16 l + 15`` of a line-aligned source."""
    return np.broadcast_to(np.arange(warp, dtype=np.int64) * WIDTH, (n, warp))


def _first_writers(shared: np.ndarray) -> np.ndarray:
    """Mask of the active lanes that are the lowest lane copying into their shared chunk."""
    n, warp = shared.shape
    order = np.argsort(shared, axis=1, kind="stable")  # equal addresses keep lane order
    ss = np.take_along_axis(shared, order, axis=1)
    first = np.ones((n, warp), dtype=bool)
    first[:, 1:] = ss[:, 1:] != ss[:, :-1]
    keep = np.zeros((n, warp), dtype=bool)
    np.put_along_axis(keep, order, first & (ss >= 0), axis=1)
    return keep


def cg_costs(
    shared: np.ndarray, glob: np.ndarray | None = None, per_line: bool = False
) -> tuple[np.ndarray, np.ndarray, list]:
    """(wavefronts, ideal, per-row tuples of each global line's wavefronts, lowest line first, or [] unless
    ``per_line``) of a checked batch: ``shared`` int64 (n, warp), -1 inactive, 16-byte aligned; ``glob``
    the lanes' global byte addresses (same shape; None = lane-ordered)."""
    n, warp = shared.shape
    wave = np.zeros(n, dtype=np.int64)
    if glob is None:
        glob = lane_ordered(n, warp)
    keep = _first_writers(shared)
    inst = np.nonzero(keep)[0]
    s, g = shared[keep], glob[keep]
    if inst.size == 0:
        return wave, wave.copy(), [() for _ in range(n)] if per_line else []
    line, sec, half = g >> 7, (g >> 5) & 3, (g >> 4) & 1
    row, dsec, dhalf = s >> 7, (s >> 5) & 3, (s >> 4) & 1
    # one move: (instruction, line, source sector, row, destination sector, half swap); its half set
    moves, inv = np.unique(
        np.stack([inst, line, sec, row, dsec, half ^ dhalf], axis=1), axis=0, return_inverse=True
    )
    halves = np.zeros(len(moves), dtype=np.int64)
    np.bitwise_or.at(halves, inv.ravel(), 1 << half)
    mi, ml, ms, mr, md, mx = moves.T
    # one group: (instruction, line, row, sector parity, half swap, half set)
    groups, ginv = np.unique(
        np.stack([mi, ml, mr, (ms ^ md) & 1, mx, halves], axis=1), axis=0, return_inverse=True
    )
    ginv = ginv.ravel()
    # a group costs the most moves one source sector makes in it
    pairs, counts = np.unique(np.stack([ginv, ms], axis=1), axis=0, return_counts=True)
    cost = np.zeros(len(groups), dtype=np.int64)
    np.maximum.at(cost, pairs[:, 0], counts)
    np.add.at(wave, groups[:, 0], cost)
    costs: list = []
    if per_line:
        by_line: dict[int, dict[int, int]] = {}
        for (i, ln), c in zip(groups[:, :2].tolist(), cost.tolist()):
            d = by_line.setdefault(i, {})
            d[ln] = d.get(ln, 0) + c
        costs = [tuple(c for _, c in sorted(by_line.get(i, {}).items())) for i in range(n)]
    return wave, wave.copy(), costs
