"""Why some fp32 VEC 1 transpose tiles run slower than the model's DRAM floor: chosen configurations of the
CUDA transpose, timed and (under ``ncu``) counted, side by side on a few shapes.

The model-only picks of the fp32 transpose on shapes measured for the purpose (H200 run 165: 6144 x 3072,
6145 x 3073, 3 x 2049 x 4095) are VEC 1 tiles predicted at the DRAM floor that measured 1.13-1.21x the best
of their samples, and the measured order among those tiles follows the tile and the thread count (128 x 128
tiles and 128-thread blocks slow on aligned rows, 512-thread blocks fast on misaligned ones) where the
model sees one DRAM time. This script times a fixed set of vector-path VEC 1 configurations (PAD 1, GROUP
64) and two vector tiles on each shape (CUDA events around 10 back-to-back launches, median of ``--reps``
after warm-ups, each output checked against torch), and with ``--once`` launches each exactly once so
that ``ncu`` can count what each moved: DRAM bytes read and written, L2 sectors, instructions, occupancy.
Usage on a GPU machine::

    python benchmarks/profile_transpose_tiles.py --out times.csv
    ncu --csv --kernel-name transpose_kernel --metrics gpu__time_duration.sum,dram__bytes_read.sum,... \\
        python benchmarks/profile_transpose_tiles.py --once > ncu.csv

Each launch prints one ``LAUNCH i shape key`` line (stderr) in launch order, which is ncu's row order.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy

SHAPES: list[tuple[int, ...]] = [(6144, 3072), (6145, 3073), (3, 2049, 4095)]
_BASE = {"GROUP": 64, "PAD": 1, "READOUT": 0, "SCALAR_EDGE": 0, "SW_MAX_PHASE": 1, "SW_PER_PHASE": 1,
         "SW_VEC": 1, "VEC": 1}  # fmt: skip
# (TILE_M, TILE_N, THREADS) of the VEC 1 tiles
TILES = [(128, 128, 256), (128, 128, 512), (128, 64, 128), (128, 64, 256), (128, 64, 512), (64, 128, 128),
         (64, 128, 256), (64, 128, 512), (64, 64, 256), (64, 64, 512), (64, 32, 128), (64, 32, 256),
         (128, 32, 128), (128, 32, 512), (32, 128, 256)]  # fmt: skip
# two vector tiles the samples measured among their fastest (run 165: 6144 x 3072's best, a VEC 4 one)
VECTOR = [
    {"GROUP": 16, "PAD": 0, "READOUT": 0, "SCALAR_EDGE": 0, "SW_MAX_PHASE": 32, "SW_PER_PHASE": 1,
     "SW_VEC": 2, "THREADS": 512, "TILE_M": 64, "TILE_N": 64, "VEC": 2},
    {"GROUP": 1, "PAD": 0, "READOUT": 0, "SCALAR_EDGE": 1, "SW_MAX_PHASE": 8, "SW_PER_PHASE": 8,
     "SW_VEC": 4, "THREADS": 128, "TILE_M": 64, "TILE_N": 64, "VEC": 4},
]  # fmt: skip


BATCH = 10  # launches per timing


def configurations() -> list[dict[str, int]]:
    """The VEC 1 tiles on the common layout, then the vector tiles."""
    return [dict(_BASE, TILE_M=m, TILE_N=n, THREADS=t) for m, n, t in TILES] + [dict(c) for c in VECTOR]


def key(c: dict[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(c.items()))


def timed(go: Callable[..., None], call: tuple, reps: int, batch: int = BATCH) -> tuple[str, str]:
    """(median, interquartile range) in ms, as text, of ``reps`` timings of ``go(*call)``: each the mean of
    ``batch`` back-to-back calls between two CUDA events. One launch between two events would also time
    the host's work before it (H100 run 166 read 95 us where ncu read 55). Both profile scripts use it."""
    import torch

    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(batch):
            go(*call)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / batch)
    q = statistics.quantiles(times, n=4)
    return f"{statistics.median(times):.6f}", f"{q[2] - q[0]:.6f}"


def write_times(path: str, rows: Sequence[dict[str, Any]]) -> None:
    """The timing rows as CSV (shape, key, legal, correct, ms, spread_ms, why)."""
    fields = ["shape", "key", "legal", "correct", "ms", "spread_ms", "why"]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fields)
        w.writeheader()
        w.writerows(rows)


def planned_profile_args(doc: str, reps: int, argv: Sequence[str] | None) -> argparse.Namespace:
    """The options of a profile script that times a fixed plan of launches (--out, --reps, --once,
    --dry-run), ``doc``'s first line its description; --reps below 2 is refused (the spread needs two)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", help="CSV of the timings (shape, key, ms, spread_ms, legal, correct)")
    ap.add_argument("--reps", type=int, default=reps)
    ap.add_argument("--once", action="store_true", help="launch each configuration once (for ncu)")
    ap.add_argument("--dry-run", action="store_true", help="print the plan (no GPU needed)")
    args = ap.parse_args(argv)
    if args.reps < 2:
        ap.error(f"--reps {args.reps}: the spread needs at least 2 timings")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="CSV of the timings (shape, key, ms, spread_ms, legal, correct)")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--once", action="store_true", help="launch each legal configuration once (for ncu)")
    args = ap.parse_args(argv)
    if args.reps < 2:
        ap.error(f"--reps {args.reps}: the spread needs at least 2 timings")

    import torch

    from autopad.kernels_registry import builtin_spec

    spec = builtin_spec("transpose", "cuda")
    rows = []
    launch = 0
    for shape in SHAPES:
        x = torch.randn(shape, device="cuda", dtype=torch.float32)
        ref = x.transpose(-1, -2).contiguous()
        for c in configurations():
            ok = spec.legal(c, shape, "float32")
            if not ok:
                rows.append({"shape": "x".join(map(str, shape)), "key": key(c), "legal": 0, "why": str(ok)})
                continue
            built = spec.build(c, "float32")
            out = torch.empty_like(ref)
            if args.once:
                print(f"LAUNCH {launch} {'x'.join(map(str, shape))} {key(c)}", file=sys.stderr, flush=True)
                spec.run(built, x, out)
                torch.cuda.synchronize()
                launch += 1
                continue
            for _ in range(3):
                spec.run(built, x, out)
            torch.cuda.synchronize()
            correct = bool(torch.equal(out, ref))
            # each timing is the mean of BATCH back-to-back launches through the launcher users' calls take
            # (fixed grid and arguments; ``timed``)
            go = spec.launcher(built, shape, "float32")
            ms, spread = timed(go, ((x,), out), args.reps)
            name = "x".join(map(str, shape))
            rows.append({"shape": name, "key": key(c), "legal": 1, "correct": int(correct), "ms": ms,
                         "spread_ms": spread})  # fmt: skip
            print(f"{rows[-1]['shape']:12s} {rows[-1]['ms']} ok={correct} {key(c)}", flush=True)
    if args.out and not args.once:
        write_times(args.out, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
