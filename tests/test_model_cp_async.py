"""cp.async against Nsight Compute (autopad/model_cp_async.py, the rule in model_rules.py).

144 single-instruction ``cp.async.ca`` probes of 4, 8 and 16 bytes, measured by ``autopad validate --ops
cp.async`` on the H200 on 2026-12-01 (tests/fixtures/h200_cp_async_probes.json). The rule was fitted to
these probes, so the fixture checks that it says what they say; it is not a held-out test.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import autopad
from autopad import analyze, analyze_batch
from autopad.model_cp_async import line_ordered

FIXTURE = Path(__file__).parent / "fixtures" / "h200_cp_async_probes.json"
PROBES = json.loads(FIXTURE.read_text())["probes"]


def _line_ordered(p: dict) -> bool:
    return line_ordered(p["addresses"], p["global"], p["access_bytes"])


def test_the_fixture_is_the_recorded_ca_run():
    assert len(PROBES) == 144
    assert {(p["form"], p["access_bytes"]) for p in PROBES} == {("cp.async.ca", w) for w in (4, 8, 16)}
    assert sum(_line_ordered(p) for p in PROBES) == 117


def test_every_probe_from_a_line_ordered_source_agrees_without_global_addresses():
    wrong = []
    for p in filter(_line_ordered, PROBES):
        a = analyze(p["addresses"], p["access_bytes"], "cp.async")
        if (a.wavefronts, a.conflicts) != (p["wavefronts"], p["conflicts"]):
            wrong.append((p["access_bytes"], p["name"], a.wavefronts, p["wavefronts"]))
    assert not wrong, wrong[:5]


def test_with_global_addresses_128_of_144_agree_and_every_miss_is_a_random_permuted_wide_copy():
    misses = []
    for p in PROBES:
        a = analyze(p["addresses"], p["access_bytes"], "cp.async", global_addresses=p["global"])
        # the ideal rule (store phases with an active lane) matches Nsight Compute's conflict counter on all
        assert p["wavefronts"] - a.ideal == p["conflicts"], p["name"]
        if a.wavefronts != p["wavefronts"]:
            misses.append((p, a.wavefronts))
    assert len(misses) == 16  # if the rule improves, lower this and the figures in model_rules.OP_STATUS
    for p, got in misses:  # random shared words from sources permuted across lines
        assert p["access_bytes"] in (8, 16) and not _line_ordered(p) and p["name"].startswith("rand")
        assert 1 <= p["wavefronts"] - got <= 4 or p["wavefronts"] - got == -2, (
            p["name"],
            got,
            p["wavefronts"],
        )
    assert sum(p["wavefronts"] < got for p, got in misses) == 1  # one over the measurement (by 2)


def test_per_width_and_against_the_old_rule():
    """The replay's table (benchmarks/results/h200/validate_matrix/CP_ASYNC_REPLAY.md)."""
    new, old = {4: 0, 8: 0, 16: 0}, {4: 0, 8: 0, 16: 0}
    for p in PROBES:
        a = analyze(p["addresses"], p["access_bytes"], "cp.async", global_addresses=p["global"])
        new[p["access_bytes"]] += (a.wavefronts, a.conflicts) == (p["wavefronts"], p["conflicts"])
        s = analyze(p["addresses"], p["access_bytes"], "store")  # the rule before: a store of that width
        old[p["access_bytes"]] += (s.wavefronts, s.conflicts) == (p["wavefronts"], p["conflicts"])
    assert new == {4: 48, 8: 41, 16: 39} and old == {4: 31, 8: 18, 16: 25}
    strict = [p for p in PROBES if all(g == lane * p["access_bytes"] for lane, g in enumerate(p["global"]))]
    assert (
        len(strict) == 99
    )  # lane l copies l * width; of the other 18 line-ordered, 14 permute inside a line


