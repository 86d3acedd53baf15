"""What a tuning run returns: every candidate with its prediction and measurement, and the pick.

These are plain frozen records with a lossless dict form, so that the cache, the exporters and the CLI
read and write the same thing. ``TuneResult.export(path)`` hands over to ``export.py``.

The dict form is read strictly (``from_dict``): what comes back from a file (the cache, an exported JSON)
is untrusted, and a value coerced on the way in did harm later: ``PAD: 1.0`` or ``true`` became 1, a
cached ``ms: -1.0`` won the pick, ``ms: "fast"`` crashed a measured tune. Every field is type-checked and
a bad one is a ValueError naming it; integers stay integers (no bools, no floats), times are finite
numbers >= 0 or null.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .predict import Prediction
from .search import Candidate

__all__ = [
    "Measurement",
    "CandidateResult",
    "Best",
    "TuneResult",
    "LazyCandidates",
    "prediction_from_dict",
    "constants_from_dict",
]


def _int(v: Any, field: str, low: int | None = None) -> int:
    """``v`` if it is an int (a bool or a float is not: JSON's ``true`` and ``2.0`` are refused, never
    coerced), else a ValueError naming ``field``."""
    if not isinstance(v, int) or isinstance(v, bool):
        raise ValueError(f"{field}: expected an integer, got {v!r}")
    if low is not None and v < low:
        raise ValueError(f"{field}: expected an integer >= {low}, got {v!r}")
    return v


def _num(v: Any, field: str, none: bool = False, finite: bool = True) -> float | None:
    """``v`` as a float if it is a number >= 0 (finite unless ``finite`` is False; never NaN); None if
    ``none`` allows it; else a ValueError naming ``field``. A negative or NaN time would win every race."""
    if v is None and none:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"{field}: expected a number >= 0{' or null' if none else ''}, got {v!r}")
    x = float(v)
    if math.isnan(x) or x < 0 or (finite and math.isinf(x)):
        raise ValueError(f"{field}: expected a {'finite ' if finite else ''}number >= 0, got {v!r}")
    return x


def _str(v: Any, field: str, none: bool = False) -> str | None:
    if v is None and none:
        return None
    if not isinstance(v, str):
        raise ValueError(f"{field}: expected a string{' or null' if none else ''}, got {v!r}")
    return v


def _bool(v: Any, field: str) -> bool:
    if not isinstance(v, bool):
        raise ValueError(f"{field}: expected true or false, got {v!r}")
    return v


def _dict(v: Any, field: str) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise ValueError(f"{field}: expected an object, got {type(v).__name__}")
    return v


def constants_from_dict(d: Any, field: str = "constants") -> dict[str, int]:
    """Kernel constants read from a file: names to integers, exactly (``legal()`` judges their values)."""
    return {_str(k, f"{field} key"): _int(v, f"{field}[{k!r}]") for k, v in _dict(d, field).items()}


def prediction_from_dict(d: dict[str, Any], field: str = "prediction") -> Prediction:
    """A Prediction from its dict form (older results have no ``terms``), every field type-checked."""
    d = _dict(d, field)
    terms = d.get("terms", ())
    if not isinstance(terms, (list, tuple)):
        raise ValueError(f"{field}.terms: expected a list, got {terms!r}")
    out = []
    for t in terms:
        if not isinstance(t, (list, tuple)) or len(t) != 2:
            raise ValueError(f"{field}.terms: expected [name, number] pairs, got {t!r}")
        name = _str(t[0], f"{field}.terms name")
        if isinstance(t[1], bool) or not isinstance(t[1], (int, float)) or math.isnan(t[1]):
            raise ValueError(f"{field}.terms[{name!r}]: expected a number, got {t[1]!r}")
        out.append((name, float(t[1])))
    unknown = set(d) - {"seconds", "bound", "wavefronts_per_tile", "ideal_per_tile", "occupancy"}
    unknown -= {"footprint", "terms"}
    if unknown:
        raise ValueError(f"{field}: unknown fields {sorted(unknown)}")
    return Prediction(
        _num(d["seconds"], f"{field}.seconds", finite=False),
        _str(d["bound"], f"{field}.bound"),
        _int(d["wavefronts_per_tile"], f"{field}.wavefronts_per_tile", 0),
        _int(d["ideal_per_tile"], f"{field}.ideal_per_tile", 0),
        _num(d["occupancy"], f"{field}.occupancy"),
        _int(d["footprint"], f"{field}.footprint", 0),
        tuple(out),
    )


@dataclass(frozen=True)
class Measurement:
    """One candidate's benchmark: correct or why not, and its time (median and spread of event timings)."""

    key: str
    correct: bool
    ms: float | None = None
    spread_ms: float | None = None  # interquartile range of the timed runs
    runs: int = 0
    error: str | None = None  # "compile: ...", "wrong result: ...", "fault: ...", "timeout: ..."

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any], field: str = "measurement") -> Measurement:
        """From the dict form, strictly: a wrong type or value is a ValueError naming the field, never
        coerced (``runs: 2.5``, ``correct: "yes"``, ``ms: -1`` or ``"fast"`` are refused), and a correct
        measurement must carry its time."""
        d = _dict(d, field)
        for name in ("key", "correct"):
            if name not in d:
                raise ValueError(f"{field}.{name}: missing")
        m = cls(
            _str(d["key"], f"{field}.key"),
            _bool(d["correct"], f"{field}.correct"),
            _num(d.get("ms"), f"{field}.ms", none=True),
            _num(d.get("spread_ms"), f"{field}.spread_ms", none=True),
            _int(d.get("runs", 0), f"{field}.runs", 0),
            _str(d.get("error"), f"{field}.error", none=True),
        )
        if m.correct and m.ms is None:
            raise ValueError(f"{field}.ms: a correct measurement needs its time, got null")
        return m


