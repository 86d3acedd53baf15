"""cp.async.cg's rule (model_cp_async_cg.py) compiled with numba: two passes over the lanes, no sorts.

Why: the numpy rule packs every lane's move into an int64 key and sorts those keys, about 0.2 million
instructions a second on this project's 2-core machine, where the other ops' compiled kernel (_model_numba.py)
scores tens of millions. Everything the rule compares lives inside one 128-byte shared row, so per
instruction this kernel files each lane under its shared row and then costs each row on its own, with at
most 8 chunks in it:

1. **First writers.** Of the lanes copying into one 16-byte chunk (``(s >> 4) & 7`` of its row), the lowest
   lane's copy counts; a later lane into the same chunk does not.
2. **Moves.** A move is (line, source sector, row, destination sector, half swap). Two chunks make one move
   only inside one 32-byte shared sector (chunks ``2d`` and ``2d + 1``; the two halves ``e`` = 0, 1): the
   same source sector (``g >> 5`` equal) with the same swap ``h ^ e``, so their source halves ``h`` differ
   and the move carries both (half set 3). Otherwise each chunk is its own move, half set ``1 << h``.
3. **Groups.** Moves of one (line, sector parity ``(sector ^ d) & 1``, swap, half set) in the row share
   wavefronts; a group costs the most moves one source sector makes in it; the instruction costs the sum
   over its rows.

Most rows of a random instruction hold one chunk: one move, one wavefront. So the lanes go by twice:

* a check pass (which LLVM vectorises): the active lanes counted, every address checked at once (shared:
  below -1, ``limit`` or more, off the 16-byte grid; global: negative or off the grid), the instruction's
  index returned on a bad one;
* a filing pass whose common step is one load and one store: the row table is 1,024 int64 slots indexed by
  the row's low bits (consecutive rows never collide; a slot another row of the same instruction holds is
  probed past), each entry ``stamp << 32 | row << 7 | field``. The stamp is the instruction's, so a slot
  another instruction filled reads as empty (the table is reset only once every 2**30 instructions); the
  field is the lane that first wrote the row (below 64), or ``64 + k`` once the row has a second chunk
  and is the k-th of the instruction's few several-chunk rows, whose chunk mask and first-writer lanes sit
  in two small arrays. A lane into a row already filed (its entry XOR the lane's key below 128) goes the
  rare way: the same chunk as the first writer's (read back from ``shared``) or as one in the mask does
  not count, a new chunk joins the mask.

The instruction's wavefronts are then its rows (active lanes less the lanes that found their row filed),
less its several-chunk rows, plus each of those rows' costs: a row of exactly two chunks by a table of 8,192
bytes (``_PAIR``: 1 if they make one move, or two moves of one group from different source sectors; else
2, indexed by both chunks, both lanes' ``(g >> 4) & 7`` and whether they read one line), rows of three or
more by steps 2 and 3 in full (``_row_cost``). Warps of up to 64 lanes (the field's lanes); wider ones and
``limit`` above 2**32 are left to numpy (return 0).

Against the previous compiled version (2026-12-06; the same table keyed on (instruction, row), but each
row's index, chunk mask and chunks' global addresses stored in arrays as every lane came and the checks
in the same loop: about 60 machine instructions a lane, a dozen of them reloads from the stack, against
about 20 and one here) the kernel on one core went from 5.2-5.8 to 13.4-15.1 million random instructions a
second, lane-ordered and permuted lines alike (400,000 a batch, best and median of 7, the two alternated in
one process), and ``analyze_batch`` on the 2-core machine from 4.6-9.9 to 16.3-20.8 in 11 of 12 readings
(one 11.0) over batches of 100,000 to 2,000,000 (benchmarks/results/cpu/cp_async_cg_speed_2026-12-06b.txt,
bench_cg_speed.py, old and new run alternately; model_cp_async_cg.py's threads count there too). The
answers are the previous kernel's on 163 million random instructions compared (lane-ordered, permuted
lines, random lines, few distinct rows, one row, words written twice, inactive lanes, whole rows under
XORs and rotations, rows 128 KiB apart, the top of both address spaces, bad addresses, warps of 1-64
lanes) and the numpy rule's (on 43 million of them; tests/test_model_cp_async_cg.py compares both on the
775 measured probes and on random batches).
Loaded by model_cp_async_cg.py only when numba is wanted (never at ``import autopad``); cached on disk like
_model_numba.py.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["cg_rows"]


_BITS = 10
_SLOTS = 1 << _BITS  # the row table: at most 64 rows an instruction, filed by their low bits
_OFF = -(1 << 63) | 15  # an address with any of these bits set is negative or off the 16-byte grid
_NEW = 1 << 32  # an entry XOR a lane's key: this or more, another instruction's (the row is new) ...
_SAME = 128  # ... below this, the lane's own row (the rest: another row of this instruction, probe on)
_STAMPS = (1 << 30) - 1  # instructions between resets of the table (stamps 1 .. 2**30: entries stay >= 0)


def _pair_table() -> np.ndarray:
    """Wavefronts of a row of exactly two chunks ``c0 < c1`` copied from global ``g0``, ``g1``, indexed
    ``(((c0 * 8 + c1) * 8 + a0) * 8 + a1) * 2 + same`` where ``a = (g >> 4) & 7`` (source sector ``a >> 1``
    of its line, half ``a & 1``) and ``same`` says whether both read one global line."""
    c0, c1, a0, a1, same = np.indices((8, 8, 8, 8, 2)).reshape(5, -1)
    same = same == 1
    sec0, sec1, h0, h1 = a0 >> 1, a1 >> 1, a0 & 1, a1 & 1
    # both halves of one source sector into both halves of one shared sector, swapped alike: one move
    one_move = (c1 == c0 + 1) & (c0 % 2 == 0) & same & (sec0 == sec1) & (h0 != h1)
    # else a move a chunk, kind (sector parity, swap h ^ e, half set 1 << h): one group, two sectors
    k0 = (((sec0 ^ (c0 >> 1)) & 1) << 1 | (h0 ^ (c0 & 1))) << 2 | (1 << h0)
    k1 = (((sec1 ^ (c1 >> 1)) & 1) << 1 | (h1 ^ (c1 & 1))) << 2 | (1 << h1)
    one_group = same & (k0 == k1) & (sec0 != sec1)
    return np.where(one_move | one_group, 1, 2).astype(np.int8)


_PAIR = _pair_table()
_LOW = np.array([0] + [(m & -m).bit_length() - 1 for m in range(1, 256)], dtype=np.int8)  # lowest set bit


@njit(inline="always")
def _row_cost(
    r_g: np.ndarray, mask: int, mv: np.ndarray, gr: np.ndarray, cnt: np.ndarray
) -> int:  # pragma: no cover - compiled
    """Steps 2 and 3 of a row whose chunks ``mask`` were copied from global ``r_g[chunk]``; ``mv`` (3, 8)
    and ``gr`` (2, 8) hold its moves (line, kind, source sector) and groups (line, kind), ``cnt`` (32)
    each group's moves per source sector."""
    moves = 0  # 2. moves, sector by sector of the row (chunks 2d and 2d + 1)
    for d in range(4):
        two = (mask >> (2 * d)) & 3
        if two == 0:
            continue
        g0 = r_g[2 * d]
        g1 = r_g[2 * d + 1]
        # both halves from one source sector, its halves swapped alike (h0 = 1 - h1): one move
        if two == 3 and (g0 >> 5) == (g1 >> 5) and ((g0 ^ g1) >> 4) & 1 == 1:
            mv[0, moves] = g0 >> 7
            mv[1, moves] = ((((g0 >> 5) ^ d) & 1) << 1 | ((g0 >> 4) & 1)) << 2 | 3
            mv[2, moves] = (g0 >> 5) & 3
            moves += 1
            continue
        for e in range(2):  # else a move a chunk: swap h ^ e, half set 1 << h
            if (two >> e) & 1:
                ge = g1 if e else g0
                he = (ge >> 4) & 1
                mv[0, moves] = ge >> 7
                mv[1, moves] = ((((ge >> 5) ^ d) & 1) << 1 | (he ^ e)) << 2 | (1 << he)
                mv[2, moves] = (ge >> 5) & 3
                moves += 1
    groups = 0  # 3. groups (line, kind); each costs its busiest source sector's moves
    for a in range(moves):
        j = 0
        while j < groups and (gr[0, j] != mv[0, a] or gr[1, j] != mv[1, a]):
            j += 1
        if j == groups:
            gr[0, j], gr[1, j] = mv[0, a], mv[1, a]
            cnt[4 * j] = cnt[4 * j + 1] = cnt[4 * j + 2] = cnt[4 * j + 3] = 0
            groups += 1
        cnt[4 * j + mv[2, a]] += 1
    total = 0
    for j in range(groups):
        total += max(max(cnt[4 * j], cnt[4 * j + 1]), max(cnt[4 * j + 2], cnt[4 * j + 3]))
    return total


