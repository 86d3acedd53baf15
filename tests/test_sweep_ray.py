"""Ray sweeps on a local Ray cluster of fake GPUs (CPU only): model-only items, a task killed mid-run and
retried, an item that fails, each GPU type, Ctrl-C, a killed caller, a dead node, and the compare script.

The cluster (``ray.cluster_utils.Cluster``: two nodes of one fake GPU each, accelerator types FAKEA (the
head) and FAKEB) starts once for the module (~10 s) and listens on the loopback address only. Each test's
tasks get a node cache of their own (``AUTOPAD_CACHE_DIR``), apart from the caller's (conftest's per-test
cache), so what the caller's cache holds was written there by the caller.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from split_checks import assert_reexported

from autopad.sweep import items

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
sys.path.insert(0, str(TESTS))
from fake_ray_tasks import ODD_ROWS  # noqa: E402

FAKEB = {"num_cpus": 1, "num_gpus": 1, "resources": {"accelerator_type:FAKEB": 1}}


def _hist(rows, backend="triton", dist="uniform"):
    return items(["histogram"], [(r, 256) for r in rows], ["int32"], backend, dist)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    os.environ.setdefault(
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0"
    )  # loopback addresses only (read at import)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    saved = os.environ.get("AUTOPAD_CACHE_DIR")
    os.environ["AUTOPAD_CACHE_DIR"] = str(tmp_path_factory.mktemp("raylet-cache"))  # never a user's cache
    head = {
        "num_cpus": 1,
        "num_gpus": 1,
        "resources": {"accelerator_type:FAKEA": 1},
        "include_dashboard": False,
    }
    c = Cluster(initialize_head=True, head_node_args=head)
    c.add_node(**FAKEB)
    ray.init(address=c.address, log_to_driver=False)
    yield c
    ray.shutdown()
    c.shutdown()
    if saved is None:
        os.environ.pop("AUTOPAD_CACHE_DIR", None)
    else:
        os.environ["AUTOPAD_CACHE_DIR"] = saved


@pytest.fixture
def env(tmp_path):
    """What every task of a test is given: model-only tunes, a node cache of its own, the fakes' markers."""
    (tmp_path / "markers").mkdir()
    return {
        "AUTOPAD_NO_BENCH": "1",
        "AUTOPAD_CACHE_DIR": str(tmp_path / "node-cache"),
        "AUTOPAD_TEST_MARKER": str(tmp_path / "markers"),
        "PYTHONPATH": os.pathsep.join([str(TESTS), str(ROOT)]),
    }


def _caller_results():
    from autopad.cache import Cache

    return {(e["kernel"], tuple(e["shape"]), e["dist"]): e for e in Cache().entries() if e["has_result"]}


def _stored_pick(kernel, shape, dtype, backend, dist):
    """The pick in the caller's cache for this item on 'no GPU' (the fake GPUs' key), as "K=V,..."."""
    from autopad.cache import Cache
    from autopad.request import Request
    from autopad.tune import cache_key

    req = Request.make(kernel, shape, dtype, backend, dist=dist)
    data = Cache().load(cache_key(req.spec, req.shape, req.dtype, req.dist, {}))
    best = data["result"]["result"]["best"]["constants"]
    return ",".join(f"{k}={v}" for k, v in sorted(best.items()))


# ---- without a cluster -------------------------------------------------------------------------------------


def test_without_ray_the_error_says_what_to_install(monkeypatch):
    from autopad import sweep_ray

    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ImportError, match=r"autopad\[ray\]"):
        sweep_ray.run_sweep_ray(_hist([4096]))


def test_every_name_sweep_ray_defined_is_the_object_of_its_new_home():
    from autopad import sweep_ray, sweep_ray_cluster, sweep_ray_loop, sweep_ray_task

    homes = {
        sweep_ray_cluster: "_TYPE_PREFIX _ray _connect gpu_types_of capacity _view gpu_views",
        sweep_ray_task: "_run_task _stored _record _slot",
        sweep_ray_loop: "RETRYABLE _CAP_REFRESH_S SweepInterrupted _reason _Sweep _full summary",
    }
    assert_reexported(sweep_ray, homes)
    assert sorted(sweep_ray.__all__) == sorted(
        ["SweepInterrupted", "run_sweep_ray", "summary", "capacity", "gpu_types_of", "gpu_views", "RETRYABLE"]
    )


def test_import_autopad_does_not_import_ray():
    code = "import autopad, autopad.sweep, autopad.sweep_ray, sys; print('ray' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False"


