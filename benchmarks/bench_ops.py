"""The ops benchmark: exactly the public calls (``autopad.ops.*``) against what a PyTorch user has.

What: per cell (op, shape, dtype), on a fresh autopad cache, the public call ``autopad.ops.transpose(x)``,
``autopad.ops.histogram(x, bins[, weights])`` or ``autopad.ops.matmul(a, b)`` against torch eager,
``torch.compile`` of the same torch code, the best plain-Triton kernel (``tl.trans`` best of 6 configs, a
``tl.histogram`` kernel, ``tl.dot`` best of 3 configs; kernels of this file) and the ceiling (a copy of the
same bytes; cuBLAS). Every variant is first checked on fresh random data (the op's output lands in a
poisoned block), then timed with autopad's harness (``autopad.bench.benchmark``: CUDA events, L2 flushed,
median of 30); ``call_us`` is the wall time per call of back-to-back calls (the host's cost, for small
shapes). Shapes: large square, odd, small and batched, every dtype the op takes (``--quick``: the issue's
rows first, then what fits in the time limit).

Tuning never pollutes a timing: a ``pretune`` step tunes the preconditions (``tune_s``), and each cell's
first call, which may tune in line under the shape policy, is timed apart (``first_call_s``, with the
policy's decision in ``source``). Runs in a worker process; a worker that dies (a faulting kernel takes its
CUDA context) is replaced, the cell it was on is recorded as failed, and the rest go on.

    python benchmarks/bench_ops.py --quick --out $OUT          # one H200: about 5 minutes with tuning
    python benchmarks/bench_ops.py --matrix --out $OUT --cells transpose --tune-s 20  # the kernel issue
    python benchmarks/bench_ops.py --out $OUT --cells transpose,histogram:int32
    python benchmarks/bench_ops.py --out $OUT --cells "*4097x8191*" --no-compile-peers
    python benchmarks/bench_ops.py --plot OUT/ops_quick.csv     # the PNG again, no GPU

Writes ``ops_quick.csv`` / ``ops.csv`` (one row per cell and variant), the PNG and a Markdown table
(``.md``) beside it, and ``ops_rows.jsonl`` (the raw rows, as the workers wrote them).
"""

from __future__ import annotations

import argparse
import csv
import datetime
import fnmatch
import functools
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy

FIELDS = [
    "cell", "op", "shape", "dtype", "variant", "ms", "call_us", "unit", "rate", "ratio_to_ceiling",
    "vs_torch_eager", "correct", "error", "source", "constants", "tune_s", "first_call_s", "gpu", "date",
]  # fmt: skip

# ---- cells ---------------------------------------------------------------------------------------------

# the preconditions of the rows 1 and 2: the shape the op then meets was not tuned, a neighbour was
PRETUNE = {
    "transpose 4097x8191 float16": "transpose 16384x16384 float16",
    "histogram 67108864x4096 int32": "histogram 67108864x256 int32",
}
QUICK = [  # the rows first (row 1: after 16384^2 fp16 was tuned; row 2: after 256 bins were tuned)
    "transpose 4097x8191 float16", "histogram 67108864x4096 int32", "matmul 4096x4096x4096 bfloat16",
    "checks", "transpose 64x64 float32", "transpose 1000x37 float32", "transpose 512x512 float32",
    "transpose 8192x8192 float32", "histogram 16777216x256 int32 weights=float32",
    "transpose 16x1024x1024 bfloat16", "histogram 67108864x256 uint8", "matmul 3000x1000x2000 float16",
    "matmul 2048x2048x2048 float32",
]  # fmt: skip
FULL_TRANSPOSE = ["16384x16384", "4097x8191", "16x1024x1024", "64x64", "512x512", "1000x37"]
FULL_HISTOGRAM = ["67108864x256", "67108864x4096", "4096x256"]
FULL_DTYPES = ("float64", "float32", "bfloat16", "float16", "int8")
FULL = (
    [f"transpose {s} {d}" for d in FULL_DTYPES for s in FULL_TRANSPOSE]
    + [f"histogram {s} {d}" for d in ("int32", "uint8", "int64") for s in FULL_HISTOGRAM]
    + [f"histogram 16777216x{b} int32 weights={w}" for b in (256, 4096) for w in ("float32", "float64")]
    + [f"matmul {s} {d}" for d in ("bfloat16", "float16", "float32")
       for s in ("4096x4096x4096", "3000x1000x2000", "256x256x256")]
    + [f"transpose {s} float8_e4m3fn" for s in FULL_TRANSPOSE[:2]]  # fp8 moves int8's bytes: two shapes
    + ["matmul 8192x8192x8192 float32"]  # the kernel issue's largest fp32 cell (TF32 off)
    + ["checks"]
)  # fmt: skip
# the kernel issue's matrix (``--matrix``), row by row: every cell through the public call, tuned in the call
_DISTS = ("uniform", "skewed", "single", "sorted")  # the names autopad.ops.histogram takes
MATRIX = (
    [f"transpose 16384x16384 {d}" for d in (*FULL_DTYPES, "float8_e4m3fn")]
    + [f"transpose 8x4096x1024 {d}" for d in ("float16", "bfloat16", "float32", "float64")]
    + [f"transpose 4097x8191 {d}" for d in (*FULL_DTYPES, "float8_e4m3fn")]
    + [f"transpose 1000x37 {d}" for d in ("float32", "float16")]
    + [f"matmul {s} {d}" for s in ("4096x4096x4096", "8192x8192x8192") for d in ("bfloat16", "float16")]
    + [f"matmul 3000x5000x1000 {d}" for d in ("bfloat16", "float16")]
    + [f"matmul 128x8192x8192 {d}" for d in ("bfloat16", "float32")]
    + [f"matmul {s} float32" for s in ("4096x4096x4096", "8192x8192x8192")]
    + [f"histogram 67108864x{b} int32 {d}" for b in (4096, 65536) for d in _DISTS]
    + ["histogram 268435456x256 uint8 uniform"]
    + [f"histogram 67108864x256 int32 {d}" for d in _DISTS]
    + ["histogram 67108864x256 int32 uniform backend=triton"]  # against the CUDA backend's row above
)  # fmt: skip


