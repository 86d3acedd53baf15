"""What a tune records and reads back: its cache key, the search parameters a cached result must match,
the result as cached, and the checks a cached pick must pass before it is trusted.

A result is cached under ``cache_key`` (autopad's version, the GPU's name and compute capability, backend,
kernel, the kernel's source hash, shape, dtype, input class) together with ``_search_params`` (a result
tuned with other parameters is not a hit; the space is a parameter, not part of the key, so adding a
candidate keeps the old timings). ``_for_cache`` keeps every measured candidate and the model's best
unmeasured ones (the full list is rebuilt by the model on a hit). ``_extra`` adds what exporters need
beyond the constants.

Why a module of its own: the record's form is what other modules share with the tuner (``cache_key`` is
also read by the CLI, the ops' policy and the Ray sweep), apart from how a tune measures
(tune_measure.py) and how its stages are wired (tune.py).
"""

from __future__ import annotations

import platform
import sys
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from . import __version__
from .kernels_registry import source_hash
from .request import Request
from .results import CandidateResult, Measurement, TuneResult
from .search import Candidate, check_legal
from .search_shortlist import PLAIN_MARGIN
from .spec import KernelSpec

__all__ = ["cache_key"]


def cache_key(
    spec: KernelSpec, shape: tuple[int, ...], dtype: str, dist: str | None, dev: dict[str, Any]
) -> Any:
    """The cache key of one tuning question on the device ``dev`` (``device.device_info``; {} = no GPU)."""
    from .cache import CacheKey

    return CacheKey(
        __version__,
        dev.get("name", ""),
        dev.get("cc", ""),
        spec.BACKEND,
        spec.NAME,
        source_hash(spec),
        shape,
        dtype,
        dist,
    )


def _environment() -> dict[str, Any]:
    env = {
        "autopad": __version__,
        "python": platform.python_version(),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }
    for mod in ("numpy", "torch", "triton"):
        m = sys.modules.get(mod)
        if m is not None:
            env[mod] = getattr(m, "__version__", "?")
    return env


def _extra(layout: Any, spec: KernelSpec, constants: dict[str, int]) -> dict[str, Any]:
    """What exporters need beyond the constants: the layout's parameters and its other spellings (CuTe
    ``Swizzle<B,M,S>``, the Gluon layout), and for Triton kernels the arguments the kernel takes."""
    extra: dict[str, Any] = {}
    if hasattr(layout, "to_dict"):
        try:
            extra["layout_spec"] = layout.to_dict()
        except ValueError:
            pass
    if getattr(layout, "max_phase", 1) > 1 and hasattr(layout, "to_cute"):
        try:
            extra["cute_swizzle"] = list(layout.to_cute())
        except ValueError:
            pass
    if hasattr(layout, "gluon_spec"):
        try:
            g = layout.gluon_spec()
        except ValueError:
            g = {}
        if g.get("kind") == "swizzled" and g.get("max_phase", 1) > 1:
            extra["gluon_layout"] = (
                f"gl.SwizzledSharedLayout(vec={g['vec']}, per_phase={g['per_phase']}, "
                f"max_phase={g['max_phase']}, order={g['order']})"
            )
        elif g.get("kind") == "padded" and g.get("interval_padding"):
            extra["gluon_layout"] = (
                f"gl.PaddedSharedLayout.with_identity_for({g['interval_padding']}, {g['shape']}, "
                f"{g['order']})"
            )
    # a built-in Triton kernel is a module whose spec object is its SPEC (the module re-exports only what
    # the tuner reads), so its launch (num_warps) is asked of SPEC: else a .py export's LAUNCH was {}
    owner = getattr(spec.impl, "SPEC", spec)
    for name, key in (("kernel_args", "kernel_args"), ("launch", "launch_options")):
        fn = getattr(spec, key, None) or getattr(owner, key, None)
        if callable(fn):
            try:
                extra[name] = fn(constants)
            except Exception:  # an exporter's nicety must never fail a tune
                pass
    return extra


_CACHED_UNMEASURED = 48


def _for_cache(res: TuneResult) -> TuneResult:
    """The result as cached: every measured candidate and baseline, and the model's best unmeasured ones.

    The full ranked list is rebuilt by the model on a hit (``LazyCandidates``), so the file stays small.
    """
    keep, rest = [], 0
    for c in res.candidates:
        if c.measurement is not None or c.roles or c.constants == res.best.constants:
            keep.append(c)
        elif rest < _CACHED_UNMEASURED:
            keep.append(c)
            rest += 1
    return TuneResult(**{**res.__dict__, "candidates": tuple(keep)})


def _search_params(req: Request, measuring: bool) -> dict[str, Any]:
    params: dict[str, Any] = {
        "top_k": req.top_k,
        "budget": req.budget,
        "refine": req.refine,
        "arch": req.arch,
        "measuring": measuring,
        "strategy": req.strategy,
        "seed": req.seed,
        # the space is a search parameter, not part of the key: adding a candidate keeps the old timings
        "space": {k: list(v) for k, v in sorted(req.spec.SPACE.items())},
    }
    if not measuring:
        # how the model-only answer is chosen (search_shortlist.model_pick): a model-only result cached
        # under an earlier rule (the first-ranked candidate, before 2026-12-04) is not this rule's answer
        params["answer"] = f"plain layout within {PLAIN_MARGIN:g}"
    return params


def _candidates(ranked: Sequence[Candidate], meas: dict[str, Measurement], cached: set[str]) -> tuple:
    return tuple(CandidateResult.from_candidate(c, meas.get(c.key), cached=c.key in cached) for c in ranked)


def _cached_pick_illegal(req: Request, hit: TuneResult) -> str | None:
    """Why a cached pick cannot run (a cache file is not trusted: anyone may have edited it), or None."""
    c = dict(hit.best.constants)
    if set(c) != set(req.spec.SPACE):
        return f"its constants {sorted(c)} are not the kernel's {sorted(req.spec.SPACE)}"
    try:
        ok = check_legal(req.spec, c, req.shape, req.dtype)
    except Exception as exc:  # legal() raising on foreign values is a no
        return f"legal() raised {type(exc).__name__}: {exc}"
    return None if ok else ok.reason
