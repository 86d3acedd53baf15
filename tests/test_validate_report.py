"""Tests for autopad/validate_report.py: the agreement report with fake measurements (moved from
tests/test_validate.py)."""

from __future__ import annotations

import json
import os

from validate_fixtures import FIXTURE

from autopad import validate_probes as vp
from autopad import validate_report as vr


# ------------------------------------------------------------------------------------------- report
def test_compare_reports_agreement_and_disagreement(tmp_path):
    probes = [{**p, "source": "generated"} for p in vp.generate_probes(seed=0, n_random=0)[:40]]
    pred = vp.predict(probes)
    measured: list = list(pred)
    measured[5] = (pred[5][0] + 1, pred[5][1] + 1)  # one disagreement
    measured[7] = None  # one not measured
    rep = vr.compare(probes, measured)
    s = rep["summary"]
    assert (s["probes"], s["measured"], s["agree"], s["disagree"], s["not_measured"]) == (40, 39, 38, 1, 1)
    [d] = rep["disagreements"]
    assert d["name"] == probes[5]["name"] and d["measured_wavefronts"] == pred[5][0] + 1
    assert d["addresses"] == probes[5]["addresses"]
    jpath, cpath = vr.write_report(rep, tmp_path, "validate_ncu")
    assert json.loads(jpath.read_text())["summary"]["disagree"] == 1
    lines = cpath.read_text().splitlines()
    assert len(lines) == 41 and lines[0].startswith("source,op,access_bytes,name")
    vr.print_report(rep, file=open(os.devnull, "w"))


def test_compare_fixture_rows_flag_changed_values():
    probes = json.loads(FIXTURE.read_text())["probes"][:5]
    probes = [{**p, "source": "fixture"} for p in probes]
    measured = [(p["wavefronts"], p["bank_conflicts"]) for p in probes]
    measured[0] = (measured[0][0] + 2, measured[0][1] + 2)
    rep = vr.compare(probes, measured)
    assert rep["summary"]["fixture_changed"] == 1
    assert rep["summary"]["disagree"] == 1
