"""The caller's side of a Ray sweep: keep as many tasks in flight as there are GPUs for them, collect their
rows, retry the ones whose worker or node was lost, and report.

A task whose worker or node dies (``RETRYABLE``: ``WorkerCrashedError``, ``NodeDiedError``, the memory
monitor's ``OutOfMemoryError``, a lost object) or that runs past its timeout (cancelled with force) is
submitted again, first in line, up to ``max_attempts``; then it is recorded as failed with the reason. An
item whose GPU type has no alive node for ``node_wait_s`` fails. Ctrl-C cancels the tasks in flight and
raises ``SweepInterrupted`` with the rows finished so far.

Why a module of its own: this is the sweep's bookkeeping (``_Sweep``: pending, in flight, attempts, rows)
and its one-line ``summary``, apart from the cluster's questions (sweep_ray_cluster.py), the task itself
(sweep_ray_task.py) and ``run_sweep_ray``'s set-up (sweep_ray.py).
"""

from __future__ import annotations

import sys
import time
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from . import __version__
from .sweep import SweepItem, item_row
from .sweep_ray_cluster import capacity
from .sweep_ray_task import _record, _slot

__all__ = ["RETRYABLE", "SweepInterrupted", "summary"]

# Ray's exceptions that mean the task's worker, node or object was lost, not that the tune failed
RETRYABLE = (
    "WorkerCrashedError",
    "NodeDiedError",
    "LocalRayletDiedError",
    "OutOfMemoryError",
    "ObjectLostError",
    "OwnerDiedError",
    "RaySystemError",
)
_CAP_REFRESH_S = 2.0  # how often the GPUs of the cluster are counted again (nodes come and go)


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C during a Ray sweep: the tasks in flight were cancelled; ``rows`` holds the finished ones."""

    def __init__(self, rows: list[dict[str, Any]], cancelled: int, not_started: int) -> None:
        super().__init__(f"sweep interrupted: {cancelled} task(s) cancelled, {not_started} never started")
        self.rows, self.cancelled, self.not_started = rows, cancelled, not_started


def _reason(exc: BaseException) -> str:
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {first[:300]}"


class _Sweep:
    """The caller's side: submit as many tasks as there are GPUs for them, collect, retry lost ones."""

    num_gpus = 1.0
    renv: dict[str, Any] | None = None
    max_attempts = 2
    timeout_s = 1800.0
    node_wait_s = 120.0  # pending items of a GPU type with no alive node for this long fail
    store: Any = None
    rdir: Path | None = None
    progress = False
    on_row: Callable[[int, dict[str, Any]], None] | None = None

    def __init__(self, ray: Any, remote: Any, work: Sequence[SweepItem], units: list, task: str) -> None:
        from ray import exceptions as rex

        self.ray, self.rex, self.remote, self.work, self.units, self.task = (
            ray,
            rex,
            remote,
            work,
            units,
            task,
        )
        lost = tuple(getattr(rex, n) for n in RETRYABLE if hasattr(rex, n))
        self.retryable = (rex.TaskCancelledError, *lost)
        self.pending = deque(range(len(units)))
        self.inflight: dict[Any, tuple[int, float]] = {}  # ref -> (unit, submitted at)
        self.timed_out: set[Any] = set()
        self.attempts = [0] * len(units)
        self.got: dict[int, dict[str, Any]] = {}
        self.caps: dict[str | None, int] = {}
        self.no_gpu_since: dict[str | None, float] = {}
        self.retried = 0
        self.versions: set[str] = set()
        self.t0 = time.perf_counter()

    def refresh(self) -> None:
        nodes, now = self.ray.nodes(), time.perf_counter()
        for t in {t for _, t in self.units}:
            self.caps[t] = capacity(nodes, t, self.num_gpus)
            if self.caps[t]:
                self.no_gpu_since.pop(t, None)
            else:
                self.no_gpu_since.setdefault(t, now)

    def submit(self, u: int) -> None:
        idx, gtype = self.units[u]
        opts: dict[str, Any] = {"num_gpus": self.num_gpus}
        if self.num_gpus == 0:
            opts["num_cpus"] = 1
        if gtype is not None:
            opts["accelerator_type"] = gtype
        if self.renv:
            opts["runtime_env"] = self.renv
        self.attempts[u] += 1
        ref = self.remote.options(**opts).remote(self.task, self.work[idx])
        self.inflight[ref] = (u, time.perf_counter())

    def finish(self, u: int, row: dict[str, Any]) -> None:
        self.got[u] = {**row, "attempts": self.attempts[u]}
        if self.on_row is not None:
            self.on_row(u, _full(self.work, self.units, u, self.got[u]))
        if self.progress:
            sys.stderr.write(
                f"\rautopad sweep (ray): {len(self.got)}/{len(self.units)} done, "
                f"{len(self.inflight)} running, {self.retried} retried "
                f"({time.perf_counter() - self.t0:.0f} s) {self.work[self.units[u][0]].label[:40]:40}"
            )
            sys.stderr.flush()

    def lost(self, u: int, why: str) -> None:
        """The task's worker or node was lost (or it timed out): again, or failed after the last attempt."""
        if self.attempts[u] < self.max_attempts:
            self.retried += 1
            self.pending.appendleft(u)  # first in line, to a fresh worker wherever a GPU is free
        else:
            self.finish(
                u, {"mode": "failed", "error": f"{why} (attempt {self.attempts[u]} of {self.max_attempts})"}
            )

    def collect(self, ref: Any) -> None:
        u, _ = self.inflight.pop(ref)
        item = self.work[self.units[u][0]]
        try:
            out = self.ray.get(ref)
        except self.retryable as exc:
            why = f"timed out after {self.timeout_s:g} s" if ref in self.timed_out else _reason(exc)
            self.timed_out.discard(ref)
            self.lost(u, why)
            return
        except self.rex.RayError as exc:  # e.g. no runtime environment: not a lost worker, no retry
            self.finish(u, {"mode": "failed", "error": _reason(exc)})
            return
        ids = out["gpu_ids"]
        base = {
            "device": int(ids[0]) if ids and ids[0].isdigit() else 0,
            "worker_pid": out["pid"],
            "node": f"{out['ip']} {out['node'][:8]}",
        }
        if "error" in out:
            self.finish(u, {**base, "mode": "failed", "error": out["error"]})
            return
        if out["version"] != __version__ and out["version"] not in self.versions:
            self.versions.add(out["version"])  # its results are keyed by its version: say so once
            sys.stderr.write(
                f"autopad sweep: node {base['node']} runs autopad {out['version']}, this process "
                f"{__version__}: its results are cached under {out['version']}'s keys\n"
            )
        try:
            _record(out, self.store, self.rdir, _slot(item))
        except (ValueError, KeyError, TypeError, OSError) as exc:  # the row stands; say why it is not stored
            sys.stderr.write(f"autopad sweep: the result of {item.label} was not stored: {exc}\n")
        self.finish(u, {**base, **out["row"], "error": ""})

    def step(self) -> None:
        busy: dict[str | None, int] = {}
        for u, _ in self.inflight.values():
            busy[self.units[u][1]] = busy.get(self.units[u][1], 0) + 1
        now = time.perf_counter()
        for u in list(self.pending):
            t = self.units[u][1]
            if now - self.no_gpu_since.get(t, now) > self.node_wait_s:  # its GPUs are gone and stay gone
                self.pending.remove(u)
                what = f"a GPU of type {t}" if t else "a GPU"
                self.finish(
                    u, {"mode": "failed", "error": f"no alive node with {what} for {self.node_wait_s:g} s"}
                )
            elif busy.get(t, 0) < max(self.caps.get(t, 0), 1):  # none free: one waits in Ray's queue
                self.pending.remove(u)
                self.submit(u)
                busy[t] = busy.get(t, 0) + 1
        if self.inflight:
            ready, _ = self.ray.wait(list(self.inflight), num_returns=1, timeout=0.2)
            for ref in ready:
                self.collect(ref)
        for ref, (_, since) in list(self.inflight.items()):
            if ref not in self.timed_out and time.perf_counter() - since > self.timeout_s:
                self.timed_out.add(ref)
                self.ray.cancel(ref, force=True)

    def run(self) -> list[dict[str, Any]]:
        progress, last = self.progress, 0.0
        try:
            while len(self.got) < len(self.units):
                if time.perf_counter() - last > _CAP_REFRESH_S:
                    self.refresh()
                    last = time.perf_counter()
                self.step()
        except KeyboardInterrupt:
            for ref in self.inflight:
                self.ray.cancel(ref, force=True)
            if progress:
                sys.stderr.write(f"\nautopad sweep: interrupted; cancelled {len(self.inflight)} task(s)\n")
            done = [_full(self.work, self.units, u, self.got[u]) for u in sorted(self.got)]
            raise SweepInterrupted(done, len(self.inflight), len(self.pending)) from None
        rows = [_full(self.work, self.units, u, self.got[u]) for u in range(len(self.units))]
        if progress:
            sys.stderr.write("\n" + summary(rows, time.perf_counter() - self.t0) + "\n")
        return rows


