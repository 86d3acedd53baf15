"""Sweeps on a Ray cluster: each item is a Ray task asking for one GPU; results land in the caller's cache.

Why: ``sweep.run_sweep`` spreads a sweep over the GPUs of one host with autopad's own worker processes (two
H200s: 1.84x one, README). Tuning every shape of a model for several GPU types outgrows one host, and Ray
already schedules tasks over many hosts, so a sweep hands each item to Ray rather than growing the pool.

How: ``run_sweep_ray`` joins a running cluster (``address``) or starts a local one, and runs each item as a
task ``ray.remote(num_gpus=1, max_calls=1, max_retries=0)``: Ray sets ``CUDA_VISIBLE_DEVICES`` to the GPU
it grants, so the task tunes device 0 of its own view, and ``max_calls=1`` gives every attempt a fresh
worker process (no CUDA context or driver state carried over from an item that faulted). The task calls
the same ``task`` function as the local pool (``autopad.sweep:tune_item``), so rows are those of the local
sweep, and reads back what ``tune`` stored in the node's cache under the node's device key (GPU name and
compute capability): key, search parameters and result. The caller writes that into its own cache as it
arrives (``Cache.put_result``), so a cache of one machine holds every GPU type's results side by side,
and ``results_dir`` gets one JSON per item and GPU type, which ``autopad export a.json b.json -o k.h``
merges into one header. ``gpu_types`` runs each item once per Ray accelerator type (``"H100"``, or
``"all"`` of those the cluster shows); without it each item runs once, on whichever GPU is free.

Faults: the caller keeps at most as many tasks in flight as there are GPUs for them, so it knows which
item each task holds. A task whose worker or node dies (``WorkerCrashedError``, ``NodeDiedError``, the
memory monitor's ``OutOfMemoryError``, a lost object) or that runs past ``item_timeout_s`` (cancelled
with force) is submitted again, to a fresh worker and wherever Ray finds a GPU, up to ``max_attempts``
in all; then it is recorded as failed with the reason. An exception raised by the tune itself is the
item's own failure and is not retried (as in the local pool). Finished results are in the caller's cache
the moment they arrive: a caller killed mid-sweep loses nothing finished. Ctrl-C cancels the tasks in
flight (``ray.cancel(force=True)``), submits nothing more and raises ``SweepInterrupted`` with the rows
finished so far. Without a GPU in the cluster the tasks ask for none and every row says model-only.

``ray`` is imported only here, and only when a Ray sweep runs (``pip install 'autopad[ray]'``).
"""

from __future__ import annotations

import os
import sys
import time
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from . import __version__
from .sweep import SweepItem, item_row