def select(cells: Sequence[str], patterns: str | None) -> list[str]:
    """The cells matching any comma-separated pattern: words joined by ':' that must all be in the cell
    ("transpose", "histogram:int32", "4097x8191"), or a glob ("*4097*")."""
    if not patterns:
        return list(cells)

    def hit(cell: str, pat: str) -> bool:
        if any(ch in pat for ch in "*?["):
            return fnmatch.fnmatch(cell, pat)
        return all(any(p in w for w in cell.split()) for p in pat.split(":"))

    pats = [p.strip() for p in patterns.split(",") if p.strip()]
    return [c for c in cells if any(hit(c, p) for p in pats)]


# ---- arithmetic (pure) ---------------------------------------------------------------------------------

SIZES = {
    "float64": 8,
    "float32": 4,
    "bfloat16": 2,
    "float16": 2,
    "int8": 1,
    "uint8": 1,
    "float8_e4m3fn": 1,
    "int32": 4,
    "int64": 8,
}


def work_of(
    op: str, shape: Sequence[int], dtype: str, weights: str | None = None
) -> tuple[str, float, float]:
    """(unit, work of one call, work of one ceiling call): bytes for GB/s, flops for TFLOP/s. A transpose
    moves its copy's bytes; a histogram reads its input once (and its weights), against a copy of them."""
    if op == "matmul":
        m, n, k = shape
        return "tflops", 2.0 * m * n * k, 2.0 * m * n * k
    if op == "histogram":
        b = float(shape[0] * (SIZES[dtype] + (SIZES[weights] if weights else 0)))
        return "gbps", b, 2 * b
    b = 2.0 * math.prod(shape) * SIZES[dtype]
    return "gbps", b, b


def rate(unit: str, amount: float, ms: float) -> float:
    return amount / ms / (1e6 if unit == "gbps" else 1e9)


def add_ratios(rows: list[dict[str, Any]]) -> None:
    """Per cell: each variant's rate, share of the ceiling and speed-up over torch eager."""
    for cell in dict.fromkeys(r["cell"] for r in rows):
        grp = [r for r in rows if r["cell"] == cell and r.get("unit")]
        ms = {r["variant"]: r["ms"] for r in grp if r.get("ms") and r.get("correct")}
        for r in grp:
            if not (r.get("ms") and r.get("correct")):
                continue
            amount = r["ceiling_work"] if r["variant"] == "ceiling" else r["work"]
            r["rate"] = rate(r["unit"], amount, r["ms"])
            if "ceiling" in ms:
                r["ratio_to_ceiling"] = r["rate"] / rate(r["unit"], r["ceiling_work"], ms["ceiling"])
            if "torch eager" in ms:
                r["vs_torch_eager"] = ms["torch eager"] / r["ms"]


# ---- plain-Triton peers and their torch references -----------------------------------------------------


