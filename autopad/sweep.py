"""Sweeps: tune kernels x shapes x dtypes, one worker process per GPU, to a CSV and a PNG.

Items are handed out from one queue, so a GPU that finishes early takes the next item. Each worker is a
process of its own (``python -m autopad.worker --sweep``: the caller's main module is never re-imported)
pinned to one device; if it dies (a lost CUDA context, a crash), the parent starts a new
one for that GPU and retries the item it was running once; a second failure is recorded as failed with the
reason, and the sweep goes on. One GPU is the default. Without a GPU the sweep still runs, ranking each
item by the model alone, and says so in every row.
"""

from __future__ import annotations

import csv
import io
import pickle
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing import connection as mp_connection
from pathlib import Path
from typing import Any

__all__ = ["SweepItem", "items", "item_row", "run_sweep", "tune_item", "write_csv", "plot"]

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


def item_row(it: SweepItem) -> dict[str, Any]:
    """A CSV row of ``COLUMNS`` holding the item's own columns (kernel, backend, shape, dtype, dist)."""
    row: dict[str, Any] = {c: "" for c in COLUMNS}
    shape = "x".join(map(str, it.shape))
    row.update(kernel=it.kernel, backend=it.backend, shape=shape, dtype=it.dtype, dist=it.dist or "")
    return row


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
    from .worker import resolve

    return resolve(task)


def _serve(hello: dict[str, Any], rx: Any, tx: Any) -> None:
    """A GPU's worker (``python -m autopad.worker --sweep``): items arrive on ``rx``, rows leave on ``tx``.

    Both are this worker's own pipes and every send is synchronous from this thread: a worker that dies
    (``os._exit`` in a task, a lost CUDA context) cannot leave a lock held that another worker's results
    would wait on, as a queue shared by all workers could. The end of ``rx`` (the parent closed it or
    died) ends the worker.
    """
    device = hello["device"]
    try:
        run = _resolve(hello["task"])
    except Exception as exc:  # every item would fail the same way: say so for each, then stop
        run, why = None, f"sweep task {hello['task']!r} cannot be imported: {type(exc).__name__}: {exc}"
    while True:
        try:
            idx, item = rx.recv()
        except EOFError:
            return
        if idx < 0:
            return
        if run is None:
            tx.send(("error", idx, device, why))
            continue
        try:
            row = run(item, device)
            tx.send(("row", idx, device, row))
        except Exception as exc:  # a Python-level failure is this item's, not the worker's
            tx.send(("error", idx, device, f"{type(exc).__name__}: {exc}"))


def run_sweep(
    work: Sequence[SweepItem],
    devices: Sequence[int] = (0,),
    task: str = "autopad.sweep:tune_item",
    progress: bool = True,
    item_timeout_s: float = 1800.0,
) -> list[dict[str, Any]]:
    """Run every item once across ``devices`` (one worker process each); rows in item order.

    ``task`` ("module:function") is what a worker calls per item with (item, device); tests pass fakes.
    Workers are ``python -m autopad.worker --sweep`` processes (``worker.WorkerProcess``): the caller's
    main module is never imported in them. The parent hands each worker one item at a time, so it always
    knows what a worker was running: a worker that dies mid-item (noticed from its exit, within 0.2 s) is
    replaced and the item retried once, then recorded as failed with the worker's last output.
    """
    from .worker import WorkerProcess

    if not devices:
        raise ValueError("devices: need at least one device index")
    pending = list(range(len(work)))
    workers: dict[int, WorkerProcess] = {}  # device -> its worker
    inflight: dict[int, tuple[int, float]] = {}  # device -> (item, started)
    attempts = [0] * len(work)
    rows: dict[int, dict[str, Any]] = {}
    t0 = time.perf_counter()

    def start(dev: int) -> None:
        workers[dev] = WorkerProcess("sweep", {"task": task, "device": dev})

    def handle(msg: tuple) -> None:
        kind, idx, dev, payload = msg
        if inflight.get(dev, (None,))[0] == idx:
            inflight.pop(dev)
        base = {"device": dev, "worker_pid": workers[dev].pid, "attempts": attempts[idx]}
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

    def receive(w: WorkerProcess) -> bool:
        """Handle one message from a worker's pipe; False when the pipe is closed or the message cut."""
        try:
            msg = w.rx.recv()
        except (EOFError, OSError, pickle.UnpicklingError):
            try:
                w.proc.wait(timeout=1.0)  # it closed its pipe: it is exiting
            except subprocess.TimeoutExpired:
                w.kill()
            return False
        handle(msg)
        return True

    def drain(w: WorkerProcess) -> None:
        while not w.rx.closed and w.rx.poll() and receive(w):
            pass

    for d in devices:
        start(d)
    try:
        while len(rows) < len(work):
            for dev, w in workers.items():
                if dev not in inflight and pending and w.alive():
                    idx = pending.pop(0)
                    attempts[idx] += 1
                    inflight[dev] = (idx, time.perf_counter())
                    w.send((idx, work[idx]))
            by_conn = {id(w.rx): w for w in workers.values()}
            for conn in mp_connection.wait([w.rx for w in workers.values()], timeout=0.2):
                receive(by_conn[id(conn)])
            for dev, w in list(workers.items()):
                stuck = dev in inflight and time.perf_counter() - inflight[dev][1] > item_timeout_s
                if w.alive() and not stuck:
                    continue
                if stuck:
                    w.kill()
                drain(w)  # whatever it finished before dying counts
                code, tail = w.exitcode, w.tail()
                w.close()
                if dev in inflight:  # it died holding an item: retry once, then record the failure
                    idx, _ = inflight.pop(dev)
                    why = "timed out" if stuck else f"worker died (exit code {code})"
                    if attempts[idx] < 2:
                        pending.insert(0, idx)
                    else:
                        rows[idx] = {
                            "device": dev,
                            "worker_pid": w.pid,
                            "attempts": attempts[idx],
                            "mode": "failed",
                            "error": f"{why} on both attempts"
                            + (f"; its last output: {tail[-300:]}" if tail else ""),
                        }
                if len(rows) < len(work):
                    start(dev)
                else:
                    workers.pop(dev)
    finally:
        for w in workers.values():
            if w.alive():
                w.send((-1, None))
        for w in workers.values():
            w.close(grace_s=5.0)
        if progress:
            sys.stderr.write("\n")
    out = []
    for i, it in enumerate(work):
        row = item_row(it)
        row.update({k: v for k, v in rows[i].items() if v is not None})
        out.append(row)
    return out


def write_csv(rows: Sequence[dict[str, Any]], path: str | Path, extra: Sequence[str] = ()) -> Path:
    """Rows to CSV (atomically: a temp file, then a rename); ``extra`` columns after ``COLUMNS``."""
    from .cache import write_atomic

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=[*COLUMNS, *extra], extrasaction="ignore")
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
    # rendered in memory and written as the CSV is (atomically, replacing a symlink at the destination, never
    # writing through it): savefig(path) wrote wherever a planted OUT/sweep.png symlink pointed
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    from .files import write_atomic

    return write_atomic(Path(path), buf.getvalue())
