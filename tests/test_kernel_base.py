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


def test_expression_fields_of_numpy_ints_load_and_a_float_is_named():
    """An expression field may be an int of numpy's (it evaluates as one), and a float is a SpecError naming
    the field (review: the load check iterated a numpy int, a TypeError naming nothing)."""
    import numpy as np
    from own_kernel_example import Transpose

    from autopad.spec import KernelSpec, SpecError

    KernelSpec(type("Mine", (Transpose,), {"TILES_PER_BLOCK": np.int64(2), "FLOPS": np.int64(0)})())
    with pytest.raises(SpecError, match="FLOPS: expression 2000000000.0"):
        KernelSpec(type("Mine", (Transpose,), {"FLOPS": 2e9})())


def test_fields_a_subclass_reads_its_own_way_are_not_checked_and_block_sees_no_shape():
    """A spec that overrides grid() reads GRID (and other names) itself: GRID is left to it. Without SHAPE
    the dims are S0, S1, ... for the fields that see the shape, not for BLOCK, which does not."""
    from own_kernel_example import Transpose

    from autopad.spec import KernelSpec, SpecError

    class OwnGrid(Transpose):
        GRID = ("SMS", "1")  # read by its own grid(), not by the base's

        def grid(self, constants, shape, dtype="float32"):
            return (132, 1)

    KernelSpec(OwnGrid())
    no_shape = {"SHAPE": None, "GRID": ("cdiv(S1, TILE)", "cdiv(S0, TILE)")}
    KernelSpec(type("Mine", (Transpose,), no_shape)())
    with pytest.raises(SpecError, match="BLOCK: 'S0' names S0"):
        KernelSpec(type("Mine", (Transpose,), {**no_shape, "BLOCK": ("TILE", "S0")})())


def test_a_numpy_tolerance_is_used_and_a_conjugated_complex_reference_is_compared():
    """A TOLERANCE of numpy's passes the load check and is the one used (it was replaced by the default);
    a complex reference that is a lazy conjugate (x.conj()) is compared, not a RuntimeError."""
    import numpy as np
    from own_kernel_example import Transpose

    spec = type("Mine", (Transpose,), {"TOLERANCE": np.float32(0.5)})()
    assert spec._tolerance(torch.float32) == 0.5
    x = torch.tensor([1 + 2j, 3 - 1j], dtype=torch.complex64)
    assert spec.check(x.conj().resolve_conj(), x.conj())[0]
    assert not spec.check(x, x.conj())[0]