@functools.lru_cache(maxsize=1)
def triton_kernels() -> dict[str, Any]:
    """The plain-Triton peers (defined on first use: triton is imported only here)."""
    import triton
    import triton.language as tl

    @triton.jit
    def tl_transpose(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
        pid = tl.program_id(0)
        nb_n = tl.cdiv(N, BN)
        pm, pn = pid // nb_n, pid % nb_n
        base = tl.program_id(1).to(tl.int64) * M * N
        rm = (pm * BM + tl.arange(0, BM)).to(tl.int64)
        rn = (pn * BN + tl.arange(0, BN)).to(tl.int64)
        mask = (rm < M)[:, None] & (rn < N)[None, :]
        tile = tl.load(x_ptr + base + rm[:, None] * N + rn[None, :], mask=mask)
        tl.store(y_ptr + base + rn[:, None] * M + rm[None, :], tl.trans(tile), mask=tl.trans(mask))

    @triton.jit
    def tl_hist(x_ptr, out_ptr, n, BINS: tl.constexpr, NB: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m, other=0).to(tl.int32)
        h = tl.histogram(x, NB, mask=m & (x >= 0) & (x < BINS))
        b = tl.arange(0, NB)
        tl.atomic_add(out_ptr + b, h, mask=(b < BINS) & (h != 0), sem="relaxed")

    @triton.jit
    def tl_whist(x_ptr, w_ptr, out_ptr, n, BINS: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m, other=0)
        w = tl.load(w_ptr + offs, mask=m, other=0)
        tl.atomic_add(out_ptr + x, w, mask=m & (x >= 0) & (x < BINS), sem="relaxed")

    @triton.jit
    def tl_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                  GROUP_M: tl.constexpr, IEEE: tl.constexpr, K_TILES: tl.constexpr):  # fmt: skip
        pid = tl.program_id(0)
        n_m, n_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
        per_group = GROUP_M * n_n
        first_m = (pid // per_group) * GROUP_M
        gsize = min(n_m - first_m, GROUP_M)
        pm = first_m + (pid % per_group) % gsize
        pn = (pid % per_group) // gsize
        rm = (pm * BM + tl.arange(0, BM)).to(tl.int64)
        rn = (pn * BN + tl.arange(0, BN)).to(tl.int64)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K_TILES):  # a constexpr trip count: also runs under TRITON_INTERPRET
            kk = k * BK + rk
            a = tl.load(
                a_ptr + rm[:, None] * K + kk[None, :], mask=(rm < M)[:, None] & (kk < K)[None, :], other=0
            )
            b = tl.load(
                b_ptr + kk[:, None] * N + rn[None, :], mask=(kk < K)[:, None] & (rn < N)[None, :], other=0
            )
            acc = tl.dot(a, b, acc, input_precision="ieee" if IEEE else None)
        mask = (rm < M)[:, None] & (rn < N)[None, :]
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty), mask=mask)

    return {"transpose": tl_transpose, "hist": tl_hist, "whist": tl_whist, "matmul": tl_matmul}


TRANSPOSE_CONFIGS = [(32, 32, 4), (32, 32, 8), (64, 64, 4), (64, 64, 8), (128, 128, 4), (128, 128, 8)]
MATMUL_CONFIGS = [
    (128, 128, 64, 4, 8),
    (128, 256, 64, 3, 8),
    (64, 128, 32, 4, 4),
]  # BM, BN, BK, stages, warps


def plain_triton(op: str, args: tuple, extra: dict[str, Any]) -> list[tuple[str, Callable[[], Any]]]:
    """(config, fn) per plain-Triton config for this cell; fn returns the output it wrote."""
    import torch

    k = triton_kernels()
    if op == "transpose":
        x = args[0]
        b, m, n = (1, *x.shape) if x.dim() == 2 else x.shape
        y = torch.empty((*x.shape[:-2], n, m), dtype=x.dtype, device=x.device)

        def tr(bm: int, bn: int, w: int) -> Callable[[], Any]:
            grid = (triton_cdiv(m, bm) * triton_cdiv(n, bn), b)
            return lambda: (k["transpose"][grid](x, y, m, n, bm, bn, num_warps=w), y)[1]

        return [(f"tl.trans {bm}x{bn} w{w}", tr(bm, bn, w)) for bm, bn, w in TRANSPOSE_CONFIGS]
    if op == "histogram":
        x, bins = args[0], args[1]
        w = extra.get("weights")
        if w is not None:
            out = torch.empty(bins, dtype=torch.float32, device=x.device)
            grid = (triton_cdiv(x.numel(), 4096),)

            def whist() -> Any:
                out.zero_()
                k["whist"][grid](x, w.float(), out, x.numel(), bins, 4096, num_warps=8)
                return out

            return [("atomic_add of weights", whist)]
        out = torch.empty(bins, dtype=torch.int32, device=x.device)
        nb = 1 << max(0, (bins - 1).bit_length())
        if nb > 8192:
            return []  # one block's tl.histogram of that many bins does not fit: no plain-Triton peer
        grid = (triton_cdiv(x.numel(), 8192),)

        def hist() -> Any:
            out.zero_()
            k["hist"][grid](x, out, x.numel(), bins, nb, 8192, num_warps=8)
            return out

        return [("tl.histogram + atomic_add", hist)]
    a, b = args
    m, kk = a.shape
    n = b.shape[1]
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    fns = []
    ieee = a.dtype == torch.float32  # fp32 as cuBLAS with TF32 off
    for bm, bn, bk, stages, warps in MATMUL_CONFIGS:
        grid = (triton_cdiv(m, bm) * triton_cdiv(n, bn),)

        def mm(grid: tuple = grid, bm: int = bm, bn: int = bn, bk: int = bk, s: int = stages, w: int = warps):
            k["matmul"][grid](
                a, b, c, m, n, kk, bm, bn, bk, 8, ieee, triton_cdiv(kk, bk), num_warps=w, num_stages=s
            )
            return c

        fns.append((f"tl.dot {bm}x{bn}x{bk} s{stages} w{warps}", mm))
    return fns


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)