@njit(inline="always")
def _rows(
    shared: np.ndarray, glob: np.ndarray, wave: np.ndarray, limit: int, lanes: bool
) -> int:  # pragma: no cover - compiled
    """``cg_rows``' body, inlined once with ``lanes`` True and once False so that each loop is compiled for
    its own source (lane-ordered: ``g = 16 lane``, ``glob`` not read)."""
    n, warp = shared.shape
    tab = np.zeros(_SLOTS, dtype=np.int64)  # the row table (0: never a stamped entry)
    m_mask = np.zeros(32, dtype=np.int64)  # the several-chunk rows: chunk mask, first-writer lane a chunk
    m_lane = np.zeros(32 * 8, dtype=np.int64)
    r_g = np.zeros(8, dtype=np.int64)  # _row_cost's row and scratch
    mv = np.zeros((3, 8), dtype=np.int64)
    gr = np.zeros((2, 8), dtype=np.int64)
    cnt = np.zeros(32, dtype=np.int64)
    for i in range(n):
        bad = 0  # the check pass: no branch, so LLVM vectorises it
        top = 0
        act = 0
        for lane in range(warp):
            s = shared[i, lane]
            g = lane * 16 if lanes else glob[i, lane]
            on = s != -1
            bad |= (s | g) & _OFF if on else 0
            top = max(top, s)
            act += on
        if bad != 0 or top >= limit:
            return i
        stamp = (i & _STAMPS) + 1
        if stamp == 1 and i > 0:  # stamps start over (every 2**30 instructions): so does the table
            tab[:] = 0
        base = stamp << 32
        filed = 0  # lanes that found their row already filed
        several = 0  # several-chunk rows
        for lane in range(warp):  # the filing pass
            s = shared[i, lane]
            if s == -1:
                continue
            r = s >> 7  # below 2**25: s < limit <= 2**32
            h = r & (_SLOTS - 1)
            key = base | (r << 7)
            x = tab[h] ^ key
            if x >= _NEW:  # a new row (the common step): file its first writer
                tab[h] = key | lane
                continue
            while x >= _SAME:  # another row of this instruction holds the slot: probe on
                h = (h + 1) & (_SLOTS - 1)
                x = tab[h] ^ key
                if x >= _NEW:
                    break
            if x >= _NEW:
                tab[h] = key | lane
                continue
            filed += 1
            c = (s >> 4) & 7
            if x < 64:  # the row's one chunk so far, first written by lane x
                c0 = (shared[i, x] >> 4) & 7
                if c0 == c:  # a lower lane copied into this chunk: only its copy counts
                    continue
                m_mask[several] = (1 << c0) | (1 << c)
                m_lane[8 * several + c0] = x
                m_lane[8 * several + c] = lane
                tab[h] = key | (64 + several)
                several += 1
            else:  # a several-chunk row already: a new chunk joins it, a written one does not count
                k = x - 64
                m = m_mask[k]
                if (m >> c) & 1 == 0:
                    m_mask[k] = m | (1 << c)
                    m_lane[8 * k + c] = lane
        total = act - filed - several  # a row of one chunk is one move, one wavefront
        for k in range(several):
            m = m_mask[k]
            m2 = m & (m - 1)
            if m2 & (m2 - 1) == 0:  # two chunks: steps 2 and 3 in closed form (_PAIR)
                c0 = _LOW[m]
                c1 = _LOW[m2]
                l0 = m_lane[8 * k + c0]
                l1 = m_lane[8 * k + c1]
                g0 = l0 * 16 if lanes else glob[i, l0]
                g1 = l1 * 16 if lanes else glob[i, l1]
                a = ((c0 * 8 + c1) * 8 + ((g0 >> 4) & 7)) * 8 + ((g1 >> 4) & 7)
                total += _PAIR[a * 2 + ((g0 >> 7) == (g1 >> 7))]
                continue
            for c in range(8):  # three chunks or more: steps 2 and 3 in full
                if (m >> c) & 1:
                    ln = m_lane[8 * k + c]
                    r_g[c] = ln * 16 if lanes else glob[i, ln]
            total += _row_cost(r_g, m, mv, gr, cnt)
        wave[i] = total
    return -1


@njit(nogil=True, cache=True)
def cg_rows(
    shared: np.ndarray, glob: np.ndarray, wave: np.ndarray, limit: int, lanes: bool
) -> int:  # pragma: no cover
    """Wavefronts of each row of ``shared`` / ``glob`` (int64 (n, warp), -1 inactive; with ``lanes`` the
    source is lane-ordered, lane ``l`` copying ``16 l``, and ``glob`` is not read) into ``wave``; -1, or
    the first row with a bad address (shared: below -1, ``limit`` or more, or off the 16-byte grid; global,
    where the lane copies: negative or off the grid), where it stops: the caller's numpy checks word the
    error; 0 at once where ``limit`` exceeds 2**32 (the caller's is 2**32) or the warp 64 lanes (the
    table's lane field), which leaves numpy the batch."""
    if limit > 1 << 32 or shared.shape[1] > 64:  # a row must stay below 2**25, a lane below 64
        return 0
    if lanes:
        return _rows(shared, shared, wave, limit, True)
    return _rows(shared, glob, wave, limit, False)
