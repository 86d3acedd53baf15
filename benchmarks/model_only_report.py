"""How good is autopad's answer without a GPU? The model-only pick, scored on the recorded H200 studies.

Without a GPU, ``autopad.tune`` returns the model's answer (``search_shortlist.model_pick``: the best-ranked
candidate, or its default-layout twin within 1%). This script ranks every recorded
configuration-shape of the exhaustive studies (``benchmarks/results/h200/quality/run{1,2}_quality_rows``:
every legal candidate measured) with the current model, exactly as ``autopad.search.rank`` does, joins the
ranking with the measurements by key, and reports per shape, per kernel family and overall:

- the model-only pick over the exhaustive best (and how many shapes are within 2% and 10%);
- the pick over the spec's unpadded default (``DEFAULTS``): is model-only advice ever worse than none?
- Spearman's rank correlation of predicted with measured time over every correct candidate;
- the best of the model's top 1 / 6 / 20 over the exhaustive best.

``--fit run1 --test run2`` refits the predictor's constants (``autopad.predict.Constants``, and the L2
rate) on one run and scores the other with them: the held-out figures. ``--proposed`` adds to each
built-in spec's ``launch_info`` the keys listed in ``PROPOSED`` (what the lead is asked to add to the
specs), so their effect is measured before anyone edits a spec. ``--trust FILE`` writes the per-family
statement ``autopad.trust`` prints beside model-only output. ``--extra rows.csv.gz`` scores new shapes
measured for the purpose (``benchmarks/gpu_new_shapes.py``), with the committed constants; ``--current
rows.csv.gz`` scores exhaustive studies of today's kernels apart (with ``--trust``, each family's ``current``
figures, which ``autopad.trust`` puts first).

    python benchmarks/model_only_report.py [--proposed] [--fit run1 --test run2] [--md F] [--csv F]
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy
sys.path.insert(0, str(Path(__file__).resolve().parent))
import noise_ceiling as noise  # noqa: E402
from model_only_noise import (  # noqa: E402  (the noise ceiling and the repeat timings)
    FINAL_REPS,
    _final_rounds,
    _rho,
    noise_figures,
    noise_md,
    repeats,
)
from model_only_shapes import (  # noqa: E402  (the recorded shapes: the model's inputs, loaded and cached)
    RUNS,
    Shape,
    _features,
    _run_order,
    extra_name,
    load_shapes,
    supersede,
)
from model_only_trust import (  # noqa: E402  (the trust file's entries and what is held out)
    CHOSEN_ON_EVERY,
    FITTED_ON,
    INFORMED,
    PROFILE_CHOSEN_BEFORE,
    _family_key,
    _sampled_entry,
    _seen,
    chosen_on,
    profile_saw,
    summarise,
    trust_json,
)
from quality_report import load_rows, parse_shape  # noqa: E402

from autopad.arch import Arch, get_arch  # noqa: E402
from autopad.predict import CONSTANTS, Constants, predict_arrays  # noqa: E402
from autopad.search_shortlist import launch_config, layout_key, prefer_plain  # noqa: E402

DIR = Path(__file__).resolve().parent / "results" / "h200" / "quality"
# names re-exported from model_only_trust, model_only_shapes and model_only_noise, and the report's own that
# other scripts use (the tests also read a few private helpers and module globals directly)
__all__ = [
    "CHOSEN_ON_EVERY", "FINAL_REPS", "FITTED_ON", "INFORMED", "PROFILE_CHOSEN_BEFORE", "PROPOSED", "RUNS",
    "Shape", "_family_key", "_features", "_final_rounds", "_rho", "_run_order", "_sampled_entry", "_seen",
    "answer", "chosen_on", "evaluate", "extra_name", "figures", "fit", "load_rows", "load_shapes", "main",
    "noise_figures", "noise_md", "predicted", "profile_saw", "repeats", "summarise", "supersede",
    "trust_json",
]  # fmt: skip


# ---- what each built-in spec is asked to add to launch_info (the lead's edit; measured here first) ----


def _gemm_l2(m: int, n: int, k: int, bm: int, bn: int, eb: int) -> int:
    # A (m x k) is read once per column of blocks, B (k x n) once per row of blocks, C written once
    return eb * (m * k * math.ceil(n / bn) + k * n * math.ceil(m / bm) + m * n)


def _simt_gemm(c: dict[str, int], shape: tuple[int, ...], dtype: str) -> dict[str, float]:
    m, n, k = shape
    return {"l2_bytes": _gemm_l2(m, n, k, c["BM"], c["BN"], 4)}


def _gluon_gemm(c: dict[str, int], shape: tuple[int, ...], dtype: str) -> dict[str, float]:
    m, n, k = shape
    eb = {"bfloat16": 2, "float16": 2, "tf32": 4}[dtype]
    return {
        "mma_bytes": eb,
        # TMA keeps STAGES - 1 k-steps of A and B in flight while wgmma works on the current one
        "inflight_bytes": (c["STAGES"] - 1) * (c["BM"] + c["BN"]) * c["BK"] * eb / (32 * c["WARPS"]),
        "l2_bytes": _gemm_l2(m, n, k, c["BM"], c["BN"], eb),
        # the shared-memory wavefronts TMA and wgmma move are the spec's own now (kernels/triton/matmul.py
        # ``tma_wgmma_rows``: one per SWIZZLE-byte row, TMA's writes and wgmma's reads); the proposal's
        # reads-only count (k-steps x ring_step / 128 x 128 / SWIZZLE) is no longer put over it
    }


PROPOSED: dict[tuple[str, str], Callable[[dict[str, int], tuple[int, ...], str], dict[str, float]]] = {
    ("matmul", "cuda"): _simt_gemm,
    ("matmul", "triton"): _gluon_gemm,
}


# ---- ranking and figures -------------------------------------------------------------------------------


# the launch_info keys the specs took after the studies ran (the GEMMs' from PROPOSED, the histogram's flush):
# ``bare`` predicts without them
ADDED_KEYS = ("mma_bytes", "l2_bytes", "extra_wavefronts", "inflight_bytes", "block_cycles")


def predicted(s: Shape, constants: Constants = CONSTANTS, arch: Arch | None = None, proposed: bool = False,
              layouts: bool = True, bare: bool = False) -> np.ndarray:  # fmt: skip
    """Predicted seconds of every candidate of ``s``; ``proposed`` adds the PROPOSED launch_info keys,
    ``bare`` removes the ones the specs have since taken (the predictor's inputs of the study's day)."""
    infos = [{k: v for k, v in i.items() if k not in ADDED_KEYS} for i in s.infos] if bare else s.infos
    add = PROPOSED.get((s.kernel, s.backend)) if proposed else None
    if add is not None:
        shp = parse_shape(s.shape)
        infos = [{**i, **add(c, shp, s.dtype)} for i, c in zip(infos, s.consts)]
    lays = s.layouts if layouts else None
    return predict_arrays(infos, s.traffic, s.wave, s.ideal, arch or get_arch("sm_90"), lays, constants)[0]


def order(s: Shape, seconds: np.ndarray) -> list[int]:
    """The candidates in search.rank's order: (seconds, wavefronts per tile, footprint, key)."""
    foot = [int(i.get("smem_bytes", 0)) for i in s.infos]
    return sorted(range(len(seconds)), key=lambda i: (seconds[i], int(s.wave[i]), foot[i], s.keys[i]))


