"""Tests for the model's address checking (autopad/model_addresses.py, through ``analyze`` and
``analyze_batch``): bad input is a ValueError whose message names the argument, and the bad row and lane.
"""

from __future__ import annotations

import numpy as np
import pytest

from autopad import analyze, analyze_batch

# ---------------------------------------------------------------------------------------------------------
# (e) Bad input: ValueError whose message names the argument
# ---------------------------------------------------------------------------------------------------------

GOOD = [4 * lane for lane in range(32)]


@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"addresses": GOOD[:31]}, "addresses"),
        ({"addresses": GOOD + [0]}, "addresses"),
        ({"addresses": [-4] + GOOD[1:]}, "addresses"),
        ({"addresses": [2] + GOOD[1:]}, "addresses"),  # misaligned for 4 bytes
        ({"addresses": [8 * n + 4 for n in range(32)], "access_bytes": 8}, "addresses"),
        ({"addresses": [16 * n + 8 for n in range(32)], "access_bytes": 16}, "addresses"),
        ({"addresses": [1] + GOOD[1:], "access_bytes": 2}, "addresses"),
        ({"addresses": [4.0] + GOOD[1:]}, "addresses"),
        ({"addresses": ["0"] + GOOD[1:]}, "addresses"),
        ({"addresses": [True] + GOOD[1:]}, "addresses"),
        ({"addresses": 12}, "addresses"),
        ({"addresses": GOOD, "op": "read"}, "op"),
        ({"addresses": GOOD, "op": None}, "op"),
        ({"addresses": GOOD, "access_bytes": 3}, "access_bytes"),
        ({"addresses": GOOD, "access_bytes": 32}, "access_bytes"),
        ({"addresses": GOOD, "access_bytes": 2, "op": "atomic"}, "access_bytes"),
        ({"addresses": GOOD, "arch": "sm_100x"}, "arch"),
        ({"addresses": GOOD, "arch": 90}, "arch"),
    ],
)
def test_analyze_rejects_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=rf"^{name}:"):
        analyze(**kwargs)


@pytest.mark.parametrize(
    "addr,kwargs",
    [
        (np.zeros((3, 31), dtype=np.int64), {}),
        (np.zeros((2, 32), dtype=np.float64), {}),
        (np.full((2, 32), -2, dtype=np.int64), {}),
        (np.full((2, 32), 6, dtype=np.int64), {"access_bytes": 4}),
        (np.array([[0] * 32, [1] * 32]) * 8 + np.array([[0], [4]]), {"access_bytes": 8}),
        (np.zeros((2, 2, 32), dtype=np.int64), {}),
        (np.zeros((1, 64), dtype=np.int64), {"arch": "sm_90"}),
    ],
)
def test_analyze_batch_rejects_bad_addresses(addr, kwargs):
    with pytest.raises(ValueError, match=r"^addresses:"):
        analyze_batch(addr, **kwargs)


def test_analyze_batch_rejects_bad_op_width_arch():
    with pytest.raises(ValueError, match=r"^op:"):
        analyze_batch(np.zeros((1, 32), dtype=np.int64), 4, "reduce")
    with pytest.raises(ValueError, match=r"^access_bytes:"):
        analyze_batch(np.zeros((1, 32), dtype=np.int64), 6, "load")
    with pytest.raises(ValueError, match=r"^arch:.*sm_90"):
        analyze_batch(np.zeros((1, 32), dtype=np.int64), 4, "load", "gfx1234")


def test_analyze_takes_one_instruction():
    with pytest.raises(ValueError, match=r"^addresses:.*analyze_batch"):
        analyze(np.zeros((2, 32), dtype=np.int64))


def test_inactive_lanes_never_fail_alignment():
    """-1 (array) and None (list) are inactive lanes, not misaligned addresses."""
    arr = np.full(32, 16, dtype=np.int64)
    arr[::3] = -1
    # every active lane reads 16 and an inactive partner does not break the pairing (measured on the
    # H200, 2026-11-29), so two merged phases of 16 lanes, each one broadcast word group
    assert analyze_batch(arr, 16, "load")[0].tolist() == [2]
    assert analyze([None if n % 3 == 0 else 16 for n in range(32)], 16).wavefronts == 2


