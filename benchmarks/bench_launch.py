"""Host time per call of the public ops on small tensors, against torch eager (the overhead target).

A small transpose is all launch: 64x64 fp32 moves 32 KB, about 4 us of GPU time, so what a user waits for
is the host path (dispatch, allocation, the launch call). This times, in fresh processes, the wall time
per call of ``autopad.ops.transpose(x)`` through each launch path (``AUTOPAD_LAUNCH=driver``: ctypes
``cuLaunchKernel`` with a parameter block built once; ``cudacore``: ``cuda.core.launch``), of
``autopad.ops.transpose(x, backend="triton")`` (the Gluon kernel: Triton's JIT on the first call, the
compiled kernel's own launcher after it) and of ``x.t().contiguous()``, over many back-to-back calls with
the GPU idle (the calls, not the kernels, are the bottleneck), and writes a CSV. ``AUTOPAD_TUNE=never``:
the model's pick, no tuning.

    python benchmarks/bench_launch.py --out DIR
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHAPES = ((64, 64), (512, 512), (1000, 37))
CHILD = r"""
import json, sys, time, warnings
import torch, autopad
warnings.simplefilter("ignore")
out = {}
for m, n in SHAPES:
    x = torch.randn(m, n, device="cuda")
    op = lambda: autopad.ops.transpose(x, backend=BACKEND)  # noqa: E731
    for name, fn in (("autopad", op), ("eager", lambda: x.t().contiguous())):
        y = fn(); torch.cuda.synchronize()
        assert torch.equal(y, x.t().contiguous()), name
        best = 1e9
        for _ in range(5):
            t = time.perf_counter()
            for _ in range(2000):
                fn()
            best = min(best, (time.perf_counter() - t) / 2000)
            torch.cuda.synchronize()
        out[f"{name} {m}x{n}"] = best * 1e6
print(json.dumps(out))
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("."))
    args = ap.parse_args(argv)
    rows = []
    for path, backend in (("driver", "auto"), ("cudacore", "auto"), ("triton", "triton")):
        # the child imports this checkout's autopad, as the parent would
        pythonpath = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        env = {**os.environ, "AUTOPAD_TUNE": "never", "PYTHONPATH": pythonpath}
        if backend == "auto":
            env["AUTOPAD_LAUNCH"] = path
        code = f"SHAPES = {SHAPES!r}\nBACKEND = {backend!r}\n" + CHILD
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
        if p.returncode != 0:
            print(f"{path}: failed: {p.stderr[-1500:]}")
            continue
        for k, us in json.loads(p.stdout.strip().splitlines()[-1]).items():
            who, shape = k.split()
            name = "autopad (triton backend)" if path == "triton" else f"autopad ({path})"
            label = name if who == "autopad" else f"torch eager ({path} run)"
            rows.append({"path": label, "shape": shape, "us_per_call": us})
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "bench_launch.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["path", "shape", "us_per_call"])
        w.writeheader()
        w.writerows(rows)
    print(f"{'call':26} {'shape':10} {'us per call':>12}")
    for r in rows:
        print(f"{r['path']:26} {r['shape']:10} {r['us_per_call']:12.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
