"""Turn the exhaustive tuner-quality measurements into the numbers the project promises, and a plot.

Reads what ``benchmarks/tuner_quality.py`` wrote on the GPU (``quality_rows.csv.gz``: every legal candidate
of every configuration and shape, measured; ``quality_final.csv``: the shortlist and the exhaustive pass's
ten fastest, re-timed together) and reports, per configuration and shape:

- the share of the legal space autopad benchmarks (its shortlist over the legal count; target <= 20%);
- its pick over the exhaustive best, both from the final round (one job, one GPU; target <= 1.02);
- Spearman's rank correlation of predicted time with measured time over every correct candidate;
- how deep into the model's order the exhaustive best sits, and the best within the model's top 1/6/20/100.

``--replay`` runs the current ``autopad.tune`` (model, shortlist, local search, tie-break) with a benchmarker
that answers from the recorded measurements, so a change to the model or the search is judged on the same
data without a GPU; the pick's figures then come from the exhaustive pass, or from the final round where
the study re-timed the candidate the tuner now picks. A study cut before its shape ended (its rows in
``quality_partial.csv.gz``, none in ``quality_rows.csv.gz``) is read from the partial rows, and says so: its
"best" is the best of the candidates it reached, in the model's order.

    python benchmarks/quality_report.py benchmarks/results/h200/quality [--replay] [--png] [--md FILE]
"""

from __future__ import annotations

import argparse
import csv
import gzip
import math
import sys
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy
from autopad.validate import spearman  # noqa: E402


def parse_shape(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split("x"))


def load_rows(path: Path) -> dict[tuple[str, str, str, str], list[dict[str, Any]]]:
    """Rows grouped by (kernel, backend, dtype, shape), in the model's order as recorded."""
    groups: dict[tuple[str, str, str, str], list[dict[str, Any]]] = defaultdict(list)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", newline="") as f:
        for r in csv.DictReader(f):
            r["predicted_us"] = float(r["predicted_us"])
            r["model_rank"] = int(r["model_rank"])
            r["in_shortlist"] = r["in_shortlist"] == "1"
            r["ms"] = float(r["ms"]) if r["ms"] else None
            r["correct"] = r["correct"] == "1"
            groups[(r["kernel"], r["backend"], r["dtype"], r["shape"])].append(r)
    for rows in groups.values():
        rows.sort(key=lambda r: r["model_rank"])
    return groups


def load_final(path: Path) -> dict[tuple[str, str, str, str], dict[str, float]]:
    out: dict[tuple[str, str, str, str], dict[str, float]] = defaultdict(dict)
    if not path.is_file():
        return out
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["correct"] == "1" and r["ms"]:
                out[(r["kernel"], r["backend"], r["dtype"], r["shape"])][r["key"]] = float(r["ms"])
    return out


def study_key(constants: dict[str, int], names: set[str], defaults: dict[str, int]) -> str | None:
    """A candidate's key in the study's terms: constants added to the spec since the study must sit at
    their default (the study measured the space of its day), and are left out; else None (unmeasured)."""
    if any(v != defaults.get(k) for k, v in constants.items() if k not in names):
        return None
    return ",".join(f"{k}={v}" for k, v in sorted(constants.items()) if k in names)


class ReplayBenchmarker:
    """Answers autopad.tune's benchmark jobs from the study's measurements instead of the GPU.

    The tuner under test is the real one (its shortlist, local search, re-timing and tie-break); only the
    timings are recorded ones. Candidates the study did not measure (constants added to the space since
    it ran, at other than their defaults) are left unanswered (unmeasured) and counted in ``unanswered``:
    a replay whose tuner asked for many of them searched a space the study did not cover, and its pick says
    little about today's tuner (run 1's histogram at 65,536 bins: 6 of its first 7 asked for 16-bit counters
    or privatisation, constants the study predates, so the search set out from the one default it found).
    """

    def __init__(self, rows: list[dict[str, Any]], defaults: dict[str, int] | None = None):
        self.table = {r["key"]: r for r in rows}
        self.names = {kv.split("=")[0] for kv in rows[0]["key"].split(",")} if rows else set()
        self.defaults = dict(defaults or {})
        self.asked: list[str] = []
        self.unanswered: list[str] = []

    def lookup(self, constants: dict[str, int]) -> tuple[str | None, dict[str, Any] | None]:
        """(the candidate's key in the study's terms, the study's row), or (None, None) if unmeasured."""
        key = ",".join(f"{k}={v}" for k, v in sorted(constants.items()))
        if key in self.table:
            return key, self.table[key]
        k = study_key(constants, self.names, self.defaults)
        return k, self.table.get(k) if k is not None else None

    def measure(self, job: Any) -> Any:
        from autopad.results import Measurement

        for key, constants in job.candidates:
            skey, r = self.lookup(constants)
            if r is None:
                self.unanswered.append(key)
                continue
            self.asked.append(skey)
            if r["correct"] and r["ms"]:
                yield Measurement(key, True, ms=r["ms"], spread_ms=0.0, runs=10)
            else:
                yield Measurement(key, False, error=r.get("error") or "failed in the study")


