"""Benchmark autopad's Triton kernels against torch, the plain-Triton baselines and a copy of the same bytes.

For each kernel: the autopad-chosen layout (lowest modelled wavefronts among a small legal shortlist, ties
to the simplest), the unpadded / unswizzled layout, the textbook fix, the plain-Triton baseline
(``tl.trans`` / ``tl.dot``), torch (``x.t().contiguous()``, ``torch.matmul`` = cuBLAS, ``torch.bincount``),
and a device-to-device copy of the same bytes, all measured in this run. Every variant is checked against
the torch reference on fresh random data with a poisoned output before it is timed; timing is the
tuner's own (``autopad.bench.benchmark``: the median of 30 CUDA-event runs, a 256 MB L2 flush before each).

    python3 benchmarks/bench_triton.py --out OUT [--quick] [--only transpose,matmul,histogram]
    python3 benchmarks/bench_triton.py --plot OUT/triton_bench.csv   # PNG from an existing CSV

Writes OUT/triton_bench.csv and OUT/triton_bench.png.
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
sys.path.insert(0, str(ROOT))

FIELDS = [
    "kernel",
    "dtype",
    "shape",
    "variant",
    "constants",
    "ms",
    "gbps",
    "tflops",
    "ratio",
    "ratio_to",
    "predicted_wavefronts",
    "correct",
    "device",
    "date",
]


def _bench(fn) -> float:
    from autopad.bench import benchmark

    return benchmark(fn, reps=30, warmup=3).ms


class Recorder:
    def __init__(self, out: Path) -> None:
        import torch

        self.rows: list[dict] = []
        self.out = out
        self.device = torch.cuda.get_device_name()
        self.date = datetime.date.today().isoformat()

    def add(self, **kw) -> dict:
        row = {k: "" for k in FIELDS}
        row.update(kw, device=self.device, date=self.date)
        for k in ("ms", "gbps", "tflops", "ratio"):
            if isinstance(row[k], float):
                row[k] = round(row[k], 4)
        self.rows.append(row)
        print(
            f"{row['kernel']:>9} {row['dtype']:>13} {row['shape']:>16} {row['variant']:>28} "
            f"{row['ms']:>9} ms {row['gbps']!s:>8} GB/s {row['tflops']!s:>7} TF/s "
            f"x{row['ratio']} {row['ratio_to']} {row['correct']}",
            flush=True,
        )
        self.save()
        return row

    def save(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        with open(self.out / "triton_bench.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=FIELDS)
            w.writeheader()
            w.writerows(self.rows)


def _copy_ms(nbytes: int) -> float:
    import torch

    x = torch.empty(nbytes // 2, dtype=torch.int16, device="cuda").random_()
    y = torch.empty_like(x)
    return _bench(lambda: y.copy_(x))


# ---------------------------------------------------------------------------------------------- transpose


def autopad_transpose_choice(
    dtype: str, tiles=((64, 64, 8), (64, 128, 8), (128, 64, 8), (32, 128, 4))
) -> dict:
    """Lowest modelled wavefronts per byte over a shortlist: full-width vectors, pads and swizzles."""
    from autopad.kernels.triton import transpose as T

    from autopad.access import score
    from autopad.spec import DTYPE_BYTES

    vec = 16 // DTYPE_BYTES[dtype]
    best = None
    for bm, bn, warps in tiles:
        base = {
            "BM": bm,
            "BN": bn,
            "VEC": vec,
            "WARPS": warps,
            "PAD": 0,
            "SW_VEC": 1,
            "PER_PHASE": 1,
            "MAX_PHASE": 1,
        }
        cands = [base] + [{**base, "PAD": p} for p in (vec, 2 * vec)]
        cands += [
            {**base, "SW_VEC": sv, "PER_PHASE": pp, "MAX_PHASE": mp}
            for sv in (1, 2, 4, 8, 16)
            for pp in (1, 2, 4)
            for mp in (4, 8, 16, 32)
        ]
        for c in cands:
            if not T.legal(c, (16384, 16384), dtype):
                continue
            pc = score(T.smem_pattern(c, dtype), T.layout(c, dtype))
            key = (pc.wavefronts / (bm * bn), c["PAD"] + c["MAX_PHASE"], -bm * bn)
            if best is None or key < best[0]:
                best = (key, c, pc.wavefronts)
    return {**best[1], "_wavefronts": best[2]}


TILES_WIDE = ((64, 64, 8), (64, 64, 4), (128, 64, 8), (64, 128, 8))  # (BM, BN, warps) for 4/8-byte types
TILES_NARROW = ((128, 128, 8), (128, 128, 4), (64, 128, 4), (128, 64, 4))  # 1/2-byte types


def bench_transpose(rec: Recorder, quick: bool) -> None:
    import torch
    from autopad.kernels.triton import transpose as T

    from autopad.access import score

    dtypes = ["float32", "bfloat16"] if quick else ["float32", "bfloat16", "int8", "float64"]
    shape = (16384, 16384)
    for dtype in dtypes:
        x = T.make_inputs(shape, dtype, "cuda", seed=1)
        ref = T.reference(x)
        out = T.alloc_output(x)
        nbytes = T.traffic(shape, dtype)["bytes"]
        copy_ms = _copy_ms(nbytes // 2)
        common = {"kernel": "transpose", "dtype": dtype, "shape": "x".join(map(str, shape))}
        rec.add(
            **common,
            variant="copy (same bytes)",
            ms=copy_ms,
            gbps=nbytes / copy_ms / 1e6,
            ratio=1.0,
            ratio_to="copy",
            correct="n/a",
        )

        def timed(
            variant,
            fn,
            constants="",
            wf="",
            _common=common,
            _x=x,
            _ref=ref,
            _out=out,
            _nbytes=nbytes,
            _copy=copy_ms,
        ):
            _out.view(torch.uint8).fill_(0xFF)
            fn()
            torch.cuda.synchronize()
            ok, why = T.check(_out, _ref)
            ms = _bench(fn) if ok else float("nan")
            return rec.add(
                **_common,
                variant=variant,
                constants=constants,
                ms=ms,
                gbps=_nbytes / ms / 1e6,
                ratio=_copy / ms,
                ratio_to="copy",
                predicted_wavefronts=wf,
                correct="exact" if ok else why,
            )

        # autopad: the model picks the layout for each tile of a short list; the benchmark picks the tile
        wide = T.pack(dtype) == 1
        tiles = TILES_WIDE if wide else TILES_NARROW
        if quick:
            tiles = tiles[:1]
        best = None
        for bm, bn, w in tiles:
            c = autopad_transpose_choice(dtype, tiles=((bm, bn, w),))
            wf = c.pop("_wavefronts")
            built = T.build(c, dtype)
            row = timed(f"gluon autopad {bm}x{bn}/{w}w", lambda b=built: T.run(b, x, out), json.dumps(c), wf)  # noqa: B023
            if best is None or (row["ms"] == row["ms"] and row["ms"] < best[0]["ms"]):
                best = (row, c)
        rec.add(**{**best[0], "variant": "gluon autopad (tuned: best of list)"})
        c = best[1]
        plain = {**c, "PAD": 0, "SW_VEC": 1, "PER_PHASE": 1, "MAX_PHASE": 1}
        for name, v in (("gluon unpadded", plain), ("gluon textbook pad", {**plain, "PAD": c["VEC"]})):
            built = T.build(v, dtype)
            wf = score(T.smem_pattern(v, dtype), T.layout(v, dtype)).wavefronts
            timed(name, lambda b=built: T.run(b, x, out), json.dumps(v), wf)  # noqa: B023 (called at once)
        tl_cfgs = ((64, 64, 8), (64, 64, 4), (128, 128, 8), (128, 128, 4)) if not quick else ((64, 64, 8),)
        for bm, bn, w in tl_cfgs:
            timed(
                f"tl.trans {bm}x{bn}/{w}w",
                lambda bm=bm, bn=bn, w=w: T.run_tl(x, out, bm, bn, w),  # noqa: B023 (called at once)
                json.dumps({"BM": bm, "BN": bn, "WARPS": w}),
            )
        timed("torch x.t().contiguous()", lambda: out.copy_(x[0].t()))  # noqa: B023 (called at once)
        torch.cuda.empty_cache()


# ---------------------------------------------------------------------------------------------- matmul


def bench_matmul(
    rec: Recorder, quick: bool, dtypes: tuple[str, ...] = ("bfloat16", "float16", "tf32")
) -> None:
    import torch
    from autopad.kernels.triton import matmul as G

    from autopad.access import score

    n = 8192
    shape = (n, n, n)
    plans = [
        (
            "bfloat16",
            [
                G.DEFAULTS,
                {**G.DEFAULTS, "STAGES": 4},
                {**G.DEFAULTS, "SWIZZLE": 64},
                {**G.DEFAULTS, "SWIZZLE": 32},
                {**G.DEFAULTS, "BN": 128, "STAGES": 4, "WARPS": 4, "BM": 128},
                {**G.DEFAULTS, "PERSIST": 1},
                {**G.DEFAULTS, "PATH": 1},
            ],
        )
    ]
    plans += [("float16", [G.DEFAULTS]), ("tf32", [{**G.DEFAULTS, "BN": 128, "BK": 32, "STAGES": 4}])]
    plans = [p for p in plans if p[0] in dtypes]
    for dtype, cfgs in plans:
        # the spec's inputs: B [K, N] for 16-bit (as the user holds it), [N, K] for tf32
        x = G.make_inputs(shape, dtype, "cuda", seed=3)
        ref = G.reference(x)
        out = G.alloc_output(x)
        flops = 2 * n**3
        common = {"kernel": "matmul", "dtype": dtype, "shape": f"{n}x{n}x{n}"}
        a, b = x[0], x[1]
        bb = b if G.b_kn(dtype) else b.T
        torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
        cub_ms = _bench(lambda: torch.matmul(a, bb, out=out))  # noqa: B023 (called at once)
        rec.add(
            **common,
            variant="cuBLAS torch.matmul",
            ms=cub_ms,
            tflops=flops / cub_ms / 1e9,
            ratio=1.0,
            ratio_to="cuBLAS",
            correct="reference",
        )

        def timed(variant, fn, constants="", wf="", _common=common, _ref=ref, _out=out, _cub=cub_ms):
            _out.fill_(float("nan"))
            fn()
            torch.cuda.synchronize()
            ok, why = G.check(_out, _ref)
            ms = _bench(fn) if ok else float("nan")
            return rec.add(
                **_common,
                variant=variant,
                constants=constants,
                ms=ms,
                tflops=flops / ms / 1e9,  # noqa: B023 (called at once)
                ratio=_cub / ms,
                ratio_to="cuBLAS",
                predicted_wavefronts=wf,
                correct=why,
            )

        for c in cfgs:
            if not G.legal(c, shape, dtype):
                continue
            built = G.build(c, dtype)
            w = score(G.smem_pattern(c, dtype), G.layout(c, dtype)).wavefronts
            kind = "tl.dot path" if c.get("PATH") else ("gluon persist" if c.get("PERSIST") else "gluon")
            name = f"{kind} {c['BM']}x{c['BN']}x{c['BK']} s{c['STAGES']} sw{c['SWIZZLE']}"
            timed(name, lambda b=built: G.run(b, x, out), json.dumps(c), w)  # noqa: B023 (called at once)
        if dtype == "tf32":  # fp32 operands: the 128x256x64 x 3 stages tile needs 288 KB of shared memory
            timed("tl.dot 128x128x32 s3", lambda: G.run_tl(x, out, 128, 128, 32, 3, 4))  # noqa: B023
            continue
        timed("tl.dot 128x256x64 s3", lambda: G.run_tl(x, out, 128, 256, 64, 3, 8))  # noqa: B023 (called at once)
        if not quick:
            timed("tl.dot 128x128x64 s4", lambda: G.run_tl(x, out, 128, 128, 64, 4, 4))  # noqa: B023 (called at once)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.cuda.empty_cache()


# ---------------------------------------------------------------------------------------------- histogram


def bench_histogram(rec: Recorder, quick: bool) -> None:
    import torch
    from autopad.kernels.triton import histogram as H

    n = 1 << 28
    shape = (n, 256)
    base = {**H.DEFAULTS, "R": 8, "PAD": 32}
    cfgs = [
        ("R1", H.DEFAULTS),
        ("R8 pad32 (textbook)", H.textbook(shape, "int32")),
        ("R8 pad32 block4096 it8", {**base, "BLOCK": 4096, "ITERS": 8}),
        ("R8 pad32 block4096 it8 16w", {**base, "BLOCK": 4096, "ITERS": 8, "WARPS": 16}),
        ("R8 pad32 block8192 it4 16w", {**base, "BLOCK": 8192, "ITERS": 4, "WARPS": 16}),
        ("R8 pad32 block8192 it8 8w", {**base, "BLOCK": 8192, "ITERS": 8}),
        ("R32 pad32 block4096 it16 8w", {**base, "R": 32, "BLOCK": 4096, "ITERS": 16}),
    ]
    if quick:
        cfgs = cfgs[2:3]
    for dist in ("uniform", "equal"):
        x = H.make_inputs(shape, "int32", "cuda", seed=5, dist=dist)
        ref = H.reference(x)
        out = H.alloc_output(x)
        nbytes = 4 * n
        common = {"kernel": "histogram", "dtype": "int32", "shape": f"{n}x256 {dist}"}
        torch_ms = _bench(lambda: torch.bincount(x[0], minlength=256))  # noqa: B023 (called at once)
        rec.add(
            **common,
            variant="torch.bincount",
            ms=torch_ms,
            gbps=nbytes / torch_ms / 1e6,
            ratio=1.0,
            ratio_to="torch.bincount",
            correct="reference",
        )
        copy_ms = _copy_ms(nbytes)
        rec.add(
            **common,
            variant="copy (input bytes, read+write)",
            ms=copy_ms,
            gbps=2 * nbytes / copy_ms / 1e6,
            ratio=torch_ms / copy_ms,
            ratio_to="torch.bincount",
            correct="n/a",
        )
        for name, c in cfgs:
            built = H.build(c, "int32")
            out.fill_(-1)
            H.run(built, x, out)
            torch.cuda.synchronize()
            ok, why = H.check(out, ref)
            ms = _bench(lambda b=built: H.run(b, x, out)) if ok else float("nan")  # noqa: B023 (called at once)
            ok2, why2 = H.check(out, ref)  # the replicas re-zero themselves: repeated calls stay exact
            rec.add(
                **common,
                variant=f"triton {name}",
                constants=json.dumps(c),
                ms=ms,
                gbps=nbytes / ms / 1e6,
                ratio=torch_ms / ms,
                ratio_to="torch.bincount",
                correct=why if not ok or ok2 else why2,
            )
        torch.cuda.empty_cache()


# ---------------------------------------------------------------------------------------------- plot


def plot(csv_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = list(csv.DictReader(open(csv_path)))
    groups: dict[tuple, list] = {}
    for r in rows:
        groups.setdefault((r["kernel"], r["dtype"], r["shape"]), []).append(r)
    fig, axes = plt.subplots(len(groups), 1, figsize=(11, 2.2 * len(groups) + 0.5), squeeze=False)
    for ax, ((k, d, s), rs) in zip(axes[:, 0], groups.items(), strict=True):
        vals = [float(r["ratio"]) if r["ratio"] not in ("", "nan") else 0.0 for r in rs]
        names = [r["variant"] for r in rs]
        colors = [
            "tab:green"
            if "autopad" in n
            else "tab:gray"
            if ("copy" in n or "cuBLAS" in n or "bincount" in n)
            else "tab:blue"
            for n in names
        ]
        ax.barh(names, vals, color=colors)
        ax.set_title(
            f"{k} {d} {s}: ratio to {rs[0]['ratio_to']} ({rs[0]['device']}, {rs[0]['date']})", fontsize=9
        )
        ax.tick_params(labelsize=7)
        for i, v in enumerate(vals):
            ax.text(v, i, f" {v:.2f}", va="center", fontsize=7)
    fig.tight_layout()
    fig.savefig(csv_path.with_suffix(".png"), dpi=90)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=Path("bench_out"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="transpose,matmul,histogram")
    ap.add_argument("--matmul-dtypes", default="bfloat16,float16,tf32")
    ap.add_argument("--plot", type=Path, help="only draw the PNG for an existing CSV")
    args = ap.parse_args()
    if args.plot:
        plot(args.plot)
        return
    rec = Recorder(args.out)
    t0 = time.time()
    for name in args.only.split(","):
        try:
            if name == "matmul":
                bench_matmul(rec, args.quick, tuple(args.matmul_dtypes.split(",")))
            else:
                {"transpose": bench_transpose, "histogram": bench_histogram}[name](rec, args.quick)
        except Exception as e:  # keep what was measured; report the failure
            print(f"!! {name} failed: {type(e).__name__}: {e}", flush=True)
        print(f"-- {name} done at {time.time() - t0:.0f}s", flush=True)
    rec.save()
    try:
        plot(args.out / "triton_bench.csv")
    except Exception as e:
        print(f"!! plot failed: {e}")


if __name__ == "__main__":
    main()
