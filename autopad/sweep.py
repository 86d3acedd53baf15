"""Sweeps: tune kernels x shapes x dtypes, one worker process per GPU, to a CSV and a PNG.

Items are handed out from one queue, so a GPU that finishes early takes the next item. Each worker is a
process of its own pinned to one device; if it dies (a lost CUDA context, a crash), the parent starts a new
one for that GPU and retries the item it was running once; a second failure is recorded as failed with the
reason, and the sweep goes on. One GPU is the default. Without a GPU the sweep still runs, ranking each
item by the model alone, and says so in every row.
"""

from __future__ import annotations

import csv
import importlib
import io
import multiprocessing as mp
import pickle
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing import connection as mp_connection
from pathlib import Path
from typing import Any

__all__ = ["SweepItem", "items", "run_sweep", "tune_item", "write_csv", "plot"]

COLUMNS = [
    "kernel",
    "backend",
    "shape",
    "dtype",
    "dist",
    "mode",
    "best",
    "best_ms",
    "unpadded_ms",
    "textbook_ms",
    "speedup_vs_unpadded",
    "predicted_us",
    "measured",
    "failed",
    "device",
    "gpu",
    "worker_pid",
    "attempts",
    "error",
]


@dataclass(frozen=True)
class SweepItem:
    kernel: str
    shape: tuple[int, ...]
    dtype: str
    backend: str = "auto"
    dist: str | None = None

    @property
    def label(self) -> str:
        return f"{self.kernel} {'x'.join(map(str, self.shape))} {self.dtype}" + (
            f" {self.dist}" if self.dist else ""
        )


def items(
    kernels: Sequence[str],
    shapes: Sequence[tuple[int, ...]],
    dtypes: Sequence[str],
    backend: str = "auto",
    dist: str | None = None,
) -> list[SweepItem]:
    """The cross product, in a stable order."""
    return [SweepItem(k, tuple(s), d, backend, dist) for k in kernels for s in shapes for d in dtypes]


def tune_item(item: SweepItem, device: int, top_k: int = 6) -> dict[str, Any]:
    """Tune one item on one device and summarise it as a CSV row (the default worker task)."""
    from .tune import tune

    res = tune(
        item.kernel,
        item.shape,
        item.dtype,
        backend=item.backend,
        device=device,
        dist=item.dist,
        top_k=top_k,
        progress=False,
    )
    by_role = {r: c for c in res.candidates for r in c.roles}
    unp = by_role.get("unpadded")
    txt = by_role.get("textbook")
    best_ms = res.best.measured
    unp_ms = unp.measured_ms if unp else None
    return {
        "backend": res.backend,
        "mode": res.mode,
        "best": ",".join(f"{k}={v}" for k, v in sorted(res.best.constants.items())),
        "best_ms": best_ms,
        "unpadded_ms": unp_ms,
        "textbook_ms": txt.measured_ms if txt else None,
        "speedup_vs_unpadded": (unp_ms / best_ms) if best_ms and unp_ms else None,
        "predicted_us": res.best.predicted * 1e6,
        "measured": sum(1 for c in res.candidates if c.measurement is not None),
        "failed": sum(1 for c in res.candidates if c.measurement is not None and not c.measurement.correct),
        "gpu": res.device.get("name", ""),
    }


def _resolve(task: str) -> Callable[[SweepItem, int], dict[str, Any]]:
    mod, _, name = task.rpartition(":")
    return getattr(importlib.import_module(mod), name)


def _worker(device: int, task: str, todo: Any, done: Any) -> None:
    """A GPU's worker: items arrive on ``todo`` (its own queue), rows leave on ``done`` (its own pipe).

    ``done.send`` writes synchronously from this thread and the pipe is this worker's alone: a worker
    that dies (``os._exit`` in a task, a lost CUDA context) cannot leave a lock held that another
    worker's results would wait on, as a queue shared by all workers could (its writer lock is taken by a
    feeder thread that may not have let go when the process ends).
    """
    run = _resolve(task)
    while True:
        idx, item = todo.get()
        if idx < 0:
            return
        try:
            row = run(item, device)
            done.send(("row", idx, device, row))
        except Exception as exc:  # a Python-level failure is this item's, not the worker's
            done.send(("error", idx, device, f"{type(exc).__name__}: {exc}"))


