"""The shape policy: which constants an op runs with on a shape it has not run before. numpy only.

Why a policy, not "the nearest tuned shape": on the H200 (2026-12-01) reusing the nearest shape's pick lost
up to 4x. fp16 4097x8191 transposed with the constants tuned on 16384^2 moved 16-byte vectors over rows that
are not whole vectors (the kernel's scalar path: 0.28x a plain Triton transpose), and 4096 bins counted
with the 256-bin constants made 16 passes over the input (0.47x ``torch.bincount``). Both are visible to
the model: alignment through the spec's ``dram_efficiency``, passes through ``launch_info``'s ``passes``
and the wave and size terms through the predicted time. So, for a new (kernel, shape, dtype, input class)
on this GPU:

1. a result tuned for exactly this shape: its pick;
2. else the model ranks the space on this shape, and the nearest tuned shape's pick (``Cache.nearest``)
   is reused only if it is legal here, makes no more passes over the data and streams no worse (the
   launch_info's ``passes`` and ``dram_efficiency`` against the model's best), and the model predicts it
   within ``REUSE_TOLERANCE`` of its own best for this shape. A reused pick is so never predicted slower
   than the untuned model pick by more than that, and it has been measured fast on a shape like this one;
3. else, by ``AUTOPAD_TUNE``: ``first-use`` (the default) tunes now, once, and says so; ``always`` tunes
   every new shape (and skips step 2); ``never`` takes the model's answer (``search_shortlist.model_pick``,
   as a model-only tune) with a warning per shape; ``offline`` (serving: nothing is ever tuned in line)
   takes it too, warns once per process and
   records the shape (``untuned()``, and ``AUTOPAD_UNTUNED_FILE`` if set) for ``autopad.ops.pretune``.

A decision is made once per shape per process (the caller memoises the bound kernel); nothing here runs on
the hot path.
"""

from __future__ import annotations

import os
import threading
import time
import warnings
from dataclasses import dataclass
from typing import Any

from ..device import device_info
from ..search import baselines, check_legal, predict, rank
from ..search_shortlist import model_pick
from ..spec import KernelSpec

__all__ = [
    "TUNE_MODES",
    "REUSE_TOLERANCE",
    "Decision",
    "AutopadTuningWarning",
    "tune_mode",
    "decide",
    "reusable",
    "untuned",
    "normalize_dist",
]

TUNE_MODES = ("first-use", "always", "never", "offline")
REUSE_TOLERANCE = 0.03  # a neighbour's pick is reused when predicted within 3% of the model's best
# what a first-use tune takes on the H200: 14-47 s a shape on 2026-12-01; with the spare workers
# (2026-12-04, runs 130 and 132) 11.4-21.7 s: transposes 13.2-14.9 s, fp64 16384^2 21.7, the weighted
# histogram 11.6, the bf16 Gluon GEMM 4096^3 14.0
TUNE_SECONDS = "10-30 s"
TUNE_OPTIONS: dict[str, Any] = {}  # extra autopad.tune arguments for in-line tunes (top_k, refine, ...)

_LOCK = threading.Lock()
_ANNOUNCED = False
_WARNED_OFFLINE = False
_UNTUNED: list[tuple[str, tuple[int, ...], str, str | None]] = []


class AutopadTuningWarning(UserWarning):
    """autopad is tuning in line, or running an untuned shape: filter it like any warning."""


def tune_mode() -> str:
    """``AUTOPAD_TUNE``: one of ``TUNE_MODES`` (default ``first-use``); anything else is a ValueError."""
    mode = os.environ.get("AUTOPAD_TUNE", "") or "first-use"
    if mode not in TUNE_MODES:
        raise ValueError(f"AUTOPAD_TUNE: {mode!r} is not one of {', '.join(TUNE_MODES)}")
    return mode


def normalize_dist(spec: KernelSpec, dist: str | None) -> str | None:
    """The input class as ``tune`` keys it: the spec's first class by default, None for a spec without.
    A class the spec does not name is a ValueError, as in ``tune`` (``Request``): under
    ``AUTOPAD_TUNE=never`` / ``offline`` nothing else would refuse it, and a misspelt class would run (and
    be listed for ``pretune``, which refuses it) where the default mode's tune refuses it."""
    dists = getattr(spec, "DISTS", None)
    if not dists:
        if dist:
            raise ValueError(f"dist: {spec.NAME} takes no input class, got {dist!r}")
        return None
    if dist and dist not in dists:
        raise ValueError(f"dist: {dist!r} is not one of {', '.join(dists)}")
    return dist or dists[0]


