"""New shapes for the model-only study: measured for the purpose, never seen by any fit.

The predictor's constants were fitted on the recorded exhaustive studies (benchmarks/results/h200/quality,
runs 1 and 2). This script measures, on one GPU, four configuration-shapes no study recorded, each on a
stratified sample of its legal space: the model's top 30 as the tuner ranks today, the top 30 with the
proposed spec keys and layouts (``model_only_report.PROPOSED``), the unpadded default and the textbook
pad, and a seeded random sample of the rest (about 150 candidates per shape). Every candidate goes through
autopad's own harness in an isolated worker (``bench.WorkerBenchmarker``): fresh random input, a poisoned
output checked against torch, then CUDA-event timing with the L2 flushed; a candidate that fails to
compile, faults or is wrong is recorded with its reason and the script goes on. The torch peer of each
kernel is timed the same way in the same run (``bench.benchmark``), for scale.

Rows are written in the study's format (``quality_rows.csv.gz``), so the report scores them as held out.
Each round's shapes, why it was drawn and where its committed sample lives are in new_shape_rounds.py:

    python benchmarks/gpu_new_shapes.py --out $OUT                       # on the H200, about 2 minutes
    python benchmarks/model_only_report.py --extra $OUT/new_quality_rows.csv.gz     # afterwards, no GPU
    python benchmarks/gpu_new_shapes.py --write-sample FILE   # draw the sample (no GPU; committed)
    python benchmarks/gpu_new_shapes.py --round 3 --out $OUT  # the misaligned transposes after the halo
                                                              # rework, with the picks tune/ops made there
    python benchmarks/gpu_new_shapes.py --round 4 --out $OUT  # the 1-byte window read-out (three shapes)
    python benchmarks/gpu_new_shapes.py --round 5 --out $OUT  # held out from the one-block register term
    python benchmarks/gpu_new_shapes.py --round 6 --out $OUT  # held out from the aligned build's seam charge
    python benchmarks/gpu_new_shapes.py --round 8 --out $OUT  # held out from the one-block latency_phases
    python benchmarks/gpu_new_shapes.py --round 9 --out $OUT  # the SIMT GEMM on today's source
    python benchmarks/gpu_new_shapes.py --round 10 --out $OUT  # transposes held out from phased_loads
    python benchmarks/gpu_new_shapes.py --round 11 --out $OUT  # SIMT GEMMs held out from smem_issue
    python benchmarks/gpu_new_shapes.py --round 12 --out $OUT  # SIMT GEMMs held out from REG_CAP_SLACK
    python benchmarks/gpu_new_shapes.py --round 13 --out $OUT  # SIMT GEMMs for the checked k-loop
    python benchmarks/gpu_new_shapes.py --round 14 --out $OUT  # SIMT GEMMs for the scalar loads
    python benchmarks/gpu_new_shapes.py --round 15 --out $OUT  # SIMT GEMMs for the k-loop's counts
    python benchmarks/gpu_new_shapes.py --round 16 --out $OUT  # every CUDA family on today's model
    python benchmarks/gpu_new_shapes.py --round 17 --out $OUT  # transposes held out from the partial round
    python benchmarks/gpu_new_shapes.py --round 18 --out $OUT  # ... and from the halo's short segments
    python benchmarks/gpu_new_shapes.py --round 19 --out $OUT  # every CUDA family, mostly histograms, GEMMs
    python benchmarks/gpu_new_shapes.py --round 20 --out $OUT  # histograms held out from the line term
    python benchmarks/gpu_new_shapes.py --round 21 --out $OUT  # uint8 x 256: PRIV 1 against PRIV 0
    python benchmarks/gpu_new_shapes.py --round 22 --out $OUT  # uint8 held out from the h100 profile
    python benchmarks/gpu_new_shapes.py --round 23 --out $OUT  # CUDA families held out from h100
    python benchmarks/gpu_new_shapes.py --round 16 --shape 3001x5003 --shape 7000001x128 --out $OUT
                                                               # some of a round's shapes again
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy
sys.path.insert(0, str(Path(__file__).resolve().parent))

from new_shape_rounds import (  # noqa: E402  (the rounds: what was drawn when)
    ARCH_TOPS,
    BY_PRIV,
    PICKS,
    ROUNDS,
    SAMPLE,
    SAMPLES,
    SHAPES,
)
from tuner_quality import ROW_FIELDS, shape_text  # noqa: E402

from autopad.kernels_registry import builtin_spec  # noqa: E402
from autopad.search import baselines, rank  # noqa: E402

__all__ = ["ROUNDS", "SAMPLES", "SAMPLE", "SHAPES", "PICKS", "sample", "sample_id", "draw", "main"]

TOP = 30
RANDOM = 90


def sample(kernel: str, backend: str, dtype: str, dist: str | None, shape: tuple[int, ...], seed: int = 0):
    """(ranked candidates, {key: why sampled}): the two model top-30s, the baselines and a random rest."""
    import model_only_report as mo
    import numpy as np

    spec = builtin_spec(kernel, backend)
    ranked = rank(spec, shape, dtype, extra=baselines(spec, shape, dtype), dist=dist)
    why: dict[str, str] = {}
    for c in ranked[:TOP]:
        why.setdefault(c.key, "top_tuner")
    # the same space ranked with the proposed spec keys and the layouts (what the report scores as "proposed")
    from autopad.arch import get_arch
    from autopad.predict import predict_arrays
    from autopad.search import _launch_infos, _traffic, score_candidates

    consts = [c.params for c in ranked]
    lays = [c.layout for c in ranked]
    infos = _launch_infos(spec, consts, lays, shape, dtype)
    add = mo.PROPOSED.get((kernel, backend))
    if add is not None:
        infos = [{**i, **add(c, shape, dtype)} for i, c in zip(infos, consts)]
    wave, ideal = score_candidates(spec, consts, lays, dtype, dist, get_arch("sm_90"))
    sec = predict_arrays(infos, _traffic(spec, shape, dtype), wave, ideal, "sm_90", lays)[0]
    for i in np.argsort(sec, kind="stable")[:TOP]:
        why.setdefault(ranked[int(i)].key, "top_proposed")
    for c in ranked:
        if c.roles:
            why.setdefault(c.key, "+".join(c.roles))
    for arch in ARCH_TOPS.get(tuple(shape), ()):  # another profile's top 30 (an H100's: h100)
        for c in rank(spec, shape, dtype, extra=baselines(spec, shape, dtype), dist=dist, arch=arch)[:TOP]:
            why.setdefault(c.key, f"{arch}_top30")
    if kernel == "histogram" and tuple(shape) in BY_PRIV:  # the model's first 10 of every privatisation
        for priv in sorted({c.params["PRIV"] for c in ranked}):
            for c in [c for c in ranked if c.params["PRIV"] == priv][:10]:
                why.setdefault(c.key, f"priv{priv}_first10")
    for want, label in PICKS.get((kernel, dtype, tuple(shape)), []):
        hit = [c.key for c in ranked if c.params == want]
        if not hit:
            raise ValueError(f"{label}: {want} is not in the ranked space of {kernel} {dtype} {shape}")
        why[hit[0]] = f"{why[hit[0]]}+{label}" if hit[0] in why else label
    rest = [c.key for c in ranked if c.key not in why]
    for k in random.Random(seed).sample(rest, min(RANDOM, len(rest))):
        why[k] = "random"
    return ranked, why


def sample_id(cfg: tuple) -> str:
    """A shape's key in a committed sample: kernel/backend/dtype/shape."""
    kernel, backend, dtype, _, shape = cfg
    return f"{kernel}/{backend}/{dtype}/{shape_text(shape)}"


