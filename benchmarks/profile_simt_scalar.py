"""What the SIMT GEMM's scalar loads cost: every launch configuration of the CUDA fp32 GEMM (unpadded, no
split-K) timed at 2048x2044x1004, at 2048x2044x1003 (K off the 4-element grid) and at 2048x2045x1004 (N off
it).

Why: ``kernels/cuda/matmul.cu``'s checked k-loop loads an operand as one 16-byte vector per four elements
only where its rows are 16-byte aligned: A's where K is a multiple of 4 (``vec_a``), B's where N is
(``vec_b``). Otherwise each of that operand's vectors is four 4-byte loads, each behind its own bounds test
(``load_global<false>``'s fallback), which the model prices as vectors (``CHECKED_LOAD_SLOTS``). All three
shapes run the checked loop in every build (1004 is no multiple of 8 or 16), with the same k-steps (63 at BK
16, 126 at BK 8) and the same grid, so a configuration's time at K 1003 over its time at K 1004 is what A's
scalar loads cost it, and at N 2045 over N 2044 what B's cost.

What it found (H100 run 222, 2026-12-07): a median 3.2% (A) and 4.3% (B), 0.82-1.13 by build. No form of
issue slots it fits (below) raised the rank correlation of the studies with an operand off the grid, so
the model does not charge it (kernels/cuda/matmul_cost.py says why).

Timing as profile_simt_checked.py's (CUDA events around 10 back-to-back launches through the launcher
users' calls take, median of ``--reps``, each output checked against a float64 product)::

    python benchmarks/profile_simt_scalar.py --out times.csv
    python benchmarks/profile_simt_scalar.py --dry-run
    python benchmarks/profile_simt_scalar.py --fit times.csv     # no GPU: each form's value from them

``--fit`` predicts every configuration's three times for each value of the scalar charge on a grid, in
each of FORMS (issue slots per scalar warp load on top of its checked charge; the same scaled by the thread
tile, TM TN / 64, as the checked charge is; in place of its checked charge), and prints, for A's pair and
B's, the median and rms of log(measured ratio / predicted ratio) and the median by thread tile; the value
at which the two pairs' joint median error crosses zero is what that form would charge.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy
sys.path.insert(0, str(ROOT / "benchmarks"))

from profile_simt_checked import crossing, model_inputs, read_times, run_profile  # noqa: E402

BASE, A_SCALAR, B_SCALAR = (2048, 2044, 1004), (2048, 2044, 1003), (2048, 2045, 1004)
SHAPES: list[tuple[int, int, int]] = [BASE, A_SCALAR, B_SCALAR]
GRID = (0, 10, 20, 30, 40, 60, 80, 100, 120, 160)


FORMS = ("add", "add_tt", "replace")


def form_slots(c: dict[str, int], shape: tuple[int, int, int], form: str, slots: float) -> float:
    """The checked loop's issue slots per block per k-step with ``slots`` charged per scalar warp load
    (A's BM BK / 128 where K % 4, B's BK BN / 128 where N % 4), in one of FORMS: ``add``, on top of every
    load's checked charge (``CHECKED_LOAD_SLOTS`` x TM TN / 64); ``add_tt``, the same scaled by TM TN / 64;
    ``replace``, in place of the scalar loads' checked charge (the vector loads keep theirs)."""
    from autopad.kernels.cuda.matmul_cost import CHECKED_LOAD_SLOTS, checked_loop

    _, n, k = shape
    a, b = c["BM"] * c["BK"] / 128, c["BK"] * c["BN"] / 128
    scalar = a * (k % 4 != 0) + b * (n % 4 != 0)
    tt = c["TM"] * c["TN"] / 64
    checked = CHECKED_LOAD_SLOTS * tt * bool(checked_loop(c, shape))
    if form == "add":
        return checked * (a + b) + slots * scalar
    if form == "add_tt":
        return checked * (a + b) + slots * tt * scalar
    if form == "replace":
        return checked * (a + b - scalar) + slots * scalar
    raise ValueError(f"form {form!r}: one of {FORMS}")


