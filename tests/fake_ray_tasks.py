"""Sweep tasks for the Ray sweep tests (run inside Ray workers) and a driver for the subprocess tests.

Items whose first dimension is ``ODD_ROWS`` misbehave (die, raise, hang). The others are real model-only
tunes (``AUTOPAD_NO_BENCH=1``) where the caller's cache must receive real results, else a fixed row. Markers
go under ``$AUTOPAD_TEST_MARKER``, so a test sees what ran where and how often.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

ODD_ROWS = 12288  # histogram rows that mark the item a task misbehaves on


def _marker(name: str) -> Path:
    return Path(os.environ["AUTOPAD_TEST_MARKER"]) / name


def _tune(item, device):
    from autopad.sweep import tune_item

    return tune_item(item, device)


def _odd(item) -> bool:
    return item.shape[0] == ODD_ROWS


def ok(item, device):
    """No tune: a fixed row that says which device it was given."""
    return {"mode": "fake", "best": f"{item.kernel}-{device}", "best_ms": 1.0, "gpu": f"fake{device}"}


def crash_once(item, device):
    """Kills its Ray worker the first time it meets the odd item (a marker file remembers), else tunes."""
    m = _marker(f"crashed-{item.dtype}-{item.shape[0]}")
    if _odd(item) and not m.exists():
        m.write_text(str(os.getpid()))
        os._exit(3)
    return _tune(item, device)


def dies_or_raises(item, device):
    """The odd item kills every worker that runs it; the one after it raises (the tune's own failure)."""
    if _odd(item):
        os._exit(4)
    if item.shape[0] == ODD_ROWS + 1:
        raise RuntimeError("user kernel raised")
    return ok(item, device)


def slow(item, device):
    """Says it started, then takes two minutes (a test interrupts it first)."""
    label = f"{item.shape[0]}-{item.dtype}"
    _marker(f"started-{label}").write_text(str(os.getpid()))
    time.sleep(120)
    _marker(f"finished-{label}").write_text("")
    return ok(item, device)


def hang_once(item, device):
    """The odd item's first attempt writes its node's id and hangs (a test kills that node)."""
    import ray

    m = _marker("hung-on")
    if _odd(item) and not m.exists():
        m.write_text(ray.get_runtime_context().get_node_id())
        time.sleep(300)
    return ok(item, device)


def tune_or_hang(item, device):
    """The odd item hangs (its caller is killed meanwhile); the others tune."""
    if _odd(item):
        time.sleep(600)
    return _tune(item, device)


def drive(address: str, task: str, rows: list[int], env: dict[str, str]) -> None:
    """A caller in its own process (for SIGINT and SIGKILL): histogram items with these first dims.

    Prints one JSON line: the interrupted sweep's counts, then whether the GPUs were free again.
    Ctrl-C raises KeyboardInterrupt here whatever this process inherited: a pytest started in the
    background of a non-interactive shell (``pytest &``, as some CI runners do) ignores SIGINT, so would
    this driver, and the test's SIGINT would do nothing while the fake tasks sleep on.
    """
    import signal

    import ray

    signal.signal(signal.SIGINT, signal.default_int_handler)

    from autopad.sweep import items
    from autopad.sweep_ray import SweepInterrupted, run_sweep_ray

    ray.init(address=address, log_to_driver=False)
    total = ray.cluster_resources().get("GPU", 0)
    work = items(["histogram"], [(r, 256) for r in rows], ["int32"], "triton", "uniform")
    try:
        out = run_sweep_ray(work, task=task, env=env, progress=False)
        print(json.dumps({"finished": len(out)}), flush=True)
        return
    except SweepInterrupted as exc:
        doc = {"interrupted": True, "cancelled": exc.cancelled, "not_started": exc.not_started}
        doc["done"] = len(exc.rows)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 30 and ray.available_resources().get("GPU", 0) < total:
        time.sleep(0.1)
    doc["gpus_free_after_s"] = round(time.perf_counter() - t0, 2)
    doc["gpus_free"] = ray.available_resources().get("GPU", 0) >= total
    print(json.dumps(doc), flush=True)


if __name__ == "__main__":
    drive(sys.argv[1], sys.argv[2], [int(x) for x in sys.argv[3].split(",")], json.loads(sys.argv[4]))