# ---- the worker's side ---------------------------------------------------------------------------------


def _short(exc: BaseException) -> str:
    text = " | ".join(line for line in f"{type(exc).__name__}: {exc}".splitlines() if line.strip())
    return text if len(text) <= 300 else text[:300] + " ..."


DEVICE = "cuda"  # the tests run the cells' logic on "cpu" with the kernels mocked


def make_args(
    op: str, shape: tuple[int, ...], dtype: str, weights: str | None, seed: int = 7, dist: str | None = None
) -> tuple:
    """Fresh random inputs (a seed the tuner does not use); a histogram's values of input class ``dist``
    (uniform, skewed, single, sorted: ``histogram_inputs.draw_values``, as the tuner draws them)."""
    import torch

    dev = DEVICE
    g = torch.Generator(device=dev).manual_seed(seed)
    dt = getattr(torch, dtype)
    if op == "histogram" and dist not in (None, "uniform") and weights is None:
        from autopad.kernels.cuda.histogram_inputs import draw_values

        n, bins = shape
        torch.manual_seed(seed)
        with torch.device(dev):
            return (draw_values(n, min(bins, 256 if dtype == "uint8" else bins), dist).to(dt), bins)
    if op == "transpose":
        if dt.is_floating_point:
            return (torch.randn(shape, device=dev, generator=g).to(dt),)
        return (torch.randint(-100, 100, shape, device=dev, generator=g).to(dt),)
    if op == "histogram":
        n, bins = shape
        x = torch.randint(0, min(bins, 256 if dtype == "uint8" else bins), (n,), device=dev, generator=g)
        w = None if weights is None else torch.rand(n, device=dev, generator=g).to(getattr(torch, weights))
        return (x.to(dt), bins) if w is None else (x.to(dt), bins, w)
    m, n, k = shape
    return (
        torch.randn(m, k, device=dev, generator=g).to(dt),
        torch.randn(k, n, device=dev, generator=g).to(dt),
    )


def reference(op: str, args: tuple) -> Any:
    import torch

    if op == "transpose":
        return args[0].transpose(-1, -2).contiguous()
    if op == "histogram":
        x, bins = args[0].long(), args[1]
        if len(args) == 3:
            return torch.bincount(x, weights=args[2].double(), minlength=bins)
        return torch.bincount(x, minlength=bins)
    return args[0].double() @ args[1].double()


def check(op: str, got: Any, ref: Any) -> tuple[bool, str]:
    import torch

    if tuple(got.shape) != tuple(ref.shape):
        return False, f"shape {tuple(got.shape)} != {tuple(ref.shape)}"
    if op == "copy":
        return torch.equal(got, ref), "copy"
    if op == "transpose":
        ok = torch.equal(got.view(torch.uint8), ref.view(torch.uint8))
        return ok, "exact" if ok else "bytes differ"
    if op == "histogram" and not ref.is_floating_point():
        bad = int((got.long() != ref).sum())
        return bad == 0, "exact" if bad == 0 else f"{bad} bins differ"
    g, r = got.double(), ref.double()
    if not torch.isfinite(g).all():
        return False, "non-finite values"
    err = float((g - r).norm() / r.norm().clamp_min(1e-30))
    tol = 1e-4 if op == "histogram" else {torch.float32: 1e-5}.get(got.dtype, 1e-2)
    return err <= tol, f"rel err {err:.1e}"


def measure(op: str, fn: Callable[[], Any], ref: Any, poison_out: Any = None) -> dict[str, Any]:
    """Check ``fn()`` on a poisoned output, then time it (device ms, L2 flushed) and its host cost."""
    import torch

    from autopad.bench import benchmark, poison

    try:
        if poison_out is not None:
            poison(poison_out)
        else:  # the op allocates: the block it frees comes back to its next call of the same size
            first = fn()
            torch.cuda.synchronize()
            poison(first)
            del first
        got = fn()
        torch.cuda.synchronize()
        ok, why = check(op, got, ref)
    except Exception as exc:
        return {"correct": False, "error": _short(exc)}
    if not ok:
        return {"correct": False, "error": f"wrong result: {why}"}
    t = benchmark(fn, reps=30, warmup=3)
    n = 2000 if t.ms < 0.05 else 200 if t.ms < 1 else 20
    for _ in range(min(n, 50)):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return {"correct": True, "ms": t.ms, "call_us": (time.perf_counter() - t0) / n * 1e6, "error": ""}


