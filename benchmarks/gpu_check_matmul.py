"""GPU check of the matmul kernels on one H200 in at most ~150 s: correctness first, then time against cuBLAS.

Round 2 answers the cells the first run (2026-12-01) left open:

* fp32 4096^3 / 8192^3 / decode 128x8192x8192 (CUDA SIMT, TF32 off): the old pick vs the paired thread
  map vs split-K. Run 1 measured nothing here: NVRTC rejected matmul.cu (lambdas; now device functions).
* bf16 / fp16 8192^3 with B [K, N]: run 1 had the [K, N] kernel at 0.875 / 0.895 of cuBLAS and its
  [N, K] twin at 0.979. Variants that tell the causes apart: the raster (GROUP_M 1, 4, 8, 16, 64; 64 is
  M-fastest, "B-stationary": each wave reads two B column blocks and all of A), B's rows 64 elements
  longer (address mapping), a deeper ring, BK 128, the persistent kernel (rewritten: run 1's lost 25-35%
  to ptxas serialising wgmma, "C7517"), and a transposing copy of B timed with the [N, K] kernel, each
  next to the [N, K] twin of the same run.
* bf16 / fp16 3000x5000x1000 (run 1: 0.76 / 0.78, target 0.85): the persistent kernel (next tile's loads
  and this tile's TMA store overlap the epilogue), rasters, the [N, K] twin.
* the PATH 1 fallback (plain tl.dot, any shape): correctness on shapes TMA refuses (N, K not multiples of
  8), its time on 4096x4095x4093 next to cuBLAS, and on 4096^3 next to the TMA kernel (the model ranks it
  below; this checks that).

Round 3 (issue 13, ``--only ws``: the four "ws" cells, about 2-3 minutes): the warp-specialized persistent
kernels at bf16 / fp16 3000x5000x1000 (target 0.85 of cuBLAS) and 4096^3, next to cuBLAS, the plain
kernel (the best so far, 0.75-0.78) and PERSIST 1 with its refill arithmetic moved out of the K loop:

* "g ws ..." (PERSIST 2, ``matmul_gluon_ws``): a one-warp TMA loader partition and the consumer warps
  (wgmma + epilogue); 128x256x64 with 3 stages and one C tile, or 2 stages and two C tiles (the store of
  tile t drains while t + 1 computes), and 128x128x64 with 4 warps;
* "g pp ..." (PERSIST 3, ``matmul_gluon_pingpong``): two 4-warp consumers taking alternate tiles and turns
  at the tensor cores (one's epilogue overlaps the other's wgmma), 128x128 or 64x256 tiles each.

Each variant is checked on the odd shapes first (a failing or hanging one is recorded, the rest go on: a
deadlocked kernel costs ``--hang-s`` seconds, then a fresh worker takes the next task).

What it runs, in one worker process (replaced if a kernel faults and takes its CUDA context with it; the
task it was on is recorded as failed and the rest go on):

1. Correctness of every variant before its first timing, on odd shapes: fresh random inputs, the output
   poisoned (NaN bytes), the relative Frobenius error against an fp64 product (bf16 1e-2, fp16 3e-3, fp32
   1e-5). TMA shapes keep N and K multiples of 8 (2056x4104x72 runs several tiles per persistent program
   with fewer K steps than the ring); PATH 1 and fp32 also take 1000x37x513, 37x13x77, 1x1x1.
2. Timing, cell by cell, open cells first: cuBLAS (``torch.matmul(a, b)``, same dtype, TF32 off for fp32,
   B as the user holds it, [K, N]; for 16-bit also cuBLAS on B [N, K]) and the autopad variants, each
   through the path ``autopad.ops.matmul`` takes (``spec.inputs_from(a, b)`` then ``spec.launcher(...)``:
   B read as [K, N], no copy; "[N,K]" variants get a pre-transposed B, copied outside the timing). Each
   timed output is checked again first. Timing: ``autopad.bench.benchmark`` (the tuner's own: CUDA events,
   256 MB L2 flush before every run, median). ``host_us``: wall time per call of 20 back-to-back calls.
   ``graph_ms`` (Triton variants and cuBLAS): the same call captured in a CUDA graph, checked, and timed the
   same way: the GPU's time alone. Where ``host_us`` exceeds the flush plus the kernel (split-K at decode:
   run 1 had host_us 121-127 us), the plain timing includes the host's gap; the graph timing does not.

Output: ``OUT/gpu_check_matmul.csv`` (one row per check and per timing), then a table, each target's verdict
(best correct autopad variant / cuBLAS of the same run) and ANSWERS (the open questions, one line each).

    python benchmarks/gpu_check_matmul.py --out $OUT [--budget-s 140] [--only bf16,decode] [--hang-s 120]
    python benchmarks/gpu_check_matmul.py --out $OUT --only ws --budget-s 240 --hang-s 40   # round 3
    GPU_CHECK_FAKE=1 python benchmarks/gpu_check_matmul.py --out /tmp/x   # the flow without a GPU
"""

