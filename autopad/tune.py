"""``autopad.tune(kernel, shape)``: request -> rank -> strategy -> pick -> record, wired together.

Each stage lives in its own module and this one only connects them, left to right:

- ``request.Request.make``: every argument checked before any work;
- the cache: a result tuned before for the same key and search parameters is returned at once;
- ``search.rank``: every legal candidate, predicted by the model (numpy only);
- a strategy (``autopad.strategies``; the model's shortlist plus a local search by default) spends the
  measurements through ``_Measure``, which times on the GPU (``bench.WorkerBenchmarker``: an isolated
  worker process) or answers from the cache, and enforces the budgets;
- ``pick``: the fastest correct candidate; candidates within noise of it are timed again, and a remaining
  tie goes to the lower model cost, then the smaller footprint, then the constants' text, so one machine
  gives the same pick run after run;
- the record: measurements go to the cache as they arrive, the result at the end.

Without a GPU (or with AUTOPAD_NO_BENCH=1) the result is the model's ranking, says so, and measures nothing.
"""

from __future__ import annotations

import platform
import sys
import time
import warnings
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from types import ModuleType
from typing import Any

from . import __version__
from .device import device_count, device_info, gpu_available
from .kernels_registry import source_hash
from .request import Request, normalize_dtype, normalize_shape, resolve
from .results import Best, CandidateResult, LazyCandidates, Measurement, TuneResult
from .search import Candidate, check_legal, rank
from .spec import KernelSpec

__all__ = ["tune", "resolve", "normalize_dtype", "normalize_shape", "cache_key", "NO_GPU_MESSAGE"]

NO_GPU_MESSAGE = "no GPU (or AUTOPAD_NO_BENCH=1): ranked by the model alone, nothing was measured"


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
    for name, key in (("kernel_args", "kernel_args"), ("launch", "launch_options")):
        fn = getattr(spec, key, None)
        if callable(fn):
            try:
                extra[name] = fn(constants)
            except Exception:  # an exporter's nicety must never fail a tune
                pass
    return extra


