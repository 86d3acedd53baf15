"""Exhaustive tuner-quality study: measure every legal candidate, as a brute-force tuner would, and compare.

For each configuration (kernel, backend, dtype, three shapes) this enumerates the spec's whole legal space,
compiles all of it (in a process pool: NVRTC for CUDA, Triton's own cache for Gluon), measures every
candidate with autopad's own harness (poisoned-output check against torch, CUDA events with the L2 flushed,
in a replaceable worker process; spread over every visible GPU), and writes one row per candidate and shape:
the model's prediction, the measured time or the reason it failed, and whether autopad's shortlist holds it.

Then it re-times, on one GPU and in one job, the shortlist together with the ten fastest candidates of the
exhaustive pass, so that the pick and the best are compared within a single run (the minimum over thousands
of noisy timings is biased low; a second look removes that bias). ``benchmarks/quality_report.py`` turns the
CSV into the tables and plots: share benchmarked, pick over best, rank correlation.

Usage on a GPU machine (writes quality_rows.csv.gz, quality_final.csv and quality_log.txt under --out; a run
killed mid-shape leaves that shape's measurements so far in quality_partial.csv.gz)::

    python benchmarks/tuner_quality.py --out $OUT --time-budget-s 540
    python benchmarks/tuner_quality.py --precompile-only      # fill the cubin cache (no GPU needed)
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
import multiprocessing as mp
import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy
from autopad.bench import BenchJob, WorkerBenchmarker, spec_ref  # noqa: E402
from autopad.kernels_registry import builtin_spec  # noqa: E402
from autopad.search import enumerate_candidates, rank, shortlist  # noqa: E402
from autopad.spec import KernelSpec  # noqa: E402

TOP_K = 6  # autopad.tune's default
FINAL_TOP = 10  # fastest of the exhaustive pass re-timed beside the shortlist
PARTIAL_ROWS = "quality_partial.csv.gz"  # the unfinished shape's rows so far (removed when it ends)

# (kernel, backend, dtype, dist, shapes): three shapes each (the int8 transpose four), powers of two and odd
# sizes
CONFIGS: list[tuple[str, str, str, str | None, tuple[tuple[int, ...], ...]]] = [
    ("transpose", "cuda", "float32", None, ((8192, 8192), (4096, 4096), (4097, 8191))),
    ("transpose", "cuda", "float16", None, ((16384, 16384), (8192, 8192), (4097, 8191))),
    ("histogram", "cuda", "int32", "uniform", ((1 << 26, 256), (1 << 26, 4096), (10_000_019, 65536))),
    ("histogram", "cuda", "uint8", "uniform", ((1 << 28, 256), (1 << 24, 256), (10_000_019, 100))),
    ("matmul", "cuda", "float32", None, ((2048, 2048, 2048), (1024, 1024, 1024), (1536, 1000, 2000))),
    ("matmul", "triton", "bfloat16", None, ((4096, 4096, 4096), (2048, 2048, 2048), (3000, 1000, 2000))),
    # added 2026-12-03 (not in the recorded runs 1-2): 8-byte elements, the kernel issue's one transpose
    # dtype under 0.95 of copy at 16384^2; a family no model term was read off
    ("transpose", "cuda", "float64", None, ((16384, 16384), (8192, 8192), (4097, 8191))),
    # added 2026-12-04: the Triton histogram's space since its persistent grid (GRID), 600 candidates
    ("histogram", "triton", "int32", "uniform", ((1 << 26, 256), (1 << 26, 4096), (10_000_019, 1000))),
    # added 2026-12-04 (twentieth session): the 1-byte space since the window read-out (d16f1dc), which only
    # samples have measured (runs 149, 152-153): the kernel issue's 4097x8191 cell, the two shapes run 149's
    # model terms were chosen on, then rows 8 bytes off the 16-byte grid
    ("transpose", "cuda", "int8", None, ((4097, 8191), (8193, 16383), (4100, 8192), (4104, 8192))),
    # added 2026-12-06 (thirty-second session): families no study had measured, for held-out figures of the
    # model as it stands: the Gluon GEMM in tf32 (``backend="auto"``'s matmul kernel for tf32) and the
    # Gluon transpose (``backend="triton"``)
    ("matmul", "triton", "tf32", None, ((3000, 1000, 2000), (2048, 2048, 2048), (2048, 2048, 1001))),
    ("transpose", "triton", "float16", None, ((8192, 8192), (4097, 8191), (3, 1000, 2000))),
    # added 2026-12-06 (thirty-third session): the Gluon transpose in the other widths, on rows off the
    # 16-element grid, held out from the output stores' sector count (read off the fp16 studies above)
    ("transpose", "triton", "bfloat16", None, ((2047, 3001), (4096, 4096), (2, 1000, 3000))),
    ("transpose", "triton", "float32", None, ((1000, 3000), (8192, 8192), (4097, 8191))),
    ("transpose", "triton", "int8", None, ((4100, 2050), (8192, 8192), (3, 1000, 2000))),
]

FINAL_FIELDS = [
    "kernel", "backend", "dtype", "shape", "key", "in_shortlist", "exhaustive_rank", "correct", "ms",
    "spread_ms",
]  # fmt: skip
ROW_FIELDS = [
    "kernel",
    "backend",
    "dtype",
    "shape",
    "key",
    "predicted_us",
    "bound",
    "conflict_degree",
    "footprint",
    "roles",
    "model_rank",
    "in_shortlist",
    "correct",
    "ms",
    "spread_ms",
    "error",
    "gpu",
]


def with_shapes(configs: list, ids: Sequence[str]) -> list:
    """The configurations with the shapes ``ids`` names (``kernel/backend/dtype/MxNxK``) in place of their
    own: a shape no recorded study measured, for a held-out check of the model. A configuration named
    by no id keeps its shapes; an id that names no configuration is a ValueError."""
    if not ids:
        return configs
    extra: dict[tuple[str, str, str], list[tuple[int, ...]]] = {}
    for rid in ids:
        parts = rid.split("/")
        if len(parts) != 4 or not all(x.isdigit() for x in parts[3].split("x")):
            raise ValueError(
                f"--shape {rid!r}: expected kernel/backend/dtype/MxNxK (e.g. matmul/triton/bfloat16/64x64x64)"
            )
        extra.setdefault(tuple(parts[:3]), []).append(tuple(int(x) for x in parts[3].split("x")))
    known = {(k, b, d) for k, b, d, _dist, _shapes in configs}
    if set(extra) - known:
        raise ValueError(f"--shape: no configuration {sorted(set(extra) - known)}; these are {sorted(known)}")
    return [(k, b, d, dist, tuple(extra.get((k, b, d), shapes))) for k, b, d, dist, shapes in configs]


def append_member(path: Path, text: str) -> None:
    """Append ``text`` to the gzip file ``path`` as one complete member (gzip readers take a file's members
    as one stream), so the file is readable whatever happens after this returns."""
    with gzip.open(path, "at", newline="") as f:
        f.write(text)


def shape_text(shape: Sequence[int]) -> str:
    return "x".join(map(str, shape))


def rank_id(kernel: str, backend: str, dtype: str, shape: Sequence[int]) -> str:
    return f"{kernel}/{backend}/{dtype}/{shape_text(shape)}"


def log(msg: str, out: Path | None = None) -> None:
    line = f"[{time.strftime('%H:%M:%S')}] {msg}"
    print(line, flush=True)
    if out is not None:
        with open(out / "quality_log.txt", "a") as f:
            f.write(line + "\n")


# --- compile everything first, in parallel processes -----------------------------------------------


def _compile_only() -> None:
    """Pool initializer: make ``cuda_runtime.load_kernel`` compile into the cubin cache and load nothing."""
    from autopad import cuda_runtime

    def compile_only(source: str, kernel_name: str, defines: Any, device: Any = None) -> None:
        cuda_runtime.compile_cubin(source, defines, os.environ.get("AUTOPAD_ARCH", "sm_90"), name=kernel_name)

    cuda_runtime.load_kernel = compile_only


def _build_one(args: tuple[str, str, str, dict[str, int]]) -> str | None:
    kernel, backend, dtype, constants = args
    try:
        builtin_spec(kernel, backend).build(constants, dtype)
        return None
    except Exception as exc:  # a compile error is data: the measuring pass records it per candidate
        # the compiler's own error line, where there is one (the message starts with every define)
        lines = str(exc).splitlines()
        said = next((ln.strip() for ln in lines if "error:" in ln.lower()), "")
        return f"{type(exc).__name__}: {(said or str(exc))[:200]}"


def _run_one(args: tuple[str, str, str, dict[str, int], tuple[int, ...]]) -> str | None:
    """Triton/Gluon: JIT-compile by running once on small inputs of the real shape's alignment."""
    kernel, backend, dtype, constants, shape = args
    try:
        import torch

        spec = builtin_spec(kernel, backend)
        inputs = spec.make_inputs(shape, dtype, torch.device("cuda"), 0, "uniform")
        out = spec.alloc_output(inputs, constants)
        spec.run(spec.build(constants, dtype), inputs, out)
        torch.cuda.synchronize()
        return None
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc)[:200]}"


