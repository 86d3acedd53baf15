"""What the Triton GEMM's PATH 1 costs in 16 bits where a row stride is not a multiple of 16 elements:
chosen builds timed and (under ``ncu``) counted with an operand loaded element by element.

Why: on rows Triton cannot prove 16-byte aligned, PATH 1 loads that operand with one ``ld.global.b16`` an
element (a warp reads 32 consecutive elements of a row, 64 bytes), stores it to one shared buffer and
waits for it every k-step (kernels/triton/matmul_model.py, ``path1_elementwise``). The predictor queues an
SM's resident blocks for that round trip (``latency_phases``); its delay and its stations are what the
bf16 studies (H100 runs 192-200, H200 run 212) disagreed with: the builds of BK 32 ran faster than
predicted and those of BK 128 slower, as if the round trip were shorter than the DRAM latency and the
element-wise bytes themselves the station. This counts, per build, the L2 and L1 throughput, the issue
activity and the warps' stalls, at 1024x5002x2048 (B element-wise: N odd), 2500x1800x1199 (both
operands) and 1024x5008x2048 (both operands pipelined, the control). Usage on a GPU machine::

    python benchmarks/profile_path1_elementwise.py --out times.csv
    ncu --csv --kernel-name matmul_tl --metrics gpu__time_duration.sum,... \\
        python benchmarks/profile_path1_elementwise.py --once > ncu.csv

Each launch prints one ``LAUNCH i shape key`` line (stderr) in launch order, which is ncu's row order.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy
sys.path.insert(0, str(ROOT / "benchmarks"))

from profile_tf32_path1 import plan, run_plan  # noqa: E402
from profile_transpose_tiles import planned_profile_args  # noqa: E402

SHAPES = [(1024, 5002, 2048), (2500, 1800, 1199), (1024, 5008, 2048)]
# (BM, BN, BK, STAGES, WARPS): the studies' fastest builds, the largest residuals of both signs, one to
# five blocks an SM
BUILDS = [
    (128, 64, 64, 3, 8),
    (128, 64, 32, 3, 8),
    (128, 64, 128, 3, 4),
    (64, 128, 32, 3, 4),
    (64, 128, 64, 3, 4),
    (128, 128, 64, 3, 4),
    (128, 128, 128, 3, 8),
    (64, 64, 32, 3, 4),
    (64, 256, 32, 3, 8),
    (64, 256, 32, 2, 8),
]


def main(argv: Sequence[str] | None = None) -> int:
    return run_plan(plan(SHAPES, BUILDS), "bfloat16", planned_profile_args(__doc__, 20, argv))


if __name__ == "__main__":
    sys.exit(main())
