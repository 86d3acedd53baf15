"""How fast ``autopad.analyze_batch`` costs cp.async.ca copies with ``global_addresses`` (op "cp.async"),
apart from bench_model_speed.py, which times the ops without a global side.

Random width-aligned shared addresses in 48 KiB, every lane active; the global side lane-ordered (lane ``l``
copies ``base + l * width``: a line a store phase), each instruction's lanes permuted over those lines, or
every lane from a random line. One warm-up batch first (under ``auto`` it loads numba and the cached
kernel). Writes lines of text to stdout:

    python benchmarks/bench_ca_speed.py > benchmarks/results/cpu/cp_async_ca_speed_DATE.txt
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad, before any installed copy
from autopad.model import analyze_batch  # noqa: E402


def main() -> None:
    rng = np.random.default_rng(0)
    backend = os.environ.get("AUTOPAD_MODEL_BACKEND", "auto")
    print("# autopad.analyze_batch(op='cp.async', global_addresses=...), random shared addresses in 48 KiB, "
          "every lane active;")  # fmt: skip
    print(f"# nproc={os.cpu_count()} python={sys.version.split()[0]} loadavg {os.getloadavg()[0]:.2f}, "
          f"{time.strftime('%Y-%m-%d')}, AUTOPAD_MODEL_BACKEND={backend}")  # fmt: skip
    warm = rng.integers(0, 1000, (30000, 32)) * 16
    analyze_batch(warm, 16, "cp.async", global_addresses=warm)
    n = 1_000_000
    for w in (4, 8, 16):
        shared = rng.integers(0, 48 * 1024 // w, (n, 32)) * w
        base = rng.integers(0, 1 << 20, (n, 1)) << 7
        sources = {
            "line-ordered": np.arange(32) * w + base,
            "permuted lines": rng.permuted(np.tile(np.arange(32), (n, 1)), axis=1) * w + base,
            "random lines": rng.integers(0, 1 << 20, (n, 32)) * w,
        }
        for name, glob in sources.items():
            t = time.perf_counter()
            analyze_batch(shared, w, "cp.async", global_addresses=glob)
            dt = time.perf_counter() - t
            print(f"width={w} instructions={n} global={name} seconds={dt:.3f} rate={n / dt / 1e6:.3f} M/s")


if __name__ == "__main__":
    main()
