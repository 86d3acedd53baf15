"""Tests for autopad/kernel_base.py on the CPU: what a user's spec class gets from ``KernelBase`` (the check
of a candidate's outputs against the reference)."""

from __future__ import annotations

import pytest

import autopad

torch = pytest.importorskip("torch")


class _Copy(autopad.CudaKernel):
    SOURCE = 'extern "C" __global__ void copy(float* out, const float* in) {}'
    SPACE = {"TILE": (32, 64), "PAD": (0, 1)}
    SHAPE, BLOCK, GRID = ("N",), ("TILE",), ("cdiv(N, TILE)",)
    LAYOUT = autopad.tile(1, "TILE", pad="PAD")

    def arguments(self, shape, dtype):
        return [autopad.Out(shape), torch.randn(shape)]

    def reference(self, x):
        return x


NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize(
    "out, ref",
    [
        ([100.0, 5.0, -7.0], [1.0, NAN, 3.0]),  # one NaN in the reference made the error NaN: all passed
        ([100.0, INF, -7.0], [1.0, INF, 3.0]),  # an infinity did the same
        ([1.0, -INF, 3.0], [1.0, INF, 3.0]),  # the other infinity
        ([1.0, 2.0, 3.0], [1.0, NAN, 3.0]),  # a number where the reference is NaN
    ],
)
def test_a_wrong_output_fails_even_where_the_reference_holds_nan_or_inf(out, ref):
    ok, why = _Copy().check(torch.tensor(out), torch.tensor(ref))
    assert not ok, why


def test_nan_and_inf_where_the_reference_has_them_pass():
    ref = torch.tensor([1.0, NAN, INF, -INF])
    ok, why = _Copy().check(ref.clone(), ref)
    assert ok, why
    assert "nan" not in why


def test_complex_outputs_are_compared_in_both_parts():
    ref = torch.tensor([1 + 5j, 2 + 0j])
    ok, why = _Copy().check(torch.tensor([1 + 1j, 2 + 0j]), ref)  # was: the imaginary parts dropped
    assert not ok, why
    ok, why = _Copy().check(ref.clone(), ref)
    assert ok, why
