"""How a tune spends its measurements and picks: the measuring callable a strategy is given, and the pick.

``_Measure`` answers a strategy's "measure these candidates" from the cache first, then from the
benchmarker (``bench.WorkerBenchmarker`` by default: an isolated worker process), and enforces the budgets
(``budget`` candidates, ``time_budget_s`` seconds). ``pick`` takes the fastest correct candidate; the ones
within noise of it and the fastest of every job (and of the cache) are timed again together, longer (60
runs, a second seed), each into ``PICK_PLACEMENTS`` separate outputs with the slowest counting; any
candidate whose first time beats that re-timed best beyond noise is then timed again with the new ties
(``PICK_ROUNDS`` rounds at most, all within the time budget); the fastest re-timed wins, and the ties
re-timed within ``TIE_MARGIN`` (0.5%) of it go to the lower model cost, then the smaller footprint, then
the constants' text, so near-equal times do not flip the pick (tiles within noise of each other may still
swap places from one tune to the next).

Why: each job runs on allocations of its own (``bench_local.keep_allocation`` shares them within a job),
and where a buffer lies can move a kernel by more than its constants do. On the H200 an fp64 16384²
transpose's GROUP 1 tile takes 1.067 or 1.136 ms on alternate 2 GiB outputs, a GROUP 64 tile 1.094 on all
(run 96 of 2026-12-04); the op's tune saw GROUP 1 tiles at 1.063 in a refine job and GROUP 64 at 1.088 in
the shortlist's (runs 92-93), then, re-timed in one job on fast outputs only, the GROUP 1 tiles again
(run 95), and picked one that took 1.133 on the user's buffers. Timed on three outputs, the GROUP 1 tiles
show their slow placement (1.133, run 97); the GROUP 64 tiles, measured faster in their first job, are
then the rivals timed again beside them.

Why a module of its own: this is the tune's measuring stage, the one part that talks to the GPU (through
the benchmarker); tune.py only wires it between the ranking and the record.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Sequence
from typing import Any

from .request import Request
from .results import Measurement
from .search import Candidate

__all__ = ["PICK_PLACEMENTS", "PICK_RIVALS", "PICK_ROUNDS", "RETIME_BUDGET_MS", "SPREAD_CAP", "pick"]

PICK_PLACEMENTS = 3  # the pick's re-timing runs each finalist into this many outputs and counts its slowest
PICK_ROUNDS = 3  # re-timing rounds at most: the finalists, then rivals that beat them
PICK_RIVALS = 6  # rivals a round adds at most
RETIME_BUDGET_MS = 10_000.0  # a re-timed candidate's runs on one placement, at most (at least 3 runs)


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
    """The measuring callable a strategy is given: cache first, then the benchmarker; budgets enforced.

    A call answers the candidates it was given that have a measurement (``{key: Measurement}``). Asked for
    more new candidates than ``budget`` has left, it takes as many as the budget allows, the first ones in
    the order given (a strategy lists its best guesses first), measures those and marks the budget
    exhausted; it then answers no new candidate. Past ``time_budget_s`` it stops between measurements.
    """

    def __init__(self, req: Request, bench: Any, store: Any, key: Any, show: _Progress) -> None:
        self.req, self.bench, self.store, self.key, self.show = req, bench, store, key, show
        self.stored = store.measurements(key) if store is not None else {}
        self.meas: dict[str, Measurement] = {}
        self.cached: set[str] = set()
        self.asked: list[Candidate] = []  # every candidate a strategy asked for, in order
        self.jobs: list[list[str]] = []  # the keys each benchmarker job measured (on allocations of its own)
        self._keys: set[str] = set()
        self.t0 = time.perf_counter()
        self.exhausted = False

    def _over_time(self) -> bool:
        t = self.req.time_budget_s
        return t is not None and time.perf_counter() - self.t0 > t

    def run(self, cands: Sequence[Candidate], reps: int, seed: int, placements: int = 1) -> None:
        """Time ``cands`` on the GPU now (no cache lookup), on ``placements`` separate allocations each
        (the slowest counts; ``bench_local``)."""
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
            # several placements: at most RETIME_BUDGET_MS of runs a placement, so that a slow candidate's
            # job stays within the worker's timeout
            options={"placements": placements, "time_budget_ms": RETIME_BUDGET_MS} if placements > 1 else {},
        )
        self.jobs.append([])
        for n, m in enumerate(self.bench.measure(job), 1):
            self.meas[m.key] = m
            self.jobs[-1].append(m.key)
            self.cached.discard(m.key)
            if self.store is not None:
                self.store.put_measurements(self.key, {m.key: m})
            self.show.update(n, len(cands), m.key)
            if self._over_time():
                self.exhausted = True
                break

    def __call__(self, cands: Sequence[Candidate]) -> dict[str, Measurement]:
        fresh = [c for c in cands if c.key not in self._keys]
        over_budget = False
        if self.req.budget is not None:
            room = max(0, self.req.budget - len(self.asked))
            if len(fresh) > room:  # the first ``room`` of them are still measured, below
                fresh, over_budget = fresh[:room], True
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
        self.exhausted = self.exhausted or over_budget
        return {c.key: self.meas[c.key] for c in cands if c.key in self.meas}

    def measured(self) -> dict[str, Measurement]:
        return dict(self.meas)


def _within_noise(cands: Iterable[Candidate], meas: dict[str, Measurement]) -> list[Candidate]:
    """Correct measured candidates within noise of the fastest, fastest first."""
    ok = sorted((c for c in cands if c.key in meas and meas[c.key].correct), key=lambda c: meas[c.key].ms)
    if not ok:
        return []
    f = meas[ok[0].key]
    return [c for c in ok if meas[c.key].ms - f.ms <= _noise(f, meas[c.key])]


# the spreads widen the tie window by at most this share of the best time: scattered runs do not make two
# times equal, and a tie goes to the model's tie-break, which knows nothing of the times. H200 run 111
# (2026-12-04): a bf16 4097 x 8191 tile re-timed at 0.0483 ms with a 0.0066 ms spread (the interquartile
# range of its noisiest output) tied the best's 0.0459 (spread 0.0010), won the tie-break (fewer wavefronts
# a tile), and ran 0.78 of copy where the best runs 0.84. Capped alike for the best: a scattered best would
# otherwise tie everything within its own spread. The same window decides the pick's rivals (``_rivals``).
SPREAD_CAP = 0.02


def _noise(best: Measurement, m: Measurement) -> float:
    """How far apart two times may be and still tie: the larger spread, counted up to ``SPREAD_CAP`` of
    the best time, at least 1% of the best."""
    spread = min(max(best.spread_ms or 0.0, m.spread_ms or 0.0), SPREAD_CAP * best.ms)
    return max(spread, 0.01 * best.ms)


def _tie_break(tied: Iterable[Candidate]) -> Candidate:
    return min(tied, key=lambda c: (c.prediction.wavefronts_per_tile, c.prediction.footprint, c.key))


# the model breaks a tie only among candidates re-timed within this share of the fastest; beyond it the
# re-timing decides. The model's tie-break (fewer wavefronts a tile, then the smaller footprint) favours
# smaller tiles and narrower vectors and knows nothing of the times, and on the H200 it took slower tiles
# the re-timing had put behind: the op's tune at fp32 4097x8191 re-timed the study's fastest tile at 76.94
# us and a VEC 1 128 x 32 tile at 78.21, tied within the latter's 1.35 us spread, and took the VEC 1 tile
# (run 120); at fp32 4096^2 a 64 x 64 VEC 2 tile at 37.62 us over a 64 x 128 VEC 4 tile at 37.33 (run 121).
# On the recorded studies its choice among the candidates within 2% of each best measured 1.014-1.018 of the
# best at fp32, where the sets' means were 1.011-1.015. Within the margin the model's choice costs at most
# 0.5% against the fastest re-timed and keeps near-equal times from flipping the pick; beyond it tied tiles
# can swap places from one tune to the next (between the first pass and the re-timing they moved apart by
# 0.8-2.1% in runs 121-122), so a pick among tiles within noise of each other may differ from tune to tune.
TIE_MARGIN = 0.005


def _closest(tied: list[Candidate], meas: dict[str, Measurement]) -> list[Candidate]:
    """The candidates of ``tied`` within ``TIE_MARGIN`` of the fastest of them: the ones the model may
    choose among."""
    limit = min(meas[c.key].ms for c in tied) * (1 + TIE_MARGIN)
    return [c for c in tied if meas[c.key].ms <= limit]


def _job_fastest(measure: _Measure) -> list[Candidate]:
    """The fastest correct candidate of each job the tune ran, and of the cache's answers (measured on other
    allocations, perhaps another day), in the order asked."""
    asked = {c.key for c in measure.asked}
    best = set()
    for keys in [*measure.jobs, sorted(measure.cached)]:  # sorted: equal times pick the same key every run
        ok = [k for k in keys if k in asked and k in measure.meas and measure.meas[k].correct]
        if ok:
            best.add(min(ok, key=lambda k: measure.meas[k].ms))
    return [c for c in measure.asked if c.key in best]


def _retime(measure: _Measure, final: list[Candidate]) -> bool:
    """Time ``final`` again in one job, longer (60 runs, a second seed), on ``PICK_PLACEMENTS`` outputs each.
    A re-timing that stops early or fails for any candidate is set aside (False): its first times stand,
    in the cache too, so fresh times are never compared with stale ones and a fault or timeout never
    replaces a correct measurement; a wrong result replaces it (the output checked on another placement)."""
    before = {c.key: measure.meas[c.key] for c in final}
    cached = set(measure.cached)
    measure.run(final, 60, 1, PICK_PLACEMENTS)
    done = set(measure.jobs[-1])  # run() opened this job
    if done >= set(before) and all(measure.meas[k].correct for k in before):
        return True
    # ... except a wrong result, which stands: a candidate wrong on another placement is wrong
    wrong = {k for k in done & set(before) if (measure.meas[k].error or "").startswith("wrong result")}
    keep = {k: m for k, m in before.items() if k not in wrong}
    measure.meas.update(keep)
    measure.cached = cached - wrong
    if measure.store is not None:
        measure.store.put_measurements(measure.key, keep)
    return False


def _rivals(measure: _Measure, bar: Measurement, done: set[str]) -> list[Candidate]:
    """Candidates not timed again yet whose first time beats ``bar`` (the re-timed best) beyond noise, the
    fastest ``PICK_RIVALS`` of them."""
    out = []
    for c in measure.asked:
        m = measure.meas.get(c.key)
        if c.key in done or m is None or not m.correct:
            continue
        if bar.ms - m.ms > _noise(bar, m):
            out.append(c)
    return sorted(out, key=lambda c: measure.meas[c.key].ms)[:PICK_RIVALS]


def pick(measure: _Measure) -> Candidate | None:
    """The fastest correct candidate, robust to where buffers lie. The first pass's ties within noise and
    every job's fastest are timed again together (``_retime``); then any candidate whose first time beats
    that re-timed best beyond noise is timed again with the new ties, for at most ``PICK_ROUNDS`` rounds in
    all; among the last round's ties the fastest re-timed wins, and those within ``TIE_MARGIN`` of it are
    broken by the model. Past the time budget nothing more is timed, and a round set aside leaves the ties
    of the round before (less any candidate it found wrong); where no round completed, the first pass's
    ties (times of separate jobs) are broken by the model. A tune answered wholly from the cache with one
    finalist times nothing."""
    tied = _within_noise(measure.asked, measure.meas)
    if not tied:
        return None
    final = list({c.key: c for c in [*tied, *_job_fastest(measure)]}.values())
    if len(final) == 1 and not measure.jobs:  # all from the cache, one finalist: no GPU work to do
        return tied[0]
    done: set[str] = set()
    for _ in range(PICK_ROUNDS):
        if measure._over_time() or not _retime(measure, final):
            break
        done.update(c.key for c in final)
        tied = _within_noise(final, measure.meas)
        rivals = _rivals(measure, measure.meas[tied[0].key], done)
        if not rivals:
            break
        final = [*tied, *rivals]
    # a round set aside for a wrong result leaves the earlier ties without it (none left: the first pass's)
    kept = [c for c in tied if measure.meas[c.key].correct]
    if done and kept:  # times of one completed re-timing: the fastest wins beyond TIE_MARGIN
        return _tie_break(_closest(kept, measure.meas))
    # no re-timing completed: the first pass's times come from separate jobs (and the cache, perhaps another
    # day), so they are not compared; the model breaks the tie
    tied = kept or _within_noise(measure.asked, measure.meas)
    return _tie_break(tied) if tied else None