from __future__ import annotations

import argparse
import csv
import multiprocessing as mp
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy

D16 = {"BM": 128, "BN": 256, "BK": 64, "STAGES": 3, "WARPS": 8, "SWIZZLE": 128, "GROUP_M": 8, "SPLIT_K": 1,
       "PERSIST": 0, "PATH": 0}  # fmt: skip
D32 = {"BM": 128, "BN": 128, "BK": 8, "TM": 8, "TN": 8, "MIN_BLOCKS": 2, "PAD_A": 0, "SW_VEC_A": 1,
       "SW_PER_PHASE_A": 1, "SW_MAX_PHASE_A": 1, "PAD_B": 0, "SW_VEC_B": 1, "SW_PER_PHASE_B": 1,
       "SW_MAX_PHASE_B": 1, "THREAD_MAP": 0, "SPLIT_K": 1}  # fmt: skip
SWA = {"SW_VEC_A": 4, "SW_PER_PHASE_A": 1, "SW_MAX_PHASE_A": 8}
# name -> (backend, constants, B form): "kn" = the user's [K, N] (no copy); "nk" = pre-transposed [N, K]
VARIANTS: dict[str, tuple[str, dict[str, int], str]] = {
    "g 128x256x64 s3": ("triton", D16, "kn"),
    "g 128x256x64 s3 [N,K]": ("triton", D16, "nk"),  # the same kernel reading B as [N, K] (K-major)
    # B [K, N] copied to [N, K] inside the timed call (torch's transposing copy), then the [N, K] kernel:
    # what a copy costs against the [K, N] kernel's gap (run 1: 0.17 ms at bf16 8192^3)
    "g 128x256x64 s3 via B^T copy": ("triton", D16, "nk_copy"),
    # B [K, N] in a buffer whose rows are 64 elements longer: the same page stream, other address bits
    "g 128x256x64 s3 ld+64": ("triton", D16, "kn_ld"),
    "g 128x256x64 s4": ("triton", {**D16, "STAGES": 4}, "kn"),
    "g 128x256x128 s2": ("triton", {**D16, "BK": 128, "STAGES": 2}, "kn"),
    "g 128x256x64 s3 gm1": ("triton", {**D16, "GROUP_M": 1}, "kn"),
    "g 128x256x64 s3 gm4": ("triton", {**D16, "GROUP_M": 4}, "kn"),
    "g 128x256x64 s3 gm16": ("triton", {**D16, "GROUP_M": 16}, "kn"),
    "g 128x256x64 s3 gm64": ("triton", {**D16, "GROUP_M": 64}, "kn"),
    "g persist 128x256x64 s3": ("triton", {**D16, "PERSIST": 1}, "kn"),
    "g persist 128x256x64 s3 gm64": ("triton", {**D16, "PERSIST": 1, "GROUP_M": 64}, "kn"),
    "g ws 128x256x64 s3": ("triton", {**D16, "PERSIST": 2}, "kn"),
    "g ws 128x256x64 s2 2C": ("triton", {**D16, "PERSIST": 2, "STAGES": 2}, "kn"),
    "g ws 128x128x64 s4 w4": ("triton", {**D16, "PERSIST": 2, "BN": 128, "WARPS": 4, "STAGES": 4}, "kn"),
    "g ws 128x128x64 s5 w4": ("triton", {**D16, "PERSIST": 2, "BN": 128, "WARPS": 4, "STAGES": 5}, "kn"),
    "g pp 128x128x64 s4": ("triton", {**D16, "PERSIST": 3, "BN": 128, "WARPS": 4, "STAGES": 4}, "kn"),
    "g pp 128x128x64 s5": ("triton", {**D16, "PERSIST": 3, "BN": 128, "WARPS": 4, "STAGES": 5}, "kn"),
    "g pp 64x256x64 s4": ("triton", {**D16, "PERSIST": 3, "BM": 64, "WARPS": 4, "STAGES": 4}, "kn"),
    "g 128x128x64 s3 w4": ("triton", {**D16, "BN": 128, "WARPS": 4}, "kn"),
    "g 128x64x64 s4 w4": ("triton", {**D16, "BN": 64, "STAGES": 4, "WARPS": 4}, "kn"),
    "g split4 128x256x64 s3": ("triton", {**D16, "SPLIT_K": 4}, "kn"),
    "g split2 128x128x64 s4 w4": ("triton", {**D16, "BN": 128, "STAGES": 4, "WARPS": 4, "SPLIT_K": 2}, "kn"),
    "tl 128x256x64 s3 (PATH 1)": ("triton", {**D16, "PATH": 1}, "kn"),
    "tl 128x128x32 s4 w4 (PATH 1)": ("triton", {**D16, "PATH": 1, "BN": 128, "BK": 32, "STAGES": 4,
                                                "WARPS": 4}, "kn"),
    "c 128x128 bk8 mb2 (old pick)": ("cuda", D32, "kn"),
    "c 128x128 bk8 mb2 paired swA": ("cuda", {**D32, "THREAD_MAP": 1, **SWA}, "kn"),
    "c 128x128 bk16 mb2 paired swA": ("cuda", {**D32, "BK": 16, "THREAD_MAP": 1, **SWA}, "kn"),
    "c 128x128 bk16 mb1 paired swA": (
        "cuda", {**D32, "BK": 16, "MIN_BLOCKS": 1, "THREAD_MAP": 1, **SWA}, "kn"),
    "c 128x128 bk8 mb2 paired": ("cuda", {**D32, "THREAD_MAP": 1}, "kn"),
    "c split2 128x128 bk8 paired swA": ("cuda", {**D32, "THREAD_MAP": 1, "SPLIT_K": 2, **SWA}, "kn"),
    "c split4 128x128 bk8 paired swA": ("cuda", {**D32, "THREAD_MAP": 1, "SPLIT_K": 4, **SWA}, "kn"),
    "c split2 64x128 8x4 bk16 paired": (
        "cuda", {**D32, "BM": 64, "TN": 4, "BK": 16, "THREAD_MAP": 1, "SPLIT_K": 2, "PAD_A": 4}, "kn"),
    "c 64x64 4x4 bk16 paired": (
        "cuda", {**D32, "BM": 64, "BN": 64, "TM": 4, "TN": 4, "BK": 16, "THREAD_MAP": 1, "PAD_A": 4}, "kn"),
}  # fmt: skip
C32 = [v for v, (b, _, _) in VARIANTS.items() if b == "cuda"]
# odd shapes: TMA ones keep N and K multiples of 8 (= 8 mod 16, sharing one Triton specialization with
# 3000x5000x1000); 2056x4104x72: 289 tiles (2-3 per persistent program) of 2 K steps (< 3 stages)
TMA_CHECKS = [(1000, 1032, 520), (2056, 4104, 72), (136, 2056, 4104)]
ANY_CHECKS = [(1000, 37, 513), (37, 13, 77), (1, 1, 1), (257, 515, 1001)]
BIG, MID, DEC = (4096, 4096, 4096), (8192, 8192, 8192), (128, 8192, 8192)
ODD, UNALIGNED = (3000, 5000, 1000), (4096, 4095, 4093)
BF = ["g 128x256x64 s3", "g 128x256x64 s3 [N,K]", "g 128x256x64 s3 via B^T copy", "g 128x256x64 s3 ld+64",
      "g persist 128x256x64 s3",
      "g 128x256x64 s3 gm64",
      "g 128x256x64 s3 gm4", "g 128x256x64 s3 gm16", "g 128x256x64 s3 gm1", "g 128x256x64 s4",
      "g 128x256x128 s2", "g persist 128x256x64 s3 gm64"]  # fmt: skip
