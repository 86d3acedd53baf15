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
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any

from .device import device_info, gpu_available
from .results import Measurement
from .spec import KernelSpec

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

_FLUSH_BYTES = 256 << 20  # larger than any current L2 (H200: 60 MB)
_LEAD_HZ = 2.0e9  # cycles per second assumed for the spin ahead of a timed run (lead_cycles)
_LEAD_MIN_S, _LEAD_MAX_S = 20e-6, 2e-3


def spec_ref(spec: KernelSpec) -> Any:
    """A picklable handle the worker can turn back into the spec: a module's name (and file), or the object
    serialised with cloudpickle, which carries a class defined in the user's script by value, so that the
    worker never imports (and so never re-runs) the user's main module."""
    impl = spec.impl
    if isinstance(impl, ModuleType):
        return ("module", impl.__name__, getattr(impl, "__file__", None))
    try:
        import cloudpickle
    except ImportError:  # objects of importable classes still pickle by reference
        return ("object", impl)
    return ("pickled", cloudpickle.dumps(impl))


def load_spec(ref: Any) -> KernelSpec:
    kind = ref[0]
    if kind == "module":
        _, name, path = ref
        try:
            return KernelSpec(importlib.import_module(name))
        except ImportError:
            if not path:
                raise
            spec = importlib.util.spec_from_file_location(name, path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)  # a user's kernel file that is not on the path
            return KernelSpec(mod)
    if kind == "pickled":
        import pickle

        return KernelSpec(pickle.loads(ref[1]))
    return KernelSpec(ref[1])


@dataclass(frozen=True)
class BenchJob:
    """What to measure: a spec, candidates (constants), one shape/dtype/input class, and how."""

    spec: Any  # spec_ref(...)
    candidates: tuple[tuple[str, dict[str, int]], ...]  # (key, constants)
    shape: tuple[int, ...]
    dtype: str
    dist: str = "uniform"
    seed: int = 0
    reps: int = 30
    warmup: int = 3
    device: int = 0
    # "time_budget_ms": fewer repeats (at least 3) for a candidate slower than budget / reps
    options: dict[str, Any] = field(default_factory=dict)


def _outputs(out: Any) -> tuple[Any, ...]:
    """A spec's output: one tensor, or a tuple/list of them."""
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def _zero_(out: Any) -> None:
    for t in _outputs(out):
        t.zero_()


def _poison_(out: Any) -> None:
    """Fill each output with a pattern no correct kernel leaves: NaN bytes for floats, 0xA5 bytes for ints."""
    import torch

    for t in _outputs(out):
        _poison_one(t, torch)


def _poison_one(t: Any, torch: Any) -> None:
    if t.is_contiguous():
        t.view(torch.uint8).fill_(0xFF if t.is_floating_point() else 0xA5)
    else:
        t.fill_(float("nan") if t.is_floating_point() else -91)


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


def poison(out: Any) -> None:
    """Fill an output (a tensor or a tuple of them) with a pattern no correct kernel leaves."""
    _poison_(out)


def unknown_constants(spec: Any, constants: Mapping[str, Any]) -> list[str]:
    """The names in ``constants`` that the spec's ``SPACE`` does not have (a spec without a SPACE: none).

    A build ignores a name it does not read, so a candidate written for another version of a spec (a
    constant since renamed) would run with the new constant at its default under the old label."""
    space = getattr(spec, "SPACE", None)
    if not space:
        return []
    return sorted(str(k) for k in constants if k not in space)


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
    items = tuple((",".join(f"{k}={v}" for k, v in sorted(c.items())), dict(c)) for c in candidates)
    job = BenchJob(
        spec_ref(spec), items, normalize_shape(shape), dtype, dist, seed=seed, reps=reps, device=device
    )
    if isolated:
        return list(WorkerBenchmarker().measure(job))
    return [m for m, _ in measure_local(job)]


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text if len(text) <= 2000 else text[:2000] + " ..."


