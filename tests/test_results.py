"""Results read back from files are checked field by field: nothing coerced, every error naming its field."""

from __future__ import annotations

import json
import math

import pytest
from test_cache import make_result

from autopad.results import CandidateResult, Measurement, TuneResult, constants_from_dict


def test_round_trips_are_exact():
    res = make_result()
    assert TuneResult.from_dict(json.loads(json.dumps(res.to_dict()))) == res
    for c in res.candidates:
        assert CandidateResult.from_dict(c.to_dict()) == c
    m = Measurement("A=1", True, 1, 0, 30)  # an integer time is a number: kept, as a float
    assert Measurement.from_dict(m.to_dict()) == Measurement("A=1", True, 1.0, 0.0, 30)
    assert isinstance(Measurement.from_dict(m.to_dict()).ms, float)


@pytest.mark.parametrize(
    "change, field",
    [
        ({"correct": 1}, "measurement.correct: expected true or false, got 1"),
        ({"correct": "yes"}, "measurement.correct"),
        ({"ms": -1.0}, "measurement.ms: expected a finite number >= 0, got -1.0"),
        ({"ms": "fast"}, "measurement.ms: expected a number >= 0 or null, got 'fast'"),
        ({"ms": math.nan}, "measurement.ms"),
        ({"ms": math.inf}, "measurement.ms"),
        ({"ms": True}, "measurement.ms"),
        ({"ms": None}, "measurement.ms: a correct measurement needs its time"),
        ({"spread_ms": -0.5}, "measurement.spread_ms"),
        ({"runs": 2.0}, "measurement.runs: expected an integer, got 2.0"),
        ({"runs": True}, "measurement.runs: expected an integer, got True"),
        ({"runs": -1}, "measurement.runs: expected an integer >= 0"),
        ({"key": 5}, "measurement.key: expected a string"),
        ({"error": ["x"]}, "measurement.error: expected a string or null"),
    ],
)
def test_a_bad_measurement_field_is_a_value_error_naming_it(change, field):
    d = {**Measurement("A=1", True, 1.0, 0.01, 30).to_dict(), **change}
    with pytest.raises(ValueError) as err:
        Measurement.from_dict(d)
    assert field in str(err.value)


def test_a_measurement_needs_key_and_correct():
    with pytest.raises(ValueError, match="measurement.correct: missing"):
        Measurement.from_dict({"key": "A=1"})
    with pytest.raises(ValueError, match="expected an object"):
        Measurement.from_dict(["A=1", True])
    assert Measurement.from_dict({"key": "A=1", "correct": False}) == Measurement("A=1", False)


@pytest.mark.parametrize("value", [1.0, True, "1", None, [1], 2**0.5])
def test_constants_stay_integers(value):
    assert constants_from_dict({"PAD": 1, "TILE": -7}) == {"PAD": 1, "TILE": -7}  # legal() judges values
    with pytest.raises(ValueError, match=r"constants\['PAD'\]: expected an integer"):
        constants_from_dict({"PAD": value})


def _edited(path, value):
    d = make_result().to_dict()
    target = d
    for p in path[:-1]:
        target = target[p]
    target[path[-1]] = value
    return d


@pytest.mark.parametrize(
    "path, value, field",
    [
        (("best", "constants", "PAD"), 1.0, "best.constants['PAD']: expected an integer, got 1.0"),
        (("best", "constants", "PAD"), True, "best.constants['PAD']"),
        (("best", "measured"), -1.0, "best.measured"),
        (("best", "measured"), "fast", "best.measured"),
        (("best", "predicted"), math.nan, "best.predicted"),
        (("best", "layout"), 3, "best.layout: expected a string"),
        (("best", "extra"), [], "best.extra: expected an object"),
        (("shape",), [1024, 1024.0], "shape: expected an integer"),
        (("shape",), [1024, 0], "shape: expected an integer >= 1"),
        (("shape",), "1024x1024", "shape: expected a list"),
        (("kernel",), None, "kernel: expected a string"),
        (("dist",), 3, "dist: expected a string or null"),
        (("candidates",), {}, "candidates: expected a list"),
        (("candidates", 0, "constants", "TILE"), "32", "candidates[0].constants['TILE']"),
        (("candidates", 0, "roles"), "unpadded", "candidates[0].roles: expected a list"),
        (("candidates", 0, "cached"), 1, "candidates[0].cached: expected true or false"),
        (("candidates", 1, "measurement", "runs"), 30.0, "candidates[1].measurement.runs"),
        (("candidates", 2, "prediction", "wavefronts_per_tile"), 1.5, "prediction.wavefronts_per_tile"),
        (("candidates", 2, "prediction", "bound"), None, "prediction.bound"),
        (("candidates", 2, "prediction", "terms"), [["dram_s", "x"]], "prediction.terms['dram_s']"),
        (("candidates", 2, "prediction", "surprise"), 1, "prediction: unknown fields ['surprise']"),
        (("device",), "H200", "device: expected an object"),
    ],
)
def test_a_bad_result_field_is_a_value_error_naming_it(path, value, field):
    with pytest.raises(ValueError) as err:
        TuneResult.from_dict(_edited(path, value))
    assert field in str(err.value)


def test_a_missing_field_is_a_key_error():
    d = make_result().to_dict()
    del d["best"]["constants"]
    with pytest.raises(KeyError, match="constants"):
        TuneResult.from_dict(d)


def test_the_worker_records_a_bad_measurement_from_its_child_as_a_failure():
    """A child's NaN time (a timing bug) fails its candidate; the parent never crashes or picks it."""
    import fake_children

    from autopad.bench import BenchJob, Worker

    job = BenchJob(("object", None), (("nan1", {}), ("ok1", {})), (16,), "float32")
    got = {m.key: m for m in Worker(job, 30, 60, target=fake_children.child).results()}
    assert not got["nan1"].correct and "bad measurement: measurement.ms" in got["nan1"].error
    assert got["ok1"].correct