FP = ["g 128x256x64 s3", "g 128x256x64 s3 [N,K]", "g persist 128x256x64 s3", "g 128x256x64 s3 gm64",
      "g 128x256x64 s3 gm4", "g 128x256x64 s3 via B^T copy"]  # fmt: skip
P1 = ["tl 128x256x64 s3 (PATH 1)", "tl 128x128x32 s4 w4 (PATH 1)"]
WSV = ["g 128x256x64 s3", "g persist 128x256x64 s3", "g ws 128x256x64 s3", "g ws 128x256x64 s2 2C",
       "g ws 128x128x64 s4 w4", "g ws 128x128x64 s5 w4", "g pp 128x128x64 s4", "g pp 128x128x64 s5",
       "g pp 64x256x64 s4"]  # fmt: skip
# (cell, dtype, shape, variants, target ratio to cuBLAS), open cells first (a spent budget drops the tail)
CELLS = [
    ("ws bf16 3000x5000x1000", "bfloat16", ODD, WSV, 0.85),
    ("ws fp16 3000x5000x1000", "float16", ODD, WSV, 0.85),
    ("ws bf16 4096^3", "bfloat16", BIG, WSV, 0.95),
    ("ws fp16 4096^3", "float16", BIG, WSV, 0.95),
    ("bf16 8192^3", "bfloat16", MID, BF, 0.95),
    ("fp32 4096^3", "float32", BIG, C32[:5], 0.85),
    ("bf16 3000x5000x1000", "bfloat16", ODD, FP + ["g 128x256x64 s4", "g persist 128x256x64 s3 gm64"], 0.85),
    ("fp16 8192^3", "float16", MID, FP, 0.95),
    ("fp32 decode 128x8192x8192", "float32", DEC,
     ["c split2 128x128 bk8 paired swA", "c split4 128x128 bk8 paired swA", "c split2 64x128 8x4 bk16 paired",
      "c 64x64 4x4 bk16 paired", "c 128x128 bk8 mb2 (old pick)"], 0.7),
    ("fp16 3000x5000x1000", "float16", ODD, FP, 0.85),
    ("fp32 8192^3", "float32", MID, ["c 128x128 bk8 mb2 (old pick)", "c 128x128 bk8 mb2 paired swA",
                                     "c 128x128 bk16 mb1 paired swA"], 0.85),
    ("bf16 4095x4093 fallback", "bfloat16", UNALIGNED, P1, None),
    ("bf16 4096^3", "bfloat16", BIG, ["g 128x256x64 s3", "g persist 128x256x64 s3", P1[0]], 0.95),
    ("bf16 decode 128x8192x8192", "bfloat16", DEC,
     ["g 128x64x64 s4 w4", "g split4 128x256x64 s3", "g split2 128x128x64 s4 w4", "g 128x256x64 s3"], 0.7),
]  # fmt: skip
TOL = {"bfloat16": 1e-2, "float16": 3e-3, "float32": 1e-5}
FIELDS = ["phase", "cell", "variant", "dtype", "shape", "ok", "rel_err", "ms", "tflops", "vs_cublas",
          "host_us", "graph_ms", "vs_cublas_graph", "target", "constants", "error"]  # fmt: skip


