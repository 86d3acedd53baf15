"""Does a transpose's time depend on where its buffers lie, and does the worker time every candidate on the
same ones?

Why: on the H200 an fp64 16384² transpose took 1.10 or 1.14 ms according to which of five separate 2 GiB
allocations held its output, whatever its constants and for `tl.trans` as much (runs 82-84 of 2026-12-03),
and an exhaustive study that allocated afresh per candidate found one candidate in three fast (run 81). The
worker now runs all candidates of a job on the job's first allocations (``bench_local.keep_allocation``).

Two parts, both with the tuner's timer (``bench_timing.benchmark``: L2 flushed, GPU spin, median):
1. ``--segments`` S separate input allocations of the shape and S separate output allocations (2 S in all;
   run 83 used one pool of S as both); the CUDA transpose under each ``--constants``, a plain ``tl.trans``
   64 x 64 kernel and a copy, timed for every (input, output) pair, each output poisoned and checked against
   torch first. A kernel whose time moves between pairs depends on placement.
2. The first ``--constants`` measured ``--repeat`` times as separate candidates of one job through the
   worker's loop (``bench_local.measure_local``). On shared allocations the repeats agree within the noise;
   with allocations rotating per candidate they split into the placements' speeds (only if part 1 found a
   placement that moves the kernel: there is no control run on rotating allocations, and the worker does
   not report its pointers).

    python3 benchmarks/bench_placement.py --out /tmp/placement               # fp64 16384², two picks
    python3 benchmarks/bench_placement.py --shape 8192x8192 --dtype float32 --segments 3 --out /tmp/p
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# the op's fp64 16384² pick (runs 75, 78) and the exhaustive study's fastest (run 81)
DEFAULT_CONSTANTS = (
    "GROUP=1,PAD=1,READOUT=0,SCALAR_EDGE=1,SW_MAX_PHASE=1,SW_PER_PHASE=1,SW_VEC=1,THREADS=128,TILE_M=64,"
    "TILE_N=32,VEC=1",
    "GROUP=1,PAD=4,READOUT=0,SCALAR_EDGE=1,SW_MAX_PHASE=1,SW_PER_PHASE=1,SW_VEC=1,THREADS=256,TILE_M=64,"
    "TILE_N=32,VEC=1",
)


def parse_shape(text: str) -> tuple[int, int]:
    """``"MxN"`` -> (M, N), both positive."""
    parts = text.lower().split("x")
    if len(parts) != 2 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise argparse.ArgumentTypeError(f"shape {text!r}: give MxN with two positive ints, e.g. 16384x16384")
    return int(parts[0]), int(parts[1])


def parse_constants(text: str) -> dict[str, int]:
    """``"K=V,K=V"`` -> {K: V}: every item a name and an int."""
    out: dict[str, int] = {}
    for item in text.split(","):
        name, eq, value = item.strip().partition("=")
        if not eq or not name or not value.lstrip("-").isdigit():
            raise argparse.ArgumentTypeError(f"constants {text!r}: item {item!r} is not NAME=INT")
        out[name] = int(value)
    return out


def key(c: dict[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(c.items()))


def main(argv: Sequence[str] | None = None) -> int:
    from autopad.kernels.cuda import transpose as T

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", type=parse_shape, default=(16384, 16384))
    ap.add_argument("--dtype", choices=T.DTYPES, default="float64")
    ap.add_argument("--segments", type=int, choices=range(2, 9), default=5, metavar="2..8")
    ap.add_argument("--constants", type=parse_constants, action="append", help="K=V,...; repeatable")
    ap.add_argument("--repeat", type=int, default=6, help="copies of the first constants in one job (part 2)")
    ap.add_argument("--reps", type=int, default=10, help="timed runs a pair (part 1)")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    shape, dtype = args.shape, args.dtype
    if args.repeat < 2 or args.reps < 1:
        ap.error(
            f"--repeat {args.repeat} / --reps {args.reps}: part 2 needs at least 2 repeats, part 1 1 rep"
        )
    picks = args.constants or [parse_constants(c) for c in DEFAULT_CONSTANTS]
    for c in picks:
        ok = T.SPEC.legal(c, shape, dtype)
        if not ok:
            print(f"constants {key(c)}: not legal for {dtype} {shape}: {ok.reason}", file=sys.stderr)
            return 2

    import torch

    if not torch.cuda.is_available():
        print("bench_placement: needs an NVIDIA GPU (torch.cuda.is_available() is False)", file=sys.stderr)
        return 2
    tdtype = getattr(torch, dtype)
    m, n = shape
    need = 2 * args.segments * m * n * tdtype.itemsize  # S inputs and S outputs
    free, _ = torch.cuda.mem_get_info()
    if need > 0.8 * free:
        print(
            f"bench_placement: {2 * args.segments} allocations need {need / 2**30:.1f} GiB, the GPU has "
            f"{free / 2**30:.1f} GiB free; use fewer --segments or a smaller --shape",
            file=sys.stderr,
        )
        return 2

    import bench_ops

    from autopad.bench import BenchJob, measure_local, spec_ref
    from autopad.bench_timing import benchmark
    from autopad.kernels_registry import builtin_spec

    args.out.mkdir(parents=True, exist_ok=True)
    tl_kernel = bench_ops.triton_kernels()["transpose"]
    built = {f"cuda{i}": T.build(c, dtype) for i, c in enumerate(picks)}
    segs = [torch.empty(m, n, dtype=tdtype, device="cuda") for _ in range(args.segments)]
    outs = [torch.empty(n, m, dtype=tdtype, device="cuda") for _ in range(args.segments)]
    for s in segs:
        s.copy_(torch.randint(-100, 100, (m, n), device="cuda", dtype=torch.int8).float().to(tdtype))
    grid = (((m + 63) // 64) * ((n + 63) // 64), 1)
    times: dict[str, list[float]] = {}
    with open(args.out / "pairs.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["shape", "dtype", "kernel", "constants", "src", "dst", "ms", "spread_ms"])
        for i, x in enumerate(segs):
            for j, y in enumerate(outs):
                fns = {k: (lambda b=b, x=x, y=y: T.run(b, (x,), y)) for k, b in built.items()}
                fns["tl.trans64w4"] = lambda x=x, y=y: tl_kernel[grid](x, y, m, n, 64, 64, num_warps=4)
                fns["copy"] = lambda x=x, y=y: y.view(m, n).copy_(x)
                for name, fn in fns.items():
                    if name != "copy":
                        y.view(torch.uint8).fill_(0xA5)  # poisoned: the kernel must write every element
                        fn()
                        if not torch.equal(y.view(torch.uint8), x.t().contiguous().view(torch.uint8)):
                            print(f"{name} wrong on {dtype} {shape}", file=sys.stderr)
                            return 1
                    t = benchmark(fn, reps=args.reps, warmup=2)
                    times.setdefault(name, []).append(t.ms)
                    const = key(picks[int(name[4:])]) if name.startswith("cuda") else ""
                    w.writerow([f"{m}x{n}", dtype, name, const, i, j, f"{t.ms:.5f}", f"{t.spread_ms:.5f}"])
    print(f"part 1: {dtype} {m}x{n}, {args.segments} input x {args.segments} output allocations (ms)")
    for name, v in times.items():
        print(f"  {name:14s} {min(v):.4f} - {max(v):.4f}  ({max(v) / min(v):.3f}x)")
    del segs, outs, s, x, y, fns  # the loop variables and the lambdas hold the last tensors too
    torch.cuda.empty_cache()

    cands = tuple((f"repeat{i}", picks[0]) for i in range(args.repeat))
    job = BenchJob(spec_ref(builtin_spec("transpose", "cuda")), cands, shape, dtype, reps=30)
    got = [measurement for measurement, _fatal in measure_local(job)]
    bad = [g for g in got if not g.correct]
    if bad:
        print(f"part 2: {bad[0].key} failed: {bad[0].error}", file=sys.stderr)
        return 1
    ms = [g.ms for g in got]
    print(
        f"part 2: {key(picks[0])} as {args.repeat} candidates of one job: "
        + " ".join(f"{v:.4f}" for v in ms)
        + f"  ({max(ms) / min(ms):.3f}x)"
    )
    with open(args.out / "worker.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["candidate", "ms", "spread_ms"])
        w.writerows([g.key, f"{g.ms:.5f}", f"{g.spread_ms:.5f}"] for g in got)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
