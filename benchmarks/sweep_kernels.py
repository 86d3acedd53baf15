"""Benchmark sweeps: autopad's tuned kernels against torch, torch.compile, plain Triton and the ceiling.

What: for transpose, histogram and matmul over power-of-two and odd shapes and several dtypes, one GPU
per item (``autopad.sweep.run_sweep``, one worker per GPU) tunes the CUDA and the Triton kernel with
``autopad.tune`` and then, in the same process and run, times every variant the same way, the way the
tuner times a candidate (``autopad.bench.benchmark``: 256 MB L2 flush before each run, CUDA events, the
median of 30; an accumulating kernel's zeroing outside the timing): autopad's
pick and the unpadded layout per backend, the plain-Triton baseline (``tl.trans``, ``tl.dot``, the
histogram at its defaults), torch eager, ``torch.compile`` of the same function, and the ceiling (a
device-to-device copy of the same bytes for the memory-bound kernels, cuBLAS for matmul). Every variant is
first checked against the kernel's torch reference on fresh random input with a poisoned output; a wrong
one is recorded and not timed.

Why: a tuner's pick means little without the alternatives a user has, measured on the same GPU, the same
day, by the same method. Writes ``sweep_<kernel>.csv`` and ``sweep_<kernel>.png`` under ``--out``.

    PYTHONPATH=$PWD python benchmarks/sweep_kernels.py [--quick] [--gpus N] [--kernels transpose,matmul]
    python benchmarks/sweep_kernels.py --plot OUT/sweep_transpose.csv ...     # PNGs again, no GPU
    python benchmarks/sweep_kernels.py --summary OUT/sweep_*.csv              # Markdown table
"""

from __future__ import annotations

import argparse
import csv
import datetime
import importlib.util
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy

from autopad.spec import DTYPE_BYTES  # noqa: E402 (after the path set-up)
from autopad.sweep import SweepItem, run_sweep  # noqa: E402

KERNELS = ("transpose", "histogram", "matmul")
BACKENDS = ("cuda", "triton")
DTYPES = {"transpose": ("float32", "float16"), "histogram": ("int32",), "matmul": ("float32", "bfloat16")}
# heaviest first, so that the last items handed out are short ones
SHAPES: dict[str, list[tuple[int, ...]]] = {
    "histogram": [(1 << 28, 256), (10_000_019, 4096), (1 << 20, 256)],
    "matmul": [(4096, 4096, 4096), (3000, 1000, 2000)],
    "transpose": [(8192, 8192), (4097, 8191), (1000, 3001)],
}
QUICK = {"histogram": [(1 << 24, 256)], "matmul": [(3000, 1000, 2000)], "transpose": [(4097, 8191)]}
SEED = 7  # tune() checks on seeds 0 and 1: these checks see other data
TOP_K_ENV = "AUTOPAD_SWEEP_TOP_K"  # the workers read --top-k from here
REFINE_ENV = "AUTOPAD_SWEEP_REFINE"  # ... and --refine from here
FIELDS = [
    "kernel", "shape", "dtype", "variant", "backend", "constants", "ms", "gbps", "tflops",
    "ratio_to_ceiling", "speedup_vs_torch", "correct", "error", "tune_ms", "tune_s", "gpu", "device", "date",
]  # fmt: skip
VARIANT_FIELDS = ("variant", "backend", "constants", "ms", "correct", "error", "tune_ms", "tune_s")


def build_items(quick: bool = False, kernels: Sequence[str] = KERNELS) -> list[SweepItem]:
    """The sweep's items: every kernel's shapes x dtypes (``quick``: one shape per kernel and dtype)."""
    table = QUICK if quick else SHAPES
    order = [k for k in SHAPES if k in kernels]
    return [
        SweepItem(k, s, d, "all", "uniform" if k == "histogram" else None)
        for k in order
        for s in table[k]
        for d in DTYPES[k]
    ]