def measure_local(
    job: BenchJob, on_start: Callable[[str], None] | None = None
) -> Iterator[tuple[Measurement, bool]]:
    """Run a job in this process, yielding (measurement, fatal) per candidate.

    ``fatal`` is True when the candidate failed at run time: its CUDA context may be lost, so a worker
    stops after it. Compile errors and wrong answers are not fatal.
    """
    import torch

    spec = load_spec(job.spec)
    torch.cuda.set_device(job.device)
    device = torch.device("cuda", job.device)

    def build(item: tuple[str, dict[str, int]]) -> Any:
        try:
            return spec.build(item[1], job.dtype)
        except Exception as exc:  # compile errors are data, not crashes
            return exc

    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        built = list(pool.map(build, job.candidates))

    accumulates = bool(getattr(spec, "ACCUMULATES", False))
    for i, ((key, constants), b) in enumerate(zip(job.candidates, built)):
        if on_start:
            on_start(key)
        bad = unknown_constants(spec, constants)
        if bad:
            yield Measurement(key, False, error=f"constants: {', '.join(bad)} not in the spec's SPACE"), False
            continue
        if isinstance(b, Exception):
            yield Measurement(key, False, error=f"compile: {_short(b)}"), False
            continue
        try:
            inputs = spec.make_inputs(job.shape, job.dtype, device, job.seed + 1000 * i, job.dist)
            ref = spec.expected(inputs)
            out = spec.alloc_output(inputs, constants)
            _poison_(out)
            if accumulates:
                _zero_(out)
            spec.run(b, inputs, out)
            torch.cuda.synchronize()
        except Exception as exc:
            yield Measurement(key, False, error=f"fault: {_short(exc)}"), True
            return
        try:
            ok, msg = spec.check(out, ref)
        except Exception as exc:
            ok, msg = False, f"check raised {_short(exc)}"
        if not ok:
            yield Measurement(key, False, error=f"wrong result: {msg}"), False
            continue
        try:

            def once(b=b, inputs=inputs, out=out) -> None:
                spec.run(b, inputs, out)

            times = _time(
                once,
                job.reps,
                job.warmup,
                (lambda out=out: _zero_(out)) if accumulates else None,
                job.options.get("time_budget_ms"),
            )
        except Exception as exc:
            yield Measurement(key, False, error=f"fault while timing: {_short(exc)}"), True
            return
        med, iqr = _median_iqr(times)
        yield Measurement(key, True, ms=med, spread_ms=iqr, runs=len(times)), False


def _child(job: BenchJob, out: Any) -> None:
    """Worker entry point: stream ("start", key), ("result", measurement, fatal) and ("done",).

    A spec that cannot be loaded here is ("fatal", why): every attempt would fail the same way.
    """
    try:
        load_spec(job.spec)
    except BaseException as exc:
        out.put(("fatal", f"worker could not load the kernel spec: {_short(exc)}"))
        return
    try:
        for m, fatal in measure_local(job, on_start=lambda k: out.put(("start", k))):
            out.put(("result", m.to_dict(), fatal))
            if fatal:
                return
        out.put(("done",))
    except BaseException as exc:  # anything else: report it against no candidate and stop
        out.put(("crash", _short(exc) + "\n" + traceback.format_exc(limit=3)))