@dataclass(frozen=True)
class CandidateResult:
    """A candidate as the tuner saw it: constants, layout, prediction, and measurement if any."""

    constants: dict[str, int]
    layout: str
    prediction: Prediction
    roles: tuple[str, ...] = ()
    measurement: Measurement | None = None
    cached: bool = False

    @property
    def key(self) -> str:
        return ",".join(f"{k}={v}" for k, v in sorted(self.constants.items()))

    @property
    def measured_ms(self) -> float | None:
        m = self.measurement
        return m.ms if m is not None and m.correct else None

    @property
    def correct(self) -> bool | None:
        return None if self.measurement is None else self.measurement.correct

    @property
    def error(self) -> str | None:
        return None if self.measurement is None else self.measurement.error

    @classmethod
    def from_candidate(
        cls, c: Candidate, m: Measurement | None = None, cached: bool = False
    ) -> CandidateResult:
        describe = getattr(c.layout, "describe", None)
        return cls(
            dict(c.constants), describe() if describe else repr(c.layout), c.prediction, c.roles, m, cached
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "constants": dict(self.constants),
            "layout": self.layout,
            "prediction": asdict(self.prediction),
            "roles": list(self.roles),
            "measurement": None if self.measurement is None else self.measurement.to_dict(),
            "cached": self.cached,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any], field: str = "candidate") -> CandidateResult:
        """From the dict form, every field type-checked (a ValueError names the field)."""
        d = _dict(d, field)
        m = d.get("measurement")
        roles = d.get("roles", [])
        if not isinstance(roles, (list, tuple)):
            raise ValueError(f"{field}.roles: expected a list, got {roles!r}")
        return cls(
            constants_from_dict(d["constants"], f"{field}.constants"),
            _str(d["layout"], f"{field}.layout"),
            prediction_from_dict(d["prediction"], f"{field}.prediction"),
            tuple(_str(r, f"{field}.roles") for r in roles),
            None if m is None else Measurement.from_dict(m, f"{field}.measurement"),
            _bool(d.get("cached", False), f"{field}.cached"),
        )


class LazyCandidates(Sequence):
    """A result's candidate list built on first use (a cache hit re-ranks the space only if asked).

    A cache entry keeps only the measured candidates and baselines; the full ranked list comes back from
    the model, which is deterministic, with the cached measurements merged in, so a hit returns the same
    candidates as the tune that made it without paying for them when only the pick is wanted.
    """

    def __init__(self, load: Callable[[], Sequence[CandidateResult]]) -> None:
        self._load: Callable[[], Sequence[CandidateResult]] | None = load
        self._items: tuple[CandidateResult, ...] = ()

    def _get(self) -> tuple[CandidateResult, ...]:
        if self._load is not None:
            self._items, self._load = tuple(self._load()), None
        return self._items

    def __getitem__(self, i: Any) -> Any:
        return self._get()[i]

    def __len__(self) -> int:
        return len(self._get())

    def __iter__(self) -> Iterator[CandidateResult]:
        return iter(self._get())

    def __eq__(self, other: object) -> bool:
        return tuple(self) == tuple(other) if isinstance(other, Sequence) else NotImplemented

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True)
class Best:
    """The pick: its layout (described), constants, predicted seconds and measured milliseconds (or None)."""

    constants: dict[str, int]
    layout: str
    predicted: float
    measured: float | None
    extra: dict[str, Any] = field(default_factory=dict)  # spellings: CuTe Swizzle<B,M,S>, Gluon layout


