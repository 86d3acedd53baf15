"""autopad/kernel_base.py's ``legal_preamble``: the checks every built-in spec's ``legal`` starts with
(the constants given, the dtype, the shape where the spec's ``check_shape`` judges it), one implementation
with one reason each, and an incomplete candidate answered, never raised."""

from __future__ import annotations

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
    "cuda histogram_weighted": (CW.SPEC, (1 << 20, 1000), "int32", tuple(CW.SPEC.SPACE), True, "uint8"),
    "triton transpose": (TT.SPEC, (4096, 4096), "float16", TT._REQUIRED, False, "uint8"),
    "triton matmul": (TM.SPEC, (1024, 1024, 1024), "bfloat16", TMM._REQUIRED, True, "float32"),
    "triton histogram": (TH.SPEC, (1 << 20, 256), "int32", tuple(TH.SPEC.SPACE), True, "float32"),
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