def check_shapes(variant: str, dtype: str) -> list[tuple[int, int, int]]:
    """The odd shapes a variant is checked on: any shape for fp32 and PATH 1, TMA-describable ones else."""
    backend, c, _ = VARIANTS[variant]
    if backend == "cuda":  # 136x1032x2056: whole tiles, the unguarded load path
        return ANY_CHECKS + [(136, 1032, 2056)]
    return ANY_CHECKS + [TMA_CHECKS[0]] if c.get("PATH", 0) else TMA_CHECKS


def tasks(only: str | None) -> list[dict[str, Any]]:
    """Cell by cell, in priority order: the checks of its variants not checked yet (odd shapes), then its
    timings (cuBLAS first). A variant is always checked before it is first timed."""
    cells = [c for c in CELLS if not only or any(w in c[0] for w in only.split(","))]
    if not only:  # a plain run keeps round 2's cells; the ws cells are asked for by name
        cells = [c for c in cells if not c[0].startswith("ws ")]
    out, seen = [], set()
    for cell, dt, shape, variants, target in cells:
        for v in variants:
            for odd in check_shapes(v, dt):
                if (v, dt, odd) not in seen:
                    seen.add((v, dt, odd))
                    out.append({"phase": "check", "cell": cell, "variant": v, "dtype": dt, "shape": odd})
        peers = ["cuBLAS"] + (["cuBLAS (B as [N,K])"] if dt != "float32" and shape != UNALIGNED else [])
        for v in peers + variants:
            out.append(
                {"phase": "time", "cell": cell, "variant": v, "dtype": dt, "shape": shape, "target": target}
            )
    return out


# ---- the worker ----------------------------------------------------------------------------------------


