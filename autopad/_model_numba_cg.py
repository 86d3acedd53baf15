"""cp.async.cg's rule (model_cp_async_cg.py) compiled with numba: one pass per instruction, no sorts.

Why: the numpy rule packs every lane's move into an int64 key and sorts those keys, about 0.2 million
instructions a second on this project's 2-core machine, where the other ops' compiled kernel (_model_numba.py)
scores tens of millions. A warp has at most 32 copies, so per instruction the rule is small loops over them:

1. **First writers.** A lane counts unless a lower active lane copies into the same 16-byte shared chunk.
2. **Moves.** Each counting lane is a move ``(line, source sector, row, destination sector, half swap)``
   (``line = g >> 7``, ``sector = (g >> 5) & 3``, ``row = s >> 7``, ``swap = ((g ^ s) >> 4) & 1``); lanes of
   the same move OR their source half (``(g >> 4) & 1``) into its half set.
3. **Groups.** Moves of one (line, row, sector parity ``(sector ^ destination) & 1``, swap, half set) share
   wavefronts; a group costs the most moves one source sector makes in it; the instruction costs the sum.

The answers equal the numpy rule's on every input (tests/test_model_cp_async_cg.py compares both on the 775
measured probes and on random batches). Loaded by model_cp_async_cg.py only when numba is wanted (never at
``import autopad``); cached on disk like _model_numba.py.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["cg_rows"]


_SLOTS = 64  # open-addressing table size: at most 32 entries (one per lane) keep it under half full
_MIX = -7046029254386353131  # 0x9E3779B97F4A7C15 as int64: a multiplicative hash's odd constant


@njit(inline="always")
def _slot(a: int, b: int) -> int:  # pragma: no cover - compiled
    # the top 6 bits of a multiplicative hash of the pair (int64 products wrap)
    return ((a ^ (b << 20)) * _MIX >> 58) & (_SLOTS - 1)


@njit(nogil=True, cache=True)
def cg_rows(
    shared: np.ndarray, glob: np.ndarray, wave: np.ndarray, limit: int, lanes: bool
) -> int:  # pragma: no cover
    """Wavefronts of each row of ``shared`` / ``glob`` (int64 (n, warp), -1 inactive; with ``lanes`` the
    source is lane-ordered, lane ``l`` copying ``16 l``, and ``glob`` is not read) into ``wave``; -1, or
    the first row with a bad address (shared: below -1, ``limit`` or more, or off the 16-byte grid; global,
    where the lane copies: negative or off the grid), where it stops: the caller's numpy checks word the
    error. Three small hash tables, reset by stamping each slot with the row it was filled for: the
    shared chunks already written, the moves (line, rest of the move's key) and the groups (line, rest)."""
    n, warp = shared.shape
    c_stamp = np.full(_SLOTS, -1, dtype=np.int64)  # chunks: slot -> row that filled it, and the chunk
    c_key = np.zeros(_SLOTS, dtype=np.int64)
    m_stamp = np.full(_SLOTS, -1, dtype=np.int64)  # moves: slot -> row, (line, rest), index in the list
    m_line = np.zeros(_SLOTS, dtype=np.int64)
    m_rest = np.zeros(_SLOTS, dtype=np.int64)
    m_at = np.zeros(_SLOTS, dtype=np.int64)
    g_stamp = np.full(_SLOTS, -1, dtype=np.int64)  # groups: slot -> row, (line, rest), moves per sector
    g_line = np.zeros(_SLOTS, dtype=np.int64)
    g_rest = np.zeros(_SLOTS, dtype=np.int64)
    g_count = np.zeros((_SLOTS, 4), dtype=np.int64)
    mv_line = np.zeros(warp, dtype=np.int64)  # the row's moves in order: line, rest, half set
    mv_rest = np.zeros(warp, dtype=np.int64)
    mv_half = np.zeros(warp, dtype=np.int64)
    g_used = np.zeros(warp, dtype=np.int64)  # the group slots the row filled
    for i in range(n):
        moves = 0
        for lane in range(warp):
            s = shared[i, lane]
            if s == -1:
                continue
            g = lane * 16 if lanes else glob[i, lane]
            if s < 0 or s >= limit or (s & 15) != 0 or g < 0 or (g & 15) != 0:
                return i
            h = (s * _MIX >> 58) & (_SLOTS - 1)  # 1. first writers: a chunk in the table had a lower lane
            while c_stamp[h] == i and c_key[h] != s:
                h = (h + 1) & (_SLOTS - 1)
            if c_stamp[h] == i:
                continue
            c_stamp[h], c_key[h] = i, s
            line = g >> 7  # 2. the move: (line, source sector, row, destination sector, half swap)
            rest = (((s >> 7) << 2 | ((g >> 5) & 3)) << 2 | ((s >> 5) & 3)) << 1 | (((g ^ s) >> 4) & 1)
            h = _slot(line, rest)
            while m_stamp[h] == i and (m_line[h] != line or m_rest[h] != rest):
                h = (h + 1) & (_SLOTS - 1)
            if m_stamp[h] != i:
                m_stamp[h], m_line[h], m_rest[h], m_at[h] = i, line, rest, moves
                mv_line[moves], mv_rest[moves], mv_half[moves] = line, rest, 0
                moves += 1
            mv_half[m_at[h]] |= 1 << ((g >> 4) & 1)  # the halves of its sector the move carries
        groups = 0
        for k in range(moves):  # 3. groups: (line, row, sector parity, swap, half set); moves per sector
            rest = mv_rest[k]
            swap, dsec, sec, row = rest & 1, (rest >> 1) & 3, (rest >> 3) & 3, rest >> 5
            grest = ((row << 1 | ((sec ^ dsec) & 1)) << 1 | swap) << 2 | mv_half[k]
            h = _slot(mv_line[k], grest)
            while g_stamp[h] == i and (g_line[h] != mv_line[k] or g_rest[h] != grest):
                h = (h + 1) & (_SLOTS - 1)
            if g_stamp[h] != i:
                g_stamp[h], g_line[h], g_rest[h] = i, mv_line[k], grest
                g_count[h, 0] = g_count[h, 1] = g_count[h, 2] = g_count[h, 3] = 0
                g_used[groups] = h
                groups += 1
            g_count[h, sec] += 1
        total = 0
        for k in range(groups):  # a group costs the most moves one source sector makes in it
            h = g_used[k]
            total += max(max(g_count[h, 0], g_count[h, 1]), max(g_count[h, 2], g_count[h, 3]))
        wave[i] = total
    return -1
