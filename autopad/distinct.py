"""Distinct rows of integer matrices, matched by a 64-bit hash and confirmed exactly.

Split from model.py (one concern a module). ``model.analyze_distinct`` scores each distinct instruction of a
batch once (``moved_distinct`` groups its rows after a uniform shift by whole turns of the banks, which
cannot change a cost); the scorer and the predictor match candidates' rows with ``row_hashes`` and
``distinct_rows``. A tuner's batch of hundreds of thousands of instructions holds a few tens of thousands.
Every group is checked row by row against its first row, so a hash collision costs time, never a wrong
answer.
"""

from __future__ import annotations

import numpy as np

__all__ = ["checked_moved_distinct", "distinct_rows", "moved_distinct", "row_hashes"]


def _splitmix64(seed: int, n: int) -> np.ndarray:
    """``n`` pseudo-random odd int64 multipliers (SplitMix64 from ``seed``): the row hashes' weights,
    made without importing numpy.random (its import is a tenth of ``import autopad``'s own time)."""
    mask, out, x = (1 << 64) - 1, [], seed
    for _ in range(n):
        x = (x + 0x9E3779B97F4A7C15) & mask
        z = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        out.append(((z ^ (z >> 31)) >> 2) | 1)  # below 2**62, odd
    return np.array(out, dtype=np.int64)


_HASH = _splitmix64(0x0DDBA11, 128).reshape(2, 64)
_DISTINCT_CHUNK = 1 << 12  # rows normalised and hashed at a time (temporaries stay in cache)


def moved_distinct(work: np.ndarray, period: int, dense: bool) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct rows, each row's index among them) of an integer matrix (n >= 2 rows of at most 64
    lanes, -1 = inactive) once each row's active lanes move down together by whole ``period``s until its
    lowest address lies in the first (inactive lanes stay). ``dense``: no lane of ``work`` is inactive.

    Rows are grouped by a 64-bit hash of their moved lanes and each is then compared with its group's
    first row (a collision falls back on sorting the rows themselves).
    """
    n, w = work.shape
    # each row's shift and hash; the moved rows themselves are made again where they are compared, a block
    # at a time, rather than kept (a first ranking pays for every fresh page: 19 MB for the fp16 transpose)
    shift, h = np.empty(n, dtype=work.dtype), np.empty(n, dtype=np.int64)
    m, m_sum = _weights(w)
    for s in range(0, n, _DISTINCT_CHUNK):
        e = s + _DISTINCT_CHUNK
        part = work[s:e]
        _hash_moved(part, part.min(axis=1) if dense else None, period, m, m_sum, shift[s:e], h[s:e])
    return _grouped(work, dense, shift, h)


def checked_moved_distinct(work: np.ndarray, period: int, limit: int) -> tuple[np.ndarray, np.ndarray] | None:
    """``moved_distinct`` of a batch not yet checked, or None where an entry is below -1 or at ``limit`` or
    above: each block of rows is checked in the pass that hashes it, while it is in cache (the scorer's
    batches: two passes over 19 MB fewer for the fp16 transpose). Whether every lane is active is found
    the same way, block by block."""
    n, w = work.shape
    shift, h = np.empty(n, dtype=work.dtype), np.empty(n, dtype=np.int64)
    m, m_sum = _weights(w)
    low = 0
    for s in range(0, n, _DISTINCT_CHUNK):
        e = s + _DISTINCT_CHUNK
        part = work[s:e]
        lo = part.min(axis=1)
        least = int(lo.min())
        if least < -1 or int(part.max()) >= limit:
            return None
        low = min(low, least)
        # a block with every lane active hashes from its row minima; else each row's lowest active lane
        _hash_moved(part, lo if least >= 0 else None, period, m, m_sum, shift[s:e], h[s:e])
    return _grouped(work, low >= 0, shift, h)


def _weights(w: int) -> tuple[np.ndarray, np.int64]:
    """The hash's weights for rows of ``w`` lanes, and their sum (wrapped around 2**64 as the hash is)."""
    m = _HASH[0, :w]
    return m, np.int64(int(m.sum(dtype=np.uint64).astype(np.int64)))


def _hash_moved(
    part: np.ndarray, lo: np.ndarray | None, period: int, m: np.ndarray, m_sum: np.int64,
    shift: np.ndarray, h: np.ndarray,
) -> None:  # fmt: skip
    """Each row's shift (its lowest active address rounded down to whole periods) and the hash of the row
    moved by it, into ``shift`` and ``h``; ``lo``: the rows' minima, given when every lane is active."""
    with np.errstate(over="ignore"):  # the hash wraps around 2**64
        if lo is not None:
            # every lane active: a row moved by ``shift`` hashes to its own hash - shift * sum(m) (the hash
            # is linear, and wraps around 2**64 alike), so the moved rows are not made for hashing
            shift[:] = lo - lo % period
            h[:] = part @ m - shift.astype(np.int64) * m_sum
        else:
            shift[:] = _shift(part, period)
            h[:] = np.where(part >= 0, part - shift[:, None], part) @ m


