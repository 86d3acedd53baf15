"""How well does a measured time agree with itself? The ceiling any model's rank correlation is read against.

Every recorded row is the median of ``REPS`` CUDA-event timings with its interquartile range (``spread_ms``;
``benchmarks/tuner_quality.py`` and ``gpu_new_shapes.py`` time 10 runs after 2 warm-ups). Two sources of
repeats exist in ``benchmarks/results/h200/quality``:

- the uint8 histogram at 2^24 x 256 was measured exhaustively in both runs (1,793 candidates correct in
  both): a full test-retest;
- each shape's final round re-timed its shortlist and the ten fastest of the exhaustive pass in one job
  (40 runs each): a retest of 13-23 near-best candidates per shape.

Elsewhere the noise is estimated from each row's IQR: a median of ``REPS`` draws from a distribution of
interquartile range q has a standard error of about 1.2533 x (q / 1.349) / sqrt(REPS) (the normal's
asymptotic median error). ``retest`` holds that estimate to the repeats: the spread of the log ratio of
two measurements of one candidate against the one the IQRs predict. The IQR sees the noise within one job;
two jobs (another GPU of the pair, another day) differ by more where the repeats say so, and the ceiling is
given twice: from the IQRs as they are, and with every standard error scaled by the largest ratio of
observed to predicted spread any repeat shows (``inflation``).

Per shape: ``ceiling`` is the median, over ``DRAWS`` draws, of Spearman's correlation of the measured
medians with the same medians perturbed by their standard errors: what a model that predicted the true
times exactly would score against one noisy measurement (slightly optimistic: the measured medians stand
in for the true times, and carry noise of their own). ``pairs_within_noise`` is the share of candidate
pairs whose measured times differ by less than twice their combined standard error: pairs no measurement
of this kind orders reliably, so no model can be held to order them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

REPS = 10  # timings per recorded row (the median is recorded, and the IQR as spread_ms)
DRAWS = 200
_SE_PER_IQR = 1.2533 / 1.349  # a median's standard error per (IQR / sqrt(reps)), normal timings


def median_se(iqr: np.ndarray, reps: int = REPS) -> np.ndarray:
    """The standard error of each recorded median of ``reps`` timings from its IQR (nan where missing)."""
    return _SE_PER_IQR * np.asarray(iqr, dtype=np.float64) / math.sqrt(reps)


def pairs_within_noise(ms: np.ndarray, se: np.ndarray, z: float = 2.0, chunk: int = 2048) -> float:
    """The share of candidate pairs (i < j) with |ms_i - ms_j| < z x sqrt(se_i^2 + se_j^2)."""
    ok = ~(np.isnan(ms) | np.isnan(se))
    m, s2 = ms[ok], se[ok] ** 2
    n = len(m)
    if n < 2:
        return float("nan")
    close = 0
    for lo in range(0, n, chunk):
        a, sa = m[lo : lo + chunk, None], s2[lo : lo + chunk, None]
        d = np.abs(a - m[None, :]) < z * np.sqrt(sa + s2[None, :])
        close += int(d.sum()) - min(chunk, n - lo)  # the diagonal: a candidate is within noise of itself
    return close / (n * (n - 1))


def ceiling(
    ms: np.ndarray,
    se: np.ndarray,
    rho: Callable[[np.ndarray, np.ndarray], float],
    draws: int = DRAWS,
    seed: int = 0,
) -> float:
    """Median Spearman of the medians against the medians perturbed within their standard errors."""
    ok = ~(np.isnan(ms) | np.isnan(se))
    m, s = ms[ok], se[ok]
    if len(m) < 3:
        return float("nan")
    rng = np.random.default_rng(seed)
    return float(np.median([rho(m, m + rng.standard_normal(len(m)) * s) for _ in range(draws)]))


def inflation(retests: Sequence[dict[str, Any]]) -> float:
    """The largest ratio of a repeat's observed log-ratio spread to the spread its IQRs predict (>= 1)."""
    r = [x["log_ratio_sd"] / x["iqr_predicted_sd"] for x in retests if x["iqr_predicted_sd"] > 0]
    return max([1.0, *r])


def _robust_sd(x: np.ndarray) -> float:
    return float(1.4826 * np.median(np.abs(x - np.median(x))))


def retest(
    a_ms: np.ndarray, a_iqr: np.ndarray, b_ms: np.ndarray, b_iqr: np.ndarray, reps_b: int,
    rho: Callable[[np.ndarray, np.ndarray], float],
) -> dict[str, Any]:  # fmt: skip
    """Two measurements of the same candidates: their Spearman, the robust spread of their log ratio, and
    the spread the IQRs predict for it (median over candidates of the two relative standard errors in
    quadrature)."""
    ok = ~(np.isnan(a_ms) | np.isnan(b_ms))
    a, b = a_ms[ok], b_ms[ok]
    lr = np.log(b / a)
    pred = np.hypot(median_se(a_iqr[ok]) / a, median_se(b_iqr[ok], reps_b) / b)
    return {
        "n": int(ok.sum()),
        "spearman": rho(a, b),
        "log_ratio_sd": _robust_sd(lr),
        "iqr_predicted_sd": float(np.nanmedian(pred)),
        "beyond_5pct": int((np.abs(lr) > 0.05).sum()),
    }


def table(rows: Sequence[dict[str, Any]]) -> str:
    """Markdown: per shape, the model's Spearman beside the noise ceiling."""
    head = (
        "| run | family | shape | median IQR / time | pairs within noise | noise ceiling | ceiling, inflated "
        "| model Spearman |\n| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |\n"
    )
    body = [
        f"| {x['run']} | {x['family']} | {x['shape']} | {x['rel_iqr']:.4f} | {x['pairs_within_noise']:.3f} | "
        f"{x['noise_ceiling']:.3f} | {x['noise_ceiling_inflated']:.3f} | {x['spearman']:.2f} |"
        for x in rows
    ]
    return head + "\n".join(body) + "\n"
