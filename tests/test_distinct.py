"""Tests for distinct-row matching (autopad/distinct.py) through ``model.analyze_distinct``: each distinct
instruction scored once gives ``analyze_batch``'s answers, hash collisions included.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_model_backend import ALL_FORMS, _random_batch

from autopad import analyze_batch

# ---------------------------------------------------------------------------------------------------------
# (i) analyze_distinct: each distinct instruction once, the same answers as analyze_batch
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op,width", ALL_FORMS)
def test_analyze_distinct_equals_analyze_batch(op, width):
    """Rows repeated as they are and moved by whole turns of the banks (and, to tell the shift apart from
    a mere copy, by a word or a half turn) score as analyze_batch scores them."""
    from autopad.model import analyze_distinct, shift_period

    rng = np.random.default_rng(hash(("distinct", op, width)) % 2**32)
    base = _random_batch(rng, 300, op, width)
    base = base[(base < 1 << 28).all(axis=1)]
    turn = shift_period(width, op)
    assert turn == 128
    moved = []
    for k in (turn, 3 * turn, width, turn // 2):
        moved.append(np.where(base >= 0, base + k, -1))
    addr = np.concatenate([base, base[::-1], *moved])
    want = analyze_batch(addr, width, op)
    for arr in (addr, addr.astype(np.int32)):
        got = analyze_distinct(arr, width, op)
        assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()


def test_analyze_distinct_names_the_callers_bad_row():
    from autopad.model import analyze_distinct

    addr = np.tile(np.arange(32, dtype=np.int64) * 4, (50, 1))
    addr[37, 3] = 6
    with pytest.raises(ValueError, match=r"^addresses: row 37 lane 3 address 6 is not aligned"):
        analyze_distinct(addr)
    addr[37, 3] = (1 << 32) + 4
    with pytest.raises(ValueError, match=r"row 37 lane 3 .* out of range"):
        analyze_distinct(addr)


def test_analyze_distinct_survives_hash_collisions(monkeypatch):
    """Every row is compared with its group's first: with a hash that maps every row alike, the exact
    comparison takes over and the answers stay analyze_batch's."""
    from autopad import distinct, model

    monkeypatch.setattr(distinct, "_HASH", np.zeros_like(distinct._HASH))  # where moved_distinct reads it
    addr = _random_batch(np.random.default_rng(3), 500, "load", 4)
    addr = np.concatenate([addr, np.where(addr >= 0, addr + 256, -1)])
    got = model.analyze_distinct(addr, 4, "load")
    want = analyze_batch(addr, 4, "load")
    assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()


def test_analyze_distinct_takes_int32_rows_with_inactive_lanes():
    """int32 addresses (as the patterns hand them over) with inactive lanes: the normalising shift compares
    with ADDRESS_LIMIT (2^32), which int32 cannot hold (numpy versions that raise on it failed every ops
    GPU test of H200 run 9)."""
    import numpy as np

    from autopad.model import analyze_batch, analyze_distinct

    rng = np.random.default_rng(5)
    rows = (rng.integers(0, 4096, size=(300, 32)) * 4).astype(np.int32)
    rows[1::5, :] = rows[0] + 128 * 4  # whole turns apart: one distinct row for several
    rows[::3, 7] = -1
    for op in ("load", "store"):
        got = analyze_distinct(rows, 4, op)
        want = analyze_batch(rows, 4, op)
        assert all(np.array_equal(g, w) for g, w in zip(got, want))


def test_analyze_distinct_with_idle_rows_high_addresses_and_narrow_ints():
    """Rows with no active lane, addresses past 2**31 (the int64 path) and int16 rows score as
    analyze_batch scores them; a lane below -1 is still named as the caller's bad row."""
    from autopad.model import analyze_distinct

    rng = np.random.default_rng(11)
    base = _random_batch(rng, 200, "load", 4)
    base = base[(base < 1 << 14).all(axis=1)]
    idle = np.full((3, 32), -1, dtype=np.int64)
    high = np.where(base >= 0, base + (3 << 30), -1)
    mixed = np.concatenate([high, idle, base])
    for arr in (np.concatenate([base, idle, base]), mixed, base.astype(np.int16)):
        want = analyze_batch(arr.astype(np.int64), 4, "load")
        got = analyze_distinct(arr, 4, "load")
        assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()
    bad = np.concatenate([base, idle])
    bad[5, 2] = -7
    with pytest.raises(ValueError, match=r"row 5 lane 2 has negative address -7"):
        analyze_distinct(bad)


def test_checked_moved_distinct_equals_moved_distinct_or_refuses_a_bad_batch():
    """Checked block by block while it hashes, a batch groups as ``moved_distinct`` groups it: every lane
    active, lanes inactive in some blocks only, and whole turns apart; an entry below -1 or at the limit
    gives None."""
    from autopad.distinct import _DISTINCT_CHUNK, checked_moved_distinct, moved_distinct

    rng = np.random.default_rng(2)
    n = 2 * _DISTINCT_CHUNK + 50  # (three blocks)
    base = (rng.integers(0, 64, size=(n, 32)) * 4).astype(np.int32)
    k = len(base[1::3])
    base[1::3] = base[::3][:k] + 128 * rng.integers(1, 9, (k, 1)).astype(np.int32)  # whole turns apart
    holes = base.copy()
    holes[_DISTINCT_CHUNK + 5 :: 4, 3] = -1  # inactive lanes after the first block only
    for work in (base, holes):
        dense = bool((work >= 0).all())
        want_reps, want_inv = moved_distinct(work, 128, dense)
        reps, inv = checked_moved_distinct(work, 128, 1 << 32)
        assert np.array_equal(reps, want_reps) and np.array_equal(inv, want_inv)
        assert len(reps) < n
    for value, limit in ((-2, 1 << 32), (1 << 20, 1 << 20)):
        bad = base.copy()
        bad[-1, 5] = value  # (in the last block)
        assert checked_moved_distinct(bad, 128, limit) is None
