"""Tests for the swizzles (autopad/layout_swizzle.py) and the Swizzled tile: the CuTe <-> Gluon forms."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_layouts import cute_swizzle

from autopad.layouts import (
    Swizzled,
)

# ---- Swizzled and CuTe ------------------------------------------------------------------------------------


@st.composite
def swizzles(draw):
    """(rows, cols, elem, B, M, S) with a power-of-two row and M + B <= log2 cols <= M + S."""
    log_cols = draw(st.integers(1, 7))
    b = draw(st.integers(0, log_cols))
    m = draw(st.integers(0, log_cols - b))
    s = draw(st.integers(log_cols - m, log_cols - m + 4))
    rows = draw(st.integers(1, 80))
    elem = draw(st.sampled_from([1, 2, 4, 8]))
    return rows, 1 << log_cols, elem, b, m, s


@given(swizzles())
@settings(max_examples=150, deadline=None)
def test_cute_formula_gives_the_swizzled_offsets(params):
    rows, cols, elem, b, m, s = params
    lay = Swizzled.from_cute(b, m, s, rows, cols, elem)
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    expected = cute_swizzle(r * cols + c, b, m, s) * elem
    assert (lay.offsets(r, c) == expected).all()
    assert lay.to_cute() == (b, m, s)  # CuTe -> Gluon -> CuTe
    assert lay.footprint == rows * cols * elem


@given(swizzles())
@settings(max_examples=100, deadline=None)
def test_gluon_to_cute_round_trip(params):
    rows, cols, elem, b, m, s = params
    lay = Swizzled(
        rows, cols, elem, sw_vec=1 << m, per_phase=1 << (m + s - (cols.bit_length() - 1)), max_phase=1 << b
    )
    assert Swizzled.from_cute(*lay.to_cute(), rows, cols, elem) == lay  # Gluon -> CuTe -> Gluon
    spec = lay.gluon_spec()
    assert (spec["vec"], spec["per_phase"], spec["max_phase"]) == (lay.sw_vec, lay.per_phase, lay.max_phase)


@given(swizzles())
@settings(max_examples=100, deadline=None)
def test_swizzle_permutes_within_each_row(params):
    """A swizzle moves elements only within their own row and never onto each other (non-square tiles too)."""
    rows, cols, elem, b, m, s = params
    lay = Swizzled.from_cute(b, m, s, rows, cols, elem)
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    off = lay.offsets(r, c) // elem
    assert (off // cols == r).all()
    assert (np.sort(off, axis=1) == np.arange(cols) + cols * np.arange(rows)[:, None]).all()


def test_known_cute_forms():
    """Swizzle<5,0,5> is the 32x32 fp32 'col ^ row'; Swizzle<3,2,3> permutes 4-float chunks by row % 8."""
    assert Swizzled(32, 32, 4, sw_vec=1, per_phase=1, max_phase=32).to_cute() == (5, 0, 5)
    assert Swizzled.from_cute(3, 2, 3, 64, 32, 4) == Swizzled(64, 32, 4, sw_vec=4, per_phase=1, max_phase=8)
    assert Swizzled(32, 128, 4, sw_vec=1, per_phase=1, max_phase=32).to_cute() == (5, 0, 7)
    assert Swizzled(64, 32, 2, sw_vec=2, per_phase=2, max_phase=16).to_cute() == (4, 1, 5)


def test_cute_conversion_errors():
    with pytest.raises(ValueError, match="M \\+ S"):
        Swizzled.from_cute(3, 0, 3, 32, 32)  # would XOR column bits into column bits
    with pytest.raises(ValueError, match="beyond"):
        Swizzled.from_cute(4, 2, 5, 32, 32)  # bits [2, 6) of a 5-bit column
    with pytest.raises(ValueError, match="power-of-two"):
        Swizzled.from_cute(1, 0, 5, 32, 24)
    with pytest.raises(ValueError, match="power-of-two"):
        Swizzled(32, 24, 4, sw_vec=1, max_phase=8).to_cute()


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"sw_vec": 3}, "^sw_vec:"),
        ({"per_phase": 0}, "^per_phase:"),
        ({"max_phase": 6}, "^max_phase:"),
        ({"pad": 1}, "padding"),
        ({"sw_vec": 4, "max_phase": 16}, "^swizzle:"),  # 64 elements of a 32-element row
    ],
)
def test_swizzled_rejects_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Swizzled(32, 32, 4, **kwargs)


def test_swizzled_describe_and_defines():
    lay = Swizzled(32, 32, 4, sw_vec=4, per_phase=1, max_phase=8)
    assert "max_phase=8" in lay.describe()
    assert lay.cuda_defines() == {"PAD": 0, "SW_VEC": 4, "SW_PER_PHASE": 1, "SW_MAX_PHASE": 8}
    assert Swizzled(32, 32, 4).describe() == "unswizzled"
