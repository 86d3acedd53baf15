"""One namespace for a module whose code was split into several (``autopad.cuda_runtime``, ``autopad.cache``).

What: ``install(name, homes)`` turns the module ``name`` into a ``Facade``: setting (or deleting) one of its
attributes also sets it in each of the ``homes`` (the modules its code moved to) that binds that name, and
``lookup`` serves, through the old module's PEP 562 ``__getattr__``, the names it does not bind itself, from
the first home that does.

Why: before a split the module was one namespace. ``monkeypatch.setattr(cuda_runtime, "_cuda_core", fake)``
(tests) or ``rt._LIBCUDA, rt._CU = stub, None`` (benchmarks/profile_ops_host.py) changed what every function
of it read. After the split those functions live in other modules, each with its own globals (a name one
module defines and others import is bound in each of them); a plain attribute set on the old module would
reach none of them. Forwarding the assignment to every module that binds the name keeps such a patch, and
its undo, taking effect where the code reads it. Reads of state a home rebinds as it runs (a library loaded
once: ``cuda_driver._CU``) are served from the home, never from a stale copy, because the old module does not
bind those names itself.

Only ``__setattr__``/``__delattr__`` are overridden, never attribute reads: a call through the old module
(``cuda_runtime.launch(...)``) costs what it cost before.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Sequence
from typing import Any

__all__ = ["Facade", "install", "lookup"]

_HOMES = "_facade_homes"  # the attribute of a Facade that lists its homes
_SAVED = "_facade_saved"  # name -> stack of the homes' values before each assignment through the facade
_DELETED = "_facade_deleted"  # name -> (the homes it was deleted from, whether the facade bound it too)


def _binders(module: types.ModuleType, name: str) -> list[types.ModuleType]:
    """The homes of ``module`` whose own namespace binds ``name`` (none for dunders: the module's own)."""
    if name.startswith("__") and name.endswith("__"):
        return []
    return [h for h in module.__dict__.get(_HOMES, ()) if name in h.__dict__]


class Facade(types.ModuleType):
    """A module whose code lives in other modules (its homes): an attribute set on it is set in each home
    that binds the name too, and on the module itself when it binds the name or no home does."""

    def __setattr__(self, name: str, value: Any) -> None:
        deleted = self.__dict__.get(_DELETED, {}).pop(name, None)
        if deleted is not None:  # a delete's undo (below): the name bound again where it was bound
            homes, own = deleted
            for home in homes:
                setattr(home, name, value)
            if own:
                super().__setattr__(name, value)
            return
        homes = _binders(self, name)
        if homes and name not in self.__dict__:
            # a name served from its homes: keep what they held, so that deleting the name through the
            # facade puts it back. pytest >= 9.2 undoes a monkeypatch of an attribute missing from the
            # module's own __dict__ by deleting it, which would otherwise remove the home's function;
            # older pytest undoes it by assigning the value it read, which takes the kept values off again
            stack = self.__dict__.setdefault(_SAVED, {}).setdefault(name, [])
            if stack and all(kept is value for _, kept in stack[-1]):
                stack.pop()
            else:
                stack.append([(home, home.__dict__[name]) for home in homes])
        for home in homes:
            setattr(home, name, value)
        if not homes or name in self.__dict__:
            super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        stack = self.__dict__.get(_SAVED, {}).get(name)
        if stack and name not in self.__dict__:  # the undo of an assignment above: the homes' values back
            for home, value in stack.pop():
                setattr(home, name, value)
            return
        homes, own = _binders(self, name), name in self.__dict__
        for home in homes:
            delattr(home, name)
        if not homes or own:
            super().__delattr__(name)
        if homes:  # kept, so that setting the name again (monkeypatch's undo) binds it in these homes too
            self.__dict__.setdefault(_DELETED, {})[name] = (homes, own)


def install(name: str, homes: Sequence[types.ModuleType]) -> None:
    """Make the module ``name`` (already in ``sys.modules``) a ``Facade`` over ``homes``; list a module that
    defines a name before the modules that import it (``lookup`` takes the first)."""
    module = sys.modules[name]
    module.__dict__[_HOMES] = tuple(homes)
    module.__class__ = Facade


def lookup(module_name: str, name: str) -> Any:
    """The value of ``name`` in the first home of the facade ``module_name`` that binds it (for the
    facade's ``__getattr__``); AttributeError as for any module when none does."""
    for home in sys.modules[module_name].__dict__.get(_HOMES, ()):
        if name in home.__dict__:
            return home.__dict__[name]
    raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
