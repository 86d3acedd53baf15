"""Search strategies: how a tune spends its measurements. Each is one small function, loaded by name.

A strategy sees the model's ranking and a ``measure`` callable, nothing else (the shape of Kernel Tuner's
``strategies/``): it decides which candidates to time, in what order, and when to stop. Measuring, the
cache, budgets, progress and the final pick (re-timing ties) belong to the tuner, so a strategy is a few
lines and cannot get them wrong:

    def run(ranked: list[Candidate], measure: Measure, options: Options) -> None

``measure(candidates)`` times the ones not timed yet (from the cache where it has them) and returns the
measurements of all it was given; given more new candidates than the budget has left it measures the
first of them, as many as the budget allows, and it stops between measurements once the time budget is
spent, returning what it has (either sets ``measure.exhausted``). Strategies register here by name and load
lazily:

- ``model`` (default): the model's shortlist (top_k, the baselines, the best layout of each of the top_k
  launch configurations), then the unpadded twins of the configurations measured close to the fastest and
  a local search from the fastest measured (``refine`` more at most, both together);
- ``brute_force``: every legal candidate, in the model's order (a reference, and what other tuners do);
- ``random``: a seeded uniform sample of ``budget`` candidates (or top_k + refine), plus the baselines.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["Options", "Measure", "STRATEGIES", "get", "names"]

STRATEGIES = {
    "model": "autopad.strategies.model",
    "brute_force": "autopad.strategies.brute_force",
    "random": "autopad.strategies.random_sample",
}


@dataclass(frozen=True)
class Options:
    """What a strategy may know: the spec (for its launch configurations and space), and its knobs."""

    spec: Any
    top_k: int = 6
    refine: int = 16
    budget: int | None = None
    seed: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


class Measure(Protocol):
    """The tuner's measuring callable, as a strategy sees it."""

    exhausted: bool

    def __call__(self, candidates: Sequence[Any]) -> dict[str, Any]: ...

    def measured(self) -> dict[str, Any]: ...


def names() -> list[str]:
    return sorted(STRATEGIES)


def get(name: str) -> Callable[[list[Any], Measure, Options], None]:
    """The strategy called ``name``; a ValueError lists the known ones."""
    if not isinstance(name, str) or name not in STRATEGIES:
        raise ValueError(f"strategy: {name!r} is not one of {', '.join(names())}")
    return importlib.import_module(STRATEGIES[name]).run
