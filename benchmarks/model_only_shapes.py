"""The recorded configuration-shapes the model-only report scores: ``Shape`` (the model's inputs for every
legal candidate of one configuration-shape, and what was measured), ``_features`` (those inputs, as
``autopad.search.rank`` computes them), ``load_shapes`` (every configuration-shape of a rows file,
cached), the recorded studies (``RUNS``) and the naming and replacing of new-shape files (``extra_name``,
``supersede``).

Why a module of its own: loading turns a study's rows into the predictor's inputs once, and changes with the
specs and the rows' format; the scoring and the report's figures (model_only_report.py) and the noise
ceiling (model_only_noise.py) read the shapes it gives and do not. model_only_report.py re-exports these
names.
"""

from __future__ import annotations

import hashlib
import pickle
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy
from quality_report import load_rows, parse_shape  # noqa: E402

from autopad.arch import get_arch  # noqa: E402

RUNS = ("run1", "run2")


# ---- the model's inputs per recorded shape (as search.rank computes them), cached --------------------


@dataclass
class Shape:
    """One recorded configuration-shape: the model's inputs for every legal candidate, and what was
    measured."""

    run: str
    kernel: str
    backend: str
    dtype: str
    shape: str
    keys: list[str]
    consts: list[dict[str, int]]
    layouts: list[Any]
    wave: np.ndarray
    ideal: np.ndarray
    infos: list[dict[str, float]]
    traffic: dict[str, float]
    ms: np.ndarray  # nan where the candidate failed or was not measured
    default: int | None  # index of the spec's DEFAULTS, if legal
    iqr: np.ndarray | None = None  # the interquartile range of each measured median (spread_ms)

    @property
    def family(self) -> str:
        return f"{self.kernel} [{self.backend}] {self.dtype}"

    @property
    def name(self) -> str:
        return f"{self.kernel} [{self.backend}] {self.dtype} {self.shape}"


def _features(
    kernel: str, backend: str, dtype: str, shape: str, rows: list[dict[str, Any]], run: str
) -> Shape:
    from autopad.kernels_registry import builtin_spec
    from autopad.search import (
        _freeze,
        _launch_infos,
        _layout,
        _traffic,
        baselines,
        check_legal,
        enumerate_candidates,
        score_candidates,
    )

    spec = builtin_spec(kernel, backend)
    s = parse_shape(shape)
    dist = "uniform" if getattr(spec, "DISTS", None) else None
    seen = {_freeze(c): c for c in enumerate_candidates(spec, s, dtype)}
    for c in baselines(spec, s, dtype):  # what rank(extra=baselines) adds
        f = _freeze(c)
        if f not in seen and check_legal(spec, dict(c), s, dtype):
            seen[f] = dict(c)
    # the study measured the space of its day: a constant added to the spec since then is held at its
    # default, and the ranking covers the recorded candidates (the rest were never measured)
    meas = {r["key"]: r for r in rows}
    names = {kv.split("=")[0] for kv in rows[0]["key"].split(",")}
    defaults = dict(spec.DEFAULTS)
    keep: dict[str, dict[str, int]] = {}
    for c in seen.values():
        if all(v == defaults.get(k) for k, v in c.items() if k not in names):
            key = ",".join(f"{k}={v}" for k, v in sorted(c.items()) if k in names)
            if key in meas:
                keep[key] = c
    keys, consts = list(keep), list(keep.values())
    layouts = [_layout(spec, c, dtype) for c in consts]
    wave, ideal = score_candidates(spec, consts, layouts, dtype, dist, get_arch("sm_90"))
    infos = _launch_infos(spec, consts, layouts, s, dtype)
    ms = np.array([meas[k]["ms"] if meas[k]["correct"] and meas[k]["ms"] else np.nan for k in keys])
    iqr = np.array([float(meas[k].get("spread_ms") or "nan") for k in keys])
    iqr[np.isnan(ms)] = np.nan
    dkey = ",".join(f"{k}={v}" for k, v in sorted(defaults.items()) if k in names)
    default = keys.index(dkey) if dkey in keys else None
    return Shape(run, kernel, backend, dtype, shape, keys, consts, layouts, wave, ideal, infos,
                 _traffic(spec, s, dtype), ms, default, iqr)  # fmt: skip