# ---------------------------------------------------------------------------------------------------------
# (e) continued: every bad input the reliability issue lists is a ValueError naming the argument
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: analyze([2**70] * 32), "addresses"),  # was OverflowError
        (lambda: analyze([2**32] + GOOD[1:]), "addresses"),  # shared memory is addressed with 32 bits
        (lambda: analyze(GOOD, access_bytes=4.0), "access_bytes"),  # was a ufunc TypeError
        (lambda: analyze(GOOD, access_bytes=True), "access_bytes"),  # was accepted as 1
        (lambda: analyze(GOOD, access_bytes="4"), "access_bytes"),
        (lambda: analyze_batch(None), "addresses"),  # was IndexError
        (lambda: analyze_batch(np.full((2, 32), 2**63 + 8, dtype=np.uint64)), "addresses"),  # was negative
        (lambda: analyze_batch(np.full((2, 32), 2**32, dtype=np.uint64)), "addresses"),
        (lambda: analyze_batch(np.full((2, 32), 2**40, dtype=np.int64)), "addresses"),
        (lambda: analyze_batch(np.zeros((2, 32), dtype=np.float32)), "addresses"),
        (lambda: analyze_batch(np.array([[0] * 32, [None] * 32], dtype=object)), "addresses"),
        (lambda: analyze_batch([[0] * 31 + [None]] * 2), "addresses"),  # nested lists with None: object
        (lambda: analyze_batch(np.zeros((2, 32), dtype=bool)), "addresses"),
        (lambda: analyze_batch(np.zeros((1, 2, 32), dtype=np.int64)), "addresses"),
        (lambda: analyze_batch(np.int64(7)), "addresses"),
        (lambda: analyze_batch("0 4 8"), "addresses"),
        (lambda: analyze(GOOD, op=1), "op"),
        (lambda: analyze(GOOD, op=["load"]), "op"),
        (lambda: analyze_batch(np.zeros((1, 32), dtype=np.int64), op=b"load"), "op"),
        (lambda: analyze(GOOD, arch=3.5), "arch"),
        (lambda: analyze(GOOD, arch=None), "arch"),
        (lambda: analyze_batch(np.zeros((1, 32), dtype=np.int64), arch=["sm_90"]), "arch"),
        (lambda: analyze_batch(np.zeros((1, 31), dtype=np.int64), validate=False), "addresses"),
    ],
)
def test_bad_input_is_a_value_error_naming_the_argument(call, name):
    with pytest.raises(ValueError, match=rf"^{name}:"):
        call()


def test_out_of_range_message_says_what_is_allowed():
    with pytest.raises(ValueError, match=r"out of range.*2\*\*32"):
        analyze_batch(np.full((2, 32), 2**63 + 8, dtype=np.uint64))
    with pytest.raises(ValueError, match=r"dtype float64"):
        analyze_batch(np.zeros((2, 32)))
    with pytest.raises(ValueError, match=r"one of \(1, 2, 4, 8, 16\)"):
        analyze(GOOD, access_bytes=True)


def test_uint_and_int32_arrays_are_read_as_addresses():
    rows = (np.arange(32) * 33 * 4)[None, :]
    expect = analyze_batch(rows.astype(np.int64))
    for dtype in (np.uint64, np.uint32, np.int32, np.uint16):
        got = analyze_batch(rows.astype(dtype))
        assert [g.tolist() for g in got] == [e.tolist() for e in expect], dtype


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_empty_batch_returns_two_empty_arrays(backend, monkeypatch):
    if backend == "numba":
        pytest.importorskip("numba")
    monkeypatch.setenv("AUTOPAD_MODEL_BACKEND", backend)
    for empty in (np.zeros((0, 32), dtype=np.int64), np.zeros((0, 32), dtype=np.uint32), []):
        wave, ideal = analyze_batch(empty)
        assert wave.shape == ideal.shape == (0,) and wave.dtype == ideal.dtype == np.int64
    wave, ideal = analyze_batch(np.zeros((0, 32), dtype=np.int64), 16, "ldmatrix.x4", validate=False)
    assert wave.shape == (0,)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_bad_row_deep_in_a_large_batch_is_named(backend, monkeypatch):
    """The check covers every row, also in the threaded parts of a large batch; the first bad row is named."""
    if backend == "numba":
        pytest.importorskip("numba")
    monkeypatch.setenv("AUTOPAD_MODEL_BACKEND", backend)
    addr = np.tile(np.arange(32, dtype=np.int64) * 4, (100_000, 1))
    addr[77_777, 5] = 6  # misaligned
    addr[90_000, 3] = -3
    with pytest.raises(ValueError, match=r"^addresses: row 77777 lane 5 address 6 is not aligned"):
        analyze_batch(addr)
    addr[77_777, 5] = 8
    with pytest.raises(ValueError, match=r"^addresses: row 90000 lane 3 has negative address -3"):
        analyze_batch(addr)


def test_a_dict_or_set_of_addresses_is_refused_and_validate_must_be_a_bool():
    """A dict was read as its keys and a set in no lane order, each scored as if meant; validate="no" read as
    true and 0 as false. Both are refused, naming the argument."""
    lanes = [4 * lane for lane in range(32)]
    for bad in (dict.fromkeys(lanes, 0), set(lanes), frozenset(lanes)):
        with pytest.raises(ValueError, match="addresses: a .* has no lane order"):
            analyze(bad)
    assert analyze(iter(lanes)) == analyze(lanes)  # an iterator keeps its order: taken
    for bad in ("no", 0, None):
        with pytest.raises(ValueError, match="validate: must be True or False"):
            analyze_batch(np.array([lanes]), validate=bad)