def _grouped(
    work: np.ndarray, dense: bool, shift: np.ndarray, h: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The rows grouped by their moved hashes, each checked against its group's first (moved_distinct)."""
    n = len(work)

    def moved(s: int, e: int, by: np.ndarray) -> np.ndarray:
        part = work[s:e]
        return part - by[:, None] if dense else np.where(part >= 0, part - by[:, None], part)

    first, inverse = _groups(h)
    at = work.take(first, axis=0)  # (``take``: several times faster than a[index] on a 2-D array)
    reps = at - shift[first][:, None] if dense else _moved_rows(at, shift[first])
    for s in range(0, n, _DISTINCT_CHUNK):  # every row equals its representative, or hashes collided
        e = s + _DISTINCT_CHUNK
        if not (reps.take(inverse[s:e], axis=0) == moved(s, e, shift[s:e])).all():
            norm = moved(0, n, shift)
            _, first, inverse = np.unique(norm, axis=0, return_index=True, return_inverse=True)
            inverse = inverse.ravel()
            reps = norm[first]
            break
    return reps, inverse


def _moved_rows(rows: np.ndarray, by: np.ndarray) -> np.ndarray:
    """``rows`` with each row's active lanes moved down by ``by`` (inactive lanes, negative, stay)."""
    return np.where(rows >= 0, rows - by[:, None], rows)


def _groups(h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(one index holding each distinct value, each entry's distinct index) of ``h``: one sort, and no
    second one for the first occurrences (``np.unique``'s return_index). Hashes are grouped by their
    high bits, each packed with its entry's index into one int64 and sorted as values (several times
    faster than an argsort): entries whose hashes differ only in the low bits fall in one group, which
    the caller's exact check of every row against its group's first treats as any other collision."""
    bits = max(1, (len(h) - 1).bit_length())
    if bits <= 31:
        key = ((h.view(np.uint64) >> np.uint64(bits + 1)).view(np.int64) << bits) | np.arange(len(h))
        s = np.sort(key)
        order = s & ((1 << bits) - 1)
        s >>= bits
    else:
        order = np.argsort(h)
        s = h[order]
    new = np.empty(len(h), dtype=bool)
    new[:1] = True
    np.not_equal(s[1:], s[:-1], out=new[1:])
    inverse = np.empty(len(h), dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    return order[new], inverse


def _normalised(rows: np.ndarray, period: int) -> np.ndarray:
    """``rows`` (int64) with each row's active lanes moved down by whole periods, its lowest address now
    below ``period``; inactive lanes (negative) unchanged."""
    rows = rows.astype(np.int64, copy=False)
    return np.where(rows >= 0, rows - _shift(rows, period)[:, None], rows)


def _shift(rows: np.ndarray, period: int) -> np.ndarray:
    """Each row's shift: its lowest active address rounded down to a whole period (0 for a row with no
    active lane), in the rows' type. An inactive lane (negative) read as unsigned is larger than any
    address, so the unsigned minimum is the lowest active address."""
    unsigned = np.dtype(f"u{rows.dtype.itemsize}")
    lo = rows.view(unsigned).min(axis=1)  # the largest unsigned value: no active lane
    return np.where(lo == np.iinfo(unsigned).max, 0, lo - lo % period).astype(rows.dtype)


def row_hashes(m: np.ndarray, start: int = 0) -> np.ndarray:
    """The 64-bit hash by which ``distinct_rows`` matches the rows of an integer matrix, for columns
    ``start``.. of a wider one (the wider matrix's hash is the sum of its column blocks' hashes; at most
    128 columns in all)."""
    with np.errstate(over="ignore"):
        return m.astype(np.int64, copy=False) @ _HASH.ravel()[start : start + m.shape[1]]


def distinct_rows(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index of each distinct row's first occurrence, each row's distinct index) of an integer matrix: rows
    matched by a 64-bit hash of their entries, then confirmed exactly (a collision falls back on sorting
    the rows themselves). The distinct rows come in the hashes' order."""
    m = np.asarray(m)
    if len(m) < 2 or m.shape[1] > _HASH.shape[1]:
        _, first, inverse = np.unique(m, axis=0, return_index=True, return_inverse=True)
        return first, inverse.ravel()
    _, first, inverse = np.unique(row_hashes(m), return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    reps = m[first]
    step = _DISTINCT_CHUNK
    if not all((reps[inverse[s : s + step]] == m[s : s + step]).all() for s in range(0, len(m), step)):
        # two distinct rows share a hash
        _, first, inverse = np.unique(m, axis=0, return_index=True, return_inverse=True)
        inverse = inverse.ravel()
    return first, inverse
