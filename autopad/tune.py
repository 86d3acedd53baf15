"""``autopad.tune(kernel, shape)``: request -> rank -> strategy -> pick -> record, wired together.

Each stage lives in its own module and this one only connects them, left to right:

- ``request.Request.make``: every argument checked before any work;
- the cache: a result tuned before for the same key and search parameters is returned at once;
- ``search.rank``: every legal candidate, predicted by the model (numpy only);
- a strategy (``autopad.strategies``; the model's shortlist plus a local search by default) spends the
  measurements through ``_Measure``, which times on the GPU (``bench.WorkerBenchmarker``: an isolated
  worker process) or answers from the cache, and enforces the budgets;
- ``pick``: the fastest correct candidate; candidates within noise of it are timed again, the fastest
  re-timed wins, and candidates re-timed within ``TIE_MARGIN`` (0.5%) of it go to the lower model cost,
  then the smaller footprint, then the constants' text (so near-equal times do not flip the pick; tiles
  within noise of each other may still swap places from one tune to the next);
- the record: measurements go to the cache as they arrive, the result at the end.

Without a GPU (or with AUTOPAD_NO_BENCH=1) the result is the model's ranking, says so, and measures nothing.

Where each part lives (tune.py was split, one concern a module; every name it defined is still importable
from here): tune_measure.py (``_Measure``, the progress line, ``pick`` and its tie rules), tune_record.py
(``cache_key``, the search parameters, the result as cached, the checks of a cached pick, the exporters'
extras); here, ``tune`` itself, and ``_rerank`` and ``_baselines``, the two other callers of the search
(every read of ``rank`` is in this module).
"""

from __future__ import annotations

import re
import sys
import time
import warnings
from collections import Counter
from types import ModuleType
from typing import Any

import numpy as np

from .device import device_count, device_info, gpu_available
from .request import Request, device_index, normalize_dtype, normalize_shape, resolve
from .results import Best, CandidateResult, LazyCandidates, Measurement, TuneResult
from .search import Candidate, check_legal, rank
from .search_shortlist import model_pick
from .space import space

# besides what this module uses, the names tune.py defined before the split, importable from here as before
# (tests use some of the private ones)
from .tune_measure import _Measure, _Progress, _tie_break, _within_noise, pick  # noqa: F401
from .tune_record import (  # noqa: F401
    _CACHED_UNMEASURED,
    _cached_pick_illegal,
    _candidates,
    _environment,
    _extra,
    _for_cache,
    _search_params,
    cache_key,
)

__all__ = ["tune", "resolve", "normalize_dtype", "normalize_shape", "cache_key", "NO_GPU_MESSAGE"]

NO_GPU_MESSAGE = "no GPU (or AUTOPAD_NO_BENCH=1): ranked by the model alone, nothing was measured"


def _rerank(req: Request, stored: TuneResult) -> tuple[CandidateResult, ...]:
    """The full candidate list of a cached result: the model's ranking with the stored measurements."""
    by_key = {c.key: c for c in stored.candidates}
    ranked = rank(req.spec, req.shape, req.dtype, req.arch, extra=_baselines(req), dist=req.dist)
    out = []
    for c in ranked:
        s = by_key.get(c.key)
        out.append(
            CandidateResult.from_candidate(c, s.measurement if s else None, cached=bool(s and s.cached))
        )
    return tuple(out)


def _baselines(req: Request) -> list[dict[str, int]]:
    from .search import baselines

    return baselines(req.spec, req.shape, req.dtype)


