"""The Ray cluster as a Ray sweep sees it: joining or starting one, the GPUs (and accelerator types) of its
alive nodes, and a check that each GPU task gets a GPU of its own.

Why a module of its own: these are the questions a sweep asks of the cluster before and while it runs
(``sweep_ray_loop._Sweep`` recounts the GPUs every few seconds, as nodes come and go), apart from the
sweep's own bookkeeping; ``capacity`` and ``gpu_types_of`` read ``ray.nodes()`` output only, so they are
plain functions of a list. ``ray`` is imported only when a Ray sweep runs (``_ray``, inside the tasks).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

__all__ = ["capacity", "gpu_types_of", "gpu_views"]

_TYPE_PREFIX = "accelerator_type:"


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