def run_sweep(
    work: Sequence[SweepItem],
    devices: Sequence[int] = (0,),
    task: str = "autopad.sweep:tune_item",
    progress: bool = True,
    item_timeout_s: float = 1800.0,
) -> list[dict[str, Any]]:
    """Run every item once across ``devices`` (one worker process each); rows in item order.

    ``task`` ("module:function") is what a worker calls per item with (item, device); tests pass fakes.
    The parent hands each worker one item at a time, so it always knows what a worker was running: a
    worker that dies mid-item is replaced and the item retried once, then recorded as failed.
    """
    if not devices:
        raise ValueError("devices: need at least one device index")
    ctx = mp.get_context("spawn")
    pending = list(range(len(work)))
    workers: dict[int, tuple[Any, Any, Any]] = {}  # device -> (process, its task queue, its result pipe)
    inflight: dict[int, tuple[int, float]] = {}  # device -> (item, started)
    attempts = [0] * len(work)
    rows: dict[int, dict[str, Any]] = {}
    t0 = time.perf_counter()

    def start(dev: int) -> None:
        q = ctx.Queue()
        recv, send = ctx.Pipe(duplex=False)
        p = ctx.Process(target=_worker, args=(dev, task, q, send))  # not daemonic: tune() starts workers
        p.start()
        send.close()  # the child holds the writing end; at its exit the pipe reads as closed
        workers[dev] = (p, q, recv)

    def handle(msg: tuple) -> None:
        kind, idx, dev, payload = msg
        if inflight.get(dev, (None,))[0] == idx:
            inflight.pop(dev)
        base = {"device": dev, "worker_pid": workers[dev][0].pid, "attempts": attempts[idx]}
        if kind == "row":
            rows[idx] = {**base, **payload, "error": ""}
        else:
            rows[idx] = {**base, "mode": "failed", "error": payload}
        if progress:
            sys.stderr.write(
                f"\rautopad sweep: {len(rows)}/{len(work)} done ({time.perf_counter() - t0:.0f} s) "
                f"{work[idx].label:40}"
            )
            sys.stderr.flush()

    def receive(conn: Any) -> bool:
        """Handle one message from a worker's pipe; False when the pipe is closed or the message cut."""
        try:
            msg = conn.recv()
        except (EOFError, OSError, pickle.UnpicklingError):
            return False
        handle(msg)
        return True

    def drain(conn: Any) -> None:
        while conn.poll() and receive(conn):
            pass

    for d in devices:
        start(d)
    try:
        while len(rows) < len(work):
            for dev, (p, q, _) in workers.items():
                if dev not in inflight and pending and p.is_alive():
                    idx = pending.pop(0)
                    attempts[idx] += 1
                    inflight[dev] = (idx, time.perf_counter())
                    q.put((idx, work[idx]))
            for conn in mp_connection.wait([w[2] for w in workers.values()], timeout=0.2):
                receive(conn)
            for dev, (p, _, conn) in list(workers.items()):
                stuck = dev in inflight and time.perf_counter() - inflight[dev][1] > item_timeout_s
                if p.is_alive() and not stuck:
                    continue
                if stuck:
                    p.kill()
                p.join(timeout=5)
                drain(conn)  # whatever it finished before dying counts
                conn.close()
                if dev in inflight:  # it died holding an item: retry once, then record the failure
                    idx, _ = inflight.pop(dev)
                    why = "timed out" if stuck else f"worker died (exit code {p.exitcode})"
                    if attempts[idx] < 2:
                        pending.insert(0, idx)
                    else:
                        rows[idx] = {
                            "device": dev,
                            "worker_pid": p.pid,
                            "attempts": attempts[idx],
                            "mode": "failed",
                            "error": f"{why} on both attempts",
                        }
                if len(rows) < len(work):
                    start(dev)
                else:
                    workers.pop(dev)
    finally:
        for p, q, _ in workers.values():
            if p.is_alive():
                q.put((-1, None))
        for p, _, conn in workers.values():
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
            conn.close()
        if progress:
            sys.stderr.write("\n")
    out = []
    for i, it in enumerate(work):
        row = {c: "" for c in COLUMNS}
        row.update(
            {
                "kernel": it.kernel,
                "backend": it.backend,
                "shape": "x".join(map(str, it.shape)),
                "dtype": it.dtype,
                "dist": it.dist or "",
            }
        )
        row.update({k: v for k, v in rows[i].items() if v is not None})
        out.append(row)
    return out


def write_csv(rows: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """Rows to CSV (atomically: a temp file, then a rename)."""
    from .cache import write_atomic

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, extrasaction="ignore")
    w.writeheader()
    for r in rows:
        w.writerow(r)
    return write_atomic(path, buf.getvalue())


def plot(rows: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """Bar chart: each item's tuned time against the unpadded layout's (speed-up), or predicted times."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{r['kernel']}\n{r['shape']}\n{r['dtype']}" for r in rows]
    speed = [
        float(r["speedup_vs_unpadded"]) if r.get("speedup_vs_unpadded") not in ("", None) else 0.0
        for r in rows
    ]
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(rows)), 4))
    ax.bar(range(len(rows)), speed, color="tab:blue")
    ax.axhline(1.0, color="gray", lw=0.8)
    ax.set_xticks(range(len(rows)), labels, fontsize=7)
    ax.set_ylabel("speed-up of the tuned layout over unpadded")
    measured = any(s > 0 for s in speed)
    ax.set_title("autopad sweep" + ("" if measured else " (model only: nothing measured)"))
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
