"""autopad/bench_job.py: a spec's handle survives the trip to the worker (a module by name or file, an object
by value), and a candidate's constants are checked against the spec's SPACE."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

from autopad.bench_job import BenchJob, _short, load_spec, spec_ref, unknown_constants
from autopad.kernels_registry import builtin_spec

TESTS = Path(__file__).resolve().parent


def test_a_builtin_spec_travels_by_module_name():
    spec = builtin_spec("transpose", "cuda")
    ref = spec_ref(spec)
    assert ref[0] == "module" and ref[1] == "autopad.kernels.cuda.transpose"
    back = load_spec(pickle.loads(pickle.dumps(ref)))
    assert back.NAME == "transpose" and back.SPACE == spec.SPACE


def test_a_kernel_file_off_the_path_is_loaded_from_its_file(monkeypatch):
    monkeypatch.delitem(sys.modules, "not_on_the_path_kernel", raising=False)
    ref = ("module", "not_on_the_path_kernel", str(TESTS / "fake_kernel.py"))
    spec = load_spec(ref)
    assert spec.NAME == "fake_transpose" and set(spec.SPACE) == {"TILE", "PAD", "VEC"}


def test_unknown_constants_names_what_the_space_lacks():
    spec = builtin_spec("histogram", "cuda")
    assert unknown_constants(spec, dict(spec.DEFAULTS)) == []
    assert unknown_constants(spec, {**spec.DEFAULTS, "ZZ": 1, "AA": 2}) == ["AA", "ZZ"]
    assert unknown_constants(object(), {"X": 1}) == []  # a spec without a SPACE: nothing to check


def test_a_job_pickles_and_an_exception_is_one_short_line():
    job = BenchJob(("object", None), (("k", {"A": 1}),), (16,), "float32", options={"time_budget_ms": 5})
    assert pickle.loads(pickle.dumps(job)) == job and job.reps == 30 and job.warmup == 3
    assert _short(ValueError("bad")) == "ValueError: bad"
    long = _short(RuntimeError("x" * 5000))
    assert len(long) == 2004 and long.endswith(" ...")


def test_a_spec_wrapped_twice_still_travels_and_resolve_does_not_wrap_again():
    import pytest

    from autopad.request import resolve
    from autopad.spec import KernelSpec

    spec = builtin_spec("transpose", "cuda")
    assert resolve(spec) is spec  # what resolve or builtin_spec returned is used as it is
    # a wrapper around a wrapper goes by value; unpickling it asked the unset ``impl`` for ``__setstate__``
    # and recursed until RecursionError (seen through autopad.bench.measure on a resolved spec)
    back = load_spec(spec_ref(KernelSpec(spec)))
    assert back.NAME == "transpose" and back.SPACE == spec.SPACE
    bare = KernelSpec.__new__(KernelSpec)  # as unpickling makes it, before its state is set
    with pytest.raises(AttributeError):
        getattr(bare, "impl")  # noqa: B009
    with pytest.raises(AttributeError):
        getattr(bare, "__setstate__")  # noqa: B009
