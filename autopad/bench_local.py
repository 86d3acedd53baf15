"""The worker's side of a benchmark: a job measured in this process, candidate by candidate, and the entry
point that streams it to the parent.

For each candidate: build it (all builds of a job in parallel threads), run it once on fresh random input
(refilled into the job's first allocations, so that every candidate is timed on the same buffers:
``keep_allocation``) into a poisoned output (``poison``: NaN bytes for floats, 0xA5 for ints, a pattern
no correct kernel leaves) and compare with the kernel's torch reference, and only if that is right, time
it (``bench_timing``). With the job's ``placements`` option P > 1 (the tuner's final re-timing), each
candidate also runs, checked, into P - 1 further outputs, allocated back to back and held for the whole job,
and counts as fast as its slowest placement: where a buffer lies can move a kernel by more than its constants
do, and a user's buffers lie anywhere (H200 run 96: an fp64 16384² transpose's GROUP 1 tile took 1.067 and
1.136 ms on alternate 2 GiB outputs, a GROUP 64 tile 1.094 on all; so outputs allocated back to back, not
interleaved with inputs, which put every output of run 95's job on the fast ones). A wrong result is recorded,
never timed; a fault during a run is reported as fatal (the CUDA context may be lost), so the worker stops
after it and the parent (bench_pool.py) starts a fresh one.

Why a module of its own: this is the code that runs in the child process (``_child`` is the worker's default
target, named "autopad.bench_local:_child"), apart from the parent's process handling, and ``measure_local``
is what a script calls to measure without a worker.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .bench_job import BenchJob, _short, load_spec, unknown_constants
from .bench_timing import _median_iqr, _time
from .kernel_args import Inputs
from .results import Measurement

__all__ = ["MAX_PLACEMENTS", "keep_allocation", "measure_local", "poison"]

MAX_PLACEMENTS = 8  # the most separate allocations a job's ``placements`` option may ask for


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


def poison(out: Any) -> None:
    """Fill an output (a tensor or a tuple of them) with a pattern no correct kernel leaves."""
    _poison_(out)


def _tensor_key(t: Any) -> tuple:
    """What must match for one tensor's allocation to stand in for another's: shape, dtype, strides, storage
    offset, the storage's size and the device."""
    return (tuple(t.shape), t.dtype, t.stride(), t.storage_offset(), t.untyped_storage().nbytes(), t.device)


def _refillable(t: Any) -> bool:
    """Can ``copy_`` fill this tensor with another's values? Not if it overlaps itself (a stride 0 over a
    dimension of more than one element: an expanded tensor) or records gradients."""
    return not t.requires_grad and all(st != 0 or n <= 1 for st, n in zip(t.stride(), t.shape))


def _rebuild(like: Any, items: list) -> Any:
    """``items`` in ``like``'s container: a single item, a list, a tuple, or a tuple subclass that carries a
    problem shape (``Inputs``)."""
    if not isinstance(like, (tuple, list)):
        return items[0]
    if isinstance(like, Inputs):
        return Inputs(items, like.shape)
    return list(items) if isinstance(like, list) else tuple(items)