def run_cell(cell: str, compile_peers: bool) -> list[dict[str, Any]]:
    """Every variant of one cell, checked and timed."""
    import torch

    import autopad
    from autopad.ops.plans import Item, plan

    item = Item.parse(cell)
    op, shape, dtype = item.op, item.shape, item.dtype
    args = make_args(op, shape, dtype, item.weights, dist=item.dist)
    ref = reference(op, args)
    unit, work, ceil_work = work_of(op, shape, dtype, item.weights)
    base = {"cell": cell, "op": op, "shape": "x".join(map(str, shape)), "dtype": dtype, "unit": unit,
            "work": work, "ceiling_work": ceil_work}  # fmt: skip
    call = {
        "transpose": autopad.ops.transpose,
        "histogram": autopad.ops.histogram,
        "matmul": autopad.ops.matmul,
    }
    kw = {"weights": args[2]} if len(args) == 3 else {}
    pos = args[:2] if op == "histogram" else args
    # the op (not its peers) is told the input class and backend the cell names
    opkw = {**kw, **({"dist": item.dist} if item.dist else {})}
    opkw.update({"backend": item.backend} if item.backend != "auto" else {})
    rows = []
    # the op: first call apart (it may tune in line), then the steady state
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        try:
            call[op](*pos, **opkw)
            torch.cuda.synchronize()
            first_error = ""
        except Exception as exc:
            first_error = _short(exc)
        first_s = time.perf_counter() - t0
    p = plan(item)
    want = (p.spec.NAME, p.spec.BACKEND, tuple(p.shape), p.dtype)
    dec = [
        d
        for d in autopad.ops.decisions()
        if (d["kernel"], d["backend"], tuple(d["shape"]), d["dtype"]) == want
    ]
    said_text = next((str(w.message) for w in said if "autopad" in str(w.message)), "")
    row = {**base, "variant": "autopad.ops", "first_call_s": round(first_s, 2)}
    if dec:
        d = dec[-1]
        runs = f" [runs {d['runs']}]" if "runs" in d else ""  # matmul: its kernel or torch.mm (ops.peer)
        row["source"] = (
            f"{d['source']}: {d['detail']}"[:200]
            + runs
            + (f" [said: {said_text[:120]}]" if said_text else "")
        )
        row["constants"] = ",".join(f"{k}={v}" for k, v in sorted(d["constants"].items()))
    if first_error:
        rows.append({**row, "correct": False, "error": f"first call: {first_error}"})
    else:
        rows.append({**row, **measure(op, lambda: call[op](*pos, **opkw), ref)})
        if op == "matmul":  # the bound kernel alone, whichever call the op runs (ops.peer)
            rows += _kernel_alone(base, want, pos, ref, row.get("constants", ""))
    try:
        ours = functools.partial(call[op], **{k: v for k, v in opkw.items() if k != "weights"})
        rows += _peers(op, base, pos, kw, ref, ours, compile_peers)
    except Exception as exc:  # a peer's failure must not lose the rows measured so far
        rows.append({**base, "variant": "(peers)", "correct": False, "error": _short(exc)})
    return rows


def _kernel_alone(base: dict, want: tuple, pos: tuple, ref: Any, constants: str) -> list[dict[str, Any]]:
    """The GEMM autopad bound for the cell, called through ``runner.kernel_call`` (not the op)."""
    from autopad.ops import runner

    bd = next(
        (b for b in runner._BOUND.values() if (b.spec.NAME, b.spec.BACKEND, tuple(b.shape), b.dtype) == want),
        None,
    )
    if bd is None:
        return []
    fn = runner.kernel_call(bd, pos)
    return [
        {
            **base,
            "variant": "autopad kernel",
            "constants": constants,
            **measure("matmul", lambda: fn(*pos), ref),
        }
    ]


def _peers(op: str, base: dict, pos: tuple, kw: dict, ref: Any, ours: Callable, compile_peers: bool) -> list:
    """torch eager, torch.compile, the best plain-Triton config and the ceiling, for one cell."""
    import torch

    rows = []
    # torch eager, torch.compile of the same code, and autopad.ops inside torch.compile(fullgraph=True)
    if op == "transpose":
        eager = lambda t: t.transpose(-1, -2).contiguous()  # noqa: E731
    elif op == "histogram":
        eager = lambda t, b, weights=None: torch.bincount(t, weights=weights, minlength=b)  # noqa: E731
    else:
        eager = lambda a, b: a @ b  # noqa: E731
    rows.append({**base, "variant": "torch eager", **measure(op, lambda: eager(*pos, **kw), ref)})
    if compile_peers:
        for name, f in (("torch.compile", eager), ("autopad.ops in torch.compile", ours)):
            torch._dynamo.reset()
            try:
                g = torch.compile(f, fullgraph=True, dynamic=False)
                res = measure(op, lambda g=g: g(*pos, **kw), ref)
            except Exception as exc:
                res = {"correct": False, "error": f"fullgraph: {_short(exc)}"}
            rows.append({**base, "variant": name, **res})
    # the best plain-Triton config (each config checked; a failing one is noted on the row)
    best, failed = None, []
    try:
        peers = plain_triton(op, pos, kw)
    except Exception as exc:
        peers, failed = [], [_short(exc)]
    for what, fn in peers:
        try:
            out = fn()
            torch.cuda.synchronize()
            res = measure(op, fn, ref, poison_out=out)
        except Exception as exc:
            res = {"correct": False, "error": _short(exc)}
        res["constants"] = what
        if not res.get("ms"):
            failed.append(f"{what}: {res.get('error', '')[:80]}")
        if best is None or (res.get("ms") and (not best.get("ms") or res["ms"] < best["ms"])):
            best = res
    if best is not None or failed:
        best = best or {"correct": False}
        note = "; ".join(failed[:3])
        rows.append({**base, "variant": "plain triton", **best, "error": (best.get("error") or note)[:300]})
    # the ceiling: a copy of the same bytes, or cuBLAS
    if op == "matmul":
        a, b = pos
        rows.append({**base, "variant": "ceiling", "constants": "torch.mm (cuBLAS)",
                     **measure(op, lambda: torch.mm(a, b), ref)})  # fmt: skip
    else:
        src = pos[0] if not kw else torch.cat([pos[0].view(torch.uint8), kw["weights"].view(torch.uint8)])
        dst = torch.empty_like(src)
        res = measure("copy", lambda: dst.copy_(src), src, poison_out=dst)
        rows.append({**base, "variant": "ceiling", "constants": "copy of the input", **res})
    return rows


