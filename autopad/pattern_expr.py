"""The expressions of ``autopad.pattern``: index arithmetic as text, compiled once and evaluated over numpy.

What: ``_expr`` turns an int or a text such as ``"ty + j"`` into an ``_Expr`` (its text, the names it reads,
the function ``autopad.expr`` compiled from its ``ast``, cached by text); calling it over an environment
(names -> ints or numpy arrays of lane and iteration values) gives ints or int64 arrays, and what numpy
lets pass silently (a division by zero, a float from a negative power) is an ``ExprError`` naming the
expression. ``_scalar`` evaluates a block-wide value (a loop bound, a width, a block dimension) and
insists that it is the same for every lane. ``evaluate`` is the public form of one evaluation.
``THREAD_NAMES`` are the thread indices a pattern binds per lane, ``RESERVED`` those and ``E`` (bytes per
element): names a constant, a let or a loop variable may not take.

Why a module of its own: the evaluator is what every access and the pattern share, and it has no notion of
warps, tiles or instructions; the declarations (pattern_access.py, pattern_gluon.py) and the pattern's
evaluation (pattern.py) build on it. Split out of ``autopad.pattern``, which re-exports every name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .expr import ExprError, compile_expr, names_in

__all__ = ["Expr", "THREAD_NAMES", "RESERVED", "evaluate"]

Expr = str | int
THREAD_NAMES = ("tx", "ty", "tz", "tid", "lane", "warp")
RESERVED = frozenset((*THREAD_NAMES, "E"))


@dataclass(frozen=True)
class _Expr:
    """One expression compiled by ``autopad.expr`` (cached by text): its text, the names it reads, and a call
    that turns what numpy lets pass silently (division by zero, a float from a negative power) into errors
    naming the expression."""

    text: str
    names: frozenset[str]
    fn: Callable[[Mapping[str, Any]], Any]

    def __call__(self, env: Mapping[str, Any]) -> Any:
        try:
            with np.errstate(divide="raise", invalid="raise"):
                v = self.fn(env)
        except ExprError:
            raise
        except (ZeroDivisionError, FloatingPointError):
            raise ExprError(f"expression {self.text!r}: division or modulo by zero") from None
        except (ValueError, TypeError, OverflowError) as e:
            raise ExprError(f"expression {self.text!r}: {e}") from None
        if isinstance(v, float) or (isinstance(v, np.ndarray) and v.dtype.kind == "f"):
            raise ExprError(f"expression {self.text!r}: gives {v!r}, not an integer (a negative power?)")
        return v


def _expr(x: object, what: str = "expression") -> _Expr:
    """Text or an int as a compiled expression."""
    if isinstance(x, _Expr):
        return x
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (str, int, np.integer)):
        raise ValueError(f"{what}: expected an int or text such as 'TILE // VEC', got {x!r}")
    text = x if isinstance(x, str) else str(int(x))
    return _Expr(text, names_in(text), compile_expr(text))


def evaluate(expr: Expr, env: Mapping[str, Any]) -> Any:
    """``expr`` over ``env`` (names -> ints or numpy arrays) with the pattern's checks; ints stay ints."""
    return _expr(expr)(env)


def _scalar(e: _Expr, env: Mapping[str, Any], what: str) -> int:
    """A block-wide value (a bound, a width, a block dimension): an int, the same for every lane."""
    try:
        v = e(env)
    except ValueError as err:
        raise ValueError(f"{what}: {err}") from None
    if isinstance(v, np.ndarray):
        if v.size != 1 and not (v == v.flat[0]).all():
            raise ValueError(
                f"{what} {e.text!r} differs between lanes; it must be the same for the whole block"
            )
        v = v.flat[0]
    return int(v)
