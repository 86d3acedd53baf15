"""autopad/model_cp_async_cg.py: cp.async.cg's wavefronts, against Nsight Compute and as worked examples.

The fixture holds 775 measured probes: H200 run 157's 144 (the rule was not read off them), H100 run 179's
252 (it was) and H100 runs 181-182's 379 (drawn after the rule and its predictions were committed); every
one must agree. The worked examples spell the rule out: which pairs of 16-byte
copies share a wavefront, a line under an XOR of its chunks, a rotation, words written twice.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from autopad.model import analyze, analyze_batch, analyze_distinct, op_status, shift_period
from autopad.model_cp_async_cg import cg_costs
from autopad.validate_probes import predict

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "cp_async_cg_probes.json"
C = 16  # one 16-byte chunk


def _batch(probes: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    shared = np.array([[-1 if a is None else a for a in p["addresses"]] for p in probes], dtype=np.int64)
    glob = np.array([[lane * C if g is None else g for lane, g in enumerate(p["global"])] for p in probes])
    return shared, glob.astype(np.int64)


def _one(copies: dict[int, tuple[int, int]]) -> int:
    """Wavefronts of one instruction from {lane: (global byte, shared byte)}."""
    shared = [None] * 32
    glob = [lane * C for lane in range(32)]
    for lane, (g, s) in copies.items():
        shared[lane], glob[lane] = s, g
    return analyze(shared, 16, "cp.async.cg", global_addresses=glob).wavefronts


def test_every_measured_probe_agrees_on_both_gpus():
    probes = json.loads(FIXTURE.read_text())["probes"]
    assert len(probes) == 775
    shared, glob = _batch(probes)
    wave, ideal = analyze_batch(shared, 16, "cp.async.cg", global_addresses=glob)
    measured = np.array([p["measured_wavefronts"] for p in probes])
    bad = [(p["run"], p["name"], m, w) for p, m, w in zip(probes, measured, wave) if m != w]
    assert not bad, bad[:10]
    # Nsight Compute counts no bank conflicts for .cg: ideal is the wavefronts themselves
    assert all(p["measured_conflicts"] == 0 for p in probes) and (ideal == wave).all()
    not_read_off = [p for p in probes if "run179" not in p["run"]]
    assert len(not_read_off) == 144 + 379  # run 157's, and the held-out runs 181-182's


def test_which_pairs_of_copies_share_a_wavefront():
    """Lane 0 copies chunk 0 of a line to chunk 0 of a row; lane 1 copies chunk gb to chunk sb. They share
    a wavefront when they read the same half of their sectors and move them by the same parity, or when they
    are the two halves of one sector kept together: exactly the six measured pairs (H100 run 179)."""
    merged = {
        (gb, sb) for gb in range(1, 8) for sb in range(1, 8) if _one({0: (0, 0), 1: (gb * C, sb * C)}) == 1
    }
    assert merged == {(1, 1), (2, 2), (2, 6), (4, 4), (6, 2), (6, 6)}
    # lanes in two store phases (0 and 8) pair the same way: the phases play no part
    assert _one({0: (0, 0), 8: (2 * C, 6 * C)}) == 1 and _one({0: (0, 0), 8: (3 * C, 3 * C)}) == 2
    # two lines into one row, or one line into two rows: never together
    assert _one({0: (0, 0), 1: (128 + C, C)}) == 2 and _one({0: (0, 0), 1: (C, 128 + C)}) == 2


def test_a_line_under_an_xor_of_its_chunks_is_one_wavefront_and_a_rotation_by_one_chunk_two():
    line = range(8)
    for k in range(8):  # every XOR (the NVMMA swizzles' permutations)
        assert _one({n: (n * C, (n ^ k) * C) for n in line}) == 1
    rotations = [_one({n: (n * C, (n + r) % 8 * C) for n in line}) for r in range(8)]
    assert rotations == [1, 2, 1, 2, 1, 2, 1, 2]  # measured: rot 2, 4, 6 one wavefront; odd ones two


def test_a_word_written_twice_counts_once_unlike_cp_async_ca():
    lanes = [0] * 32  # every lane into one 16-byte word, from four lines
    assert analyze(lanes, 16, "cp.async.cg").wavefronts == 1
    assert analyze(lanes, 16, "cp.async").wavefronts == 32  # .ca: every lane's write counts
    # a contiguous copy is one wavefront a line under both
    contiguous = [lane * C for lane in range(32)]
    assert (
        analyze(contiguous, 16, "cp.async.cg").wavefronts
        == analyze(contiguous, 16, "cp.async").wavefronts
        == 4
    )
    # but scattering one line's chunks costs a wavefront each under .cg (32-byte shared stride: .ca 8)
    assert analyze([lane * 2 * C for lane in range(32)], 16, "cp.async.cg").wavefronts == 32


def test_default_source_is_lane_ordered_and_a_whole_row_shift_changes_nothing():
    rng = np.random.default_rng(5)
    shared = rng.integers(0, 4096 // C, size=(300, 32)) * C
    shared[rng.random((300, 32)) < 0.2] = -1
    lane_ordered = np.broadcast_to(np.arange(32) * C, shared.shape)
    a, _ = analyze_batch(shared, 16, "cp.async.cg")
    b, _ = analyze_batch(shared, 16, "cp.async.cg", global_addresses=lane_ordered)
    assert (a == b).all()
    assert shift_period(16, "cp.async.cg") == 128
    moved = np.where(shared >= 0, shared + 128 * 7, -1)
    assert (analyze_batch(moved, 16, "cp.async.cg")[0] == a).all()
    # a shift by one chunk is not free (the chunk a lane copies from stays): no dedup by unit shifts here
    one = np.where(shared >= 0, shared + C, -1)
    assert (analyze_batch(one, 16, "cp.async.cg")[0] != a).any()
    assert (analyze_distinct(shared, 16, "cp.async.cg")[0] == a).all()


def test_per_line_costs_sum_to_the_wavefronts():
    shared = np.array([[lane * 2 * C for lane in range(32)]], dtype=np.int64)
    wave, _, lines = cg_costs(shared, None, per_line=True)
    assert lines == [(8, 8, 8, 8)] and wave[0] == 32
    assert analyze(shared[0].tolist(), 16, "cp.async.cg").phase_costs == (8, 8, 8, 8)
    empty = np.full((2, 32), -1, dtype=np.int64)
    w, i, costs = cg_costs(empty, None, per_line=True)
    assert w.tolist() == [0, 0] and i.tolist() == [0, 0] and costs == [(), ()]


def test_bad_input_gets_a_clear_error():
    with pytest.raises(ValueError, match="cp.async.cg copies are 16 bytes wide, got 8"):
        analyze([0] * 32, 8, "cp.async.cg")
    with pytest.raises(ValueError, match="not aligned to the 16-byte copy"):
        analyze([0] * 32, 16, "cp.async.cg", global_addresses=[8] * 32)
    with pytest.raises(ValueError, match="use 'cp.async' \\(the .ca rule\\) or 'cp.async.cg'"):
        op_status("cp.async.ca")
    with pytest.raises(ValueError, match="only ops 'cp.async' and 'cp.async.cg' copy from global memory"):
        analyze([0] * 32, 4, "store", global_addresses=[0] * 32)
    with pytest.raises(ValueError, match="sm_80"):
        analyze([0] * 32, 16, "cp.async.cg", arch="sm_75")
    assert "252 targeted probes" in op_status("cp.async.cg")


def test_validate_costs_a_cg_probe_by_the_cg_rule():
    probe = {
        "op": "cp.async",
        "access_bytes": 16,
        "addresses": [0] * 32,
        "global": [n * C for n in range(32)],
    }
    assert predict([{**probe, "form": "cp.async.cg"}, {**probe, "form": "cp.async.ca"}]) == [(1, 0), (32, 28)]


def test_a_pattern_may_state_cg_copies_and_the_scoring_path_costs_them_by_the_rule():
    from autopad.access import Instruction
    from autopad.arch import get_arch
    from autopad.score_distinct import _costs

    ins = Instruction("cp", "cp.async.cg", 16, np.zeros(32, dtype=np.int64), np.arange(32) * 2)
    assert ins.op == "cp.async.cg"
    rng = np.random.default_rng(1)
    addr = (rng.integers(0, 512, size=(64, 32)) * C).astype(np.int32)  # the scorer's int32 batches
    got, _ = _costs(addr, 16, "cp.async.cg", get_arch("sm_90"))
    assert (got == analyze_batch(addr.astype(np.int64), 16, "cp.async.cg")[0]).all()


def _random(rng: np.random.Generator, n: int, span: int, lines: int) -> tuple[np.ndarray, np.ndarray]:
    """n random instructions: shared chunks in ``span`` chunks (duplicates likely where small), about a
    tenth of the lanes inactive, sources in ``lines`` global lines."""
    shared = rng.integers(0, span, (n, 32)) * C
    shared[rng.random((n, 32)) < 0.1] = -1
    glob = rng.integers(0, lines * 8, (n, 32)) * C
    return shared.astype(np.int64), glob.astype(np.int64)


def test_the_compiled_rule_gives_numpys_answers(monkeypatch):
    pytest.importorskip("numba")
    import autopad.model_cp_async_cg as cg

    probes = json.loads(FIXTURE.read_text())["probes"]
    rng = np.random.default_rng(7)
    batches = [_batch(probes)] + [
        _random(rng, 3000, span, lines) for span in (2, 8, 64, 4096) for lines in (1, 4, 512)
    ]
    shared, glob = _random(rng, 3000, 64, 4)
    batches.append((shared, None))  # the lane-ordered source
    # the ends of both address spaces (rows up to 2**25, the row table's tag over its whole range)
    batches.append((np.where(shared >= 0, shared + (1 << 32) - 64 * C, -1), glob + (1 << 62)))
    # whole rows copied from one line under each instruction's own XOR or rotation of its chunks, some lanes
    # doubled up: sector halves carried both, swapped or not, split across sectors
    lane = np.arange(32)
    xor = rng.integers(0, 8, (3000, 1))
    rot = rng.integers(0, 8, (3000, 1))
    shared = ((lane >> 3) * 128 + (((lane & 7) ^ xor) + rot) % 8 * C).astype(np.int64)
    shared[rng.random((3000, 32)) < 0.15] = shared[0, 0]
    glob = ((lane >> 3) * 256 + (lane & 7) * C + (rng.integers(0, 99, (3000, 1)) << 9)).astype(np.int64)
    batches.append((shared, glob))
    for shared, glob in batches:
        monkeypatch.setenv("AUTOPAD_MODEL_BACKEND", "numpy")
        want = analyze_batch(shared, 16, "cp.async.cg", global_addresses=glob)
        assert cg.cg_compiled(shared, glob) is None  # numpy forced: the compiled rule stays out
        monkeypatch.setenv("AUTOPAD_MODEL_BACKEND", "numba")
        got = cg.cg_compiled(shared, glob)
        assert got is not None
        assert (got[0] == want[0]).all() and (got[1] == want[1]).all()
        assert (analyze_batch(shared, 16, "cp.async.cg", global_addresses=glob)[0] == want[0]).all()
    # auto: small batches stay on numpy (loading numba costs more than they take), large ones compile
    monkeypatch.setenv("AUTOPAD_MODEL_BACKEND", "auto")
    assert cg.cg_compiled(*_random(rng, cg.NUMPY_BELOW - 1, 64, 4)) is None
    big = _random(rng, cg.NUMPY_BELOW, 64, 4)
    assert (cg.cg_compiled(*big)[0] == cg.cg_costs(*big)[0]).all()


def test_the_compiled_rule_leaves_bad_addresses_to_numpys_errors(monkeypatch):
    pytest.importorskip("numba")
    import autopad.model_cp_async_cg as cg

    monkeypatch.setenv("AUTOPAD_MODEL_BACKEND", "numba")
    shared, glob = _random(np.random.default_rng(3), 50, 64, 4)
    for where, fix in (("shared", 8), ("shared", -3), ("global", -5), ("global", 24)):
        s, g = shared.copy(), glob.copy()
        s[17, 3] = 160 if where == "global" else fix
        if where == "global":
            g[17, 3] = fix
        assert cg.cg_compiled(s, g) is None  # found it, stopped: numpy's checks word the error
        with pytest.raises(ValueError, match="row 17 lane 3"):
            analyze_batch(s, 16, "cp.async.cg", global_addresses=g)
    wide = np.full((2, 64), -1, dtype=np.int64)  # a 64-lane warp: more lanes than its tables hold
    assert cg.cg_compiled(wide, None) is None


def test_the_cg_path_checks_its_backend_and_names_a_bad_shared_address_first(monkeypatch):
    import autopad.model_cp_async_cg as cg

    shared, glob = _random(np.random.default_rng(5), 30, 64, 4)
    monkeypatch.setenv("AUTOPAD_MODEL_BACKEND", "numbaa")
    with pytest.raises(ValueError, match="AUTOPAD_MODEL_BACKEND: 'numbaa' is not one of auto, numba, numpy"):
        cg.cg_compiled(shared, glob)
    monkeypatch.setenv("AUTOPAD_MODEL_BACKEND", "auto")
    shared[4, 2] = 8  # off the 16-byte grid, and the global side malformed too: the shared error comes first
    with pytest.raises(ValueError, match="row 4 lane 2"):
        analyze_batch(shared, 16, "cp.async.cg", global_addresses=glob[:, :5])


def test_the_compiled_rule_probes_past_clashing_rows_and_takes_warps_of_1_to_64_lanes():
    """_model_numba_cg files rows by their low 10 bits: rows 128 KiB apart share a slot and are probed past;
    its table's lane field holds warps of up to 64 lanes (analyze_batch sends it 32, wider warps numpy)."""
    pytest.importorskip("numba")
    from autopad._model_numba_cg import cg_rows

    rng = np.random.default_rng(11)
    for warp in (1, 5, 32, 33, 64):
        n = 2000  # (numpy's dense ids hold 2**18 lines a chunk of rows: 4096 rows of 64 lanes)
        rows = rng.integers(0, 4, (n, warp)) * (1 << 10) + rng.integers(0, 3, (n, warp))  # 1,024 rows apart
        shared = rows * 128 + rng.integers(0, 8, (n, warp)) * C
        shared[rng.random((n, warp)) < 0.1] = -1
        for glob in (None, rng.integers(0, 16, (n, warp)) * C):
            wave = np.full(n, -5, dtype=np.int64)
            lanes = glob is None
            assert cg_rows(shared, shared[:0] if lanes else glob, wave, 1 << 32, lanes) == -1
            assert (wave == cg_costs(shared, glob)[0]).all()
    wide = np.zeros((2, 65), dtype=np.int64)  # past the lane field: left to numpy
    assert cg_rows(wide, wide[:0], wave, 1 << 32, True) == 0


def test_the_compiled_rules_parts_run_once_each_and_a_failing_part_raises():
    import autopad.model_cp_async_cg as cg

    seen: list[int] = []
    cg._on_every_core(7, seen.append)
    assert sorted(seen) == list(range(7))

    def fail(p: int) -> None:
        if p == 3:
            raise RuntimeError("part 3")

    with pytest.raises(RuntimeError, match="part 3"):
        cg._on_every_core(7, fail)


def test_the_threads_helper_is_model_backends_shared_by_both_cp_async_wrappers():
    """``_on_every_core`` moved to model_backend.py (2026-12-06) so that .ca's wrapper uses it too."""
    import autopad.model_backend as mb
    import autopad.model_cp_async_cg as cg

    assert cg._on_every_core is mb._on_every_core
    seen: list[int] = []
    mb._on_every_core(1, seen.append)
    mb._on_every_core(0, seen.append)
    assert seen == [0]