def answer(s: Shape, seconds: np.ndarray, rank: Sequence[int]) -> int:
    """The candidate ``autopad.tune`` answers without measuring (``search_shortlist.model_pick``): the
    first-ranked, or its configuration's unpadded twin within ``PLAIN_MARGIN`` of it."""
    from autopad.kernels_registry import builtin_spec

    spec = builtin_spec(s.kernel, s.backend)
    if not getattr(spec, "LAYOUT_KEYS", ()) or s.default is None:
        return rank[0]
    return prefer_plain(
        rank,
        seconds,
        lambda i: launch_config(spec, s.consts[i]),
        lambda i: layout_key(spec, s.consts[i]),
        layout_key(spec, s.consts[s.default]),
    )


def figures(s: Shape, seconds: np.ndarray) -> dict[str, Any]:
    """The model-only figures of one shape under the predicted ``seconds``."""
    rank = order(s, seconds)
    ok = ~np.isnan(s.ms)
    best = float(np.nanmin(s.ms))
    pick = answer(s, seconds, rank)
    out: dict[str, Any] = {
        "run": s.run, "family": s.family, "shape": s.shape, "legal": len(s.keys), "correct": int(ok.sum()),
        "pick": s.keys[pick], "pick_ms": float(s.ms[pick]), "best_ms": best,
        "pick_over_best": float(s.ms[pick]) / best,
        "tied_at_top": int((seconds == seconds[pick]).sum()),
        "spearman": _rho(seconds[ok], s.ms[ok]),
    }  # fmt: skip
    if s.default is not None and not math.isnan(s.ms[s.default]):
        out["default_ms"] = float(s.ms[s.default])
        out["pick_over_default"] = out["pick_ms"] / out["default_ms"]
        if s.iqr is not None:  # how many standard errors of the two medians the pick is slower by
            se = noise.median_se(s.iqr[[pick, s.default]])
            gap = out["pick_ms"] - out["default_ms"]
            out["pick_vs_default_z"] = float(gap / math.hypot(*se)) if gap else 0.0
    ranked_ok = [i for i in rank if ok[i]]
    for k in (1, 6, 20):
        out[f"top{k}_over_best"] = float(min(s.ms[i] for i in ranked_ok[:k])) / best
    out["best_model_rank"] = next(n for n, i in enumerate(ranked_ok) if s.ms[i] == best)
    return out


