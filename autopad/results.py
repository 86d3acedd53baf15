"""What a tuning run returns: every candidate with its prediction and measurement, and the pick.

These are plain frozen records with a lossless dict form, so that the cache, the exporters and the CLI
read and write the same thing. ``TuneResult.export(path)`` hands over to ``export.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .predict import Prediction
from .search import Candidate

__all__ = ["Measurement", "CandidateResult", "Best", "TuneResult", "LazyCandidates", "prediction_from_dict"]


def prediction_from_dict(d: dict[str, Any]) -> Prediction:
    """A Prediction from its dict form (older results have no ``terms``)."""
    d = dict(d)
    d["terms"] = tuple((str(k), float(v)) for k, v in d.get("terms", ()))
    return Prediction(**d)


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
    def from_dict(cls, d: dict[str, Any]) -> Measurement:
        return cls(**{k: d[k] for k in ("key", "correct", "ms", "spread_ms", "runs", "error") if k in d})


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
    def from_dict(cls, d: dict[str, Any]) -> CandidateResult:
        m = d.get("measurement")
        return cls(
            {str(k): int(v) for k, v in d["constants"].items()},
            d["layout"],
            prediction_from_dict(d["prediction"]),
            tuple(d.get("roles", ())),
            None if m is None else Measurement.from_dict(m),
            bool(d.get("cached", False)),
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

    def export(self, path: str | Path, fmt: str | None = None, overwrite: bool = False) -> Path:
        """Write the constants as .json, .h or .py (format from the suffix unless ``fmt`` says)."""
        from .export import export_result

        return export_result(self, path, fmt=fmt, overwrite=overwrite)

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
        b = d["best"]
        return cls(
            d["kernel"],
            d["backend"],
            tuple(d["shape"]),
            d["dtype"],
            d["arch"],
            d["mode"],
            d["message"],
            Best(
                {str(k): int(v) for k, v in b["constants"].items()},
                b["layout"],
                b["predicted"],
                b["measured"],
                dict(b.get("extra", {})),
            ),
            tuple(CandidateResult.from_dict(c) for c in d["candidates"]),
            dict(d.get("device", {})),
            dict(d.get("environment", {})),
            d.get("dist"),
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
