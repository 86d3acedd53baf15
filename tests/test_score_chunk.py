"""The chunk scorer (autopad/score_chunk.py) against scoring each unit's instructions one by one, and its
helpers: the formula batches' costs (``_costs``), the code numbering (``_ids``)."""

from __future__ import annotations

import numpy as np
import pytest
from test_model_backend import ALL_FORMS, _random_batch

from autopad.arch import get_arch
from autopad.layouts import Padded, Swizzled
from autopad.model import analyze_batch, analyze_distinct
from autopad.score_chunk import _costs, _ids, _score_chunk

A = get_arch("sm_90")


def _walks(rng: np.random.Generator, tm: int, tn: int, n: int, dtype: type, counted: bool) -> list[tuple]:
    """A pattern of a ``tm`` x ``tn`` tile of 4-byte elements: row walks (stores) and column walks (loads)
    at random places, some lanes inactive, each instruction run ``counts`` times (1 unless ``counted``)."""
    lanes = np.arange(32)
    r0, c0 = rng.integers(0, tm - 1, n), rng.integers(0, tn // 32, n) * 32
    rows = np.repeat(r0[:, None], 32, axis=1)
    cols = (c0[:, None] + lanes) % tn
    rows[rng.random((n, 32)) < 0.05] = -1
    down = (rng.integers(0, tm - 32 + 1, n)[:, None] + lanes) % tm
    right = np.repeat(rng.integers(0, tn, n)[:, None], 32, axis=1)
    k = rng.integers(1, 5, n) if counted else np.ones(n, dtype=np.int64)
    return [
        ("store", 4, rows.astype(dtype), cols.astype(dtype), k),
        ("load", 4, down.astype(dtype), right.astype(dtype), k[::-1].copy()),
    ]


def _reference(pattern: list[tuple], layout) -> tuple[int, int]:
    """Every instruction's addresses through the layout's own offsets, counts multiplied in."""
    w = d = 0
    for op, width, rows, cols, counts in pattern:
        addr = np.asarray(layout.offsets(rows.astype(np.int64), cols.astype(np.int64)), dtype=np.int64)
        ws, ds = analyze_batch(addr, width, op, A)
        w, d = w + int((ws * counts).sum()), d + int((ds * counts).sum())
    return w, d


@pytest.mark.parametrize("counted", [False, True])
def test_chunk_scores_equal_the_units_scored_one_by_one(counted):
    """Units of several patterns (int32 and int64 lanes, repeated instructions) under padded and swizzled
    tiles of two row counts (one formula each pair): each unit's wavefronts and ideal are those of its
    own instructions through its layout's offsets; with counts, the weighted path sums them."""
    rng = np.random.default_rng(11)
    pats = []
    for j, dtype in enumerate((np.int32, np.int64, np.int32)):
        p = _walks(rng, 64, 64, 40, dtype, counted)
        if j == 2:  # a pattern that repeats some of its own instructions
            p = [(op, w, np.concatenate([r, r[:7]]), np.concatenate([c, c[:7]]), np.concatenate([k, k[:7]]))
                 for op, w, r, c, k in p]  # fmt: skip
        pats.append(p)
    lays = [Padded(64, 64, 4, pad=p) for p in (0, 1, 2, 8)]
    lays += [Swizzled(64, 64, 4, sw_vec=v, per_phase=pp, max_phase=m) for v, pp, m in ((2, 1, 8), (8, 2, 4))]
    lays += [Padded(96, 64, 4, pad=2), Swizzled(96, 64, 4, sw_vec=2, per_phase=1, max_phase=8)]  # (formulas)
    which, units = [], []
    for m in range(len(pats)):
        for lay in lays:
            which.append(m)
            units.append(lay)
    wave, ideal = _score_chunk(pats, which, units, [id(x) for x in units], A)
    want = [_reference(pats[m], lay) for m, lay in zip(which, units)]
    assert list(zip(wave.tolist(), ideal.tolist())) == want
    assert len(set(wave.tolist())) > 3  # the layouts do differ


def test_chunk_of_no_instructions_scores_zero():
    wave, ideal = _score_chunk([[], []], [0, 1], [Padded(32, 32, 4)] * 2, [1, 1], A)
    assert wave.tolist() == [0, 0] and ideal.tolist() == [0, 0]


@pytest.mark.parametrize("op,width", [("load", 2), ("store", 16), ("load", 8), ("ldmatrix.x4.trans", 16)])
def test_formula_batch_costs_equal_analyze_distinct(op, width):
    """int32 batches (the tile formula's) are checked and hashed in one pass: the answers are
    ``analyze_distinct``'s, for rows with every lane active, rows with inactive lanes and both mixed in
    one block."""
    rng = np.random.default_rng(width)
    base = rng.integers(0, 1 << 12, (3000, 32)) * width
    if op.startswith("ldmatrix"):
        base = np.repeat(base[:, :1], 32, axis=1) + np.arange(32) * 16
    moved = base + 128 * rng.integers(0, 40, (3000, 1))
    sparse = np.where(rng.random((6000, 32)) < 0.1, -1, np.r_[base, moved])
    sparse[::7, 8:] = -1  # (fewer phases: the ideal varies)
    sparse[::11] = -1
    for addr in (np.concatenate([base, moved]), sparse):
        if op.startswith("ldmatrix"):
            addr = np.where(addr < 0, 0, addr)  # (every lane of a matrix instruction is active)
        addr = addr.astype(np.int32)
        got, want = _costs(addr, width, op, A), analyze_distinct(addr, width, op, A)
        assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()
    assert len(set(want[0].tolist())) > 1 and (op.startswith("ldmatrix") or len(set(want[1].tolist())) > 1)


def test_formula_batch_with_a_bad_address_raises_as_analyze_distinct():
    addr = np.tile(np.arange(32, dtype=np.int32) * 4, (50, 1))
    addr[37, 3] = 6
    with pytest.raises(ValueError, match=r"^addresses: row 37 lane 3 address 6 is not aligned"):
        _costs(addr, 4, "load", A)
    addr[37, 3] = -5
    with pytest.raises(ValueError, match=r"row 37 lane 3 has negative address -5"):
        _costs(addr, 4, "load", A)


@pytest.mark.parametrize("size", [50, 1 << 30, 1 << 62])
def test_ids_number_codes_in_their_order(size):
    """The table (a small range), the packed sort and np.unique (the largest) number alike: each entry's
    distinct index in the codes' order, and an entry holding each."""
    rng = np.random.default_rng(5)
    code = rng.integers(0, min(size, 40), 1000) * (size // 50 if size > 50 else 1)
    ids, rep = _ids(code, size)
    uniq, inverse = np.unique(code, return_inverse=True)
    assert ids.tolist() == inverse.ravel().tolist()
    assert code[rep].tolist() == uniq.tolist()


@pytest.mark.parametrize("op,width", ALL_FORMS)
def test_a_row_moved_by_whole_units_costs_the_same(op, width):
    """What ``_costs`` groups rows by: every active lane moved by the same whole number of the rule's units
    (its width, or a bank for narrower accesses) leaves each phase's cost alone, for every op and width
    (numpy and, where it loads, numba give the same numbers: tests/test_model_backend.py)."""
    from autopad.model_rules import _rule

    rng = np.random.default_rng(hash((op, width)) % 2**32)
    base = _random_batch(rng, 400, op, width)
    base = base[(base < 1 << 30).all(axis=1)]
    unit = _rule(op, width, A).unit
    want = analyze_batch(base, width, op, A)
    assert len(set(want[0].tolist())) > 1
    for k in (1, 3, 5, 31):
        moved = np.where(base >= 0, base + k * unit, -1)
        got = analyze_batch(moved, width, op, A)
        assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()


def test_cp_async_cg_copies_are_not_moved_by_a_period():
    """A .cg copy's cost depends on each chunk's place in its 128-byte row (its lane-ordered source gives
    lane l chunk l % 8), so moving an instruction by a layout's period (144 bytes here) may change it: the
    chunk scorer leaves .cg instructions where they are and agrees with them scored one by one."""
    lanes = np.arange(32)
    rows = np.array([lanes // 8, 1 + lanes // 8])  # tile rows 0-3 and 1-4, 8 lanes x 16 bytes a row
    cols = np.array([(lanes % 8) * 8] * 2)
    pats, units = [], []
    for shift in (0, 1, 2, 3):  # the same instructions moved by whole rows (144-byte periods)
        pats.append([("cp.async.cg", 16, rows + shift, cols, np.ones(2, np.int64))])
    lays = [Padded(64, 64, 2, pad=p) for p in (0, 8, 16)] + [
        Swizzled(64, 64, 2, sw_vec=8, per_phase=1, max_phase=8)
    ]
    which = [m for m in range(len(pats)) for _ in lays]
    units = [lay for _ in pats for lay in lays]
    wave, _ = _score_chunk(pats, which, units, [id(x) for x in units], A)
    want = [_reference(pats[m], lay)[0] for m, lay in zip(which, units)]
    assert wave.tolist() == want
    assert _reference(pats[0], lays[1])[0] == 21  # 10 + 11 at the 144-byte stride (20 if moved)