# ---- on the local cluster ----------------------------------------------------------------------------------


def test_model_only_items_land_in_the_callers_cache_under_the_nodes_key(cluster, env, tmp_path):
    from autopad.export import load_result
    from autopad.sweep_ray import run_sweep_ray

    work = _hist([4096]) + _hist([8192], "cuda", "skewed")
    seen = []
    rows = run_sweep_ray(
        work, env=env, progress=False, results_dir=tmp_path / "results", on_row=lambda i, r: seen.append(i)
    )
    assert sorted(seen) == [0, 1] and [r["backend"] for r in rows] == ["triton", "cuda"]
    assert all(r["mode"] == "model-only" and r["attempts"] == 1 and r["error"] == "" for r in rows), rows
    assert len({r["node"] for r in rows}) == 2  # two GPUs, one per node: both took an item
    for r, it in zip(rows, work):  # in the caller's cache (the tasks had a cache of their own)
        assert _stored_pick(it.kernel, it.shape, it.dtype, r["backend"], it.dist) == r["best"]
    for it in work:  # one JSON per item and GPU type, for `autopad export a.json b.json -o k.h`
        (path,) = (tmp_path / "results").glob(
            f"histogram_{it.shape[0]}x256_int32_{it.backend}_{it.dist}/*.json"
        )
        assert path.name == "no-gpu.json" and load_result(path).best.constants


def test_a_task_killed_mid_run_is_retried_on_a_fresh_worker_and_nothing_is_lost(cluster, env):
    from autopad.sweep_ray import run_sweep_ray

    work = _hist([4096, ODD_ROWS])
    rows = run_sweep_ray(work, task="fake_ray_tasks:crash_once", env=env, progress=False)
    assert [r["attempts"] for r in rows] == [1, 2]
    assert all(r["mode"] == "model-only" and r["error"] == "" for r in rows), rows
    crashed_pid = int((Path(env["AUTOPAD_TEST_MARKER"]) / f"crashed-int32-{ODD_ROWS}").read_text())
    assert rows[1]["worker_pid"] != crashed_pid  # the retry ran in another worker process
    assert set(_caller_results()) == {
        ("histogram", (4096, 256), "uniform"),
        ("histogram", (ODD_ROWS, 256), "uniform"),
    }


def test_an_item_that_kills_every_worker_fails_with_the_reason_and_a_raising_one_is_not_retried(cluster, env):
    from autopad.sweep_ray import run_sweep_ray

    rows = run_sweep_ray(
        _hist([ODD_ROWS, ODD_ROWS + 1]), task="fake_ray_tasks:dies_or_raises", env=env, progress=False
    )
    assert [r["mode"] for r in rows] == ["failed", "failed"] and [r["attempts"] for r in rows] == [2, 1]
    assert "WorkerCrashedError" in rows[0]["error"] and "attempt 2 of 2" in rows[0]["error"]
    assert rows[1]["error"] == "RuntimeError: user kernel raised"  # raised by the tune: not retried


def test_each_item_runs_once_per_gpu_type(cluster, env):
    from autopad.sweep_ray import run_sweep_ray

    rows = run_sweep_ray(_hist([4096]), task="fake_ray_tasks:ok", gpu_types="all", env=env, progress=False)
    assert [r["gpu_type"] for r in rows] == ["FAKEA", "FAKEB"] and len({r["node"] for r in rows}) == 2
    with pytest.raises(ValueError, match="no alive node has H100.*FAKEA, FAKEB"):
        run_sweep_ray(_hist([4096]), task="fake_ray_tasks:ok", gpu_types=["H100"], env=env, progress=False)


