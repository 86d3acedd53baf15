"""The model's answer per candidate as objects: ``Prediction`` (seconds, what bounds it, wavefronts,
occupancy, footprint and every term, for reports) and ``predictions``, which makes them from
``predict.predict_arrays``' arrays.

Candidates that differ only in what the model does not see share one frozen ``Prediction``, and each
term's ``(name, value)`` pair is made once per distinct value (``_term_pairs``), so a ranking of a large
space makes far fewer objects than it has candidates.

Why a module of its own: turning the arrays into shared objects is bookkeeping for the reports and the
tuner, apart from the model's arithmetic (predict.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .model import distinct_rows

__all__ = ["Prediction", "predictions"]


@dataclass(frozen=True)
class Prediction:
    """What the model says of one candidate on one shape."""

    seconds: float
    bound: str  # what limits it: "dram", "l2", "smem", "flops", "issue", "tiles" or "serial" (see terms)
    wavefronts_per_tile: int
    ideal_per_tile: int
    occupancy: float  # resident warps / the SM's maximum
    footprint: int  # bytes of shared memory per block
    terms: tuple[tuple[str, float], ...] = ()  # the predictor's terms, for --verbose

    @property
    def conflict_degree(self) -> float:
        return self.wavefronts_per_tile / self.ideal_per_tile if self.ideal_per_tile else 1.0


_BOUNDS = ("dram", "l2", "smem", "flops", "issue", "tiles", "serial")
_TERMS = ("dram_s", "l2_s", "smem_s", "flops_s", "issue_s", "tiles_s", "serial_s")


def predictions(
    arrays: tuple[np.ndarray, ...], wavefronts: np.ndarray, ideal: np.ndarray
) -> list[Prediction]:
    """``Prediction`` objects from ``predict_arrays``' answer and the wavefronts and ideal it was given.

    Candidates that differ only in what the model does not see (a ranked transpose space: 23,000
    candidates, under 600 distinct predictions) share one object (it is frozen); each distinct one is
    built from ``tolist`` values, the same Python numbers as ``float``/``int`` of each entry.
    """
    seconds, terms, bound_i, occupancy, smem, mem_eff, wave_factor, resident = arrays
    wavefronts, ideal = np.asarray(wavefronts), np.asarray(ideal)
    floats = np.stack([seconds, occupancy, smem, *terms, mem_eff, wave_factor, resident], axis=1)
    ints = np.stack([bound_i, wavefronts, ideal], axis=1).astype(np.int64)
    every = np.concatenate([floats.view(np.int64), ints], axis=1)  # exact: a float by its bits
    first, inverse = distinct_rows(every)
    names = [*_TERMS, "mem_efficiency", "wave_factor", "resident_blocks"]
    cols = [*terms[:, first], mem_eff[first], wave_factor[first], resident[first]]
    pairs = zip(*(_term_pairs(name, col) for name, col in zip(names, cols)))
    made = list(
        map(
            Prediction,
            seconds[first].tolist(),
            [_BOUNDS[b] for b in bound_i[first].tolist()],
            map(int, wavefronts[first].tolist()),
            map(int, ideal[first].tolist()),
            occupancy[first].tolist(),
            map(int, smem[first].tolist()),
            pairs,
        )
    )
    return list(map(made.__getitem__, inverse.tolist()))


def _term_pairs(name: str, values: np.ndarray) -> list[tuple[str, Any]]:
    """``(name, value)`` for each of ``values.tolist()``, one tuple per distinct value (floats by their
    bits: -0.0 and 0.0 stay apart): the fp16 transpose's 1,316 predictions hold 13,160 terms but 195
    distinct ones, and each tuple made is one more object for the cyclic collector's pass after a ranking."""
    key = values.view(np.int64) if values.dtype == np.float64 else values
    _, at, inverse = np.unique(key, return_index=True, return_inverse=True)
    made = [(name, v) for v in values[at].tolist()]
    return list(map(made.__getitem__, inverse.ravel().tolist()))
