"""The SIMT GEMM's candidates timed under two kernel sources, alternately, in one job.

What: for one shape, a sample of candidates of an earlier exhaustive study (its ``quality_rows.csv.gz``:
the fastest measured, the model's first, and a seeded random draw) is checked and timed with
``autopad.bench.measure`` (the tuner's harness: poisoned output checked against fp64 torch, CUDA events
behind an L2 flush) under the current ``kernels/cuda/matmul.cu`` and under another source file, in
rounds whose order alternates (old then new, new then old, ...; run 54 ran old first in both) so that
drift and order fall on both alike. Why: a change
to the kernel source (here the order ptxas gives the next k-step's global loads) is judged on the same
candidates, shape and machine, not against a study measured on another day.

    python benchmarks/ab_matmul_source.py --old OLD.cu --rows ROWS.csv.gz --shape 2048x2048x2048 --out DIR
    python benchmarks/ab_matmul_source.py --old OTHER.cu --old-compiler nvcc --new-compiler nvrtc \
        --rows ROWS.csv.gz --shape 1536x1000x2000 --time-shape 1536x1024x2000 --only TM=8,TN=8,BK=16 --out DIR

``--old-compiler`` / ``--new-compiler`` build either side with NVRTC or nvcc (the same source under both
compilers is a fair A/B too); ``--only`` keeps the rows whose key holds every given constant;
``--time-shape`` times the sampled candidates at another shape than the rows' (the same candidates at a
shape whose grid has no edge blocks, say). Writes ``ab_<shape>.csv`` (one row per candidate: the study's
time, each round's old and new time) and prints the medians of new over old by class (padded or not), by
tile, and the fastest of each source.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy


def sample(
    rows_path: Path,
    shape: str,
    top: int,
    model_top: int,
    extra: int,
    seed: int,
    only: dict[str, int] | None = None,
) -> list[dict]:
    """Rows of ``shape`` that measured correct (and hold every constant of ``only``): the ``top`` fastest,
    the ``model_top`` best-ranked, and a seeded draw of ``extra`` more (no repeats)."""
    with gzip.open(rows_path, "rt") as f:
        rows = [r for r in csv.DictReader(f) if r["shape"] == shape and r["correct"] == "1" and r["ms"]]
    if only:
        rows = [r for r in rows if all(constants(r["key"]).get(k) == v for k, v in only.items())]
    if not rows:
        raise SystemExit(f"{rows_path}: no correct rows at shape {shape}")
    fastest = sorted(rows, key=lambda r: float(r["ms"]))[:top]
    ranked = sorted(rows, key=lambda r: int(r["model_rank"]))[:model_top]
    keys = {r["key"] for r in fastest + ranked}
    rest = [r for r in rows if r["key"] not in keys]
    drawn = random.Random(seed).sample(rest, min(extra, len(rest)))
    out, seen = [], set()
    for r in fastest + ranked + drawn:
        if r["key"] not in seen:
            seen.add(r["key"])
            out.append(r)
    return out


def constants(key: str) -> dict[str, int]:
    """A study row's key ("BK=8,BM=128,...") as the candidate's constants."""
    return {k: int(v) for k, v in (kv.split("=") for kv in key.split(","))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", required=True, help="the other matmul.cu")
    ap.add_argument("--rows", required=True, help="an exhaustive study's quality_rows.csv.gz")
    ap.add_argument("--shape", required=True, help="MxNxK, as the rows spell it")
    ap.add_argument("--out", required=True)
    ap.add_argument("--old-compiler", choices=("nvrtc", "nvcc"), help="build the other source with this")
    ap.add_argument("--new-compiler", choices=("nvrtc", "nvcc"), help="build the current source with this")
    ap.add_argument("--only", help="keep rows whose key holds these constants, e.g. TM=8,TN=8,BK=16")
    ap.add_argument("--time-shape", help="MxNxK to time at (default: --shape)")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--model-top", type=int, default=40)
    ap.add_argument("--extra", type=int, default=120)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()

    from autopad.kernels.cuda import matmul as G

    from autopad.bench import measure

    only = constants(a.only) if a.only else None
    rows = sample(Path(a.rows), a.shape, a.top, a.model_top, a.extra, a.seed, only)
    cands = [constants(r["key"]) for r in rows]
    shape = tuple(int(x) for x in (a.time_shape or a.shape).split("x"))
    new_src, old_src = G.SPEC.SOURCE_FILE, str(Path(a.old).resolve())
    compilers = {"old": a.old_compiler, "new": a.new_compiler}
    forced = os.environ.get("AUTOPAD_CUDA_COMPILER")
    times: dict[str, list[list[float | None]]] = {"old": [], "new": []}
    for rnd in range(a.rounds):
        order = (("old", old_src), ("new", new_src))
        for which, src in order if rnd % 2 == 0 else order[::-1]:  # who goes first alternates by round
            G.SPEC.SOURCE_FILE = src  # the spec's build() reads its source from here
            if compilers[which]:  # autopad.cuda_compile reads it on every build (and keys its cache by it)
                os.environ["AUTOPAD_CUDA_COMPILER"] = compilers[which]
            elif forced is None:
                os.environ.pop("AUTOPAD_CUDA_COMPILER", None)
            else:
                os.environ["AUTOPAD_CUDA_COMPILER"] = forced
            t0 = time.time()
            ms = measure(G, cands, shape, "float32", seed=rnd, isolated=False)
            bad = [m.key for m in ms if not m.correct]
            print(
                f"round {rnd} {which}: {len(ms)} measured in {time.time() - t0:.0f} s, {len(bad)} not correct"
            )
            for k in bad[:5]:
                print("  not correct:", k)
            times[which].append([m.ms if m.correct else None for m in ms])
    G.SPEC.SOURCE_FILE = new_src

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"ab_{a.time_shape or a.shape}.csv"
    med = {}
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        head = ["key", "study_ms", "model_rank"]
        head += [f"{s}_ms_r{i}" for i in range(a.rounds) for s in ("old", "new")]
        w.writerow(head + ["old_ms", "new_ms", "new_over_old"])
        for i, r in enumerate(rows):
            o = [t[i] for t in times["old"] if t[i] is not None]
            n = [t[i] for t in times["new"] if t[i] is not None]
            mo, mn = (statistics.median(o) if o else None), (statistics.median(n) if n else None)
            med[r["key"]] = (mo, mn)
            per = [times[s][j][i] for j in range(a.rounds) for s in ("old", "new")]
            ratio = mn / mo if mo and mn else None
            w.writerow([r["key"], r["ms"], r["model_rank"], *per, mo, mn, ratio])
    print(f"wrote {path}")

    def padded(key: str) -> bool:
        c = constants(key)
        return c["PAD_A"] > 0 or c["PAD_B"] > 0

    for label, sel in (("padded", True), ("unpadded", False)):
        rs = [n / o for k, (o, n) in med.items() if o and n and padded(k) == sel]
        if len(rs) >= 2:
            q = statistics.quantiles(rs, n=10)
            print(
                f"{label}: {len(rs)} candidates, new/old median {statistics.median(rs):.3f} "
                f"(10th {q[0]:.3f}, 90th {q[-1]:.3f})"
            )
    tiles: dict[str, list[float]] = {}
    for k, (o, n) in med.items():
        if o and n:
            c = constants(k)
            tiles.setdefault(f"{c['BM']}x{c['BN']}x{c['BK']} {c['TM']}x{c['TN']}", []).append(n / o)
    for tile, rs in sorted(tiles.items()):
        print(f"tile {tile}: {len(rs)} candidates, new/old median {statistics.median(rs):.3f}")
    for s, idx in (("old", 0), ("new", 1)):
        timed = [(v[idx], k) for k, v in med.items() if v[idx]]
        if timed:
            best = min(timed)
            print(f"fastest under {s}: {best[0]:.4f} ms {best[1]}")
        else:
            print(f"no candidate measured correct under {s}")


if __name__ == "__main__":
    main()
