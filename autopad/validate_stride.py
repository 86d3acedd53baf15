"""The timing mode of ``autopad validate`` (machines without ncu): the seeds' stride table, measured here,
ranked against the model.

What: ``SEED_STRIDES`` (the seeds' slowdowns over stride 1, measured on the H200), ``spearman`` (rank
correlation, ties averaged; also used by the benchmarks' reports), ``predicted_stride_degree`` (the model's
mean wavefronts per ideal for the stride kernel's loads) and ``stride_table`` (time, slowdown, prediction
and the correlations; the GPU timing is validate_cuda.time_strides, loaded only when timing).

Why apart: a different check from the ncu probes (timings ranked, not counters compared), needing numpy and
the model only. Moved from autopad/validate.py unchanged; ``autopad.validate`` re-exports every name.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

import numpy as np

from .model import analyze_batch

__all__ = ["SEED_STRIDES", "predicted_stride_degree", "spearman", "stride_table"]

# The seeds' stride table: slowdown over stride 1 measured on the H200 (../shared/hardware/README.md)
SEED_STRIDES = {
    0: 1.00,
    1: 1.00,
    2: 1.36,
    4: 2.64,
    8: 5.31,
    16: 10.35,
    32: 20.74,
    33: 1.00,
    64: 20.62,
    65: 0.98,
}


# ------------------------------------------------------------------------------------------- timing mode
def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rank correlation: ranks (ties get their average rank), then Pearson's r of the ranks."""

    def ranks(v: np.ndarray) -> np.ndarray:
        order = np.argsort(v, kind="mergesort")
        r = np.empty(len(v), dtype=float)
        sv = v[order]
        i = 0
        while i < len(v):
            j = i
            while j + 1 < len(v) and sv[j + 1] == sv[i]:
                j += 1
            r[order[i : j + 1]] = (i + j) / 2.0 + 1.0
            i = j + 1
        return r

    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.shape != b.shape or a.size < 2:
        raise ValueError("spearman: need two sequences of the same length, at least 2")
    ra, rb = ranks(a) - ranks(a).mean(), ranks(b) - ranks(b).mean()
    den = float(np.sqrt((ra * ra).sum() * (rb * rb).sum()))
    return float((ra * rb).sum() / den) if den else float("nan")


def predicted_stride_degree(stride: int, arch: str = "sm_90") -> float:
    """Mean wavefronts per warp load of ``tile[(lane * stride + i) & 2047]`` (fp32) over i = 0..63."""
    addr = np.array([[((n * stride + i) & 2047) * 4 for n in range(32)] for i in range(64)], dtype=np.int64)
    wave, ideal = analyze_batch(addr, 4, "load", arch)
    return float((wave / ideal).mean())


def stride_table(
    strides: Sequence[int] = tuple(SEED_STRIDES), times_ms: Sequence[float] | None = None
) -> dict:
    """The seeds' stride table measured here: time, slowdown over stride 1, predicted degree, the seeds'
    figure, and the Spearman correlations. ``times_ms`` (for tests) skips the GPU."""
    strides = list(strides)
    if times_ms is None:
        from .validate_cuda import time_strides

        times_ms = time_strides(strides)
    base = times_ms[strides.index(1)] if 1 in strides else min(times_ms)
    rows = [
        {
            "stride": s,
            "time_ms": t,
            "slowdown": t / base,
            "predicted_degree": predicted_stride_degree(s),
            "seed_slowdown": SEED_STRIDES.get(s),
        }
        for s, t in zip(strides, times_ms)
    ]
    seeded = [r for r in rows if r["seed_slowdown"] is not None]
    return {
        "rows": rows,
        "spearman_measured_vs_predicted": spearman(
            [r["slowdown"] for r in rows], [r["predicted_degree"] for r in rows]
        ),
        "spearman_seed_vs_predicted": spearman(
            [r["seed_slowdown"] for r in seeded], [r["predicted_degree"] for r in seeded]
        )
        if len(seeded) > 1
        else None,
        "spearman_measured_vs_seed": spearman(
            [r["slowdown"] for r in seeded], [r["seed_slowdown"] for r in seeded]
        )
        if len(seeded) > 1
        else None,
    }


def _print_stride(table: dict, file: TextIO = sys.stdout) -> None:
    print("stride  time_ms  slowdown  predicted  seeds", file=file)
    for r in table["rows"]:
        seed = "" if r["seed_slowdown"] is None else f"{r['seed_slowdown']:.2f}"
        print(
            f"{r['stride']:6d} {r['time_ms']:8.3f} {r['slowdown']:9.2f} "
            f"{r['predicted_degree']:10.2f}  {seed}",
            file=file,
        )
    print(f"Spearman(measured, predicted) = {table['spearman_measured_vs_predicted']:.3f}", file=file)
