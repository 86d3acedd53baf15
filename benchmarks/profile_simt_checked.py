"""What the SIMT GEMM's checked k-loop costs: every launch configuration of the CUDA fp32 GEMM (unpadded, no
split-K) timed at K = 1000 and K = 1008 (M = N = 2048).

Why: ``kernels/cuda/matmul.cu`` runs one of two k-loops for the whole grid. Where K is a multiple of BK and
K and N of 4 (``full``), no global load checks its bounds; otherwise every 16-byte load of every k-step tests
its row and its k range first (``load_global<false>``). The model did not know: on the studies with K =
1000 (1000³ and 3072x3072x1000, H100 and H200, every sampled candidate timed), the BK 16 builds (K % 16 = 8:
checked) read 0.06 in log slower against the BK 8 builds (unchecked) than the model put them, where on the
other twenty shapes they read 0.03 faster. K = 1000 and 1008 give a BK 16 build the same 63 k-steps (the
last one partial at 1000, its missing elements loaded as zeros), so the ratio of its two times is what the
checked loop costs it; a BK 8 build runs unchecked at both (125 and 126 steps: the control).

Each configuration is timed as profile_simt_gemm.py times one (CUDA events around 10 back-to-back launches
through the launcher users' calls take, median of ``--reps``, the output checked against a float64
product), the two shapes alternated configuration by configuration::

    python benchmarks/profile_simt_checked.py --out times.csv
    python benchmarks/profile_simt_checked.py --dry-run
    python benchmarks/profile_simt_checked.py --fit times.csv     # no GPU: CHECKED_LOAD_SLOTS from them

``--fit`` reads such a CSV and, for each value of ``CHECKED_LOAD_SLOTS`` on a grid, predicts every
configuration's time at both shapes (``autopad.search.rank``'s inputs, the spec's own launch info) and
compares the predicted ratio K 1000 / K 1008 with the measured one. The BK 8 builds' errors are the control
(what K 1000 itself costs any build, beyond its k-steps); the value at which the BK 16 builds' median error
meets the control's median is the measured cost.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy
sys.path.insert(0, str(ROOT / "benchmarks"))

from profile_simt_gemm import checked_timing, key  # noqa: E402
from profile_transpose_tiles import write_times  # noqa: E402

SHAPES: list[tuple[int, int, int]] = [(2048, 2048, 1000), (2048, 2048, 1008)]


def configurations(shapes: Sequence[tuple[int, int, int]] = SHAPES) -> list[dict[str, int]]:
    """Every launch configuration legal at every one of ``shapes``, on the unpadded layout, SPLIT_K 1."""
    from autopad.kernels.cuda import matmul as G

    from autopad.kernels_registry import builtin_spec
    from autopad.search import enumerate_candidates

    spec = builtin_spec("matmul", "cuda")
    plain = {k: v for k, v in G.DEFAULTS.items() if k.startswith(("PAD_", "SW_"))}
    out = []
    for c in enumerate_candidates(spec, shapes[0], "float32"):
        if c["SPLIT_K"] == 1 and all(c[k] == v for k, v in plain.items()):
            if all(G.SPEC.legal(c, s, "float32") for s in shapes):
                out.append(dict(c))
    return sorted(out, key=key)


def model_inputs(plan: list[dict[str, int]], shapes: Sequence[tuple[int, int, int]] = SHAPES) -> tuple:
    """What the predictor takes for each configuration at each of ``shapes`` (``autopad.search.rank``'s
    inputs, the spec's own launch info, with the committed constants): computed once for a fit."""
    from autopad.arch import get_arch
    from autopad.kernels_registry import builtin_spec
    from autopad.search import _launch_infos, _layout, _traffic, score_candidates

    spec, arch = builtin_spec("matmul", "cuda"), get_arch("sm_90")
    layouts = [_layout(spec, c, "float32") for c in plan]
    wave, ideal = score_candidates(spec, plan, layouts, "float32", None, arch)
    per_shape = [
        (_launch_infos(spec, plan, layouts, s, "float32"), _traffic(spec, s, "float32")) for s in shapes
    ]
    return arch, layouts, wave, ideal, per_shape


def predicted_ratios(plan: list[dict[str, int]], slots: float, inputs: tuple | None = None) -> list[float]:
    """The model's time at K 1000 over its time at K 1008 for each configuration, with ``slots`` issue slots
    a checked warp load (the checked part of ``loop_slots``, ``matmul_cost.loop_slots``, is linear in it;
    the rest, the k-loop's counted instructions, stays); ``inputs``: ``model_inputs(plan)``, if at hand."""
    from autopad.kernels.cuda.matmul_cost import CHECKED_LOAD_SLOTS, loop_slots

    from autopad.predict import predict_arrays

    arch, layouts, wave, ideal, per_shape = inputs or model_inputs(plan)
    scale = slots / CHECKED_LOAD_SLOTS
    sec = []
    for shape, (infos, traffic) in zip(SHAPES, per_shape):
        checked = [float(loop_slots(c, shape)) for c in plan]
        infos = [
            {**i, "loop_slots": i.get("loop_slots", 0.0) + x * (scale - 1)} for i, x in zip(infos, checked)
        ]
        sec.append(predict_arrays(infos, traffic, wave, ideal, arch, layouts)[0])
    return list(sec[0] / sec[1])


def read_times(
    path: str, shapes: Sequence[tuple[int, int, int]]
) -> tuple[list[dict[str, int]], list[list[float]]]:
    """A profile's CSV: the configurations legal at every one of ``shapes`` with a correct time at each, and
    their times (ms), one list a configuration in the order of ``shapes``."""
    import csv

    ms: dict[tuple[str, str], float] = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["correct"] == "1" and r["ms"]:
                ms[(r["shape"], r["key"])] = float(r["ms"])
    names = ["x".join(map(str, s)) for s in shapes]
    plan = [c for c in configurations(shapes) if all((n, key(c)) in ms for n in names)]
    return plan, [[ms[(n, key(c))] for n in names] for c in plan]


def fit(path: str, show: bool = True) -> float | None:
    """``--fit``: the measured ratios against the model's for each CHECKED_LOAD_SLOTS on a grid, and the
    value at which the BK 16 builds' median log error equals the BK 8 builds' (the control: what K 1000
    itself costs any build), interpolated on the grid (returned; None if it is off the grid)."""
    import math
    import statistics

    out = print if show else (lambda *a, **k: None)
    plan, times = read_times(path, SHAPES)
    measured = [t[0] / t[1] for t in times]
    for bk in (8, 16):
        got = sorted(m for c, m in zip(plan, measured) if c["BK"] == bk)
        out(f"BK {bk}: {len(got)} configurations, measured K 1000 / K 1008 median "
            f"{statistics.median(got):.4f}, range {got[0]:.4f}-{got[-1]:.4f}")  # fmt: skip
    grid = (0, 5, 10, 15, 20, 25, 30, 40)
    gaps = []
    inputs = model_inputs(plan)
    for slots in grid:
        err = [math.log(m / p) for c, m, p in zip(plan, measured, predicted_ratios(plan, slots, inputs))]
        ctl = statistics.median(e for c, e in zip(plan, err) if c["BK"] == 8)
        d = [e - ctl for c, e in zip(plan, err) if c["BK"] == 16]
        gaps.append(statistics.median(d))
        rms = math.sqrt(sum(x * x for x in d) / len(d))
        out(
            f"slots {slots:4.1f}: BK 16 log error less the BK 8 median: median {gaps[-1]:+.4f}, rms {rms:.4f}"
        )
    at = crossing(grid, gaps)
    out("the BK 16 median does not meet the control's on the grid" if at is None else
        f"the BK 16 median meets the control's at {at:.1f} slots")  # fmt: skip
    return at


def crossing(grid: Sequence[float], values: Sequence[float]) -> float | None:
    """Where ``values`` (on ``grid``) first go from >= 0 to <= 0, interpolated; None if they do not."""
    for (s0, g0), (s1, g1) in zip(zip(grid, values), zip(grid[1:], values[1:])):
        if g0 >= 0 >= g1:
            return s0 + (s1 - s0) * g0 / (g0 - g1) if g0 != g1 else s0
    return None


def main(argv: Sequence[str] | None = None) -> int:
    return run_profile(
        argv, __doc__ or "", SHAPES, fit, "fit CHECKED_LOAD_SLOTS to these timings (no GPU needed)"
    )


def run_profile(argv: Sequence[str] | None, doc: str, shapes: Sequence[tuple[int, int, int]],
                fit_fn: Callable[[str], object], fit_help: str) -> int:  # fmt: skip
    """The command line both SIMT profiles share: time every configuration legal at ``shapes`` (``--out``),
    print the plan (``--dry-run``) or fit a recorded CSV with ``fit_fn`` (``--fit``)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", help="CSV of the timings (shape, key, ms, spread_ms, legal, correct)")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--once", action="store_true", help="launch each configuration once (for ncu)")
    ap.add_argument("--dry-run", action="store_true", help="print the plan (no GPU needed)")
    ap.add_argument("--fit", metavar="CSV", help=fit_help)
    args = ap.parse_args(argv)
    if args.reps < 2:
        ap.error(f"--reps {args.reps}: the spread needs at least 2 timings")
    if args.fit:
        fit_fn(args.fit)
        return 0
    plan = configurations(shapes)
    if args.dry_run:
        for c in plan:
            print(key(c))
        print(f"{len(plan)} configurations x {len(shapes)} shapes")
        return 0
    rows = measure(plan, shapes, args.reps, args.once)
    if args.out and not args.once:
        write_times(args.out, rows)
    return 0


def measure(
    plan: list[dict[str, int]], shapes: Sequence[tuple[int, int, int]], reps: int, once: bool = False
) -> list[dict]:
    """Each configuration built once and timed at every one of ``shapes`` in turn (``checked_timing``; with
    ``once``, launched once each for ncu and nothing returned). Inputs: seeded normal A and B per shape."""
    import torch
    from autopad.kernels.cuda import matmul as G

    spec = G.SPEC
    data = {}
    for m, n, k in shapes:
        gen = torch.Generator(device="cuda").manual_seed(k * 7 + n)
        a = torch.randn(m, k, device="cuda", generator=gen)
        b = torch.randn(k, n, device="cuda", generator=gen)
        data[(m, n, k)] = (a, b, a.double() @ b.double(), torch.empty(m, n, device="cuda"))
    rows = []
    for c in plan:
        built = spec.build(c, "float32")
        for shape in shapes:
            a, b, ref, out = data[shape]
            if once:
                spec.run(built, (a, b), out)
                torch.cuda.synchronize()
                continue
            rows.append(checked_timing(spec, built, c, shape, (a, b), ref, out, reps))
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