class _Progress:
    """One line on stderr, redrawn: what is being measured and how far along (only on a terminal)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def update(self, done: int, total: int, key: str) -> None:
        if self.enabled:
            bar = "#" * int(20 * done / max(total, 1))
            sys.stderr.write(f"\rautopad: measuring [{bar:20}] {done}/{total} {key[:50]:50}")
            if done == total:
                sys.stderr.write("\n")
            sys.stderr.flush()


class _Measure:
    """The measuring callable a strategy is given: cache first, then the benchmarker; budgets enforced."""

    def __init__(self, req: Request, bench: Any, store: Any, key: Any, show: _Progress) -> None:
        self.req, self.bench, self.store, self.key, self.show = req, bench, store, key, show
        self.stored = store.measurements(key) if store is not None else {}
        self.meas: dict[str, Measurement] = {}
        self.cached: set[str] = set()
        self.asked: list[Candidate] = []  # every candidate a strategy asked for, in order
        self._keys: set[str] = set()
        self.t0 = time.perf_counter()
        self.exhausted = False

    def _over_time(self) -> bool:
        t = self.req.time_budget_s
        return t is not None and time.perf_counter() - self.t0 > t

    def run(self, cands: Sequence[Candidate], reps: int, seed: int) -> None:
        """Time ``cands`` on the GPU now (no cache lookup)."""
        from .bench import BenchJob, spec_ref

        job = BenchJob(
            spec_ref(self.req.spec),
            tuple((c.key, c.params) for c in cands),
            self.req.shape,
            self.req.dtype,
            self.req.dist or "uniform",
            seed=seed,
            reps=reps,
            device=self.req.device,
        )
        for n, m in enumerate(self.bench.measure(job), 1):
            self.meas[m.key] = m
            self.cached.discard(m.key)
            if self.store is not None:
                self.store.put_measurements(self.key, {m.key: m})
            self.show.update(n, len(cands), m.key)
            if self._over_time():
                self.exhausted = True
                break

    def __call__(self, cands: Sequence[Candidate]) -> dict[str, Measurement]:
        fresh = [c for c in cands if c.key not in self._keys]
        if self.req.budget is not None:
            room = max(0, self.req.budget - len(self.asked))
            if len(fresh) > room:
                fresh, self.exhausted = fresh[:room], True
        self.asked += fresh
        self._keys.update(c.key for c in fresh)
        for c in fresh:
            if c.key in self.stored and c.key not in self.meas:
                self.meas[c.key] = self.stored[c.key]
                self.cached.add(c.key)
        todo = [c for c in fresh if c.key not in self.meas]
        if todo and not self.exhausted and not self._over_time():
            self.run(todo, 30, 0)
        elif todo:
            self.exhausted = True
        return {c.key: self.meas[c.key] for c in cands if c.key in self.meas}

    def measured(self) -> dict[str, Measurement]:
        return dict(self.meas)


def _within_noise(cands: Iterable[Candidate], meas: dict[str, Measurement]) -> list[Candidate]:
    """Correct measured candidates within noise of the fastest, fastest first."""
    ok = sorted((c for c in cands if c.key in meas and meas[c.key].correct), key=lambda c: meas[c.key].ms)
    if not ok:
        return []
    f = meas[ok[0].key]
    tied = []
    for c in ok:
        m = meas[c.key]
        noise = max(f.spread_ms or 0.0, m.spread_ms or 0.0, 0.01 * f.ms)
        if m.ms - f.ms <= noise:
            tied.append(c)
    return tied


def _tie_break(tied: Iterable[Candidate]) -> Candidate:
    return min(tied, key=lambda c: (c.prediction.wavefronts_per_tile, c.prediction.footprint, c.key))


def pick(measure: _Measure) -> Candidate | None:
    """The fastest correct candidate; ties within noise are timed again, longer, then broken by the model."""
    tied = _within_noise(measure.asked, measure.meas)
    if len(tied) > 1:
        measure.run(tied, 60, 1)
        tied = _within_noise(tied, measure.meas) or tied
    return _tie_break(tied) if tied else None


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
    return {
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


def _candidates(ranked: Sequence[Candidate], meas: dict[str, Measurement], cached: set[str]) -> tuple:
    return tuple(CandidateResult.from_candidate(c, meas.get(c.key), cached=c.key in cached) for c in ranked)


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
) -> TuneResult:
    """Choose the shared-memory layout (and other tunables) for ``kernel`` on ``shape``.

    ``kernel`` is "transpose", "matmul", "histogram" or a user's kernel spec (``autopad.CudaKernel``,
    ``autopad.TritonKernel``, or any object with the names in ``autopad.spec``). ``strategy`` picks how
    measurements are spent ("model": ``top_k`` by the model plus the baselines and the best layout of each
    of the ``top_k`` best launch configurations, then up to ``refine`` more in a local search from the
    fastest; "brute_force"; "random"). ``budget`` caps how many are measured in all and ``time_budget_s``
    how long measuring may take. ``dist`` is the input class for kernels whose speed depends on the data
    (histogram: "uniform", "skewed", "single"). ``cache`` reuses and records measurements on disk;
    ``retune`` ignores a cached result (but keeps cached timings). ``export`` writes the pick (.json, .h,
    .py) when the tune is done; a bad suffix is refused before any work.
    """
    started = time.perf_counter()
    index_hint = device if isinstance(device, int) and not isinstance(device, bool) else 0
    dev_light = device_info(index_hint) if benchmarker is None else {}
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
        gpu_cc=dev_light.get("cc", ""),
        device_count=device_count() if benchmarker is None else None,
    )
    spec = req.spec
    dev = device_info(req.device) if benchmarker is None else {}
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

    ranked = rank(spec, req.shape, req.dtype, req.arch, extra=_baselines(req), dist=req.dist)
    if not ranked:
        probe = getattr(spec, "DEFAULTS", None) or {k: v[0] for k, v in spec.SPACE.items()}
        why = check_legal(spec, dict(probe), req.shape, req.dtype).reason
        raise ValueError(
            f"shape: {spec.NAME} [{spec.BACKEND}] has no legal candidate for shape {req.shape} and "
            f"dtype {req.dtype}; its default candidate is rejected because: {why}"
        )
    winner: Candidate | None = None
    meas: dict[str, Measurement] = {}
    cached: set[str] = set()
    if measuring and benchmarker is None and not gpu_available():
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
        bench = benchmarker
        if bench is None:
            from .bench import WorkerBenchmarker

            bench = WorkerBenchmarker()
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
    w = winner or ranked[0]  # the ranking starts with the model's best
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
    if mode == "model-only" and message == NO_GPU_MESSAGE:
        print(f"autopad: {NO_GPU_MESSAGE}", file=sys.stderr)
    return _finish(req, res, verbose)


def _finish(req: Request, res: TuneResult, verbose: bool) -> TuneResult:
    if verbose:
        print(res.table())
    if req.export is not None:
        res.export(req.export)
    return res
