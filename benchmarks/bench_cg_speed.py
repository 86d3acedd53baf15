"""How fast ``autopad.analyze_batch`` costs cp.async.cg copies (op "cp.async.cg", 16 bytes), apart from
bench_model_speed.py, whose 10-million-a-second bar is for the other ops' compiled kernel.

Random 16-byte-aligned shared addresses in 48 KiB, every lane active; the global side lane-ordered (the
default) or each instruction's 32 chunks permuted over four lines of a random base. One warm-up batch first
(under ``auto`` it loads numba and the cached kernel). Writes lines of text to stdout:

    python benchmarks/bench_cg_speed.py > benchmarks/results/cpu/cp_async_cg_speed_DATE.txt
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
    print("# autopad.analyze_batch(op='cp.async.cg'), random 16-byte-aligned shared addresses in 48 KiB, "
          "every lane active;")  # fmt: skip
    print(f"# nproc={os.cpu_count()} python={sys.version.split()[0]} loadavg {os.getloadavg()[0]:.2f}, "
          f"{time.strftime('%Y-%m-%d')}, AUTOPAD_MODEL_BACKEND={backend}")  # fmt: skip
    analyze_batch(rng.integers(0, 3072, (30000, 32)) * 16, 16, "cp.async.cg")
    for n in (100_000, 400_000, 2_000_000):
        shared = rng.integers(0, 3072, (n, 32)) * 16
        lanes = rng.permuted(np.tile(np.arange(32), (n, 1)), axis=1)
        permuted = lanes * 16 + (rng.integers(0, 1 << 20, (n, 1)) << 7)
        for name, glob in (("lane-ordered", None), ("permuted lines", permuted)):
            t = time.perf_counter()
            analyze_batch(shared, 16, "cp.async.cg", global_addresses=glob)
            dt = time.perf_counter() - t
            print(f"instructions={n} global={name} seconds={dt:.3f} rate={n / dt / 1e6:.3f} M/s")


if __name__ == "__main__":
    main()
