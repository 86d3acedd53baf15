"""How fast ``autopad.search.rank`` ranks the largest built-in spaces with the model alone (target: < 1 s).

Why it matters: the ops' shape policy (``autopad.ops``) and ``autopad tune`` rank a kernel's whole space with
the model before anything runs on the GPU, and an op called on a new shape waits for that ranking. The
largest built-in space is the CUDA transpose (26,680 legal candidates in fp32 and 35,718 in fp16 at
8192 x 8192 since the whole-column block order, GROUP 4096; 22,724 and 30,626 before); the CUDA histogram
(8,000) and the fp32 CUDA SIMT matmul (10,000) are the next ones. The Triton (Gluon) transpose (2,732 in
fp16) has no PATTERN_KEYS: its patterns come from the register layouts through autopad.gluon_model, one
per candidate until they were shared (10-12 s before, see the git log).

For each case a fresh Python process (``--runs`` of them; the median is reported) times:

* ``first_call_with_import``: ``import autopad`` and the first ``rank`` of the first shape, what a new
  process pays before its first model-only answer;
* ``first_call_rank``: the same first ``rank`` alone;
* ``second_shape``: ``rank`` of another shape of the same kernel and dtype in that process (the scores of
  patterns and layouts are kept; legality, launch info and the prediction are per shape);
* ``same_shape_again``: the first shape once more.

Each call is ``rank(spec, shape, dtype, extra=baselines(...))``, as the tuner and the ops' policy call it,
followed by ``gc.collect(0)`` inside the timing: ``rank`` pauses the cyclic collector, and the one pass
over its survivors that this defers (about 0.035 s after the fp16 transpose) is counted as its own.
One untimed process runs first so that the numba cache and, unless ``--no-bytecode``, the modules' bytecode
exist, as they do for an installed package (this machine sets PYTHONDONTWRITEBYTECODE; the children run
without it so the bytecode is written once and read after). ``numba`` says whether the process loaded
numba (the model scores its first instructions with numpy; ``autopad/model.py``). Results go to stdout
and to ``rank_speed.csv`` under ``--out``. ``results/rank_speed_before.csv`` is this benchmark run on the
code before the batched ranking (git 4048c39, exported and put first on PYTHONPATH, from outside the
repository so that the child does not import the working tree); the machine's speed drifts by a third
over minutes, so compare runs made close together. ``results/rank_speed_b98637d.csv`` is the same
benchmark on git b98637d (before the vectorised legality, the faster analyze_distinct, the lazy imports
and the shared Gluon patterns), run right after ``rank_speed.csv`` on a machine loaded by other work
(load average 1.2-1.7 against 0.9 for the older rows). ``results/rank_speed_90e899b.csv`` is the code
before issue 14's second round (atomics counted without a sort, pairs per tile formula, replicated arrays
on the batched formula, LAYOUT_READS, the Triton transpose without triton at import; that tree is HEAD
with autopad/{model,score,space,layouts}.py and kernels/{cuda,triton}/transpose.py from git 90e899b, the
predictor and the histogram spec of HEAD), each of its runs straight after one of ``rank_speed.csv``'s
(``--compare TREE --label 90e899b``, below); its ``machine`` column names the tree.
``results/rank_speed_ad2890b.csv`` is that run's ``rank_speed.csv`` (committed in git ad2890b, load
average 1.06). ``rank_speed.csv`` is now issue 14's third round (git log: the SIMT GEMM's stacked A and B
tiles addressed with the batched tile formula, the histogram's instructions scored in one chunk, the
restricted space built with its most-read constants first, cheaper candidates and unit-score lookups),
and ``results/rank_speed_cc6d613.csv`` the code before that round (git cc6d613 exported; the files that
differ are the round's), each of its runs straight after one of ``rank_speed.csv``'s.
``results/rank_speed_quiet.csv``: the same code minutes later on a quieter machine (load average 0.56):
no faster (the fp16 transpose 1.11 s with import); ``results/rank_speed_vs_e0c8542.csv``: the two CUDA
transposes against git e0c8542 (the previous session's last commit, exported) alternating in one run,
load 0.69: 1.10 / 0.84 s against 1.17 / 0.97 s, where e0c8542 had read 0.77 / 0.76 s at load 1.06 hours
earlier (``rank_speed_ad2890b.csv``): the machine's own speed moved more than the code did.
``results/rank_speed_r6.csv``: issue 14's sixth round (git log: candidates in slots, made without an
``__init__`` frame each; prediction terms and kept unit scores shared as one tuple per distinct value, so
the collector's pass after a first ranking walks ~91,000 new objects instead of ~147,000; units summed per
run in int64), with ``results/rank_speed_r6_ec812c6.csv`` the code before it (a worktree of git ec812c6,
``--compare``), each of its runs straight after one of ``rank_speed_r6.csv``'s; the load average is in
the ``machine`` column. ``rank_speed_r6_fp16a*.csv`` and ``rank_speed_r6_fp16b*.csv``: the fp16 transpose
alone, 11 runs each, minutes later (the two trees' medians cross from run to run: 0.93 / 0.88 s and 0.87
/ 0.99 s with import, this round's first).
``results/cpu/rank_speed_r7.csv``: issue 14's seventh round (git log: the chunk scorer in
autopad/score_chunk.py, its contents numbered once over every period's codes, (content, formula) pairs read
off formula-major codes, 2-D gathers with ``take``, formula rows grouped by moves of whole access units,
int32 lanes for the CUDA transpose's patterns; ``legal_batch``'s distinct rows by a table of value ranks;
frozen constants in an object array; the ranking order in two stable sorts), with
``rank_speed_r7_e9ad218.csv`` the code before it (a worktree of git e9ad218, ``--compare``), 9 runs each,
load average 1.9: fp16 0.76 s with import (0.63-0.93) against 0.90 s (0.72-1.09), the first ranking
0.56 s against 0.70 s; fp32 0.65 s against 0.72 s. The same, minutes earlier at load 3.1
(``rank_speed_r7a*.csv``, 7 runs): fp16 0.83 s against 0.86 s, fp32 0.55 s against 0.57 s; and the fp16
transpose alone at load 2.6 (``rank_speed_r7b*.csv``, 11 runs): 0.64 s against 0.81 s. Instructions
executed by the first fp16 ranking (cachegrind; within 1% from run to run, where the wall clock of this
shared machine moves by a third): 2,336 M -> 1,868 M, the scoring 1,426 M -> 1,035 M.

    python benchmarks/bench_rank_speed.py                       # every case, 3 runs each
    python benchmarks/bench_rank_speed.py --cases transpose-fp32 --runs 5
    python benchmarks/bench_rank_speed.py --runs 5 --compare /tmp/before --label 90e899b   # before/after
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import statistics
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "benchmarks" / "results"
TARGET_S = 1.0
# name -> (kernel, backend, dtype, first shape, second shape)
CASES = {
    "transpose-fp32": ("transpose", "cuda", "float32", (8192, 8192), (4096, 4096)),
    "transpose-fp16": ("transpose", "cuda", "float16", (8192, 8192), (4097, 8191)),
    # the largest space (32,637 in int8); its first shape has output rows off the vector grid, where the
    # halo build's shifted gather is scored at the shape's row shifts (transpose_cost._gather_extra)
    "transpose-int8": ("transpose", "cuda", "int8", (4100, 8192), (4097, 8191)),
    "histogram-int32": ("histogram", "cuda", "int32", (1 << 24, 4096), (1000003, 100000)),
    "matmul-fp32": ("matmul", "cuda", "float32", (4096, 4096, 4096), (3000, 5000, 1000)),
    "triton-transpose-fp16": ("transpose", "triton", "float16", (8192, 8192), (4096, 3000)),
}
PHASES = ("first_call_with_import", "first_call_rank", "second_shape", "same_shape_again")
FIELDS = ["case", "kernel", "backend", "dtype", "shape", "candidates", "phase", "seconds", "runs",
          "min_seconds", "max_seconds", "numba", "bytecode", "machine", "date"]  # fmt: skip

# ``--compare TREE``: the child imports autopad from TREE (an exported checkout: autopad/ and kernels/),
# autopad.kernels from TREE/kernels as the installed package maps it; set up before the clock starts
_TREE = """
import importlib.util, os, sys
_root = sys.argv[2]
sys.path.insert(0, _root)
class _Kernels:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != "autopad.kernels":
            return None
        where = os.path.join(_root, "kernels")
        init = os.path.join(where, "__init__.py")
        return importlib.util.spec_from_file_location(name, init, submodule_search_locations=[where])
