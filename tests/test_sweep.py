"""Sweep sharding with fake workers: every item once, restarts, retries, failures recorded."""

from __future__ import annotations

import csv

import pytest

from autopad.sweep import items, plot, run_sweep, write_csv


def _work(dtypes=("a", "b", "c", "d", "e", "f")):
    return items(["k1", "k2"], [(64, 64)], list(dtypes))


def test_every_item_runs_once_across_two_fake_gpus(tmp_path):
    work = _work()
    rows = run_sweep(work, devices=(0, 1), task="fake_sweep_tasks:ok", progress=False)
    assert [r["dtype"] for r in rows] == [w.dtype for w in work]  # item order kept
    assert all(r["attempts"] == 1 and r["error"] == "" for r in rows)
    assert {r["device"] for r in rows} == {0, 1}  # both workers took items
    assert all(r["best"] == f"{r['kernel']}-{r['device']}" for r in rows)  # each ran where it says


def test_a_dying_worker_is_replaced_and_its_item_retried_once(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOPAD_TEST_MARKER", str(tmp_path))
    work = _work(("a", "crash", "b"))
    rows = run_sweep(work, devices=(0,), task="fake_sweep_tasks:crash_once", progress=False)
    crashed = [r for r in rows if r["dtype"] == "crash"]
    assert all(r["error"] == "" and r["attempts"] == 2 for r in crashed)
    assert all(r["mode"] == "fake" for r in rows)
    pids = {r["worker_pid"] for r in rows}
    assert len(pids) >= 2  # a new worker process took over


def test_an_item_that_kills_its_worker_twice_is_recorded_as_failed():
    work = _work(("a", "crash"))
    rows = run_sweep(work, devices=(0,), task="fake_sweep_tasks:crash_always", progress=False)
    failed = [r for r in rows if r["dtype"] == "crash"]
    assert failed and all(r["mode"] == "failed" and "died" in r["error"] for r in failed)
    assert all(r["mode"] == "fake" for r in rows if r["dtype"] == "a")


def test_a_raising_item_fails_alone():
    rows = run_sweep(_work(("bad", "a")), devices=(0,), task="fake_sweep_tasks:raises", progress=False)
    assert [r["mode"] for r in rows] == ["failed", "fake", "failed", "fake"]
    assert "user kernel raised" in rows[0]["error"]


def test_csv_and_png(tmp_path):
    rows = run_sweep(_work(("a",)), devices=(0,), task="fake_sweep_tasks:ok", progress=False)
    path = write_csv(rows, tmp_path / "sweep.csv")
    back = list(csv.DictReader(path.open()))
    assert [r["kernel"] for r in back] == ["k1", "k2"] and back[0]["speedup_vs_unpadded"] == "2.0"
    png = plot(rows, tmp_path / "sweep.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_png_replaces_a_symlink_and_never_writes_through_it(tmp_path):
    """sweep.png is written as the CSV is (files.write_atomic): a symlink planted at OUT/sweep.png is
    replaced, and the file it points to is left alone (savefig(path) wrote through it)."""
    pytest.importorskip("matplotlib")
    rows = run_sweep(_work(("a",)), devices=(0,), task="fake_sweep_tasks:ok", progress=False)
    victim = tmp_path / "victim.txt"
    victim.write_text("someone else's file\n")
    (tmp_path / "sweep.png").symlink_to(victim)
    png = plot(rows, tmp_path / "sweep.png")
    assert victim.read_text() == "someone else's file\n"
    assert not png.is_symlink() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_no_devices_is_an_error():
    with pytest.raises(ValueError, match="devices"):
        run_sweep(_work(), devices=())


def test_a_worker_may_start_processes_of_its_own():
    """tune() inside a sweep worker starts a benchmark worker: sweep workers must not be daemonic
    (the first two-GPU run on 2026-11-29 failed every item with 'daemonic processes are not allowed')."""
    rows = run_sweep(_work(("a",)), devices=(0,), task="fake_sweep_tasks:nested", progress=False)
    assert [r["mode"] for r in rows] == ["nested exit 0", "nested exit 0"]


def test_workers_dying_right_after_a_result_never_stall_the_others(tmp_path, monkeypatch):
    # Each crash follows a result the worker has just sent. With one queue shared by all workers, a worker
    # could die before its feeder thread let go of the queue's lock, and every later result waited on it
    # for good (seen under load). Each worker now has a pipe of its own.
    monkeypatch.setenv("AUTOPAD_TEST_MARKER", str(tmp_path))
    work = _work(("a", "crash", "b", "crash2", "c", "crash3"))
    rows = run_sweep(
        work, devices=(0, 1), task="fake_sweep_tasks:crash_once", progress=False, item_timeout_s=60
    )
    assert all(r["mode"] == "fake" and r["error"] == "" for r in rows), rows
    assert sorted(r["attempts"] for r in rows) == [1] * 6 + [2] * 6