def _driver(cluster, task, rows, env, caller_cache):
    argv = [
        str(TESTS / "fake_ray_tasks.py"),
        cluster.address,
        task,
        ",".join(map(str, rows)),
        json.dumps(env),
    ]
    child_env = {**os.environ, "PYTHONPATH": env["PYTHONPATH"], "AUTOPAD_CACHE_DIR": str(caller_cache)}
    return subprocess.Popen(
        [sys.executable, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=child_env,
    )


def _wait_for(cond, timeout_s=60.0):
    t0 = time.perf_counter()
    while not cond():
        assert time.perf_counter() - t0 < timeout_s, "timed out"
        time.sleep(0.1)


def test_ctrl_c_cancels_the_tasks_in_flight(cluster, env, tmp_path):
    marks = Path(env["AUTOPAD_TEST_MARKER"])
    p = _driver(cluster, "fake_ray_tasks:slow", [ODD_ROWS, ODD_ROWS + 1, ODD_ROWS + 2], env, tmp_path / "c")
    try:
        _wait_for(lambda: len(list(marks.glob("started-*"))) == 2)  # both GPUs busy, the third item waits
        p.send_signal(signal.SIGINT)
        try:  # cancelling, up to 30 s for the GPUs to free, the driver exiting: slow on a loaded 2-core box
            out, err = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            pytest.fail(
                f"the interrupted driver did not exit in 120 s; its stdout: {out!r}, stderr: {err[-3000:]}"
            )
    finally:
        p.kill()
    doc = json.loads(out.strip().splitlines()[-1])
    assert doc["interrupted"] and doc["cancelled"] == 2 and doc["not_started"] == 1 and doc["done"] == 0, err
    assert doc["gpus_free"], doc  # cancelled, not left running: both GPUs are free again
    assert not list(marks.glob("finished-*")) and len(list(marks.glob("started-*"))) == 2


def test_a_killed_caller_loses_no_finished_result(cluster, env, tmp_path):
    from autopad.cache import Cache

    caller = tmp_path / "caller-cache"
    p = _driver(cluster, "fake_ray_tasks:tune_or_hang", [4096, ODD_ROWS, 8192], env, caller)
    try:
        _wait_for(lambda: sum(e["has_result"] for e in Cache(caller).entries()) == 2)
        p.send_signal(signal.SIGKILL)  # the caller dies mid-sweep, one item still running
        p.wait(timeout=30)
    finally:
        p.kill()
    entries = Cache(caller).entries()
    assert sorted(tuple(e["shape"]) for e in entries if e["has_result"]) == [(4096, 256), (8192, 256)]
    assert all(e["problem"] is None for e in entries)


def test_a_dead_node_loses_its_item_to_another_node(cluster, env):
    """The FAKEB node dies while its task runs; the item waits for a GPU of that type; a new node runs it."""
    from autopad.sweep_ray import run_sweep_ray

    marker = Path(env["AUTOPAD_TEST_MARKER"]) / "hung-on"
    got = {}

    def sweep():
        got["rows"] = run_sweep_ray(
            _hist([ODD_ROWS]), task="fake_ray_tasks:hang_once", gpu_types=["FAKEB"], env=env, progress=False
        )

    t = threading.Thread(target=sweep)
    t.start()
    _wait_for(lambda: marker.exists() and len(marker.read_text()) > 8)
    victim = next(n for n in cluster.list_all_nodes() if n.node_id == marker.read_text())
    cluster.remove_node(victim)
    cluster.add_node(**FAKEB)
    t.join(timeout=60)
    assert not t.is_alive()
    (row,) = got["rows"]
    assert row["mode"] == "fake" and row["attempts"] == 2 and row["error"] == ""
    assert row["gpu_type"] == "FAKEB" and marker.read_text()[:8] not in row["node"]


# ---- the compare script ------------------------------------------------------------------------------------


def _compare_script():
    spec = importlib.util.spec_from_file_location(
        "ray_sweep_compare", ROOT / "benchmarks" / "ray_sweep_compare.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_compare_script_pure_parts():
    m = _compare_script()
    base = {"kernel": "transpose", "backend": "cuda", "shape": "64x64", "dtype": "float32", "dist": ""}
    pool = [{**base, "best": "PAD=1", "best_ms": 2.0, "attempts": 1, "mode": "measured", "error": ""}]
    ray_rows = [
        {**base, "best": "PAD=1", "best_ms": 2.2, "attempts": 1, "mode": "measured", "error": "", "gpu": "G"}
    ]
    (p,) = m.compare(pool, ray_rows)
    assert p["same_pick"] and abs(p["ray_over_pool"] - 1.1) < 1e-9
    v = m.verdict([p], {"pool": 10.0, "ray": 12.0})
    assert v["same_picks"] == 1 and v["every_item_once"] and v["ray_wall_over_pool"] == 1.2
    (p,) = m.compare(pool, [])
    assert not p["same_pick"] and p["mode_ray"] == "missing"
    assert m.verdict([p], {"pool": 1.0, "ray": None})["ran_in_both"] == 0
    views = [
        {"node": "a", "gpu_ids": ["0"], "cuda_visible_devices": "0", "device": {"name": "H200"}},
        {"node": "a", "gpu_ids": ["0"], "cuda_visible_devices": "0,1", "device": {}},
    ]
    bad = m.check_views(views, 2)
    assert len(bad) == 3 and "0,1" in bad[0] and "no device" in bad[1] and "1 distinct" in bad[2]
    assert m.check_views([{**views[0], "node": "b"}, views[0]], 2) == []  # GPU 0 of two nodes: two GPUs
    key = ("transpose", "cuda", "64x64", "float32", None, "G")
    assert m.check_cached(ray_rows, {key: "PAD=1"}) == []
    assert "holds PAD=2" in m.check_cached(ray_rows, {key: "PAD=2"})[0]
    assert "no result" in m.check_cached(ray_rows, {})[0]
    assert "NO" in m.table(m.compare(pool, [{**ray_rows[0], "best": "PAD=2"}]))


def test_compare_script_on_the_cluster_picks_as_the_local_pool(cluster, tmp_path, monkeypatch):
    """The whole script on fake GPUs (the plumbing, not the timings): the Ray sweep's picks are the local
    pool's, each item ran once, every result is in the caller's cache with the row's pick."""
    m = _compare_script()
    monkeypatch.setattr(m, "WORK_MODEL", _hist([4096]) + _hist([4096], "cuda", "skewed"))
    monkeypatch.setattr(m, "preflight", lambda: None)  # a fresh interpreter importing ray: seconds
    for name in ("PYTHONPATH", "AUTOPAD_NO_BENCH", "TRITON_CACHE_DIR", "AUTOPAD_CACHE_DIR"):  # main sets them
        monkeypatch.setenv(name, os.environ.get(name, ""))
    doc = m.main(["--out", str(tmp_path), "--model-only", "--fake-gpus", "2", "--address", cluster.address])
    assert doc["problems"] == [] and all(s["ok"] for s in doc["steps"].values()), doc
    assert doc["verdict"]["same_picks"] == 2 and doc["verdict"]["every_item_once"]
    assert {p.name for p in tmp_path.iterdir()} >= {"ray_compare.csv", "ray_compare.json", "sweep_ray.csv"}


# ---- the command line -------------------------------------------------------------------------------------


def _cli(*argv):
    from autopad.cli import main

    return main(["sweep", "--kernels", "histogram", "--dtypes", "int32", "--no-png", "--no-progress", *argv])


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--ray", "--gpus", "0,1"], "--gpus: not with --ray"),
        (["--gpu-types", "H100"], "--gpu-types: only with --ray"),
        (["--max-attempts", "3"], "--max-attempts: only with --ray"),
        (["--ray", "--max-attempts", "0"], "--max-attempts: need at least 1"),
        (["--ray", "--gpu-types", ","], "--gpu-types: nothing given"),
    ],
)
def test_cli_ray_options_are_checked_before_any_work(argv, words, tmp_path, capsys):
    assert _cli("--shapes", "4096x256", "--out", str(tmp_path), *argv) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1 and not (tmp_path / "sweep.csv").exists()


