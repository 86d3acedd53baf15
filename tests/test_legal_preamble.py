"""autopad/kernel_base.py's ``legal_preamble``: the checks every built-in spec's ``legal`` starts with
(the constants given, the dtype, the shape where the spec's ``check_shape`` judges it), one implementation
with one reason each, and an incomplete candidate answered, never raised."""

from __future__ import annotations

import numpy as np
import pytest
from autopad.kernels.cuda import histogram as CH
from autopad.kernels.cuda import histogram_weighted as CW
from autopad.kernels.cuda import matmul as CM
from autopad.kernels.cuda import transpose as CT
from autopad.kernels.triton import histogram as TH
from autopad.kernels.triton import matmul as TM
from autopad.kernels.triton import matmul_model as TMM
from autopad.kernels.triton import transpose as TT

from autopad.kernel_base import KernelBase

# (spec, a shape and dtype DEFAULTS is judged on, the constants legal needs given, does the preamble ask
# check_shape, a dtype the spec does not take)
CASES = {
    "cuda transpose": (CT.SPEC, (4096, 4096), "float32", CT._KEYS, False, "int32"),
    "cuda matmul": (CM.SPEC, (1024, 1024, 1024), "float32", tuple(CM.SPACE), False, "float16"),
    "cuda histogram": (CH.SPEC, (1 << 20, 256), "int32", tuple(CH.SPACE), True, "float32"),
    "cuda histogram_weighted": (CW.SPEC, (1 << 20, 1000), "int32", CW._REQUIRED, True, "uint8"),
    "triton transpose": (TT.SPEC, (4096, 4096), "float16", TT._REQUIRED, False, "uint8"),
    "triton matmul": (TM.SPEC, (1024, 1024, 1024), "bfloat16", TMM._REQUIRED, True, "float32"),
    "triton histogram": (TH.SPEC, (1 << 20, 256), "int32", TH._REQUIRED, True, "float32"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_builtin_spec_begins_with_the_shared_preamble(name):
    spec, shape, dtype, required, shaped, other = CASES[name]
    assert isinstance(spec, KernelBase)
    base = dict(spec.DEFAULTS)
    assert spec.legal_preamble(base, shape, dtype, required)
    for k in spec.SPACE:  # one constant left out: "missing" exactly when legal reads it without a default
        c = {j: v for j, v in base.items() if j != k}
        got = spec.legal(c, shape, dtype)
        if k in required:
            assert not got and got.reason == f"missing constants [{k!r}]", (k, got)
        else:
            assert "missing" not in got.reason, (k, got)
    got = spec.legal(base, shape, other)
    assert not got and got.reason == f"dtype {other} is not one of {spec.DTYPES}"
    bad = (*shape, 1, 1)  # no spec takes five dims
    with pytest.raises(ValueError) as exc:
        spec.check_shape(bad)
    got = spec.legal(base, bad, dtype)
    assert not got
    assert (got.reason == str(exc.value)) == shaped, got.reason


def test_the_preamble_asks_every_constant_of_space_by_default_and_the_shape_only_when_given():
    spec = CH.SPEC
    base = dict(spec.DEFAULTS)
    assert spec.legal_preamble(base, (1000, 256), "int32")
    assert spec.legal_preamble(base, None, "int32")  # no shape: check_shape is not asked
    assert spec.legal_preamble(base, (1000,), "int32").reason.startswith("histogram: shape is (n, bins)")
    assert spec.legal_preamble({}, (1000,), "float32").reason.startswith("missing constants")  # in order
    assert spec.legal_preamble({}, (1000, 256), "int32", keys=()).ok  # keys: what must be given


# ---- the batched twin: ``legal_batch_preamble``, and legal_batch row for row with legal ------------------

BATCHED = sorted(n for n, case in CASES.items() if callable(getattr(case[0], "legal_batch", None)))


def _rows(spec, seed=7, random_rows=200):
    """DEFAULTS, each constant of it moved to each value of SPACE (mostly legal), and random candidates
    (mostly not): as columns, constant -> int64 array."""
    base = dict(spec.DEFAULTS)
    rows = [base] + [{**base, k: v} for k, vals in spec.SPACE.items() for v in vals]
    rng = np.random.default_rng(seed)
    rows += [{k: int(rng.choice(v)) for k, v in spec.SPACE.items()} for _ in range(random_rows)]
    return {k: np.array([r[k] for r in rows], dtype=np.int64) for k in spec.SPACE}


def _one_by_one(spec, cols, shape, dtype):
    n = len(next(iter(cols.values())))
    rows = ({k: int(v[i]) for k, v in cols.items()} for i in range(n))
    return np.array([bool(spec.legal(c, shape, dtype)) for c in rows], dtype=bool)


def test_the_four_batched_specs_are_the_ones_checked():
    assert BATCHED == ["cuda histogram", "cuda matmul", "cuda transpose", "triton transpose"]


@pytest.mark.parametrize("name", BATCHED)
def test_legal_batch_begins_with_the_shared_batched_preamble(name, monkeypatch):
    spec, shape, dtype, required, shaped, other = CASES[name]
    cols, seen = _rows(spec), []
    refused = np.zeros(len(next(iter(cols.values()))), dtype=bool)

    def spy(self, columns, shape_, dtype_, keys=None):
        seen.append((shape_, dtype_, None if keys is None else tuple(keys)))
        return refused

    monkeypatch.setattr(type(spec), "legal_batch_preamble", spy)
    assert spec.legal_batch(cols, shape, dtype) is refused  # the preamble's refusal is the answer
    # asked as legal asks legal_preamble: the constants legal needs given, the shape where it is checked
    keys = None if set(required) == set(spec.SPACE) else tuple(required)
    assert seen == [(shape if shaped else None, dtype, keys)]


@pytest.mark.parametrize("name", BATCHED)
def test_legal_batch_agrees_with_legal_row_for_row_with_a_column_left_out(name):
    spec, shape, dtype, required, _, _ = CASES[name]
    cols = _rows(spec)
    n = len(next(iter(cols.values())))
    want = _one_by_one(spec, cols, shape, dtype)
    assert want.any() and not want.all()  # the sample holds both answers
    assert np.array_equal(spec.legal_batch(dict(cols), shape, dtype), want)
    for k in spec.SPACE:
        part = {j: v for j, v in cols.items() if j != k}
        got = spec.legal_batch(part, shape, dtype)  # never raises: a missing column is answered
        assert got.dtype == bool and got.shape == (n,), k
        assert np.array_equal(got, _one_by_one(spec, part, shape, dtype)), k
        if k in required:
            assert not got.any(), k
        else:  # read with legal's default: the DEFAULTS row stays legal
            assert got[0], k


@pytest.mark.parametrize("name", BATCHED)
def test_legal_batch_refuses_a_bad_dtype_or_shape_whole(name):
    spec, shape, dtype, _, _, other = CASES[name]
    cols = _rows(spec)
    n = len(next(iter(cols.values())))
    for s, d in ((shape, other), ((*shape, 1, 1), dtype), (shape, "no such dtype")):
        got = spec.legal_batch(dict(cols), s, d)
        assert got.dtype == bool and got.shape == (n,) and not got.any(), (s, d)
        assert not _one_by_one(spec, cols, s, d).any(), (s, d)
    assert spec.legal_batch({}, shape, dtype).shape == (0,)  # no column: no candidate, no exception


def test_the_batched_preamble_is_the_scalar_one_over_columns():
    spec = CH.SPEC
    cols = {k: np.full(5, v) for k, v in spec.DEFAULTS.items()}
    assert spec.legal_batch_preamble(cols, (1000, 256), "int32") is None  # the batch can be judged
    for c, shape, dtype, keys in (
        ({k: v for k, v in cols.items() if k != "PAD"}, (1000, 256), "int32", None),  # a constant missing
        (cols, (1000, 256), "float32", None),  # a dtype the spec does not take
        (cols, (1000,), "int32", None),  # check_shape refuses
    ):
        got = spec.legal_batch_preamble(c, shape, dtype, keys)
        assert got is not None and got.dtype == bool and got.shape == (5,) and not got.any()
    assert spec.legal_batch_preamble({"PAD": cols["PAD"]}, None, "int32", keys=("PAD",)) is None
