"""cp.async.cg's shared-memory writes: 32-byte sector moves, gathered into wavefronts.

``cp.async.cg.shared.global`` (16 bytes a lane; the L1-bypassing copy that Triton's pipelined ``tl.dot``
issues) does not write shared memory as a store does. Read off Nsight Compute's own counter for it
(``..._op_ldgsts_cache_bypass``) on 252 targeted probes (H100 run 179, 2026-12-05,
benchmarks/probe_cp_async_cg.py: pairs of copies, whole-line permutations, two writers of a word) and
checked on 144 earlier ones it was not read off (H200 run 157: every one agrees) and on 379 drawn after it
was committed, with its predictions (H100 runs 181-182: ``autopad validate`` seed 2's 127 random ``.cg``
probes and the script's seed 1, 252; every one agrees):

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
0 on all 775 probes), so ``ideal`` here is the wavefronts themselves. Without ``global_addresses`` the
source is lane-ordered: lane ``l`` copies ``16 l`` from a line-aligned base (8 lanes a line).

Where the built-in kernels issue it: Triton's ``tl.dot`` path of the GEMM (kernels/triton/matmul.py, PATH
1) copies each k-step's A and B tiles into their NVMMA layouts, 16 bytes a lane; its pattern lists them as
``cp.async.cg`` with their global side (``Instruction.global_offsets``, matmul_model.py
``_path1_copies``): a line-aligned row of 128 bytes or more costs 1 wavefront a staging line, but with
64-byte rows (BK 32 at 16 bits, under the 64-byte swizzle) the 8 lanes of a line read two global lines,
2 wavefronts. H100 run 190 (ncu, bf16 2048³, BK 32 and 64): the kernel's ldgsts wavefronts agree exactly
(benchmarks/results/h100/2026-12-06/README.md). Rows Triton cannot prove aligned are not copied by
cp.async at all (benchmarks/results/cpu/path1_compiled_2026-12-06.txt), which the pattern, blind to the
shape, does not show.

Speed: this numpy rule packs each lane's move into an int64 key and sorts, about 0.2 million random
instructions a second on this project's 2-core machine. Batches of ``NUMPY_BELOW`` instructions or more (and
all of them under ``AUTOPAD_MODEL_BACKEND=numba``) go to the same rule compiled with numba
(_model_numba_cg.py: each lane filed under its shared row by one load and one store, only rows of two
chunks or more costed on their own, no sort), in parts on every core (plain threads, ``_on_every_core``):
16-21 million random instructions a second on the 2-core machine on batches of 100,000 to 2,000,000 in the
runs of 2026-12-06 (one reading 11.0), against 4.6-9.9 for that day's previous kernel and wrapper run
alternately with it (benchmarks/results/cpu/cp_async_cg_speed_2026-12-06b.txt, bench_cg_speed.py; the
machine's speed varies from run to run); the answers are identical (tests/test_model_cp_async_cg.py).
``per_line`` (``analyze``'s per-line costs) always takes numpy.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .model_backend import RULE_NUMPY_BELOW, _on_every_core, compiled_wanted

WIDTH = 16  # .cg copies 16 bytes only (PTX ISA: cp-size 16 for .cg)


def lane_ordered(n: int, warp: int) -> np.ndarray:
    """The default global side: lane ``l`` copies bytes ``16 l`` .. ``16 l + 15`` of a line-aligned source."""
    return np.broadcast_to(np.arange(warp, dtype=np.int64) * WIDTH, (n, warp))


def first_writers(shared: np.ndarray) -> np.ndarray:
    """Mask of the active lanes that are the lowest lane copying into their shared chunk."""
    n, warp = shared.shape
    order = np.argsort(shared, axis=1, kind="stable")  # equal addresses keep lane order
    ss = np.take_along_axis(shared, order, axis=1)
    first = np.ones((n, warp), dtype=bool)
    first[:, 1:] = ss[:, 1:] != ss[:, :-1]
    keep = np.zeros((n, warp), dtype=bool)
    np.put_along_axis(keep, order, first & (ss >= 0), axis=1)
    return keep


NUMPY_BELOW = RULE_NUMPY_BELOW  # batches this large or larger take the compiled rule (model_backend)

_ROWS = 8192  # instructions costed at a time: 13 bits of instruction in the packed keys below
_ID = 18  # bits of a dense line or row id: a chunk holds at most 8192 x 32 = 2**18 distinct ones


def _chunk(shared: np.ndarray, glob: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(instruction, dense line id, cost) of each wavefront group of a chunk of at most ``_ROWS`` rows.

    Every key is one int64 (1-D sorts are what numpy does fast): the instruction (13 bits), the line and
    the row as dense ids over the chunk (18 bits each), then the small fields."""
    keep = first_writers(shared)
    inst = np.nonzero(keep)[0].astype(np.int64)
    s, g = shared[keep], glob[keep]
    if inst.size == 0:
        e = np.zeros(0, dtype=np.int64)
        return e, e, e
    _, line = np.unique(g >> 7, return_inverse=True)
    _, row = np.unique(s >> 7, return_inverse=True)
    line, row = line.ravel().astype(np.int64), row.ravel().astype(np.int64)
    sec, half = (g >> 5) & 3, (g >> 4) & 1
    dsec, swap = (s >> 5) & 3, ((g >> 4) ^ (s >> 4)) & 1
    # a move: (instruction, line, source sector, row, destination sector, half swap) ...
    key = ((((inst << _ID | line) << 2 | sec) << _ID | row) << 2 | dsec) << 1 | swap
    moves, inv = np.unique(key, return_inverse=True)
    halves = np.zeros(len(moves), dtype=np.int64)  # ... and the halves of its sector it carries
    np.bitwise_or.at(halves, inv.ravel(), 1 << half)
    mask = (1 << _ID) - 1
    m_swap, m_dsec = moves & 1, (moves >> 1) & 3
    m_row, m_sec = (moves >> 3) & mask, (moves >> (3 + _ID)) & 3
    m_line, m_inst = (moves >> (5 + _ID)) & mask, moves >> (5 + 2 * _ID)
    # a group: (instruction, line, row, sector parity, half swap, half set); a pair: a group and a source
    # sector, counted in moves
    group = (
        (((m_inst << _ID | m_line) << _ID | m_row) << 1 | ((m_sec ^ m_dsec) & 1)) << 1 | m_swap
    ) << 2 | halves
    pairs, counts = np.unique(group << 2 | m_sec, return_counts=True)
    groups, start = np.unique(pairs >> 2, return_index=True)
    cost = np.maximum.reduceat(counts, start)  # the most moves one source sector makes in the group
    return groups >> (2 * _ID + 4), (groups >> (_ID + 4)) & mask, cost