def _reference(shared: list, glob: list, width: int) -> int:
    """The rule as words, lane by lane: per store phase (``128 / width`` lanes), the lines in the order of
    their first lane; a line's k-th lane in a ``width``-byte bank slot goes to its k-th set; the line's sets
    go to the first run of wavefronts where no lane already there has a set lane's bank slot, or reads the
    same slot of another line."""
    per = 128 // width
    total = 0
    for p in range(32 // per):
        lanes = [(g // 128, g % 128 // width, s // width % per)
                 for s, g in list(zip(shared, glob))[p * per : (p + 1) * per] if s is not None]  # fmt: skip
        waves: list[list] = []
        for line in dict.fromkeys(ln for ln, _, _ in lanes):
            sets: list[list] = []
            for lane in (x for x in lanes if x[0] == line):
                k = sum(y[2] == lane[2] for grp in sets for y in grp)
                sets += [[]] * (k + 1 - len(sets))
                sets[k] = sets[k] + [lane]

            def clash(a, b):
                return a[2] == b[2] or (a[1] == b[1] and a[0] != b[0])

            t = 0
            while any(t + j < len(waves) and any(clash(a, b) for a in grp for b in waves[t + j])
                      for j, grp in enumerate(sets)):  # fmt: skip
                t += 1
            for j, grp in enumerate(sets):
                waves += [[]] * (t + j + 1 - len(waves))
                waves[t + j] = waves[t + j] + grp
        total += len(waves)
    return total


@given(st.sampled_from([4, 8, 16]), st.data())
@settings(max_examples=200, deadline=None)
def test_line_costs_equal_the_rule_written_out(width, data):
    shared = data.draw(st.lists(st.one_of(st.none(), st.integers(0, 2047)), min_size=32, max_size=32))
    shared = [None if a is None else a * width for a in shared]
    glob = data.draw(st.lists(st.integers(0, 2**50), min_size=32, max_size=32))
    glob = (
        [g * width for g in glob]
        if data.draw(st.booleans())
        else [g % 4 * 128 + lane * width for lane, g in enumerate(glob)]
    )
    assert analyze(shared, width, "cp.async", global_addresses=glob).wavefronts == _reference(
        shared, glob, width
    )


def test_a_large_batch_is_costed_in_chunks_like_single_rows():
    rng = np.random.default_rng(5)
    n = 20_000  # more than one chunk of model_cp_async._ROWS
    shared = rng.integers(0, 512, size=(n, 32)) * 16
    shared[rng.random((n, 32)) < 0.2] = -1
    glob = rng.integers(0, 64, size=(n, 32)) * 16
    wave, ideal = analyze_batch(shared, 16, "cp.async", global_addresses=glob)
    for i in (0, 1, 8191, 8192, 16_385, n - 1):
        a = analyze(shared[i], 16, "cp.async", global_addresses=glob[i])
        assert (wave[i], ideal[i]) == (a.wavefronts, a.ideal)


def test_by_hand_no_broadcast_and_one_group_per_global_line():
    one_word = [0] * 32
    assert analyze(one_word, 4, "store").wavefronts == 1
    assert analyze(one_word, 4, "cp.async").wavefronts == 32  # every lane's write counts
    row = [4 * lane for lane in range(32)]
    a = analyze(row, 4, "cp.async", global_addresses=[128 * lane for lane in range(32)])
    assert (a.wavefronts, a.ideal, a.conflicts) == (32, 1, 31) and a.phase_costs == (1,) * 32
    assert analyze(row, 4, "cp.async", global_addresses=row[::-1]).wavefronts == 1  # one line, any order
    # 16 bytes from 4 lines of 8 lanes: lanes 0-3 and 16-19 share line 0, and lane l writes unit-bank l % 8,
    # so each line writes 4 unit-banks twice
    glob = [32 * (lane % 16) + 16 * (lane // 16) for lane in range(32)]
    a = analyze([16 * lane for lane in range(32)], 16, "cp.async", global_addresses=glob)
    assert a.phase_costs == (2, 2, 2, 2) and (a.wavefronts, a.ideal) == (8, 4)


def test_inactive_lanes_need_no_source_and_an_empty_batch_is_empty():
    shared = [None if lane % 2 else 4 * lane for lane in range(32)]
    glob = [None if lane % 2 else 4 * lane for lane in range(32)]
    a = analyze(shared, 4, "cp.async", global_addresses=glob)
    assert (a.wavefronts, a.ideal) == (1, 1)
    wave, ideal = analyze_batch(
        np.zeros((0, 32), dtype=np.int64), 4, "cp.async", global_addresses=np.zeros((0, 32), dtype=np.int64)
    )
    assert wave.shape == ideal.shape == (0,)
    wave, ideal = analyze_batch(np.full((2, 32), -1), 8, "cp.async", global_addresses=np.full((2, 32), -1))
    assert wave.tolist() == ideal.tolist() == [0, 0]


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: analyze([0] * 32, 4, "store", global_addresses=[0] * 32), "only ops 'cp.async' and"),
        (
            lambda: analyze([0] * 32, 4, "cp.async", global_addresses=[0] * 31),
            "has 31 entries; each row needs one entry per lane",
        ),
        (
            lambda: analyze([0] * 32, 8, "cp.async", global_addresses=[4] + [0] * 31),
            "lane 0 source 4 is not aligned",
        ),
        (
            lambda: analyze([0] * 32, 4, "cp.async", global_addresses=[None] + [0] * 31),
            "lane 0 has no source \\(None or -1\\) but copies to shared address 0",
        ),
        (lambda: analyze([0] * 32, 4, "cp.async", global_addresses="0"), "global_addresses"),
        (lambda: analyze([0] * 32, 4, "cp.async", global_addresses=[0.5] * 32), "lane 0 is 0.5"),
        (lambda: analyze([2] * 32, 4, "cp.async", global_addresses=[0] * 32), "not aligned to the 4-byte"),
        (
            lambda: analyze_batch(
                np.zeros((2, 32), dtype=np.int64),
                4,
                "cp.async",
                global_addresses=np.zeros((3, 32), dtype=np.int64),
            ),
            "does not match",
        ),
        (
            lambda: analyze_batch(
                np.zeros((2, 32), dtype=np.int64),
                4,
                "cp.async",
                global_addresses=np.full((2, 32), 2**64 - 1, dtype=np.uint64),
            ),
            "lane 0 address 18446744073709551615 is past 2",
        ),
    ],
)
def test_bad_global_addresses_say_what_is_wrong(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_lists_and_wide_integers_are_read_as_the_docstring_says():
    shared = np.full((2, 32), -1, dtype=np.int64)
    shared[:, 0] = 0
    nested = [[0] + [None] * 31, [128] + [None] * 31]  # None: no source, in a 2-D list too
    assert analyze_batch(shared, 4, "cp.async", global_addresses=nested)[0].tolist() == [1, 1]
    empty = np.zeros((0, 32), dtype=np.int64)
    assert analyze_batch(empty, 4, "cp.async", global_addresses=[])[0].shape == (0,)
    wide = np.full((2, 32), 2**64 - 1, dtype=np.uint64)  # a uint64 -1 on lanes that do not copy
    wide[:, 0] = 256
    assert analyze_batch(shared, 4, "cp.async", global_addresses=wide)[0].tolist() == [1, 1]
    wide[1, 0] = 2**63
    with pytest.raises(ValueError, match="row 1 lane 0 address 9223372036854775808 is past 2"):
        analyze_batch(shared, 4, "cp.async", global_addresses=wide)
    with pytest.raises(ValueError, match="lane 3 address 18446744073709551616 is outside"):
        analyze([0] * 32, 4, "cp.async", global_addresses=[0, 0, 0, 2**64] + [0] * 28)
    with pytest.raises(ValueError, match="row 1 is not a row"):
        analyze_batch(shared, 4, "cp.async", global_addresses=[[0] * 32, 5])


def test_a_dict_or_set_is_not_taken_for_its_keys():
    for bad in ({i: 16 * i for i in range(32)}, set(range(32))):
        with pytest.raises(ValueError, match="expected integer byte addresses"):
            analyze([0] * 32, 4, "cp.async", global_addresses=bad)


def test_op_status_of_a_form_points_at_the_op():
    with pytest.raises(ValueError, match="use 'cp.async' \\(the .ca rule\\) or 'cp.async.cg'"):
        autopad.model.op_status("cp.async.ca")
    assert "252 targeted probes" in autopad.model.op_status("cp.async.cg")  # .cg has its own op


def test_a_batch_error_names_the_row():
    glob = np.zeros((3, 32), dtype=np.int64)
    glob[2, 5] = 6
    with pytest.raises(ValueError, match="row 2 lane 5 source 6"):
        analyze_batch(np.zeros((3, 32), dtype=np.int64), 4, "cp.async", global_addresses=glob)


@given(
    st.sampled_from([4, 8, 16]),
    st.lists(st.one_of(st.none(), st.integers(0, 511)), min_size=32, max_size=32),
    st.integers(0, 1000),
)
@settings(max_examples=150, deadline=None)
def test_a_line_ordered_source_is_the_plain_rule_and_batch_equals_single(width, slots, base_line):
    shared = [None if s is None else s * width for s in slots]
    ordered = [base_line * 128 + lane * width for lane in range(32)]
    plain = analyze(shared, width, "cp.async")
    lined = analyze(shared, width, "cp.async", global_addresses=ordered)
    assert (lined.wavefronts, lined.ideal) == (plain.wavefronts, plain.ideal)
    assert lined.phase_costs == tuple(c for c in plain.phase_costs if c)  # lines with a copying lane only
    shuffled = list(reversed(ordered))
    rows = np.array([[-1 if s is None else s for s in shared]] * 2, dtype=np.int64)
    wave, ideal = analyze_batch(rows, width, "cp.async", global_addresses=np.array([ordered, shuffled]))
    assert wave[0] == plain.wavefronts
    assert wave[1] == analyze(shared, width, "cp.async", global_addresses=shuffled).wavefronts
    assert wave[1] >= max(plain.phase_costs)  # a permutation can regroup the lanes, not cost nothing


def test_the_status_names_what_is_and_is_not_measured():
    status = autopad.model.op_status("cp.async")
    assert "128 agree" in status and "all 971 targeted" in status and "cp.async.cg has its own op" in status


def test_line_ordered_by_hand():
    lanes = range(32)
    assert line_ordered([4 * n for n in lanes], [4 * n for n in lanes], 4)
    assert line_ordered([4 * n for n in lanes], [4 * (31 - n) for n in lanes], 4)  # inside one line
    assert line_ordered([16 * n for n in lanes], [16 * (31 - n) for n in lanes], 16)  # lines reversed
    assert not line_ordered([16 * n for n in lanes], [128 * n for n in lanes], 16)  # a phase over 8 lines
    assert not line_ordered([16 * n for n in lanes], [16 * (n % 8) for n in lanes], 16)  # 4 phases, 1 line
    assert line_ordered([None] * 32, [None] * 32, 8)


def test_the_validate_report_splits_cp_async_by_source_order():
    from autopad.validate_report import compare

    probes = [
        {
            "op": "cp.async",
            "form": "cp.async.ca",
            **{k: p[k] for k in ("access_bytes", "name", "addresses", "global")},
        }
        for p in PROBES
    ]
    report = compare(probes, [(p["wavefronts"], p["conflicts"]) for p in PROBES])
    groups = {(g["op"], g["access_bytes"]): (g["agree"], g["probes"]) for g in report["groups"]}
    assert groups[("cp.async.ca line-ordered", 16)][0] == groups[("cp.async.ca line-ordered", 16)][1]
    assert sum(a for a, _ in groups.values()) == 128 and sum(n for _, n in groups.values()) == 144
    assert sum(n for (o, _), (_, n) in groups.items() if o.endswith("line-ordered")) == 117
    assert {r["source_order"] for r in report["disagreements"]} == {"permuted"}


def test_held_out_probes_of_2026_12_05_agree_wherever_each_store_phase_copies_from_a_line_of_its_own():
    """Run 157's seed 1 (benchmarks/results/h200/2026-12-05): 60 random probes per form, drawn after the
    rule was fitted. Every line-ordered ``.ca`` probe agrees (199); of the 53 permuted ones 19 (12 under the
    rule before the line packing), and most misses cost more than predicted."""
    path = Path(__file__).parent.parent / "benchmarks/results/h200/2026-12-05/run157/seed1/validate_ncu.json"
    held, agree, below, permuted = 0, 0, 0, 0
    for r in json.loads(path.read_text())["rows"]:
        if r["form"] != "cp.async.ca":
            continue
        a = analyze(r["addresses"], r["access_bytes"], "cp.async", global_addresses=r["global"])
        assert r["measured_wavefronts"] - a.ideal == r["measured_conflicts"]
        if line_ordered(r["addresses"], r["global"], r["access_bytes"]):
            held += 1
            agree += a.wavefronts == r["measured_wavefronts"]
        else:  # permuted across lines: 19 of 53 agree; 29 cost more than predicted, 5 less
            below += a.wavefronts > r["measured_wavefronts"]
            permuted += a.wavefronts == r["measured_wavefronts"]
    assert (held, agree, permuted, below) == (199, 199, 19, 5)


def test_the_line_packing_predicts_every_targeted_probe_of_run_187():
    """H100 run 187 (2026-12-06, benchmarks/probe_cp_async_ca.py): 971 probes of two or more lanes from
    different lines, taken after the line packing was written down (twenty-sixth session) and before it was
    adopted: every one agrees (the rule before it, grouping by line alone, 567). Two lines at one slot
    clash, at two slots share a wavefront; store phases never share one."""
    import csv
    import sys

    root = Path(__file__).parent.parent
    sys.path.insert(0, str(root / "benchmarks"))
    import probe_cp_async_ca as pca

    rows = root / "benchmarks/results/h100/2026-12-06/run187/ca/ca_probes.csv"
    measured = {r["name"]: int(r["measured_wavefronts"]) for r in csv.DictReader(rows.open())}
    probes = pca.probes()
    assert len(probes) == len(measured) == 971
    for w in (4, 8, 16):
        ps = [p for p in probes if p["access_bytes"] == w]
        shared = np.array([[-1 if a is None else a for a in p["addresses"]] for p in ps], dtype=np.int64)
        wave, _ = analyze_batch(shared, w, "cp.async", global_addresses=np.array([p["global"] for p in ps]))
        assert wave.tolist() == [measured[p["name"]] for p in ps]
    by = {p["name"]: p for p in probes}
    assert measured["w16-x2-gb0-r0u5"] == 2 and measured["w16-x2-gb3-r0u5"] == 1  # one slot of two lines
    assert measured["w8-klinek-k8"] == 1 and measured["w8-kline0-k8"] == 8
    a = analyze(
        by["w8-mod7-phase0"]["addresses"], 8, "cp.async", global_addresses=by["w8-mod7-phase0"]["global"]
    )
    assert a.wavefronts == 3 and a.phase_costs == (2, 2)  # two lines of 2 each, packed into 3


def test_held_out_probes_of_run_181_agree_wherever_each_store_phase_copies_from_a_line_of_its_own():
    """H100 run 181 (2026-12-05), ``autopad validate`` seed 2, drawn after the line packing was written down:
    293 of 293 line-ordered probes agree, 23 of 79 permuted (16 under the rule before it); the mean absolute
    error on the permuted ones 1.57 wavefronts (2.66 before)."""
    path = (
        Path(__file__).parent.parent
        / "benchmarks/results/h100/2026-12-05/run181/validate_seed2/validate_ncu.json"
    )
    lo = agree = perm = pagree = 0
    err = []
    for r in json.loads(path.read_text())["rows"]:
        if r["form"] != "cp.async.ca":
            continue
        got = analyze(r["addresses"], r["access_bytes"], "cp.async", global_addresses=r["global"]).wavefronts
        if line_ordered(r["addresses"], r["global"], r["access_bytes"]):
            lo, agree = lo + 1, agree + (got == r["measured_wavefronts"])
        else:
            perm, pagree = perm + 1, pagree + (got == r["measured_wavefronts"])
            err.append(abs(got - r["measured_wavefronts"]))
    assert (lo, agree, perm, pagree) == (293, 293, 79, 23)
    assert round(sum(err) / len(err), 2) == 1.57


def test_the_compiled_packing_gives_the_numpy_paths_answers(monkeypatch):
    pytest.importorskip("numba")
    import autopad.model_cp_async as ca

    rng = np.random.default_rng(11)
    batches = []
    for w in (4, 8, 16):
        for span, lines in ((2, 1), (16, 2), (64, 4), (3072, 8), (48 * 1024 // w, 64)):
            n = 3000
            shared = rng.integers(0, min(span, 48 * 1024 // w), (n, 32)) * w
            shared[rng.random((n, 32)) < 0.15] = -1
            glob = rng.integers(0, lines * 128 // w, (n, 32)) * w + (rng.integers(0, 1 << 30, (n, 1)) << 7)
            batches.append((w, shared.astype(np.int64), glob.astype(np.int64)))
        ps = [p for p in PROBES if p["access_bytes"] == w]  # the recorded probes too
        shared = np.array([[-1 if a is None else a for a in p["addresses"]] for p in ps], dtype=np.int64)
        batches.append((w, shared, np.array([p["global"] for p in ps], dtype=np.int64)))
    for w, shared, glob in batches:
        monkeypatch.setenv("AUTOPAD_MODEL_BACKEND", "numpy")
        want = analyze_batch(shared, w, "cp.async", global_addresses=glob)
        monkeypatch.setenv("AUTOPAD_MODEL_BACKEND", "numba")
        got = analyze_batch(shared, w, "cp.async", global_addresses=glob)
        assert (got[0] == want[0]).all() and (got[1] == want[1]).all()
    assert ca._packer(1) is not None  # numba forced: any phase to pack takes the kernel
    monkeypatch.setenv("AUTOPAD_MODEL_BACKEND", "auto")
    assert ca._packer(ca.PACK_NUMPY_BELOW - 1) is None and ca._packer(ca.PACK_NUMPY_BELOW) is not None
    monkeypatch.setenv("AUTOPAD_MODEL_BACKEND", "numpy")
    assert ca._packer(10**6) is None