__all__ = [
    "SweepInterrupted",
    "run_sweep_ray",
    "summary",
    "capacity",
    "gpu_types_of",
    "gpu_views",
    "RETRYABLE",
]

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
_TYPE_PREFIX = "accelerator_type:"


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C during a Ray sweep: the tasks in flight were cancelled; ``rows`` holds the finished ones."""

    def __init__(self, rows: list[dict[str, Any]], cancelled: int, not_started: int) -> None:
        super().__init__(f"sweep interrupted: {cancelled} task(s) cancelled, {not_started} never started")
        self.rows, self.cancelled, self.not_started = rows, cancelled, not_started


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ImportError(
            "a Ray sweep needs ray: pip install 'autopad[ray]' (or leave out --ray for the local pool)"
        ) from None
    return ray


def _connect(ray: Any, address: str | None, init_kwargs: dict[str, Any] | None) -> bool:
    """Join ``address`` (or ``$RAY_ADDRESS``), else start a cluster on this host; True if we started it."""
    if ray.is_initialized():
        return False
    kw = {"log_to_driver": False, **(init_kwargs or {})}
    address = address or os.environ.get("RAY_ADDRESS") or "local"
    if address == "local":
        from .device import device_count

        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # a library's local cluster reports nothing
        kw.setdefault("include_dashboard", False)
        kw.setdefault("num_gpus", device_count())  # as the CUDA driver shows them (0 with AUTOPAD_NO_BENCH)
    ray.init(address=address, **kw)
    return True


def gpu_types_of(nodes: Sequence[dict[str, Any]]) -> list[str]:
    """The accelerator types (``accelerator_type:H100`` resources) of the alive nodes in ``ray.nodes()``."""
    found = {
        r[len(_TYPE_PREFIX) :]
        for n in nodes
        if n.get("Alive")
        for r in n.get("Resources", {})
        if r.startswith(_TYPE_PREFIX)
    }
    return sorted(found)


def capacity(nodes: Sequence[dict[str, Any]], gpu_type: str | None, num_gpus: float) -> int:
    """How many tasks can run at once on the alive nodes (of ``gpu_type``): GPUs per task, else CPUs."""
    total = 0
    for n in nodes:
        res = n.get("Resources", {})
        if not n.get("Alive") or (gpu_type is not None and _TYPE_PREFIX + gpu_type not in res):
            continue
        total += int(res.get("GPU", 0) // num_gpus) if num_gpus > 0 else int(res.get("CPU", 0))
    return total


def _run_task(task: str, item: SweepItem) -> dict[str, Any]:
    """The body of one Ray task (in a Ray worker): the sweep task's row and what tune stored on this node."""
    import ray

    from .worker import resolve

    gpu_ids = list(ray.get_gpu_ids())
    # Ray narrows CUDA_VISIBLE_DEVICES to the granted GPU, which is then device 0 here (unless told not to)
    narrowed = bool(os.environ.get("CUDA_VISIBLE_DEVICES")) or not gpu_ids
    out: dict[str, Any] = {
        "pid": os.getpid(),
        "node": ray.get_runtime_context().get_node_id(),
        "ip": ray.util.get_node_ip_address(),
        "gpu_ids": [str(g) for g in gpu_ids],
        "version": __version__,
    }
    try:
        device = 0 if narrowed else int(gpu_ids[0])
        row = resolve(task)(item, device)
    except Exception as exc:  # the tune's own failure: the item's, recorded, not retried
        return {**out, "error": f"{type(exc).__name__}: {exc}"}
    return {**out, "row": row, "stored": _stored(item, row, device)}


def _view(hold_s: float) -> dict[str, Any]:
    """What one GPU task sees (held ``hold_s`` so that tasks started together overlap)."""
    import ray

    from .device import device_info

    time.sleep(hold_s)
    return {
        "node": ray.get_runtime_context().get_node_id()[:8],
        "gpu_ids": [str(g) for g in ray.get_gpu_ids()],
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES", ""),
        "device": device_info(0),
        "pid": os.getpid(),
    }


def gpu_views(hold_s: float = 2.0, num_gpus: float = 1.0) -> list[dict[str, Any]]:
    """One task per GPU of the connected cluster, all at once: what each sees (GPU ids, CUDA_VISIBLE_DEVICES,
    the driver's name and compute capability). A check before a sweep that each task gets a GPU of its own."""
    ray = _ray()
    n = capacity(ray.nodes(), None, num_gpus)
    if n == 0:  # no GPU in the cluster: one task, asking for none
        n, num_gpus = 1, 0.0
    probe = ray.remote(max_calls=1, max_retries=0)(_view)
    return ray.get([probe.options(num_gpus=num_gpus).remote(hold_s) for _ in range(n)])


def _stored(item: SweepItem, row: dict[str, Any], device: int) -> dict[str, Any] | None:
    """What ``tune`` stored in this node's cache for ``item`` (key, params, result), or None."""
    from .cache import Cache
    from .device import device_info
    from .request import Request
    from .tune import cache_key

    try:
        req = Request.make(
            item.kernel, item.shape, item.dtype, row.get("backend") or item.backend, dist=item.dist
        )
    except ValueError:  # not a kernel autopad knows (a fake task's item): nothing was stored
        return None
    key = cache_key(req.spec, req.shape, req.dtype, req.dist, device_info(device))
    stored = Cache().load(key).get("result")
    if not stored:
        return None
    return {"key": key.to_dict(), "params": stored["params"], "result": stored["result"]}


