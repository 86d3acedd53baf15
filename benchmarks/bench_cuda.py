"""Benchmark the CUDA kernels (transpose, fp32 GEMM, histograms) against torch and a device copy.

Every variant (each kernel's named presets: the unpadded layout, the textbook padding, vectorised and
swizzled tiles, warp aggregation ...) is checked against torch on the benchmark's own input before it is
timed; a wrong variant is recorded as such and not timed. Times are taken as the tuner takes them
(``autopad.bench.benchmark``: 3 warm-up runs, the median of 30 CUDA-event timings, a 256 MB L2 flush
before each). Bandwidth figures are compared with a
device-to-device copy of the same bytes measured in the same run (bytes read + written for both), the
GEMM with cuBLAS fp32 (``torch.matmul``, TF32 off), the histogram's input bytes per second with the copy's
bytes read + written per second (the issue's definition). Writes ``bench_cuda.csv`` and ``bench_cuda.png``.

    python benchmarks/bench_cuda.py --out benchmarks/results/h200 [--quick]
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy
import torch  # noqa: E402
from autopad.kernels.cuda import histogram as H  # noqa: E402
from autopad.kernels.cuda import matmul as G  # noqa: E402
from autopad.kernels.cuda import transpose as T  # noqa: E402

from autopad.access import score  # noqa: E402

ROWS: list[dict] = []
DEVICE = ""
DATE = datetime.date.today().isoformat()


def bench(fn) -> float:
    from autopad.bench import benchmark

    return benchmark(fn, reps=30, warmup=3).ms


def copy_ms(nbytes: int) -> float:
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda").random_(0, 255)
    dst = torch.empty_like(src)
    return bench(lambda: dst.copy_(src))


def record(**kw) -> None:
    kw.setdefault("device", DEVICE)
    kw.setdefault("date", DATE)
    ROWS.append(kw)
    ratio = kw.get("ratio_to_copy", kw.get("ratio_to_cublas", ""))
    perf = f"{kw['gbps']:8.0f} GB/s" if kw.get("gbps") else f"{kw.get('tflops', 0):8.2f} TF/s"
    ok = "" if kw.get("correct", True) else "  WRONG"
    print(
        f"{kw['kernel']:>18} {kw['dtype']:>13} {kw['shape']:>18} {kw['variant']:>22} {kw['ms']:9.4f} ms "
        f"{perf} ratio {ratio if ratio == '' else f'{ratio:.3f}'}{ok}",
        flush=True,
    )


MODEL = False


def degree(spec, c, dtype, **kw) -> float:
    if not MODEL:
        return float("nan")
    try:
        return round(score(spec.smem_pattern(c, dtype, **kw), spec.layout(c, dtype)).degree, 3)
    except Exception:  # the model is a column, not a gate
        return float("nan")


def run_variant(spec, c, dtype, inputs, ref=None):
    """Build, check on these inputs (poisoned output), time. Returns (ms, correct, message)."""
    built = spec.build(c, dtype)
    out = spec.alloc_output(inputs, c)
    out.view(torch.uint8).fill_(0xA5)
    spec.run(built, inputs, out)
    torch.cuda.synchronize()
    ok, msg = spec.check(out, ref if ref is not None else spec.reference(inputs))
    if not ok:
        return float("nan"), False, msg
    return bench(lambda: spec.run(built, inputs, out)), True, msg


def bench_transpose(quick: bool) -> None:
    for dtype in T.DTYPES:
        e = T.DTYPE_BYTES[dtype]
        side = 16384 if e <= 2 else 8192
        shapes = [(side, side)] if quick or dtype != "float32" else [(side, side), (8, 4096, 4096)]
        for shape in shapes:
            (x,) = T.make_inputs(shape, dtype, "cuda", 0)
            nbytes = T.traffic(shape, dtype)["bytes"]
            cms = copy_ms(nbytes // 2)
            sh = "x".join(map(str, shape))
            record(
                kernel="transpose",
                dtype=dtype,
                shape=sh,
                variant="copy",
                constants="",
                ms=cms,
                gbps=nbytes / cms / 1e6,
                ratio_to_copy=1.0,
            )
            ref = T.reference((x,))
            tms = bench(lambda x=x: x.transpose(-1, -2).contiguous())
            record(
                kernel="transpose",
                dtype=dtype,
                shape=sh,
                variant="torch_t_contiguous",
                constants="",
                ms=tms,
                gbps=nbytes / tms / 1e6,
                ratio_to_copy=cms / tms,
            )
            presets = T.presets(dtype)
            if dtype != "float32":  # time-bounded run: the extra 64x64 baselines for fp32 only
                presets = {k: v for k, v in presets.items() if k not in ("vec64_padded", "vec64_unpadded")}
            if len(shape) == 3:
                presets = {
                    k: v for k, v in presets.items() if k in ("unpadded", "vec_swizzled", "vec_unpadded")
                }
            for name, c in presets.items():
                ms, ok, msg = run_variant(T, c, dtype, (x,), ref)
                record(
                    kernel="transpose",
                    dtype=dtype,
                    shape=sh,
                    variant=name,
                    constants=json.dumps(c),
                    layout=T.layout(c, dtype).describe(),
                    model_degree=degree(T, c, dtype),
                    ms=ms,
                    gbps=nbytes / ms / 1e6,
                    ratio_to_copy=cms / ms,
                    speedup_vs_torch=tms / ms,
                    correct=ok,
                    note=msg,
                )
            del x, ref
            torch.cuda.empty_cache()


def bench_matmul(quick: bool) -> None:
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    for n in (4096,) if quick else (4096, 8192):
        shape = (n, n, n)
        a, b = G.make_inputs(shape, "float32", "cuda", 0)
        flops = G.traffic(shape)["flops"]
        cb = bench(lambda a=a, b=b: torch.matmul(a, b))
        sh = f"{n}x{n}x{n}"
        record(
            kernel="matmul",
            dtype="float32",
            shape=sh,
            variant="cublas_fp32",
            constants="",
            ms=cb,
            tflops=flops / cb / 1e9,
            ratio_to_cublas=1.0,
        )
        # 8192: checked against cuBLAS fp32 (two fp32 products differ by ~1e-6, inside the 1e-5 tolerance)
        ref = G.reference((a, b)) if n <= 4096 else torch.matmul(a, b).double()
        for name, c in G.presets().items():
            ms, ok, msg = run_variant(G, c, "float32", (a, b), ref)
            record(
                kernel="matmul",
                dtype="float32",
                shape=sh,
                variant=name,
                constants=json.dumps(c),
                layout=G.layout(c).describe(),
                model_degree=degree(G, c, "float32"),
                ms=ms,
                tflops=flops / ms / 1e9,
                ratio_to_cublas=cb / ms,
                correct=ok,
                note=msg,
            )
        del a, b, ref
        torch.cuda.empty_cache()


def bench_histogram(quick: bool) -> None:
    cases = [("int32", 1 << 26, 256), ("uint8", 1 << 28, 256), ("int32", 1 << 26, 65536)]
    for dtype, n, bins in cases[:2] if quick else cases:
        dists = ("uniform", "zipf", "equal") if dtype == "int32" else ("uniform", "equal")
        for dist in dists if bins == 256 else ("uniform",):
            shape = (n, bins)
            inputs = H.make_inputs(shape, dtype, "cuda", 0, dist)
            inb = n * T.DTYPE_BYTES[dtype]
            cms = copy_ms(inb)
            copy_bw = 2 * inb / cms / 1e6
            sh = f"{n}x{bins}"
            v = f"{dist}"
            record(
                kernel="histogram",
                dtype=dtype,
                shape=sh,
                variant=f"copy[{v}]",
                constants="",
                ms=cms,
                gbps=copy_bw,
                ratio_to_copy=1.0,
            )
            xl = inputs[0]
            try:
                torch.bincount(xl[:10], minlength=bins)
            except RuntimeError:
                xl = xl.long()
            tb = bench(lambda xl=xl, bins=bins: torch.bincount(xl, minlength=bins))
            record(
                kernel="histogram",
                dtype=dtype,
                shape=sh,
                variant=f"torch_bincount[{v}]",
                constants="",
                ms=tb,
                gbps=inb / tb / 1e6,
                ratio_to_copy=(inb / tb / 1e6) / copy_bw,
            )
            ref = H.reference(inputs)
            for name, c in H.presets(dtype, bins).items():
                ms, ok, msg = run_variant(H, c, dtype, inputs, ref)
                record(
                    kernel="histogram",
                    dtype=dtype,
                    shape=sh,
                    variant=f"{name}[{v}]",
                    constants=json.dumps(c),
                    layout=H.layout(c).describe(),
                    model_degree=degree(H, c, dtype, dist=dist),
                    ms=ms,
                    gbps=inb / ms / 1e6,
                    ratio_to_copy=(inb / ms / 1e6) / copy_bw,
                    speedup_vs_torch=tb / ms,
                    correct=ok,
                    note=msg,
                )
            del inputs, xl, ref
            torch.cuda.empty_cache()
    n, bins = 1 << 26, 256
    for dist in ("uniform", "equal"):
        W = H.WEIGHTED
        inputs = W.make_inputs((n, bins), "int32", "cuda", 0, dist)
        inb = 8 * n
        cms = copy_ms(inb)
        copy_bw = 2 * inb / cms / 1e6
        ref = W.reference(inputs)
        for name, c in H.w_presets(bins).items():
            ms, ok, msg = run_variant(W, c, "int32", inputs, ref)
            record(
                kernel="histogram_weighted",
                dtype="int32+fp32",
                shape=f"{n}x{bins}",
                variant=f"{name}[{dist}]",
                constants=json.dumps(c),
                layout=W.layout(c).describe(),
                model_degree=degree(W, c, "int32", dist=dist),
                ms=ms,
                gbps=inb / ms / 1e6,
                ratio_to_copy=(inb / ms / 1e6) / copy_bw,
                correct=ok,
                note=msg,
            )


COLUMNS = [
    "kernel",
    "dtype",
    "shape",
    "variant",
    "layout",
    "constants",
    "model_degree",
    "ms",
    "gbps",
    "tflops",
    "ratio_to_copy",
    "ratio_to_cublas",
    "speedup_vs_torch",
    "correct",
    "note",
    "device",
    "date",
]


def write(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "bench_cuda.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in ROWS:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    groups: dict[tuple, list[dict]] = {}
    for r in ROWS:
        groups.setdefault((r["kernel"], r["dtype"], r["shape"]), []).append(r)
    keys = list(groups)
    cols = 4
    rows = -(-len(keys) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.2 * rows), squeeze=False)
    for ax, key in zip(axes.flat, keys):
        rs = groups[key]
        vals = [r.get("ratio_to_copy", r.get("ratio_to_cublas", 0)) or 0 for r in rs]
        ax.barh(
            [r["variant"] for r in rs],
            vals,
            color=["tab:gray" if not r.get("constants") else "tab:blue" for r in rs],
        )
        ax.set_title(" ".join(key), fontsize=8)
        ax.tick_params(labelsize=6)
        ax.set_xlabel("ratio to cuBLAS" if key[0] == "matmul" else "ratio to copy", fontsize=7)
    for ax in list(axes.flat)[len(keys) :]:
        ax.axis("off")
    fig.suptitle(f"autopad CUDA kernels on {DEVICE}, {DATE}", fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "bench_cuda.png", dpi=110)


def prebuild() -> int:
    """Compile every benchmarked variant for sm_90 into the cubin cache (NVRTC; no GPU needed)."""
    from autopad import cuda_runtime as rt

    jobs = [(T.source(), T.defines(c, dt)) for dt in T.DTYPES for c in T.presets(dt).values()]
    jobs += [(G.source(), G.defines(c)) for c in G.presets().values()]
    hsrc = H._SOURCE.read_text()
    jobs += [(hsrc, H.defines(c, dt)) for dt in H.DTYPES for c in H.presets(dt).values()]
    jobs += [(hsrc, H.defines(c, "int32")) for c in H.presets("int32", 65536).values()]
    jobs += [(hsrc, H.WEIGHTED.defines(c)) for c in H.w_presets(256).values()]
    for src, d in jobs:
        rt.compile_cubin(src, d, "sm_90", "prebuild")
    print(f"{len(jobs)} variants in {rt.cache_dir()}")
    return 0


def annotate(path: Path) -> int:
    """Fill the model_degree column of a results CSV (the model's wavefronts / ideal for each variant)."""
    global MODEL
    MODEL = True
    rows = list(csv.DictReader(open(path)))
    for r in rows:
        if not r["constants"]:
            continue
        c = json.loads(r["constants"])
        dist = r["variant"].split("[")[-1].rstrip("]") if "[" in r["variant"] else None
        kw = {"dist": dist} if dist else {}
        if r["kernel"] == "transpose":
            r["model_degree"] = degree(T, c, r["dtype"])
        elif r["kernel"] == "matmul":
            r["model_degree"] = degree(G, c, "float32")
        elif r["kernel"] == "histogram":
            r["model_degree"] = degree(H, c, r["dtype"], **kw)
        else:
            r["model_degree"] = degree(H.WEIGHTED, c, "int32", **kw)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    return 0


def main(argv: list[str] | None = None) -> int:
    global DEVICE
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "h200"))
    ap.add_argument("--quick", action="store_true", help="one size per kernel")
    ap.add_argument("--only", default="transpose,matmul,histogram")
    ap.add_argument("--prebuild", action="store_true", help="only compile every variant into the cache")
    ap.add_argument("--annotate", metavar="CSV", help="only add the model's degree to a results CSV")
    args = ap.parse_args(argv)
    if args.prebuild:
        return prebuild()
    if args.annotate:
        return annotate(Path(args.annotate))
    DEVICE = torch.cuda.get_device_name()
    t0 = time.time()
    for name in args.only.split(","):
        try:
            {"transpose": bench_transpose, "matmul": bench_matmul, "histogram": bench_histogram}[name](
                args.quick
            )
        except Exception as exc:  # keep what was measured
            print(f"{name}: FAILED {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        write(Path(args.out))
    print(f"done in {time.time() - t0:.0f} s; wrote {args.out}/bench_cuda.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