class _State:
    def __init__(self) -> None:
        import torch

        from autopad.kernels_registry import builtin_spec

        self.torch = torch
        self.specs = {b: builtin_spec("matmul", b) for b in ("triton", "cuda")}
        self.built: dict[tuple, Any] = {}
        self.data: dict[tuple, Any] = {}
        torch.backends.cuda.matmul.allow_tf32 = False  # fp32 cuBLAS is true fp32
        torch.backends.cudnn.allow_tf32 = False

    def inputs(self, dt: str, shape: tuple[int, int, int]) -> tuple[Any, Any, Any, Any]:
        """A [M, K], B [K, N] (fresh randoms), B [N, K] (made here, outside any timing), the fp64 answer."""
        key = (dt, shape)
        if key not in self.data:
            if len(self.data) > 4:  # keep memory bounded: large shapes come cell by cell
                self.data.clear()
                self.torch.cuda.empty_cache()
            t = self.torch
            m, n, k = shape
            g = t.Generator(device="cuda").manual_seed(hash(key) % (1 << 31))
            tdt = getattr(t, dt)
            a = t.randn(m, k, device="cuda", generator=g).to(tdt)
            b = t.randn(k, n, device="cuda", generator=g).to(tdt)
            self.data[key] = (a, b, b.t().contiguous(), a.double() @ b.double())
        return self.data[key]

    def fn(self, v: str, dt: str, shape: tuple[int, int, int], out: Any) -> Any:
        """The call to time: cuBLAS, or the variant through inputs_from + launcher (the ops path)."""
        t = self.torch
        a, b, b_nk, _ = self.inputs(dt, shape)
        if v == "cuBLAS":
            return lambda: t.matmul(a, b, out=out)
        if v == "cuBLAS (B as [N,K])":
            return lambda: t.matmul(a, b_nk.t(), out=out)
        backend, c, form = VARIANTS[v]
        spec = self.specs[backend]
        key = (v, dt)
        if key not in self.built:
            self.built[key] = spec.build(dict(c), dt)
        built = self.built[key]
        if form in ("nk", "nk_copy"):
            from autopad.bases import Inputs

            go = spec.impl.launcher(built, shape, dt, kn=False)
            if form == "nk_copy":  # the transposing copy is part of the call
                return lambda: go(Inputs([a, b.t().contiguous()], shape), out)
            ins = Inputs([a, b_nk], shape)
            return lambda: go(ins, out)
        go = spec.impl.launcher(built, shape, dt)
        inputs_from = spec.impl.inputs_from
        if form == "kn_ld":  # the same values, rows 64 elements apart more (copied outside the timing)
            if (dt, shape, "ld") not in self.data:
                k, n = b.shape
                self.data[(dt, shape, "ld")] = t.empty((k, n + 64), dtype=b.dtype, device=b.device)[:, :n]
                self.data[(dt, shape, "ld")].copy_(b)
            b = self.data[(dt, shape, "ld")]
        return lambda: go(inputs_from(a, b), out)

    def run(self, task: dict[str, Any]) -> dict[str, Any]:
        from autopad.bench import benchmark, poison

        t = self.torch
        v, dt, shape = task["variant"], task["dtype"], tuple(task["shape"])
        m, n, k = shape
        res = {**task, "shape": "x".join(map(str, shape))}
        if v in VARIANTS:
            res["constants"] = ",".join(f"{x}={y}" for x, y in sorted(VARIANTS[v][1].items()))
        out = t.empty((m, n), dtype=getattr(t, dt), device="cuda")
        f = self.fn(v, dt, shape, out)
        poison(out)
        f()
        t.cuda.synchronize()
        ref = self.inputs(dt, shape)[3]
        o = out.double()
        if not t.isfinite(o).all():
            return {**res, "ok": False, "error": "non-finite output (unwritten or overflowed)"}
        err = float(t.linalg.vector_norm(o - ref) / max(float(t.linalg.vector_norm(ref)), 1e-300))
        res.update(ok=err <= TOL[dt], rel_err=f"{err:.2e}")
        if not res["ok"]:
            return {**res, "error": f"relative error {err:.2e} > {TOL[dt]:.0e}"}
        if task["phase"] == "check":
            return res
        tm = benchmark(f, reps=25, warmup=3, budget_ms=300.0)
        t0 = time.perf_counter()
        for _ in range(20):
            f()
        host = (time.perf_counter() - t0) / 20 * 1e6
        t.cuda.synchronize()
        res.update(ms=f"{tm.ms:.4f}", tflops=f"{2 * m * n * k / tm.ms / 1e9:.1f}", host_us=f"{host:.1f}")
        if v.startswith("cuBLAS") or VARIANTS[v][0] == "triton":
            try:
                res["graph_ms"] = f"{self.graph_time(f, out, ref, dt):.4f}"
            except Exception as exc:  # the plain timing stands; say why this one is missing
                res["error"] = f"graph timing skipped: {type(exc).__name__}: {exc}"[:200]
                t.cuda.synchronize()
        return res

    def graph_time(self, f: Any, out: Any, ref: Any, dt: str) -> float:
        """The same call captured in a CUDA graph and replayed (checked once, then timed as above): the GPU's
        time without the host's. A small kernel whose host side (descriptors, launches: ``host_us``)
        outlasts the L2 flush before it is otherwise timed with the host's gap included."""
        from autopad.bench import benchmark, poison

        t = self.torch
        side = t.cuda.Stream()
        side.wait_stream(t.cuda.current_stream())
        with t.cuda.stream(side):
            f()
        t.cuda.current_stream().wait_stream(side)
        g = t.cuda.CUDAGraph()
        with t.cuda.graph(g):
            f()
        poison(out)
        g.replay()
        t.cuda.synchronize()
        err = float(t.linalg.vector_norm(out.double() - ref) / max(float(t.linalg.vector_norm(ref)), 1e-300))
        if not err <= TOL[dt]:
            raise RuntimeError(f"graph replay: relative error {err:.2e}")
        return benchmark(g.replay, reps=25, warmup=3, budget_ms=300.0).ms


