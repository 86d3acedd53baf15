"""Tests for autopad/triton_kernel.py on the CPU: a Gluon spec's ``SMEM_ACCESSES`` mistakes are named."""

from __future__ import annotations

import pytest

pytest.importorskip("triton")

import own_kernel_gluon_example as ex  # noqa: E402

from autopad.spec import KernelSpec, SpecError  # noqa: E402

C = {"BM": 32, "BN": 32, "WARPS": 4, "PAD": 4}


@pytest.mark.parametrize(
    "accesses",
    [
        "IN",  # was "not enough values to unpack (expected 2, got 1)"
        ("store", "IN"),  # one pair, not a tuple of pairs: "too many values to unpack"
        (("store", "IN"), "load"),
    ],
)
def test_smem_accesses_that_are_not_pairs_are_named(accesses):
    spec = type("G", (ex.GluonTranspose,), {"SMEM_ACCESSES": accesses})()
    with pytest.raises(SpecError, match=r"SMEM_ACCESSES: give a tuple of \(op, layout name\) pairs"):
        spec.smem_pattern(C, "float32")


def test_the_readme_pairs_still_derive_the_pattern():
    assert ex.GluonTranspose().smem_pattern(C, "float32") is not None


def test_a_register_layout_or_launch_expression_naming_an_unknown_constant_is_refused_when_loaded():
    """A misspelt constant in a register layout's fields or in NUM_WARPS was a bare ExprError from inside
    tune() ("expression 'WARPZ': unknown name"); it is a SpecError naming the field when the spec loads."""
    from own_kernel_gluon_example import GluonTranspose

    from autopad.gluon_model import Blocked

    bad = {"IN": Blocked((1, 4), (4, 8), ("WARPZ", 1), (1, 0)), "OUT": GluonTranspose.REGISTER_LAYOUTS["OUT"]}
    with pytest.raises(
        SpecError, match=r"REGISTER_LAYOUTS\['IN'\]: 'WARPZ' names WARPZ, which is not one of"
    ):
        KernelSpec(type("Mine", (GluonTranspose,), {"REGISTER_LAYOUTS": bad})())
    with pytest.raises(SpecError, match=r"NUM_WARPS: 'WARPS \* E' names E"):  # evaluated over the constants
        KernelSpec(type("Mine", (GluonTranspose,), {"NUM_WARPS": "WARPS * E"})())
    KernelSpec(GluonTranspose())  # the README's example itself passes


def test_register_layouts_are_built_with_e_as_the_model_resolves_them():
    """A register layout's field may read E (the element's bytes), as the model's pattern does; build()
    resolved it over the constants alone, an ExprError at the first GPU build."""
    from own_kernel_gluon_example import GluonTranspose

    from autopad.gluon_model import Blocked

    lay = {
        "IN": Blocked((1, "16 // E"), (4, 8), ("WARPS", 1), (1, 0)),
        "OUT": GluonTranspose.REGISTER_LAYOUTS["OUT"],
    }
    spec = type("Mine", (GluonTranspose,), {"REGISTER_LAYOUTS": lay})()
    KernelSpec(spec)
    c = {"BM": 64, "BN": 64, "WARPS": 4, "PAD": 0}
    built = spec.build(c, "float32")
    assert list(built["kwargs"]["IN"].size_per_thread) == [1, 4]