# ---- fitting the constants -------------------------------------------------------------------------------


def loss(rows: Sequence[dict[str, Any]]) -> float:
    """What the fit minimises: the log of each pick's distance from the best, a penalty for a pick slower
    than the default, and the rank correlation's shortfall."""
    total = 0.0
    for x in rows:
        total += math.log(x["pick_over_best"]) + 0.2 * (1.0 - x["spearman"])
        total += 2.0 * max(0.0, math.log(x.get("pick_over_default", 1.0)))
    return total / max(1, len(rows))


START = Constants(
    overlap=0.1, issue_cycles=1.0, swizzle_cycles=1.0, tile_cycles=100.0, default_inflight_share=1.0
)
_FIT = ("overlap", "issue_cycles", "swizzle_cycles", "tile_cycles", "default_inflight_share")


def fit(
    shapes: Sequence[Shape], proposed: bool, rounds: int = 3, layouts: bool = True
) -> tuple[Constants, Arch, list[str]]:
    """Coordinate search over the fitted constants (and the L2 rate): each in turn is scaled by a few
    factors and kept where the loss on ``shapes`` falls."""
    # a neutral start, not the committed constants (those were fitted on both runs: starting there would
    # leak the held-out run into the fit)
    k, a = START, replace(get_arch("sm_90"), l2_bytes_per_s=10e12)
    log: list[str] = []

    def score(kk: Constants, aa: Arch) -> float:
        return loss([figures(s, predicted(s, kk, aa, proposed, layouts)) for s in shapes])

    cur = score(k, a)
    log.append(f"start: loss {cur:.4f}")
    for _ in range(rounds):
        moved = False
        for name in (*_FIT, "l2_bytes_per_s"):
            for f in (0.25, 0.5, 0.8, 1.25, 2.0, 4.0):
                if name == "l2_bytes_per_s":
                    kk, aa = k, replace(a, l2_bytes_per_s=a.l2_bytes_per_s * f)
                else:
                    kk, aa = replace(k, **{name: getattr(k, name) * f}), a
                v = score(kk, aa)
                if v < cur - 1e-4:
                    cur, k, a, moved = v, kk, aa, True
                    log.append(f"{name} x{f}: loss {cur:.4f}")
        if not moved:
            break
    return k, a, log


# ---- output -----------------------------------------------------------------------------------------------


def _f(v: Any, spec: str = ".3f") -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)


def table(rows: Sequence[dict[str, Any]]) -> str:
    head = (
        "| run | family | shape | legal | pick / best | pick / default | Spearman | top-6 / best | "
        "tied at top |\n| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n"
    )
    body = [
        f"| {x['run']} | {x['family']} | {x['shape']} | {x['legal']} | {_f(x['pick_over_best'])} | "
        f"{_f(x.get('pick_over_default'))} | {_f(x['spearman'], '.2f')} | {_f(x['top6_over_best'])} | "
        f"{x['tied_at_top']} |"
        for x in rows
    ]
    return head + "\n".join(body) + "\n"


