"""Tests for the model's op rules (autopad/model_rules.py): ldmatrix, stmatrix and cp.async by hand and by
a reference, the op vocabulary and each op's status.
"""

from __future__ import annotations

from collections import defaultdict

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_model import SETTINGS, instructions
from test_model_addresses import GOOD

import autopad
from autopad import analyze

# ---------------------------------------------------------------------------------------------------------
# (h) ldmatrix, stmatrix, cp.async: the derived rules (model_rules.py's docstring), by hand and by a reference
# ---------------------------------------------------------------------------------------------------------


def reference_matrix(addresses: list[int | None], matrices: int) -> tuple[int, int, list[int]]:
    """ldmatrix/stmatrix.xK as derived: matrix i = lanes 8i..8i+7 = one phase; every row 16 bytes covers 4
    banks; a phase costs the most distinct words in one bank (repeated rows broadcast); no merging."""
    costs = []
    for m in range(matrices):
        per_bank: dict[int, set[int]] = defaultdict(set)
        for a in addresses[8 * m : 8 * m + 8]:
            for word in range(a // 4, a // 4 + 4):
                per_bank[word % 32].add(word)
        costs.append(max(len(s) for s in per_bank.values()))
    return sum(costs), sum(1 for c in costs if c), costs


def test_op_status_says_what_was_measured():
    assert autopad.model.op_status("load") == "measured"
    for op in ("ldmatrix", "ldmatrix.x2.trans", "stmatrix.x1"):  # 536 H200 probes agree (test_model_matrix)
        assert autopad.model.op_status(op).startswith("measured")
    status = autopad.model.op_status("cp.async")  # .ca (test_model_cp_async); .cg has its own op
    assert status.startswith("measured (cp.async.ca") and "all 3,395 recorded probes agree" in status
    assert "cp.async.cg has its own op" in status
    with pytest.raises(ValueError, match=r"^op:"):
        autopad.model.op_status("ldmatrix.x8")


@given(st.sampled_from([1, 2, 4]), st.sampled_from(["ldmatrix", "stmatrix"]), st.data())
@SETTINGS
def test_matrix_ops_match_their_reference(k, family, data):
    span = data.draw(st.sampled_from([128, 256, 1024, 49152]))
    rows = data.draw(st.lists(st.integers(0, span // 16 - 1), min_size=32, max_size=32))
    addresses = [16 * r for r in rows]
    if data.draw(st.booleans()):
        addresses = [addresses[n & ~1] for n in range(32)]  # rows repeated in pairs: no merge for matrices
    wave, ideal, costs = reference_matrix(addresses, k)
    for op in (f"{family}.x{k}", f"{family}.x{k}.trans"):
        a = analyze(addresses, 16, op)
        assert (a.wavefronts, a.ideal, list(a.phase_costs)) == (wave, ideal, costs), op
    assert ideal == k, "every matrix is a non-empty phase"


def test_ldmatrix_by_hand():
    """Each matrix is 8 rows of 16 bytes = 128 bytes: one wavefront when the rows cover all 32 banks."""
    rows16 = [16 * lane for lane in range(32)]  # 4 matrices, each 8 consecutive rows of 16 B: conflict-free
    assert analyze(rows16, 16, "ldmatrix.x4").phase_costs == (1, 1, 1, 1)
    assert analyze(rows16, 16, "ldmatrix").wavefronts == 4, "plain ldmatrix means .x4"
    assert analyze(rows16, 16, "ldmatrix.x1").phase_costs == (1,)
    assert analyze(rows16, 16, "ldmatrix.x2").phase_costs == (1, 1)
    # a row-major tile of 64 fp16 (128 B) per row: the 8 rows of a matrix all start in banks 0-3: 8-way
    tile = [128 * (lane % 8) + 16 * (lane // 8) for lane in range(32)]
    assert analyze(tile, 16, "ldmatrix.x4").phase_costs == (8, 8, 8, 8)
    # the same tile XOR-swizzled on 16-byte chunks (CuTe Swizzle<3,4,3>): every row in its own bank group
    swz = [128 * (lane % 8) + 16 * ((lane // 8) ^ (lane % 8)) for lane in range(32)]
    assert analyze(swz, 16, "ldmatrix.x4").wavefronts == 4
    # padded by 16 bytes per row (row pitch 144 B): conflict-free as well
    pad = [144 * (lane % 8) + 16 * (lane // 8) for lane in range(32)]
    assert analyze(pad, 16, "ldmatrix.x4").conflicts == 0
    # rows 32 bytes apart use 4 of the 8 four-bank groups, two rows each: 2-way; 64 apart: 4-way
    two = [32 * (lane % 8) for lane in range(32)]
    assert analyze(two, 16, "ldmatrix.x1").phase_costs == (2,)
    assert analyze([2 * a for a in two], 16, "ldmatrix.x1").phase_costs == (4,)
    # broadcast rows: all 8 rows of a matrix at one address cost one wavefront, never less than 1 a matrix
    same = [16 * (lane // 8) for lane in range(32)]
    assert analyze(same, 16, "ldmatrix.x4").phase_costs == (1, 1, 1, 1)
    assert analyze([0] * 32, 16, "ldmatrix.x4").wavefronts == 4
    assert analyze([0] * 32, 16, "load").wavefronts == 2, "a plain 16-byte load merges paired lanes"


def test_matrix_ops_ignore_lanes_past_their_matrices():
    rows = [16 * lane for lane in range(8)]
    for rest in ([None] * 24, [4096] * 24, [2048 * n for n in range(24)]):
        assert analyze(rows + rest, 16, "ldmatrix.x1").phase_costs == (1,)
        assert analyze(rows + rest, 16, "stmatrix.x1").phase_costs == (1,)
    assert analyze(rows * 2 + [None] * 16, 16, "ldmatrix.x2").phase_costs == (1, 1)


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: analyze([16 * n for n in range(32)], 4, "ldmatrix.x4"), "access_bytes"),
        (lambda: analyze([16 * n for n in range(32)], op="ldmatrix"), "access_bytes"),  # default is 4 bytes
        (lambda: analyze([8 * n for n in range(32)], 16, "stmatrix.x4"), "addresses"),  # rows 16-B aligned
        (lambda: analyze([None] + [16 * n for n in range(1, 32)], 16, "ldmatrix.x4"), "addresses"),
        (lambda: analyze([16 * n for n in range(7)] + [None] * 25, 16, "ldmatrix.x1"), "addresses"),
        (lambda: analyze(GOOD, 2, "cp.async"), "access_bytes"),
        (lambda: analyze(GOOD, 4, "ldmatrix.x3"), "op"),
        (lambda: analyze(GOOD, 4, "cp.async.cg"), "access_bytes"),  # .cg copies 16 bytes only
        (lambda: analyze(GOOD, 16, "cp.async.ca"), "op"),  # the .ca rule is op "cp.async"
        (lambda: analyze([16 * n for n in range(32)], 16, "stmatrix.x4", "sm_80"), "op"),  # sm_90 only
        (lambda: analyze(GOOD, 4, "cp.async", "sm_75"), "op"),  # sm_80+
        (lambda: analyze([16 * n for n in range(64)], 16, "ldmatrix.x4", "cdna3"), "op"),
    ],
)
def test_matrix_and_cp_async_reject_bad_input(call, name):
    with pytest.raises(ValueError, match=rf"^{name}:"):
        call()


def test_missing_matrix_row_message_names_the_rule():
    with pytest.raises(ValueError, match=r"lane 3 has no address.*lane.*0-31 of ldmatrix.x4"):
        analyze([16 * n if n != 3 else None for n in range(32)], 16, "ldmatrix.x4")


@given(instructions(ops=("store",), widths=(4, 8, 16)))
@SETTINGS
def test_cp_async_is_costed_as_a_store_of_its_width_without_broadcast(instr):
    addresses, width, _ = instr
    got = analyze(addresses, width, "cp.async")
    store = analyze(addresses, width, "store")
    assert got.ideal == store.ideal and len(got.phase_costs) == len(store.phase_costs)
    assert all(c >= s for c, s in zip(got.phase_costs, store.phase_costs))  # every lane's write counts
    active = [a for a in addresses if a is not None]
    if len(set(active)) == len(active):  # no two lanes on one address: nothing to broadcast
        assert got == store
    # and by hand: each phase costs its most lanes in one bank of ``width``-byte units
    lanes = 128 // width
    for k, cost in enumerate(got.phase_costs):
        units = [a // width % (128 // width) for a in addresses[k * lanes : (k + 1) * lanes] if a is not None]
        assert cost == max((units.count(u) for u in set(units)), default=0)


def test_access_vocabulary_accepts_the_new_ops():
    from autopad.model import OPS

    for op in ("cp.async", "ldmatrix", "ldmatrix.x1", "ldmatrix.x4.trans", "stmatrix.x2", "stmatrix.trans"):
        assert op in OPS
