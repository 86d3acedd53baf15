"""autopad/tune_record.py: the key and search parameters a tune is cached under, the result as cached (every
measured candidate, the model's best unmeasured ones), the exporters' extras, and why a cached pick that
cannot run is not trusted."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import fake_kernel
import pytest

from autopad import __version__
from autopad.kernels_registry import builtin_spec, source_hash
from autopad.layouts import Padded, Swizzled
from autopad.request import Request
from autopad.results import Best, CandidateResult, Measurement, TuneResult
from autopad.search import rank
from autopad.spec import KernelSpec
from autopad.tune_record import (
    _CACHED_UNMEASURED,
    _cached_pick_illegal,
    _candidates,
    _environment,
    _extra,
    _for_cache,
    _search_params,
    cache_key,
)

SHAPE = (4096, 4096)


def test_the_key_names_version_device_kernel_source_and_question():
    spec = KernelSpec(fake_kernel)
    key = cache_key(spec, SHAPE, "float32", None, {"name": "NVIDIA H200", "cc": "9.0"})
    assert (key.autopad_version, key.gpu, key.cc, key.kernel) == (
        __version__,
        "NVIDIA H200",
        "9.0",
        spec.NAME,
    )
    assert key.source_hash == source_hash(spec) and tuple(key.shape) == SHAPE and key.dtype == "float32"
    assert cache_key(spec, SHAPE, "float32", None, {}).gpu == ""  # no GPU: the model-only key


def _hash_if_changed(monkeypatch: pytest.MonkeyPatch, spec: KernelSpec, name: str) -> str:
    """``source_hash(spec)`` as if the file called ``name`` beside the spec's kernel had one more line."""
    read = Path.read_bytes

    def edited(path: Path) -> bytes:
        data = read(path)
        return data + b"\n# edited\n" if path.name == name else data

    with monkeypatch.context() as m:
        m.setattr(Path, "read_bytes", edited)
        return source_hash(spec)


# per CUDA spec: the files whose change must change the key (they decide what is built and launched), and
# the ones that must not (the space, the input classes and the model: a tune cached stays valid)
_KEYED = {
    "histogram": (
        ("histogram.cu", "common.cuh", "histogram.py", "histogram_launch.py"),
        ("histogram_space.py", "histogram_inputs.py", "histogram_pattern.py", "histogram_cost.py"),
    ),
    "histogram_weighted": (
        ("histogram.cu", "common.cuh", "histogram_weighted.py", "histogram_launch.py"),
        ("histogram.py", "histogram_space.py", "histogram_pattern.py", "histogram_cost.py"),
    ),
    "transpose": (
        (
            "transpose.cu",
            "common.cuh",
            "transpose.py",
            "transpose_tile.py",
            "transpose_space.py",
            "transpose_pattern.py",
            "transpose_cost.py",
            "transpose_launch.py",
            "transpose_regs.py",
        ),
        ("matmul.py", "matmul_cost.py"),
    ),
    "matmul": (
        (
            "matmul.cu",
            "common.cuh",
            "matmul.py",
            "matmul_tile.py",
            "matmul_space.py",
            "matmul_cost.py",
            "matmul_regs.py",
        ),
        ("transpose.py", "transpose_cost.py"),
    ),
}


@pytest.mark.parametrize("name", sorted(_KEYED))
def test_the_source_hash_follows_the_python_that_builds_and_launches(monkeypatch, name):
    """A CUDA spec's cache key hashes the kernel source and the Python modules that choose its macros,
    the kernels built and the launch geometry: a change to one of them must not reuse the old timings."""
    spec = builtin_spec(name, "cuda")
    base = source_hash(spec)
    keyed, free = _KEYED[name]
    for f in keyed:
        assert _hash_if_changed(monkeypatch, spec, f) != base, f
    for f in free:
        assert _hash_if_changed(monkeypatch, spec, f) == base, f
    assert source_hash(spec) == base
    listed = {Path(f).name for f in spec.SOURCE_FILES}
    assert listed == set(keyed) and all(Path(f).is_file() for f in spec.SOURCE_FILES)