def _full(work: Sequence[SweepItem], units: Sequence[tuple[int, str | None]], u: int, got: dict) -> dict:
    """A CSV row of ``sweep.COLUMNS`` (and ``node``, ``gpu_type``) for unit ``u``, as the local sweep's."""
    idx, gtype = units[u]
    it = work[idx]
    row = {**item_row(it), "node": ""}
    if gtype is not None:
        row["gpu_type"] = gtype
    row.update({k: v for k, v in got.items() if v is not None})
    return row


def summary(rows: Sequence[dict[str, Any]], wall_s: float) -> str:
    """One line: tasks, wall time, nodes and GPU names used, how many were retried and how many failed."""
    nodes = {r.get("node") for r in rows if r.get("node")}
    gpus: dict[str, int] = {}
    for r in rows:
        if r.get("mode") != "failed":
            name = r.get("gpu") or "no GPU"
            gpus[name] = gpus.get(name, 0) + 1
    failed = sum(1 for r in rows if r.get("mode") == "failed")
    retried = sum(1 for r in rows if isinstance(r.get("attempts"), int) and r["attempts"] > 1)
    on = ", ".join(f"{n} x{k}" for n, k in sorted(gpus.items())) or "nothing"
    return (
        f"autopad sweep (ray): {len(rows)} task(s) in {wall_s:.1f} s on {len(nodes)} node(s) "
        f"({on}); {retried} retried, {failed} failed"
    )