class _Fake:
    """GPU_CHECK_FAKE=1: made-up results without a GPU, to exercise the worker protocol and the report; a
    task whose variant contains GPU_CHECK_FAKE_DIE kills the worker (as a faulting kernel would)."""

    torch = None

    def run(self, task: dict[str, Any]) -> dict[str, Any]:
        die = os.environ.get("GPU_CHECK_FAKE_DIE")
        if die and die in task["variant"] and task["phase"] == "time":
            os._exit(3)
        ms = 1.0 if task["variant"].startswith("cuBLAS") else 1.0 + len(task["variant"]) / 100
        graph = {"graph_ms": f"{ms * 0.95:.4f}"} if not task["variant"].startswith("c ") else {}
        return {**task, "shape": "x".join(map(str, task["shape"])), "ok": True, "rel_err": "1e-07",
                "ms": f"{ms:.4f}", "tflops": "1.0", "host_us": "10.0", **graph}  # fmt: skip


def _child(todo: list[dict[str, Any]], conn: Any, deadline: float) -> None:
    """The worker: runs the tasks in order, sending ("start", i), ("result", i, row) and ("done",) through
    a pipe (a send is written at once, so a worker that dies mid-run loses nothing it reported)."""
    q = conn
    try:
        state = _Fake() if os.environ.get("GPU_CHECK_FAKE") else _State()
    except BaseException as exc:
        q.send(("crash", f"{type(exc).__name__}: {exc}"))
        return
    for i, task in enumerate(todo):
        if time.time() > deadline:
            q.send(("result", i, {**task, "ok": False, "error": "skipped: time budget spent"}))
            continue
        q.send(("start", i))
        try:
            q.send(("result", i, state.run(task)))
        except BaseException as exc:
            msg = f"{type(exc).__name__}: {exc}"[:600]
            q.send(("result", i, {**task, "ok": False, "error": msg, "trace": traceback.format_exc(limit=2)}))
            try:  # a sticky CUDA error poisons the context: stop, the parent starts a fresh worker
                if state.torch is not None:
                    state.torch.cuda.synchronize()
            except BaseException:
                return
    q.send(("done",))


def run_all(todo: list[dict[str, Any]], budget_s: float, hang_s: float = 120.0) -> list[dict[str, Any]]:
    """Run the tasks in a worker; a worker that dies or hangs (no answer in ``hang_s`` after its last: a
    deadlocked kernel) costs the task it was on, then a fresh one takes the rest."""
    deadline = time.time() + budget_s
    results: dict[int, dict[str, Any]] = {}
    pending = list(range(len(todo)))
    ctx = mp.get_context("spawn")
    while pending:
        recv, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_child, args=([todo[i] for i in pending], send, deadline), daemon=True)
        proc.start()
        send.close()  # the worker holds the only write end: its death is an EOF here
        current, last, limit = None, time.time(), 300.0  # the first answer waits for imports and CUDA init
        while True:
            try:
                if not recv.poll(1.0):
                    if proc.is_alive() and time.time() - last < limit:
                        continue
                    raise EOFError(f"no answer in {limit:.0f} s (hung)" if proc.is_alive() else "")
                msg = recv.recv()
            except (EOFError, OSError) as exc:
                msg = ("fault", str(exc) or "the worker died")
            last, limit = time.time(), hang_s
            if msg[0] == "start":
                current = msg[1]
            elif msg[0] == "result":
                results[pending[msg[1]]] = msg[2]
                current = None
            elif msg[0] == "done":
                break
            elif msg[0] == "crash":  # the worker could not even start: nothing will run
                for i in pending:
                    results.setdefault(i, {**todo[i], "ok": False, "error": f"worker: {msg[1]}"})
                break
            else:  # died or hung: the task it was on failed; a sticky CUDA error also ends a worker
                if current is not None:
                    i = pending[current]
                    results.setdefault(i, {**todo[i], "ok": False, "error": f"fault: {msg[1]}"})
                break
        if proc.is_alive():
            proc.kill()
        proc.join(timeout=10)
        left = [i for i in pending if i not in results]
        if left and len(left) == len(pending):  # no progress at all (a worker dying at start): give up one
            results[left[0]] = {**todo[left[0]], "ok": False, "error": "fault: the worker stopped before it"}
            left = left[1:]
        pending = left
    return [results[i] for i in range(len(todo))]


