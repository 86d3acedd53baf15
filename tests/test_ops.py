"""autopad.ops without a GPU: argument checks, backend choice by dtype, each spec's own input form."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import autopad  # noqa: E402
from autopad.kernels_registry import builtin_spec  # noqa: E402
from autopad.ops import _spec_for  # noqa: E402


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: autopad.ops.transpose(torch.ones(4, 4)), "x: autopad.ops runs on CUDA tensors"),
        (lambda: autopad.ops.transpose([[1, 2]]), "x: expected a torch.Tensor"),
        (lambda: autopad.ops.histogram(torch.ones(4, dtype=torch.int32), 256), "x: autopad.ops runs on CUDA"),
        (lambda: autopad.ops.matmul(torch.ones(2, 3), torch.ones(3, 2)), "a: autopad.ops runs on CUDA"),
    ],
)
def test_bad_tensors_are_named(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_auto_backend_follows_the_dtype():
    assert _spec_for("matmul", "bfloat16", "auto").BACKEND == "triton"  # the CUDA GEMM is fp32 only
    assert _spec_for("matmul", "float32", "cuda").BACKEND == "cuda"
    assert "float32" in _spec_for("transpose", "float32", "auto").DTYPES


def test_specs_take_ops_arguments_in_their_own_form():
    a, b = torch.randn(5, 3), torch.randn(3, 7)
    _, bt = builtin_spec("matmul", "triton").inputs_from(a, b)
    assert bt.shape == (7, 3) and torch.equal(bt, b.t())  # the wgmma kernel reads B as [N, K]
    x = torch.zeros(10, dtype=torch.int32)
    _, marker = builtin_spec("histogram", "cuda").inputs_from(x, 300)
    assert tuple(marker.shape) == (300, 0)  # the bin count rides on an empty tensor
