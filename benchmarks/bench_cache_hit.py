"""How long ``autopad tune`` takes when the answer is already cached, in a fresh process (target: 50 ms).

A tune that was answered before should cost what reading a small file costs, whether it is asked from
Python or from the command line, and whether or not torch is installed (the GPU check used to import
torch: 1.4-2 s). This benchmark fills an empty cache with one tune of ``--kernel/--shape/--dtype`` (model
only by default: ``AUTOPAD_NO_BENCH=1``; ``--measure`` lets a GPU measure, which takes minutes), then runs
the same command ``--runs`` times, each in a fresh interpreter, and splits each run into:

* ``import_ms``: ``import autopad.cli`` (autopad and numpy load here; no torch, triton or numba);
* ``main_ms``: ``autopad.cli.main([...])``, the command itself: argument checks, the GPU check (ctypes),
  the cache read, printing the report (from the stored candidates: the space is not re-ranked);
* ``lookup_ms``: the tuner's own figure, inside ``main`` (``cache hit in X ms``);
* ``wall_ms`` / ``cpu_ms``: the whole process as the parent sees it (``cpu_ms`` is the child's user +
  system time: on a shared machine the wall clock also counts waiting for a core);
* ``heavy``: which of torch, triton, numba, scipy, matplotlib and cuda the process loaded.

For scale it times the interpreter alone (``python -c pass``) and ``import numpy`` the same way, and the
console script ``autopad`` when it is on PATH. Children run with bytecode caching on (into a temporary
``PYTHONPYCACHEPREFIX``, as an installed package has its .pyc files), after one warm-up run that writes
it. The 50 ms target is for ``main_ms``; the interpreter and the imports come on top, and are reported.
The load average goes into the CSV: a busy machine stretches every wall-clock figure.

    python benchmarks/bench_cache_hit.py --out benchmarks/results        # about a minute without a GPU
    python benchmarks/bench_cache_hit.py --kernel histogram --shape 268435456x256 --dtype int32 --runs 10
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "triton", "numba", "scipy", "matplotlib", "cuda")
COLUMNS = [
    "what",
    "run",
    "wall_ms",
    "cpu_ms",
    "import_ms",
    "import_cpu_ms",
    "main_ms",
    "main_cpu_ms",
    "lookup_ms",
    "exit",
    "heavy",
    "machine",
]

# The child: times the import and main() apart, and says what it loaded. The command's own output is kept
# (stdout) so that the parent can read the tuner's lookup time from it.
CHILD = r"""
import io, json, sys, time
t0, c0 = time.perf_counter(), time.process_time()
import autopad.cli
t1, c1 = time.perf_counter(), time.process_time()
out, real = io.StringIO(), sys.stdout
sys.stdout = out
rc = autopad.cli.main(sys.argv[1:])
t2, c2 = time.perf_counter(), time.process_time()
sys.stdout = real
heavy = sorted({m.split(".")[0] for m in sys.modules if m.split(".")[0] in HEAVY_NAMES})
print(json.dumps({"import_ms": (t1 - t0) * 1e3, "main_ms": (t2 - t1) * 1e3, "import_cpu_ms": (c1 - c0) * 1e3,
                  "main_cpu_ms": (c2 - c1) * 1e3, "exit": rc, "heavy": heavy, "out": out.getvalue()}))