@dataclass(frozen=True)
class Decision:
    """What to run a shape with, and why: ``source`` is "tuned", "reused", "model" or "tuned now"."""

    constants: tuple[tuple[str, int], ...]
    source: str
    detail: str = ""

    @property
    def params(self) -> dict[str, int]:
        return dict(self.constants)


def _freeze(c: dict[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((str(k), int(v)) for k, v in c.items()))


def _shape_text(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape))


def _arch(dev: dict[str, Any]) -> str:
    from ..arch import arch_for_device

    return arch_for_device(dev.get("cc", ""), dev.get("name", ""))  # the rule tune() uses


def reusable(
    spec: KernelSpec,
    constants: dict[str, int],
    shape: tuple[int, ...],
    dtype: str,
    dist: str | None,
    ranked: list[Any],
    arch: str = "sm_90",
) -> tuple[bool, str]:
    """May ``constants`` (tuned on another shape) run ``shape``? (yes/no, why) against the model's ranking
    ``ranked`` of this shape (best first)."""
    ok = check_legal(spec, dict(constants), shape, dtype)
    if not ok:
        return False, f"not legal here ({ok.reason})"
    best = ranked[0]
    mine = spec.launch_info(dict(constants), shape, dtype)
    theirs = spec.launch_info(best.params, shape, dtype)
    if float(mine.get("passes", 1)) > float(theirs.get("passes", 1)):
        n, m = float(mine["passes"]), float(theirs.get("passes", 1))
        return False, f"{n:g} passes over the data where the model's best makes {m:g}"
    if float(mine.get("dram_efficiency", 1.0)) < float(theirs.get("dram_efficiency", 1.0)) - 1e-9:
        return False, (
            f"streams at {mine['dram_efficiency']:.2f} of copy on this shape (alignment) where the model's "
            f"best streams at {theirs.get('dram_efficiency', 1.0):.2f}"
        )
    key = _freeze(constants)
    pred = next((c.prediction for c in ranked if c.constants == key), None)
    if pred is None:
        pred = predict(spec, dict(constants), shape, dtype, arch, dist=dist)
    ratio = pred.seconds / max(best.prediction.seconds, 1e-30)
    if ratio > 1.0 + REUSE_TOLERANCE:
        return False, f"predicted {ratio:.2f}x the model's best for this shape"
    return True, f"predicted {ratio:.3f}x the model's best for this shape"


def _announce(spec: KernelSpec, shape: tuple[int, ...], dtype: str, where: str) -> None:
    global _ANNOUNCED
    what = f"{spec.NAME} [{spec.BACKEND}] {_shape_text(shape)} {dtype}"
    if not _ANNOUNCED:
        _ANNOUNCED = True
        msg = (
            f"autopad: tuning {what} on this GPU now, on its first use ({where}). This takes about "
            f"{TUNE_SECONDS} per new shape, once: the pick is cached (AUTOPAD_CACHE_DIR, default "
            f"~/.cache/autopad). To avoid tuning in line, tune ahead of time with autopad.ops.pretune(...) "
            f"and ship the cache (autopad.ops.cache_pack / cache_unpack); AUTOPAD_TUNE=offline never tunes "
            f"in line (the model's pick runs instead)."
        )
    else:
        msg = f"autopad: tuning {what} on its first use ({where}; about {TUNE_SECONDS})"
    warnings.warn(msg, AutopadTuningWarning, stacklevel=4)  # then tune() draws its progress on a terminal


def _untuned(spec: KernelSpec, shape: tuple[int, ...], dtype: str, dist: str | None, mode: str) -> None:
    global _WARNED_OFFLINE
    item = (spec.NAME, tuple(shape), dtype, dist)
    with _LOCK:
        if item not in _UNTUNED:
            _UNTUNED.append(item)
    path = os.environ.get("AUTOPAD_UNTUNED_FILE")
    if path:
        try:
            with open(path, "a", encoding="utf-8") as f:  # the pretune file format: op shape dtype [dist]
                f.write(" ".join([spec.NAME, _shape_text(shape), dtype] + ([dist] if dist else [])) + "\n")
        except OSError as e:
            warnings.warn(f"autopad: could not record an untuned shape in {path}: {e}", stacklevel=4)
    what = f"{spec.NAME} [{spec.BACKEND}] {_shape_text(shape)} {dtype}"
    if mode == "never":
        warnings.warn(
            f"autopad: {what} is not tuned; running the model's pick (AUTOPAD_TUNE=never)",
            AutopadTuningWarning,
            stacklevel=4,
        )
    elif not _WARNED_OFFLINE:
        _WARNED_OFFLINE = True
        warnings.warn(
            f"autopad: {what} is not tuned and AUTOPAD_TUNE=offline: running the model's pick. Further "
            f"untuned shapes run the same way without a word; autopad.ops.untuned() lists them (and "
            f"AUTOPAD_UNTUNED_FILE collects them) for autopad.ops.pretune.",
            AutopadTuningWarning,
            stacklevel=4,
        )


