"""autopad/bench_pool.py: the benchmark worker's fault isolation, with fake children (no GPU): every
candidate gets one answer, a fault, a crash or a hang costs that candidate alone."""

from __future__ import annotations

import fake_children

from autopad.bench_job import BenchJob
from autopad.bench_pool import Worker, WorkerBenchmarker


def _job(*keys):
    return BenchJob(("object", None), tuple((k, {}) for k in keys), (16,), "float32")


def _run(*keys, timeout=3.0):
    w = Worker(_job(*keys), timeout_s=timeout, compile_timeout_s=timeout, target=fake_children.child)
    return {m.key: m for m in w.results()}


def test_the_default_child_is_the_worker_side_entry_point():
    """The child a Worker starts runs bench_local._child, named so that the worker process imports it."""
    from autopad import bench_local
    from autopad.worker import resolve

    w = Worker(_job("a"))
    assert w.target == "autopad.bench_local:_child" and resolve(w.target) is bench_local._child
    b = WorkerBenchmarker(timeout_s=5.0, compile_timeout_s=7.0)
    assert (b.timeout_s, b.compile_timeout_s) == (5.0, 7.0)


def test_every_candidate_is_answered_once_in_order_of_the_job():
    got = _run("ok1", "wrong1", "ok2")
    assert list(got) == ["ok1", "wrong1", "ok2"]
    assert got["ok1"].correct and got["ok1"].ms == 1.0
    assert not got["wrong1"].correct and got["wrong1"].error.startswith("wrong result")


def test_a_fault_replaces_the_worker_and_tuning_goes_on():
    got = _run("ok1", "fault1", "ok2", "fault2", "ok3")
    assert [k for k, m in got.items() if m.correct] == ["ok1", "ok2", "ok3"]
    assert got["fault1"].error == "fault: misaligned address"


def test_a_crashing_worker_is_recorded_against_the_candidate_it_was_running():
    got = _run("ok1", "crash1", "ok2", timeout=60.0)  # noticed from its exit, not after a timeout
    assert got["crash1"].correct is False
    assert got["crash1"].error == "worker crashed while candidate crash1: exit code 7"
    assert got["ok2"].correct


def test_a_hanging_candidate_times_out_and_the_rest_still_run():
    got = _run("ok1", "hang1", "ok2", timeout=2.0)
    assert got["hang1"].error.startswith("timeout")
    assert got["ok1"].correct and got["ok2"].correct