def replay(
    group: tuple[str, str, str, str], rows: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], str, int]:
    """Run the current autopad.tune on the recorded measurements; rows re-predicted, in the new model
    order, ``in_shortlist`` meaning "measured by the tuner"; the tuner's pick (in the study's terms); and
    how many candidates it asked for that the study never measured."""
    import autopad
    from autopad.tune import resolve

    kernel, backend, dtype, shape = group
    spec = resolve(kernel, backend)
    bench = ReplayBenchmarker(rows, getattr(spec, "DEFAULTS", None))
    dist = "uniform" if getattr(spec, "DISTS", None) else None
    res = autopad.tune(
        kernel,
        parse_shape(shape),
        dtype,
        backend=backend,
        cache=False,
        benchmarker=bench,
        dist=dist,
        progress=False,
    )
    asked = set(bench.asked)
    out = []
    for i, c in enumerate(res.candidates):
        skey, r = bench.lookup(c.constants)
        if r is not None:
            pred = c.prediction.seconds * 1e6
            out.append({**r, "predicted_us": pred, "model_rank": i, "in_shortlist": skey in asked})
    pick = bench.lookup(res.best.constants)
    return out, pick[0] or "(a candidate the study did not measure)", len(set(bench.unanswered))


def summarise(
    rows: list[dict[str, Any]], final: dict[str, float], pick_key: str | None = None
) -> dict[str, Any]:
    """The quality figures of one configuration and shape (see the module docstring). ``pick_key``: the
    tuner's own pick, where it is known (a replay); else the fastest shortlisted candidate."""
    ok = [r for r in rows if r["correct"] and r["ms"]]
    short = [r for r in rows if r["in_shortlist"]]
    s: dict[str, Any] = {
        "legal": len(rows),
        "correct": len(ok),
        "failed": sum(1 for r in rows if not r["correct"]),
        "shortlist": len(short),
        "share": len(short) / len(rows) if rows else math.nan,
    }
    if not ok:
        return s
    ex_best = min(ok, key=lambda r: r["ms"])
    short_ok = [r for r in short if r["correct"] and r["ms"]]
    s["best_key"] = ex_best["key"]
    s["best_ms_exhaustive"] = ex_best["ms"]
    if short_ok:
        pick = next((r for r in short_ok if r["key"] == pick_key), None) or min(
            short_ok, key=lambda r: r["ms"]
        )
        s["pick_key"] = pick["key"]
        s["pick_over_best_exhaustive"] = pick["ms"] / ex_best["ms"]
        # final round: the pick as the tuner makes it (fastest shortlisted), against the fastest re-timed
        fin_short = {k: v for k, v in final.items() if k in {r["key"] for r in short_ok}}
        if pick_key is not None:
            fin_short = {k: v for k, v in fin_short.items() if k == pick_key}
        if fin_short and final:
            fpick = min(fin_short, key=fin_short.get)
            s["pick_key"] = fpick
            s["pick_ms"] = fin_short[fpick]
            s["best_ms"] = min(final.values())
            s["pick_over_best"] = s["pick_ms"] / s["best_ms"]
    s["spearman"] = spearman([r["predicted_us"] for r in ok], [r["ms"] for r in ok])
    order = [r for r in rows if r["correct"] and r["ms"]]  # model order, correct only
    s["best_model_rank"] = next(i for i, r in enumerate(order) if r["key"] == ex_best["key"])
    for k in (1, 6, 20, 100):
        s[f"top{k}_over_best"] = min(r["ms"] for r in order[:k]) / ex_best["ms"]
    within = [i for i, r in enumerate(order) if r["ms"] <= 1.02 * ex_best["ms"]]
    s["first_within_2pct_rank"] = within[0] if within else None
    s["n_within_2pct"] = len(within)
    return s