def keep_allocation(held: Any, new: Any, refill: bool) -> Any:
    """``new`` with its tensors replaced by ``held``'s where every tensor of ``new`` has the layout of the
    tensor in the same place in ``held`` (``_tensor_key``; with ``refill``, ``new``'s values are copied into
    them first), else ``new`` as it is: every candidate of a job then runs on the job's first input and
    output allocations. Everything that is not a tensor (a bin count, an ``Out``) is ``new``'s.

    Why: where a buffer lies in DRAM can move a kernel's time more than its constants do. H200 runs 81-83:
    an fp64 16384^2 transpose took 1.10 or 1.14 ms depending only on which of five 2 GiB allocations held its
    output, whatever its constants, and fresh allocations per candidate rotated through them, so the
    exhaustive study's ranking followed the allocator (one candidate in three fast) instead of the layout.
    The values are still fresh per candidate (``refill``); only the allocations are shared, and within one
    job only (a new job, or a worker replaced after a fault, allocates afresh).

    All or nothing, and never an error: a tensor that differs, cannot be refilled (``_refillable``), or a
    comparison or copy that raises, and the candidate runs on ``new``.
    """
    import torch

    if held is None:
        return new
    try:
        old, cur = _outputs(held), _outputs(new)
        if len(old) != len(cur) or isinstance(held, (tuple, list)) != isinstance(new, (tuple, list)):
            return new
        items = []
        for h, n in zip(old, cur):
            if isinstance(n, torch.Tensor):
                if not (
                    isinstance(h, torch.Tensor)
                    and _tensor_key(h) == _tensor_key(n)
                    and (not refill or _refillable(h))
                ):
                    return new
                items.append(h)
            else:
                items.append(n)
        if refill:
            for h, n in zip(old, cur):
                if isinstance(n, torch.Tensor) and h is not n:
                    h.copy_(n)
        return _rebuild(new, items)
    except Exception:  # a spec's odd argument: run on the fresh allocation, as before the sharing
        return new


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
    wanted = max(1, min(MAX_PLACEMENTS, int(job.options.get("placements", 1))))
    held_in = None  # the job's input allocations, reused by every candidate
    held_out: list[Any] = [None] * wanted  # each placement's output allocation, likewise
    places = 0  # how many placements the job has, fixed at its first correct candidate (every candidate of
    # the job is then timed on as many: its slowest counts, so fewer would favour it)
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
            fresh = spec.make_inputs(job.shape, job.dtype, device, job.seed + 1000 * i, job.dist)
            inputs = held_in = keep_allocation(held_in, fresh, refill=True)
            del fresh
            ref = None  # the last candidate's reference goes before this one's is made
            ref = spec.expected(inputs)
            out = held_out[0] = keep_allocation(
                held_out[0], spec.alloc_output(inputs, constants), refill=False
            )
            ok, msg = _run_checked(spec, b, inputs, out, ref, accumulates, torch)
            if ok and not places:
                places = _placements_that_fit(wanted, out, torch) if wanted > 1 else 1
            # the other placements: outputs of their own, allocated back to back, each run checked too
            outs = [out]
            extra = range(1, places) if ok else range(0)
            for p in extra:  # all allocated before any runs (a check may allocate)
                held_out[p] = keep_allocation(held_out[p], spec.alloc_output(inputs, constants), refill=False)
            for p in extra:
                ok, msg = _run_checked(spec, b, inputs, held_out[p], ref, accumulates, torch)
                if not ok:
                    msg = f"{msg} (on placement {p + 1} of {places})"
                    break
                outs.append(held_out[p])
        except Exception as exc:
            yield Measurement(key, False, error=f"fault: {_short(exc)}"), True
            return
        if not ok:
            yield Measurement(key, False, error=f"wrong result: {msg}"), False
            continue
        try:
            timed = []
            for p_out in outs:

                def once(b=b, inputs=inputs, out=p_out) -> None:
                    spec.run(b, inputs, out)

                times = _time(
                    once,
                    job.reps,
                    job.warmup,
                    (lambda out=p_out: _zero_(out)) if accumulates else None,
                    job.options.get("time_budget_ms"),
                )
                timed.append((*_median_iqr(times), len(times)))
        except Exception as exc:
            yield Measurement(key, False, error=f"fault while timing: {_short(exc)}"), True
            return
        # a candidate is as fast as its slowest placement; its noise is the noisiest placement's spread
        med = max(t[0] for t in timed)
        iqr = max(t[1] for t in timed)
        yield Measurement(key, True, ms=med, spread_ms=iqr, runs=sum(t[2] for t in timed)), False


def _run_checked(spec: Any, b: Any, inputs: Any, out: Any, ref: Any, accumulates: bool, torch: Any) -> tuple:
    """Run a build once into a poisoned (or, accumulating, zeroed) output and check it: (ok, why not).
    A run that raises raises (a fault: the caller stops the job); a check that raises is a wrong result."""
    _poison_(out)
    if accumulates:
        _zero_(out)
    spec.run(b, inputs, out)
    torch.cuda.synchronize()
    try:
        return spec.check(out, ref)
    except Exception as exc:
        return False, f"check raised {_short(exc)}"


def _placements_that_fit(wanted: int, out: Any, torch: Any) -> int:
    """How many placements a job can hold: ``wanted``, fewer where the extra outputs would take more than
    half of the GPU's free memory (at least 1: the job's own)."""
    each = sum(t.untyped_storage().nbytes() for t in _outputs(out) if isinstance(t, torch.Tensor))
    if each == 0:
        return 1
    try:
        free = torch.cuda.mem_get_info()[0]
    except Exception:  # no way to ask: stay on the one placement
        return 1
    return max(1, min(wanted, 1 + int(free // 2 // each)))


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
