"""``autopad.tune(kernel, shape)``: enumerate, score, shortlist, benchmark, pick, cache.

The flow runs once, left to right: the spec's space -> ``search.rank`` (legal candidates, predicted by the
model) -> ``search.shortlist`` (top_k plus the unpadded and textbook baselines, capped by the budget) ->
the benchmarker (``bench.WorkerBenchmarker`` on a GPU; a fake one in tests) -> the pick -> the cache.

The pick is the fastest correct candidate. Timings come with a spread; when several candidates are within
noise of the fastest they are timed again, and if they still tie the lower model cost wins, then the
smaller footprint, then the constants' text, so one machine gives the same pick run after run. Without a
GPU (or with AUTOPAD_NO_BENCH=1) the result is the model's ranking, says so, and measures nothing.
"""

from __future__ import annotations

import platform
import sys
import time
from collections.abc import Iterable
from datetime import datetime, timezone
from types import ModuleType
from typing import Any

from . import __version__
from .arch import ARCHS, get_arch
from .bench import BenchJob, device_info, gpu_available, spec_ref
from .cache import Cache, CacheKey
from .kernels_registry import builtin_spec, source_hash
from .layouts import Swizzled
from .results import Best, CandidateResult, Measurement, TuneResult
from .search import Candidate, baselines, check_legal, neighbours, rank, shortlist
from .spec import DTYPE_BYTES, KernelSpec

__all__ = ["tune", "resolve", "normalize_dtype", "normalize_shape", "cache_key"]

NO_GPU_MESSAGE = "no GPU (or AUTOPAD_NO_BENCH=1): ranked by the model alone, nothing was measured"


def normalize_dtype(dtype: Any) -> str:
    """'float32', torch.float32 or numpy's float32 -> 'float32'."""
    name = str(dtype).replace("torch.", "")
    name = {
        "float": "float32",
        "half": "float16",
        "double": "float64",
        "fp32": "float32",
        "fp16": "float16",
        "bf16": "bfloat16",
        "fp64": "float64",
        "fp8": "float8_e4m3fn",
        "float8": "float8_e4m3fn",
    }.get(name, name)
    if name not in DTYPE_BYTES:
        raise ValueError(f"dtype: {dtype!r} is not a known element type; known: {', '.join(DTYPE_BYTES)}")
    return name


def normalize_shape(shape: Any) -> tuple[int, ...]:
    """A tuple of positive ints, from a tuple/list or text like '8192x8192'."""
    if isinstance(shape, str):
        try:
            shape = tuple(int(p) for p in shape.lower().split("x"))
        except ValueError:
            raise ValueError(f"shape: {shape!r} is not of the form 8192x8192") from None
    try:
        out = tuple(shape)
    except TypeError:
        raise ValueError(f"shape: expected a tuple of positive ints, got {shape!r}") from None
    if not out or any(isinstance(d, bool) or not isinstance(d, int) or d <= 0 for d in out):
        raise ValueError(f"shape: every dimension must be a positive int, got {shape!r}")
    return out


def resolve(kernel: str | ModuleType | Any, backend: str = "auto") -> KernelSpec:
    """A built-in kernel name ('transpose', 'matmul', 'histogram') or a user's spec -> KernelSpec."""
    if backend not in ("auto", "cuda", "triton"):
        raise ValueError(f"backend: {backend!r} is not one of auto, cuda, triton")
    if isinstance(kernel, str):
        return builtin_spec(kernel, backend)
    return KernelSpec(kernel)


def _device_index(device: Any) -> int:
    if device is None:
        return 0
    if isinstance(device, int) and not isinstance(device, bool) and device >= 0:
        return device
    text = str(device)
    if text == "cuda":
        return 0
    if text.startswith("cuda:") and text[5:].isdigit():
        return int(text[5:])
    raise ValueError(f"device: {device!r} is not a CUDA device (use an index, 'cuda' or 'cuda:N')")


def cache_key(
    spec: KernelSpec, shape: tuple[int, ...], dtype: str, dist: str | None, dev: dict[str, Any]
) -> CacheKey:
    """The cache key of one tuning question on the device ``dev`` (``bench.device_info``; {} = no GPU)."""
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


def _extra(layout: Any) -> dict[str, Any]:
    """The swizzle's other spellings, for export: CuTe Swizzle<B,M,S> and the Gluon layout."""
    extra: dict[str, Any] = {}
    if isinstance(layout, Swizzled) and layout.max_phase > 1:
        try:
            extra["cute_swizzle"] = list(layout.to_cute())
        except ValueError:
            pass
        g = layout.gluon_spec()
        extra["gluon_layout"] = (
            f"gl.SwizzledSharedLayout(vec={g['vec']}, per_phase={g['per_phase']}, "
            f"max_phase={g['max_phase']}, order={g['order']})"
        )
    elif hasattr(layout, "gluon_spec"):
        g = layout.gluon_spec()
        if g.get("kind") == "padded" and g.get("interval_padding"):
            extra["gluon_layout"] = (
                f"gl.PaddedSharedLayout.with_identity_for({g['interval_padding']}, "
                f"{g['shape']}, {g['order']})"
            )
    return extra


