"""Why some SIMT GEMM launch configurations run slower than the model says: chosen configurations of the
CUDA fp32 GEMM, timed and (under ``ncu``) counted side by side, with the model's shared-memory wavefronts
for each, on the shapes whose model-only rank correlation is lowest.

H200 run 100 (2026-12-04) timed the current kernel's 76 launch configurations with the unpadded layout at
2304x2304x2048, 2560x2560x1536 and 1792x1792x2048 (model-only Spearman 0.86 / 0.68 / 0.81). The largest
misses are THREAD_MAP 0 tiles that measured up to 1.34x the model's time relative to the space (64x128x16
and 128x64x16 with 8x4 thread tiles, 64x64x8 with 4x8) where the same tiles with THREAD_MAP 1 sit on the
model, and the two maps compile to the same FFMA, shared-memory and global instructions (NVRTC 13.0 sm_90
SASS of 64x128x16 8x4: 2,432 and 2,472 instructions in all, the difference in address arithmetic).
Either the kernel's shared-memory accesses cost more wavefronts than the model counts for them (the spec's
pattern or the model's rule would be wrong: ``ncu`` counts them), or the same wavefronts cost more time
(the stall reasons say which; H100 run 171: the latter). This script times each configuration (CUDA
events around 10 back-to-back launches through the launcher users' calls take, median of ``--reps``, the
output checked against a float64 product), prints the model's wavefronts and time for each (``--model``,
no GPU needed), and with ``--once`` launches each exactly once so that ``ncu`` can count it::

    python benchmarks/profile_simt_gemm.py --model --out model.csv
    python benchmarks/profile_simt_gemm.py --out times.csv
    ncu --csv --kernel-name matmul_kernel --metrics gpu__time_duration.sum,... \\
        python benchmarks/profile_simt_gemm.py --once > ncu.csv

Each launch prints one ``LAUNCH i shape key`` line (stderr) in launch order, which is ncu's row order.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy
sys.path.insert(0, str(ROOT / "benchmarks"))

from profile_transpose_tiles import timed, write_times  # noqa: E402  (the timing both profiles share)

SHAPES: list[tuple[int, int, int]] = [(1792, 1792, 2048), (2560, 2560, 1536)]
# (BM, BN, BK, TM, TN, THREAD_MAP, MIN_BLOCKS): run 100's largest misses and their THREAD_MAP twins, a tile
# the model puts right with either map, the sample's best and two tiles the model over-charges
TILES = [(64, 128, 16, 8, 4, 0, 1), (64, 128, 16, 8, 4, 1, 1), (128, 64, 16, 8, 4, 0, 1),
         (128, 64, 16, 8, 4, 1, 1), (64, 64, 16, 8, 4, 0, 1), (64, 64, 16, 8, 4, 1, 1),
         (64, 64, 8, 8, 4, 0, 1), (64, 64, 8, 8, 4, 1, 1), (64, 64, 8, 4, 8, 0, 1), (64, 64, 8, 4, 8, 1, 1),
         (64, 64, 16, 4, 8, 0, 1), (64, 64, 16, 4, 8, 1, 1), (64, 64, 16, 8, 8, 0, 1),
         (64, 64, 16, 8, 8, 1, 1), (64, 128, 16, 8, 8, 1, 1), (64, 64, 16, 4, 4, 1, 1),
         (128, 128, 16, 8, 8, 1, 2)]  # fmt: skip
BATCH = 10  # launches per timing


def configurations() -> list[dict[str, int]]:
    """The chosen tiles on the unpadded layout (every other constant at the spec's default)."""
    from autopad.kernels.cuda import matmul as G

    out = []
    for bm, bn, bk, tm, tn, tmap, mb in TILES:
        c = dict(G.DEFAULTS)
        c.update(BM=bm, BN=bn, BK=bk, TM=tm, TN=tn, THREAD_MAP=tmap, MIN_BLOCKS=mb, SPLIT_K=1)
        for k in list(c):
            if k.startswith(("PAD_", "SW_")):
                c[k] = 1 if k.startswith(("SW_VEC", "SW_PER_PHASE", "SW_MAX_PHASE")) else 0
        out.append(c)
    return out


def key(c: dict[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(c.items()))


def model_rows() -> list[dict[str, object]]:
    """The model's view of each configuration: shared-memory wavefronts of the whole launch (per tile x
    tiles x blocks, plus what the spec adds), the ideal count, and the predicted time with its terms."""
    from autopad.kernels.cuda import matmul as G

    from autopad.arch import get_arch
    from autopad.predict import predict_arrays
    from autopad.search import score_candidates
    from autopad.spec import KernelSpec

    spec, arch = KernelSpec(G), get_arch("sm_90")
    rows = []
    for shape in SHAPES:
        for c in configurations():
            if not G.SPEC.legal(c, shape, "float32"):
                continue
            lay = G.layout(c)
            wave, ideal = score_candidates(spec, [c], [lay], "float32", None, arch)
            info = G.launch_info(c, shape)
            sec, terms = predict_arrays([info], G.traffic(shape), wave, ideal, arch, [lay])[:2]
            blocks, tiles = info["blocks"], info.get("tiles_per_block", 1)
            extra = info.get("extra_wavefronts", 0.0)
            names = ("dram", "l2", "smem", "flops", "issue", "tiles", "serial")
            rows.append({"shape": "x".join(map(str, shape)), "key": key(c),
                         "wavefronts": (float(wave[0]) * tiles + extra) * blocks,
                         "ideal": float(ideal[0]) * tiles * blocks, "pred_us": float(sec[0]) * 1e6,
                         **{f"{n}_us": float(t) * 1e6 for n, t in zip(names, terms[:, 0])}})  # fmt: skip
    return rows


def checked_timing(spec: Any, built: Any, c: dict[str, int], shape: tuple[int, int, int], ab: tuple, ref: Any,
                   out: Any, reps: int) -> dict[str, Any]:  # fmt: skip
    """Build ``c``'s row (printed as it comes): three warm-up launches, the output checked against the
    float64 product ``ref`` (relative error under 1e-4), then ``timed`` through the launcher users' calls
    take."""
    import torch

    for _ in range(3):
        spec.run(built, ab, out)
    torch.cuda.synchronize()
    err = float(((out.double() - ref).abs().max() / ref.abs().max()).item())
    ms, spread = timed(spec.launcher(built, shape, "float32"), (ab, out), reps, BATCH)
    name = "x".join(map(str, shape))
    print(f"{name:16s} {ms} ok={err < 1e-4} {key(c)}", flush=True)
    return {
        "shape": name,
        "key": key(c),
        "legal": 1,
        "correct": int(err < 1e-4),
        "ms": ms,
        "spread_ms": spread,
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="CSV of the timings (or, with --model, of the model's figures)")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--once", action="store_true", help="launch each legal configuration once (for ncu)")
    ap.add_argument("--model", action="store_true", help="the model's wavefronts and times only (no GPU)")
    args = ap.parse_args(argv)
    if args.reps < 2:
        ap.error(f"--reps {args.reps}: the spread needs at least 2 timings")
    if args.model:
        rows = model_rows()
        for r in rows:
            print(f"{r['shape']:16s} {r['wavefronts']:14.0f} {r['pred_us']:8.1f} {r['key']}")
        if args.out:
            with open(args.out, "w", newline="") as f:
                w = csv.DictWriter(f, list(rows[0]))
                w.writeheader()
                w.writerows(rows)
        return 0

    import torch
    from autopad.kernels.cuda import matmul as G

    spec = G.SPEC
    rows = []
    launch = 0
    for shape in SHAPES:
        m, n, k = shape
        gen = torch.Generator(device="cuda").manual_seed(0)
        a = torch.randn(m, k, device="cuda", generator=gen)
        b = torch.randn(k, n, device="cuda", generator=gen)
        ref = a.double() @ b.double()
        name = "x".join(map(str, shape))
        for c in configurations():
            ok = spec.legal(c, shape, "float32")
            if not ok:
                rows.append({"shape": name, "key": key(c), "legal": 0, "why": str(ok)})
                continue
            built = spec.build(c, "float32")
            out = torch.empty(m, n, device="cuda")
            if args.once:
                print(f"LAUNCH {launch} {name} {key(c)}", file=sys.stderr, flush=True)
                spec.run(built, (a, b), out)
                torch.cuda.synchronize()
                launch += 1
                continue
            rows.append(checked_timing(spec, built, c, shape, (a, b), ref, out, args.reps))
    if args.out and not args.once:
        write_times(args.out, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