def tune(
    kernel: str | ModuleType | Any,
    shape: Any,
    dtype: Any = "float32",
    backend: str = "auto",
    top_k: int = 6,
    device: Any = None,
    cache: bool = True,
    budget: int | None = None,
    time_budget_s: float | None = None,
    dist: str | None = None,
    arch: str | None = None,
    verbose: bool = False,
    progress: bool | None = None,
    benchmarker: Any = None,
    retune: bool = False,
    refine: int = 16,
    strategy: str = "model",
    seed: int = 0,
    export: Any = None,
    overwrite: bool = False,
) -> TuneResult:
    """Choose the shared-memory layout (and other tunables) for ``kernel`` on ``shape``.

    ``kernel`` is "transpose", "matmul", "histogram" or a user's kernel spec (``autopad.CudaKernel``,
    ``autopad.TritonKernel``, or any object with the names in ``autopad.spec``). ``strategy`` picks how
    measurements are spent ("model": ``top_k`` by the model plus the baselines and the best layout of each
    of the ``top_k`` best launch configurations, then up to ``refine`` more: the unpadded twins of the
    configurations measured close to the fastest, and a local search from the fastest; "brute_force";
    "random"). ``budget`` caps how many are measured in all and ``time_budget_s``
    how long measuring may take. ``dist`` is the input class for kernels whose speed depends on the data
    (histogram: "uniform", "skewed", "single", "sorted"). ``cache`` reuses and records measurements on disk;
    ``retune`` ignores a cached result (but keeps cached timings). ``export`` writes the pick (.json, .h,
    .py) when the tune is done; a bad suffix is refused before any work, and a different file already there
    is replaced only with ``overwrite``.
    """
    started = time.perf_counter()
    # the profile is the named device's, in any form Request accepts ("cuda:1", a torch.device, 1); a device
    # it refuses is refused there, with its message, so the hint falls back to 0 only to get that far
    try:
        index_hint = device_index(device)
    except ValueError:
        index_hint = 0
    dev = device_info(index_hint) if benchmarker is None else {}
    req = Request.make(
        kernel,
        shape,
        dtype,
        backend,
        top_k,
        device,
        cache,
        budget,
        time_budget_s,
        dist,
        arch,
        retune,
        refine,
        strategy,
        seed,
        export,
        gpu_cc=dev.get("cc", ""),
        device_count=device_count() if benchmarker is None else None,
        gpu_name=dev.get("name", ""),
        overwrite=overwrite,
    )
    spec = req.spec  # (req.device is index_hint: Request read the same device)
    # whether this machine could measure: a GPU the driver shows (torch is checked only when measuring)
    measuring = benchmarker is not None or bool(dev)
    store = None
    if req.cache:
        from .cache import Cache

        store = Cache()
    key = cache_key(spec, req.shape, req.dtype, req.dist, dev)
    params = _search_params(req, measuring)
    if store is not None and not req.retune:
        hit = store.get_result(key, params)
        why = _cached_pick_illegal(req, hit) if hit is not None else None
        if why is not None:
            warnings.warn(
                f"autopad cache: ignoring the cached pick {hit.best.constants} of {spec.NAME} "
                f"[{spec.BACKEND}] on {req.shape} {req.dtype}: {why}; tuning again",
                stacklevel=2,
            )
            hit = None
        if hit is not None:
            res = TuneResult(
                **{
                    **hit.__dict__,
                    "candidates": LazyCandidates(lambda: _rerank(req, hit)),
                    "cache_hit": True,
                    "lookup_ms": (time.perf_counter() - started) * 1e3,
                }
            )
            return _finish(req, res, verbose)

    own_bench = None
    try:
        if measuring and benchmarker is None:  # its first workers start while this process imports torch
            from .bench import WorkerBenchmarker  # (gpu_available) and the model ranks

            own_bench = WorkerBenchmarker(spares=2)
            own_bench.prewarm()
        # a GPU the driver shows but no torch with CUDA: ranked by the model alone (said in _tune_ranked)
        torch_gpu = benchmarker is not None or not measuring or gpu_available()
        if own_bench is not None and not torch_gpu:
            own_bench.close()  # nothing will be measured: the spares end at once
        bench = benchmarker if benchmarker is not None else own_bench
        return _tune_ranked(
            req, spec, key, params, store, dev, measuring, torch_gpu, bench, progress, verbose, started
        )
    finally:
        if own_bench is not None:
            own_bench.close()


