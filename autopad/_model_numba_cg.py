"""cp.async.cg's rule (model_cp_async_cg.py) compiled with numba: one pass per instruction, no sorts.

Why: the numpy rule packs every lane's move into an int64 key and sorts those keys, about 0.2 million
instructions a second on this project's 2-core machine, where the other ops' compiled kernel (_model_numba.py)
scores tens of millions. Everything the rule compares lives inside one 128-byte shared row, so per
instruction this kernel files each lane under its shared row (one hash table, a few per warp) and then costs
each row on its own, with at most 8 chunks in it:

1. **First writers.** A row's entry keeps a bit per 16-byte chunk (``(s >> 4) & 7``) and the global address
   of the lane that set it: a lane whose chunk bit is already set had a lower lane copy into that chunk, and
   does not count.
2. **Moves.** A move is (line, source sector, row, destination sector, half swap). Two chunks make one move
   only inside one 32-byte shared sector (chunks ``2d`` and ``2d + 1``; the two halves ``e`` = 0, 1): the
   same source sector (``g >> 5`` equal) with the same swap ``h ^ e``, so their source halves ``h`` differ
   and the move carries both (half set 3). Otherwise each chunk is its own move, half set ``1 << h``.
3. **Groups.** Moves of one (line, sector parity ``(sector ^ d) & 1``, swap, half set) in the row share
   wavefronts; a group costs the most moves one source sector makes in it; the instruction costs the sum
   over its rows.

Most rows of a random instruction hold one chunk: one move, one wavefront, counted as the lanes are filed;
only rows that gain a second chunk are listed for steps 2-3, and a row of exactly two chunks is costed in
closed form (1 if they make one move, or two moves of one group from different source sectors; else 2).
The row table is 1,024 slots indexed by the row's low bits (consecutive rows never collide), each slot
stamped with the instruction that filled it, so no reset is needed between instructions. Against the
previous compiled version (a multiplicative hash, per-slot chunk arrays of 64 KB, every row costed in a
loop) this took random lane-ordered instructions from 6.1 to 7.5 million a second on the 2-core machine,
mixed ones from 7.8 to 10.9 (``analyze_batch`` of a million, best of five, the two alternated in one
process; medians 5.2 -> 7.3 and 5.7 -> 8.3; NOTES, thirty-fourth session). The answers equal the numpy
rule's on every input (tests/test_model_cp_async_cg.py compares both on the 775 measured probes and on
random batches; a helper compared it with the previous kernel on 133 million random instructions).
Loaded by model_cp_async_cg.py only when numba is wanted (never at ``import autopad``); cached on disk like
_model_numba.py.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["cg_rows"]


_BITS = 10
_SLOTS = 1 << _BITS  # open-addressing table of rows: at most 32 (a lane each), by their low bits


@njit(nogil=True, cache=True)
def cg_rows(
    shared: np.ndarray, glob: np.ndarray, wave: np.ndarray, limit: int, lanes: bool
) -> int:  # pragma: no cover
    """Wavefronts of each row of ``shared`` / ``glob`` (int64 (n, warp), -1 inactive; with ``lanes`` the
    source is lane-ordered, lane ``l`` copying ``16 l``, and ``glob`` is not read) into ``wave``; -1, or
    the first row with a bad address (shared: below -1, ``limit`` or more, or off the 16-byte grid; global,
    where the lane copies: negative or off the grid), where it stops: the caller's numpy checks word the
    error; 0 at once where ``limit`` exceeds 2**32 (the caller's is 2**32), which leaves numpy the batch."""
    n, warp = shared.shape
    if limit > 1 << 32:  # the row tag holds rows below 2**25 only: leave the batch to numpy
        return 0
    # the row table: slot -> (instruction << 26 | row) that filled it (a row is below 2**25: shared
    # addresses are below 2**32), so a slot another instruction filled reads as empty, with no reset ...
    s_tag = np.full(_SLOTS, -1, dtype=np.int64)
    s_row = np.zeros(_SLOTS, dtype=np.int64)  # ... and the row's index among this instruction's rows
    r_mask = np.zeros(warp, dtype=np.int64)  # rows: their chunks written (a bit each), global addresses
    r_g = np.zeros((warp, 8), dtype=np.int64)
    multi = np.zeros(warp, dtype=np.int64)  # the rows with two chunks or more
    mv_line = np.zeros(8, dtype=np.int64)  # a row's moves: line, kind (parity, swap, half set), sector
    mv_kind = np.zeros(8, dtype=np.int64)
    mv_sec = np.zeros(8, dtype=np.int64)
    gr_line = np.zeros(8, dtype=np.int64)  # a row's groups: line, kind, moves per source sector
    gr_kind = np.zeros(8, dtype=np.int64)
    cnt = np.zeros(32, dtype=np.int64)
    for i in range(n):
        rows = 0
        nm = 0
        for lane in range(warp):
            s = shared[i, lane]
            if s == -1:
                continue
            g = lane * 16 if lanes else glob[i, lane]
            if (s | g) < 0 or ((s | g) & 15) != 0 or s >= limit:
                return i
            r = s >> 7  # 1. file the lane under its 128-byte shared row (slot: the row's low bits)
            tag = (i << 26) | r
            h = r & (_SLOTS - 1)
            while True:
                t = s_tag[h]
                if t == tag:
                    h = s_row[h]
                    break
                if (t >> 26) != i:
                    s_tag[h] = tag
                    s_row[h] = rows
                    r_mask[rows] = 0
                    h = rows
                    rows += 1
                    break
                h = (h + 1) & (_SLOTS - 1)
            c = (s >> 4) & 7
            m = r_mask[h]
            if (m >> c) & 1:  # a lower lane copied into this chunk: only its copy counts
                continue
            if m != 0 and m & (m - 1) == 0:  # the row's second chunk: it leaves the one-move rows
                multi[nm] = h
                nm += 1
            r_mask[h] = m | (1 << c)
            r_g[h, c] = g
        total = rows - nm  # a row of one chunk is one move, one wavefront
        for k in range(nm):
            h = multi[k]
            mask = r_mask[h]
            m2 = mask & (mask - 1)
            if m2 & (m2 - 1) == 0:  # two chunks: 1 wavefront if they make one move (below) or two
                # moves of one group from different source sectors, else 2 (steps 2 and 3 in closed form)
                c0 = 0
                while not (mask >> c0) & 1:
                    c0 += 1
                c1 = c0 + 1
                while not (mask >> c1) & 1:
                    c1 += 1
                g0 = r_g[h, c0]
                g1 = r_g[h, c1]
                if c1 == c0 + 1 and (c0 & 1) == 0 and (g0 >> 5) == (g1 >> 5) and ((g0 ^ g1) >> 4) & 1 == 1:
                    total += 1
                    continue
                # else a move a chunk (swap h ^ e, half set 1 << h), as below
                d0 = c0 >> 1
                d1 = c1 >> 1
                h0 = (g0 >> 4) & 1
                h1 = (g1 >> 4) & 1
                k0 = ((((g0 >> 5) ^ d0) & 1) << 1 | (h0 ^ (c0 & 1))) << 2 | (1 << h0)
                k1 = ((((g1 >> 5) ^ d1) & 1) << 1 | (h1 ^ (c1 & 1))) << 2 | (1 << h1)
                if (g0 >> 7) == (g1 >> 7) and k0 == k1 and ((g0 >> 5) & 3) != ((g1 >> 5) & 3):
                    total += 1
                else:
                    total += 2
                continue
            moves = 0  # 2. moves, sector by sector of the row (chunks 2d and 2d + 1)
            for d in range(4):
                two = (mask >> (2 * d)) & 3
                if two == 0:
                    continue
                g0 = r_g[h, 2 * d]
                g1 = r_g[h, 2 * d + 1]
                # both halves from one source sector, its halves swapped alike (h0 = 1 - h1): one move
                if two == 3 and (g0 >> 5) == (g1 >> 5) and ((g0 ^ g1) >> 4) & 1 == 1:
                    mv_line[moves] = g0 >> 7
                    mv_sec[moves] = (g0 >> 5) & 3
                    mv_kind[moves] = ((((g0 >> 5) ^ d) & 1) << 1 | ((g0 >> 4) & 1)) << 2 | 3
                    moves += 1
                    continue
                for e in range(2):  # else a move a chunk: swap h ^ e, half set 1 << h
                    if (two >> e) & 1:
                        ge = g1 if e else g0
                        he = (ge >> 4) & 1
                        mv_line[moves] = ge >> 7
                        mv_sec[moves] = (ge >> 5) & 3
                        mv_kind[moves] = ((((ge >> 5) ^ d) & 1) << 1 | (he ^ e)) << 2 | (1 << he)
                        moves += 1
            groups = 0  # 3. groups (line, kind); each costs its busiest source sector's moves
            for a in range(moves):
                la, ka = mv_line[a], mv_kind[a]
                j = 0
                while j < groups and (gr_line[j] != la or gr_kind[j] != ka):
                    j += 1
                if j == groups:
                    gr_line[j], gr_kind[j] = la, ka
                    cnt[4 * j] = cnt[4 * j + 1] = cnt[4 * j + 2] = cnt[4 * j + 3] = 0
                    groups += 1
                cnt[4 * j + mv_sec[a]] += 1
            for j in range(groups):
                total += max(max(cnt[4 * j], cnt[4 * j + 1]), max(cnt[4 * j + 2], cnt[4 * j + 3]))
        wave[i] = total
    return -1
