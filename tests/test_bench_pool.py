"""autopad/bench_pool.py: the benchmark worker's fault isolation, with fake children (no GPU): every
candidate gets one answer, a fault, a crash or a hang costs that candidate alone."""

from __future__ import annotations

import fake_children
import pytest

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


def _pids(bench, *keys):
    return {m.key: (int(m.ms), m.runs == 2) for m in bench.measure(_job(*keys))}


def test_spare_workers_take_the_jobs_in_turn_each_job_in_a_process_of_its_own():
    """spares: workers started ahead (prewarm, topped up as each job's worker starts) import torch while
    they wait, and each job takes the oldest; every job still gets a process of its own; close ends them."""
    pytest.importorskip("torch")  # what a spare imports while it waits (the fake children report it)
    b = WorkerBenchmarker(timeout_s=60.0, compile_timeout_s=60.0, spares=2, target=fake_children.child)
    try:
        b.prewarm()
        first, second = b._spares
        assert first.alive() and second.alive() and first.pid != second.pid
        got = _pids(b, "pid1", "pid2")
        assert got["pid1"] == got["pid2"] == (first.pid, True)  # the oldest spare ran it, torch loaded
        assert b._spares[0] is second and len(b._spares) == 2
        third = b._spares[1]
        got = _pids(b, "pid3")
        assert got["pid3"] == (second.pid, True)
        assert b._spares[0] is third and third.pid not in (first.pid, second.pid)
        waiting = list(b._spares)
    finally:
        b.close()
    assert b._spares == [] and not any(w.alive() for w in waiting)


def _spawned(b):
    """Record the children ``b`` hands its jobs."""
    children, spawn = [], b._spawn

    def record(hello):
        children.append(spawn(hello))
        return children[-1]

    b._spawn = record
    return children


def test_a_fault_goes_on_in_a_spare_and_a_dead_spare_is_passed_over():
    b = WorkerBenchmarker(timeout_s=60.0, compile_timeout_s=60.0, spares=1, target=fake_children.child)
    children = _spawned(b)
    try:
        b.prewarm()
        b._spares[0].kill()  # died before its job came: the job starts a fresh worker instead
        got = {m.key: m for m in b.measure(_job("ok1", "fault1", "pid1"))}
        assert got["ok1"].correct and got["pid1"].correct
        assert got["fault1"].error == "fault: misaligned address"
        assert list(got) == ["ok1", "fault1", "pid1"]
        fresh, after = children
        assert not getattr(fresh, "from_spare", False) and after.from_spare  # the fault's successor: a spare
        assert int(got["pid1"].ms) == after.pid
    finally:
        b.close()


def test_a_spare_that_dies_before_it_is_ready_is_retried_afresh():
    """A spare that passed the liveness check but died before reading its job (killed while it waited)
    does not fail the job as a worker that cannot start: the job goes on in a fresh process."""
    b = WorkerBenchmarker(timeout_s=60.0, compile_timeout_s=60.0, spares=1, target=fake_children.child)
    children = _spawned(b)
    try:
        b.prewarm()
        dead = b._spares[0]
        dead.kill()
        dead.alive = lambda: True  # it looked alive when the job took it
        got = {m.key: m for m in b.measure(_job("pid1", "ok1"))}
        assert got["pid1"].correct and got["ok1"].correct
        assert children == [dead] and int(got["pid1"].ms) != dead.pid  # the retry: not a spare
    finally:
        b.close()


def test_an_unpicklable_job_leaves_the_spares_to_close():
    """The job is pickled before a spare is taken: it fails at once, as without spares, and close still
    ends every spare (none is left running)."""
    b = WorkerBenchmarker(timeout_s=60.0, compile_timeout_s=60.0, spares=2, target=fake_children.child)
    b.prewarm()
    spares = list(b._spares)
    job = BenchJob(("object", None), (("a", {"f": lambda: 1}),), (16,), "float32")
    got = list(b.measure(job))
    assert len(got) == 1 and got[0].error.startswith("worker could not start")
    assert b._spares == spares and all(w.alive() for w in spares)
    b.close()
    assert not any(w.alive() for w in spares)


def test_no_spares_by_default():
    b = WorkerBenchmarker(timeout_s=60.0, compile_timeout_s=60.0, target=fake_children.child)
    b.prewarm()
    got = _pids(b, "pid1")
    assert b._spares == [] and got["pid1"][1] is False  # no torch: fake children never import it