def run_checks() -> list[dict[str, Any]]:
    """The issue's yes/no rows: torch.compile(fullgraph) around ops.transpose, backward, CUDA graphs."""
    import torch

    import autopad

    rows = []

    def one(name: str, fn: Callable[[], bool]) -> None:
        try:
            ok, err = bool(fn()), ""
        except Exception as exc:
            ok, err = False, _short(exc)
        rows.append({"cell": "checks", "op": "checks", "variant": name, "correct": ok, "error": err})

    x = torch.randn(512, 512, device="cuda")  # square: the backward transposes the same shape (one tune)

    def compiled() -> bool:
        torch._dynamo.reset()
        return torch.equal(
            torch.compile(lambda t: autopad.ops.transpose(t) * 2, fullgraph=True)(x), x.t() * 2
        )

    def backward() -> bool:
        xg = x.clone().requires_grad_()
        autopad.ops.transpose(xg).sum().backward()
        return torch.equal(xg.grad, torch.ones_like(x))

    def graph() -> bool:
        autopad.ops.transpose(x)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = autopad.ops.transpose(x)
        x.copy_(torch.randn_like(x))
        g.replay()
        torch.cuda.synchronize()
        return torch.equal(y, x.t().contiguous())

    one("torch.compile fullgraph around ops.transpose", compiled)
    one("ops.transpose(x).sum().backward()", backward)
    one("CUDA graph capture", graph)
    return rows


def worker(steps_path: str, rows_path: str, deadline: float, compile_peers: bool) -> int:
    """Run each step (a cell, "checks" or "pretune ITEM") appending its rows to ``rows_path`` (JSONL)."""
    import torch

    import autopad
    from autopad.ops import policy

    policy.TUNE_OPTIONS.update(TUNE_OPTIONS)  # the first calls' in-line tunes too
    steps = json.loads(Path(steps_path).read_text())
    if not torch.cuda.is_available():
        with open(rows_path, "a") as f:
            for step in steps:
                f.write(
                    json.dumps(
                        {"cell": step, "variant": "(none)", "correct": False, "error": "no CUDA device"}
                    )
                )
                f.write("\n" + json.dumps({"done": step}) + "\n")
        return 0
    gpu = torch.cuda.get_device_name(0)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 cuBLAS in true fp32, as autopad's fp32 GEMM
    for step in steps:
        with open(rows_path, "a") as f:
            f.write(json.dumps({"start": step}) + "\n")
        if time.time() > deadline:
            rows = [{"cell": step, "variant": "(skipped)", "correct": False, "error": "time limit reached"}]
        elif step.startswith("pretune "):
            t0 = time.perf_counter()
            res = autopad.ops.pretune(step[len("pretune ") :], **TUNE_OPTIONS)[0]
            row = {
                "cell": step,
                "op": res.item.op,
                "shape": "x".join(map(str, res.shape)),
                "dtype": res.dtype,
            }
            row.update(variant="pretune", correct=res.mode != "failed", source=res.mode)
            row.update(
                error=res.message if res.mode == "failed" else "", tune_s=round(time.perf_counter() - t0, 1)
            )
            row["constants"] = ",".join(f"{k}={v}" for k, v in sorted((res.constants or {}).items()))
            rows = [row]
        else:
            try:
                rows = run_checks() if step == "checks" else run_cell(step, compile_peers)
            except Exception as exc:
                rows = [{"cell": step, "variant": "(cell)", "correct": False, "error": _short(exc)}]
        with open(rows_path, "a") as f:
            for r in rows:
                f.write(json.dumps({**r, "gpu": gpu, "date": when}, default=str) + "\n")
            f.write(json.dumps({"done": step}) + "\n")
        try:
            torch.cuda.synchronize()
        except Exception:  # the context is lost: the parent starts another worker for the rest
            os._exit(70)
    return 0


TUNE_OPTIONS: dict[str, Any] = {}  # --quick: every tune (pretune and first calls) measures for at most 25 s


# ---- the parent's side: workers, CSV, PNG, tables --------------------------------------------------------