def load_shapes(paths: dict[str, Path], cache: Path | None = None) -> list[Shape]:
    """Every configuration-shape of the given studies ({run name: rows.csv.gz}), model inputs computed
    once per study file and cached (scoring the histograms' atomics takes most of a minute per shape)."""
    got: dict[str, Any] = {}
    if cache is not None and cache.is_file():
        try:
            with open(cache, "rb") as f:
                got = pickle.load(f)
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError):
            got = {}
    out = []
    changed = False
    for run, path in paths.items():
        # the cached inputs depend on the study and on the code that computes them (the specs, the model)
        code = sorted((str(f), f.stat().st_mtime) for d in (ROOT / "kernels", ROOT / "autopad")
                      for f in d.rglob("*.py"))  # fmt: skip
        code.append((__file__, Path(__file__).stat().st_mtime))
        # a digest, not hash(): str hashes are salted per process, so a hash() stamp never matched again
        stamp = (str(path), path.stat().st_mtime, hashlib.sha256(repr(code).encode()).hexdigest())
        hit = got.get(run)
        if isinstance(hit, dict) and hit.get("stamp") == stamp:
            out += [Shape(**d) for d in hit["shapes"]]
            continue
        mine = []
        for (kernel, backend, dtype, shape), rows in load_rows(path).items():
            t0 = time.perf_counter()
            mine.append(_features(kernel, backend, dtype, shape, rows, run))
            print(f"  scored {run} {kernel} {dtype} {shape}: {len(rows)} rows, "
                  f"{time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)  # fmt: skip
        got[run] = {"stamp": stamp, "shapes": [dict(vars(s)) for s in mine]}
        out += mine
        changed = True
    if cache is not None and changed:
        with open(cache, "wb") as f:
            pickle.dump(got, f)
    return out


def extra_name(path: Path) -> str:
    """The run an extra rows file came from: its folder (run8), or its folder's folder and its own
    (run20/round1) where the file sits in a sub-folder of a run."""
    parent = path.resolve().parent
    if parent.name.startswith("run") or not parent.parent.name.startswith("run"):
        return parent.name
    return f"{parent.parent.name}/{parent.name}"


def _run_order(run: str) -> tuple[int, str]:
    """A run name's place in time: its device run's number (run20/round1 -> 20), then the rest."""
    digits = "".join(ch for ch in run.split("/")[0] if ch.isdigit())
    return (int(digits) if digits else -1, run)


def supersede(
    shapes: list[Shape], apart: frozenset[str] = frozenset()
) -> tuple[list[Shape], list[tuple[str, str, str, str]]]:
    """Shapes of the new-shape files, a later run's configuration-shape replacing an earlier run's (a
    sample re-measured, e.g. the SIMT GEMM's after the harness stopped timing host work, H200 run 20);
    later by the device run's number, whatever the order of the files on the command line; the recorded
    studies (RUNS) are never replaced, and the runs in ``apart`` (today's studies, ``--current``) replace
    and are replaced only among themselves. Returns the kept shapes and (run, kernel, dtype, shape) of each
    replaced one."""
    last: dict[tuple, str] = {}

    def key(s: Shape) -> tuple:
        return (s.run in apart, s.kernel, s.backend, s.dtype, s.shape)

    for s in sorted((s for s in shapes if s.run not in RUNS), key=lambda s: _run_order(s.run)):
        last[key(s)] = s.run
    kept, gone = [], []
    for s in shapes:
        if s.run in RUNS or last[key(s)] == s.run:
            kept.append(s)
        else:
            gone.append((s.run, s.kernel, s.dtype, s.shape))
    return kept, gone
