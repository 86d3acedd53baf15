"""Fake sweep tasks for tests: no GPU, no tuning; one of them kills its worker process."""

from __future__ import annotations

import os
from pathlib import Path


def ok(item, device):
    return {
        "mode": "fake",
        "best": f"{item.kernel}-{device}",
        "best_ms": 1.0,
        "unpadded_ms": 2.0,
        "speedup_vs_unpadded": 2.0,
        "gpu": f"fake{device}",
    }


def crash_once(item, device):
    """Kills the whole worker the first time it meets a "crash..." dtype (a marker file remembers)."""
    marker = Path(os.environ["AUTOPAD_TEST_MARKER"]) / f"{item.kernel}-{item.dtype}"
    if item.dtype.startswith("crash") and not marker.exists():
        marker.write_text("seen")
        os._exit(3)
    return ok(item, device)


def crash_always(item, device):
    if item.dtype == "crash":
        os._exit(4)
    return ok(item, device)


def raises(item, device):
    if item.dtype == "bad":
        raise RuntimeError("user kernel raised")
    return ok(item, device)


def nested(item, device):
    """Starts a process of its own, as tune() does for its benchmark worker."""
    import multiprocessing as mp
    import time

    p = mp.get_context("spawn").Process(target=time.sleep, args=(0,))
    p.start()
    p.join()
    return {**ok(item, device), "mode": f"nested exit {p.exitcode}"}
