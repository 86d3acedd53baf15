"""Keys, results and measurements for the tuning-cache tests (test_cache, test_cache_file, test_cache_key)."""

from __future__ import annotations

import json
from dataclasses import replace

from autopad.cache_key import CacheKey
from autopad.results import Best, CandidateResult, Measurement, TuneResult
from autopad.search import Prediction


def make_key(shape=(1024, 1024), **kw) -> CacheKey:
    base = dict(
        kernel="transpose",
        shape=shape,
        dtype="float32",
        backend="cuda",
        gpu="NVIDIA H200",
        cc="90",
        source_hash="abc123",
        version="0.1.0",
    )
    base.update(kw)
    return CacheKey.make(**base)


def make_result(shape=(1024, 1024), pad=1, kernel="transpose") -> TuneResult:
    pred = Prediction(2e-5, "dram", 32, 32, 1.0, 4224)
    cands = (
        CandidateResult(
            {"PAD": 0, "TILE": 32},
            "unpadded",
            replace(pred, wavefronts_per_tile=1024),
            ("unpadded",),
            Measurement("PAD=0,TILE=32", True, 0.05, 0.001, 30),
        ),
        CandidateResult(
            {"PAD": pad, "TILE": 32},
            f"pad {pad}",
            pred,
            ("textbook",),
            Measurement(f"PAD={pad},TILE=32", True, 0.02, 0.001, 30),
        ),
        CandidateResult(
            {"PAD": 7, "TILE": 32},
            "pad 7",
            pred,
            (),
            Measurement("PAD=7,TILE=32", False, None, None, 0, "compile: boom"),
        ),
        CandidateResult({"PAD": 3, "TILE": 32}, "pad 3", pred),  # not measured
    )
    best = Best({"PAD": pad, "TILE": 32}, f"pad {pad}", 2e-5, 0.02)
    return TuneResult(
        kernel,
        "cuda",
        tuple(shape),
        "float32",
        "sm_90",
        "measured",
        "measured 3",
        best,
        cands,
        {"name": "NVIDIA H200", "cc": "90"},
        {"autopad": "0.1.0", "date": "2026-01-01"},
    )


def meas(key: str, ms: float = 0.1) -> Measurement:
    return Measurement(key, True, ms, 0.001, 30)


def edit_json(good: str, change) -> str:
    """``good`` (a cache file's text) with ``change`` applied to its parsed JSON."""
    d = json.loads(good)
    change(d)
    return json.dumps(d)


def set_field(*where, value=None, drop=False):
    """An edit of one field of a stored file: ``where`` is the path of keys into its JSON."""

    def change(d):
        for w in where[:-1]:
            d = d[w]
        if drop:
            del d[where[-1]]
        else:
            d[where[-1]] = value

    return change