class Worker:
    """One child process measuring one job; ``results`` yields measurements and survives a dying child.

    The child is ``python -m autopad.worker`` (``worker.WorkerProcess``), never a re-import of the caller's
    main module. ``target`` is what it runs, a "module:function" or a module-level function called with
    ``(job, out)`` (tests swap in fake children). A child that exits is noticed at once (its pipe closes),
    one that says nothing is killed after ``compile_timeout_s`` before its first candidate starts and
    ``timeout_s`` after that; either way its candidate is recorded as failed and a fresh child takes the
    rest. A child that cannot start at all (or load the spec) fails every candidate at once, with why; one
    that fails before its first candidate starts (its set-up or builds) gets one more try, then the same.
    """

    def __init__(
        self,
        job: BenchJob,
        timeout_s: float = 60.0,
        compile_timeout_s: float = 600.0,
        target: Callable[[BenchJob, Any], None] | str | None = None,
    ):
        from .worker import target_name

        self.job = job
        self.timeout_s = timeout_s
        self.compile_timeout_s = compile_timeout_s
        self.target = target_name(target or _child)

    def results(self) -> Iterator[Measurement]:
        from .worker import TIMEOUT, WorkerDied, WorkerProcess

        todo = list(self.job.candidates)
        restarts = setup_failures = 0
        while todo:
            job = replace(self.job, candidates=tuple(todo))
            try:
                child = WorkerProcess("job", {"target": self.target, "job": job})
            except Exception as exc:  # an unpicklable job, no interpreter to start: say so for each
                for key, _ in todo:
                    yield Measurement(key, False, error=f"worker could not start: {_short(exc)}")
                return
            current: str | None = None
            first, ready = True, False
            finished = False
            try:
                while True:
                    wait = self.compile_timeout_s if first else self.timeout_s
                    what = "compiling" if current is None else f"candidate {current}"
                    try:
                        msg = child.recv(wait)
                    except WorkerDied as died:
                        if not ready:  # it never got going: a fresh one would fail the same way
                            for key, _ in todo:
                                yield Measurement(key, False, error=f"worker could not start: {died}")
                            return
                        if first:  # in its set-up or builds: once more, then every candidate fails
                            setup_failures += 1
                            if setup_failures < 2:
                                break
                            for key, _ in todo:
                                yield Measurement(key, False, error=f"worker died before measuring: {died}")
                            return
                        failed = current or todo[0][0]
                        yield Measurement(failed, False, error=f"worker crashed while {what}: {died}")
                        todo = [t for t in todo if t[0] != failed]
                        break
                    if msg is TIMEOUT:
                        failed = current or todo[0][0]
                        yield Measurement(
                            failed, False, error=f"timeout: no answer in {wait:.0f} s while {what}"
                        )
                        todo = [t for t in todo if t[0] != failed]
                        break
                    if msg[0] == "ready":
                        ready = True
                    elif msg[0] == "start":
                        first = False
                        current = msg[1]
                    elif msg[0] == "result":
                        try:
                            m = Measurement.from_dict(msg[1])
                        except ValueError as exc:  # a NaN time, say: recorded, never picked
                            m = Measurement(current or todo[0][0], False, error=f"bad measurement: {exc}")
                        todo = [t for t in todo if t[0] != m.key]
                        current = None
                        yield m
                        if msg[2]:
                            break  # the child stops after a fault; the loop starts a fresh one
                    elif msg[0] == "done":
                        finished = True
                        break
                    elif msg[0] == "crash":
                        if first:  # in its set-up (no CUDA, a spec that cannot run): as above
                            setup_failures += 1
                            if setup_failures < 2:
                                break
                            for key, _ in todo:
                                yield Measurement(
                                    key, False, error=f"worker crashed before measuring: {msg[1]}"
                                )
                            return
                        failed = current or todo[0][0]
                        yield Measurement(failed, False, error=f"worker crashed: {msg[1]}")
                        todo = [t for t in todo if t[0] != failed]
                        break
                    elif msg[0] == "fatal":
                        for key, _ in todo:
                            yield Measurement(key, False, error=msg[1])
                        return
            finally:
                child.close()
            if finished:
                return
            restarts += 1
            if restarts > len(self.job.candidates):
                for key, _ in todo:
                    yield Measurement(key, False, error="not measured: the worker kept failing")
                return


class WorkerBenchmarker:
    """The default benchmarker: each call measures in a fresh worker process."""

    def __init__(self, timeout_s: float = 60.0, compile_timeout_s: float = 600.0):
        self.timeout_s = timeout_s
        self.compile_timeout_s = compile_timeout_s

    def measure(self, job: BenchJob) -> Iterator[Measurement]:
        yield from Worker(job, self.timeout_s, self.compile_timeout_s).results()