def family_table(rows: Sequence[dict[str, Any]]) -> str:
    fam: dict[str, list] = defaultdict(list)
    for x in rows:
        fam[x["family"]].append(x)
    head = (
        "| family | shapes | within 2% | within 10% | median | worst | slower than default | "
        "Spearman min / median |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
    )
    out = []
    for name, xs in [*sorted(fam.items()), ("all", list(rows))]:
        s = summarise(xs)
        out.append(
            f"| {name} | {s['shapes']} | {s['within_2pct']} | {s['within_10pct']} | "
            f"{s['median_pick_over_best']:.3f} | {s['worst_pick_over_best']:.3f} | "
            f"{s['slower_than_default']} of {s['with_default']} ({s['slower_beyond_noise']} beyond noise) | "
            f"{s['spearman_min']:.2f} / {s['spearman_median']:.2f} |"
        )
    return head + "\n".join(out) + "\n"


def write_csv(rows: Sequence[dict[str, Any]], path: Path) -> None:
    keys = list(dict.fromkeys(k for x in rows for k in x))
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)


def rank_passes_layouts() -> bool:
    """autopad.search.rank hands the predictor each candidate's layout (the swizzle term reads them).
    A fact, not a probe of rank's source text: tests/test_predict.py holds this report's predictions equal to
    rank's, so a rank that stopped passing them would fail there."""
    return True


