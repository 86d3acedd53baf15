"""Why the Triton histogram is slower than the CUDA one: the two backends' picks, side by side under Nsight
Compute.

``autopad.ops.histogram(x, bins, backend=...)`` is tuned for each backend (``--phase tune``, on the cache in
``AUTOPAD_CACHE_DIR``), then called again from that cache (``--phase run``, ``AUTOPAD_TUNE=offline``) under
``ncu``, which profiles every kernel the calls launch (the CUDA backend's zeroing and counting kernels, the
Triton backend's counting and reduce kernels). The script itself only calls the public op and prints what
each backend chose and how long one call takes (CUDA events, L2 flushed by a 256 MB write in between, the
median of ``--reps``); the profile is ncu's. Usage on a GPU machine::

    AUTOPAD_CACHE_DIR=/tmp/c python benchmarks/profile_histogram_backends.py --phase tune
    AUTOPAD_CACHE_DIR=/tmp/c AUTOPAD_TUNE=offline ncu --kernel-name regex:hist --set full \\
        python benchmarks/profile_histogram_backends.py --phase run --reps 1
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy

BACKENDS = ("cuda", "triton")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--phase", choices=("tune", "run"), required=True)
    ap.add_argument("--n", type=int, default=1 << 26, help="values (int32, uniform over the bins)")
    ap.add_argument("--bins", type=int, default=256)
    ap.add_argument("--reps", type=int, default=20, help="timed calls per backend")
    args = ap.parse_args(argv)

    import torch

    import autopad.ops as ops

    g = torch.Generator(device="cuda").manual_seed(11)
    x = torch.randint(0, args.bins, (args.n,), device="cuda", dtype=torch.int32, generator=g)
    ref = torch.bincount(x, minlength=args.bins).int()
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    for backend in BACKENDS:
        got = ops.histogram(x, args.bins, backend=backend)  # tunes in the tune phase, reads the cache after
        if not torch.equal(got, ref):
            print(f"{backend}: WRONG counts", file=sys.stderr)
            return 1
        times = []
        for _ in range(args.reps):
            flush.zero_()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            ops.histogram(x, args.bins, backend=backend)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        rows = [d for d in ops.decisions() if d["kernel"] == "histogram" and d["backend"] == backend]
        ms = statistics.median(times)
        rate = 4 * args.n / (ms * 1e-3) / 1e9
        print(
            f"{backend}: {ms:.4f} ms ({rate:.0f} GB/s read); "
            + "; ".join(f"{r['constants']} ({r['source']})" for r in rows)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
