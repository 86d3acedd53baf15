"""How fast the analytical model scores warp instructions (target: >= 1,000,000 per second on 2 cores).

The tuner scores every candidate layout under every instruction of a kernel's access pattern, so the model
must be cheap enough that scoring never dominates. For each access width and op this times
``autopad.analyze_batch`` on ``--instructions`` random warp instructions (byte addresses aligned to the
width in a 48 KiB tile, a quarter of them with lanes paired on one address so wide loads take the merge
path, 5% inactive lanes), after a warm-up, and reports the median of ``--repeat`` runs. Results go to
stdout and to benchmarks/results/model_speed.csv.

    python benchmarks/bench_model_speed.py                 # the full run (about a minute on 2 cores)
    python benchmarks/bench_model_speed.py -n 100000 --repeat 1 --out /tmp/speed.csv
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

import autopad

CASES = [("load", w) for w in (1, 2, 4, 8, 16)] + [("store", w) for w in (1, 2, 4, 8, 16)]
CASES += [("atomic", 4), ("atomic", 8)]
TARGET = 1_000_000
SPAN = 48 * 1024
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "model_speed.csv"
FIELDS = ["op", "access_bytes", "instructions", "seconds", "instructions_per_second", "machine", "date"]


def machine() -> str:
    """nproc, Python and numpy versions: what the figure depends on."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"nproc={cores} python={platform.python_version()} numpy={np.__version__}"


def random_instructions(n: int, width: int, seed: int) -> np.ndarray:
    """(n, 32) byte addresses aligned to ``width``; a quarter lane-paired, 5% of lanes inactive (-1)."""
    rng = np.random.default_rng(seed)
    addr = rng.integers(0, SPAN // width, size=(n, 32), dtype=np.int64) * width
    paired = rng.random(n) < 0.25
    addr[paired] = addr[paired][:, np.arange(32) & ~1]
    addr[rng.random((n, 32)) < 0.05] = -1
    return addr


def time_case(op: str, width: int, n: int, repeat: int) -> tuple[float, np.ndarray]:
    """Median seconds of ``repeat`` runs of analyze_batch over n instructions, after a warm-up."""
    addr = random_instructions(n, width, seed=width * 7 + len(op))
    autopad.analyze_batch(addr[: min(n, 100_000)], width, op)  # warm-up: caches, thread pool, page faults
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        wave, ideal = autopad.analyze_batch(addr, width, op)
        times.append(time.perf_counter() - start)
    assert wave.shape == (n,) and (wave >= ideal).all()
    return statistics.median(times), wave


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "-n", "--instructions", type=int, default=1_000_000, help="warp instructions per case"
    )
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per case; the median is reported")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="CSV to write")
    parser.add_argument("--strict", action="store_true", help=f"exit 1 if any case is below {TARGET:,}/s")
    args = parser.parse_args(argv)

    when = datetime.now(timezone.utc).isoformat(timespec="minutes")
    host = machine()
    print(f"autopad {autopad.__version__} model speed, {args.instructions:,} instructions per case ({host})")
    print(f"{'op':<7} {'bytes':>5} {'seconds':>9} {'instr/s':>12}  mean wavefronts")
    rows = []
    for op, width in CASES:
        seconds, wave = time_case(op, width, args.instructions, args.repeat)
        rate = args.instructions / seconds
        print(f"{op:<7} {width:>5} {seconds:>9.3f} {rate:>12,.0f}  {wave.mean():.2f}")
        rows.append(
            {
                "op": op,
                "access_bytes": width,
                "instructions": args.instructions,
                "seconds": f"{seconds:.4f}",
                "instructions_per_second": f"{rate:.0f}",
                "machine": host,
                "date": when,
            }
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    slowest = min(rows, key=lambda r: float(r["instructions_per_second"]))
    rate = float(slowest["instructions_per_second"])
    verdict = "met" if rate >= TARGET else "NOT met"
    print(
        f"slowest: {slowest['op']} {slowest['access_bytes']} B at {rate:,.0f} instructions/s; "
        f"target {TARGET:,}/s {verdict}; wrote {args.out}"
    )
    return 1 if args.strict and rate < TARGET else 0


if __name__ == "__main__":
    sys.exit(main())