def task_name() -> str:
    """The "module:function" a sweep worker resolves: benchmarks.sweep_kernels:task when that import finds
    this file (benchmarks/ has no __init__.py: a namespace package, which any installed regular package
    called benchmarks would shadow), else sweep_kernels:task with benchmarks/ itself on sys.path."""
    try:
        spec = importlib.util.find_spec("benchmarks.sweep_kernels")
    except ImportError:
        spec = None
    if spec is not None and spec.origin and Path(spec.origin).resolve() == Path(__file__).resolve():
        return "benchmarks.sweep_kernels:task"
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))  # spawned workers start with the parent's sys.path
    return "sweep_kernels:task"


# ------------------------------------------------------------------------------------- arithmetic (pure)


def work_of(kernel: str, shape: Sequence[int], dtype: str) -> tuple[str, float, float]:
    """(unit, work of one call, work of one ceiling call): bytes for GB/s, flops for TFLOP/s.

    A transpose moves the bytes its copy moves; a histogram reads its input once, against a copy that
    reads and writes it (input bytes/s over the copy's read + write bytes/s, as bench_tune.py reports).
    """
    if kernel == "matmul":
        m, n, k = shape
        return "tflops", 2.0 * m * n * k, 2.0 * m * n * k
    if kernel == "histogram":
        b = float(shape[0] * DTYPE_BYTES[dtype])
        return "gbps", b, 2 * b
    b = 2.0 * math.prod(shape) * DTYPE_BYTES[dtype]
    return "gbps", b, b


def rate(unit: str, amount: float, ms: float) -> float:
    """GB/s (bytes / ms / 1e6) or TFLOP/s (flops / ms / 1e9)."""
    return amount / ms / (1e6 if unit == "gbps" else 1e9)


def flatten(work: Sequence[SweepItem], results: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """run_sweep's one dict per item -> one row per item x variant, with rates, ratios and speed-ups."""
    rows = []
    for item, res in zip(work, results):
        base = {k: "" for k in FIELDS}
        base.update(kernel=item.kernel, shape="x".join(map(str, item.shape)), dtype=item.dtype)
        base.update({k: res.get(k, "") for k in ("gpu", "device", "date")})
        vs = res.get("variants") or []
        if not vs:
            why = res.get("error") or res.get("note") or "no result"
            rows.append({**base, "variant": "(item)", "correct": False, "error": why})
            continue
        unit, amount, ceil_amount = work_of(item.kernel, item.shape, item.dtype)

        timed = {v["variant"]: v["ms"] for v in vs if v.get("correct") and v.get("ms")}
        ceil_ms, torch_ms = timed.get("ceiling"), timed.get("torch eager")
        ceil_rate = rate(unit, ceil_amount, ceil_ms) if ceil_ms else None
        for v in vs:
            row = {**base, **{k: v.get(k) for k in VARIANT_FIELDS if v.get(k) is not None}}
            ms = v.get("ms") if v.get("correct") else None
            if ms:
                r = rate(unit, ceil_amount if v["variant"] == "ceiling" else amount, ms)
                row[unit] = r
                row["ratio_to_ceiling"] = r / ceil_rate if ceil_rate else ""
                row["speedup_vs_torch"] = torch_ms / ms if torch_ms else ""
            else:
                row["ms"] = ""
            rows.append(row)
    return rows


def write_rows(rows: Sequence[dict[str, Any]], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: f"{v:.6g}" if isinstance(v := r.get(k, ""), float) else v for k in FIELDS})
    return path


def read_rows(paths: Sequence[str | Path]) -> list[dict[str, str]]:
    return [r for p in paths for r in csv.DictReader(Path(p).read_text().splitlines())]


def _num(v: Any) -> float | None:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _groups(rows: Sequence[dict[str, Any]], keys: tuple[str, ...] = ("kernel", "shape", "dtype")) -> dict:
    """Rows by the values of ``keys``, in first-seen order."""
    out: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(tuple(r[k] for k in keys), []).append(r)
    return out