def test_the_search_parameters_hold_the_space_not_the_key():
    req = Request.make(fake_kernel, SHAPE, "float32", top_k=3, budget=9)
    p = _search_params(req, True)
    assert p["top_k"] == 3 and p["budget"] == 9 and p["measuring"] is True and p["strategy"] == "model"
    assert p["space"] == {k: list(v) for k, v in sorted(fake_kernel.SPACE.items())}


def _result(ranked, measured_keys):
    meas = {k: Measurement(k, True, ms=1.0, spread_ms=0.0, runs=30) for k in measured_keys}
    w = ranked[-1]
    best = Best(dict(w.params), repr(w.layout), w.prediction.seconds, None)
    res = TuneResult(fake_kernel.NAME, "cuda", SHAPE, "float32", "sm_90", "measured", "", best,
                     _candidates(ranked, meas, set()), {}, _environment())  # fmt: skip
    return res, w


def test_the_cached_result_keeps_every_measured_candidate_and_the_models_best_unmeasured():
    ranked = rank(KernelSpec(fake_kernel), SHAPE, "float32")
    many = ranked * 5  # more unmeasured candidates than are kept
    res, w = _result(many, [ranked[3].key])
    kept = _for_cache(res).candidates
    assert all(isinstance(c, CandidateResult) for c in kept)
    assert sum(c.measurement is not None for c in kept) >= 1 and any(c.constants == w.params for c in kept)
    unmeasured = [c for c in kept if c.measurement is None and not c.roles and c.constants != w.params]
    assert len(unmeasured) == _CACHED_UNMEASURED < len(many)
    assert "numpy" in res.environment and res.environment["autopad"] == __version__


def test_a_cached_pick_with_foreign_or_illegal_constants_is_not_trusted():
    req = Request.make(fake_kernel, SHAPE, "float32")
    ranked = rank(req.spec, SHAPE, "float32")
    res, _ = _result(ranked, [])

    def with_pick(constants):
        return dataclasses.replace(res, best=dataclasses.replace(res.best, constants=constants))

    assert _cached_pick_illegal(req, with_pick(ranked[0].params)) is None
    foreign = _cached_pick_illegal(req, with_pick({**ranked[0].params, "X": 1}))
    assert "are not the kernel's" in foreign
    misaligned = {"TILE": 32, "PAD": 1, "VEC": 2}  # PAD 1 misaligns VEC 2: legal() says why
    assert (
        _cached_pick_illegal(req, with_pick(misaligned))
        == fake_kernel.legal(misaligned, SHAPE, "float32").reason
    )


def test_extra_spells_the_layout_for_exporters():
    spec = KernelSpec(fake_kernel)
    sw = _extra(Swizzled(64, 64, 2, sw_vec=8, per_phase=1, max_phase=8), spec, {})
    assert sw["layout_spec"]["kind"] == "tile" and len(sw["cute_swizzle"]) == 3
    assert sw["gluon_layout"].startswith("gl.SwizzledSharedLayout(vec=8, per_phase=1, max_phase=8")
    pad = _extra(Padded(32, 32, 4, pad=1), spec, {})
    assert (
        pad["gluon_layout"].startswith("gl.PaddedSharedLayout.with_identity_for(")
        and "cute_swizzle" not in pad
    )


_TRANSPOSE_8_WARPS = {"BM": 32, "BN": 128, "MAX_PHASE": 1, "PAD": 2, "PER_PHASE": 1, "SW_VEC": 1, "VEC": 2}
_HISTOGRAM_8_WARPS = {"BLOCK": 4096, "GRID": 8, "ITERS": 4, "PAD": 0, "PATH": 1, "R": 8}


@pytest.mark.parametrize(
    "name, dtype, constants",
    [("transpose", "float16", _TRANSPOSE_8_WARPS), ("histogram", "int32", _HISTOGRAM_8_WARPS)],
)
def test_extra_carries_the_launch_of_a_builtin_triton_kernel(name, dtype, constants):
    """The built-in Triton kernels are modules whose spec object is ``SPEC``: the launch (num_warps) must
    still reach the .py export, else its LAUNCH is {} and triton_config() launches with Triton's default
    4 warps whatever WARPS was tuned."""
    spec = builtin_spec(name, "triton", dtype)
    extra = _extra(None, spec, {**constants, "WARPS": 8})
    assert extra["launch"]["num_warps"] == 8
    assert "kernel_args" in extra
