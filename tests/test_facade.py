"""autopad._facade: an attribute set on a split module reaches every module that binds the name, reads of
names it does not bind come from their home, and a patch's undo restores both."""

from __future__ import annotations

import sys
import types

import pytest

from autopad import _facade


@pytest.fixture
def split(monkeypatch):
    """``old`` split into ``low`` (defines f and STATE) and ``high`` (imports f); ``old`` re-exports f."""
    low, high = types.ModuleType("fake_low"), types.ModuleType("fake_high")
    low.f, low.STATE = (lambda: "real"), None
    high.f = low.f
    old = types.ModuleType("fake_old")
    old.f = low.f
    old.__getattr__ = lambda name: _facade.lookup("fake_old", name)
    monkeypatch.setitem(sys.modules, "fake_old", old)
    _facade.install("fake_old", (low, high))
    return old, low, high


def test_setting_a_name_sets_it_in_every_module_that_binds_it(split, monkeypatch):
    old, low, high = split
    monkeypatch.setattr(old, "f", lambda: "fake")
    assert old.f() == low.f() == high.f() == "fake"
    monkeypatch.undo()
    assert old.f() == low.f() == high.f() == "real"


def test_state_the_home_rebinds_is_read_from_the_home(split):
    old, low, _ = split
    assert "STATE" not in vars(old) and old.STATE is None
    low.STATE = 5  # the home loads its library
    assert old.STATE == 5
    old.STATE = None  # a test resets it through the old module
    assert low.STATE is None and "STATE" not in vars(old)
    with pytest.raises(AttributeError, match="fake_old.*nothing"):
        old.nothing  # noqa: B018


def test_a_name_no_home_binds_is_the_old_modules_own(split):
    old, low, high = split
    old.extra = 1
    del old.f
    assert old.extra == 1 and not any(hasattr(m, "extra") for m in (low, high))
    assert "f" not in vars(old) and "f" not in vars(low) and "f" not in vars(high)
    old.__doc__ = "dunders stay the module's own"
    assert low.__doc__ is None


def test_deleting_a_name_served_from_its_home_undoes_the_assignments_in_turn(split):
    """pytest >= 9.2 records a patched module attribute missing from the module's __dict__ as absent and
    undoes the patch by deleting it: through a facade that puts the homes' values back, one assignment at a
    time, and never removes the home's own binding."""
    old, low, _ = split
    low.STATE = 5
    old.STATE = 6  # a patch (pytest 9.2's record: absent)
    old.STATE = 7  # a second one on top
    assert low.STATE == 7 and "STATE" not in vars(old)
    del old.STATE  # its undo
    assert low.STATE == 6
    del old.STATE
    assert low.STATE == 5 and old.STATE == 5


def test_a_deletes_undo_binds_the_name_again_in_every_home(split, monkeypatch):
    """``monkeypatch.delattr(old, "f")`` deletes f everywhere (as before the split: the module was its
    home); its undo sets f through the facade, which binds it again in the homes, not only in ``old``."""
    old, low, high = split
    real = low.f
    monkeypatch.delattr(old, "f")
    assert not any(hasattr(m, "f") for m in (old, low, high))
    monkeypatch.undo()
    assert old.f is low.f is high.f is real


def test_patches_undone_by_assignment_keep_nothing(split):
    """Older pytest undoes a patch by assigning the value it read: the values kept for a delete come off
    again, so a later delete removes the name instead of putting back an earlier patch's value."""
    old, low, _ = split
    low.STATE = "real"
    for i in range(3):
        old.STATE = f"fake{i}"  # the patch
        old.STATE = "real"  # its undo by assignment
    assert low.STATE == "real"
    del old.STATE
    assert not hasattr(low, "STATE")