def report(
    groups: dict[tuple[str, str, str, str], list[dict[str, Any]]],
    finals: dict[tuple[str, str, str, str], dict[str, float]],
    do_replay: bool = False,
) -> list[dict[str, Any]]:
    out = []
    for g, rows in groups.items():
        pick, extra = None, {}
        if do_replay:
            rows, pick, missing = replay(g, rows)
            extra = {"unanswered": missing}
        s = {**summarise(rows, finals.get(g, {}), pick), **extra}
        out.append({"kernel": g[0], "backend": g[1], "dtype": g[2], "shape": g[3], **s})
    return out


def _fmt(v: Any, spec: str = ".3f") -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return format(v, spec) if isinstance(v, float) else str(v)


def markdown(summaries: Iterable[dict[str, Any]]) -> str:
    """The table; a replay adds "not in study": candidates the tuner asked for that the study never
    measured (constants added since), which leave its pick there a statement about the study's coverage."""
    summaries = list(summaries)
    replayed = any("unanswered" in s for s in summaries)
    head = (
        "| kernel | dtype | shape | legal | failed | benchmarked | pick / best (final) | pick / best "
        "(exhaustive) | Spearman | best's model rank | top-1 / best |"
        + (" not in study |" if replayed else "")
        + "\n| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
        + (" ---: |" if replayed else "")
        + "\n"
    )
    lines = []
    for s in summaries:
        lines.append(
            f"| {s['kernel']} ({s['backend']}) | {s['dtype']} | {s['shape']} | {s['legal']} | "
            f"{s['failed']} | "
            f"{s['shortlist']} ({100 * s['share']:.2f}%) | {_fmt(s.get('pick_over_best'))} | "
            f"{_fmt(s.get('pick_over_best_exhaustive'))} | {_fmt(s.get('spearman'), '.2f')} | "
            f"{_fmt(s.get('best_model_rank'))} | {_fmt(s.get('top1_over_best'))} |"
            + (f" {_fmt(s.get('unanswered'))} |" if replayed else "")
        )
    return head + "\n".join(lines) + "\n"


def plot(groups: dict[tuple[str, str, str, str], list[dict[str, Any]]], path: Path) -> Path:
    """Predicted against measured time, one panel per configuration and shape; the shortlist in orange."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(groups)
    cols = min(3, n)
    nrows = -(-n // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(5 * cols, 4 * nrows), squeeze=False)
    for ax, (g, rows) in zip(axes.flat, groups.items()):
        ok = [r for r in rows if r["correct"] and r["ms"]]
        ax.scatter([r["predicted_us"] for r in ok], [r["ms"] for r in ok], s=3, alpha=0.3, label="legal")
        sh = [r for r in ok if r["in_shortlist"]]
        ax.scatter(
            [r["predicted_us"] for r in sh], [r["ms"] for r in sh], s=18, c="tab:orange", label="shortlist"
        )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{g[0]} {g[1]} {g[2]} {g[3]}", fontsize=9)
        ax.set_xlabel("predicted (us)")
        ax.set_ylabel("measured (ms)")
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", help="folder holding quality_rows.csv.gz and quality_final.csv")
    ap.add_argument("--replay", action="store_true", help="run the current tuner on the measurements")
    ap.add_argument("--png", action="store_true", help="write quality_scatter.png beside the CSVs")
    ap.add_argument("--md", help="also write the Markdown table to this file")
    ap.add_argument("--prefix", default="", help="file name prefix of the run (e.g. run1_)")
    args = ap.parse_args(argv)
    d = Path(args.dir)
    rows_path = d / f"{args.prefix}quality_rows.csv.gz"
    if not rows_path.is_file():
        print(
            f"quality_report: {rows_path} not found (run benchmarks/tuner_quality.py first)", file=sys.stderr
        )
        return 2
    groups = load_rows(rows_path)
    partial = d / f"{args.prefix}quality_partial.csv.gz"
    if not groups and partial.is_file():
        # a study cut before its shape ended (tuner_quality.py keeps the rows so far there): its "best" is the
        # best of the candidates it reached, in the model's order
        groups = load_rows(partial)
        n = sum(len(r) for r in groups.values())
        print(
            f"quality_report: {rows_path.name} holds no finished shape; reading the cut study's "
            f"{partial.name} ({n} rows: every best below is the best of those)",
            file=sys.stderr,
        )
    summaries = report(groups, load_final(d / f"{args.prefix}quality_final.csv"), args.replay)
    table = markdown(summaries)
    print(table)
    if args.md:
        Path(args.md).write_text(table)
    if args.png:
        print(f"wrote {plot(groups, d / f'{args.prefix}quality_scatter.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
