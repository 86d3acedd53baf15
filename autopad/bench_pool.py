"""The parent's side of a benchmark: a worker process per job that survives faulting, hanging and dying
children, and the default benchmarker built on it.

The work runs in a child process (``Worker``), started as ``python -m autopad.worker`` (``worker.py``), so
the caller's main module is never imported again there: a script without a ``__main__`` guard runs once.
A kernel that faults (a misaligned address, an out-of-bounds write) poisons its CUDA context for good, and
one that hangs never returns; either way the parent records the candidate as failed with the reason,
replaces the child, and carries on with the rest. A child that dies is noticed from its exit (within
0.1 s), not from a timeout.

Why a module of its own: this is process handling only (the protocol's messages, restarts, timeouts); what
the child does with a job is bench_local.py's, and torch is never imported here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from .bench_job import BenchJob, _short
from .bench_local import _child
from .results import Measurement

__all__ = ["Worker", "WorkerBenchmarker"]


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
        spawn: Callable[[dict[str, Any]], Any] | None = None,
    ):
        from .worker import target_name

        self.job = job
        self.timeout_s = timeout_s
        self.compile_timeout_s = compile_timeout_s
        self.target = target_name(target or _child)
        self.spawn = spawn  # hello -> a started child (WorkerBenchmarker's warm spare); default: a fresh one

    def results(self) -> Iterator[Measurement]:
        from .worker import TIMEOUT, WorkerDied, WorkerProcess

        todo = list(self.job.candidates)
        restarts = setup_failures = 0
        fresh = False  # a spare died before it was ready: the next start is a fresh process
        while todo:
            job = replace(self.job, candidates=tuple(todo))
            try:
                hello = {"target": self.target, "job": job}
                spawn = self.spawn if self.spawn is not None and not fresh else None
                child = spawn(hello) if spawn is not None else WorkerProcess("job", hello)
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
                        if not ready and getattr(child, "from_spare", False) and not fresh:
                            fresh = True  # a spare killed while it waited, say: start one afresh
                            break
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
    """The default benchmarker: each call measures in a fresh worker process.

    ``spares``: keep that many workers started ahead (``prewarm``, topped up as each job's worker starts),
    which import torch and initialise CUDA while they wait; each job takes the oldest. A job still runs in a
    process of its own, on allocations of its own; what it no longer waits for is the worker's start (H200
    run 128: 3.2-4.3 s from a job's spawn to its first candidate, four or five jobs a tune; with one spare,
    run 129, a short job's successor still found its spare importing torch, hence two). ``close`` (or
    leaving a ``with`` block) ends the spares; unclosed ones exit when this process does.
    """

    def __init__(
        self,
        timeout_s: float = 60.0,
        compile_timeout_s: float = 600.0,
        spares: int = 0,
        target: Callable[[BenchJob, Any], None] | str | None = None,
    ):
        self.timeout_s = timeout_s
        self.compile_timeout_s = compile_timeout_s
        self.spares = max(0, int(spares))
        self.target = target
        self._spares: list[Any] = []  # oldest first
        self._lock = threading.Lock()  # jobs measured from several threads share the spares

    def prewarm(self) -> None:
        """Start spares (up to ``spares`` waiting), so that the next jobs find them ready."""
        from .worker import WorkerProcess

        with self._lock:
            while len(self._spares) < self.spares:
                try:
                    self._spares.append(WorkerProcess("job", None, warm=True))
                except Exception:  # no interpreter to start: the job's own start will say why
                    return

    def _spawn(self, hello: dict[str, Any]) -> Any:
        """A started child for ``hello``: the oldest live spare, else a fresh one. A spare leaves the list
        only once it has its job: an unpicklable job raises in ``begin`` (as a fresh start would) and leaves
        the spares where ``close`` finds them."""
        from .worker import WorkerProcess

        child, dead = None, []
        with self._lock:
            while self._spares and child is None:
                if not self._spares[0].alive():
                    dead.append(self._spares.pop(0))
                    continue
                self._spares[0].begin(hello)
                child = self._spares.pop(0)
        for spare in dead:
            spare.close()
        if child is None:
            child = WorkerProcess("job", hello)
        self.prewarm()  # the next jobs' workers warm while this one works
        return child

    def measure(self, job: BenchJob) -> Iterator[Measurement]:
        spawn = self._spawn if self.spares else None
        kw = {"target": self.target} if self.target is not None else {}
        yield from Worker(job, self.timeout_s, self.compile_timeout_s, spawn=spawn, **kw).results()

    def close(self) -> None:
        """End the spare workers that are waiting."""
        with self._lock:
            spares, self._spares = self._spares, []
        for spare in spares:
            spare.close()

    def __enter__(self) -> WorkerBenchmarker:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