def _tune_ranked(
    req: Request,
    spec: Any,
    key: str,
    params: dict,
    store: Any,
    dev: dict,
    measuring: bool,
    torch_gpu: bool,
    bench: Any,
    progress: bool | None,
    verbose: bool,
    started: float,
) -> TuneResult:
    """The tune after the cache: rank, measure (with ``bench``, where this machine measures), pick,
    record."""
    ranked = rank(spec, req.shape, req.dtype, req.arch, extra=_baselines(req), dist=req.dist)
    if not ranked:
        raise ValueError(_no_legal_candidate(spec, req))
    winner: Candidate | None = None
    meas: dict[str, Measurement] = {}
    cached: set[str] = set()
    if not torch_gpu:
        measuring = False
        mode, message = (
            "model-only",
            (
                f"a GPU ({dev.get('name', '?')}) is here but torch with CUDA is not: ranked by the model "
                "alone, nothing was measured"
            ),
        )
    elif not measuring:
        mode, message = "model-only", NO_GPU_MESSAGE
    if measuring and (len(ranked) == 1 or req.budget == 1):
        why = "a single legal candidate" if len(ranked) == 1 else "a budget of one"
        mode, message = "model-only", f"{why}: nothing to compare, so nothing was measured"
    elif measuring:
        spec.check_bench()
        show = _Progress(sys.stderr.isatty() if progress is None else bool(progress))
        m = _Measure(req, bench, store, key, show)
        from .strategies import Options, get

        get(req.strategy)(ranked, m, Options(spec, req.top_k, req.refine, req.budget, req.seed))
        winner = pick(m)
        meas, cached = m.meas, m.cached
        n_fail = sum(1 for c in m.asked if c.key in meas and not meas[c.key].correct)
        mode = "measured"
        message = (
            f"measured {sum(1 for c in m.asked if c.key in meas)} of {len(ranked)} legal candidates "
            f"({len(cached)} from cache), {n_fail} failed"
        )
        if winner is None:
            message += "; no candidate ran correctly, so the pick is the model's"
    # measured: the fastest; otherwise the model's answer (its first, or that one's unpadded twin)
    w = winner or model_pick(spec, ranked)
    wr = CandidateResult.from_candidate(w, meas.get(w.key))
    best = Best(
        dict(w.params), wr.layout, w.prediction.seconds, wr.measured_ms, _extra(w.layout, spec, w.params)
    )
    res = TuneResult(
        spec.NAME,
        spec.BACKEND,
        req.shape,
        req.dtype,
        req.arch,
        mode,
        message,
        best,
        _candidates(ranked, meas, cached),
        dev,
        _environment(),
        req.dist,
    )
    if store is not None:
        store.put_result(key, _for_cache(res), params)
    return _finish(req, res, verbose)


def _no_legal_candidate(spec: Any, req: Request, sample: int = 2000) -> str:
    """Why no candidate of the space is legal for the request's shape: the default candidate's reason, and
    the other reasons of a sample of the space (at most ``sample`` candidates, drawn at random with a fixed
    seed: a fixed stride through the product order skipped whole values of its fastest constants) with their
    counts, reasons that differ only in their numbers counted as one. The default's reason alone misled
    where another code path has another limit: the Triton histogram at 65,536 bins named tl.histogram's
    4,096 (its default path) and not the shared-memory path's 16,384."""
    probe = getattr(spec, "DEFAULTS", None) or {k: v[0] for k, v in spec.SPACE.items()}
    why = check_legal(spec, dict(probe), req.shape, req.dtype).reason
    msg = (
        f"shape: {spec.NAME} [{spec.BACKEND}] has no legal candidate for shape {req.shape} and dtype "
        f"{req.dtype}; its default candidate is rejected because: {why}"
    )
    sp = space(spec, req.dtype)
    rows = np.sort(np.random.default_rng(0).choice(sp.n, min(sp.n, sample), replace=False))
    kinds: Counter[str] = Counter()
    example: dict[str, str] = {}
    for i in rows.tolist():
        reason = check_legal(spec, sp.constants(i), req.shape, req.dtype).reason
        kind = re.sub(r"\d+", "#", reason)  # "grid (1, 67108864) ..." and "grid (2, 134217728) ..." alike
        kinds[kind] += 1
        example.setdefault(kind, reason)
    own = re.sub(r"\d+", "#", why)
    others = [(example[k], n) for k, n in kinds.most_common() if k and k != own][:3]
    if others:
        msg += "; the others' reasons: " + "; ".join(f"{r} ({n} of {len(rows)} looked at)" for r, n in others)
    return msg


def _finish(req: Request, res: TuneResult, verbose: bool) -> TuneResult:
    # said for a cache hit too (it was said only when ranked afresh, so a repeated tune, or the CLI's --quiet
    # answered from the cache, gave the model's pick without saying that nothing was measured)
    if res.mode == "model-only" and res.message == NO_GPU_MESSAGE:
        print(f"autopad: {NO_GPU_MESSAGE}", file=sys.stderr)
    if verbose:
        print(res.table())
    if req.export is not None:
        res.export(req.export, overwrite=req.overwrite)
    return res
