"""autopad.cache_file: one cache file read and checked: bad files, bad entries dropped alone by name, the
head-only parse of a hit, the older layout, the size cap, symlinks and FIFOs (through ``Cache``, which
reads every file with it)."""

from __future__ import annotations

import json
import os
import re
import warnings

import pytest
from cache_fixtures import edit_json as _edit
from cache_fixtures import make_key, make_result, meas
from cache_fixtures import set_field as _set

from autopad.cache import _MEMO, Cache
from autopad.cache_file import FORMAT_VERSION

BAD_FILES = {
    "truncated": lambda good: good[: len(good) // 2],
    "corrupt": lambda good: "\x00\xff garbage {{{",
    "empty": lambda good: "",
    "not-a-dict": lambda good: "[1, 2, 3]",
    "foreign": lambda good: json.dumps({"hello": "world"}),
    "other-format": lambda good: _edit(good, lambda d: d.update(format_version=FORMAT_VERSION + 1)),
    "other-version": lambda good: good.replace('"0.1.0"', '"0.0.1"'),
    "other-key": lambda good: _edit(good, lambda d: d["key"].update(dtype="float16")),
    "float-shape-in-key": lambda good: _edit(good, lambda d: d["key"].update(shape=[1024.0, 1024])),
    "measurements-not-a-dict": lambda good: _edit(good, lambda d: d.update(measurements=[1])),
    "nesting-bomb": lambda good: "[" * 200_000 + "]" * 200_000,
}


@pytest.mark.parametrize("kind", sorted(BAD_FILES))
def test_bad_file_is_ignored_with_warning_and_replaced(kind):
    c, k = Cache(), make_key()
    c.put_measurements(k, {"PAD=1": meas("PAD=1")})
    c.put_result(k, make_result(), {"top_k": 1})
    path = c.path(k)
    bad = BAD_FILES[kind](path.read_text())
    assert bad != path.read_text()
    path.write_text(bad)
    with pytest.warns(UserWarning, match="ignoring .*" + path.name) as rec:
        assert c.load(k) == {}
    assert "replaces it" in str(rec[0].message)
    with pytest.warns(UserWarning):
        assert c.measurements(k) == {}
    with pytest.warns(UserWarning):
        assert c.get_result(k, {"top_k": 1}) is None
    assert any(e["problem"] for e in c.entries())
    with pytest.warns(UserWarning):  # the write replaces the bad file
        c.put_measurements(k, {"PAD=2": meas("PAD=2")})
    assert set(c.measurements(k)) == {"PAD=2"}
    assert json.loads(path.read_text())["key"] == k.to_dict()


M = ("measurements", "PAD=1")


BAD_MEASUREMENTS = {  # an edit of measurement PAD=1, and the field the warning must name
    "correct missing": (_set(*M, "correct", drop=True), "measurements['PAD=1'].correct: missing"),
    "correct 1": (_set(*M, "correct", value=1), "measurements['PAD=1'].correct: expected true or false"),
    "ms -1": (_set(*M, "ms", value=-1.0), "measurements['PAD=1'].ms: expected a finite number >= 0"),
    "ms fast": (
        _set(*M, "ms", value="fast"),
        "measurements['PAD=1'].ms: expected a number >= 0 or null",
    ),
    "ms NaN": (_set(*M, "ms", value=float("nan")), "measurements['PAD=1'].ms"),
    "ms null but correct": (
        _set(*M, "ms", value=None),
        "measurements['PAD=1'].ms: a correct measurement",
    ),
    "spread inf": (_set(*M, "spread_ms", value=float("inf")), "measurements['PAD=1'].spread_ms"),
    "runs 2.5": (_set(*M, "runs", value=2.5), "measurements['PAD=1'].runs: expected an integer"),
    "runs true": (_set(*M, "runs", value=True), "measurements['PAD=1'].runs: expected an integer"),
    "runs -3": (_set(*M, "runs", value=-3), "measurements['PAD=1'].runs: expected an integer >= 0"),
    "error 7": (_set(*M, "error", value=7), "measurements['PAD=1'].error: expected a string"),
    "misfiled": (_set(*M, "key", value="PAD=2"), "measurements['PAD=1'].key: 'PAD=2', another"),
    "not an object": (_set(*M, value=[1]), "measurements['PAD=1']: expected an object"),
}


@pytest.mark.parametrize("kind", sorted(BAD_MEASUREMENTS))
def test_a_bad_measurement_is_dropped_alone_naming_the_file_and_field(kind):
    c, k = Cache(), make_key()
    c.put_measurements(k, {"PAD=1": meas("PAD=1"), "PAD=2": meas("PAD=2", 0.3)})
    c.put_result(k, make_result(), {"top_k": 1})
    path = c.path(k)
    change, field = BAD_MEASUREMENTS[kind]
    path.write_text(_edit(path.read_text(), change))
    with pytest.warns(UserWarning, match=re.escape(path.name) + ".*" + re.escape(field)):
        got = c.measurements(k)
    assert "PAD=1" not in got and got["PAD=2"] == meas("PAD=2", 0.3)  # the rest are kept, unchanged
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a hit reads the result only: no warning about a measurement
        assert c.get_result(k, {"top_k": 1}) == make_result()
    with pytest.warns(UserWarning, match="dropping"):
        c.put_measurements(k, {"PAD=3": meas("PAD=3")})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the write removed it
        assert set(c.measurements(k)) == {"PAD=2", "PAD=3"} | set(c.measurements(k))
        assert "PAD=1" not in json.loads(path.read_text())["measurements"]


R = ("result", "result")


BAD_RESULTS = {  # an edit of the stored result, and the field the warning must name
    "PAD 1.0": (
        _set(*R, "best", "constants", "PAD", value=1.0),
        "best.constants['PAD']: expected an integer",
    ),
    "PAD true": (
        _set(*R, "best", "constants", "PAD", value=True),
        "best.constants['PAD']: expected an int",
    ),
    "THREADS text": (
        _set(*R, "best", "constants", "THREADS", value="2048"),
        "best.constants['THREADS']",
    ),
    "measured -1": (_set(*R, "best", "measured", value=-1.0), "best.measured: expected a finite number"),
    "best missing": (_set(*R, "best", drop=True), "missing field 'best'"),
    "candidate PAD 2.5": (
        _set(*R, "candidates", 1, "constants", "PAD", value=2.5),
        "candidates[1].constants['PAD']: expected an integer",
    ),
    "candidate ms fast": (
        _set(*R, "candidates", 1, "measurement", "ms", value="fast"),
        "candidates[1].measurement.ms",
    ),
    "prediction text": (
        _set(*R, "candidates", 0, "prediction", "seconds", value="1"),
        "prediction.seconds",
    ),
    "another shape": (_set(*R, "shape", value=[2048, 2048]), "not of this file's key"),
    "shape 0": (_set(*R, "shape", value=[0, 1024]), "shape: expected an integer >= 1"),
    "not an object": (_set("result", value=[1]), "expected an object with params and result"),
}


@pytest.mark.parametrize("kind", sorted(BAD_RESULTS))
def test_a_bad_stored_result_is_a_miss_naming_the_field_and_the_measurements_stay(kind):
    c, k = Cache(), make_key()
    c.put_result(k, make_result(), {"top_k": 1})
    _MEMO.clear()
    path = c.path(k)
    change, field = BAD_RESULTS[kind]
    path.write_text(_edit(path.read_text(), change))
    with pytest.warns(UserWarning, match=re.escape(path.name) + ".*stored result.*" + re.escape(field)):
        assert c.get_result(k, {"top_k": 1}) is None
    assert c.nearest(k) is None
    with pytest.warns(UserWarning, match="stored result"):
        assert set(c.measurements(k)) == {"PAD=0,TILE=32", "PAD=1,TILE=32", "PAD=7,TILE=32"}


def test_unreadable_stored_result_warns_and_misses():
    c, k = Cache(), make_key()
    c.put_result(k, make_result(), {"top_k": 1})
    data = json.loads(c.path(k).read_text())
    del data["result"]["result"]["best"]
    c.path(k).write_text(json.dumps(data))
    with pytest.warns(UserWarning, match="stored result"):
        assert c.get_result(k, {"top_k": 1}) is None


def test_a_hit_parses_only_the_head_of_the_file():
    c, k = Cache(), make_key()
    c.put_result(k, make_result(), {"top_k": 1})
    text = c.path(k).read_text()
    assert text.index('"result":') < text.index('"measurements":')  # the small part first
    # garbage in the measurements: a hit does not read them; a full read sees the damage
    c.path(k).write_text(text.replace('"measurements":{', '"measurements":{"x": nonsense, '))
    _MEMO.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert c.get_result(k, {"top_k": 1}) == make_result()
        assert c.nearest(make_key(shape=(1000, 1000)))[1] == make_result()
    with pytest.warns(UserWarning, match="corrupt JSON"):
        assert c.load(k) == {}


def test_files_of_the_older_layout_are_still_read():
    c, k = Cache(), make_key()
    c.put_result(k, make_result(), {"top_k": 1})
    data = json.loads(c.path(k).read_text())
    c.path(k).write_text(json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n")  # measurements first
    _MEMO.clear()
    assert c.get_result(k, {"top_k": 1}) == make_result()
    assert len(c.measurements(k)) == 3


def test_a_file_over_the_size_cap_is_refused_with_a_warning_and_replaced(monkeypatch):
    c, k = Cache(), make_key()
    c.put_measurements(k, {f"PAD={i}": meas(f"PAD={i}") for i in range(40)})
    c.put_result(k, make_result(), {"top_k": 1})
    _MEMO.clear()
    monkeypatch.setenv("AUTOPAD_CACHE_MAX_MB", "0.001")  # ~1 KB
    with pytest.warns(UserWarning, match=r"bytes, over the limit of 1,048 bytes .*AUTOPAD_CACHE_MAX_MB"):
        assert c.get_result(k, {"top_k": 1}) is None
    assert c.nearest(k) is None
    with pytest.warns(UserWarning, match="limit"):
        c.put_measurements(k, {"PAD=99": meas("PAD=99")})  # replaced by a small file
    monkeypatch.setenv("AUTOPAD_CACHE_MAX_MB", "not a number")  # falls back to the default, 32 MiB
    assert set(c.measurements(k)) == {"PAD=99"}


def test_a_symlink_or_fifo_in_place_of_a_cache_file_is_not_followed(tmp_path):
    c, k = Cache(), make_key()
    c.put_result(k, make_result(), {"top_k": 1})
    target = tmp_path / "elsewhere.json"
    os.replace(c.path(k), target)
    c.path(k).symlink_to(target)
    _MEMO.clear()
    with pytest.warns(UserWarning, match="symlink"):
        assert c.get_result(k, {"top_k": 1}) is None
    with pytest.warns(UserWarning, match="symlink"):
        c.put_measurements(k, {"PAD=5": meas("PAD=5")})
    assert not c.path(k).is_symlink() and json.loads(target.read_text())["measurements"].get("PAD=5") is None
    c.path(k).unlink()
    os.mkfifo(c.path(k))  # a reader opening a FIFO would wait for a writer forever
    with pytest.warns(UserWarning, match="not a regular file"):
        assert c.load(k) == {}