def _units(kernel: str, backend: str, dtype: str, cands: list[dict[str, int]]) -> list[dict[str, int]]:
    """One candidate per distinct compile (CUDA: the kernel name and its defines; launch-only constants
    such as a histogram's blocks per SM share a cubin), so no two processes compile the same thing."""
    from autopad import cuda_runtime

    seen: dict[str, dict[str, int]] = {}
    real = cuda_runtime.load_kernel
    record: list[str] = []
    cuda_runtime.load_kernel = lambda src, name, defines, device=None: record.append(  # type: ignore[assignment]
        json.dumps([name, sorted((k, str(v)) for k, v in defines.items())])
    )
    try:
        spec = builtin_spec(kernel, backend)
        for c in cands:
            record.clear()
            try:
                spec.build(c, dtype)
            except Exception:  # leave it to the measuring pass to report
                record.append(json.dumps(c, sort_keys=True))
            seen.setdefault("|".join(record), c)
    finally:
        cuda_runtime.load_kernel = real
    return list(seen.values())


def precompile(
    kernel: str,
    backend: str,
    dtype: str,
    cands: list[dict[str, int]],
    procs: int,
    shapes: Sequence[tuple[int, ...]],
) -> tuple[int, list[str], float]:
    """Compile every candidate in ``procs`` processes; returns (compiles, each failure's message, seconds).

    Triton specialises a kernel on its integer arguments (divisible by 16 or not), so Gluon kernels are
    compiled by one run per candidate and shape; a shape of the same specialisation hits the cache.
    """
    t0 = time.perf_counter()
    ctx = mp.get_context("spawn")
    if backend == "cuda":
        units = _units(kernel, backend, dtype, cands)
        with ctx.Pool(procs, initializer=_compile_only) as pool:
            errs = pool.map(_build_one, [(kernel, backend, dtype, c) for c in units], chunksize=4)
    else:
        units = cands
        with ctx.Pool(procs) as pool:
            errs = []
            for shape in shapes:
                errs = pool.map(_run_one, [(kernel, backend, dtype, c, shape) for c in cands], chunksize=1)
    return len(units), [e for e in errs if e is not None], time.perf_counter() - t0