def stale_constants(rows: Sequence[dict[str, Any]], spec: Any) -> list[str]:
    """Constants a sample's rows and the spec's space do not share (a constant since renamed or added)."""
    names = set(spec.SPACE)
    return sorted({k for r in rows for k in set(r["params"]) ^ names})


def draw(cfg: tuple) -> dict[str, Any]:
    """One shape's sample as plain records (what --write-sample commits and the GPU run reads)."""
    kernel, backend, dtype, dist, shape = cfg
    ranked, why = sample(kernel, backend, dtype, dist, shape)
    rows = []
    for i, c in enumerate(ranked):
        if c.key in why:
            p = c.prediction
            rows.append({"key": c.key, "params": c.params, "why": why[c.key], "model_rank": i,
                         "predicted_us": p.seconds * 1e6, "bound": p.bound,
                         "conflict_degree": p.conflict_degree, "footprint": p.footprint})  # fmt: skip
    return {"id": sample_id(cfg), "legal": len(ranked), "rows": rows}


def _peer(kernel: str, dtype: str, shape: tuple[int, ...]) -> tuple[str, float | None, str]:
    """torch's own op on the same shape, timed as the tuner times a candidate (checked first)."""
    import torch

    from autopad import bench

    try:
        spec = builtin_spec(kernel, "cuda")
        inputs = spec.make_inputs(shape, dtype, torch.device("cuda"), 1, "uniform")
        ref = spec.reference(inputs)
        if kernel == "transpose":
            name, fn = "x.transpose(-1, -2).contiguous()", lambda: inputs[0].transpose(-1, -2).contiguous()
        elif kernel == "histogram":
            bins = shape[1]
            name, fn = "torch.bincount", lambda: torch.bincount(inputs[0].long(), minlength=bins)
        else:
            name, fn = "torch.mm (TF32 off)", lambda: inputs[0] @ inputs[1]
            torch.backends.cuda.matmul.allow_tf32 = False
        out = fn()
        ok = torch.allclose(out.double().reshape(ref.shape), ref.double(), rtol=1e-4, atol=1e-3)
        if not ok:
            return name, None, "wrong result"
        return name, bench.benchmark(fn, reps=20).ms, "ok"
    except Exception as exc:  # a peer that fails is reported, never fatal
        return kernel, None, f"{type(exc).__name__}: {str(exc)[:120]}"


