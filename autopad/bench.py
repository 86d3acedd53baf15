"""The benchmark harness: compile, check against the reference, then time; in a replaceable worker process.

For each shortlisted candidate: build it (all builds of a job run in parallel threads), run it once on
fresh random input into a poisoned output buffer and compare with the kernel's torch reference, and only
if that is right, time it: the median of CUDA-event timings with the L2 flushed before every run (and the
output zeroed first for kernels that accumulate), and a GPU spin queued ahead of each start event so that
the host's work to issue a run is not timed. A wrong result is recorded, never timed.

The work runs in a child process (``Worker``), started as ``python -m autopad.worker`` (``worker.py``), so
the caller's main module is never imported again there: a script without a ``__main__`` guard runs once.
A kernel that faults (a misaligned address, an out-of-bounds write) poisons its CUDA context for good, and
one that hangs never returns; either way the parent records the candidate as failed with the reason,
replaces the child, and carries on with the rest. A child that dies is noticed from its exit (within
0.1 s), not from a timeout. Torch and the kernels are imported only in the child and only when a GPU path
needs them.

Where each part lives (bench.py was split, one concern a module; every name it defined is still importable
from here): bench_job.py (``BenchJob``, ``spec_ref``/``load_spec``, ``unknown_constants``: the job both
sides share), bench_timing.py (``benchmark``, ``Timing``, ``lead_cycles``: the timing path),
bench_local.py (``measure_local``, ``poison`` and the worker's entry point: the child's side),
bench_pool.py (``Worker``, ``WorkerBenchmarker``: the parent's side); here, ``measure``, which checks a
list of candidates and measures them one way or the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# besides what this module uses, the names bench.py defined before the split, importable from here as
# before (tests and benchmarks use some of the private ones)
from .bench_job import BenchJob, _short, load_spec, spec_ref, unknown_constants  # noqa: F401
from .bench_local import _child, _outputs, _poison_, _poison_one, _zero_, measure_local, poison  # noqa: F401
from .bench_pool import Worker, WorkerBenchmarker
from .bench_timing import (  # noqa: F401
    _FLUSH_BYTES,
    _LEAD_HZ,
    _LEAD_MAX_S,
    _LEAD_MIN_S,
    Timing,
    _median_iqr,
    _time,
    benchmark,
    lead_cycles,
)
from .device import device_info, gpu_available
from .results import Measurement

__all__ = [
    "BenchJob",
    "Worker",
    "WorkerBenchmarker",
    "measure_local",
    "measure",
    "benchmark",
    "Timing",
    "poison",
    "gpu_available",
    "device_info",
]


def measure(
    kernel: Any,
    candidates: Sequence[dict[str, int]],
    shape: tuple[int, ...],
    dtype: str,
    dist: str = "uniform",
    seed: int = 0,
    reps: int = 30,
    device: int = 0,
    isolated: bool = True,
) -> list[Measurement]:
    """Check and time ``candidates`` of ``kernel`` (a spec or a built-in name) as ``tune`` does: build,
    run once on fresh input into a poisoned output, compare with the reference, then time. ``isolated``
    runs them in a worker process (a faulting candidate cannot take this process's CUDA context with it).
    Without a GPU it raises at once (``autopad.tune`` ranks by the model alone there; this measures only).
    """
    from .request import normalize_dtype, normalize_shape, resolve

    dtype = normalize_dtype(dtype)
    spec = resolve(kernel, "auto", dtype)
    for c in candidates:
        bad = unknown_constants(spec, c)
        if bad:
            raise ValueError(
                f"{getattr(spec, 'NAME', 'kernel')}: {', '.join(bad)} not among the spec's constants "
                f"({', '.join(sorted(spec.SPACE))}); were these candidates written for another version of it?"
            )
    if not gpu_available():  # after the checks of the request, which need no GPU
        raise RuntimeError(
            "autopad.bench.measure: no GPU to measure on (no CUDA device, torch without CUDA, or "
            "AUTOPAD_NO_BENCH=1); autopad.tune ranks candidates by the model alone without one"
        )
    items = tuple((",".join(f"{k}={v}" for k, v in sorted(c.items())), dict(c)) for c in candidates)
    job = BenchJob(
        spec_ref(spec), items, normalize_shape(shape), dtype, dist, seed=seed, reps=reps, device=device
    )
    if isolated:
        return list(WorkerBenchmarker().measure(job))
    return [m for m, _ in measure_local(job)]
