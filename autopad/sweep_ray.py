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

Where each part lives (sweep_ray.py was split, one concern a module; every name it defined is still
importable from here): sweep_ray_cluster.py (joining the cluster, ``capacity``, ``gpu_types_of``,
``gpu_views``), sweep_ray_task.py (the task's body on the node and the filing of its result in the caller's
cache), sweep_ray_loop.py (``_Sweep``: submit, collect, retry; ``SweepInterrupted``, ``summary``); here,
``run_sweep_ray``, which checks its arguments, sets up the tasks' environment and runs the loop.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .sweep import SweepItem

# besides what this module uses, the names sweep_ray.py defined before the split, importable from here as
# before
from .sweep_ray_cluster import _TYPE_PREFIX, _connect, _ray, _view, capacity, gpu_types_of, gpu_views  # noqa: F401
from .sweep_ray_loop import _CAP_REFRESH_S, RETRYABLE, SweepInterrupted, _full, _reason, _Sweep, summary  # noqa: F401
from .sweep_ray_task import _record, _run_task, _slot, _stored  # noqa: F401

__all__ = [
    "SweepInterrupted",
    "run_sweep_ray",
    "summary",
    "capacity",
    "gpu_types_of",
    "gpu_views",
    "RETRYABLE",
]


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