sys.meta_path.insert(0, _Kernels)
"""

_CHILD = """
import gc, json, sys, time
t0 = time.perf_counter()
from autopad.kernels_registry import builtin_spec
from autopad.search import baselines, rank
kernel, backend, dtype, first, second = json.loads(sys.argv[1])
spec = builtin_spec(kernel, backend)
out = {}
for phase, shape in (("first_call_rank", first), ("second_shape", second), ("same_shape_again", first)):
    shape = tuple(shape)
    t = time.perf_counter()
    ranked = rank(spec, shape, dtype, extra=baselines(spec, shape, dtype))
    gc.collect(0)  # a young-generation pass the ranking deferred (it pauses the collector) is its cost
    out[phase] = time.perf_counter() - t
    out.setdefault("first_call_with_import", time.perf_counter() - t0)
    out["n_" + phase] = len(ranked)
out["numba"] = "numba" in sys.modules
print(json.dumps(out))
"""


def machine() -> str:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    try:
        load = f" loadavg {os.getloadavg()[0]:.2f}"
    except OSError:
        load = ""
    cpu = platform.processor() or platform.machine()
    return f"nproc={cores} cpu={cpu} python={platform.python_version()}{load}"


def child(case: tuple, bytecode: bool, tree: Path | None = None) -> dict:
    env = dict(os.environ)
    if tree is None:  # this checkout's autopad (--compare's child puts its TREE first itself)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    code, args = (
        (_CHILD, [json.dumps(case)]) if tree is None else (_TREE + _CHILD, [json.dumps(case), str(tree)])
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=900,
        cwd=None if tree is None else tree,
    )  # fmt: skip
    if done.returncode:
        raise RuntimeError(f"{case}: the child failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def summarise(name: str, got: list[dict], host: str, when: str, bytecode: bool) -> list[dict]:
    """One row per phase: the median, min and max over the runs (printed as well)."""
    kernel, backend, dtype, first, second = CASES[name]
    rows = []
    for phase in PHASES:
        vals = [g[phase] for g in got]
        shape = second if phase == "second_shape" else first
        n = got[0]["n_" + ("first_call_rank" if phase == "first_call_with_import" else phase)]
        numba = sum(g["numba"] for g in got)
        med = statistics.median(vals)
        print(f"{name:<16} {n:>10,} {phase:<24} {med:>9.3f} {min(vals):>7.3f} {max(vals):>7.3f}  "
              f"{numba}/{len(got)}")  # fmt: skip
        rows.append({"case": name, "kernel": kernel, "backend": backend, "dtype": dtype,
                     "shape": "x".join(map(str, shape)), "candidates": n, "phase": phase,
                     "seconds": f"{med:.4f}", "runs": len(got), "min_seconds": f"{min(vals):.4f}",
                     "max_seconds": f"{max(vals):.4f}", "numba": f"{numba}/{len(got)}",
                     "bytecode": "cached" if bytecode else "environment", "machine": host,
                     "date": when})  # fmt: skip
    return rows


def write(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    ap.add_argument("--runs", type=int, default=3, help="fresh processes per case; the median is reported")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for rank_speed.csv")
    ap.add_argument("--no-bytecode", action="store_true", help="keep PYTHONDONTWRITEBYTECODE as it is")
    ap.add_argument(
        "--compare", type=Path, metavar="TREE",
        help="also time an exported tree (autopad/ and kernels/ in it), each of its runs straight after one "
        "of this checkout's; written to rank_speed_LABEL.csv",
    )  # fmt: skip
    ap.add_argument("--label", default=None, help="LABEL for --compare's file (default: the tree's name)")
    args = ap.parse_args(argv)
    names = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in names if c not in CASES]
    if unknown:
        ap.error(f"unknown case(s) {unknown}; known: {', '.join(CASES)}")
    bytecode = not args.no_bytecode
    tree = args.compare.resolve() if args.compare else None
    label = args.label or (tree.name if tree else "")
    host, when = machine(), datetime.now(timezone.utc).isoformat(timespec="minutes")
    print(f"rank speed ({host}; bytecode {'cached' if bytecode else 'as the environment says'})")
    child(CASES[names[0]], bytecode)  # untimed: bytecode and the numba cache exist from here on
    if tree is not None:
        child(CASES[names[0]], bytecode, tree)
    rows, other = [], []
    print(f"{'case':<16} {'candidates':>10} {'phase':<24} {'median s':>9} {'min s':>7} {'max s':>7}  numba")
    for name in names:
        got, got_other = [], []
        for _ in range(args.runs):
            got.append(child(CASES[name], bytecode))
            if tree is not None:
                got_other.append(child(CASES[name], bytecode, tree))
        rows += summarise(name, got, host, when, bytecode)
        if tree is not None:
            print(f"  {label}:")
            other += summarise(name, got_other, f"{host} tree={label}", when, bytecode)
    path = args.out / "rank_speed.csv"
    write(path, rows)
    if tree is not None:
        write(args.out / f"rank_speed_{label}.csv", other)
    slow = [r for r in rows if r["phase"] == "first_call_with_import" and float(r["seconds"]) >= TARGET_S]
    print(
        f"wrote {path}; first call with import under {TARGET_S:g} s: {len(names) - len(slow)} of {len(names)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