# ---- report ----------------------------------------------------------------------------------------------


def summarise(rows: list[dict[str, Any]]) -> list[str]:
    lines = []
    for col, out in (("ms", "vs_cublas"), ("graph_ms", "vs_cublas_graph")):
        cub = {r["cell"]: float(r[col]) for r in rows if r["phase"] == "time" and r["variant"] == "cuBLAS"
               and r.get(col)}  # fmt: skip
        for r in rows:
            if r["phase"] == "time" and r.get(col) and r["cell"] in cub:
                r[out] = f"{cub[r['cell']] / float(r[col]):.3f}"
    bad = [r for r in rows if r["phase"] == "check" and not r.get("ok")]
    good = sum(1 for r in rows if r["phase"] == "check" and r.get("ok"))
    lines.append(f"correctness: {good} checks passed, {len(bad)} failed")
    for r in bad:
        lines.append(f"  FAILED {r['variant']} {r['dtype']} {r['shape']}: {r.get('error', '')[:160]}")
    lines.append("")
    lines.append(f"{'cell':28} {'variant':34} {'ms':>9} {'TFLOP/s':>8} {'vs cuBLAS':>9} {'host us':>8} "
                 f"{'graph ms':>9} {'(graph)':>8}  note")  # fmt: skip
    for r in rows:
        if r["phase"] != "time":
            continue
        note = "" if r.get("ok") else ("WRONG/FAILED: " + str(r.get("error", ""))[:60])
        if r.get("ok") and r.get("error"):
            note = str(r["error"])[:60]
        lines.append(f"{r['cell']:28} {r['variant'][:34]:34} {r.get('ms', '-'):>9} {r.get('tflops', '-'):>8} "
                     f"{r.get('vs_cublas', '-'):>9} {r.get('host_us', '-'):>8} {r.get('graph_ms', '-'):>9} "
                     f"{r.get('vs_cublas_graph', '-'):>8}  {note}")  # fmt: skip
    lines.append("")
    lines.append("targets (best correct autopad variant / cuBLAS, same run; as timed in run 1, and from CUDA")
    lines.append("graphs, the host's launch cost left out of both):")
    for cell, _, _, _, target in CELLS:
        parts = []
        for col, how in (("vs_cublas", "plain"), ("vs_cublas_graph", "graph")):
            mine = [r for r in rows if r["cell"] == cell and r["phase"] == "time" and r.get(col)
                    and r["variant"] in VARIANTS and VARIANTS[r["variant"]][2] == "kn"]  # fmt: skip
            if mine:
                best = max(mine, key=lambda r: float(r[col]))  # noqa: B023 (called at once)
                ratio = float(best[col])
                verdict = "" if target is None else (" MET" if ratio >= target else " MISSED")
                parts.append(f"{how} {ratio:.3f}{verdict} by '{best['variant']}'")
        goal = "no target: the fallback" if target is None else f"target {target}"
        lines.append(f"  {cell:28} ({goal}) " + ("; ".join(parts) or "not measured"))
    lines.append("")
    lines.append("ANSWERS (times of the same run; > 1 means the first is faster):")
    lines += answers(rows)
    return lines


def _ms(rows: list[dict[str, Any]], cell: str, variant: str, col: str = "ms") -> float | None:
    for r in rows:
        hit = r["phase"] == "time" and r["cell"] == cell and r["variant"] == variant
        if hit and r.get("ok") and r.get(col):
            return float(r[col])
    return None


