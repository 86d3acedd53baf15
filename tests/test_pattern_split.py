"""autopad.pattern was split into pattern_expr.py (the expressions), pattern_access.py (load/store/atomic),
pattern_gluon.py (gluon_load/gluon_store) and pattern.py (Pattern): every name it defined is still served
by autopad.pattern, as the very object of its new home, and each home is importable on its own."""

from __future__ import annotations

import importlib

from split_checks import assert_reexported

import autopad
from autopad import expr, gluon_model, pattern, pattern_access, pattern_expr, pattern_gluon


def test_every_name_of_the_old_module_is_served_from_its_new_home():
    homes = {
        pattern_expr: "Expr THREAD_NAMES RESERVED _Expr _expr _scalar evaluate",
        pattern_access: "Access _loops _access load store atomic",
        pattern_gluon: "GluonAccess _gluon gluon_load gluon_store",
        gluon_model: "Blocked",
        expr: "ExprError",
    }
    assert_reexported(pattern, homes)
    for name in pattern.__all__:
        assert getattr(pattern, name) is not None, name
    for name in ("Pattern", "load", "store", "atomic", "gluon_load", "gluon_store"):
        assert getattr(autopad, name) is getattr(pattern, name), name


def test_each_home_is_a_module_of_its_own_concern():
    """The evaluator knows nothing of accesses, and neither kind of access needs the Pattern machinery."""
    for name in ("pattern_expr", "pattern_access", "pattern_gluon"):
        mod = importlib.import_module(f"autopad.{name}")
        assert mod.__doc__ and not hasattr(mod, "Pattern") and not hasattr(mod, "_Block"), name
    assert not hasattr(pattern_expr, "Access") and not hasattr(pattern_expr, "GluonAccess")
    assert not hasattr(pattern_access, "GluonAccess") and not hasattr(pattern_gluon, "Access")
    # the declarations made in their homes are what Pattern takes
    a = pattern_access.load(row="tx", col="ty")
    p = pattern.Pattern(block=(32, 1), accesses=[a])
    assert p.accesses == (a,) and len(p.instructions({}, 4)) == 1