def untuned() -> list[tuple[str, tuple[int, ...], str, str | None]]:
    """The (kernel, shape, dtype, dist) this process ran with the model's pick (modes never/offline)."""
    with _LOCK:
        return list(_UNTUNED)


def _tune_now(
    spec: KernelSpec, shape: tuple[int, ...], dtype: str, dist: str | None, device: int
) -> Decision:
    from ..tune import tune

    t0 = time.perf_counter()
    res = tune(spec.impl, shape, dtype, device=device, dist=dist, progress=None, **TUNE_OPTIONS)
    if res.mode == "measured" and res.best.measured is None:
        raise RuntimeError(
            f"autopad: no candidate of {spec.NAME} [{spec.BACKEND}] ran correctly on {_shape_text(shape)} "
            f"{dtype} ({res.message}); refusing to run an unchecked kernel (see autopad.tune(...).table())"
        )
    return Decision(
        _freeze(res.best.constants), "tuned now", f"{res.mode} in {time.perf_counter() - t0:.1f} s"
    )


def _illegal(spec: KernelSpec, constants: dict, shape: tuple[int, ...], dtype: str) -> str | None:
    """Why cached constants cannot run here (a cache is a file anyone may have edited), or None."""
    from ..search import check_legal

    if set(constants) != set(spec.SPACE):
        return f"its constants {sorted(constants)} are not the kernel's {sorted(spec.SPACE)}"
    try:
        ok = check_legal(spec, dict(constants), tuple(shape), dtype)
    except Exception as exc:  # a legal() that raises on foreign values says no
        return f"legal() raised {type(exc).__name__}: {exc}"
    return None if ok else ok.reason


def decide(
    spec: KernelSpec,
    shape: tuple[int, ...],
    dtype: str,
    dist: str | None = None,
    device: int = 0,
    mode: str | None = None,
) -> Decision:
    """The constants for ``spec`` on ``shape`` (module docstring: exact -> reuse -> tune or model)."""
    from ..cache import Cache
    from ..tune import cache_key

    mode = mode or tune_mode()
    dist = normalize_dist(spec, dist)
    dev = device_info(device)
    found = Cache().nearest(cache_key(spec, tuple(shape), dtype, dist, dev))
    if found is not None and tuple(found[0].shape) == tuple(shape):
        why = _illegal(spec, found[1].best.constants, shape, dtype)
        if why is None:
            return Decision(_freeze(found[1].best.constants), "tuned", found[1].mode)
        import warnings

        warnings.warn(
            f"autopad cache: ignoring the cached pick {found[1].best.constants} of {spec.NAME} "
            f"[{spec.BACKEND}] on {_shape_text(shape)} {dtype}: {why}",
            stacklevel=3,
        )
        found = None
    if mode == "always":
        _announce(spec, shape, dtype, "AUTOPAD_TUNE=always")
        return _tune_now(spec, shape, dtype, dist, device)
    arch = _arch(dev)
    ranked = rank(spec, shape, dtype, arch, extra=baselines(spec, shape, dtype), dist=dist)
    if not ranked:
        raise ValueError(f"shape: {spec.NAME} [{spec.BACKEND}] has no legal candidate for {shape} {dtype}")
    why_not = "nothing tuned for this kernel and dtype on this GPU"
    if found is not None:
        near = _shape_text(found[0].shape)
        ok, why = reusable(spec, found[1].best.constants, shape, dtype, dist, ranked, arch)
        if ok:
            return Decision(_freeze(found[1].best.constants), "reused", f"tuned on {near}: {why}")
        why_not = f"the pick tuned on {near} is not reused: {why}"
    if mode in ("never", "offline"):
        _untuned(spec, shape, dtype, dist, mode)
        return Decision(model_pick(spec, ranked).constants, "model", f"AUTOPAD_TUNE={mode}; {why_not}")
    _announce(spec, shape, dtype, why_not)
    return _tune_now(spec, shape, dtype, dist, device)
