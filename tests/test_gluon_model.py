"""autopad/gluon_model.py after its split (gluon_blocked, gluon_moves, gluon_triton): every name it defined is
still importable from it, as the very object of its new home, and the whole path from a register layout to
the model's wavefronts still holds through the old names. The moved code's tests live in the test file of
its new home."""

from __future__ import annotations

from split_checks import assert_reexported

from autopad import gluon_blocked, gluon_model, gluon_moves, gluon_triton
from autopad.layouts import Padded, Swizzled


def test_every_name_gluon_model_defined_is_the_object_of_its_new_home():
    homes = {
        gluon_blocked: "_FIELDS Blocked _bases _apply lane_elements",
        gluon_moves: "vector_cap _vector_bits _capped_bits vector_width instruction_arrays _arrays _lanes "
        "instructions Moves _moves moves score_layouts",
        gluon_triton: "to_gluon compile_sm90 _PROBE _probe_kernel _GL_DTYPES bank_conflicts_gluon SWEEP_SPT "
        "SWEEP_TPW SWEEP_WARPS SWEEP_SWIZZLES model_conflicts_per_wavefront _SUBWORD bank_conflict_sweep",
    }
    assert_reexported(gluon_model, homes)
    assert all(hasattr(gluon_model, n) for n in gluon_model.__all__) and len(gluon_model.__all__) == 11


def test_a_column_read_through_the_old_names():
    """The docstring's example: lanes 0..31 down one column of a [64, 64] fp32 tile (256-byte rows) hit one
    bank; a word of padding per row spreads them over all 32."""
    col = gluon_model.Blocked((1, 1), (32, 1), (1, 8), (0, 1))
    plain = gluon_model.score_layouts(col, (64, 64), Swizzled(64, 64, 4), "load")
    padded = gluon_model.score_layouts(col, (64, 64), Padded(64, 64, 4, pad=1), "load")
    assert plain.degree == 32 and padded.conflicts == 0
    assert gluon_model.model_conflicts_per_wavefront(col, (64, 64), Swizzled(64, 64, 4)) == 31