def measure_shape(cfg: tuple, writer: Any, deadline: float, drawn: dict[str, Any] | None) -> dict[str, Any]:
    """Sample (or take the committed sample), measure until ``deadline``, write the rows; a summary with the
    torch peer's time."""
    from autopad.bench import BenchJob, WorkerBenchmarker, spec_ref

    kernel, backend, dtype, dist, shape = cfg
    t0 = time.perf_counter()
    if drawn is None:
        drawn = draw(cfg)
    spec = builtin_spec(kernel, backend)
    rows = drawn["rows"]
    # a sample drawn for an older version of the spec (a constant since renamed or added) would run every
    # candidate with the new constant at its default under the old label: refuse it
    stale = stale_constants(rows, spec)
    if stale:
        raise SystemExit(
            f"{drawn['id']}: the sample's constants differ from the spec's ({', '.join(stale)}); "
            "draw it again with --write-sample"
        )
    by_key = {r["key"]: r for r in rows}
    items = tuple((r["key"], r["params"]) for r in rows)
    budget = max(10.0, deadline - time.perf_counter())
    job = BenchJob(spec_ref(spec), items, shape, dtype, dist or "uniform", reps=10, warmup=2,
                   options={"time_budget_ms": 40.0})  # fmt: skip
    meas = {}
    bench = WorkerBenchmarker(timeout_s=60, compile_timeout_s=300)
    for m in bench.measure(job):
        meas[m.key] = m
        if time.perf_counter() - t0 > budget:
            break
    for k, _ in items:
        r, m = by_key[k], meas.get(k)
        writer.writerow({
            "kernel": kernel, "backend": backend, "dtype": dtype, "shape": shape_text(shape), "key": k,
            "predicted_us": f"{r['predicted_us']:.4f}", "bound": r["bound"],
            "conflict_degree": f"{r['conflict_degree']:.4f}", "footprint": r["footprint"],
            "roles": r["why"], "model_rank": r["model_rank"], "in_shortlist": int(r["why"].startswith("top")),
            "correct": "" if m is None else int(m.correct),
            "ms": "" if m is None or m.ms is None else f"{m.ms:.6f}",
            "spread_ms": "" if m is None or m.spread_ms is None else f"{m.spread_ms:.6f}",
            "error": "not measured (time budget)" if m is None else (m.error or "")[:300], "gpu": 0,
        })  # fmt: skip
    ok = {k: m.ms for k, m in meas.items() if m.correct and m.ms}
    # the ranking's first, for the device log: the model-only answer (its default-layout twin within 1%,
    # search_shortlist.model_pick) is what model_only_report.py scores from these rows
    top = min(rows, key=lambda r: r["model_rank"])["key"]
    peer, peer_ms, peer_note = _peer(kernel, dtype, shape)
    return {
        "shape": f"{kernel} [{backend}] {dtype} {shape_text(shape)}",
        "legal": drawn["legal"],
        "sampled": len(items),
        "measured_ok": len(ok),
        "failed": sum(1 for m in meas.values() if not m.correct),
        "best_ms": min(ok.values()) if ok else None,
        "model_pick_ms": ok.get(top),
        "pick_over_best": ok[top] / min(ok.values()) if top in ok else None,
        "peer": peer,
        "peer_ms": peer_ms,
        "peer_note": peer_note,
        "seconds": round(time.perf_counter() - t0, 1),
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=".", help="folder for new_quality_rows.csv.gz and new_summary.json")
    ap.add_argument("--time-budget-s", type=float, default=140.0, help="start no new shape after this")
    ap.add_argument("--round", type=int, choices=sorted(ROUNDS), default=1, help="which set of shapes")
    ap.add_argument("--sample", help="the committed sample (default: the round's; else drawn here)")
    ap.add_argument("--write-sample", help="draw the samples (no GPU), write them here and stop")
    ap.add_argument("--only", help="measure only the round's shapes of this kernel (e.g. matmul)")
    ap.add_argument(
        "--shape",
        action="append",
        default=[],
        help="measure only the round's shapes of this size (as the rows write it: 3001x5003); repeatable",
    )
    args = ap.parse_args(argv)
    shapes = [c for c in ROUNDS[args.round] if not args.only or c[0] == args.only]
    if not shapes:
        ap.error(f"--only {args.only}: no shape of round {args.round} is of that kernel")
    if args.shape:
        known = {shape_text(c[4]) for c in shapes}
        missing = sorted(set(args.shape) - known)
        if missing:
            have = ", ".join(sorted(known))
            ap.error(f"--shape {', '.join(missing)}: not in round {args.round} (its shapes: {have})")
        shapes = [c for c in shapes if shape_text(c[4]) in args.shape]
    args.sample = args.sample or str(SAMPLES[args.round])
    if args.write_sample:
        drawn = [draw(cfg) for cfg in shapes]
        Path(args.write_sample).write_text(json.dumps(drawn) + "\n")
        for d in drawn:
            kinds = {
                v: sum(1 for r in d["rows"] if r["why"] == v) for v in sorted({r["why"] for r in d["rows"]})
            }
            print(f"{d['id']}: {d['legal']} legal, {len(d['rows'])} sampled {kinds}")
        return 0
    samples: dict[str, Any] = {}
    if args.sample and Path(args.sample).is_file():
        samples = {d["id"]: d for d in json.loads(Path(args.sample).read_text())}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    per_shape = args.time_budget_s / len(shapes)
    summaries = []
    with gzip.open(out / "new_quality_rows.csv.gz", "wt", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=ROW_FIELDS)
        writer.writeheader()
        for i, cfg in enumerate(shapes):
            if time.perf_counter() - started > args.time_budget_s:
                print(f"time budget spent: skipping {cfg[:3]} {cfg[4]}", flush=True)
                continue
            deadline = started + per_shape * (i + 1)  # a shape may use what the ones before it left
            try:
                s = measure_shape(cfg, writer, deadline, samples.get(sample_id(cfg)))
            except Exception as exc:  # one shape failing never stops the others
                s = {
                    "shape": f"{cfg[0]} {cfg[2]} {shape_text(cfg[4])}",
                    "error": f"{type(exc).__name__}: {exc}",
                }
            summaries.append(s)
            print(json.dumps(s), flush=True)
            f.flush()
    (out / "new_summary.json").write_text(json.dumps(summaries, indent=1))
    print("\n| shape | legal | sampled | ok | failed | best (ms) | model's pick / best | torch peer (ms) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for s in summaries:
        if "error" in s:
            print(f"| {s['shape']} | failed: {s['error'][:80]} |")
            continue
        pick = "-" if s["pick_over_best"] is None else f"{s['pick_over_best']:.3f}"
        best = "-" if s["best_ms"] is None else f"{s['best_ms']:.4f}"
        peer = "-" if s["peer_ms"] is None else f"{s['peer_ms']:.4f} ({s['peer']})"
        cells = [s["shape"], s["legal"], s["sampled"], s["measured_ok"], s["failed"], best, pick, peer]
        print("| " + " | ".join(map(str, cells)) + " |")
    print(f"done in {time.perf_counter() - started:.0f} s; rows in {out / 'new_quality_rows.csv.gz'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