def predicted(plan: list[dict[str, int]], slots: float, form: str, inputs: tuple) -> list[list[float]]:
    """The model's seconds for each configuration at each of SHAPES, the checked part of the launch info's
    ``loop_slots`` (``matmul_cost.loop_slots``) put as ``form_slots`` gives it; the rest, the k-loop's
    counted instructions, stays."""
    from autopad.kernels.cuda.matmul_cost import loop_slots

    from autopad.predict import predict_arrays

    arch, layouts, wave, ideal, per_shape = inputs
    out = []
    for shape, (infos, traffic) in zip(SHAPES, per_shape):
        infos = [
            {
                **i,
                "loop_slots": i.get("loop_slots", 0.0)
                - float(loop_slots(c, shape))
                + form_slots(c, shape, form, slots),
            }
            for i, c in zip(infos, plan)
        ]
        out.append(list(predict_arrays(infos, traffic, wave, ideal, arch, layouts)[0]))
    return out


def fit(path: str, show: bool = True) -> dict[str, float | None]:
    """``--fit``: for each of FORMS and each value on GRID, the median and rms of log(measured / predicted)
    of A's ratio (K 1003 / K 1004) and B's (N 2045 / N 2044), and the median by thread tile; returns each
    form's value at which the joint median crosses zero (None if it does not on the grid)."""
    import math
    import statistics

    out = print if show else (lambda *a, **k: None)
    plan, times = read_times(path, SHAPES)
    meas = {"A": [t[1] / t[0] for t in times], "B": [t[2] / t[0] for t in times]}
    for side, got in meas.items():
        g = sorted(got)
        out(f"{side} scalar / vector: {len(g)} configurations, median {statistics.median(g):.4f}, "
            f"range {g[0]:.4f}-{g[-1]:.4f}")  # fmt: skip
        for tt in sorted({(c["TM"], c["TN"]) for c in plan}):
            sub = sorted(m for c, m in zip(plan, got) if (c["TM"], c["TN"]) == tt)
            out(f"   thread tile {tt[0]}x{tt[1]}: median {statistics.median(sub):.4f}, "
                f"range {sub[0]:.4f}-{sub[-1]:.4f} ({len(sub)})")  # fmt: skip
    inputs = model_inputs(plan, SHAPES)
    found: dict[str, float | None] = {}
    tiles = sorted({(c["TM"], c["TN"]) for c in plan})
    for form in FORMS:
        out(f"form {form}")
        meds = []
        for slots in GRID:
            sec = predicted(plan, slots, form, inputs)
            err = {
                "A": [math.log(m / (a / b)) for m, a, b in zip(meas["A"], sec[1], sec[0])],
                "B": [math.log(m / (a / b)) for m, a, b in zip(meas["B"], sec[2], sec[0])],
            }
            both = err["A"] + err["B"]
            meds.append(statistics.median(both))
            rms = math.sqrt(sum(x * x for x in both) / len(both))
            tile_med = {
                t: statistics.median(e for c, e in zip(plan + plan, both) if (c["TM"], c["TN"]) == t)
                for t in tiles
            }
            by_tile = " ".join(f"{tm}x{tn} {v:+.3f}" for (tm, tn), v in tile_med.items())
            ma, mb = statistics.median(err["A"]), statistics.median(err["B"])
            out(f"  slots {slots:5.1f}: A median {ma:+.4f}, B {mb:+.4f}; both median {meds[-1]:+.4f} "
                f"rms {rms:.4f}; by thread tile {by_tile}")  # fmt: skip
        found[form] = crossing(GRID, meds)
        out("  the joint median does not cross zero on the grid" if found[form] is None else
            f"  the joint median crosses zero at {found[form]:.1f} slots")  # fmt: skip
    return found


def main(argv: Sequence[str] | None = None) -> int:
    return run_profile(
        argv, __doc__ or "", SHAPES, fit, "fit the scalar loads' charge to these timings (no GPU)"
    )


if __name__ == "__main__":
    raise SystemExit(main())