def evaluate(shapes: Sequence[Shape], k: Constants, a: Arch, proposed: bool, layouts: bool = True) -> list:
    return [figures(s, predicted(s, k, a, proposed, layouts)) for s in shapes]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default=str(DIR), help="folder holding run{1,2}_quality_rows.csv.gz")
    ap.add_argument("--proposed", action="store_true", help="add PROPOSED keys to the built-in specs")
    ap.add_argument(
        "--layouts",
        choices=("auto", "on", "off"),
        default="auto",
        help="pass the layouts to the predictor (auto: as autopad.search.rank does)",
    )
    ap.add_argument("--baseline", action="store_true", help="the predictor before this work (no new terms)")
    ap.add_argument("--fit", choices=RUNS, help="refit the constants on this run ...")
    ap.add_argument("--test", choices=RUNS, help="... and score this one with them")
    ap.add_argument("--held-out", action="store_true", help="both splits: run1 -> run2 and run2 -> run1")
    ap.add_argument("--extra", nargs="*", default=[], help="rows of new shapes (gpu_new_shapes.py)")
    ap.add_argument(
        "--current",
        nargs="*",
        default=[],
        help="exhaustive studies of today's kernels (tuner_quality.py rows): a section of their own and, "
        "with --trust, the trust file's 'current' figures",
    )
    ap.add_argument(
        "--other",
        nargs="*",
        default=[],
        help="rows of new shapes held out from today's model and measured on another card (--other-gpu): "
        "a section of their own and, with --trust, the trust file's 'other_gpus' figures",
    )
    ap.add_argument("--other-gpu", default="NVIDIA H100", help="the card that measured the --other rows")
    ap.add_argument(
        "--other-arch",
        help="also rank the --other rows with this profile of the model (h100: that card's DRAM and cuBLAS "
        "rates): a section of its own and, with --trust, 'other_gpus_by_arch'",
    )
    ap.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "autopad_model_only.pkl"))
    ap.add_argument("--md", help="write the Markdown report here")
    ap.add_argument("--csv", help="write the per-shape figures here")
    ap.add_argument("--trust", help="write the per-family trust JSON here")
    args = ap.parse_args(argv)
    profile = None  # the --other-arch profile, checked once
    if args.other_arch is not None:
        if not args.other:
            ap.error("--other-arch: ranks the --other rows again; give --other ROWS too")
        try:
            profile = get_arch(args.other_arch)
        except ValueError as err:
            ap.error(f"--other-arch: {err}")
    d = Path(args.dir)
    paths = {r: d / f"{r}_quality_rows.csv.gz" for r in RUNS}
    # an extra file is named by the device run that measured it (its folder: run8, run10, ...; a sub-folder
    # of a run: run20/round1)
    now_runs = set()
    for i, p in enumerate(args.extra + args.current):
        name = extra_name(Path(p)) or f"extra{i}"
        if name in paths:
            flag = "--current" if i >= len(args.extra) else "--extra"
            ap.error(f"{flag}: two files named {name!r} (name a file by the folder of its run)")
        paths[name] = Path(p)
        if i >= len(args.extra):
            now_runs.add(name)
    shapes, superseded = supersede(
        load_shapes(paths, Path(args.cache) if args.cache else None), frozenset(now_runs)
    )
    k, a = CONSTANTS, get_arch("sm_90")
    if args.baseline:  # no new terms: the streams of the predictor before this work
        k = Constants(
            issue_cycles=0.0,
            swizzle_cycles=0.0,
            tile_cycles=0.0,
            default_inflight_share=0.0,
            partial_round=0.0,
        )
    layouts = {"on": True, "off": False}.get(args.layouts, rank_passes_layouts())
    md = ["# Model-only picks on the recorded H200 studies\n"]
    consts = ", ".join(f"{f.name}={getattr(k, f.name):g}" for f in fields(k))
    md.append(f"Constants: {consts}; L2 {a.l2_bytes_per_s:.3g} B/s; proposed spec keys: {args.proposed}; ")
    md.append(f"layouts: {layouts}\n")
    rows = evaluate(shapes, k, a, args.proposed, layouts)
    recorded = [x for x in rows if x["run"] in RUNS]
    md.append("## Every recorded shape\n\n" + table(recorded))
    md.append(f"\n## Per family ({len(recorded)} recorded configuration-shapes; uint8 2^24 x 256 was "
              "recorded in both runs and counts in each)\n\n" + family_table(recorded))  # fmt: skip
    extra = [x for x in rows if x["run"] not in RUNS and x["run"] not in now_runs]
    current = [x for x in rows if x["run"] in now_runs]
    if extra:
        runs = {x["run"] for x in extra}
        fitted = (
            "; run8's histogram (2^20 x 1000 bins) was then used to fit the histogram's flush term "
            "(``kernels/cuda/histogram.py``), and run10's shapes were drawn after that fit"
            if runs & {"run8", "run165/round1"}
            else ""
        )
        if "run165/round1" in runs:  # round 1 again on today's kernels: its histogram is the fitted shape
            fitted += (
                " (run165/round1 measured round 1's shapes again on today's kernels, that histogram too)"
            )
        if "run149" in runs:
            fitted += (
                "; run149's int8 transposes 4100x8192 and 8193x16383 then chose two transpose terms "
                "(the aligned build's seam charge off the 16-byte grid, the registers of a block alone on "
                "its SM), and run152's and run153's shapes were drawn after them"
            )
        if runs & {"run165/round1", "run165/round8"}:
            fitted += (
                "; run165's three fp32 transposes then chose ``phased_loads`` (the warp bound on a block's "
                "loads in flight, through an H100 profile of them)"
            )
        if "run100" in runs:
            fitted += (
                "; run100's three SIMT GEMM shapes then chose ``smem_issue`` (the issue slots a shared "
                "instruction takes from the FFMAs, read off H100 ncu counts at two of them), and run165's "
                "five SIMT GEMM samples its rate"
            )
        if runs & {"run175/round10", "run175/round11"}:
            fitted += (
                "; run175's round 10 (transposes) and round 11 (SIMT GEMMs) were drawn after "
                "``phased_loads`` and ``smem_issue``, held out from both"
            )
        if "run186/round12" in runs:
            fitted += (
                "; run186's round 12 (SIMT GEMMs) was drawn after ``REG_CAP_SLACK`` (the register cap "
                "charged from 0.2 over the cap, its cost fitted on run 55's 1536x1000x2000), held out from it"
                "; its 3072x3072x1000 and run165's 1000x1000x1000 then showed the SIMT GEMM's checked k-loop "
                "(``CHECKED_LOAD_SLOTS``, its value from H100 run 219's profile)"
            )
        if any(chosen_on(x["run"], x["family"]) for x in extra):
            fitted += (
                "; every CUDA transpose above measured before run 227 was then scored when the transpose's "
                "partial memory round and its aligned build's registers were chosen (2026-12-07, "
                "``CHOSEN_ON_EVERY``): round 17 (H100 run 227) was drawn after, held out from them"
            )
        if fitted:
            fitted += (
                "; the rows a fit or a term choice saw (``FITTED_ON``, ``CHOSEN_ON_EVERY``) are left out "
                "of the trust file's held-out figures and stated apart"
            )
        md.append(
            "\n## New shapes measured for the purpose\n\nHeld out from the fits of the predictor's "
            f"constants{fitted}.\n\n" + table(extra)
        )
        md.append("\n" + family_table(extra))
    if current:
        md.append(
            "\n## Today's kernels: exhaustive studies (every legal candidate of today's space timed)\n\n"
            + table(current)
            + "\n"
            + family_table(current)
        )
    # held-out shapes another card measured: scored with the same model, kept out of every H200 figure
    other_paths = {extra_name(Path(p)) or f"other{i}": Path(p) for i, p in enumerate(args.other)}
    if len(other_paths) != len(args.other):
        ap.error("--other: two files named alike (name a file by the folder of its run)")
    other_shapes = load_shapes(other_paths, None) if other_paths else []
    other = evaluate(other_shapes, k, a, args.proposed, layouts)
    if other:
        later = sorted({f"{x['run']} {x['family']}" for x in other if chosen_on(x["run"], x["family"])})
        read = sorted(f"{x['run']} {x['family']} {x['shape']}" for x in other if _seen(x) and not
                      chosen_on(x["run"], x["family"]))  # fmt: skip
        md.append(
            f"\n## Held out on another card ({args.other_gpu})\n\nNew shapes drawn and committed before "
            "their run, timed on a sample of their space; the model's ceilings are the H200's."
            + (
                " Those of a family whose terms were later chosen after scoring them (``CHOSEN_ON_EVERY``: "
                + ", ".join(later)
                + ") are left out of the trust file."
                if later
                else ""
            )
            + (
                " Those a term was later read off (``FITTED_ON``: " + ", ".join(read) + ") are left out too."
                if read
                else ""
            )
            + "\n\n"
            + table(other)
            + "\n"
            + family_table(other)
        )
    other_arch = evaluate(other_shapes, k, profile, args.proposed, layouts) if other and profile else []
    if other_arch:
        md.append(
            f"\n## Held out on another card ({args.other_gpu}), ranked with the {args.other_arch} profile\n\n"
            f"The same rows, ranked with ``--arch {args.other_arch}`` "
            f"({profile.description}); left out as above.\n\n"
            + table(other_arch)
            + "\n"
            + family_table(other_arch)
        )
    if superseded:
        md.append("\nRe-measured later, so left out above (a later file of the same kind, --extra or "
                  "--current, holding the same configuration-shape replaces an earlier one): "
                  + "; ".join(" ".join(x) for x in superseded) + "\n")  # fmt: skip
    md.append(noise_md(shapes, rows, d, frozenset(now_runs)))
    splits = [(args.fit, args.test)] if args.fit and args.test else []
    if args.held_out:
        splits = [("run1", "run2"), ("run2", "run1")]
    for fit_run, test_run in splits:
        kf, af, log = fit([s for s in shapes if s.run == fit_run], args.proposed, layouts=layouts)
        held = evaluate([s for s in shapes if s.run == test_run], kf, af, args.proposed, layouts)
        fitted = ", ".join(f"{f.name}={getattr(kf, f.name):.3g}" for f in fields(kf))
        md.append(f"\n## Held out: constants fitted on {fit_run}, scored on {test_run}\n\n")
        md.append(f"Fitted: {fitted}, L2 {af.l2_bytes_per_s:.3g} B/s (fit: {'; '.join(log)})\n\n")
        md.append(table(held) + "\n" + family_table(held))
    text = "".join(md)
    print(text)
    if args.md:
        Path(args.md).write_text(text)
    if args.csv:
        write_csv(rows, Path(args.csv))
    if args.trust:
        runs = "".join(f"+{x}" for x in sorted({r["run"] for r in extra}))
        keys = "proposed spec keys" if args.proposed else "specs as committed"
        now = "+".join(sorted({r["run"] for r in current})) or "none"
        src = (
            f"benchmarks/results/h200/quality run1+run2, sampled {runs.lstrip('+') or 'none'}, "
            f"today's kernels {now} ({keys})"
        )
        if other:
            src += f", held out on an {args.other_gpu} " + "+".join(sorted({r["run"] for r in other}))
        if other_arch:
            src += f" (also ranked as {args.other_arch})"
        by_arch = {args.other_arch: {args.other_gpu: other_arch}} if other_arch else None
        trust = trust_json(recorded, src, extra, current, {args.other_gpu: other} if other else None, by_arch)
        Path(args.trust).write_text(json.dumps(trust, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
