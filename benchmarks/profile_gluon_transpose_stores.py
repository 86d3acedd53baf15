"""What the Gluon transpose's output stores cost off the 16-element grid: chosen launch configurations, timed
and (under ``ncu``) counted, side by side.

Why: the H100 whole-space studies of 2026-12-06 (runs 201-203) show the time of a transpose whose output
rows Triton cannot prove aligned rising with the tile's row length BM at every vector width, VEC 1 included
(4097 x 8191 fp16, VEC 1: BM 32 1.21-1.34x the best, BM 128 1.00-1.04x), where the model's count of the
sectors each warp store touches (``transpose_model.store_sectors``) is the same for every BM at VEC 1, and
rising with VEC less steeply at BM 128 than the count says. This script times each configuration (the
study's fastest layout for it, read from the committed rows) and with ``--once`` launches each exactly once
so that ``ncu`` can count what its stores moved: L1 and L2 store requests and sectors, DRAM bytes read and
written. Usage on a GPU machine::

    python benchmarks/profile_gluon_transpose_stores.py --out times.csv
    ncu --csv --kernel-name transpose_gluon --metrics gpu__time_duration.sum,dram__bytes_read.sum,... \\
        python benchmarks/profile_gluon_transpose_stores.py --once > ncu.csv

Each launch prints one ``LAUNCH i shape dtype key`` line (stderr) in launch order, which is ncu's row order.
"""

from __future__ import annotations

import csv
import gzip
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy
sys.path.insert(0, str(ROOT / "benchmarks"))

from profile_transpose_tiles import key, planned_profile_args, timed, write_times  # noqa: E402

STUDIES = ROOT / "benchmarks/results/h100/2026-12-06"
# (study run, dtype, shape): two shapes whose output rows are off the grid, one aligned control
CASES: list[tuple[str, str, tuple[int, ...]]] = [
    ("run202", "float16", (4097, 8191)),
    ("run203", "bfloat16", (2047, 3001)),
    ("run201", "float16", (8192, 8192)),
]
BMS, BN, VECS, WARPS = (32, 64, 128), 64, (1, 2, 4, 8), 4


def study_best(
    run: str,
    dtype: str,
    shape: tuple[int, ...],
    bms: tuple[int, ...] = BMS,
    bns: tuple[int, ...] = (BN,),
    vecs: tuple[int, ...] = VECS,
    warps: tuple[int, ...] = (WARPS,),
    studies: Path = STUDIES,
) -> dict[tuple[int, ...], dict[str, int]]:
    """The fastest measured candidate of each (BM, VEC) at BN 64 and 4 warps in the study's rows (of each
    (BM, BN, WARPS, VEC) among the given ones, where more than one BN or warp count is asked for)."""
    name = "x".join(map(str, shape))
    best: dict[tuple[int, int], tuple[float, dict[str, int]]] = {}
    with gzip.open(studies / run / "study/quality_rows.csv.gz", "rt") as f:
        for r in csv.DictReader(f):
            if r["dtype"] != dtype or r["shape"] != name or r["correct"] != "1" or not r["ms"]:
                continue
            c = {k: int(v) for k, v in (kv.split("=") for kv in r["key"].split(","))}
            if c["BN"] not in bns or c["WARPS"] not in warps or c["BM"] not in bms or c["VEC"] not in vecs:
                continue
            k = (c["BM"], c["BN"], c["WARPS"], c["VEC"])
            k = k if len(bns) + len(warps) > 2 else (c["BM"], c["VEC"])
            if k not in best or float(r["ms"]) < best[k][0]:
                best[k] = (float(r["ms"]), c)
    return {k: v[1] for k, v in sorted(best.items())}


def plan() -> list[tuple[str, tuple[int, ...], dict[str, int]]]:
    """(dtype, shape, configuration) in launch order."""
    out = []
    for run, dtype, shape in CASES:
        for c in study_best(run, dtype, shape).values():
            out.append((dtype, shape, c))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    return run_plan(plan(), planned_profile_args(__doc__, 30, argv))


def run_plan(todo: list[tuple[str, tuple[int, ...], dict[str, int]]], args) -> int:
    """Time (or with ``args.once`` launch once, for ncu) each (dtype, shape, configuration) of ``todo`` as the
    Gluon transpose, each result checked against torch; shared by profile_gluon_transpose_small.py."""
    if args.dry_run:
        for dtype, shape, c in todo:
            print(dtype, "x".join(map(str, shape)), key(c))
        return 0

    import torch

    from autopad.kernels_registry import builtin_spec

    spec = builtin_spec("transpose", "triton")
    rows, launch = [], 0
    for dtype, shape, c in todo:
        name = f"{dtype}/{'x'.join(map(str, shape))}"
        x = (torch.randn(shape, device="cuda") * 4).to(getattr(torch, dtype))
        out = torch.empty((*shape[:-2], shape[-1], shape[-2]), dtype=x.dtype, device="cuda")
        built = spec.build(c, dtype)
        go = spec.launcher(built, shape, dtype)
        if args.once:
            print(f"LAUNCH {launch} {name} {key(c)}", file=sys.stderr, flush=True)
            go((x,), out)
            torch.cuda.synchronize()
            launch += 1
            continue
        for _ in range(3):
            go((x,), out)
        torch.cuda.synchronize()
        correct = bool(torch.equal(out, x.transpose(-1, -2).contiguous()))
        ms, spread = timed(go, ((x,), out), args.reps)
        rows.append({"shape": name, "key": key(c), "legal": 1, "correct": int(correct), "ms": ms,
                     "spread_ms": spread})  # fmt: skip
        print(f"{name:22s} {ms} ok={correct} {key(c)}", flush=True)
    if args.out and not args.once:
        write_times(args.out, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