# --- measure ------------------------------------------------------------------------------------------


def measure_all(
    spec: KernelSpec,
    items: list[tuple[str, dict[str, int]]],
    shape: tuple[int, ...],
    dtype: str,
    dist: str | None,
    devices: Sequence[int],
    reps: int,
    time_budget_ms: float,
    chunk: int = 400,
    progress: Callable[[dict[str, Any]], None] | None = None,
    every: int = 500,
) -> dict[str, Any]:
    """Every item measured once, chunks handed to one worker thread (and its child process) per GPU.

    ``progress``, when given, receives the measurements as they come, ``every`` at a time (and the rest of
    each chunk at its end), so that a caller can keep them where a killed run would lose them."""
    chunks = [items[i : i + chunk] for i in range(0, len(items), chunk)]
    lock = threading.Lock()
    results: dict[str, Any] = {}
    pending: dict[str, Any] = {}

    def flush() -> None:  # called with the lock held
        if progress is not None and pending:
            progress(dict(pending))
        pending.clear()

    def worker(device: int) -> None:
        while True:
            with lock:
                if not chunks:
                    return
                part = chunks.pop(0)
            job = BenchJob(
                spec_ref(spec),
                tuple(part),
                shape,
                dtype,
                dist=dist or "uniform",
                reps=reps,
                warmup=2,
                device=device,
                options={"time_budget_ms": time_budget_ms},
            )
            for m in WorkerBenchmarker(timeout_s=60, compile_timeout_s=900).measure(job):
                with lock:
                    results[m.key] = pending[m.key] = (m, device)
                    if len(pending) >= every:
                        flush()
            with lock:
                flush()

    threads = [threading.Thread(target=worker, args=(d,)) for d in devices]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def ranking(spec: KernelSpec, shape: tuple[int, ...], dtype: str, dist: str | None) -> list[dict[str, Any]]:
    """The model's order of the legal space, as plain records (precomputable without a GPU)."""
    return [
        {
            "key": c.key,
            "params": c.params,
            "predicted_s": c.prediction.seconds,
            "bound": c.prediction.bound,
            "conflict_degree": c.prediction.conflict_degree,
            "footprint": c.prediction.footprint,
            "roles": list(c.roles),
        }
        for c in rank(spec, shape, dtype, dist=dist)
    ]


