"""``autopad.ops.matmul`` with row-pitched operands (``autopad.ops.empty_pitched``) against contiguous ones.

Why: the Gluon GEMM reads A and B with TMA, one 128-byte box row at a time; a row-major [K, N] bf16 B with
N = 5000 has 10,000-byte rows, so half of its rows start 16 bytes past a 128-byte line and every box row of
those spans two lines (H200 run 12: 1.67x the L2 read sectors of an aligned shape). Padding B's rows to a
multiple of 128 bytes is a layout choice like the shared-memory ones autopad makes; this measures what it
buys through the public call, and what cuBLAS (``torch.matmul``, which takes the same strided views) does
with the same operands.

Per shape and dtype, each variant is checked against an fp32 product of the same operands, then timed
with autopad's harness (``autopad.bench.benchmark``: CUDA events, L2 flushed, median). The shape is tuned
first (``autopad.tune`` through the op's own first call, ``AUTOPAD_TUNE`` as the environment says), so
the timed calls are the tuned op. Writes ``matmul_pitch.csv`` under ``--out``.

    python benchmarks/bench_matmul_pitch.py --out $OUT        # one H200: about a minute with tuning
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy

SHAPES = ((3000, 5000, 1000),)  # (M, N, K): rows of 2,000 and 10,000 bytes
DTYPES = ("bfloat16", "float16")


def _variants(ops: Any, torch: Any, a: Any, b: Any, ap_: Any, bp: Any) -> dict[str, Any]:
    """The calls timed, by name: the public op and cuBLAS, on contiguous and on pitched operands."""
    return {
        "ops.matmul contiguous": lambda: ops.matmul(a, b),
        "ops.matmul B pitched": lambda: ops.matmul(a, bp),
        "ops.matmul A, B pitched": lambda: ops.matmul(ap_, bp),
        "cuBLAS contiguous": lambda: torch.matmul(a, b),
        "cuBLAS A, B pitched": lambda: torch.matmul(ap_, bp),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=".")
    ap.add_argument("--reps", type=int, default=50)
    args = ap.parse_args(argv)
    import torch

    from autopad import ops
    from autopad.bench import benchmark

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for dtype in DTYPES:
        dt = getattr(torch, dtype)
        for m, n, k in SHAPES:
            torch.manual_seed(0)
            a, b = torch.randn(m, k, device="cuda").to(dt), torch.randn(k, n, device="cuda").to(dt)
            ap_, bp = ops.pitched(a), ops.pitched(b)
            ref = a.float() @ b.float()
            t0 = time.perf_counter()
            ops.matmul(a, b)  # binds the shape (tunes it under the shape policy)
            torch.cuda.synchronize()
            first_s = time.perf_counter() - t0
            variants = _variants(ops, torch, a, b, ap_, bp)
            base = None
            for name, fn in variants.items():
                got = fn()
                err = ((got.float() - ref).norm() / ref.norm()).item()
                ok = err < 1e-2
                ms = benchmark(fn, reps=args.reps).ms if ok else None
                base = ms if name == "cuBLAS contiguous" else base
                rows.append({"dtype": dtype, "shape": f"{m}x{n}x{k}", "variant": name, "ok": ok,
                             "rel_err": f"{err:.2e}", "ms": ms, "first_call_s": round(first_s, 1),
                             "b_stride": bp.stride(0) if "pitched" in name else n})  # fmt: skip
                print(f"{dtype} {m}x{n}x{k} {name:26s} ok={ok} ms={ms}", flush=True)
            for r in rows:
                if r["dtype"] == dtype and r["shape"] == f"{m}x{n}x{k}" and r["ms"] and base:
                    r["vs_cublas_contiguous"] = round(base / r["ms"], 3)
    with open(out / "matmul_pitch.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(dict.fromkeys(k for r in rows for k in r)))
        w.writeheader()
        w.writerows(rows)
    print("\n| dtype | shape | variant | ms | cuBLAS contiguous / this |\n| --- | --- | --- | ---: | ---: |")
    for r in rows:
        print(
            f"| {r['dtype']} | {r['shape']} | {r['variant']} | {r['ms']} | {r.get('vs_cublas_contiguous')} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
