"""Which partial rounds of blocks cost a whole round: fixed transpose builds timed on a ladder of shapes whose
grids run from half a round of blocks to over three, in steps of about a twelfth of a round.

The predictor charges the memory streams (DRAM, L2) whole rounds (``wave_factor``: a grid of 2.1 rounds pays
3), and the arithmetic streams a last partial round at its own occupancy (``predict._tail_rounds``). Over the
recorded studies the Gluon transpose's residual follows the wave factor (fp32 2050x3333: tiles of 1.02 rounds
sit -0.2 in log under the model), but charging the memory streams' partial round at its share moved four
CUDA transpose picks 1.02-1.04 -> 1.14-1.28 of the best (quality/NOTES.md, thirty-fifth session): some
partial rounds do cost a whole one. This script measures the staircase directly: each build on shapes of N
columns and k tile rows (M = k TILE_M, so every block is a whole tile and the bytes grow with k), its time
against the rounds of blocks its grid runs (the model's resident blocks an SM). A build whose partial rounds
cost whole ones steps at every whole round; one whose blocks share the bandwidth rises in a line.

Each timing is the median of ``--reps`` means of 10 back-to-back launches that rotate over enough input and
output buffers (at least 256 MB in all) that no launch finds its input in L2. ``--as-studies`` times each
shape as ``tuner_quality.py``'s studies and ``autopad.tune`` time a candidate instead
(``autopad.bench_timing.benchmark``: one launch at a time, each behind a 256 MB L2 flush, which leaves L2
full of the flush's dirty lines, and a GPU spin; the median of 30): what the recorded studies' flips were
measured under. Every shape's output is first checked against torch. Usage on a GPU machine (one
CSV row a build and shape)::

    python benchmarks/profile_wave_tail.py --out tail.csv
    python benchmarks/profile_wave_tail.py --report tail.csv   # the staircase share of each build (no GPU)

The report fits each build's times as ``c0 + c_line x rounds + c_step x ceil(rounds)``: ``c_step / (c_line
+ c_step)`` is the share of a round's time that a partial round pays whole (0: the tail costs its share of
the work; 1: every partial round costs a whole one, as ``wave_factor`` charges).
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy
from profile_transpose_tiles import timed  # noqa: E402  (the timing the profile scripts share)

# (backend, dtype, N, constants): the builds whose tails the recorded studies disagree on (the CUDA ones in
# GROUP 1's row-major order, legal on a ladder's few tile rows, where the studies' picks walk GROUP 64)
_CUDA = {"GROUP": 1, "READOUT": 0, "SCALAR_EDGE": 0, "SW_MAX_PHASE": 1, "SW_PER_PHASE": 1, "SW_VEC": 1}


def _cuda(dtype: str, n: int, **c: int) -> tuple[str, str, int, dict[str, int]]:
    return ("cuda", dtype, n, {**_CUDA, **c})


def _gluon(**c: int) -> tuple[str, str, int, dict[str, int]]:
    return ("triton", "float32", 4096, {"SW_VEC": 1, "VEC": 1, **c})


# fmt: off
BUILDS: list[tuple[str, str, int, dict[str, int]]] = [
    # fp32 4096^2's flip (run 115): 128 x 128 VEC 1 at 512 threads, 3 blocks an SM, 2.59 rounds, ran 1.14x
    _cuda("float32", 4096, PAD=1, THREADS=512, TILE_M=128, TILE_N=128, VEC=1),
    _cuda("float32", 4096, PAD=1, THREADS=512, TILE_M=128, TILE_N=64, VEC=1),
    _cuda("float32", 4096, PAD=1, THREADS=256, TILE_M=64, TILE_N=64, VEC=1),
    # the best of run 115 (64 x 64 VEC 4 at 128 threads, 13 blocks an SM)
    _cuda("float32", 4096, PAD=0, SW_MAX_PHASE=4, SW_PER_PHASE=16, SW_VEC=4, THREADS=128, TILE_M=64,
          TILE_N=64, VEC=4),
    # fp16 4097x8191's flip (runs 34 and 46): 32 x 128 VEC 8 at 128 threads, and the study's best
    _cuda("float16", 8192, PAD=0, READOUT=1, SW_MAX_PHASE=8, SW_PER_PHASE=8, SW_VEC=8, THREADS=128, TILE_M=32,
          TILE_N=128, VEC=8),
    _cuda("float16", 8192, PAD=0, READOUT=1, SW_MAX_PHASE=16, SW_PER_PHASE=8, SW_VEC=8, THREADS=128,
          TILE_M=64, TILE_N=128, VEC=8),
    # the Gluon transpose's fp32 2050x3333 groups (run 206's fastest layout of each)
    _gluon(BM=64, BN=64, MAX_PHASE=16, PAD=0, PER_PHASE=2, WARPS=4),
    _gluon(BM=128, BN=128, MAX_PHASE=1, PAD=1, PER_PHASE=1, WARPS=4),
    _gluon(BM=32, BN=64, MAX_PHASE=16, PAD=0, PER_PHASE=4, SW_VEC=4, WARPS=8),
]
# fmt: on
SMS = 132  # H100 SXM and H200 alike
WAVES = [0.5 + i / 12 for i in range(34)]  # 0.5 .. 3.25 rounds
ROTATE_BYTES = 256 << 20
FIELDS = ["backend", "dtype", "key", "M", "N", "blocks", "resident", "waves", "ms", "spread_ms", "correct"]


def tile_rows(c: dict[str, int]) -> tuple[int, int]:
    """(rows, columns) of a build's tile, whichever backend's names it uses."""
    return (c["TILE_M"], c["TILE_N"]) if "TILE_M" in c else (c["BM"], c["BN"])


def resident(spec: Any, c: dict[str, int], shape: tuple[int, int], dtype: str) -> int:
    """Blocks an SM holds, as the model counts them (occupancy x the SM's 2,048 threads / the block's)."""
    from autopad.search import predict

    p = predict(spec, c, shape, dtype)
    threads = c.get("THREADS", 32 * c.get("WARPS", 4))
    return max(1, round(p.occupancy * 2048 / threads))


def ladder(spec: Any, c: dict[str, int], n: int, dtype: str) -> list[tuple[int, int]]:
    """(M, N) shapes of whole tiles whose grids run WAVES rounds (distinct tile-row counts)."""
    tm, tn = tile_rows(c)
    per_row = -(-n // tn)
    r = resident(spec, c, (tm * 64, n), dtype)  # a grid of many rounds: the SM's own limit
    ks = sorted({max(1, round(w * SMS * r / per_row)) for w in WAVES})
    return [(k * tm, n) for k in ks]


def rotating(go: Any, pairs: list[tuple[Any, Any]]) -> Any:
    """A call that launches ``go`` on the next (input, output) pair each time (``timed`` of
    profile_transpose_tiles.py times it)."""
    turn = [0]

    def call() -> None:
        x, out = pairs[turn[0] % len(pairs)]
        turn[0] += 1
        go((x,), out)

    return call


def report(path: str) -> list[dict[str, Any]]:
    """Per build of a ``--out`` CSV: rungs, resident blocks (the SM's limit), the fitted round time (us) and
    the share of it a partial round pays whole (``c_step / (c_line + c_step)``), and the fit's rms error in %
    of the mean."""
    import numpy as np

    groups: dict[tuple[str, str, str], list[dict[str, str]]] = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["correct"] == "1":
                groups.setdefault((row["backend"], row["dtype"], row["key"]), []).append(row)
    out = []
    for (backend, dtype, key), rows in groups.items():
        # rounds of the SM's own limit (the most resident blocks any rung has: a grid of less than a round
        # fills fewer slots)
        most = max(int(r["resident"]) for r in rows)
        w = np.array([int(r["blocks"]) / (SMS * most) for r in rows])
        t = np.array([float(r["ms"]) for r in rows]) * 1e3
        a = np.stack([np.ones_like(w), w, np.ceil(w - 1e-9)], axis=1)
        (c0, line, step), *_ = np.linalg.lstsq(a, t, rcond=None)
        rms = float(np.sqrt(np.mean((a @ np.array([c0, line, step]) - t) ** 2)) / t.mean() * 100)
        out.append({"backend": backend, "dtype": dtype, "key": key, "rungs": len(rows),
                    "resident": most, "round_us": float(line + step),
                    "step_share": float(step / (line + step)), "rms_pct": rms})  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="CSV: backend, dtype, key, M, N, blocks, resident, waves, ms")
    ap.add_argument("--report", help="a --out CSV: print each build's staircase share (no GPU)")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument(
        "--as-studies",
        action="store_true",
        help="time as the studies and autopad.tune do (bench_timing.benchmark: L2 flushed, one launch)",
    )
    ap.add_argument("--dry-run", action="store_true", help="print the plan (no GPU needed)")
    args = ap.parse_args(argv)
    if args.reps < 2:
        ap.error(f"--reps {args.reps}: the spread needs at least 2 timings")
    if args.report:
        for r in report(args.report):
            print(
                f"{r['backend']:6s} {r['dtype']:8s} R{r['resident']:<2d} rungs {r['rungs']:2d} round "
                f"{r['round_us']:6.1f} us  step share {r['step_share']:+.2f}  rms {r['rms_pct']:.1f}%  "
                f"{r['key']}"
            )
        return 0
    if not args.out and not args.dry_run:
        ap.error("--out (or --report, or --dry-run) is needed")
    from autopad.kernels_registry import builtin_spec

    plan = []
    for backend, dtype, n, c in BUILDS:
        spec = builtin_spec("transpose", backend)
        shapes = ladder(spec, c, n, dtype)
        plan.append((backend, dtype, c, spec, shapes))
        print(f"{backend} {dtype} {c}: {len(shapes)} shapes, M {shapes[0][0]}..{shapes[-1][0]} x {n}")
    if args.dry_run:
        return 0
    import torch

    from autopad.bench_timing import benchmark

    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, FIELDS)
        w.writeheader()
        for backend, dtype, c, spec, shapes in plan:
            key = ",".join(f"{k}={v}" for k, v in sorted(c.items()))
            built = spec.build(c, dtype)
            tm, tn = tile_rows(c)
            r = resident(spec, c, (tm * 64, shapes[0][1]), dtype)  # the SM's own limit, as the ladder's
            td = getattr(torch, dtype)
            for shape in shapes:
                ok = spec.legal(c, shape, dtype)
                if not ok:
                    print(f"  {shape}: not legal ({ok})", flush=True)
                    continue
                m, n = shape
                nbytes = 2 * m * n * td.itemsize
                copies = 1 if args.as_studies else max(1, math.ceil(ROTATE_BYTES / nbytes))
                pairs = [
                    (torch.randn(shape, device="cuda").to(td), torch.empty((n, m), device="cuda", dtype=td))
                    for _ in range(copies)
                ]
                x, out = pairs[0]
                spec.run(built, (x,), out)
                torch.cuda.synchronize()
                correct = bool(torch.equal(out, x.t()))
                go = spec.launcher(built, shape, dtype)
                for _ in range(3):
                    go((x,), out)
                if args.as_studies:
                    t = benchmark(rotating(go, pairs), reps=30)  # one pair: the same buffers
                    ms, spread = t.ms, t.spread_ms
                else:
                    ms, spread = (float(v) for v in timed(rotating(go, pairs), (), args.reps))
                blocks = -(-m // tm) * -(-n // tn)
                row = {"backend": backend, "dtype": dtype, "key": key, "M": m, "N": n, "blocks": blocks,
                       "resident": r, "waves": f"{blocks / (SMS * r):.4f}", "ms": f"{ms:.6f}",
                       "spread_ms": f"{spread:.6f}", "correct": int(correct)}  # fmt: skip
                w.writerow(row)
                f.flush()
                print(f"  {backend} {dtype} {tm}x{tn} M={m} waves={row['waves']} ms={ms:.4f} ok={correct}")
                del pairs, x, out
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
