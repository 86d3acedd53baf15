"""What the Gluon transpose's small tiles cost: 32 x 32 and 32 x 64 tiles on 4 and 8 warps (4-16 elements a
thread) beside 64 x 64 and 128 x 64, timed and (under ``ncu``) counted.

Why: on the H200's eleven whole-space studies (run 212) the builds whose threads hold 4 elements (32 x 32 on
8 warps) ran 0.6-1.1 faster in log than predicted (int8 at [3, 1500, 2222]: 18.5 us measured where the model
ranks them with builds three times slower), and those of 8 elements 0.1-0.8 faster; the model's L2 stream,
the output stores' sectors and the sectors two blocks share (``transpose_model.store_sectors``,
``shared_sectors``), bounds them. This counts what those stores move through L1, L2 and DRAM, beside the
time, for the fastest layout of each tile in the H100 studies of the same shapes (runs 202, 206). Usage::

    python benchmarks/profile_gluon_transpose_small.py --out times.csv
    ncu --csv --kernel-name transpose_gluon --metrics gpu__time_duration.sum,... \\
        python benchmarks/profile_gluon_transpose_small.py --once > ncu.csv

Each launch prints one ``LAUNCH i shape dtype key`` line (stderr) in launch order, which is ncu's row order.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy
sys.path.insert(0, str(ROOT / "benchmarks"))

from profile_gluon_transpose_stores import run_plan, study_best  # noqa: E402
from profile_transpose_tiles import planned_profile_args  # noqa: E402

# (study run, dtype, shape): int8 and fp16 with output rows off the sector grid
CASES: list[tuple[str, str, tuple[int, ...]]] = [
    ("run206", "int8", (3, 1500, 2222)),
    ("run202", "float16", (4097, 8191)),
]
BMS, BNS, VECS, WARPS = (32, 64, 128), (32, 64), (1, 4), (4, 8)


def plan() -> list[tuple[str, tuple[int, ...], dict[str, int]]]:
    """(dtype, shape, configuration) in launch order: the study's fastest layout of each tile."""
    out = []
    for run, dtype, shape in CASES:
        for c in study_best(run, dtype, shape, BMS, BNS, VECS, WARPS).values():
            out.append((dtype, shape, c))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    return run_plan(plan(), planned_profile_args(__doc__, 30, argv))


if __name__ == "__main__":
    sys.exit(main())