@dataclass(frozen=True)
class TuneResult:
    """Everything one ``autopad.tune`` call found."""

    kernel: str
    backend: str
    shape: tuple[int, ...]
    dtype: str
    arch: str
    mode: str  # "measured" or "model-only" (a cache hit keeps the mode of the tune that made it)
    message: str
    best: Best
    candidates: Sequence[CandidateResult]
    device: dict[str, Any] = field(default_factory=dict)  # name, compute capability; empty without a GPU
    environment: dict[str, Any] = field(default_factory=dict)  # autopad/torch/triton versions, date
    dist: str | None = None  # histogram input class: uniform, skewed, single
    # not part of the result's content (never exported or cached): how this object was obtained
    cache_hit: bool = field(default=False, compare=False)
    lookup_ms: float | None = field(default=None, compare=False)

    def export(
        self, path: str | Path, fmt: str | None = None, overwrite: bool = False, name: str | None = None
    ) -> Path:
        """Write the constants as .json, .h or .py (format from the suffix unless ``fmt`` says); ``name``
        prefixes a header's macros (``AUTOPAD_<NAME>_...``), so that headers of one kernel can share a
        translation unit."""
        from .export import export_result

        return export_result(self, path, fmt=fmt, overwrite=overwrite, name=name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            "backend": self.backend,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "arch": self.arch,
            "mode": self.mode,
            "message": self.message,
            "dist": self.dist,
            "best": asdict(self.best),
            "candidates": [c.to_dict() for c in self.candidates],
            "device": dict(self.device),
            "environment": dict(self.environment),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TuneResult:
        """From the dict form (a cache file, an exported JSON), strictly: a wrong type or value is a
        ValueError naming the field (``best.constants['PAD']: expected an integer, got 1.5``)."""
        d = _dict(d, "result")
        b = _dict(d["best"], "best")
        shape = d["shape"]
        if not isinstance(shape, (list, tuple)) or not shape:
            raise ValueError(f"shape: expected a list of integers, got {shape!r}")
        cands = d["candidates"]
        if not isinstance(cands, (list, tuple)):
            raise ValueError(f"candidates: expected a list, got {type(cands).__name__}")
        return cls(
            _str(d["kernel"], "kernel"),
            _str(d["backend"], "backend"),
            tuple(_int(x, "shape", 1) for x in shape),
            _str(d["dtype"], "dtype"),
            _str(d["arch"], "arch"),
            _str(d["mode"], "mode"),
            _str(d["message"], "message"),
            Best(
                constants_from_dict(b["constants"], "best.constants"),
                _str(b["layout"], "best.layout"),
                _num(b["predicted"], "best.predicted", finite=False),
                _num(b["measured"], "best.measured", none=True),
                dict(_dict(b.get("extra", {}), "best.extra")),
            ),
            tuple(CandidateResult.from_dict(c, f"candidates[{i}]") for i, c in enumerate(cands)),
            dict(_dict(d.get("device", {}), "device")),
            dict(_dict(d.get("environment", {}), "environment")),
            _str(d.get("dist"), "dist", none=True),
        )

    def table(self, limit: int = 12) -> str:
        """The verbose report: shape key, winner, every timing, every failure with its reason.

        Every measured candidate and baseline is listed; of the rest, the ``limit`` best predicted.
        """
        head = (
            f"{self.kernel} [{self.backend}] shape={'x'.join(map(str, self.shape))} dtype={self.dtype}"
            + (f" dist={self.dist}" if self.dist else "")
            + f" arch={self.arch} mode={self.mode}"
        )
        dev = f"device: {self.device.get('name', 'none')}" + (
            f" (sm_{self.device['cc']})" if self.device.get("cc") else ""
        )
        lines = [head, dev, self.message]
        if self.cache_hit:
            when = self.environment.get("date", "")
            ms = f" in {self.lookup_ms:.1f} ms" if self.lookup_ms is not None else ""
            lines.append(f"cache hit{ms}: the result of the tune of {when}")
        lines += [
            "",
            f"  {'layout':40} {'conf':>5} {'pred us':>9} {'meas us':>9} {'+-':>7}  constants / note",
        ]
        shown = 0
        hidden = 0
        for c in self.candidates:
            m = c.measurement
            is_best = c.constants == self.best.constants
            if m is None and not c.roles and not is_best:
                if shown >= limit:
                    hidden += 1
                    continue
                shown += 1
            meas = f"{m.ms * 1e3:9.1f}" if m is not None and m.ms is not None else f"{'-':>9}"
            spread = f"{m.spread_ms * 1e3:7.1f}" if m is not None and m.spread_ms is not None else f"{'':>7}"
            note = []
            if c.roles:
                note.append("[" + "/".join(c.roles) + "]")
            if c.cached:
                note.append("[cached]")
            if m is not None and not m.correct:
                note.append(f"FAILED {m.error}")
            lines.append(
                f"{'*' if is_best else ' '} {c.layout[:40]:40} {c.prediction.conflict_degree:5.2f} "
                f"{c.prediction.seconds * 1e6:9.1f} {meas} {spread}  {c.key} {' '.join(note)}".rstrip()
            )
        if hidden:
            lines.append(f"  ... and {hidden} more legal candidates, ranked lower by the model")
        return "\n".join(lines)
