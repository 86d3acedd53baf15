"""autopad.ops without a GPU: arguments checked and named, backends chosen by dtype, the lazy import."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import autopad  # noqa: E402
from autopad.ops import plans  # noqa: E402


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


def _cuda(*shape, dtype=torch.float32):
    """A fake CUDA tensor: the checks run before anything touches a device."""
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

    return FakeTensor(
        FakeTensorMode(), torch.empty(*shape, device="meta", dtype=dtype), torch.device("cuda", 0)
    )


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: autopad.ops.transpose(_cuda(5)), "x: transpose takes a tensor of at least 2 dims"),
        (lambda: autopad.ops.transpose(_cuda(3, 3), backend="gpu"), "backend: 'gpu' is not one of"),
        (lambda: autopad.ops.histogram(_cuda(9, dtype=torch.int32), 0), "bins: must be a positive int"),
        (lambda: autopad.ops.histogram(_cuda(9, dtype=torch.int32), True), "bins: must be a positive int"),
        (lambda: autopad.ops.histogram(_cuda(3, 3, dtype=torch.int32), 4), "x: histogram takes a 1-D"),
        (lambda: autopad.ops.histogram(_cuda(9), 4), "x: histogram counts integers"),
        (lambda: autopad.ops.histogram(_cuda(9, dtype=torch.int32), 4, _cuda(8)), "weights: shape"),
        (
            lambda: autopad.ops.histogram(_cuda(9, dtype=torch.int32), 4, torch.ones(9)),
            "weights: autopad.ops",
        ),
        (lambda: autopad.ops.matmul(_cuda(2, 3), _cuda(4, 2)), r"a, b: need \[M, K\] and \[K, N\]"),
        (
            lambda: autopad.ops.matmul(_cuda(2, 3), _cuda(3, 2, dtype=torch.float16)),
            "a, b: dtypes differ",
        ),
    ],
)
def test_bad_arguments_are_named(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_auto_backend_follows_the_dtype():
    assert plans.plan_matmul(8, 8, 8, "bfloat16").spec.BACKEND == "triton"  # the CUDA GEMM is fp32 only
    assert plans.plan_matmul(8, 8, 8, "float32").spec.BACKEND == "cuda"
    assert plans.plan_matmul(8, 8, 8, "float32", "cuda").spec.BACKEND == "cuda"
    t = plans.plan_transpose((4, 4), "float32")
    assert t.spec.BACKEND == "cuda" and t.view is None and "float32" in t.spec.DTYPES


def test_transpose_moves_any_dtype_as_one_of_its_own_size():
    for dtype, view in [("int32", "float32"), ("int64", "float64"), ("bool", "uint8"), ("int16", None)]:
        p = plans.plan_transpose((4, 4), dtype)
        size = plans.SIZES[dtype]
        assert (p.view or p.dtype) in p.spec.DTYPES and plans.SIZES[p.dtype] == size
        if view is not None:
            assert p.view == view
    with pytest.raises(ValueError, match="complex128 has 16"):
        plans.plan_transpose((4, 4), "complex128")


def test_tune_modes_and_reuse_tolerance_are_public():
    assert autopad.ops.TUNE_MODES == ("first-use", "always", "never", "offline")
    assert 0 < autopad.ops.REUSE_TOLERANCE <= 0.05
    assert autopad.ops.decisions() == [] or isinstance(autopad.ops.decisions(), list)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: torch.ops.autopad.transpose(torch.ones(4, 4)), "x: autopad.ops runs on CUDA tensors"),
        (
            lambda: torch.ops.autopad.histogram(torch.ones(4, dtype=torch.int32), 8),
            "x: autopad.ops runs on CUDA tensors",
        ),
        (lambda: torch.ops.autopad.matmul(torch.ones(2, 3), torch.ones(3, 2)), "a: autopad.ops runs on CUDA"),
    ],
)
def test_the_registered_operators_refuse_cpu_tensors_by_name(call, match):
    """``torch.ops.autopad.*`` (README: "These are PyTorch operators"), and so a compiled graph, on CPU
    tensors: the public function's ValueError, not the dispatcher's NotImplementedError."""
    autopad.ops.register()
    with pytest.raises(ValueError, match=match):
        call()


def test_histogram_bins_beyond_int32_are_refused():
    """The kernels take the bin count as a C int: 2**31 bins or more would wrap."""
    assert plans.plan_histogram(9, 2**31 - 1, "int32").shape == (9, 2**31 - 1)
    for bins in (2**31, 2**40):
        with pytest.raises(ValueError, match="bins: .* at most 2147483647"):
            plans.plan_histogram(9, bins, "int32")
    with pytest.raises(ValueError, match="bins"):
        plans.plan(plans.Item("histogram", (9, 2**31), "int32"))


def test_histogram_plans_refuse_an_unknown_input_class():
    with pytest.raises(ValueError, match="dist: 'Skewed' is not one of uniform, skewed, single, sorted"):
        plans.plan_histogram(9, 4, "int32", "Skewed")
    assert plans.plan_histogram(9, 4, "int32", "skewed", "float32").dist == "skewed"
