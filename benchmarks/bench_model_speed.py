"""How fast the analytical model scores warp instructions (target: >= 10,000,000 per second on 2 cores).

The tuner scores every candidate layout under every instruction of a kernel's access pattern, so the model
must be cheap enough that scoring never dominates. For every op and access width (loads, stores and atomics,
cp.async .ca and .cg, ldmatrix and stmatrix) this times ``autopad.analyze_batch`` after a warm-up, median of
``--repeat`` runs, on two address sets:

* ``random``: uniformly random width-aligned byte addresses in a 48 KiB tile, every lane active;
* ``mixed``: the same, but a quarter of the instructions have lanes paired on one address (so wide loads
  take the merge path) and 5% of the lanes are inactive (ldmatrix/stmatrix: paired, never inactive).

Each backend is timed in turn (``AUTOPAD_MODEL_BACKEND``): numba, and the numpy fallback on fewer
instructions (it is 20-40x slower). For numba the fast path ``validate=False`` is timed too. The rate is
wall-clock; ``cpu_seconds`` (this process, all threads) says what a machine shared with other work hid:
instructions per CPU-second times the cores is the rate of an idle machine. It also reports the first-call
cost in a fresh process: compiling the kernel (empty numba cache) and loading it (warm cache). Results go to
stdout and benchmarks/results/model_speed.csv; the load average is in the ``machine`` column.

    python benchmarks/bench_model_speed.py                 # the full run (about two minutes on 2 cores)
    python benchmarks/bench_model_speed.py -n 200000 --repeat 1 --backends numba --out /tmp/speed.csv
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy
import autopad  # noqa: E402
from autopad import model  # noqa: E402

CASES = [("load", w) for w in (1, 2, 4, 8, 16)] + [("store", w) for w in (1, 2, 4, 8, 16)]
CASES += [("atomic", 4), ("atomic", 8), ("cp.async", 4), ("cp.async", 8), ("cp.async", 16)]
CASES += [("cp.async.cg", 16)]  # its own rule and kernel (model_cp_async_cg.py, _model_numba_cg.py)
CASES += [("ldmatrix.x1", 16), ("ldmatrix.x2", 16), ("ldmatrix.x4", 16), ("stmatrix.x4", 16)]
TARGET = 10_000_000
SPAN = 48 * 1024
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "model_speed.csv"
FIELDS = [
    "op",
    "access_bytes",
    "instructions",
    "seconds",
    "instructions_per_second",
    "machine",
    "date",
    "backend",
    "addresses",
    "validate",
    "cpu_seconds",
]


def machine() -> str:
    """nproc, CPU, Python, numpy and numba versions: what the figure depends on."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    try:
        import numba

        nb = numba.__version__
    except ImportError:
        nb = "absent"
    cpu = platform.processor() or platform.machine()
    return f"nproc={cores} cpu={cpu} python={platform.python_version()} numpy={np.__version__} numba={nb}"


