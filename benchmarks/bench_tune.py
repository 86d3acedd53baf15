"""Tune on the GPU and report: the pick against the unpadded and +1-pad baselines, and the tuner's cost.

For each (kernel, backend, shape, dtype[, input class]) this runs ``autopad.tune`` with measurement, and
for memory-bound kernels also times a device-to-device copy of the same bytes in the same run. It writes
tune.csv (one row per item) and tune.png, and times a cache hit in this process and in a fresh one.

A sampled brute-force check of the tuner (``--quality``): for the fp32 transpose it measures a random
sample of legal candidates besides autopad's shortlist and reports the shortlist's share of the legal
space, its pick over the best measured, and the rank correlation of predicted with measured time.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy
import autopad  # noqa: E402
from autopad.bench import BenchJob, WorkerBenchmarker, spec_ref  # noqa: E402
from autopad.kernels_registry import builtin_spec  # noqa: E402
from autopad.search import rank  # noqa: E402

ITEMS = [
    ("transpose", "cuda", (8192, 8192), "float32", None),
    ("transpose", "cuda", (8192, 8192), "float64", None),
    ("transpose", "cuda", (16384, 16384), "float16", None),
    ("transpose", "cuda", (16384, 16384), "int8", None),
    ("transpose", "cuda", (4097, 8191), "float32", None),
    ("transpose", "triton", (8192, 8192), "float32", None),
    ("histogram", "cuda", (1 << 28, 256), "int32", "uniform"),
    ("histogram", "cuda", (1 << 28, 256), "int32", "single"),
    ("histogram", "triton", (1 << 28, 256), "int32", "uniform"),
    ("matmul", "cuda", (4096, 4096, 4096), "float32", None),
    ("matmul", "triton", (8192, 8192, 8192), "bfloat16", None),
]


def copy_ms(nbytes: int) -> float:
    import torch

    from autopad.bench import benchmark

    src = torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    return benchmark(lambda: dst.copy_(src), reps=30, warmup=3).ms  # timed as the tuner times candidates


def spearman(x: list[float], y: list[float]) -> float:
    import numpy as np

    def ranks(v):
        v = np.asarray(v, dtype=float)
        order = v.argsort()
        r = np.empty(len(v))
        r[order] = np.arange(len(v))
        for val in np.unique(v):  # average ties
            m = v == val
            r[m] = r[m].mean()
        return r

    a, b = ranks(x), ranks(y)
    return float(np.corrcoef(a, b)[0, 1])


def run_items(out: Path, top_k: int, which: list[int] | None = None) -> list[dict]:
    rows = []
    for kernel, backend, shape, dtype, dist in [ITEMS[i] for i in (which or range(len(ITEMS)))]:
        t0 = time.perf_counter()
        try:
            res = autopad.tune(kernel, shape, dtype, backend=backend, dist=dist, top_k=top_k, progress=False)
        except Exception as exc:  # report and go on
            print(f"FAILED {kernel} {backend} {shape} {dtype}: {type(exc).__name__}: {exc}", flush=True)
            rows.append(
                {
                    "kernel": kernel,
                    "backend": backend,
                    "shape": "x".join(map(str, shape)),
                    "dtype": dtype,
                    "dist": dist or "",
                    "error": f"{type(exc).__name__}: {exc}",
                }
            )
            continue
        tune_s = time.perf_counter() - t0
        t1 = time.perf_counter()
        again = autopad.tune(kernel, shape, dtype, backend=backend, dist=dist, top_k=top_k, progress=False)
        hit_ms = (time.perf_counter() - t1) * 1e3
        by_role = {r: c for c in res.candidates for r in c.roles}
        spec = builtin_spec(kernel, backend)
        traffic = spec.traffic(shape, dtype)
        row = {
            "kernel": kernel,
            "backend": backend,
            "shape": "x".join(map(str, shape)),
            "dtype": dtype,
            "dist": dist or "",
            "mode": res.mode,
            "pick": res.best.layout,
            "constants": json.dumps(res.best.constants),
            "pick_ms": res.best.measured,
            "unpadded_ms": by_role["unpadded"].measured_ms if "unpadded" in by_role else None,
            "textbook_ms": by_role["textbook"].measured_ms if "textbook" in by_role else None,
            "legal": len(res.candidates),
            "measured": sum(1 for c in res.candidates if c.measurement is not None),
            "failed": sum(
                1 for c in res.candidates if c.measurement is not None and not c.measurement.correct
            ),
            "tune_s": round(tune_s, 1),
            "cache_hit_ms": round(hit_ms, 2),
            "cached_mode": again.mode,
            "gpu": res.device.get("name", ""),
            "date": res.environment.get("date", ""),
        }
        if traffic.get("flops"):
            row["tflops"] = traffic["flops"] / (row["pick_ms"] * 1e-3) / 1e12 if row["pick_ms"] else None
        else:
            c_ms = copy_ms(traffic["bytes"] if kernel != "histogram" else 2 * traffic["bytes"])
            row["copy_ms"] = c_ms
            # transposes move the copy's bytes; a histogram reads its input once (ratio: input bytes/s
            # over the copy's read + written bytes/s, as the issues define it)
            row["ratio_to_copy"] = (c_ms / row["pick_ms"]) if row["pick_ms"] else None
            if kernel == "histogram" and row["pick_ms"]:
                row["ratio_to_copy"] = (traffic["bytes"] / row["pick_ms"]) / (2 * traffic["bytes"] / c_ms)
        rows.append(row)
        print(res.table(limit=3), flush=True)
        print(json.dumps(row), flush=True)
    return rows


def fresh_process_hit(kernel: str, backend: str, shape: tuple, dtype: str, top_k: int) -> float:
    code = (
        "import time,torch,autopad;torch.cuda.init();t=time.perf_counter();"
        f"r=autopad.tune({kernel!r},{shape!r},{dtype!r},backend={backend!r},top_k={top_k},progress=False);"
        "print((time.perf_counter()-t)*1e3, r.mode)"
    )
    # the child imports this checkout's autopad, as the parent does
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    outp = done.stdout
    return float(outp.split()[0]) if outp.strip() else float("nan")


def quality(out: Path, top_k: int, sample: int) -> dict:
    """Shortlist against a random sample of the legal space, fp32 8192^2 CUDA transpose."""
    shape, dtype = (8192, 8192), "float32"
    spec = builtin_spec("transpose", "cuda")
    ranked = rank(spec, shape, dtype)
    res = autopad.tune("transpose", shape, dtype, backend="cuda", top_k=top_k, progress=False)
    short = {c.key for c in res.candidates if c.measurement is not None}
    rng = random.Random(0)
    others = [c for c in ranked if c.key not in short]
    picked = rng.sample(others, min(sample, len(others)))
    job = BenchJob(spec_ref(spec), tuple((c.key, c.params) for c in picked), shape, dtype, reps=20)
    meas = {m.key: m for m in WorkerBenchmarker().measure(job)}
    for c in res.candidates:
        if c.measurement is not None:
            meas[c.key] = c.measurement
    ok = {k: m.ms for k, m in meas.items() if m.correct and m.ms}
    pred = {c.key: c.prediction.seconds for c in ranked}
    keys = sorted(ok)
    with open(out / "quality_transpose_fp32.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["key", "predicted_us", "measured_ms", "in_shortlist"])
        for k in keys:
            w.writerow([k, pred[k] * 1e6, ok[k], k in short])
    best = min(ok.values())
    summary = {
        "legal": len(ranked),
        "shortlist": len(short),
        "sampled": len(picked),
        "share_benchmarked": len(short) / len(ranked),
        "pick_ms": res.best.measured,
        "best_seen_ms": best,
        "pick_over_best_seen": res.best.measured / best if res.best.measured else None,
        "spearman_pred_vs_measured": spearman([pred[k] for k in keys], [ok[k] for k in keys]),
        "wrong_or_failed": sum(1 for m in meas.values() if not m.correct),
    }
    print("QUALITY", json.dumps(summary), flush=True)
    return summary


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="benchmarks/results/h200")
    ap.add_argument("--top-k", type=int, default=6)
    ap.add_argument("--quality-sample", type=int, default=60)
    ap.add_argument("--skip-items", action="store_true")
    ap.add_argument("--items", help="comma-separated indices into ITEMS (default: all)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    which = [int(i) for i in args.items.split(",")] if args.items else None
    rows = [] if args.skip_items else run_items(out, args.top_k, which)
    if rows:
        cols = sorted(
            {k for r in rows for k in r}, key=lambda k: (k not in ("kernel", "backend", "shape"), k)
        )
        with open(out / "tune.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=cols)
            w.writeheader()
            w.writerows(rows)
        hit = fresh_process_hit("transpose", "cuda", (8192, 8192), "float32", args.top_k)
        print(f"FRESH_PROCESS_CACHE_HIT_MS {hit:.1f}", flush=True)
        (out / "tune_cache_hit.txt").write_text(
            f"fresh-process cache hit, transpose fp32 8192^2: {hit:.1f} ms\n"
        )
    if args.quality_sample:
        q = quality(out, args.top_k, args.quality_sample)
        (out / "quality_transpose_fp32.json").write_text(json.dumps(q, indent=1))


if __name__ == "__main__":
    main()