class _Ranked(NamedTuple):
    """A ranking record in the shape search.shortlist reads (key, params, roles)."""

    key: str
    params: dict[str, int]
    roles: tuple[str, ...]


def shortlist_keys(
    ranked: list[dict[str, Any]], spec: KernelSpec | None = None, top_k: int = TOP_K
) -> list[str]:
    """What autopad.tune measures first (search.shortlist on these records): the model's top_k, the best
    layout of each of the top_k best launch configurations, every baseline, and, where the spec names
    families (``FAMILY_KEYS``), each family's best-predicted candidate. (Its local search, which
    depends on the measurements, is replayed by quality_report.py --replay.)"""
    recs = [_Ranked(r["key"], r["params"], tuple(r["roles"])) for r in ranked]
    return [c.key for c in shortlist(recs, top_k, spec)]  # type: ignore[arg-type]


def study_shape(
    spec: KernelSpec,
    cfg: tuple[str, str, str, str | None],
    shape: tuple[int, ...],
    ranked: list[dict[str, Any]],
    devices: Sequence[int],
    out: Path,
    rows_writer: Any,
    final_writer: Any,
) -> dict[str, Any]:
    kernel, backend, dtype, dist = cfg
    short = shortlist_keys(ranked, spec)
    short_set = set(short)
    items = [(r["key"], r["params"]) for r in ranked]
    # one job per GPU: the worker runs every candidate of a job on the job's first input and output
    # allocations, and where a large buffer lies moves a transpose by up to 3.6% (fp64 16384^2, H200 runs
    # 81-84 of 2026-12-03), so candidates timed in separate jobs would be compared across placements (a
    # worker replaced after a fault starts on fresh buffers, and GPUs of a pair differ, as before)
    chunk = max(1, -(-len(items) // len(devices)))
    order = {r["key"]: i for i, r in enumerate(ranked)}

    def row(i: int, m: Any, dev: Any) -> dict[str, Any]:
        r = ranked[i]
        return {
            "kernel": kernel,
            "backend": backend,
            "dtype": dtype,
            "shape": shape_text(shape),
            "key": r["key"],
            "predicted_us": f"{r['predicted_s'] * 1e6:.4f}",
            "bound": r["bound"],
            "conflict_degree": f"{r['conflict_degree']:.4f}",
            "footprint": r["footprint"],
            "roles": "+".join(r["roles"]),
            "model_rank": i,
            "in_shortlist": int(r["key"] in short_set),
            "correct": "" if m is None else int(m.correct),
            "ms": "" if m is None or m.ms is None else f"{m.ms:.6f}",
            "spread_ms": "" if m is None or m.spread_ms is None else f"{m.spread_ms:.6f}",
            "error": "" if m is None else (m.error or "")[:300],
            "gpu": "" if dev is None else dev,
        }

    # the shape's measurements so far, one gzip member per batch, in a file of their own: a run killed
    # mid-shape (a device job's timeout) keeps them there (H200 run 68 lost a whole 16384^2 study), while
    # quality_rows.csv.gz holds only finished shapes, whose best is the best of the whole space
    partial = out / PARTIAL_ROWS
    partial.unlink(missing_ok=True)
    append_member(partial, ",".join(ROW_FIELDS) + "\r\n")

    def keep(batch: dict[str, Any]) -> None:
        buf = io.StringIO(newline="")
        w = csv.DictWriter(buf, fieldnames=ROW_FIELDS)
        for key, (m, dev) in batch.items():
            w.writerow(row(order[key], m, dev))
        append_member(partial, buf.getvalue())

    t0 = time.perf_counter()
    meas = measure_all(spec, items, shape, dtype, dist, devices, 10, 40.0, chunk, progress=keep)
    t_meas = time.perf_counter() - t0
    for i, r in enumerate(ranked):
        m, dev = meas.get(r["key"], (None, None))
        rows_writer.writerow(row(i, m, dev))
    ok = {k: m.ms for k, (m, _) in meas.items() if m.correct and m.ms}
    # final round: the shortlist and the exhaustive pass's fastest, re-timed together on one GPU
    fastest = sorted(ok, key=ok.get)[:FINAL_TOP]
    final_keys = list(dict.fromkeys([k for k in short if k in ok] + fastest))
    params = {r["key"]: r["params"] for r in ranked}
    fin = measure_all(
        spec,
        [(k, params[k]) for k in final_keys],
        shape,
        dtype,
        dist,
        devices[:1],
        40,
        400.0,
        max(1, len(final_keys)),
    )
    for k in final_keys:
        m, _ = fin[k]
        final_writer.writerow(
            {
                "kernel": kernel,
                "backend": backend,
                "dtype": dtype,
                "shape": shape_text(shape),
                "key": k,
                "in_shortlist": int(k in short_set),
                "exhaustive_rank": fastest.index(k) if k in fastest else "",
                "correct": int(m.correct),
                "ms": "" if m.ms is None else f"{m.ms:.6f}",
                "spread_ms": "" if m.spread_ms is None else f"{m.spread_ms:.6f}",
            }
        )
    fin_ok = {k: fin[k][0].ms for k in final_keys if fin[k][0].correct and fin[k][0].ms}
    pick = min((k for k in fin_ok if k in short_set), key=fin_ok.get, default=None)
    best = min(fin_ok, key=fin_ok.get) if fin_ok else None
    summary = {
        "kernel": kernel,
        "backend": backend,
        "dtype": dtype,
        "shape": shape_text(shape),
        "legal": len(ranked),
        "measured_ok": len(ok),
        "failed": sum(1 for m, _ in meas.values() if not m.correct),
        "shortlist": len(short_set),
        "pick": pick,
        "pick_ms": fin_ok.get(pick) if pick else None,
        "best": best,
        "best_ms": fin_ok.get(best) if best else None,
        "measure_s": round(t_meas, 1),
    }
    if summary["pick_ms"] and summary["best_ms"]:
        summary["pick_over_best"] = summary["pick_ms"] / summary["best_ms"]
    log("SUMMARY " + json.dumps(summary), out)
    partial.unlink(missing_ok=True)  # the shape's rows are whole now; the caller writes them
    return summary


def _constants(key: str) -> dict[str, int]:
    """A candidate's key ("A=1,B=2", as the study rows write it) as its constants."""
    return {a: int(b) for a, b in (kv.split("=") for kv in key.split(","))}


def verify(ids: Sequence[str], rows_paths: Sequence[Path], out: Path) -> list[dict[str, Any]]:
    """The real tuner on the GPU: ``autopad.tune`` each id afresh, then time its pick beside the study's
    exhaustive best in one job (one GPU, 40 runs each), so the replayed figures are checked end to end."""
    import autopad

    best: dict[str, tuple[str, float]] = {}
    for path in rows_paths:
        with gzip.open(path, "rt", newline="") as f:
            for r in csv.DictReader(f):
                rid = rank_id(r["kernel"], r["backend"], r["dtype"], tuple(map(int, r["shape"].split("x"))))
                if rid in ids and r["correct"] == "1" and (rid not in best or float(r["ms"]) < best[rid][1]):
                    best[rid] = (r["key"], float(r["ms"]))
    rows = []
    for rid in ids:
        kernel, backend, dtype, shape_s = rid.split("/")
        shape = tuple(int(x) for x in shape_s.split("x"))
        spec = builtin_spec(kernel, backend)
        dist = "uniform" if getattr(spec, "DISTS", None) else None
        t0 = time.perf_counter()
        res = autopad.tune(kernel, shape, dtype, backend=backend, dist=dist, cache=False, progress=False)
        tune_s = time.perf_counter() - t0
        pick = ",".join(f"{k}={v}" for k, v in sorted(res.best.constants.items()))
        # a study recorded before a constant joined the space names it not: it ran the constant's default
        # (the behaviour of its day), which is what the key is filled with, and then named in full
        filled = {**spec.DEFAULTS, **_constants(best[rid][0])}
        best_key = ",".join(f"{k}={v}" for k, v in sorted(filled.items()))
        keys = list(dict.fromkeys([pick, best_key]))
        params = {k: _constants(k) for k in keys}
        fin = measure_all(spec, [(k, params[k]) for k in keys], shape, dtype, dist, [0], 40, 400.0, len(keys))
        ms = {k: fin[k][0].ms for k in keys}
        row = {
            "id": rid,
            "measured": sum(c.measurement is not None for c in res.candidates),
            "legal": len(res.candidates),
            "tune_s": round(tune_s, 1),
            "pick": pick,
            "pick_ms": ms[pick],
            "best": best_key,
            "best_ms": ms[best_key],
            "pick_over_best": ms[pick] / ms[best_key] if ms[pick] and ms[best_key] else None,
        }
        log("VERIFY " + json.dumps(row), out)
        rows.append(row)
    with open(out / "quality_verify.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--out",
        default=None,
        help="results folder (default benchmarks/results/h200; --precompile-only logs to it only when given)",
    )
    ap.add_argument("--configs", help="comma-separated indices into CONFIGS (default: all)")
    ap.add_argument("--shapes", type=int, default=None, help="shapes per config (the first N; default: all)")
    ap.add_argument("--procs", type=int, default=os.cpu_count() or 1, help="compile processes")
    ap.add_argument("--precompile-only", action="store_true", help="fill the compile caches and stop")
    ap.add_argument("--time-budget-s", type=float, default=None, help="start no new shape after this")
    ap.add_argument("--rank-only", action="store_true", help="write the model's rankings (no GPU) and stop")
    ap.add_argument("--ranking", help="rankings written by --rank-only (else computed here)")
    ap.add_argument("--only", help="comma-separated kernel/backend/dtype/shape ids to measure (default: all)")
    ap.add_argument(
        "--shape",
        action="append",
        default=[],
        help="kernel/backend/dtype/MxNxK: study this shape instead of the configuration's own (repeatable)",
    )
    ap.add_argument(
        "--verify", help="comma-separated ids: tune each for real and time its pick beside the best"
    )
    ap.add_argument(
        "--rows", nargs="*", default=[], help="study rows (.csv.gz) that --verify reads the best from"
    )
    args = ap.parse_args(argv)
    out = Path(args.out or "benchmarks/results/h200")
    out.mkdir(parents=True, exist_ok=True)
    # a compile-only pass (often on a machine with no GPU) keeps out of the H200 log unless --out is given
    log_out = None if args.precompile_only and args.out is None else out
    if args.verify:
        verify(args.verify.split(","), [Path(p) for p in args.rows], out)
        return 0
    started = time.perf_counter()
    which = [int(i) for i in args.configs.split(",")] if args.configs else range(len(CONFIGS))
    configs = with_shapes([CONFIGS[i] for i in which], args.shape)
    only = set(args.only.split(",")) if args.only else set()

    if args.rank_only:
        table = {}
        for kernel, backend, dtype, dist, shapes in configs:
            spec = builtin_spec(kernel, backend)
            for shape in shapes[: args.shapes]:
                rid = rank_id(kernel, backend, dtype, shape)
                table[rid] = ranking(spec, shape, dtype, dist)
                log(f"ranked {rid}: {len(table[rid])} legal candidates")
        with gzip.open(out / "quality_ranking.json.gz", "wt") as f:
            json.dump(table, f)
        return 0
    rankings: dict[str, list[dict[str, Any]]] = {}
    if args.ranking:
        with gzip.open(args.ranking, "rt") as f:
            rankings = json.load(f)

    def compile_config(kernel: str, backend: str, dtype: str, shapes: Sequence[tuple[int, ...]]) -> None:
        spec = builtin_spec(kernel, backend)
        union: dict[str, dict[str, int]] = {}
        # with --only, compile for the shapes that will be measured: a misaligned shape builds other
        # kernels than the aligned ones (the halo read-out), so the union would double the compiles
        shapes = [s for s in shapes if not only or rank_id(kernel, backend, dtype, s) in only]
        for shape in shapes:
            ranked = rankings.get(rank_id(kernel, backend, dtype, shape))
            for c in [r["params"] for r in ranked] if ranked else enumerate_candidates(spec, shape, dtype):
                union.setdefault(json.dumps(c, sort_keys=True), c)
        n, errs, secs = precompile(kernel, backend, dtype, list(union.values()), args.procs, shapes)
        log(f"compiled {kernel}/{backend}/{dtype}: {len(union)} candidates, {n} compiles, "
            f"{len(errs)} errors, {secs:.0f} s", log_out)  # fmt: skip
        # the distinct messages, so that a failure's cause is in the log (958 compiles of the fp32 transpose
        # failed on the 2-core machine under load on 2026-12-02 and every one built when retried; which
        # error it was went unrecorded)
        for msg, count in Counter(errs).most_common(3):
            log(f"  {count} x {msg}", log_out)

    if args.precompile_only:  # Gluon kernels compile by running: that needs the GPU
        for kernel, backend, dtype, _dist, shapes in configs:
            if backend == "cuda":
                compile_config(kernel, backend, dtype, shapes[: args.shapes])
        return 0

    import torch

    devices = list(range(torch.cuda.device_count()))
    log(f"devices {devices}: {[torch.cuda.get_device_name(d) for d in devices]}", out)
    summaries = []
    # each shape's rows are appended as one complete gzip member when the shape ends (a reader takes the
    # members as one file): a run killed mid-shape (a device job's timeout) leaves every finished shape
    # readable, where one stream flushed as it went lost its end-of-stream marker (H200 run 41)
    rows_path = out / "quality_rows.csv.gz"
    rows_path.unlink(missing_ok=True)
    append_member(rows_path, ",".join(ROW_FIELDS) + "\r\n")  # the header, as csv.DictWriter writes it
    with open(out / "quality_final.csv", "w", newline="") as ffin:
        final_writer = csv.DictWriter(ffin, fieldnames=FINAL_FIELDS)
        final_writer.writeheader()
        for kernel, backend, dtype, dist, shapes in configs:
            # each configuration is compiled just before it is measured, so a spent budget skips both
            if args.time_budget_s and time.perf_counter() - started > args.time_budget_s:
                log(f"time budget spent: skipping {kernel}/{backend}/{dtype}", out)
                continue
            compile_config(kernel, backend, dtype, shapes[: args.shapes])
            spec = builtin_spec(kernel, backend)
            for shape in shapes[: args.shapes]:
                if only and rank_id(kernel, backend, dtype, shape) not in only:
                    continue
                if args.time_budget_s and time.perf_counter() - started > args.time_budget_s:
                    log(f"time budget spent: skipping {kernel} {dtype} {shape_text(shape)}", out)
                    continue
                rid = rank_id(kernel, backend, dtype, shape)
                buf = io.StringIO(newline="")
                rows_writer = csv.DictWriter(buf, fieldnames=ROW_FIELDS)
                try:
                    ranked = rankings.get(rid) or ranking(spec, shape, dtype, dist)
                    cfg = (kernel, backend, dtype, dist)
                    summaries.append(
                        study_shape(spec, cfg, shape, ranked, devices, out, rows_writer, final_writer)
                    )
                except Exception as exc:  # report and go on with the next shape
                    log(f"FAILED {rid}: {type(exc).__name__}: {exc}", out)
                append_member(rows_path, buf.getvalue())
                ffin.flush()
                (out / "quality_summary.json").write_text(json.dumps(summaries, indent=1))
    log(f"done in {time.perf_counter() - started:.0f} s", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
