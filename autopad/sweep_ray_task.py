"""One item of a Ray sweep as a Ray task: what runs on the node (the sweep task, then what ``tune`` stored
in the node's cache), and how the caller files that result in its own cache and results folder.

Why a module of its own: ``_run_task`` is the function Ray ships to the nodes (by reference: the node
imports this module), so it holds only what a task needs; ``_record`` and ``_slot`` are its counterpart on
the caller's side, the one place a node's result becomes the caller's (``Cache.put_result`` under the
node's device key, and one JSON per item and GPU type).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from . import __version__
from .sweep import SweepItem

__all__: list[str] = []


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
