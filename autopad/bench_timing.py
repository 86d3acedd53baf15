"""How a candidate (or any GPU callable) is timed: the median of CUDA-event timings, each run behind an L2
flush and a GPU spin that hides the host's issue time.

Why a module of its own: this is the one timing path of the project. The worker times candidates with it
(``bench_local.measure_local``) and the benchmark scripts time their peers with ``benchmark``, so a
published ratio compares like with like; keeping it apart from the worker's process handling makes the
timing rules (flush, spin, budget, median) readable in one place. Torch is imported only when timing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Timing", "benchmark", "lead_cycles"]

_FLUSH_BYTES = 256 << 20  # larger than any current L2 (H200: 60 MB)
_LEAD_HZ = 2.0e9  # cycles per second assumed for the spin ahead of a timed run (lead_cycles)
_LEAD_MIN_S, _LEAD_MAX_S = 20e-6, 2e-3


def lead_cycles(host_s: float) -> int:
    """GPU clock cycles to spin ahead of each timed run, given the host's seconds to issue one run.

    Each run is timed between two CUDA events. If the host takes longer to issue ``run`` (Python, launch
    set-up) than the GPU takes for the work queued before the start event, the GPU reaches that event
    first, idles, and the interval times the host too. A spin kernel queued just before the start event
    keeps the GPU busy for three times the host's issue time (at least 20 us, at most 2 ms), so the run is
    queued before its start event fires: the interval is the GPU's time alone. Cycles assume a 2 GHz SM
    clock (the H200 boosts to 1.98); a slower clock only lengthens the lead.
    """
    lead_s = min(max(3.0 * host_s, _LEAD_MIN_S), _LEAD_MAX_S)
    return int(lead_s * _LEAD_HZ)


def _time(
    run: Callable[[], None],
    reps: int,
    warmup: int,
    before: Callable[[], None] | None,
    budget_ms: float | None = None,
) -> list[float]:
    """Event-timed milliseconds of ``reps`` runs, L2 flushed (and ``before`` called) ahead of each, and a
    GPU spin (``lead_cycles``, sized from the warm-up runs' host time) between the flush and the start
    event, so that host work inside ``run`` is never inside the interval.

    With ``budget_ms``, a candidate whose warm-up run shows it slow gets fewer repeats (at least 3), so
    that one hopeless candidate cannot take a sweep's time: ``reps`` x its run time stays near the budget.
    """
    import time

    import torch

    flush = torch.empty(_FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    host = []
    for i in range(warmup):
        if before:
            before()
        if budget_ms is not None and i == warmup - 1:
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            t0 = time.perf_counter()
            run()
            host.append(time.perf_counter() - t0)
            e.record()
            e.synchronize()
            reps = max(3, min(reps, int(budget_ms / max(s.elapsed_time(e), 1e-3))))
        else:
            t0 = time.perf_counter()
            run()
            host.append(time.perf_counter() - t0)
    # the first warm-up run may compile or allocate: its host time counts only when it is the only one
    spin = getattr(torch.cuda, "_sleep", None)
    cycles = lead_cycles(max(host[1:] or host or [0.0]))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for s, e in zip(starts, ends):
        if before:
            before()
        flush.zero_()
        if spin is not None:
            spin(cycles)
        s.record()
        run()
        e.record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, ends)]


def _median_iqr(xs: Sequence[float]) -> tuple[float, float]:
    ys = sorted(xs)
    n = len(ys)

    def q(p: float) -> float:
        i = p * (n - 1)
        lo = int(i)
        hi = min(lo + 1, n - 1)
        return ys[lo] + (ys[hi] - ys[lo]) * (i - lo)

    return q(0.5), q(0.75) - q(0.25)


@dataclass(frozen=True)
class Timing:
    """A timed callable: median and interquartile range of CUDA-event milliseconds, and how many runs."""

    ms: float
    spread_ms: float
    runs: int


def benchmark(
    fn: Callable[[], Any],
    reps: int = 30,
    warmup: int = 3,
    before: Callable[[], Any] | None = None,
    budget_ms: float | None = None,
) -> Timing:
    """Time ``fn`` exactly as the tuner times a candidate: ``warmup`` runs, then ``reps`` runs each behind
    a 256 MB L2 flush (and ``before``, e.g. zeroing an accumulator) and a GPU spin longer than the host's
    time to issue ``fn`` (``lead_cycles``), CUDA events, the median: the GPU's time for ``fn``, not the
    host's (``benchmarks/profile_ops_host.py`` measures that).

    Benchmarks time their peers (torch eager, ``torch.compile``, a plain Triton kernel, a copy) with this,
    so a published ratio compares like with like.
    """
    times = _time(fn, reps, warmup, before, budget_ms)
    med, iqr = _median_iqr(times)
    return Timing(med, iqr, len(times))