def _progress(enabled: bool, done: int, total: int, key: str) -> None:
    if enabled:
        bar = "#" * int(20 * done / max(total, 1))
        sys.stderr.write(f"\rautopad: measuring [{bar:20}] {done}/{total} {key[:50]:50}")
        if done == total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _pick(cands: list[Candidate], meas: dict[str, Measurement]) -> list[Candidate]:
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


_CACHED_UNMEASURED = 48


def _for_cache(res: TuneResult) -> TuneResult:
    """The result as cached: every measured candidate and baseline, and the model's best unmeasured ones.

    A space of thousands of candidates would make every later cache hit parse megabytes; the ones left
    out were neither measured nor near the top of the model's ranking.
    """
    keep, rest = [], 0
    for c in res.candidates:
        if c.measurement is not None or c.roles or c.constants == res.best.constants:
            keep.append(c)
        elif rest < _CACHED_UNMEASURED:
            keep.append(c)
            rest += 1
    left = len(res.candidates) - len(keep)
    if not left:
        return res
    note = f"; {left} lower-ranked unmeasured candidates not kept in the cache"
    return TuneResult(**{**res.__dict__, "candidates": tuple(keep), "message": res.message + note})


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
) -> TuneResult:
    """Choose the shared-memory layout (and other tunables) for ``kernel`` on ``shape``.

    ``kernel`` is "transpose", "matmul", "histogram" or a user's kernel spec (see autopad.spec).
    ``top_k`` candidates by the model's prediction are measured, plus the baselines and the best layout of
    each of the ``top_k`` best launch configurations; then up to ``refine`` more, in a local search from
    the fastest (its neighbouring launch configurations and its next layouts; 0 turns it off).
    ``budget`` caps how many are measured in all and ``time_budget_s`` how long measuring may take.
    ``dist`` is the input class for kernels whose speed depends on the data (histogram: "uniform",
    "skewed", "single"). ``cache`` reuses and records measurements on disk; ``retune`` ignores a cached
    result (but keeps cached timings).
    """
    started = time.perf_counter()
    spec = resolve(kernel, backend)
    shape = normalize_shape(shape)
    dtype = normalize_dtype(dtype)
    if dtype not in spec.DTYPES:
        raise ValueError(
            f"dtype: {spec.NAME} [{spec.BACKEND}] supports {', '.join(spec.DTYPES)}, not {dtype}"
        )
    if hasattr(spec, "check_shape"):
        spec.check_shape(shape)
    dists = getattr(spec, "DISTS", None)
    if dists:
        dist = dist or dists[0]
        if dist not in dists:
            raise ValueError(f"dist: {dist!r} is not one of {', '.join(dists)}")
    elif dist is not None:
        raise ValueError(f"dist: {spec.NAME} takes no input distribution")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ValueError(f"top_k: must be an int >= 1, got {top_k!r}")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
        raise ValueError(f"budget: must be an int >= 1 or None, got {budget!r}")
    if isinstance(refine, bool) or not isinstance(refine, int) or refine < 0:
        raise ValueError(
            f"refine: must be an int >= 0 (extra candidates the local search may measure), got {refine!r}"
        )
    index = _device_index(device)

    measuring = benchmarker is not None or gpu_available()
    dev = device_info(index) if benchmarker is None and measuring else {}
    if arch is None:
        arch = f"sm_{dev['cc']}" if dev.get("cc") and f"sm_{dev['cc']}" in ARCHS else "sm_90"
    get_arch(arch)

    store = Cache() if cache else None
    key = cache_key(spec, shape, dtype, dist, dev)
    # the space is a search parameter, not part of the key: adding a candidate keeps the old timings
    space = {k: list(v) for k, v in sorted(spec.SPACE.items())}
    params = {
        "top_k": top_k,
        "budget": budget,
        "refine": refine,
        "arch": arch,
        "measuring": measuring,
        "space": space,
    }
    if store is not None and not retune:
        hit = store.get_result(key, params)
        if hit is not None:
            ms = (time.perf_counter() - started) * 1e3
            res = TuneResult(
                **{
                    **hit.__dict__,
                    "mode": "cached",
                    "message": f"cache hit ({ms:.1f} ms); tuned {hit.environment.get('date', '')}",
                }
            )
            if verbose:
                print(res.table())
            return res

    ranked = rank(spec, shape, dtype, arch, extra=baselines(spec, shape, dtype), dist=dist)
    if not ranked:
        probe = getattr(spec, "DEFAULTS", None) or {k: v[0] for k, v in spec.SPACE.items()}
        why = check_legal(spec, probe, shape, dtype).reason
        raise ValueError(
            f"shape: {spec.NAME} [{spec.BACKEND}] has no legal candidate for shape {shape} and "
            f"dtype {dtype}; its default candidate is rejected because: {why}"
        )
    short = shortlist(ranked, top_k, spec)
    if budget is not None:
        short = short[:budget]
    meas: dict[str, Measurement] = {}
    cached_keys: set[str] = set()
    tied: list[Candidate] = []  # correct candidates within noise of the fastest, after any re-timing

    if not measuring:
        mode, message = "model-only", NO_GPU_MESSAGE
    elif len(short) == 1:
        mode, message = "model-only", "a shortlist of one: nothing to compare, so nothing was measured"
    else:
        mode = "measured"
        stored = store.measurements(key) if store is not None else {}
        bench = benchmarker
        if bench is None:
            from .bench import WorkerBenchmarker

            bench = WorkerBenchmarker()
        show = sys.stderr.isatty() if progress is None else progress
        t0 = time.perf_counter()

        def run(cands: list[Candidate], reps: int, seed: int) -> None:
            job = BenchJob(
                spec_ref(spec),
                tuple((c.key, c.params) for c in cands),
                shape,
                dtype,
                dist or "uniform",
                seed=seed,
                reps=reps,
                device=index,
            )
            for n, m in enumerate(bench.measure(job), 1):
                meas[m.key] = m
                cached_keys.discard(m.key)
                if store is not None:
                    store.put_measurements(key, {m.key: m})
                _progress(show, n, len(cands), m.key)
                if time_budget_s is not None and time.perf_counter() - t0 > time_budget_s:
                    break

        def measure(cands: list[Candidate]) -> None:
            """First timings: from the cache where it has them, else from the GPU."""
            for c in cands:
                if c.key in stored and c.key not in meas:
                    meas[c.key] = stored[c.key]
                    cached_keys.add(c.key)
            todo = [c for c in cands if c.key not in meas]
            if todo:
                run(todo, 30, 0)

        measure(short)
        # local search from the fastest: neighbouring launch configurations and layouts, while they win
        limit = refine if budget is None else min(refine, budget - len(short))
        seen = {c.key for c in short}
        while limit > 0 and (time_budget_s is None or time.perf_counter() - t0 <= time_budget_s):
            ok = [c for c in short if c.key in meas and meas[c.key].correct]
            if not ok:
                break
            here = min(ok, key=lambda c: meas[c.key].ms)
            step = [c for c in neighbours(spec, ranked, here) if c.key not in seen][:limit]
            if not step:
                break
            seen.update(c.key for c in step)
            short += step
            limit -= len(step)
            measure(step)
            ok = [c for c in step if c.key in meas and meas[c.key].correct]
            if not ok or min(meas[c.key].ms for c in ok) >= meas[here.key].ms:
                break
        tied = _pick(short, meas)
        if len(tied) > 1:
            run(tied, 60, 1)  # within noise of each other: time them again, longer
            tied = _pick(tied, meas) or tied
        n_fail = sum(1 for c in short if c.key in meas and not meas[c.key].correct)
        message = (
            f"measured {sum(1 for c in short if c.key in meas)} of {len(ranked)} legal candidates "
            f"({len(cached_keys)} from cache), {n_fail} failed"
        )
        if not tied:
            message += "; no candidate ran correctly, so the pick is the model's"

    winner = _tie_break(tied) if tied else ranked[0]  # the shortlist starts with the model's best
    results = []
    for c in ranked:
        m = meas.get(c.key)
        results.append(CandidateResult.from_candidate(c, m, cached=c.key in cached_keys))
    w = CandidateResult.from_candidate(winner, meas.get(winner.key))
    best = Best(
        dict(winner.params), w.layout, winner.prediction.seconds, w.measured_ms, _extra(winner.layout)
    )
    res = TuneResult(
        spec.NAME,
        spec.BACKEND,
        shape,
        dtype,
        arch,
        mode,
        message,
        best,
        tuple(results),
        dev,
        _environment(),
        dist,
    )
    if store is not None:
        store.put_result(key, _for_cache(res), params)
    if mode == "model-only" and not measuring:
        print(f"autopad: {NO_GPU_MESSAGE}", file=sys.stderr)
    if verbose:
        print(res.table())
    return res
