"""Tests for autopad/kernel_base.py on the CPU: what a user's spec class gets from ``KernelBase`` (the check
of a candidate's outputs against the reference, the spec constants given as functions)."""

from __future__ import annotations

import pytest

import autopad
from autopad.layouts import Padded
from autopad.pattern import Pattern, store

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


def _layout(constants, dtype):
    return Padded(1, constants["TILE"], 4, pad=constants["PAD"])


def _pattern(constants, dtype):
    return Pattern(block=("TILE",), accesses=[store(row=0, col="tx")]).instructions(dict(constants), 4)


def _grid(constants, shape):
    return (-(-shape[0] // constants["TILE"]),)


def _block(constants, shape):
    return (constants["TILE"],)


def test_spec_constants_given_as_plain_functions_are_called_as_documented():
    """LAYOUT, PATTERN, GRID and BLOCK may be functions; a plain function set on the class must not become
    a method (it was called with the spec as an extra first argument: a TypeError)."""

    class Fns(_Copy):
        LAYOUT, PATTERN, GRID, BLOCK = _layout, _pattern, _grid, _block

    k, c = Fns(), {"TILE": 32, "PAD": 1}
    assert k.layout(c, "float32") == _layout(c, "float32")
    assert len(k.smem_pattern(c, "float32")) == len(_pattern(c, "float32"))
    assert k.grid(c, (100,)) == (4,) and k.block(c, (100,)) == (32,)
    assert k.legal(c, (100,), "float32")
    res = autopad.tune(Fns, (4096,), "float32", cache=False)
    assert set(res.best.constants) == {"TILE", "PAD"}


def test_a_method_named_like_a_constant_stays_a_method():
    class Method(_Copy):
        def LAYOUT(self, constants, dtype):  # noqa: N802  (the spec's name)
            return _layout(constants, dtype)

    assert Method().layout({"TILE": 64, "PAD": 0}, "float32") == _layout({"TILE": 64, "PAD": 0}, "float32")


@pytest.mark.parametrize(
    "fields, match",
    [
        # found before only when every candidate failed: "shape: ... has no legal candidate for shape"
        (
            {"GRID": ("cdiv(N, TILEX)", "cdiv(M, TILE)")},
            r"GRID: 'cdiv\(N, TILEX\)' names TILEX, which is not",
        ),
        ({"BLOCK": ("TILE", "ROWZ")}, r"BLOCK: 'ROWZ' names ROWZ"),
        # BLOCK is evaluated without the shape's names
        ({"BLOCK": ("TILE", "M // 8")}, r"BLOCK: 'M // 8' names M, which is not one of E, PAD, ROWS, TILE"),
        ({"FLOPS": "2 * M * N * TILE"}, r"FLOPS: '2 \* M \* N \* TILE' names TILE"),
        ({"GRID": ("N / TILE", "1")}, r"GRID: expression 'N / TILE': '/' is not integer arithmetic"),
    ],
)
def test_a_spec_expression_naming_what_it_is_not_given_is_refused_when_loaded(fields, match):
    from own_kernel_example import Transpose

    from autopad.spec import KernelSpec, SpecError

    with pytest.raises(SpecError, match=match):
        KernelSpec(type("Mine", (Transpose,), fields)())
    KernelSpec(Transpose())  # the README's example itself passes
