"""What the Triton GEMM's PATH 1 costs in tf32 where K is not a multiple of 16: chosen builds timed and
(under ``ncu``) counted at K off the 16-element grid and on it, side by side.

Why: on K Triton cannot prove a multiple of 16 (its integer arguments are specialised on divisibility by 16
only), PATH 1's tf32 operands stay pipelined but as ``cp.async.ca`` of 4 bytes an element, 48 of them a
thread a k-step at 128 x 256 x 32 on 8 warps (the PTX; 12 ``cp.async.cg`` of 16 bytes where K is a multiple
of 16). The H100 studies of 2048x2048x1001 and 3000x1500x777 (runs 193, 200, every PATH 1 build timed)
measured those builds at about twice the predicted time and ranked them at Spearman 0.54 / 0.41: the time
follows the blocks an SM holds more than the bytes. This script times each build at three K, 1001 (odd:
rows off the 16-byte grid), 1000 (rows on the 16-byte grid that Triton cannot prove) and 1008 (a multiple of
16: 16-byte copies), and with ``--once`` launches each exactly once so that ``ncu`` can count its copies'
requests, sectors and wavefronts, its instructions and its warps' stalls. Usage on a GPU machine::

    python benchmarks/profile_tf32_path1.py --out times.csv
    ncu --csv --kernel-name matmul_tl --metrics gpu__time_duration.sum,... \\
        python benchmarks/profile_tf32_path1.py --once > ncu.csv

Each launch prints one ``LAUNCH i shape key`` line (stderr) in launch order, which is ncu's row order.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy
sys.path.insert(0, str(ROOT / "benchmarks"))

from profile_transpose_tiles import key, planned_profile_args, timed, write_times  # noqa: E402

SHAPES = [(2048, 2048, 1001), (2048, 2048, 1000), (2048, 2048, 1008)]
# (BM, BN, BK, STAGES, WARPS): the studies' fastest builds and their neighbours, one to nine blocks an SM
BUILDS = [
    (128, 256, 32, 3, 8),
    (128, 256, 32, 4, 8),
    (128, 128, 32, 3, 4),
    (128, 128, 32, 3, 8),
    (128, 128, 32, 5, 8),
    (64, 128, 32, 2, 4),
    (64, 128, 32, 4, 4),
    (64, 64, 32, 3, 4),
    (64, 64, 32, 2, 8),
    (128, 64, 64, 3, 8),
]
BASE = {"GROUP_M": 8, "PATH": 1, "PERSIST": 0, "SPLIT_K": 1, "SWIZZLE": 128}


def plan(
    shapes: Sequence[tuple[int, int, int]] = SHAPES, builds: Sequence[tuple[int, ...]] = BUILDS
) -> list[tuple[tuple[int, int, int], dict[str, int]]]:
    """(shape, configuration) in launch order: every build (BM, BN, BK, STAGES, WARPS) at every shape."""
    out = []
    for shape in shapes:
        for bm, bn, bk, st, w in builds:
            out.append((shape, dict(BASE, BM=bm, BN=bn, BK=bk, STAGES=st, WARPS=w)))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = planned_profile_args(__doc__, 20, argv)
    return run_plan(plan(), "tf32", args)


def run_plan(todo: list[tuple[tuple[int, int, int], dict[str, int]]], dtype: str, args) -> int:
    """Time (or with ``args.once`` launch once, for ncu) each (shape, configuration) of ``todo`` as the
    Triton GEMM in ``dtype`` ("tf32": B is [N, K]; 16-bit: B is [K, N]), each result checked against
    fp64; ``args`` as ``planned_profile_args`` parses them. Shared by profile_path1_elementwise.py."""
    if args.dry_run:
        for shape, c in todo:
            print("x".join(map(str, shape)), key(c))
        return 0

    import torch
    from autopad.kernels.triton.matmul_tiles import b_kn

    from autopad.kernels_registry import builtin_spec

    spec = builtin_spec("matmul", "triton")
    tdt = {"tf32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
    rows, launch = [], 0
    for shape, c in todo:
        name = "x".join(map(str, shape))
        legal = spec.legal(c, shape, dtype)
        if not legal.ok:
            print(f"{name} {key(c)} illegal: {legal.reason}", flush=True)
            continue
        m, n, k = shape
        a = torch.randn(m, k, device="cuda").to(tdt)
        b = torch.randn(k, n, device="cuda").to(tdt) if b_kn(dtype) else torch.randn(n, k, device="cuda")
        out = torch.empty(m, n, device="cuda", dtype=torch.float32 if dtype == "tf32" else tdt)
        go = spec.launcher(spec.build(c, dtype), shape, dtype)
        if args.once:
            print(f"LAUNCH {launch} {name} {key(c)}", file=sys.stderr, flush=True)
            go((a, b), out)
            torch.cuda.synchronize()
            launch += 1
            continue
        go((a, b), out)
        torch.cuda.synchronize()
        ref = a.double() @ (b.double() if b_kn(dtype) else b.double().T)
        err = float((out.double() - ref).abs().max() / ref.abs().max())
        correct = err < 1e-2  # tf32 products: ~1e-3 of the largest entry; 16-bit outputs ~4e-3
        ms, spread = timed(go, ((a, b), out), args.reps)
        rows.append({"shape": name, "key": key(c), "legal": 1, "correct": int(correct), "ms": ms,
                     "spread_ms": spread})  # fmt: skip
        print(f"{name:16s} {ms} err={err:.1e} {key(c)}", flush=True)
    if args.out and not args.once:
        write_times(args.out, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
