"""The benchmark worker's fault isolation, with fake children (no GPU): every candidate gets one answer."""

from __future__ import annotations

import fake_children

from autopad.bench import BenchJob, Worker, _median_iqr, gpu_available


def _job(*keys):
    return BenchJob(("object", None), tuple((k, {}) for k in keys), (16,), "float32")


def _run(*keys, timeout=3.0):
    w = Worker(_job(*keys), timeout_s=timeout, compile_timeout_s=timeout, target=fake_children.child)
    return {m.key: m for m in w.results()}


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


def test_median_and_interquartile_range():
    assert _median_iqr([1.0, 2.0, 3.0, 4.0, 100.0]) == (3.0, 2.0)


def test_no_bench_switch(monkeypatch):
    monkeypatch.setenv("AUTOPAD_NO_BENCH", "1")
    assert gpu_available() is False


def test_candidates_naming_a_constant_the_spec_does_not_have_are_refused_before_anything_runs():
    """A name the build does not read would run the candidate with the real constant at its default under
    the wrong label (a sample written before EDGE became SCALAR_EDGE measured exactly that)."""
    import pytest

    from autopad.bench import measure, unknown_constants
    from autopad.kernels_registry import builtin_spec

    spec = builtin_spec("transpose", "cuda")
    good = dict(spec.DEFAULTS)
    stale = {**{k: v for k, v in good.items() if k != "SCALAR_EDGE"}, "EDGE": 0}
    assert unknown_constants(spec, good) == [] and unknown_constants(spec, stale) == ["EDGE"]
    with pytest.raises(ValueError, match="EDGE not among the spec's constants"):
        measure("transpose", [good, stale], (64, 64), "float32")


def test_the_spin_ahead_of_a_timed_run_outlasts_the_hosts_issue_time():
    from autopad.bench import lead_cycles

    assert lead_cycles(0.0) == 40_000  # the 20 us floor at 2 GHz
    assert lead_cycles(100e-6) == 600_000  # three times the host's 100 us
    assert lead_cycles(1.0) == 4_000_000  # capped at 2 ms


def test_timing_queues_flush_then_spin_then_start_event_then_the_run(monkeypatch):
    """With a fake torch that logs the stream: every timed run sits between its events, each start event
    comes right after a spin sized from the warm-up runs' host time (not the first, compiling one), and
    that after the L2 flush."""
    import sys
    import time
    import types

    from autopad import bench

    log: list = []

    class Event:
        def __init__(self, enable_timing=False):
            self.t = None

        def record(self):
            log.append(("record", self))
            self.t = len(log)

        def elapsed_time(self, other):
            return float(other.t - self.t)

        def synchronize(self):
            pass

    class Flush:
        def zero_(self):
            log.append(("flush",))

    cuda = types.SimpleNamespace(
        Event=Event, synchronize=lambda: None, _sleep=lambda cycles: log.append(("spin", cycles))
    )
    fake = types.SimpleNamespace(cuda=cuda, uint8="uint8", empty=lambda *a, **k: Flush())
    monkeypatch.setitem(sys.modules, "torch", fake)
    calls = []

    def run():
        if not calls:
            time.sleep(0.05)  # the first run compiles: its host time must not size the spin
        calls.append(1)
        log.append(("run",))

    times = bench._time(run, reps=4, warmup=3, before=None)
    assert len(times) == 4 and len(calls) == 7
    timed = log[[i for i, x in enumerate(log) if x[0] == "flush"][0] :]
    spins = [x[1] for x in timed if x[0] == "spin"]
    assert len(spins) == 4 and len(set(spins)) == 1
    assert bench.lead_cycles(0.0) <= spins[0] < bench.lead_cycles(0.01)  # not sized by the 50 ms compile
    for i in range(4):
        assert [x[0] for x in timed[5 * i : 5 * i + 5]] == ["flush", "spin", "record", "run", "record"]
