"""The Gluon accesses of ``autopad.pattern``: ``gluon_store`` and ``gluon_load`` of a whole shared tile.

What: a ``GluonAccess`` is a Gluon kernel's ``smem.store(x)`` or ``smem.load(L)`` of a ``shape`` tile, its
lanes given by the register layout (``gluon_model.Blocked``, whose fields may be expressions over the
constants), not by index arithmetic; ``count`` is executions per tile. The layout's fields and the shape are
parsed at definition, so a typo fails where the spec is written. The instructions (and their vector width,
which depends on the shared layout) come from ``gluon_model.instruction_arrays`` when the pattern is
evaluated (pattern.py).

Why a module of its own: these accesses share nothing with the thread-indexed ones (pattern_access.py) but
the expressions; they are what ``TritonKernel.SMEM_ACCESSES`` derives a pattern from. Split out of
``autopad.pattern``, which re-exports every name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .gluon_model import Blocked
from .pattern_expr import Expr, _Expr, _expr

__all__ = ["GluonAccess", "gluon_load", "gluon_store"]


@dataclass(frozen=True, eq=False)
class GluonAccess:
    """``smem.store(x)`` / ``smem.load(L)`` of a Gluon kernel: lanes follow its register layout."""

    op: str
    register: Blocked
    shape: tuple[_Expr, _Expr]
    count: _Expr
    name: str

    @property
    def label(self) -> str:
        return f"gluon_{self.op} {self.name!r}"

    def names(self) -> frozenset[str]:
        fields = (self.register.size_per_thread, self.register.threads_per_warp, self.register.warps_per_cta)
        parts = (
            [_expr(x).names for f in fields for x in f] + [s.names for s in self.shape] + [self.count.names]
        )
        return frozenset().union(*parts)


def _gluon(op: str, register: Blocked, shape: Sequence[Expr], count: Expr, name: str | None) -> GluonAccess:
    if not isinstance(register, Blocked):
        raise ValueError(f"gluon_{op}: register must be a gluon_model.Blocked, got {register!r}")
    if len(shape) != 2:
        raise ValueError(f"gluon_{op}: shape must be (rows, cols), got {shape!r}")
    label = name or f"{register.size_per_thread}x{register.threads_per_warp}x{register.warps_per_cta}"
    for f in (register.size_per_thread, register.threads_per_warp, register.warps_per_cta):
        for x in f:
            _expr(x, f"gluon_{op} {label!r}: register")  # parse now: errors at definition
    return GluonAccess(op, register, (_expr(shape[0]), _expr(shape[1])), _expr(count), label.replace(" ", ""))


def gluon_store(
    register: Blocked, shape: Sequence[Expr], count: Expr = 1, name: str | None = None
) -> GluonAccess:
    """A register tensor in layout ``register`` stored whole to a ``shape`` shared tile."""
    return _gluon("store", register, shape, count, name)


def gluon_load(
    register: Blocked, shape: Sequence[Expr], count: Expr = 1, name: str | None = None
) -> GluonAccess:
    """A ``shape`` shared tile loaded whole into registers of layout ``register``."""
    return _gluon("load", register, shape, count, name)
