"""Tests for autopad/spec.py: ``KernelSpec`` refuses a spec's static mistakes when it wraps it, naming the
field and what it may be (here: the optional fields a user's spec class sets)."""

from __future__ import annotations

import pytest

import autopad
from autopad.spec import KernelSpec, SpecError


class _Spec(autopad.CudaKernel):
    SOURCE = "__global__ void k() {}"
    SPACE = {"TILE": (32, 64), "ROWS": (4, 8), "PAD": (0, 1)}
    SHAPE, BLOCK, GRID = ("M", "N"), ("TILE", "ROWS"), ("cdiv(N, TILE)", "cdiv(M, TILE)")
    LAYOUT = autopad.tile("TILE", "TILE", pad="PAD")


def _with(**fields):
    return type("Mine", (_Spec,), fields)()


def test_a_well_formed_spec_is_taken():
    KernelSpec(_with(RESTRICTIONS=["ROWS <= TILE", lambda c: c["PAD"] < 2], TOLERANCE={"float32": 1e-4}))


@pytest.mark.parametrize(
    "fields, match",
    [
        # a lone string was iterated character by character: "expression ' ': not valid syntax"
        ({"RESTRICTIONS": "ROWS <= TILE"}, r"RESTRICTIONS: give a tuple of expressions or functions"),
        ({"RESTRICTIONS": lambda c: True}, r"RESTRICTIONS: give a tuple of expressions or functions"),
        # a name given as a string was read letter by letter: "names constants not in SPACE (['P', 'A', 'D'])"
        ({"FAMILY_KEYS": "PAD"}, r"FAMILY_KEYS: give a tuple of constant names such as \('PAD',\)"),
        ({"FAMILY_KEYS": ("VEC",)}, r"FAMILY_KEYS: \('VEC',\) names constants not in SPACE \(\['VEC'\]\)"),
        # a string or None tolerance was silently replaced by the default
        ({"TOLERANCE": "1e-3"}, r"TOLERANCE: a number, or a dict of dtype name -> number"),
        ({"TOLERANCE": {"float32": "1e-3"}}, r"TOLERANCE: a number, or a dict of dtype name -> number"),
        ({"TOLERANCE": -1.0}, r"TOLERANCE: a number, or a dict of dtype name -> number"),
    ],
)
def test_static_mistakes_are_named(fields, match):
    with pytest.raises(SpecError, match=match):
        KernelSpec(_with(**fields))


def test_space_of_numpy_integers_says_how_to_give_ints():
    """A SPACE built from a numpy array holds numpy integers, which are no Python ints (they would reach the
    #defines and the cache's JSON as such): refused when the spec loads, with the conversion to write."""
    import numpy as np

    spec = _with(SPACE={"TILE": tuple(np.array([32, 64])), "ROWS": (4, 8), "PAD": (0, 1)})
    with pytest.raises(
        SpecError, match=r"'TILE' holds .*Python int \(a numpy integer: write tuple\(int\(x\)"
    ):
        KernelSpec(spec)
