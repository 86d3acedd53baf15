"""autopad/bench_timing.py: the one timing path (L2 flush, a GPU spin sized from the host's issue time,
CUDA events, the median), checked with a fake torch that logs the stream (no GPU)."""

from __future__ import annotations

import sys
import time
import types

import pytest

from autopad import bench_timing
from autopad.bench_timing import Timing, _median_iqr, benchmark, lead_cycles


@pytest.fixture
def fake_torch(monkeypatch):
    """A torch whose events count the log's entries: an interval's "milliseconds" are the entries between
    its two records."""
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
    return log


def test_median_and_interquartile_range():
    assert _median_iqr([1.0, 2.0, 3.0, 4.0, 100.0]) == (3.0, 2.0)


def test_the_spin_ahead_of_a_timed_run_outlasts_the_hosts_issue_time():
    assert lead_cycles(0.0) == 40_000  # the 20 us floor at 2 GHz
    assert lead_cycles(100e-6) == 600_000  # three times the host's 100 us
    assert lead_cycles(1.0) == 4_000_000  # capped at 2 ms


def test_timing_queues_flush_then_spin_then_start_event_then_the_run(fake_torch):
    """Every timed run sits between its events, each start event comes right after a spin sized from the
    warm-up runs' host time (not the first, compiling one), and that after the L2 flush."""
    log = fake_torch
    calls = []

    def run():
        if not calls:
            time.sleep(0.05)  # the first run compiles: its host time must not size the spin
        calls.append(1)
        log.append(("run",))

    times = bench_timing._time(run, reps=4, warmup=3, before=None)
    assert len(times) == 4 and len(calls) == 7
    timed = log[[i for i, x in enumerate(log) if x[0] == "flush"][0] :]
    spins = [x[1] for x in timed if x[0] == "spin"]
    assert len(spins) == 4 and len(set(spins)) == 1
    assert lead_cycles(0.0) <= spins[0] < lead_cycles(0.01)  # not sized by the 50 ms compile
    for i in range(4):
        assert [x[0] for x in timed[5 * i : 5 * i + 5]] == ["flush", "spin", "record", "run", "record"]


def test_benchmark_is_the_median_of_the_timed_runs_with_before_ahead_of_each(fake_torch):
    """``benchmark`` times as the tuner does: ``before`` (an accumulator's zeroing) runs ahead of every
    warm-up and timed run, outside the interval, and the result is the runs' median and spread."""
    log = fake_torch
    befores = []
    t = benchmark(lambda: log.append(("run",)), reps=5, warmup=2, before=lambda: befores.append(1))
    assert isinstance(t, Timing) and t.runs == 5 and len(befores) == 7
    assert t.ms == 2.0 and t.spread_ms == 0.0  # start record, the run, end record: two entries apart
