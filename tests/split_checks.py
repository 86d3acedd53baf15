"""A check the tests of split modules share: the old module still serves each moved name, as the very
object of its new home (so an import from the old path and a patch of the new home agree)."""

from __future__ import annotations

from types import ModuleType


def assert_reexported(old: ModuleType, homes: dict[ModuleType, str]) -> None:
    """Each space-separated name listed for a home is ``old``'s attribute and ``is`` the home's."""
    for home, names in homes.items():
        for name in names.split():
            assert getattr(old, name) is getattr(home, name), (home.__name__, name)
