"""A benchmark job and what both sides of the worker share: the job itself, the spec's picklable handle,
the check of its candidates' constants, and one line of an exception.

Why a module of its own: the job (``BenchJob``) is what the parent hands the worker process and what the
worker measures; the parent side (bench_pool.py) and the worker side (bench_local.py) both read it, and
neither needs the other's code. ``spec_ref`` turns a spec into something that pickles into the worker
without importing the user's main module there; ``load_spec`` turns it back.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from .spec import KernelSpec

__all__ = ["BenchJob", "spec_ref", "load_spec", "unknown_constants"]


def spec_ref(spec: KernelSpec) -> Any:
    """A picklable handle the worker can turn back into the spec: a module's name (and file), or the object
    serialised with cloudpickle, which carries a class defined in the user's script by value, so that the
    worker never imports (and so never re-runs) the user's main module."""
    impl = spec.impl
    if isinstance(impl, ModuleType):
        return ("module", impl.__name__, getattr(impl, "__file__", None))
    try:
        import cloudpickle
    except ImportError:  # objects of importable classes still pickle by reference
        return ("object", impl)
    return ("pickled", cloudpickle.dumps(impl))


def load_spec(ref: Any) -> KernelSpec:
    kind = ref[0]
    if kind == "module":
        _, name, path = ref
        try:
            return KernelSpec(importlib.import_module(name))
        except ImportError:
            if not path:
                raise
            spec = importlib.util.spec_from_file_location(name, path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)  # a user's kernel file that is not on the path
            return KernelSpec(mod)
    if kind == "pickled":
        import pickle

        return KernelSpec(pickle.loads(ref[1]))
    return KernelSpec(ref[1])


@dataclass(frozen=True)
class BenchJob:
    """What to measure: a spec, candidates (constants), one shape/dtype/input class, and how."""

    spec: Any  # spec_ref(...)
    candidates: tuple[tuple[str, dict[str, int]], ...]  # (key, constants)
    shape: tuple[int, ...]
    dtype: str
    dist: str = "uniform"
    seed: int = 0
    reps: int = 30
    warmup: int = 3
    device: int = 0
    # "time_budget_ms": fewer repeats (at least 3) for a candidate slower than budget / reps;
    # "placements": time each candidate on this many separate allocations, its slowest counting
    options: dict[str, Any] = field(default_factory=dict)


def unknown_constants(spec: Any, constants: Mapping[str, Any]) -> list[str]:
    """The names in ``constants`` that the spec's ``SPACE`` does not have (a spec without a SPACE: none).

    A build ignores a name it does not read, so a candidate written for another version of a spec (a
    constant since renamed) would run with the new constant at its default under the old label."""
    space = getattr(spec, "SPACE", None)
    if not space:
        return []
    return sorted(str(k) for k in constants if k not in space)


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text if len(text) <= 2000 else text[:2000] + " ..."