""".replace("HEAVY_NAMES", repr(HEAVY))


def _env(cache: Path, pycache: Path, measure: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update({"AUTOPAD_CACHE_DIR": str(cache), "PYTHONPYCACHEPREFIX": str(pycache)})
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    if not measure:
        env["AUTOPAD_NO_BENCH"] = "1"
    return env


def _timed(
    cmd: list[str], env: dict[str, str], timeout: float
) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall ms, child cpu ms, result) of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    wall = (time.perf_counter() - t0) * 1e3
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1e3
    return wall, cpu, done


def _lookup(out: str) -> float | None:
    for line in out.splitlines():
        if line.startswith("cache hit in "):
            return float(line.split()[3])
    return None


def _machine() -> str:
    try:
        load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        load = "?"
    return f"{platform.node()} {os.cpu_count()} cores, load {load}"


def run(args: argparse.Namespace) -> list[dict]:
    rows: list[dict] = []
    tune = ["tune", args.kernel, "--shape", args.shape, "--dtype", args.dtype, "--no-progress"]
    with tempfile.TemporaryDirectory(prefix="autopad-hit-") as tmp:
        env = _env(Path(tmp) / "cache", Path(tmp) / "pycache", args.measure)
        py = [sys.executable]

        def add(what: str, n: int, wall: float, cpu: float, **kw) -> None:
            rows.append({"what": what, "run": n, "wall_ms": round(wall, 2), "cpu_ms": round(cpu, 2),
                         "machine": _machine(), **kw})  # fmt: skip

        for what, code in (("python -c pass", "pass"), ("import numpy", "import numpy")):
            _timed([*py, "-c", code], env, 60)  # warm-up: the bytecode cache
            for n in range(args.runs):
                wall, cpu, done = _timed([*py, "-c", code], env, 60)
                add(what, n, wall, cpu, exit=done.returncode)
        try:  # fill the cache (model only: 2-30 s, depending on the space and the machine)
            wall, cpu, done = _timed([*py, "-c", CHILD, *tune], env, args.timeout)
            info = json.loads(done.stdout.strip().splitlines()[-1])
            ms = {k: round(info[k], 2) for k in ("import_ms", "import_cpu_ms", "main_ms", "main_cpu_ms")}
            add(
                "first tune (fills the cache)",
                0,
                wall,
                cpu,
                **ms,
                exit=info["exit"],
                heavy=" ".join(info["heavy"]),
            )
        except (subprocess.TimeoutExpired, ValueError, IndexError, KeyError) as err:
            add("first tune (fills the cache)", 0, float("nan"), float("nan"), exit=f"failed: {err}")
            return rows
        for n in range(args.runs):
            try:
                wall, cpu, done = _timed([*py, "-c", CHILD, *tune], env, 120)
                info = json.loads(done.stdout.strip().splitlines()[-1])
            except (subprocess.TimeoutExpired, ValueError, IndexError) as err:
                add("cache hit", n, float("nan"), float("nan"), exit=f"failed: {err}")
                continue
            ms = {k: round(info[k], 2) for k in ("import_ms", "import_cpu_ms", "main_ms", "main_cpu_ms")}
            add("cache hit", n, wall, cpu, **ms, lookup_ms=_lookup(info["out"]), exit=info["exit"],
                heavy=" ".join(info["heavy"]) or "none")  # fmt: skip
        exe = shutil.which("autopad")
        if exe:
            for n in range(args.runs):
                wall, cpu, done = _timed([exe, *tune], env, 120)
                add("autopad console script (hit)", n, wall, cpu, lookup_ms=_lookup(done.stdout),
                    exit=done.returncode)  # fmt: skip
    return rows


def summary(rows: list[dict]) -> list[str]:
    """Median (min) of each figure per kind of run."""
    cols = ("wall_ms", "cpu_ms", "import_ms", "import_cpu_ms", "main_ms", "main_cpu_ms", "lookup_ms")
    lines = [f"{'what':30} " + " ".join(f"{c[:-3].replace('_', ' ') + ' ms':>15}" for c in cols)]
    for what in dict.fromkeys(r["what"] for r in rows):
        rs = [r for r in rows if r["what"] == what]
        cells = []
        for col in cols:
            vals = [r[col] for r in rs if isinstance(r.get(col), (int, float)) and r[col] == r[col]]
            cells.append(
                f"{statistics.median(vals):.1f} ({min(vals):.1f})".rjust(15) if vals else "-".rjust(15)
            )
        lines.append(f"{what[:30]:30} {' '.join(cells)}")
    hits = [r for r in rows if r["what"] == "cache hit"]
    heavy = sorted({r.get("heavy", "") for r in hits})
    lines.append(f"heavy modules on a hit: {', '.join(heavy) or '?'}; exit codes: "
                 f"{sorted({str(r.get('exit')) for r in rows})}")  # fmt: skip
    for col, what in (("main_ms", "wall clock"), ("main_cpu_ms", "CPU time")):
        vals = [r[col] for r in hits if isinstance(r.get(col), float)]
        if vals:
            verdict = "met" if statistics.median(vals) < 50 else "NOT met"
            lines.append(f"target, the command itself (main) under 50 ms on a hit, in {what}: {verdict} "
                         f"(median {statistics.median(vals):.1f} ms)")  # fmt: skip
    return lines


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kernel", default="transpose")
    p.add_argument("--shape", default="8192x8192")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--runs", type=int, default=5, help="fresh processes per kind of run")
    p.add_argument("--measure", action="store_true", help="let a GPU measure the first tune (minutes)")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds the first tune may take")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results"), help="folder for cache_hit.csv")
    args = p.parse_args()
    rows = run(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "cache_hit.csv"
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    what = f"autopad tune {args.kernel} --shape {args.shape} --dtype {args.dtype}"
    print(f"{what}, {args.runs} fresh processes each, {when}, {_machine()}; median (min)")
    print("\n".join(summary(rows)))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
