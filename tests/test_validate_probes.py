"""Tests for autopad/validate_probes.py: the probes of ``autopad validate`` (loads, stores, atomics;
ldmatrix, stmatrix, cp.async) and the model's predictions for them (moved from tests/test_validate.py)."""

from __future__ import annotations

import json

from validate_fixtures import FIXTURE

from autopad import validate_kernels as vk
from autopad import validate_probes as vp


# ------------------------------------------------------------------------------------------- probes
def test_probe_counts_and_fields():
    probes = vp.generate_probes(seed=0, n_random=22)
    per_combo = len(probes) // len(vp.COMBOS)
    assert len(probes) == per_combo * len(vp.COMBOS)
    assert {(p["op"], p["access_bytes"]) for p in probes} == set(vp.COMBOS)
    assert {p["op"] for p in probes} == {"load", "store", "atomic"}
    assert {p["access_bytes"] for p in probes} == {1, 2, 4, 8, 16}
    assert len(vp.generate_probes(seed=0, n_random=0)) == len(probes) - 22
    names = [(p["op"], p["access_bytes"], p["name"]) for p in probes]
    assert len(names) == len(set(names)), "names are unique within an (op, width)"
    for p in probes:
        assert set(p) == {"op", "access_bytes", "name", "addresses"}
        assert len(p["addresses"]) == 32


def test_probe_addresses_aligned_and_inside_48k():
    for p in vp.generate_probes(seed=3, n_random=200):
        w = p["access_bytes"]
        for a in p["addresses"]:
            assert a is None or (isinstance(a, int) and a % w == 0 and 0 <= a <= 48 * 1024 - w), p


def test_probe_kinds_present():
    probes = vp.generate_probes(seed=0)
    names = {p["name"] for p in probes}
    for s in (0, 1, 2, 3, 4, 8, 16, 31, 32, 33, 64, 65):
        assert f"stride{s}+0" in names
    assert any(n.startswith("groups") for n in names)
    assert any(n.startswith("pair1") for n in names) and any(n.startswith("pair2") for n in names)
    assert any(n.startswith("rand") for n in names)
    inactive = [p for p in probes if any(a is None for a in p["addresses"])]
    assert len(inactive) > 50
    assert any(all(a is None for a in p["addresses"]) for p in probes)
    pair = next(p for p in probes if p["name"] == "pair1-s1" and p["access_bytes"] == 8)
    assert all(pair["addresses"][n] == pair["addresses"][n ^ 1] for n in range(32))


def test_probes_deterministic_for_a_seed():
    assert vp.generate_probes(seed=7) == vp.generate_probes(seed=7)
    assert vp.generate_probes(seed=7) != vp.generate_probes(seed=8)


def test_predict_matches_analyze():
    from autopad import analyze

    probes = vp.generate_probes(seed=1, n_random=33)
    for p, (wave, conf) in zip(probes, vp.predict(probes)):
        a = analyze(p["addresses"], p["access_bytes"], p["op"], global_addresses=p.get("global"))
        assert (wave, conf) == (a.wavefronts, a.conflicts), p["name"]


def test_model_reproduces_validate_fixture():
    """The probes the 2026-11-29 validation run found the model wrong on (see validate_notes.md)."""
    data = json.loads((FIXTURE.parent / "h200_validate_probes.json").read_text())
    probes = data["probes"]
    assert probes, "the fixture holds the disagreeing probes"
    got = vp.predict(probes)
    assert got == [(p["wavefronts"], p["bank_conflicts"]) for p in probes]


# ------------------------------------------------------------------------------- ldmatrix, stmatrix, cp.async
def test_new_probes_cover_every_form_with_valid_addresses():
    probes = vp.generate_new_probes(seed=0, n_random=30)
    forms = {(p["op"], p["access_bytes"], p["form"]) for p in probes}
    assert forms == set(vk.NEW_FORMS) and len(forms) == 16
    for form in vk.NEW_FORMS:
        mine = [p for p in probes if (p["op"], p["access_bytes"], p["form"]) == form]
        assert sum(p["name"].startswith("rand") for p in mine) == 30, form
        assert len({p["name"] for p in mine}) == len(mine), "names unique within a form"
        assert len(mine) >= 40
    for p in probes:
        w = p["access_bytes"]
        assert len(p["addresses"]) == 32
        assert all(a is None or (a % w == 0 and 0 <= a <= vk.SMEM_BYTES - w) for a in p["addresses"]), p
        if p["op"] == "cp.async":
            assert set(p) == {"op", "access_bytes", "name", "addresses", "form", "global"}
            assert all(g % w == 0 and 0 <= g <= vk.GLOBAL_BYTES - w for g in p["global"]), p
        else:
            assert set(p) == {"op", "access_bytes", "name", "addresses", "form"}
            assert None not in p["addresses"], "ldmatrix/stmatrix are warp-wide: every lane gives a row"
    assert vp.generate_new_probes(seed=4) == vp.generate_new_probes(seed=4)
    assert vp.generate_new_probes(seed=4) != vp.generate_new_probes(seed=5)
    assert {p["op"] for p in vp.generate_new_probes(0, 1, ["cp.async"])} == {"cp.async"}


