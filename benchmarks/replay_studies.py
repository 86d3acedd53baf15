"""Replay the current tuner on every recorded exhaustive study: one table row per configuration-shape.

Why: a change to the tuner (its shortlist, twins, local search, tie-break) is first checked on the studies
where every candidate was measured, before any GPU A/B. This runs ``quality_report.py DIR --replay`` for each
``*quality_final.csv`` under benchmarks/results (its prefix, e.g. ``run1_``, passed on) and prints the rows
of their tables, each after the study it came from: kernel, dtype, shape, legal, failed, benchmarked (the
tuner's measurements), pick / best in the final round and against the exhaustive best, Spearman, the best's
model rank, top-1 / best, and how many candidates the tuner asked for that the study never measured.

    python benchmarks/replay_studies.py > /tmp/replays.txt     # about 35 s on 2 cores

(Two folders cannot be replayed and are reported on stderr: run 41's ``study`` (its rows file was cut short
on the device; ``quality_rows_recovered.csv.gz`` holds what was saved) and run 60's ``study`` (its final
round only). On 2026-12-06 the other studies gave 51 rows, 59 after runs 192-196.)
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def studies(root: Path = ROOT / "benchmarks" / "results") -> list[tuple[Path, str]]:
    """(folder, prefix) of every recorded study, in path order."""
    return [(f.parent, f.name[: -len("quality_final.csv")]) for f in sorted(root.rglob("*quality_final.csv"))]


def main() -> int:
    n = 0
    for folder, prefix in studies():
        done = subprocess.run(
            [sys.executable, str(ROOT / "benchmarks" / "quality_report.py"), str(folder), "--replay",
             "--prefix", prefix],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        rows = [ln for ln in done.stdout.splitlines() if ln.startswith("| ")]
        rows = [ln for ln in rows if not ln.startswith(("| kernel", "| ---"))]
        for ln in rows:
            print(f"{folder.relative_to(ROOT)}/{prefix} {ln}")
        n += len(rows)
        if done.returncode:
            print(f"{folder}: quality_report.py failed ({done.returncode})", file=sys.stderr)
    print(f"{n} configuration-shapes replayed", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