def test_cli_ray_without_ray_says_what_to_install(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)
    assert _cli("--shapes", "4096x256", "--out", str(tmp_path), "--ray") == 2
    assert "pip install 'autopad[ray]'" in capsys.readouterr().err


def test_cli_ray_sweep_writes_the_csv_and_one_result_per_item(cluster, monkeypatch, tmp_path, capsys):
    import csv

    monkeypatch.setenv("AUTOPAD_NO_BENCH", "1")  # passed on to the tasks: model-only rows
    out = tmp_path / "out"
    assert _cli("--shapes", "4096x256,8192x256", "--backend", "triton", "--out", str(out), "--ray") == 0
    cap = capsys.readouterr()
    assert "autopad sweep (ray): 2 task(s)" in cap.err and "0 retried, 0 failed" in cap.err
    rows = list(csv.DictReader(open(out / "sweep.csv")))
    assert [r["shape"] for r in rows] == ["4096x256", "8192x256"]
    assert all(r["mode"] == "model-only" and r["node"] and r["attempts"] == "1" for r in rows), rows
    assert len(list((out / "results").glob("histogram_*/no-gpu.json"))) == 2


def test_cli_ray_gpu_types_the_cluster_lacks_is_a_usage_error(cluster, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("AUTOPAD_NO_BENCH", "1")
    assert _cli("--shapes", "4096x256", "--out", str(tmp_path), "--ray", "--gpu-types", "H100") == 2
    err = capsys.readouterr().err
    assert "no alive node has H100" in err and "FAKEA" in err
