"""The round trip of one global load, by a pointer chase: a single thread follows a random cycle through a
buffer, each load's address the value the previous one returned, so the loads cannot overlap.

Why: the predictor's queue for the Triton GEMM's PATH 1 (an operand loaded element by element, every
k-step waiting for it) takes ``Arch.l2_latency_s`` as its delay where those loads hit L2, 0.3 us, chosen on
the bf16 studies (autopad/arch.py). This measures what one load that hits L2 costs by itself, and one that
misses to DRAM, for comparison with that figure and with ``Arch.dram_latency_s`` (1 us, the loaded DRAM
latency the bytes in flight must cover): the chase is unloaded, so it is a lower bound of both.

How: a Triton program of one warp (lane 0's load is the chain; the other lanes repeat it) walks ``steps``
loads of a random cyclic permutation of 128-byte lines over a buffer of ``size`` bytes: ``.cg`` loads
(cached in L2, not L1) and plain ones (``.ca``: L1 first; a buffer over L1's 256 KB misses it mostly).
Buffers of 1-32 MB fit in L2 (50 MB), and each is walked once whole before it is timed, so L2 holds it;
256 MB does not fit (its walk would take seconds, so it is not warmed), and each timed walk starts at
its own random line so that it does not find an earlier walk's lines in L2. The time per load is the slope
between ``steps`` and ``2 steps`` loads (the launch and the first loads cancel), each the median of
``--reps`` CUDA-event timings.

    python benchmarks/probe_l2_latency.py --out l2_latency.csv

Prints one line a case and writes ``size_bytes, cache, steps, ns_per_load, cycles_per_load`` (cycles at the
H200's maximum SM clock, 1,980 MHz, unless ``--clock-mhz`` says otherwise).
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Sequence

SIZES = (1 << 20, 4 << 20, 16 << 20, 32 << 20, 256 << 20)
LINE = 128


def _kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def chase(nxt, out, start, steps, CG: tl.constexpr):
        idx = tl.zeros([32], dtype=tl.int64) + start  # every lane follows the same chain: one line a load
        for _ in range(0, steps, 1):
            if CG:
                idx = tl.load(nxt + idx, cache_modifier=".cg").to(tl.int64)
            else:
                idx = tl.load(nxt + idx).to(tl.int64)
        tl.store(out + tl.arange(0, 32), idx)

    return chase


def _cycle(size: int, seed: int):
    """int32 words: at the first word of each 128-byte line, the word index of the next line of one random
    cycle through all of the buffer's lines."""
    import torch

    lines = size // LINE
    words = LINE // 4
    g = torch.Generator().manual_seed(seed)
    order = torch.randperm(lines, generator=g)
    nxt = torch.zeros(lines * words, dtype=torch.int32)
    nxt[order * words] = (torch.roll(order, -1) * words).to(torch.int32)
    return nxt.cuda()


def _time(fn, reps: int) -> float:
    """Median ns of ``fn(rep)`` over ``reps`` calls."""
    import torch

    times = []
    for rep in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(rep)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e6)  # ns
    times.sort()
    return times[len(times) // 2]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", help="CSV file to write")
    p.add_argument("--steps", type=int, default=20000)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--clock-mhz", type=float, default=1980.0, help="SM clock for cycles (the H200's maximum)")
    args = p.parse_args(argv)

    import torch

    chase = _kernel()
    mhz = args.clock_mhz
    out = torch.empty(32, dtype=torch.int64, device="cuda")
    rows = []
    for size in SIZES:
        nxt = _cycle(size, seed=size % 9973)
        lines = size // LINE
        # each timed walk starts at its own random line: on a buffer L2 cannot hold, a walk that began where
        # an earlier one did would find that walk's lines in L2 (run 213's 256 MB rows: 146-174 ns, not DRAM)
        starts = torch.randint(0, lines, (4 * args.reps + 2,), generator=torch.Generator().manual_seed(size))
        starts = [int(x) * (LINE // 4) for x in starts]
        for cg in (1, 0):
            chase[(1,)](nxt, out, 0, lines if size <= 32 << 20 else 1, CG=cg, num_warps=1)  # warm what fits
            torch.cuda.synchronize()
            t1, t2 = (
                _time(
                    lambda rep, n=n, k=k, nxt=nxt, cg=cg, starts=starts: chase[(1,)](
                        nxt, out, starts[(2 * cg + k) * args.reps + rep], n, CG=cg, num_warps=1
                    ),
                    args.reps,
                )
                for k, n in enumerate((args.steps, 2 * args.steps))
            )
            ns = (t2 - t1) / args.steps
            row = {"size_bytes": size, "cache": ".cg" if cg else ".ca", "steps": args.steps,
                   "ns_per_load": round(ns, 2), "cycles_per_load": round(ns * mhz / 1e3, 1)}  # fmt: skip
            rows.append(row)
            print(f"{size / 2**20:8.0f} MiB {row['cache']}: {ns:7.1f} ns a load, {row['cycles_per_load']} "
                  f"cycles at {mhz:.0f} MHz", flush=True)  # fmt: skip
    if args.out:
        with open(args.out, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
