"""ldmatrix / stmatrix against Nsight Compute: the model reproduces every probe measured on the H200.

536 single-instruction probes (x1/x2/x4, with and without .trans; conflict-free, 2-, 4- and 8-way, broadcast
rows, lanes the form ignores, and 30 random ones per form), measured by ``autopad validate --ops
ldmatrix,stmatrix`` on 2026-12-01 (benchmarks/results/h200/validate_matrix). All of them agree with the
model's rule: each matrix is one phase of 8 rows x 16 bytes, costed like the 8-lane phase of a 16-byte
load, with no pair merge.
"""

from __future__ import annotations

import json
from pathlib import Path

import autopad

FIXTURE = Path(__file__).parent / "fixtures" / "h200_matrix_probes.json"


def test_every_ldmatrix_and_stmatrix_probe_is_reproduced():
    data = json.loads(FIXTURE.read_text())
    probes = data["probes"]
    assert len(probes) == data["meta"]["count"] == 536
    wrong = []
    for p in probes:
        a = autopad.analyze(p["addresses"], access_bytes=p["access_bytes"], op=p["op"])
        if (a.wavefronts, a.conflicts) != (p["wavefronts"], p["conflicts"]):
            wrong.append((p["op"], p["name"], a.wavefronts, p["wavefronts"]))
    assert not wrong, wrong[:5]


def test_the_fixture_covers_every_form():
    forms = {p["op"] for p in json.loads(FIXTURE.read_text())["probes"]}
    want = {f"{b}.x{k}{t}" for b in ("ldmatrix", "stmatrix") for k in (1, 2, 4) for t in ("", ".trans")}
    assert forms == want
