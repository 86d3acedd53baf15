"""Run one sweep on N GPUs and again on one GPU; check every item ran once, picks agree, and the speed-up.

Writes sweep_<n>gpu.csv / .png for both runs and sweep_compare.json (wall times, per-item time ratios).
Each run gets its own cache folder, so the second run measures everything again.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy
from autopad.sweep import items, plot, run_sweep, write_csv  # noqa: E402

WORK = (
    items(["transpose"], [(4096, 4096), (8192, 8192)], ["float32", "float16"], "cuda")
    + items(["histogram"], [(1 << 26, 256)], ["int32"], "cuda", "uniform")
    + items(["matmul"], [(2048, 2048, 2048)], ["float32"], "cuda")
)


def one(devices: list[int], out: Path) -> tuple[list[dict], float]:
    os.environ["AUTOPAD_CACHE_DIR"] = tempfile.mkdtemp(prefix=f"autopad-{len(devices)}gpu-")
    t0 = time.perf_counter()
    rows = run_sweep(WORK, devices, progress=False)
    wall = time.perf_counter() - t0
    write_csv(rows, out / f"sweep_{len(devices)}gpu.csv")
    plot(rows, out / f"sweep_{len(devices)}gpu.png")
    return rows, wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpus", type=int, default=2)
    ap.add_argument("--out", default="benchmarks/results/h200x2")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    multi, t_multi = one(list(range(args.gpus)), out)
    single, t_single = one([0], out)
    per_item = []
    for a, b in zip(multi, single):
        ra = float(a["best_ms"]) if a.get("best_ms") not in ("", None) else None
        rb = float(b["best_ms"]) if b.get("best_ms") not in ("", None) else None
        per_item.append(
            {
                "item": f"{a['kernel']} {a['shape']} {a['dtype']}",
                "device_multi": a.get("device"),
                "attempts": a.get("attempts"),
                "mode": a.get("mode"),
                "best_ms_multi": ra,
                "best_ms_single": rb,
                "ratio": (ra / rb) if ra and rb else None,
                "same_pick": a.get("best") == b.get("best"),
            }
        )
    summary = {
        "items": len(WORK),
        "gpus": args.gpus,
        "wall_s_multi": round(t_multi, 1),
        "wall_s_single": round(t_single, 1),
        "speedup": round(t_single / t_multi, 2),
        "every_item_once": all(r.get("attempts") == 1 and r.get("mode") != "failed" for r in multi),
        "devices_used": sorted({r.get("device") for r in multi}),
        "per_item": per_item,
    }
    (out / "sweep_compare.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps({k: v for k, v in summary.items() if k != "per_item"}))
    for p in per_item:
        print(json.dumps(p))


if __name__ == "__main__":
    main()