def test_new_probes_structured_cases_predict_what_the_derived_rules_say():
    """The structured cases are the conflict degrees the rules predict: 1, 2, 4, 8 per matrix, broadcasts."""
    probes = vp.generate_new_probes(seed=0, n_random=0)
    pred = {(p["form"], p["name"]): wc for p, wc in zip(probes, vp.predict(probes)) if p["access_bytes"] >= 8}
    pred4 = {
        (p["form"], p["name"]): wc for p, wc in zip(probes, vp.predict(probes)) if p["access_bytes"] == 4
    }
    for k in (1, 2, 4):
        for op in (f"ldmatrix.x{k}", f"stmatrix.x{k}.trans"):
            assert pred[(op, "rows16")] == (k, 0)
            assert pred[(op, "pitch128")] == (8 * k, 7 * k)
            assert pred[(op, "pitch256")] == (8 * k, 7 * k)
            assert pred[(op, "pitch64")] == (4 * k, 3 * k)
            assert pred[(op, "pitch32")] == (2 * k, k)
            for free in ("pitch144", "pitch80", "swizzle", "bcast-matrix", "bcast-all", "bcast-pairs"):
                assert pred[(op, free)] == (k, 0), (op, free)
            if k < 4:
                assert pred[(op, "ignored-conflict")] == (k, 0), "lanes past the matrices are ignored"
    assert pred4[("cp.async.ca", "stride32")] == (32, 31)
    assert pred[("cp.async.ca", "stride32")] == (32, 28), "16 bytes: 4 phases of 8 lanes, each 8-way"
    # .cg: every chunk of a line scattered to its own row, a wavefront each; ncu counts no conflicts for it
    assert pred[("cp.async.cg", "stride32")] == (32, 0)
    assert pred[("cp.async.cg", "gperm-reverse")] == (4, 0)
    assert pred4[("cp.async.ca", "gperm-halves")] == pred4[("cp.async.ca", "stride1")] == (1, 0)
    # cp.async groups the lanes by global line and never broadcasts (model_cp_async.py; H200-measured)
    assert pred4[("cp.async.ca", "gperm-stride128")] == (32, 31), "32 lines of one lane each"
    assert pred4[("cp.async.ca", "stride0")] == (32, 31), "32 lanes into one word: no broadcast"


def test_predict_matches_analyze_for_new_probes():
    from autopad import analyze

    probes = vp.generate_new_probes(seed=2, n_random=2)
    for p, (wave, conf) in zip(probes, vp.predict(probes)):
        op = "cp.async.cg" if p["form"] == "cp.async.cg" else p["op"]  # .cg has its own rule
        a = analyze(p["addresses"], p["access_bytes"], op, global_addresses=p.get("global"))
        assert (wave, conf) == (a.wavefronts, a.conflicts), p["name"]


def test_seed_0_still_generates_every_recorded_cp_async_probe():
    """The cases added after the 2026-12-01 H200 run draw nothing from the generator, so seed 0 (the run's,
    every family) still gives each of the 144 recorded .ca probes (tests/fixtures/h200_cp_async_probes.json)
    with the same shared and global addresses."""
    import json
    from pathlib import Path

    fixture = json.loads((Path(__file__).parent / "fixtures" / "h200_cp_async_probes.json").read_text())
    made = {
        (p["access_bytes"], p["name"]): p for p in vp.generate_new_probes(0, 30) if p["form"] == "cp.async.ca"
    }
    for f in fixture["probes"]:
        p = made[(f["access_bytes"], f["name"])]
        assert (p["addresses"], p["global"]) == (f["addresses"], f["global"]), f["name"]
    new = {(w, name) for (w, name) in made} - {(f["access_bytes"], f["name"]) for f in fixture["probes"]}
    names = {
        f"{g}-{s}"
        for g in ("inline-reverse", "gperm-halves", "gperm-reverse")
        for s in ("stride2", "pair", "mod7")
    }
    assert new == {(w, n) for w in (8, 16) for n in names}, "9 new cases at 8 and 16 bytes, none at 4"