def summary(rows: Sequence[dict[str, Any]]) -> str:
    """Markdown: per kernel/shape/dtype, autopad's best, its share of the ceiling, and its speed-ups."""
    lines = [
        "| kernel | shape | dtype | autopad best | ms | of ceiling | vs torch eager | vs torch.compile "
        "| vs unpadded |",
        "|" + " --- |" * 9,
    ]
    for (kernel, shape, dtype), grp in _groups(rows).items():
        ap = [r for r in grp if r["variant"] == "autopad" and _num(r["ms"])]
        if not ap:
            lines.append(f"| {kernel} | {shape} | {dtype} | no correct autopad variant |" + " - |" * 5)
            continue
        best = min(ap, key=lambda r: _num(r["ms"]))
        b, ratio = _num(best["ms"]), _num(best["ratio_to_ceiling"])
        cells = [kernel, shape, dtype, best["backend"], f"{b:.3f}"]
        cells.append(f"{ratio:.2f} of {'cuBLAS' if kernel == 'matmul' else 'copy'}" if ratio else "-")
        for variant, backend in (("torch eager", ""), ("torch.compile", ""), ("unpadded", best["backend"])):
            got = [_num(r["ms"]) for r in grp if r["variant"] == variant and backend in ("", r["backend"])]
            other = min((x for x in got if x), default=None)
            cells.append(f"{other / b:.2f}x" if other else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _label(r: dict[str, Any]) -> str:
    return f"{r['variant']} [{r['backend']}]"


def plot(rows: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """Grouped bars: share of the ceiling per shape x dtype, one bar per variant (no bar: no time)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = _groups(rows)
    labels = list(
        dict.fromkeys(lab for r in rows if not (lab := _label(r)).startswith(("ceiling", "(item)")))
    )
    width = 0.8 / max(1, len(labels))
    fig, ax = plt.subplots(figsize=(max(7, 1.6 * len(groups)), 4.5))
    for j, lab in enumerate(labels):
        vals = [
            max([_num(r["ratio_to_ceiling"]) or 0 for r in g if _label(r) == lab] or [0])
            for g in groups.values()
        ]
        ax.bar([i - 0.4 + (j + 0.5) * width for i in range(len(groups))], vals, width, label=lab)
    ax.axhline(1.0, color="gray", lw=0.8)
    ax.set_xticks(range(len(groups)), [f"{s}\n{d}" for _, s, d in groups], fontsize=7)
    kernel = rows[0]["kernel"] if rows else ""
    ax.set_ylabel(f"share of the ceiling ({'cuBLAS' if kernel == 'matmul' else 'copy of the same bytes'})")
    gpu = next((r["gpu"] for r in rows if r.get("gpu")), "")
    ax.set_title(f"{kernel}: throughput against the ceiling, one run" + (f" ({gpu})" if gpu else ""))
    if labels:
        ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


# ----------------------------------------------------------------------------------- the worker's side


def _short(exc: BaseException) -> str:
    text = " | ".join(line for line in f"{type(exc).__name__}: {exc}".splitlines() if line.strip())
    return text if len(text) <= 400 else text[:400] + " ..."


def _fmt(constants: dict[str, int] | None) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted((constants or {}).items()))


def _measure(fn: Callable, check: Callable, bench: Callable, prepare: Callable | None = None,
             sync: Callable | None = None) -> dict[str, Any]:  # fmt: skip
    """Check ``fn()``'s result (after ``prepare``: poisoning) and only if it is right, time ``fn``."""
    try:
        if prepare is not None:
            prepare()
        got = fn()
        if sync is not None:
            sync()
        ok, why = check(got)
    except Exception as exc:
        return {"correct": False, "error": _short(exc)}
    if not ok:
        return {"correct": False, "error": f"wrong result: {why}"}
    try:
        return {"correct": True, "ms": float(bench(fn)), "error": ""}
    except Exception as exc:
        return {"correct": True, "error": f"timing: {_short(exc)}"}


def _gpu_measure(
    fn: Callable[[], Any], check: Callable, prepare: Callable | None = None, before: Callable | None = None
) -> dict[str, Any]:
    import torch

    from autopad.bench import benchmark

    def bench(f: Callable[[], Any]) -> float:  # ``before`` (zeroing an accumulator) runs outside the timing
        return benchmark(f, reps=30, warmup=3, before=before).ms

    res = _measure(fn, check, bench, prepare, torch.cuda.synchronize)
    if res["error"] and not res["error"].startswith("wrong result"):
        try:
            torch.cuda.synchronize()
        except Exception:  # the CUDA context is lost: the sweep replaces this worker, retries the item once
            os._exit(70)
    return res


class LocalBenchmarker:
    """tune()'s benchmarker, measuring in this process (the sweep worker), not in a child per tune.

    A faulting candidate leaves the CUDA context unusable: once tune() has cached the failure, the worker
    exits; the sweep starts another and retries the item, which reads that failure from the cache."""

    def measure(self, job: Any) -> Any:
        from autopad.bench import measure_local

        for m, fatal in measure_local(job):
            yield m
            if fatal:
                os._exit(70)


def _run_spec(spec: Any, constants: dict | None, dtype: str, ins: tuple, ref: Any) -> dict[str, Any]:
    """Build ``constants`` (None: the plain-Triton ``run_tl``), check on a poisoned output, time."""
    from autopad.bench import poison

    try:
        built = spec.build(constants, dtype) if constants is not None else None
        out = spec.alloc_output(ins, constants)
    except Exception as exc:
        return {"correct": False, "error": f"build: {_short(exc)}"}
    acc = bool(getattr(spec, "ACCUMULATES", False))  # then zeroed before every run, outside the timing

    def fn() -> Any:
        spec.run(built, ins, out) if built is not None else spec.run_tl(ins, out)  # run_tl: BASELINE_TL
        return out

    def prepare() -> None:
        poison(out)
        if acc:
            out.zero_()

    return _gpu_measure(fn, lambda got: spec.check(got, ref), prepare, out.zero_ if acc else None)


def _autopad_rows(spec: Any, item: SweepItem, backend: str, ins: tuple, ref: Any, device: int) -> list[dict]:
    import autopad

    t0 = time.perf_counter()
    top_k = int(os.environ.get(TOP_K_ENV, "6"))
    refine = int(os.environ.get(REFINE_ENV, "16"))
    try:
        res = autopad.tune(
            item.kernel, item.shape, item.dtype, backend=backend, top_k=top_k, refine=refine, device=device,
            dist=item.dist, progress=False, benchmarker=LocalBenchmarker(),
        )  # fmt: skip
    except Exception as exc:  # dtype or shape rejected, or tuning failed: say why, go on
        return [{"variant": "autopad", "backend": backend, "correct": False, "error": f"tune: {_short(exc)}"}]
    tune_s = round(time.perf_counter() - t0, 1)
    best = next((c for c in res.candidates if c.constants == res.best.constants), None)
    unp = next((c for c in res.candidates if "unpadded" in c.roles), None)
    rows = []
    for name, cand, consts in (
        ("autopad", best, res.best.constants),
        ("unpadded", unp, unp.constants if unp else None),
    ):
        row = {"variant": name, "backend": backend, "constants": _fmt(consts), "tune_s": tune_s}
        row["tune_ms"] = cand.measured_ms if cand else None
        if consts is None:
            row.update(correct=False, error="the tune result has no unpadded candidate")
        elif cand is not None and cand.measurement is not None and not cand.measurement.correct:
            row.update(correct=False, error=f"in tune: {cand.error}")  # never re-run a failed candidate
        else:
            row.update(_run_spec(spec, consts, item.dtype, ins, ref))
        rows.append(row)
    return rows


def torch_fn(
    kernel: str, backend: str, shape: Sequence[int], dtype: str | None = None
) -> tuple[Callable[..., Any], str]:
    """The torch function a user would write (and torch.compile), with its description, on the spec's
    inputs: the Triton GEMM takes a 16-bit B as [K, N] (as the user holds it) and a tf32 B as [N, K]."""
    import torch

    if kernel == "transpose":
        return (lambda x: x.transpose(-1, -2).contiguous()), "x.t().contiguous()"
    if kernel == "histogram":
        bins = int(shape[1])
        return (lambda x: torch.bincount(x, minlength=bins)), f"torch.bincount(x, minlength={bins})"
    if backend == "triton" and dtype == "tf32":  # tf32's B is [N, K] (wgmma needs it K-major): A @ B^T
        return (lambda a, b: a @ b.t()), "a @ b.t()"
    return (lambda a, b: a @ b), "a @ b"


def _compile(f: Callable[..., Any], args: tuple) -> tuple[Callable[..., Any] | None, str]:
    """torch.compile(f, dynamic=False): fullgraph first; a graph break is noted and timed without it."""
    import torch

    note = ""
    for fullgraph in (True, False):
        torch._dynamo.reset()  # every item compiles afresh: no recompile limit across items
        try:
            g = torch.compile(f, dynamic=False, fullgraph=fullgraph)
            g(*args)
            return g, note and note + "; timed with fullgraph=False"
        except Exception as exc:
            note += "; fullgraph=False failed too: " if note else "fullgraph=True failed (graph break?): "
            note += _short(exc)
    return None, note


def _torch_rows(item: SweepItem, spec: Any, backend: str, ins: tuple, ref: Any) -> list[dict[str, Any]]:
    import torch

    from autopad.bench import poison

    f, desc = torch_fn(item.kernel, backend, item.shape, item.dtype)
    args = tuple(ins[:2]) if item.kernel == "matmul" else (ins[0],)

    def timed(variant: str, backend: str, what: str, fn: Callable, note: str = "") -> dict[str, Any]:
        def prepare() -> None:  # torch allocates its output: the allocator hands this poisoned block back
            t = fn()
            torch.cuda.synchronize()
            poison(t)

        res = _gpu_measure(fn, lambda got: spec.check(got, ref), prepare)
        error = "; ".join(e for e in (note, res.pop("error")) if e)
        return {"variant": variant, "backend": backend, "constants": what, **res, "error": error}

    rows = [timed("torch eager", "torch", desc, lambda: f(*args))]
    g, note = _compile(f, args)
    if g is None:
        rows.append({"variant": "torch.compile", "backend": "inductor", "correct": False, "error": note})
    else:
        rows.append(timed("torch.compile", "inductor", desc, lambda: g(*args), note))
    if item.kernel == "matmul":  # cuBLAS in the same dtype and the same operand layout (B [N, K]: tf32 only)
        a, b = args
        nk = backend == "triton" and item.dtype == "tf32"
        mm = (lambda: torch.mm(a, b.t())) if nk else (lambda: torch.mm(a, b))
        rows.append(timed("ceiling", "cublas", "torch.mm(a, b.t())" if nk else "torch.mm(a, b)", mm))
    else:  # a device-to-device copy of the input; the check compares it with the input
        x, dst = ins[0], torch.empty_like(ins[0])
        res = _gpu_measure(lambda: dst.copy_(x), lambda got: (torch.equal(got, x), ""), lambda: poison(dst))
        rows.append({"variant": "ceiling", "backend": "copy", "constants": "dst.copy_(x)", **res})
    return rows


def task(item: SweepItem, device: int) -> dict[str, Any]:
    """One item on one GPU: tune and time every variant; the sweep's worker calls this."""
    import gc

    import torch

    from autopad.kernels_registry import builtin_spec

    if not torch.cuda.is_available():
        return {"variants": [], "note": "no CUDA device: nothing measured"}
    gc.collect()
    torch.cuda.set_device(device)
    torch.cuda.empty_cache()
    # fp32 torch.mm is true fp32 cuBLAS; a tf32 item's peers use TF32 products like the kernel
    torch.backends.cuda.matmul.allow_tf32 = item.dtype == "tf32"
    dev = torch.device("cuda", device)
    variants: list[dict[str, Any]] = []
    primary = None  # (backend, spec, inputs, reference) that the torch variants and the ceiling use
    for backend in BACKENDS:
        spec = builtin_spec(item.kernel, backend)
        if item.dtype not in spec.DTYPES:
            continue
        ins = spec.make_inputs(item.shape, item.dtype, dev, seed=SEED, dist=item.dist or "uniform")
        ref = spec.reference(ins)
        primary = primary or (backend, spec, ins, ref)
        variants += _autopad_rows(spec, item, backend, ins, ref, device)
        if backend == "triton":  # tl.trans / tl.dot, or the Triton histogram at its defaults (1 replica)
            plain = dict(spec.DEFAULTS) if item.kernel == "histogram" else None
            what = "defaults" if plain else {"transpose": "tl.trans", "matmul": "tl.dot"}[item.kernel]
            row = {"variant": "plain triton", "backend": "triton"}
            row["constants"] = f"{what} {_fmt(plain or spec.BASELINE_TL)}"
            variants.append({**row, **_run_spec(spec, plain, item.dtype, ins, ref)})
        del ins, ref
    if primary is None:
        return {"variants": [], "note": f"no backend supports {item.kernel} in {item.dtype}"}
    backend, spec, ins, ref = primary
    variants += _torch_rows(item, spec, backend, ins, ref)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return {"gpu": torch.cuda.get_device_name(device), "date": when, "variants": variants}


# ------------------------------------------------------------------------------------------------- CLI


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="benchmarks/results/h200", help="folder for the CSVs and PNGs")
    ap.add_argument("--quick", action="store_true", help="one shape per kernel and dtype (a smoke run)")
    ap.add_argument("--gpus", type=int, help="use GPUs 0..N-1 (default: every visible GPU)")
    ap.add_argument("--kernels", default=",".join(KERNELS), help="comma-separated subset of the kernels")
    ap.add_argument("--top-k", type=int, default=6, help="tune()'s top_k")
    ap.add_argument("--refine", type=int, default=16, help="tune()'s refine (local-search measurements)")
    ap.add_argument("--plot", nargs="+", metavar="CSV", help="redraw the PNGs beside these CSVs, no GPU")
    ap.add_argument("--summary", nargs="+", metavar="CSV", help="print a Markdown table of these CSVs")
    args = ap.parse_args(argv)
    if args.plot or args.summary:
        for p in args.plot or []:
            for (kernel,), krows in _groups(read_rows([p]), ("kernel",)).items():
                print(plot(krows, Path(p).with_name(f"sweep_{kernel}.png")))
        if args.summary:
            print(summary(read_rows(args.summary)))
        return 0
    kernels = [k for k in args.kernels.split(",") if k]
    if not kernels or any(k not in KERNELS for k in kernels):
        ap.error(f"--kernels: choose from {', '.join(KERNELS)}, got {args.kernels!r}")
    import torch

    n = torch.cuda.device_count()
    if n == 0:
        print("sweep_kernels: no CUDA device visible; nothing to measure", file=sys.stderr)
        return 1
    devices = list(range(min(args.gpus or n, n)))
    work = build_items(args.quick, kernels)
    os.environ[TOP_K_ENV] = str(args.top_k)
    os.environ[REFINE_ENV] = str(args.refine)
    t0 = time.perf_counter()
    results = run_sweep(work, devices, task=task_name(), item_timeout_s=1200)
    wall = time.perf_counter() - t0
    out = Path(args.out)
    rows = flatten(work, results)
    for (kernel,), krows in _groups(rows, ("kernel",)).items():
        print(write_rows(krows, out / f"sweep_{kernel}.csv"))
        try:
            print(plot(krows, out / f"sweep_{kernel}.png"))
        except ImportError as exc:
            print(f"no PNG ({exc}); redraw later with --plot", file=sys.stderr)
    print(summary(rows))
    print(f"{len(work)} items on {len(devices)} GPU(s) in {wall:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
