"""The tuning cache: round trips, atomic and concurrent writes, bad files, clear(), nearest-bucket lookup."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import re
import warnings
from dataclasses import fields
from pathlib import Path

import pytest
from cache_fixtures import edit_json as _edit
from cache_fixtures import make_key, make_result, meas
from cache_fixtures import set_field as _set

from autopad.cache import _MEMO, FORMAT_VERSION, Cache, CacheKey, cache_dir, write_atomic
from autopad.results import Measurement

# ---- the module's names, where their code now lives ----------------------------------------------------


def test_every_name_stays_importable_from_autopad_cache():
    """cache_key and cache_file hold code that was here: every name is still reached through autopad.cache."""
    import autopad.cache as cache
    from autopad import cache_file, cache_key

    for name in cache.__all__:
        assert getattr(cache, name) is not None
    for home in (cache_key, cache_file):
        for name in vars(home):
            if not name.startswith("__"):
                assert getattr(cache, name) is getattr(home, name), name
    from autopad.cache import _File, _read_bytes, _validate, max_bytes  # noqa: F401  (private, by name)


def test_cache_file_names_are_read_from_cache_file(monkeypatch):
    """autopad.cache serves ``_read_bytes`` from cache_file without binding it, so a patch of it belongs on
    cache_file, where the reading code looks it up (a patch of the re-export would reach nothing)."""
    import autopad.cache as cache
    from autopad import cache_file

    assert "_read_bytes" not in vars(cache) and cache._read_bytes is cache_file._read_bytes
    monkeypatch.setattr(cache_file, "_read_bytes", lambda *a, **k: (_ for _ in ()).throw(PermissionError()))
    assert cache._read_bytes is cache_file._read_bytes  # read through, never a stale copy
    c, k = Cache(), make_key()
    with pytest.warns(UserWarning, match="unreadable"):
        assert c.load(k) == {}


# ---- location, keys, buckets ---------------------------------------------------------------------


def test_cache_dir_env_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("AUTOPAD_CACHE_DIR", str(tmp_path / "x"))
    assert cache_dir() == tmp_path / "x"
    assert Cache().dir == tmp_path / "x" / "tune"
    monkeypatch.delenv("AUTOPAD_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "autopad"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "autopad"


# ---- round trips ---------------------------------------------------------------------------------


def test_measurements_round_trip_and_merge():
    c, k = Cache(), make_key()
    assert c.measurements(k) == {} and c.load(k) == {}
    c.put_measurements(k, {"PAD=0": meas("PAD=0", 0.5)})
    c.put_measurements(
        k, {"PAD=1": meas("PAD=1", 0.2), "PAD=9": Measurement("PAD=9", False, error="fault: x")}
    )
    got = c.measurements(k)
    assert got == {
        "PAD=0": meas("PAD=0", 0.5),
        "PAD=1": meas("PAD=1", 0.2),
        "PAD=9": Measurement("PAD=9", False, error="fault: x"),
    }
    c.put_measurements(k, {"PAD=0": meas("PAD=0", 0.4)})  # re-measured: replaced, others kept
    assert c.measurements(k)["PAD=0"].ms == 0.4 and len(c.measurements(k)) == 3
    assert c.measurements(make_key(shape=(2048, 2048))) == {}
    header = json.loads(c.path(k).read_text())
    assert header["format_version"] == FORMAT_VERSION and header["key"] == k.to_dict()


def test_result_round_trip_is_identical_and_param_sensitive():
    c, k = Cache(), make_key()
    res = make_result()
    params = {"top_k": 4, "budget": None, "arch": "sm_90", "shape": (1, 2)}
    c.put_result(k, res, params)
    assert c.get_result(k, params) == res
    assert c.get_result(k, dict(reversed(list(params.items())))) == res  # key order does not matter
    assert c.get_result(k, {**params, "top_k": 5}) is None
    assert c.get_result(make_key(dtype="float16"), params) is None
    # the measured candidates are stored per candidate too; the unmeasured one is not
    assert set(c.measurements(k)) == {"PAD=0,TILE=32", "PAD=1,TILE=32", "PAD=7,TILE=32"}
    assert c.measurements(k)["PAD=7,TILE=32"].error == "compile: boom"
    # adding a measurement keeps the result
    c.put_measurements(k, {"PAD=2,TILE=32": meas("PAD=2,TILE=32")})
    assert c.get_result(k, params) == res and len(c.measurements(k)) == 4


def test_repeated_get_result_sees_every_change_to_the_file():
    c, k = Cache(), make_key()
    c.put_result(k, make_result(pad=1), {"top_k": 2})
    first = c.get_result(k, {"top_k": 2})
    assert c.get_result(k, {"top_k": 2}) == first and first.best.constants["PAD"] == 1
    c.put_result(k, make_result(pad=2), {"top_k": 2})  # another process re-tuned: the new one is returned
    assert c.get_result(k, {"top_k": 2}).best.constants["PAD"] == 2
    assert c.get_result(k, {"top_k": 3}) is None
    Cache(c.root).put_result(k, make_result(pad=5), {"top_k": 3})
    assert c.get_result(k, {"top_k": 2}) is None and c.get_result(k, {"top_k": 3}).best.constants["PAD"] == 5
    c.path(k).write_text("{ broken")
    with pytest.warns(UserWarning, match="ignoring"):
        assert c.get_result(k, {"top_k": 3}) is None
    c.clear()
    assert c.get_result(k, {"top_k": 3}) is None


# ---- atomic writes and bad files -----------------------------------------------------------------


def test_write_atomic_leaves_no_temporaries_and_keeps_old_file_on_failure(tmp_path, monkeypatch):
    p = tmp_path / "f.json"
    write_atomic(p, "one")
    write_atomic(p, "two")
    assert p.read_text() == "two" and os.listdir(tmp_path) == ["f.json"]

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        write_atomic(p, "three")
    assert p.read_text() == "two" and os.listdir(tmp_path) == ["f.json"]


# ---- several processes at once -------------------------------------------------------------------


def _writer(root: str, worker: int, n: int, start) -> None:
    start.wait()
    c = Cache(Path(root))
    key = make_key()
    for i in range(n):
        name = f"W={worker},I={i}"
        c.put_measurements(key, {name: Measurement(name, True, 0.001 * i, 0.0, 1)})


@pytest.mark.skipif("fork" not in mp.get_all_start_methods(), reason="needs fork")
def test_concurrent_writers_lose_nothing(tmp_path):
    ctx = mp.get_context("fork")
    start = ctx.Event()
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), w, 50, start)) for w in range(4)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    c = Cache(tmp_path)
    got = c.measurements(make_key())
    assert set(got) == {f"W={w},I={i}" for w in range(4) for i in range(50)}
    assert got["W=3,I=49"].ms == pytest.approx(0.049)
    json.loads(c.path(make_key()).read_text())  # valid JSON
    assert not [p for p in os.listdir(c.dir) if p.endswith(".tmp")]


# ---- clear, entries ------------------------------------------------------------------------------


def test_clear_removes_only_autopad_cache_files():
    c = Cache()
    k1, k2 = make_key(), make_key(kernel="matmul")
    c.put_measurements(k1, {"A=1": meas("A=1")})
    c.put_result(k2, make_result(kernel="matmul"), {})
    c.put_measurements(make_key(kernel="histogram", dist="skewed"), {"R=1": meas("R=1")})
    mine = c.dir / "notes.json"
    mine.write_text("{}")
    lookalike = c.dir / "transpose-notahash.json"
    lookalike.write_text("user data")
    beside = c.root / "cubin" / "transpose-0123456789abcdef01234567.json"
    beside.parent.mkdir(parents=True)
    beside.write_text("compiled")

    rows = {r["kernel"]: r for r in c.entries()}
    assert set(rows) == {"transpose", "matmul", "histogram"}
    assert rows["matmul"]["has_result"] and rows["matmul"]["measurements"] == 3
    assert rows["transpose"]["measurements"] == 1 and not rows["transpose"]["has_result"]
    assert rows["histogram"]["dist"] == "skewed" and rows["histogram"]["size"] > 0

    assert c.clear("matmul") == 1
    assert c.load(k2) == {} and c.measurements(k1)
    assert c.clear() == 2
    assert c.entries() == []
    assert (
        mine.read_text() == "{}" and lookalike.read_text() == "user data" and beside.read_text() == "compiled"
    )
    assert sorted(os.listdir(c.dir)) == ["notes.json", "transpose-notahash.json"]
    assert c.clear() == 0


def test_clear_removes_corrupt_cache_files_too():
    c, k = Cache(), make_key()
    c.put_measurements(k, {"A=1": meas("A=1")})
    c.path(k).write_text("{ truncated")
    assert c.clear("matmul") == 0  # unreadable, but named as transpose's
    assert c.clear("transpose") == 1
    assert not c.path(k).exists()


# ---- nearest bucket ------------------------------------------------------------------------------


def test_nearest_picks_log_nearest_shape_of_same_context():
    c = Cache()
    for shape in [(256, 256), (4096, 4096), (1024, 1024)]:
        c.put_result(make_key(shape=shape), make_result(shape=shape, pad=shape[0] // 256), {})
    # tuned elsewhere: other dtype, gpu, kernel, dist or version, all at the query's exact shape
    q = (1500, 1500)
    for kw in [
        dict(dtype="float16"),
        dict(gpu="NVIDIA A100"),
        dict(kernel="matmul"),
        dict(dist="uniform"),
        dict(version="0.0.9"),
        dict(backend="triton"),
        dict(source_hash="other"),
    ]:
        c.put_result(make_key(shape=q, **kw), make_result(shape=q, pad=99), {})
    c.put_measurements(make_key(shape=(1400, 1400)), {"A=1": meas("A=1")})  # no result: not a candidate

    key, res = c.nearest(make_key(shape=q))
    assert key.shape == (1024, 1024) and res.best.constants["PAD"] == 4
    assert c.nearest(make_key(shape=(300, 200)))[0].shape == (256, 256)
    assert c.nearest(make_key(shape=(3000, 3000)))[0].shape == (4096, 4096)
    # per dim in log space: (4096, 256) is as far from (1024, 1024) as from the square tuned shapes
    assert c.nearest(make_key(shape=(4096, 300)))[0].shape == (1024, 1024)
    # an exactly tuned shape is its own nearest
    assert c.nearest(make_key(shape=(4096, 4096)))[1].best.constants["PAD"] == 16
    assert c.nearest(make_key(shape=(64, 64, 64))) is None  # other rank
    assert c.nearest(make_key(shape=q, dtype="bfloat16")) is None


def test_nearest_prefers_the_query_bucket_and_skips_bad_files():
    c = Cache()
    c.put_result(make_key(shape=(1030, 1030)), make_result(shape=(1030, 1030), pad=1), {})  # bucket 2048
    c.put_result(make_key(shape=(1300, 1300)), make_result(shape=(1300, 1300), pad=2), {})  # bucket 2048
    c.put_result(make_key(shape=(1024, 1024)), make_result(pad=3), {})  # bucket 1024
    # 1025 is log-nearest to 1024, but shares 1030's and 1300's bucket; 1030 is nearer than 1300
    assert c.nearest(make_key(shape=(1025, 1025)))[0].shape == (1030, 1030)
    bad = c.path(make_key(shape=(1030, 1030)))
    bad.write_text(bad.read_text()[:-40])  # truncated: its key is still readable, the rest is not
    assert c.nearest(make_key(shape=(1025, 1025)))[0].shape == (1300, 1300)


# ---- untrusted files, unusable folders, size ---------------------------------------------------------


def test_a_lock_file_that_is_a_symlink_is_not_followed(tmp_path):
    c, k = Cache(), make_key()
    c.dir.mkdir(parents=True)
    victim = tmp_path / "victim"
    c.path(k).with_suffix(".lock").symlink_to(victim)
    with pytest.warns(UserWarning, match="cannot write .*symlink") as rec:
        c.put_measurements(k, {"PAD=1": meas("PAD=1")})
        c.put_result(k, make_result(), {"top_k": 1})
    assert len(rec) == 1  # once per folder
    assert not victim.exists() and c.measurements(k) == {}


def test_a_lock_file_that_is_a_folder_makes_the_cache_keep_nothing():
    c, k = Cache(), make_key()
    c.path(k).with_suffix(".lock").mkdir(parents=True)
    with pytest.warns(UserWarning, match="cannot write") as rec:
        c.put_measurements(k, {"PAD=1": meas("PAD=1")})
        c.put_measurements(k, {"PAD=2": meas("PAD=2")})
    assert len(rec) == 1 and c.measurements(k) == {}
    assert c.clear() == 0


def test_a_file_where_the_folder_should_be_makes_an_empty_cache_that_keeps_nothing(tmp_path):
    root = tmp_path / "not-a-folder"
    root.write_text("user data")
    c, k = Cache(root), make_key()
    with pytest.warns(UserWarning) as rec:
        assert c.load(k) == {} and c.measurements(k) == {} and c.get_result(k, {}) is None
        c.put_measurements(k, {"PAD=1": meas("PAD=1")})
        c.put_result(k, make_result(), {})
        assert c.nearest(k) is None and c.entries() == [] and c.clear() == 0
    assert sorted(str(w.message).split(" (")[0] for w in rec) == [
        f"autopad cache: cannot read {c.dir}",
        f"autopad cache: cannot write to {c.dir}",
    ]
    assert root.read_text() == "user data"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads and writes any folder")
def test_a_folder_without_permission_makes_an_empty_cache(tmp_path):
    c, k = Cache(tmp_path / "c"), make_key()
    c.put_result(k, make_result(), {"top_k": 1})
    os.chmod(c.dir, 0)
    try:
        with pytest.warns(UserWarning, match="cannot"):
            assert c.get_result(k, {"top_k": 2}) is None
            c.put_measurements(k, {"PAD=2": meas("PAD=2")})
            assert c.entries() == []
    finally:
        os.chmod(c.dir, 0o755)


def test_a_folder_without_permission_makes_an_empty_cache_simulated(monkeypatch):
    """The same as root would meet it (root may read any folder): every open and listing refused."""
    c, k = Cache(), make_key()
    c.put_result(k, make_result(), {"top_k": 1})
    _MEMO.clear()

    def refuse(*a, **kw):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("autopad.cache_file._read_bytes", refuse)
    monkeypatch.setattr("autopad.cache.open_lock", refuse)
    monkeypatch.setattr("autopad.cache.os.access", lambda *a: False)
    monkeypatch.setattr(Path, "iterdir", refuse)
    with pytest.warns(UserWarning) as rec:
        assert c.get_result(k, {"top_k": 1}) is None and c.measurements(k) == {}
        c.put_measurements(k, {"PAD=2": meas("PAD=2")})
        assert c.entries() == [] and c.nearest(k) is None and c.clear() == 0
    assert [str(w.message).split(" (")[0] for w in rec] == [
        f"autopad cache: cannot read {c.dir}",
        f"autopad cache: cannot write to {c.dir}",
    ]


def test_a_read_only_folder_still_serves_hits_and_keeps_nothing_new(monkeypatch):
    c, k = Cache(), make_key()
    c.put_result(k, make_result(), {"top_k": 1})
    _MEMO.clear()

    def refuse(*a, **kw):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("autopad.cache.write_atomic", refuse)  # what a read-only folder does to a write
    with pytest.warns(UserWarning, match="cannot write .*Permission denied") as rec:
        c.put_measurements(k, {"PAD=2": meas("PAD=2")})
        c.put_result(k, make_result(pad=2), {"top_k": 2})
    assert len(rec) == 1
    assert c.get_result(k, {"top_k": 1}) == make_result() and "PAD=2" not in c.measurements(k)


class _Bench:
    """A fake benchmarker: every candidate correct, 1 ms plus a little per key (no GPU)."""

    def __init__(self):
        self.asked = []

    def measure(self, job):
        for key, _ in job.candidates:
            self.asked.append(key)
            yield Measurement(key, True, 1.0 + sum(map(ord, key)) % 97 / 100, 0.0, 30)


def _tune(**kw):
    import fake_kernel

    import autopad

    return autopad.tune(fake_kernel, (4096, 4096), "float32", benchmarker=_Bench(), progress=False, **kw)


@pytest.mark.parametrize("bad", [-1.0, "fast", True, None])
def test_a_poisoned_cached_time_is_never_the_pick_nor_a_crash(bad):
    first = _tune(top_k=2)
    victim = next(
        c for c in first.candidates if c.measurement is not None and c.constants != first.best.constants
    )
    c = Cache()
    path = next(c.dir.glob("fake_transpose-*.json"))
    path.write_text(_edit(path.read_text(), _set("measurements", victim.key, "ms", value=bad)))
    with pytest.warns(UserWarning, match=re.escape(f"measurements[{victim.key!r}].ms")):
        again = _tune(top_k=2, retune=True)
    assert again.mode == "measured"
    got = next(x for x in again.candidates if x.key == victim.key).measurement
    assert (
        got.ms == victim.measurement.ms
        and not next(x for x in again.candidates if x.key == victim.key).cached
    )


def test_tune_runs_uncached_when_the_cache_folder_is_unusable(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv("AUTOPAD_CACHE_DIR", str(tmp_path / "file"))
    with pytest.warns(UserWarning, match="autopad cache: cannot"):
        res = _tune(top_k=2)
    assert res.mode == "measured" and res.best.measured is not None


# ---- writers killed mid-write --------------------------------------------------------------------


def _endless_writer(root: str, worker: int, log: str) -> None:
    c, key = Cache(Path(root)), make_key()
    for i in range(1_000_000):
        name = f"W={worker},I={i}"
        c.put_measurements(key, {name: Measurement(name, True, 0.001 * i, 0.0, 1)})
        with open(log, "a") as f:  # after put returns: this entry must survive any later kill
            f.write(name + "\n")


@pytest.mark.skipif("fork" not in mp.get_all_start_methods(), reason="needs fork")
def test_writers_killed_at_random_moments_lose_nothing_acknowledged(tmp_path):
    import random
    import signal
    import time

    ctx, rng = mp.get_context("fork"), random.Random(7)
    root, log = tmp_path / "c", tmp_path / "log"
    running, n = [], 0
    for _ in range(3):
        running.append(ctx.Process(target=_endless_writer, args=(str(root), n, str(log))))
        running[-1].start()
        n += 1
    for _ in range(30):  # 30 SIGKILLs, each replaced by a fresh writer
        time.sleep(rng.uniform(0.02, 0.15))
        victim = running.pop(rng.randrange(len(running)))
        os.kill(victim.pid, signal.SIGKILL)
        victim.join()
        running.append(ctx.Process(target=_endless_writer, args=(str(root), n, str(log))))
        running[-1].start()
        n += 1
    for p in running:
        os.kill(p.pid, signal.SIGKILL)
        p.join()
    acknowledged = set(log.read_text().split())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not one corrupt file or bad entry
        got = Cache(root).measurements(make_key())
    assert len(acknowledged) > 30 and acknowledged <= set(got)


def _tuner(worker: int, rounds: int, out: str, start) -> None:
    start.wait()
    asked = []
    for r in range(rounds):
        bench = _Bench()
        import fake_kernel

        import autopad

        autopad.tune(fake_kernel, (1024 * (1 + r), 4096), "float32", benchmarker=bench, progress=False,
                     top_k=2 + worker % 3, refine=worker % 2, retune=True)  # fmt: skip
        asked += [(r, k) for k in bench.asked]
    Path(out).write_text(json.dumps(asked))


@pytest.mark.skipif("fork" not in mp.get_all_start_methods(), reason="needs fork")
def test_concurrent_tuners_lose_no_measurement(tmp_path):
    """8 processes tune the same 2 shapes at once (different top_k, so they measure different sets)."""
    _tune(top_k=1)  # warm before the fork (the model's first call compiles: seconds on a small machine)
    ctx = mp.get_context("fork")
    start = ctx.Event()
    procs = [ctx.Process(target=_tuner, args=(w, 2, str(tmp_path / f"asked{w}"), start)) for w in range(8)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(240)
        assert p.exitcode == 0
    c = Cache()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        files = {f["shape"][0] // 1024 - 1: f for f in c.entries() if f["shape"][0] < 4096}
        assert sorted(files) == [0, 1] and all(f["has_result"] and not f["problem"] for f in files.values())
        for r in range(2):
            key = CacheKey.from_dict({k: files[r][k] for k in (fl.name for fl in fields(CacheKey))})
            stored = set(c.measurements(key))
            asked = {
                k for w in range(8) for rr, k in json.loads((tmp_path / f"asked{w}").read_text()) if rr == r
            }
            assert asked and asked <= stored
