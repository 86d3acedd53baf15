"""How well the recorded measurements agree with themselves, beside the model: the report's noise section.
``repeats`` pairs every candidate measured twice (a shape recorded in two runs; a final round against its
exhaustive pass, ``FINAL_REPS`` timings each, read by ``_final_rounds``), ``noise_figures`` gives each
shape's noise ceiling of Spearman (``noise_ceiling``) beside the model's, and ``noise_md`` writes the
section. ``_rho`` is the rank correlation the ceiling is taken with and model_only_report.py's ``figures``
scores the model with, one function for both so that the two are the same statistic.

Why a module of its own: the noise ceiling reads the measurements' spread, not the model; it changes with the
harness's timing (repeats, final rounds) and the ceiling's method, not with the predictor or the scoring.
model_only_report.py re-exports these names.
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import noise_ceiling as noise
import numpy as np
from model_only_shapes import RUNS, Shape


def _rho(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman with average ranks for ties (vectorised; agrees with autopad.validate.spearman)."""

    def ranks(v: np.ndarray) -> np.ndarray:
        _, inv, cnt = np.unique(v, return_inverse=True, return_counts=True)
        ends = np.cumsum(cnt)
        return ((ends - cnt + 1 + ends) / 2.0)[inv.ravel()]

    a, b = ranks(x), ranks(y)
    a, b = a - a.mean(), b - b.mean()
    den = math.sqrt(float((a * a).sum() * (b * b).sum()))
    return float((a * b).sum() / den) if den else 0.0


FINAL_REPS = 40  # the final round's timings per candidate (tuner_quality.py)


def _final_rounds(d: Path) -> dict[tuple[str, str], dict[str, tuple[float, float]]]:
    """The final rounds' re-timings: {(run, name): {key: (ms, iqr)}}."""
    out: dict[tuple[str, str], dict[str, tuple[float, float]]] = defaultdict(dict)
    for run in RUNS:
        p = d / f"{run}_quality_final.csv"
        if not p.is_file():
            continue
        with open(p, newline="") as f:
            for r in csv.DictReader(f):
                if r["correct"] == "1" and r["ms"]:
                    name = f"{r['kernel']} [{r['backend']}] {r['dtype']} {r['shape']}"
                    out[(run, name)][r["key"]] = (float(r["ms"]), float(r["spread_ms"] or "nan"))
    return out


def noise_figures(
    shapes: Sequence[Shape], rows: Sequence[dict[str, Any]], inflate: float = 1.0
) -> list[dict[str, Any]]:
    """Per shape: the median relative IQR, the share of pairs within noise and the noise ceiling of
    Spearman (``noise_ceiling``; also with the standard errors times ``inflate``), beside the model's
    Spearman from ``rows`` (``figures``' answers)."""
    got = {(x["run"], x["family"], x["shape"]): x for x in rows}
    out = []
    for s in shapes:
        if s.iqr is None:
            continue
        se = noise.median_se(s.iqr)
        x = got[(s.run, s.family, s.shape)]
        out.append({
            "run": s.run, "family": s.family, "shape": s.shape, "spearman": x["spearman"],
            "rel_iqr": float(np.nanmedian(s.iqr / s.ms)),
            "pairs_within_noise": noise.pairs_within_noise(s.ms, se),
            "noise_ceiling": noise.ceiling(s.ms, se, _rho),
            "noise_ceiling_inflated": noise.ceiling(s.ms, se * inflate, _rho),
        })  # fmt: skip
    return out


def repeats(shapes: Sequence[Shape], d: Path, apart: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """Every candidate measured twice: a shape recorded in two runs, and each final round against its
    exhaustive pass. Two runs of which only one is in ``apart`` (today's studies, ``--current``, beside a
    sample of another day) are not paired: they would count a day-to-day change as timing noise."""
    out = []
    by = defaultdict(list)
    for s in shapes:
        by[s.name].append(s)
    for name, ss in by.items():
        for a, b in zip(ss, ss[1:]):
            if a.iqr is None or b.iqr is None or (a.run in apart) != (b.run in apart):
                continue
            at = {k: i for i, k in enumerate(a.keys)}
            ib = [i for i, k in enumerate(b.keys) if k in at]
            if len(ib) < 2:  # the space's constants changed between the runs: no candidate in common
                continue
            ia = [at[b.keys[i]] for i in ib]
            r = noise.retest(a.ms[ia], a.iqr[ia], b.ms[ib], b.iqr[ib], noise.REPS, _rho)
            out.append({"what": f"{name}: {a.run} against {b.run} (every candidate)", **r})
    final = _final_rounds(d)
    for s in shapes:
        fin = final.get((s.run, s.name))
        if not fin or s.iqr is None:
            continue
        idx = [i for i, k in enumerate(s.keys) if k in fin]
        fm = np.array([fin[s.keys[i]][0] for i in idx])
        fq = np.array([fin[s.keys[i]][1] for i in idx])
        r = noise.retest(s.ms[idx], s.iqr[idx], fm, fq, FINAL_REPS, _rho)
        out.append({"what": f"{s.run} {s.name}: final round against the exhaustive pass", **r})
    return out


def noise_md(
    shapes: Sequence[Shape], rows: Sequence[dict[str, Any]], d: Path, apart: frozenset[str] = frozenset()
) -> str:
    """The report's noise section: repeats, the per-shape ceiling and a per-family summary."""
    md = ["\n## Noise ceiling: how well the measurements agree with themselves\n\n", noise.__doc__.split(
        "\n\n", 1)[1].strip() + "\n\n"]  # fmt: skip
    rep = repeats(shapes, d, apart)
    md.append(
        "### Repeats\n\n| what | candidates | Spearman | log-ratio spread (robust sd) | the IQRs predict | "
        "beyond 5% |\n| --- | ---: | ---: | ---: | ---: | ---: |\n"
    )
    md += [
        f"| {r['what']} | {r['n']} | {r['spearman']:.3f} | {r['log_ratio_sd']:.4f} | "
        f"{r['iqr_predicted_sd']:.4f} | {r['beyond_5pct']} |\n"
        for r in rep
    ]
    k = noise.inflation(rep)
    nf = noise_figures(shapes, rows, k)
    md.append(f"\n### Per shape\n\nInflated: every standard error times {k:.2f}, the largest ratio of "
              "observed to IQR-predicted spread of the repeats above.\n\n" + noise.table(nf))  # fmt: skip
    fam: dict[str, list] = defaultdict(list)
    for x in nf:
        fam[x["family"]].append(x)
    md.append(
        "\n| family | noise ceiling min / median | inflated min / median | model Spearman min / median |\n"
        "| --- | ---: | ---: | ---: |\n"
    )
    for name, xs in [*sorted(fam.items()), ("all", nf)]:
        c = [x["noise_ceiling"] for x in xs]
        ci = [x["noise_ceiling_inflated"] for x in xs]
        r = [x["spearman"] for x in xs]
        md.append(f"| {name} | {min(c):.3f} / {np.median(c):.3f} | {min(ci):.3f} / {np.median(ci):.3f} | "
                  f"{min(r):.2f} / {np.median(r):.2f} |\n")  # fmt: skip
    return "".join(md)