def run_all(steps: list[str], out: Path, time_limit: float, compile_peers: bool, quick: bool) -> list[dict]:
    rows_path = out / "ops_rows.jsonl"
    rows_path.write_text("")
    deadline = time.time() + time_limit
    todo = list(steps)
    while todo:
        steps_file = out / "ops_steps.json"
        steps_file.write_text(json.dumps(todo))
        cmd = [sys.executable, __file__, "--worker", str(steps_file), "--rows", str(rows_path)]
        cmd += ["--deadline", str(deadline)] + ["--compile-peers"] * compile_peers + ["--quick"] * quick
        if "time_budget_s" in TUNE_OPTIONS and not quick:  # --tune-s, for the worker's tunes
            cmd += ["--tune-s", str(TUNE_OPTIONS["time_budget_s"])]
        try:
            proc = subprocess.run(
                cmd, capture_output=True, text=True, timeout=max(120, deadline - time.time() + 600)
            )
        except subprocess.TimeoutExpired as exc:  # a hung kernel: record it below as a dead worker
            proc = subprocess.CompletedProcess(cmd, 124, "", f"timed out after {exc.timeout:.0f} s")
        lines = [json.loads(line) for line in rows_path.read_text().splitlines() if line.strip()]
        done = {r["done"] for r in lines if "done" in r}
        started = [r["start"] for r in lines if "start" in r]
        todo = [s for s in todo if s not in done]
        if proc.returncode != 0 and todo:
            dead = started[-1] if started and started[-1] in todo else todo[0]
            tail = " | ".join((proc.stderr or "").strip().splitlines()[-3:])
            with open(rows_path, "a") as f:
                f.write(json.dumps({"cell": dead, "variant": "(worker died)", "correct": False,
                                    "error": f"rc {proc.returncode}: {tail[:300]}"}) + "\n")  # fmt: skip
                f.write(json.dumps({"done": dead}) + "\n")
            todo.remove(dead)
        elif proc.returncode != 0:
            print(proc.stderr[-2000:], file=sys.stderr)
    rows = [
        r for r in (json.loads(x) for x in rows_path.read_text().splitlines() if x.strip()) if "variant" in r
    ]
    add_ratios(rows)
    return rows


def write_csv(rows: Sequence[dict[str, Any]], path: Path) -> Path:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: f"{v:.6g}" if isinstance(v := r.get(k, ""), float) else v for k in FIELDS})
    return path


def _num(v: Any) -> float | None:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def summary(rows: Sequence[dict[str, Any]]) -> str:
    """Markdown: per cell, autopad.ops against each peer, and the policy's decision."""
    head = ("| cell | autopad.ops ms | of ceiling | vs eager | vs torch.compile | vs plain Triton | call us "
            "(eager) | first call s | source |")  # fmt: skip
    lines = [head, "|" + " --- |" * 9]
    for cell in dict.fromkeys(r["cell"] for r in rows):
        grp = {r["variant"]: r for r in rows if r["cell"] == cell}
        if cell == "checks":
            for name, r in grp.items():
                lines.append(f"| check: {name} | {'ok' if str(r.get('correct')) == 'True' else 'FAILED'} "
                             f"| {r.get('error', '')[:80]} |" + " |" * 6)  # fmt: skip
            continue
        ap = grp.get("autopad.ops") or grp.get("pretune") or next(iter(grp.values()))
        ms = _num(ap.get("ms"))
        if ap.get("variant") == "pretune":
            lines.append(f"| {cell} | tuned in {ap.get('tune_s')} s ({ap.get('source')}) |" + " |" * 7)
            continue
        if ms is None:
            lines.append(f"| {cell} | {ap.get('error', 'no time')[:80]} |" + " |" * 7)
            continue

        def vs(v: str, grp: dict = grp, ms: float = ms) -> str:
            o = _num(grp.get(v, {}).get("ms"))
            return f"{o / ms:.2f}x" if o else "-"

        ratio = _num(ap.get("ratio_to_ceiling"))
        eager_us = _num(grp.get("torch eager", {}).get("call_us"))
        cu = _num(ap.get("call_us"))
        lines.append(
            f"| {cell} | {ms:.4f} | {f'{ratio:.2f}' if ratio else '-'} | {vs('torch eager')} | "
            f"{vs('torch.compile')} | {vs('plain triton')} | {f'{cu:.1f}' if cu else '-'} "
            f"({f'{eager_us:.1f}' if eager_us else '-'}) | {ap.get('first_call_s', '')} | "
            f"{str(ap.get('source', ''))[:60]} |"
        )
    return "\n".join(lines)


