"""Brute force: measure every legal candidate, in the model's order (the budget, if any, still caps it)."""

from __future__ import annotations

from . import Measure, Options


def run(ranked: list, measure: Measure, options: Options) -> None:
    todo = ranked if options.budget is None else ranked[: options.budget]
    measure(todo)