def answers(rows: list[dict[str, Any]]) -> list[str]:
    """One line per open question: ratios of two timings of the same run, or what is missing."""
    out = []

    def ratio(label: str, cell: str, fast: str, slow: str) -> None:
        a, b = _ms(rows, cell, fast, "graph_ms"), _ms(rows, cell, slow, "graph_ms")
        how = "graphs"
        if not (a and b):
            a, b, how = _ms(rows, cell, fast), _ms(rows, cell, slow), "plain"
        txt = f"{b / a:.3f} ({how})" if a and b else "n/a (a timing is missing or failed)"
        out.append(f"  {label:64} {txt}")

    for cell in [c[0] for c in CELLS if c[0].startswith("ws ")]:
        for v in WSV[1:]:
            ratio(f"{cell}: '{v}' vs the plain kernel", cell, v, "g 128x256x64 s3")
    for cell in ("bf16 8192^3", "fp16 8192^3", "bf16 3000x5000x1000", "fp16 3000x5000x1000"):
        kn = [r for r in rows if r["phase"] == "time" and r["cell"] == cell and r.get("ok") and r.get("ms")
              and r["variant"] in VARIANTS and VARIANTS[r["variant"]][2] == "kn"]  # fmt: skip
        twin = _ms(rows, cell, "g 128x256x64 s3 [N,K]")
        if kn and twin:
            best = min(kn, key=lambda r: float(r["ms"]))
            out.append(f"  {cell}: best [K,N] '{best['variant']}' vs the [N,K] twin: "
                       f"{twin / float(best['ms']):.3f} (>= 1: the [K,N] gap is closed)")  # fmt: skip
        ratio(f"{cell}: persistent vs plain (s3)", cell, "g persist 128x256x64 s3", "g 128x256x64 s3")
        ratio(f"{cell}: B^T copy + [N,K] kernel vs the [K,N] kernel", cell, "g 128x256x64 s3 via B^T copy",
              "g 128x256x64 s3")  # fmt: skip
        ratio(f"{cell}: B-stationary raster gm64 vs gm8", cell, "g 128x256x64 s3 gm64", "g 128x256x64 s3")
        ratio(f"{cell}: raster gm4 vs gm8", cell, "g 128x256x64 s3 gm4", "g 128x256x64 s3")
    for gm in ("gm1", "gm16"):
        ratio(f"bf16 8192^3: raster {gm} vs gm8", "bf16 8192^3", f"g 128x256x64 s3 {gm}", "g 128x256x64 s3")
    big, p1 = "bf16 8192^3", P1[0]
    ratio(f"{big}: B rows 64 longer vs power-of-two rows (> 1.03: address mapping)", big,
          "g 128x256x64 s3 ld+64", "g 128x256x64 s3")  # fmt: skip
    ratio(f"{big}: s4 vs s3 (latency-bound if > 1.02)", big, "g 128x256x64 s4", "g 128x256x64 s3")
    ratio("bf16 4096^3: TMA kernel vs PATH 1 (model: TMA faster, > 1)", "bf16 4096^3", "g 128x256x64 s3", p1)
    ratio("bf16 4095x4093 fallback: PATH 1 vs cuBLAS (< 1: slower)", "bf16 4095x4093 fallback", p1, "cuBLAS")
    for cell in ("fp32 4096^3", "fp32 8192^3"):
        ratio(f"{cell}: paired swA vs the old pick", cell, "c 128x128 bk8 mb2 paired swA",
              "c 128x128 bk8 mb2 (old pick)")  # fmt: skip
    ratio("fp32 decode: split2 paired swA vs the old pick", "fp32 decode 128x8192x8192",
          "c split2 128x128 bk8 paired swA", "c 128x128 bk8 mb2 (old pick)")  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder for gpu_check_matmul.csv")
    ap.add_argument("--budget-s", type=float, default=140.0, help="stop starting tasks after this long")
    ap.add_argument(
        "--only",
        help="comma-separated words a cell name must contain (e.g. 'bf16,decode'); "
        "'ws': the warp-specialized cells of round 3 (left out unless named)",
    )
    ap.add_argument("--hang-s", type=float, default=120.0, help="a task silent this long is a hang: a fresh "
                    "worker takes the rest")  # fmt: skip
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from autopad.kernels.triton import matmul as G

    why = G.legal(G.DEFAULTS, (1000, 37, 513), "bfloat16").reason
    p1 = bool(G.legal({**G.DEFAULTS, "PATH": 1}, (1000, 37, 513), "bfloat16"))
    print(f"1000x37x513 bf16 on the TMA path: {why}; on PATH 1 (tl.dot): legal {p1}")
    started = time.time()
    todo = tasks(args.only)
    checks = sum(t["phase"] == "check" for t in todo)
    print(f"{len(todo)} tasks ({checks} checks), budget {args.budget_s:.0f} s", flush=True)
    rows = run_all(todo, args.budget_s, args.hang_s)
    lines = summarise(rows)
    path = out / "gpu_check_matmul.csv"
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in FIELDS})
    print(f"\nwrote {path} ({time.time() - started:.0f} s)\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TRITON_PRINT_AUTOTUNING", "0")
    sys.exit(main())