def plot(rows: Sequence[dict[str, Any]], path: Path) -> Path:
    """Left: share of the ceiling per cell and variant. Right: host time per call of the small cells."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    variants = ["autopad.ops", "torch eager", "torch.compile", "autopad.ops in torch.compile", "plain triton"]
    cells = [
        c for c in dict.fromkeys(r["cell"] for r in rows) if c != "checks" and not c.startswith("pretune")
    ]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(max(10, 1.1 * len(cells) + 5), 5), width_ratios=[3, 1])
    width = 0.8 / len(variants)
    for j, v in enumerate(variants):
        got = {r["cell"]: _num(r.get("ratio_to_ceiling")) or 0 for r in rows if r["variant"] == v}
        vals = [got.get(c, 0) for c in cells]
        ax.bar([i - 0.4 + (j + 0.5) * width for i in range(len(cells))], vals, width, label=v)
    ax.axhline(1.0, color="gray", lw=0.8)
    ax.set_xticks(range(len(cells)), [c.replace(" ", "\n", 1) for c in cells], fontsize=6, rotation=60)
    ax.set_ylabel("share of the ceiling (copy of the same bytes; cuBLAS)")
    ax.legend(fontsize=7)
    small = [
        c
        for c in cells
        if c.startswith("transpose") and math.prod(map(int, c.split()[1].split("x"))) <= 1 << 20
    ]
    for j, v in enumerate(["autopad.ops", "torch eager"]):
        us = [
            next((_num(r.get("call_us")) or 0 for r in rows if r["cell"] == c and r["variant"] == v), 0)
            for c in small
        ]
        bx.bar([i - 0.2 + 0.4 * j for i in range(len(small))], us, 0.4, label=v)
    bx.set_xticks(range(len(small)), [c.split()[1] + "\n" + c.split()[2] for c in small], fontsize=7)
    bx.set_ylabel("host time per call, us (back to back)")
    bx.legend(fontsize=7)
    gpu = next((r.get("gpu") for r in rows if r.get("gpu")), "")
    fig.suptitle(f"autopad.ops against torch and plain Triton, one run ({gpu})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="benchmarks/results/h200", help="folder for the CSV, PNG and table")
    ap.add_argument(
        "--quick", action="store_true", help="the issue's rows first, then what fits the time limit"
    )
    ap.add_argument(
        "--matrix", action="store_true", help="the kernel issue's matrix, every row (no torch.compile peers)"
    )
    ap.add_argument("--cells", help="comma-separated patterns over cells ('transpose', 'histogram:int32')")
    ap.add_argument(
        "--cell",
        action="append",
        default=[],
        help="a cell of no list ('histogram 268435456x256 int32 sorted'), run after --cells' (repeatable)",
    )
    ap.add_argument(
        "--time-limit", type=float, help="seconds in which steps may start (default 240 quick, 3600 full)"
    )
    ap.add_argument("--cache-dir", help="autopad cache to use (default: a fresh temporary one)")
    ap.add_argument(
        "--no-compile-peers", action="store_true", help="leave out the torch.compile peers (as --quick does)"
    )
    ap.add_argument("--tune-s", type=float, help="measure for at most this long in each tune (--quick: 25)")
    ap.add_argument("--plot", nargs="+", metavar="CSV", help="redraw the PNG of these CSVs, no GPU")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--rows", help=argparse.SUPPRESS)
    ap.add_argument("--deadline", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--compile-peers", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.quick or args.tune_s:
        TUNE_OPTIONS["time_budget_s"] = args.tune_s or 25.0
    if args.worker:
        return worker(args.worker, args.rows, args.deadline, args.compile_peers)
    if args.plot:
        rows = [dict(r) for p in args.plot for r in csv.DictReader(Path(p).read_text().splitlines())]
        print(plot(rows, Path(args.plot[0]).with_suffix(".png")))
        print(summary(rows))
        return 0
    cells = select(QUICK if args.quick else MATRIX if args.matrix else FULL, args.cells)
    if args.cell:
        from autopad.ops.plans import Item, plan

        for cell in args.cell:  # a cell the op would refuse is refused here, with its words, before any work
            try:
                plan(Item.parse(cell))
            except ValueError as err:
                ap.error(f"--cell {cell!r}: {err}")
        cells = (cells if args.cells else []) + list(args.cell)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    pre = [f"pretune {PRETUNE[c]}" for c in cells if c in PRETUNE]
    cache = args.cache_dir or tempfile.mkdtemp(prefix="autopad-bench-ops-")
    os.environ["AUTOPAD_CACHE_DIR"] = cache  # a fresh cache: every tune happens in this run, timed apart
    os.environ.pop("AUTOPAD_TUNE", None)
    limit = args.time_limit or (240.0 if args.quick else 3600.0)
    t0 = time.perf_counter()
    # --quick leaves out the torch.compile peers (20-40 s of compiling each); its checks step still runs
    # autopad.ops under torch.compile(fullgraph=True)
    peers = not (args.quick or args.matrix or args.no_compile_peers)
    rows = run_all(pre + cells, out, limit, compile_peers=peers, quick=args.quick)
    name = "ops_quick" if args.quick else "ops_matrix" if args.matrix else "ops"
    print(write_csv(rows, out / f"{name}.csv"))
    table = summary(rows)
    (out / f"{name}.md").write_text(table + "\n")
    try:
        print(plot(rows, out / f"{name}.png"))
    except ImportError as exc:
        print(f"no PNG ({exc}); redraw later with --plot {out / f'{name}.csv'}", file=sys.stderr)
    print(table)
    print(f"{len(pre + cells)} steps in {time.perf_counter() - t0:.0f} s; cache {cache}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
