"""The histogram's input classes: what "uniform", "skewed", "single" and "sorted" data are, as the model
draws them (numpy, seeded) and as the measuring side makes them (torch, on the GPU).

The speed of a privatised histogram depends on the data: equal values in a warp hit one address, a
Zipf-skewed input piles onto the first bins, sorted input runs ``SORTED_RUN`` equal values in a row. The
tuner keys its cache by the class, so both sides must mean the same thing by each name; ``canonical_dist``
gives every alias its own name ("skewed" -> "zipf", "single" -> "equal").

Why a module of its own: the model's pattern (histogram_pattern.py), the measuring side's inputs
(``HistogramCuda.arguments``, the Triton histogram, the weighted spec) and the tests all draw from here.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

__all__ = ["DISTS", "SORTED_RUN", "canonical_dist", "sample", "block_values", "draw_values"]

# input classes that change the speed (the tuner keys its cache by them); aliases: zipf, equal
DISTS = ("uniform", "skewed", "single", "sorted")
_DIST_ALIASES = {"skewed": "zipf", "single": "equal"}
SORTED_RUN = 1024  # equal values in a row of sorted input, as the model draws it (2^26 values, 65,536 bins)
_MAX_DRAW = 1024 * 4 * 16  # values of the largest block iteration: THREADS x ITEMS x values per 16 bytes


def canonical_dist(dist: str) -> str:
    """An input class's own name: "skewed" -> "zipf", "single" -> "equal", others as they are."""
    d = _DIST_ALIASES.get(dist, dist)
    if d not in ("uniform", "zipf", "equal", "sorted"):
        raise ValueError(f"dist: {dist!r} is not one of {', '.join(DISTS)} (or zipf, equal)")
    return d


@lru_cache(maxsize=64)
def _draw(dist: str, bins: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    if dist == "uniform":
        v = rng.integers(0, bins, _MAX_DRAW)
    elif dist == "zipf":
        v = (rng.zipf(1.5, _MAX_DRAW) - 1) % bins
    else:
        v = np.full(_MAX_DRAW, min(5, bins - 1))
    v.setflags(write=False)
    return v


def sample(dist: str, bins: int, size: int) -> np.ndarray:
    """``size`` values of an i.i.d. input class (seed 0). numpy's generators draw element by element, so
    the first ``size`` values of one large draw are exactly a draw of ``size``: one draw per (dist, bins)
    serves every launch configuration."""
    d = canonical_dist(dist)
    if d == "sorted":
        raise ValueError("sample: sorted input depends on positions; use block_values")
    if size <= _MAX_DRAW:
        return _draw(d, bins)[:size]
    rng = np.random.default_rng(0)
    if d == "uniform":
        return rng.integers(0, bins, size)
    return (rng.zipf(1.5, size) - 1) % bins if d == "zipf" else np.full(size, min(5, bins - 1))


def block_values(dist: str, bins: int, threads: int, items: int, per: int) -> np.ndarray:
    """(warps * items * per, 32) values of one block iteration, row (w, it, q), column the lane: lane l of
    warp w holds component q of its it-th 16-byte vector. Sorted input reads position per * (it * threads
    + 32 w + l) + q of runs of SORTED_RUN equal values (one warp instruction spans 32 * per positions)."""
    warps = threads // 32
    if canonical_dist(dist) != "sorted":
        return sample(dist, bins, warps * 32 * items * per).reshape(-1, 32)
    w, it, q, lane = np.ix_(np.arange(warps), np.arange(items), np.arange(per), np.arange(32))
    pos = per * (it * threads + 32 * w + lane) + q
    return (((pos + SORTED_RUN // 3) // SORTED_RUN) % bins).reshape(-1, 32)


def draw_values(n: int, bins: int, dist: str) -> Any:
    """n int64 values in [0, bins) of an input class on torch's current device, under torch's global seed."""
    import torch

    d = canonical_dist(dist)
    if d == "equal":
        return torch.full((n,), min(5, bins - 1), dtype=torch.int64)
    if d == "zipf":  # P(k) ~ 1/(k+1)^1.5 by inverse transform over the bins, in random order
        p = 1.0 / torch.arange(1, bins + 1, dtype=torch.float64) ** 1.5
        if n < 2**24:
            return torch.multinomial(p.float(), n, replacement=True)
        u = torch.rand(n, dtype=torch.float64)
        return torch.searchsorted(torch.cumsum(p / p.sum(), 0), u).clamp_max(bins - 1)
    x = torch.randint(0, bins, (n,), dtype=torch.int32 if bins < 2**31 else torch.int64)
    return torch.sort(x).values.long() if d == "sorted" else x.long()