def _record(got: dict[str, Any], cache: Any, results_dir: Path | None, slot: str) -> None:
    """Write a finished task's result into the caller's cache (under the node's device key) and JSON."""
    from .cache import CacheKey
    from .results import TuneResult

    st = got.get("stored")
    if not st:
        return
    key, res = CacheKey.from_dict(st["key"]), TuneResult.from_dict(st["result"])
    if cache is not None:
        cache.put_result(key, res, st["params"])
    if results_dir is not None:
        import re

        gpu = re.sub(r"[^A-Za-z0-9_.-]+", "_", key.gpu) or "no-gpu"
        res.export(results_dir / slot / f"{gpu}.json", overwrite=True)


def _slot(item: SweepItem) -> str:
    """The folder of an item's per-device result files: kernel, shape, dtype, backend, dist."""
    parts = [item.kernel, "x".join(map(str, item.shape)), item.dtype, item.backend] + (
        [item.dist] if item.dist else []
    )
    return "_".join(parts)


def _reason(exc: BaseException) -> str:
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {first[:300]}"


def run_sweep_ray(
    work: Sequence[SweepItem],
    address: str | None = None,
    task: str = "autopad.sweep:tune_item",
    gpu_types: Sequence[str] | str | None = None,
    num_gpus: float = 1.0,
    max_attempts: int = 2,
    item_timeout_s: float = 1800.0,
    env: dict[str, str] | None = None,
    runtime_env: dict[str, Any] | None = None,
    cache: bool = True,
    results_dir: str | Path | None = None,
    progress: bool = True,
    on_row: Callable[[int, dict[str, Any]], None] | None = None,
    init_kwargs: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Run every item as a Ray task (once, or once per GPU type in ``gpu_types``); rows in item order.

    ``address``: a running cluster ("auto", "host:6379", "ray://host:10001"); None joins ``$RAY_ADDRESS``
    or starts a cluster on this host ("local" always starts one), shut down at the end. ``env`` is set in
    every task (``AUTOPAD_NO_BENCH`` is passed on from this process when set); ``runtime_env`` goes to Ray
    as is (``{"pip": [...]}`` to install autopad on the nodes). ``on_row(i, row)`` sees each row as it
    arrives. Row columns are ``sweep.COLUMNS``, plus ``node`` and, with ``gpu_types``, ``gpu_type``.
    """
    if max_attempts < 1:
        raise ValueError(f"max_attempts: need at least 1, got {max_attempts}")
    ray = _ray()
    started = _connect(ray, address, init_kwargs)
    try:
        nodes = ray.nodes()
        types: list[str | None] = [None]
        if gpu_types is not None:
            have = gpu_types_of(nodes)
            asked = [gpu_types] if isinstance(gpu_types, str) else list(gpu_types)
            types = list(have) if asked == ["all"] else asked
            missing = [t for t in types if t not in have]
            if missing or not types:
                raise ValueError(
                    f"gpu_types: no alive node has {', '.join(missing) or 'an accelerator type'}; "
                    f"the cluster shows {', '.join(have) or 'none'}"
                )
        if num_gpus > 0 and capacity(nodes, None, num_gpus) == 0 and gpu_types is None:
            num_gpus = 0.0  # a cluster without GPUs: tasks on CPUs, each row model-only (tune says so)
            sys.stderr.write("autopad sweep: the Ray cluster shows no GPU: ranking by the model alone\n")
        envv = dict(env or {})
        if "AUTOPAD_NO_BENCH" in os.environ:
            envv.setdefault("AUTOPAD_NO_BENCH", os.environ["AUTOPAD_NO_BENCH"])
        renv = dict(runtime_env or {})
        if envv:
            renv["env_vars"] = {**renv.get("env_vars", {}), **envv}
        remote = ray.remote(max_calls=1, max_retries=0)(_run_task)
        units = [(i, t) for i in range(len(work)) for t in types]
        store = None
        if cache:
            from .cache import Cache

            store = Cache()
        rdir = Path(results_dir) if results_dir is not None else None
        run = _Sweep(ray, remote, work, units, task)
        run.num_gpus, run.renv, run.max_attempts, run.timeout_s = num_gpus, renv, max_attempts, item_timeout_s
        run.store, run.rdir, run.progress, run.on_row = store, rdir, progress, on_row
        return run.run()
    finally:
        if started:
            ray.shutdown()


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
