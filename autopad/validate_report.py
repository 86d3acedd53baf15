"""The agreement report of ``autopad validate``: measured counters against the model, probe by probe.

What: ``compare`` (per probe: measured and predicted wavefronts and bank conflicts, agree or not; per
group: counts; the summary whose ``disagree`` makes the exit status), ``write_report`` (``<stem>.json`` and
``<stem>.csv``) and ``print_report`` (the summary, the groups, every disagreement with its addresses).

Why apart: the report is the same whoever measured (ncu, a test's fake); it needs the model's predictions
(validate_probes.py) and nothing of the GPU. Moved from autopad/validate.py unchanged; ``autopad.validate``
re-exports every name.
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from .model_cp_async import line_ordered
from .validate_probes import predict

__all__ = ["compare", "print_report", "write_report"]


# ------------------------------------------------------------------------------------------- report
def compare(
    probes: Sequence[dict], measured: Sequence[tuple[int | None, int | None] | None], arch: str = "sm_90"
) -> dict:
    """Probe-by-probe agreement of measured (wavefronts, conflicts) with the model.

    ``measured[i]`` is None where probe i was not measured. A probe agrees when both numbers equal the
    prediction. Returns ``{"summary", "groups", "disagreements", "rows"}``; ``summary["disagree"] > 0``
    is what makes the exit status 1.
    """
    pred = predict(probes, arch)
    rows, groups = [], {}
    measured = list(measured) + [None] * (len(probes) - len(measured))
    for p, m, (pw, pc) in zip(probes, measured, pred):
        src = p.get("source", "generated")
        form = p.get("form", p["op"])
        order = None
        if "global" in p:  # cp.async: is the source line-ordered (the plain rule's case) or permuted?
            order = (
                "line-ordered"
                if line_ordered(p["addresses"], p["global"], int(p["access_bytes"]))
                else "permuted"
            )
            form = f"{form} {order}"
        g = groups.setdefault((src, form, int(p["access_bytes"])), {"probes": 0, "agree": 0, "disagree": 0})
        mw, mc = (None, None) if m is None else m
        agree = None if mw is None else (mw == pw and mc == pc)
        g["probes"] += 1
        if agree is not None:
            g["agree" if agree else "disagree"] += 1
        row = {
            "source": src,
            "op": p["op"],
            "access_bytes": int(p["access_bytes"]),
            "name": p["name"],
            "active_lanes": sum(a is not None for a in p["addresses"]),
            "measured_wavefronts": mw,
            "measured_conflicts": mc,
            "predicted_wavefronts": pw,
            "predicted_conflicts": pc,
            "agree": agree,
            "addresses": list(p["addresses"]),
        }
        if "form" in p:  # ldmatrix/stmatrix/cp.async: the instruction, and where the numbers came from
            row["form"] = p["form"]
            row["metric"] = p.get("metric")
        if "global" in p:
            row["global"] = list(p["global"])
            row["source_order"] = order
        if "wavefronts" in p:  # a fixture probe: is the new measurement the old one?
            row["fixture_wavefronts"] = p["wavefronts"]
            row["fixture_conflicts"] = p.get("bank_conflicts")
        rows.append(row)
    checked = sum(r["agree"] is not None for r in rows)
    agree = sum(r["agree"] is True for r in rows)
    summary = {
        "probes": len(rows),
        "measured": checked,
        "agree": agree,
        "disagree": checked - agree,
        "not_measured": len(rows) - checked,
        "fixture_changed": sum(
            1
            for r in rows
            if "fixture_wavefronts" in r
            and r["measured_wavefronts"] is not None
            and r["measured_wavefronts"] != r["fixture_wavefronts"]
        ),
    }
    return {
        "summary": summary,
        "groups": [{"source": s, "op": o, "access_bytes": w, **v} for (s, o, w), v in sorted(groups.items())],
        "disagreements": [r for r in rows if r["agree"] is False],
        "rows": rows,
    }


def _addr_text(addresses: Sequence[int | None]) -> str:
    return " ".join("-" if a is None else str(a) for a in addresses)


def write_report(report: dict, out_dir: Path, stem: str) -> tuple[Path, Path]:
    """``<stem>.json`` (everything) and ``<stem>.csv`` (one row per probe) under ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    jpath, cpath = out_dir / f"{stem}.json", out_dir / f"{stem}.csv"
    jpath.write_text(json.dumps(report, indent=1) + "\n")
    rows = report.get("rows", [])
    fields: list[str] = []
    for r in rows:  # the union of the rows' keys (new-op rows carry form, metric, global), addresses last
        fields += [k for k in r if k not in fields and k != "addresses"]
    fields += ["addresses"] if rows else []
    with cpath.open("w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore", restval="")
        wr.writeheader()
        for r in rows:
            r = {**r, "addresses": _addr_text(r["addresses"])} if "addresses" in r else r
            wr.writerow({**r, "global": _addr_text(r["global"])} if "global" in r else r)
    return jpath, cpath


def print_report(report: dict, file: TextIO = sys.stdout) -> None:
    s = report["summary"]
    print(
        f"probes {s['probes']}, measured {s['measured']}, agree {s['agree']}, disagree {s['disagree']}, "
        f"not measured {s['not_measured']}, fixture values changed {s['fixture_changed']}",
        file=file,
    )
    for g in report["groups"]:
        print(
            f"  {g['source']:9s} {g['op']:6s} {g['access_bytes']:2d} B: {g['agree']:4d} agree, "
            f"{g['disagree']:3d} disagree of {g['probes']}",
            file=file,
        )
    for r in report["disagreements"]:
        print(
            f"DISAGREE {r['source']} {r['op']} {r['access_bytes']} B {r['name']}: measured "
            f"{r['measured_wavefronts']} wavefronts / {r['measured_conflicts']} conflicts, predicted "
            f"{r['predicted_wavefronts']} / {r['predicted_conflicts']}; "
            f"addresses {_addr_text(r['addresses'])}",
            file=file,
        )