def cg_costs(
    shared: np.ndarray, glob: np.ndarray | None = None, per_line: bool = False
) -> tuple[np.ndarray, np.ndarray, list]:
    """(wavefronts, ideal, per-row tuples of each global line's wavefronts, lowest line first, or [] unless
    ``per_line``) of a checked batch: ``shared`` int64 (n, warp), -1 inactive, 16-byte aligned; ``glob``
    the lanes' global byte addresses (same shape; None = lane-ordered)."""
    n, warp = shared.shape
    if glob is None:
        glob = lane_ordered(n, warp)
    wave = np.zeros(n, dtype=np.int64)
    costs: list = []
    for lo in range(0, n, _ROWS):
        inst, line, cost = _chunk(shared[lo : lo + _ROWS], glob[lo : lo + _ROWS])
        np.add.at(wave, lo + inst, cost)
        if per_line:  # dense line ids follow the lines' order, so sorting by them is lowest line first
            rows: list[dict[int, int]] = [{} for _ in range(min(_ROWS, n - lo))]
            for i, ln, c in zip(inst.tolist(), line.tolist(), cost.tolist()):
                rows[i][ln] = rows[i].get(ln, 0) + c
            costs += [tuple(c for _, c in sorted(r.items())) for r in rows]
    return wave, wave.copy(), costs


def cg_compiled(shared: np.ndarray, glob: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, list] | None:
    """``cg_costs`` without per-line costs on the compiled rule, which checks the addresses as it goes
    (``shared`` int64 (n, warp), -1 inactive; ``glob`` the same shape or None = lane-ordered), or None
    where numpy should do it: a batch under ``NUMPY_BELOW`` (``auto``), no numba, a warp wider than 32
    lanes, or a bad address (the numpy checks then say which and why)."""
    from .model_rules import ADDRESS_LIMIT

    n, warp = shared.shape
    kernel = _compiled(n) if warp <= 32 else None  # (the rule was read off 32-lane warps: wider ones, numpy)
    if kernel is None:
        return None
    got = _run_compiled(kernel, shared, glob, ADDRESS_LIMIT)
    return None if got is None else (*got, [])


def _compiled(n: int):
    """_model_numba_cg's ``cg_rows`` where a batch of ``n`` should take it: ``AUTOPAD_MODEL_BACKEND=numba``
    (numba must load), or ``auto`` with ``n >= NUMPY_BELOW`` and numba loading; else None (numpy): the
    choice is model_backend's (``compiled_wanted``), as for .ca's compiled rule."""
    if not compiled_wanted(n, NUMPY_BELOW):
        return None
    from ._model_numba_cg import cg_rows

    return cg_rows


def _run_compiled(
    kernel: Callable[..., int], shared: np.ndarray, glob: np.ndarray | None, limit: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """(wavefronts, ideal) of the compiled rule over a batch (``glob`` None: lane-ordered, computed in the
    kernel, never materialised), in parts on every core (the kernel releases the GIL); None where a part met
    a bad address. Each part also copies its wavefronts into ``ideal`` (.cg's ideal is its wavefronts), so
    the two arrays' fresh pages are first touched on every core, not by one copy afterwards."""
    from .model_backend import _parts

    shared = np.ascontiguousarray(shared, dtype=np.int64)
    lanes = glob is None
    glob = shared[:0] if lanes else np.ascontiguousarray(glob, dtype=np.int64)  # (not read when lanes)
    n = shared.shape[0]
    wave, ideal = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    parts = _parts(n)
    bad = [False] * parts

    def run(p: int) -> None:
        lo, hi = n * p // parts, n * (p + 1) // parts
        bad[p] = kernel(shared[lo:hi], glob if lanes else glob[lo:hi], wave[lo:hi], limit, lanes) >= 0
        ideal[lo:hi] = wave[lo:hi]  # (numpy's copy releases the GIL too)

    _on_every_core(parts, run)
    return None if any(bad) else (wave, ideal)