def instructions(n: int, width: int, op: str, kind: str, seed: int) -> np.ndarray:
    """(n, 32) width-aligned byte addresses of the ``random`` or ``mixed`` set."""
    rng = np.random.default_rng(seed)
    addr = rng.integers(0, SPAN // width, size=(n, 32), dtype=np.int64) * width
    if kind == "mixed":
        paired = rng.random(n) < 0.25
        addr[paired] = addr[paired][:, np.arange(32) & ~1]
        if "matrix" not in op:  # ldmatrix/stmatrix are .sync.aligned: every lane gives an address
            addr[rng.random((n, 32)) < 0.05] = -1
    return addr


def time_case(addr: np.ndarray, width: int, op: str, repeat: int, validate: bool) -> tuple[float, float]:
    """Median wall-clock seconds of ``repeat`` runs of analyze_batch over the batch, after a warm-up, and the
    median CPU seconds of this process during a run (every thread: what an idle machine would need)."""
    autopad.analyze_batch(addr[:100_000], width, op, validate=validate)  # compile/load, page faults
    times, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        wave, ideal = autopad.analyze_batch(addr, width, op, validate=validate)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    assert wave.shape == (len(addr),) and (wave >= ideal).all()
    return statistics.median(times), statistics.median(cpu)


_FIRST_CALL = """
import time
t0 = time.perf_counter()
import numpy as np, autopad
t1 = time.perf_counter()
autopad.analyze_batch(np.arange(32, dtype=np.int64)[None, :] * 4)
t2 = time.perf_counter()
print(f"{t1 - t0:.3f} {t2 - t1:.3f}")
"""


def first_call() -> dict[str, str]:
    """Seconds for ``import autopad`` and the first analyze_batch in a fresh process: with an empty numba
    cache (the kernel is compiled) and then with the cache it left (the kernel is loaded)."""
    out = {}
    with tempfile.TemporaryDirectory(prefix="autopad-numba-cache-") as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache, "AUTOPAD_MODEL_BACKEND": "numba"}
        env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        for label in ("cold cache (compile)", "warm cache (load)"):
            done = subprocess.run(
                [sys.executable, "-c", _FIRST_CALL], env=env, capture_output=True, text=True, timeout=600
            )
            if done.returncode:
                out[label] = f"failed: {done.stderr.strip().splitlines()[-1:]}"
                continue
            imp, call = done.stdout.split()
            out[label] = f"import autopad {imp} s, first analyze_batch {call} s"
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--instructions", type=int, default=1_000_000, help="per case (numba)")
    parser.add_argument("--numpy-instructions", type=int, default=100_000, help="per case (numpy)")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per case; the median is reported")
    parser.add_argument("--backends", default="numba,numpy", help="comma-separated: numba, numpy")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="CSV to write")
    parser.add_argument("--no-first-call", action="store_true", help="skip the fresh-process timing")
    parser.add_argument("--strict", action="store_true", help=f"exit 1 if numba is below {TARGET:,}/s")
    args = parser.parse_args(argv)

    when = datetime.now(timezone.utc).isoformat(timespec="minutes")
    host = machine()
    try:
        load = "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    except OSError:
        load = ""
    print(f"autopad {autopad.__version__} model speed ({host}; {load})")
    host = f"{host} {load.replace('load average', 'loadavg')}".strip()  # a busy machine reads slower
    if not args.no_first_call:
        for label, text in first_call().items():
            print(f"first call, fresh process, {label}: {text}")
    head = ("backend", "validate", "addresses", "op", "bytes", "instr", "instr/s", "instr/CPU-s")
    print("{:<7} {:<8} {:<9} {:<12} {:>5} {:>9} {:>12} {:>12}".format(*head))
    rows = []
    previous = os.environ.get("AUTOPAD_MODEL_BACKEND")
    try:
        for backend in [b.strip() for b in args.backends.split(",") if b.strip()]:
            os.environ["AUTOPAD_MODEL_BACKEND"] = backend
            if model.backend() != backend:
                print(f"{backend}: not available here, skipped")
                continue
            n = args.instructions if backend == "numba" else args.numpy_instructions
            for kind in ("random", "mixed"):
                for op, width in CASES:
                    addr = instructions(n, width, op, kind, seed=width * 7 + len(op))
                    for validate in (True, False) if backend == "numba" and kind == "random" else (True,):
                        seconds, cpu = time_case(addr, width, op, args.repeat, validate)
                        rate = n / seconds
                        line = f"{backend:<7} {validate!s:<8} {kind:<9} {op:<12} {width:>5} {n:>9,}"
                        print(f"{line} {rate:>12,.0f} {n / max(cpu, 1e-9):>12,.0f}")
                        rows.append(
                            {
                                "op": op,
                                "access_bytes": width,
                                "instructions": n,
                                "seconds": f"{seconds:.4f}",
                                "instructions_per_second": f"{rate:.0f}",
                                "machine": host,
                                "date": when,
                                "backend": backend,
                                "addresses": kind,
                                "validate": validate,
                                "cpu_seconds": f"{cpu:.4f}",
                            }
                        )
    finally:
        if previous is None:
            os.environ.pop("AUTOPAD_MODEL_BACKEND", None)
        else:
            os.environ["AUTOPAD_MODEL_BACKEND"] = previous
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    status = 0
    for backend in sorted({r["backend"] for r in rows}):
        checked = [r for r in rows if r["backend"] == backend and r["validate"]]
        slowest = min(checked, key=lambda r: float(r["instructions_per_second"]))
        rate = float(slowest["instructions_per_second"])
        verdict = "met" if rate >= TARGET else "NOT met"
        print(
            f"{backend}: slowest {slowest['op']} {slowest['access_bytes']} B ({slowest['addresses']}) at "
            f"{rate:,.0f} instructions/s; target {TARGET:,}/s {verdict}"
        )
        if backend == "numba" and rate < TARGET:
            status = 1 if args.strict else 0
    print(f"wrote {args.out}")
    return status


if __name__ == "__main__":
    sys.exit(main())
