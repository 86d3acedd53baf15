"""autopad/sweep_ray_loop.py without a cluster: the summary line, the rows as the local sweep's, and what a
lost task becomes (again, first in line; or failed after the last attempt)."""

from __future__ import annotations

import pytest

from autopad.sweep import COLUMNS, items
from autopad.sweep_ray_loop import SweepInterrupted, _full, _Sweep, summary


def test_summary_counts_nodes_gpus_retries_and_failures():
    rows = [
        {"node": "10.0.0.1 aa", "gpu": "NVIDIA H200", "attempts": 1, "mode": "measured"},
        {"node": "10.0.0.2 bb", "gpu": "NVIDIA H100", "attempts": 2, "mode": "measured"},
        {"node": "", "gpu": "", "attempts": 2, "mode": "failed"},
    ]
    s = summary(rows, 12.34)
    assert "3 task(s) in 12.3 s on 2 node(s)" in s and "NVIDIA H100 x1, NVIDIA H200 x1" in s
    assert s.endswith("2 retried, 1 failed")


def test_a_row_is_the_local_sweeps_plus_node_and_gpu_type():
    work = items(["histogram"], [(4096, 256)], ["int32"], "triton", "skewed")
    row = _full(work, [(0, None), (0, "H100")], 1, {"mode": "measured", "best": "A=1", "gpu": None})
    assert list(row)[: len(COLUMNS)] == COLUMNS
    assert (row["kernel"], row["shape"], row["dist"], row["gpu_type"]) == (
        "histogram",
        "4096x256",
        "skewed",
        "H100",
    )
    assert row["mode"] == "measured" and row["best"] == "A=1" and row["gpu"] == "" and row["node"] == ""
    assert "gpu_type" not in _full(work, [(0, None)], 0, {})


def test_a_lost_task_goes_first_in_line_then_fails_after_its_last_attempt():
    pytest.importorskip("ray")
    work = items(["histogram"], [(4096, 256), (8192, 256)], ["int32"], "triton")
    run = _Sweep(None, None, work, [(0, None), (1, None)], "autopad.sweep:tune_item")
    run.max_attempts = 2
    run.attempts = [1, 2]
    run.pending.clear()
    run.lost(0, "WorkerCrashedError: gone")
    assert list(run.pending) == [0] and run.retried == 1 and not run.got
    run.lost(1, "NodeDiedError: gone")
    assert run.got[1]["mode"] == "failed" and run.got[1]["error"] == "NodeDiedError: gone (attempt 2 of 2)"
    stop = SweepInterrupted([{"kernel": "x"}], 3, 4)
    assert isinstance(stop, KeyboardInterrupt) and (stop.cancelled, stop.not_started) == (3, 4)
