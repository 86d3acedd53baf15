"""Model-only figures of two profiles of the model on every sampled or exhaustive study a card timed.

    python benchmarks/arch_profile_compare.py                      # h100 against sm_90 on the H100's rows
    python benchmarks/arch_profile_compare.py --profile h100 --against sm_90 --rows benchmarks/results/h100

What it is for: a card's own profile (``autopad/arch.py``: ``h100`` is sm_90 with an H100's measured DRAM
and cuBLAS rates) is worth shipping only if it ranks that card's measurements better than the profile it
replaces there. For each configuration-shape of every ``*quality_rows*.csv.gz`` under ``--rows`` (scored with
today's specs and constants, as ``model_only_report.py`` scores them), the model-only pick over the
measured best and Spearman's rank correlation under each profile, then a summary: picks within 10% and 2%,
geometric mean, worst, Spearman mean and min, and how many shapes sit under the 0.8 bar. Rows whose
constants today's spec no longer has are skipped and named. CPU only; about 30 s for the H100's 177.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
import model_only_report as mor  # noqa: E402

from autopad.arch import get_arch  # noqa: E402


def compare(rows: Path, profile: str, against: str) -> tuple[list[str], dict[str, list[dict]]]:
    """One line per configuration-shape (picks and Spearman under ``against`` -> ``profile``) and every
    shape's figures under each."""
    a, b = get_arch(against), get_arch(profile)
    lines, out = [], {against: [], profile: []}
    for f in sorted(rows.rglob("*quality_rows*.csv.gz")):
        key = str(f.relative_to(rows).parent)
        try:
            shapes = mor.load_shapes({key: f}, None)
        except Exception as exc:  # a file of constants since renamed: said, not fatal
            lines.append(f"{key}: skipped ({type(exc).__name__}: {str(exc)[:80]})")
            continue
        for s in shapes:
            x, y = mor.figures(s, mor.predicted(s, arch=a)), mor.figures(s, mor.predicted(s, arch=b))
            out[against].append(x)
            out[profile].append(y)
            lines.append(_line(x, y))
    return lines, out


def _line(x: dict, y: dict) -> str:
    """One configuration-shape's figures under the two profiles (``figures`` rows of the same shape)."""
    return (
        f"{x['run']} | {x['family']} | {x['shape']} | "
        f"{x['pick_over_best']:.3f} -> {y['pick_over_best']:.3f} | {x['spearman']:.4f} -> {y['spearman']:.4f}"
    )


def summary(figs: Sequence[dict]) -> str:
    """Picks within 10% / 2%, geometric mean, worst; Spearman mean, min and shapes under 0.8."""
    p = np.array([f["pick_over_best"] for f in figs])
    r = np.array([f["spearman"] for f in figs])
    return (
        f"{len(p)} shapes: within 10% {int((p <= 1.10).sum())}, within 2% {int((p <= 1.02).sum())}, "
        f"geometric mean {np.exp(np.log(p).mean()):.4f}, worst {p.max():.3f}; Spearman mean {r.mean():.3f}, "
        f"min {r.min():.3f}, under 0.8 in {int((r < 0.8).sum())}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="h100", help="the card's own profile (default h100)")
    ap.add_argument("--against", default="sm_90", help="the profile it would replace (default sm_90)")
    ap.add_argument("--rows", default=str(ROOT / "benchmarks" / "results" / "h100"))
    args = ap.parse_args(argv)
    for name in (args.profile, args.against):
        try:
            get_arch(name)
        except ValueError as err:
            ap.error(str(err))
    lines, out = compare(Path(args.rows), args.profile, args.against)
    print("study | family | shape | pick / best | Spearman")
    print("\n".join(lines))
    for name in (args.against, args.profile):
        print(f"{name}: {summary(out[name])}")
    pairs = zip(out[args.against], out[args.profile])
    crossed = [_line(x, y) for x, y in pairs if (x["spearman"] >= 0.8) != (y["spearman"] >= 0.8)]
    print(f"across the 0.8 bar ({len(crossed)}):")
    print("\n".join(crossed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
