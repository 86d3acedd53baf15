"""The worker process (``python -m autopad.worker``) with fake children, no GPU: it never re-runs the
caller's script, a dead worker is noticed from its exit in well under 2 s, a silent one is killed with
whatever it started, a worker that cannot start fails every candidate at once with its last output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import fake_children
import pytest

from autopad.bench import BenchJob, Worker

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


def _job(*keys):
    return BenchJob(("object", None), tuple((k, {}) for k in keys), (16,), "float32")


def _gone(pid: int) -> bool:
    """Whether ``pid`` has exited (a zombie nobody reaped counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except (OSError, IndexError):
        return False


def test_a_dead_worker_is_noticed_from_its_exit_within_two_seconds(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOPAD_TEST_MARKER", str(tmp_path))
    # timeouts of 60 s: a death noticed by a timeout would take a minute
    w = Worker(_job("ok1", "die1", "ok2"), timeout_s=60, compile_timeout_s=60, target=fake_children.child)
    got, seen_at = {}, {}
    for m in w.results():
        got[m.key], seen_at[m.key] = m, time.time()
    died = float((tmp_path / "died").read_text())
    latency = seen_at["die1"] - died
    print(f"dead worker noticed {latency * 1e3:.0f} ms after its exit")
    assert 0 <= latency < 2.0
    assert got["die1"].error.startswith("worker crashed while candidate die1: exit code 9")
    assert "illegal memory access" in got["die1"].error  # the worker's last output is in the reason
    assert got["ok1"].correct and got["ok2"].correct  # a fresh worker took the rest


def test_a_silent_worker_is_killed_with_what_it_started(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOPAD_TEST_MARKER", str(tmp_path))
    t0 = time.perf_counter()
    got = {m.key: m for m in Worker(_job("orphan1", "ok1"), 1.5, 1.5, target=fake_children.child).results()}
    assert got["orphan1"].error == "timeout: no answer in 2 s while candidate orphan1"
    assert got["ok1"].correct
    grandchild = int((tmp_path / "grandchild").read_text())
    deadline = time.time() + 5
    while not _gone(grandchild) and time.time() < deadline:
        time.sleep(0.05)
    assert _gone(grandchild)  # the worker's process group was killed, not just the worker
    assert time.perf_counter() - t0 < 20


def test_a_worker_that_cannot_start_fails_every_candidate_at_once(monkeypatch):
    monkeypatch.setenv("AUTOPAD_TEST_DIE_ON_IMPORT", "1")
    t0 = time.perf_counter()
    got = list(Worker(_job("ok1", "ok2", "ok3"), 60, 600, target=fake_children.child).results())
    assert time.perf_counter() - t0 < 15  # not 600 s, not once per candidate
    assert [m.key for m in got] == ["ok1", "ok2", "ok3"]
    assert all(m.error.startswith("worker could not start: exit code 5") for m in got)
    assert "dying on import as asked" in got[0].error


@pytest.mark.parametrize("how", ["setupcrash", "setupdie"])
def test_a_worker_failing_before_its_first_candidate_gets_one_more_try(tmp_path, monkeypatch, how):
    """No CUDA in the worker, say: the same every time, so two tries, not one per candidate."""
    monkeypatch.setenv("AUTOPAD_TEST_MARKER", str(tmp_path))
    got = list(Worker(_job(how, "ok1", "ok2", "ok3"), 60, 600, target=fake_children.child).results())
    assert [m.key for m in got] == [how, "ok1", "ok2", "ok3"]
    assert all("before measuring" in m.error for m in got), got[0].error
    assert ("no CUDA device" if how == "setupcrash" else "exit code 11") in got[0].error
    assert (tmp_path / "starts").read_text().split() == ["start", "start"]


def test_an_unimportable_target_is_reported_for_every_candidate():
    got = list(Worker(_job("a", "b"), 60, 600, target="no_such_module_xyz:child").results())
    assert [m.key for m in got] == ["a", "b"]
    assert all("could not import its target 'no_such_module_xyz:child'" in m.error for m in got)


def test_an_unpicklable_job_fails_every_candidate_before_any_process_starts():
    job = BenchJob(("object", lambda: None), (("a", {}), ("b", {})), (16,), "float32")
    t0 = time.perf_counter()
    got = list(Worker(job, 60, 600, target=fake_children.child).results())
    assert time.perf_counter() - t0 < 2
    assert [m.key for m in got] == ["a", "b"] and all("worker could not start" in m.error for m in got)


def test_a_function_of_main_cannot_be_a_target():
    def local(job, out):
        pass

    with pytest.raises(ValueError, match="target"):
        Worker(_job("a"), target=local)


def test_the_worker_exits_when_its_parent_dies(tmp_path):
    """A parent killed mid-job (Ctrl-C twice, OOM) leaves no worker behind: its input pipe closes."""
    code = textwrap.dedent(
        f"""
        import os, sys
        sys.path.insert(0, {str(TESTS)!r})
        from autopad.bench import BenchJob
        from autopad.worker import WorkerProcess
        job = BenchJob(("object", None), (("hang1", {{}}),), (16,), "float32")
        w = WorkerProcess("job", {{"target": "fake_children:child", "job": job}})
        while w.recv(30)[0] != "start":
            pass
        print(w.pid, flush=True)
        os._exit(0)
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    pid = int(proc.stdout.split()[0])
    deadline = time.time() + 5
    while not _gone(pid) and time.time() < deadline:
        time.sleep(0.05)
    assert _gone(pid)


UNGUARDED = """
import os, sys
sys.path.insert(0, {tests!r})
with open(os.path.join(os.environ["AUTOPAD_TEST_MARKER"], "script"), "a") as f:
    f.write(f"{{os.getpid()}}\\n")   # one line per run of this script
import autopad, fake_kernel
from autopad.bench import Worker

class Mine:                      # a spec defined in __main__: travels to the worker by value
    pass
for k, v in vars(fake_kernel).items():
    if not k.startswith("__"):
        setattr(Mine, k, staticmethod(v) if callable(v) and not isinstance(v, type) else v)
Mine.NAME = "mine_unguarded"

class Bench:                     # the real worker process, with a fake child inside
    def measure(self, job):
        yield from Worker(job, 30, 60, target="fake_children:spec_child").results()

res = autopad.tune(Mine, (4096, 4096), cache=False, budget=4, benchmarker=Bench(), progress=False)
print("PICK", res.mode, res.best.constants, flush=True)
"""


def test_an_unguarded_script_tunes_once_and_the_worker_never_runs_it(tmp_path):
    script = tmp_path / "user_script.py"
    script.write_text(UNGUARDED.format(tests=str(TESTS)))
    env = {**os.environ, "AUTOPAD_TEST_MARKER": str(tmp_path), "CUDA_VISIBLE_DEVICES": "3"}
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=240, cwd=tmp_path, env=env
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("PICK measured") == 1
    assert len((tmp_path / "script").read_text().split()) == 1  # the script ran once, in the parent only
    seen = [json.loads(line) for line in (tmp_path / "worker").read_text().splitlines()]
    assert seen and all(s["main"] == "autopad.worker" and s["spec"] == "mine_unguarded" for s in seen)
    assert seen[0]["env"]["CUDA_VISIBLE_DEVICES"] == "3"  # the environment passes through
    assert seen[0]["env"]["AUTOPAD_TEST_MARKER"] == str(tmp_path)
    assert time.perf_counter() - t0 < 120


UNGUARDED_SWEEP = """
import os, sys
sys.path.insert(0, {tests!r})
with open(os.path.join(os.environ["AUTOPAD_TEST_MARKER"], "script"), "a") as f:
    f.write(f"{{os.getpid()}}\\n")
from autopad.sweep import items, run_sweep
rows = run_sweep(items(["k1"], [(64, 64)], ["a", "b"]), devices=(0, 1), task="fake_sweep_tasks:ok",
                 progress=False)
print("ROWS", [r["mode"] for r in rows], flush=True)
"""


def test_an_unguarded_script_runs_a_sweep_once(tmp_path):
    script = tmp_path / "sweep_script.py"
    script.write_text(UNGUARDED_SWEEP.format(tests=str(TESTS)))
    env = {**os.environ, "AUTOPAD_TEST_MARKER": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=240, cwd=tmp_path, env=env
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ROWS ['fake', 'fake']" in proc.stdout
    assert len((tmp_path / "script").read_text().split()) == 1
