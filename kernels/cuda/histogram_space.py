"""The histogram's space and its legality: the constants and their values, the restrictions the enumerator
prunes with, and ``legal`` / ``legal_batch``, the same answer one candidate or a column of them at a time.

``SPACE`` spans the privatised sub-histogram (``REPLICAS``, ``INTERLEAVED``, ``PAD``, who shares a replica:
``PRIV``), the counters (``COUNTER`` 16: two bins a word), the aggregation (``AGG``), passes
(``BINS_PER_PASS``) and the launch (``THREADS``, ``ITEMS``, ``BLOCKS_PER_SM``). ``RESTRICTIONS`` are
the cheap necessary conditions, as strings the enumerator evaluates over the whole space at once, and as
Python (``_broken_rule``, one candidate) and numpy (``_rules_batch``, a column of them): a test holds the
three to the same answer. The checks of the constants alone (restrictions, the layout's footprint against
the block's and the SM's shared memory) are cached per candidate (``_static``); the bins' checks per pass
width and counter (``_legal_bins``).

Why a module of its own: this is what the tuner enumerates and prunes, apart from what the model scores
(histogram_pattern.py, histogram_cost.py) and what runs (histogram_launch.py, histogram.cu).
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from autopad.arch import get_arch
from autopad.kernel_base import batch_columns
from autopad.layouts import Legality, Replicated
from autopad.spec import per_distinct

if TYPE_CHECKING:
    from .histogram import HistogramCuda

__all__ = ["ARCH", "SPACE", "DEFAULTS", "RESTRICTIONS", "legal", "legal_batch"]

ARCH = get_arch("sm_90")


SPACE: dict[str, tuple[int, ...]] = {
    "BINS_PER_PASS": (256, 1024, 4096, 16384, 32768, 65536),
    "REPLICAS": (1, 2, 4, 8, 16, 32),
    "INTERLEAVED": (0, 1),
    "PAD": (0, 1, 2, 4),
    "AGG": (0, 1, 2, 3, 4),
    "THREADS": (256, 512, 1024),
    "ITEMS": (1, 2, 4),
    "BLOCKS_PER_SM": (1, 2, 4, 8),
    "PRIV": (0, 1, 2),
    "COUNTER": (32, 16),
}
DEFAULTS = {
    "BINS_PER_PASS": 256, "REPLICAS": 1, "INTERLEAVED": 0, "PAD": 0, "AGG": 0,
    "THREADS": 256, "ITEMS": 2, "BLOCKS_PER_SM": 4, "PRIV": 0, "COUNTER": 32,
}  # fmt: skip
LAYOUT_KEYS = ("REPLICAS", "INTERLEAVED", "PAD")  # the privatised copies and where they sit
# the pattern is in logical (replica, bin) coordinates: the layout constants INTERLEAVED and PAD place
# it, the model scores it under each
PATTERN_KEYS = ("AGG", "BINS_PER_PASS", "COUNTER", "ITEMS", "PRIV", "REPLICAS", "THREADS")
# what ``layout`` reads: a ranking makes one layout per distinct combination (autopad.space)
LAYOUT_READS = ("COUNTER", "PRIV", "BINS_PER_PASS", "THREADS", "REPLICAS", "INTERLEAVED", "PAD")

# bytes of shared memory per block (Replicated.footprint), as an expression over the constants
_FOOTPRINT = (
    "(BINS_PER_PASS * 2 if COUNTER == 16 else (BINS_PER_PASS * (THREADS + 4) if PRIV == 2 else "
    "(BINS_PER_PASS * (REPLICAS + PAD) * 4 if INTERLEAVED else REPLICAS * (BINS_PER_PASS + PAD) * 4)))"
)

RESTRICTIONS = (
    "THREADS * BLOCKS_PER_SM <= 2048",
    "REPLICAS > 1 or (INTERLEAVED == 0 and PAD == 0)",  # one replica: nothing to interleave or pad
    "REPLICAS < 32 or PRIV == 1",
    "PRIV == 1 or REPLICAS * 32 <= THREADS",  # a replica per warp at most
    "PRIV != 1 or (REPLICAS > 1 and AGG == 0 and COUNTER == 32)",  # one replica: PRIV 0 spells it
    "PRIV != 2 or (REPLICAS == 1 and AGG == 0 and COUNTER == 32)",  # a thread's own bytes
    "COUNTER == 32 or (REPLICAS == 1 and AGG != 1 and BINS_PER_PASS >= 16384)",
    "AGG < 3 or COUNTER == 16",  # runs and the even/odd split are the 16-bit counters' aggregations
    # the layout's footprint fits a block, and BLOCKS_PER_SM blocks (1 KB each reserved) fit an SM
    f"{_FOOTPRINT} <= {ARCH.smem_per_block}",
    f"({_FOOTPRINT} + 1024) * BLOCKS_PER_SM <= {ARCH.smem_per_sm}",
)


def _fit_pass(bins: int) -> int:
    """The smallest BINS_PER_PASS that covers ``bins`` in one pass (or the largest there is)."""
    return next((v for v in SPACE["BINS_PER_PASS"] if v >= bins), 65536)


def _broken_rule(c: dict[str, int]) -> str | None:
    """The first of RESTRICTIONS that ``c`` breaks, evaluated in Python (legal() runs per candidate; the
    strings are for the enumerator's vectorised pass; a test holds the two to the same answer)."""
    ok = (
        c["THREADS"] * c["BLOCKS_PER_SM"] <= 2048,
        c["REPLICAS"] > 1 or (c["INTERLEAVED"] == 0 and c["PAD"] == 0),
        c["REPLICAS"] < 32 or c["PRIV"] == 1,
        c["PRIV"] == 1 or c["REPLICAS"] * 32 <= c["THREADS"],
        c["PRIV"] != 1 or (c["REPLICAS"] > 1 and c["AGG"] == 0 and c["COUNTER"] == 32),
        c["PRIV"] != 2 or (c["REPLICAS"] == 1 and c["AGG"] == 0 and c["COUNTER"] == 32),
        c["COUNTER"] == 32 or (c["REPLICAS"] == 1 and c["AGG"] != 1 and c["BINS_PER_PASS"] >= 16384),
        c["AGG"] < 3 or c["COUNTER"] == 16,
    )  # the two footprint rules last: legal() checks them on the layout itself
    return next((r for r, good in zip(RESTRICTIONS, ok) if not good), None)


_KEYS = tuple(SPACE)  # the constants, in SPACE's order (_static's key)


@lru_cache(maxsize=1 << 16)
def _static(spec: HistogramCuda, key: tuple[int, ...], dtype: str) -> tuple[Legality, Legality]:
    """``legal``'s checks of the constants alone (in ``_KEYS`` order), before and after the bins': the
    restrictions, the layout and the block's budget; then the blocks an SM must hold."""
    c = dict(zip(_KEYS, key))
    broken = _broken_rule(c)
    if broken:
        return Legality(False, f"restriction {broken}"), Legality(True)
    try:
        smem = spec.smem_bytes(c, dtype)  # builds (and so validates) the layout
    except (ValueError, KeyError) as exc:
        return Legality(False, str(exc)), Legality(True)
    if smem > ARCH.smem_per_block:
        return Legality(
            False,
            f"footprint {smem} bytes exceeds the shared-memory budget of {ARCH.smem_per_block} bytes",
        ), Legality(True)
    bps = c["BLOCKS_PER_SM"]
    if smem * bps > ARCH.smem_per_sm - 1024 * bps:
        return Legality(True), Legality(False, f"{bps} blocks of {smem} bytes do not fit one SM")
    return Legality(True), Legality(True)


# what ``layout`` and ``smem_bytes`` read: the footprint is the same for candidates equal in these
_LAYOUT_READS = LAYOUT_READS


def _static_smem(spec: HistogramCuda, c: dict[str, int], dtype: str) -> int:
    """``smem_bytes`` as ``_static`` asks for it, -1 where building the layout fails."""
    try:
        return spec.smem_bytes(c, dtype)
    except (ValueError, KeyError):
        return -1


def _rules_batch(c: dict[str, np.ndarray]) -> np.ndarray:
    """``_broken_rule(c) is None`` for columns of candidates (int64 arrays): the same eight rules."""
    rep, prv, agg, ctr = c["REPLICAS"], c["PRIV"], c["AGG"], c["COUNTER"]
    ok = c["THREADS"] * c["BLOCKS_PER_SM"] <= 2048
    ok &= (rep > 1) | ((c["INTERLEAVED"] == 0) & (c["PAD"] == 0))
    ok &= (rep < 32) | (prv == 1)
    ok &= (prv == 1) | (rep * 32 <= c["THREADS"])
    ok &= (prv != 1) | ((rep > 1) & (agg == 0) & (ctr == 32))
    ok &= (prv != 2) | ((rep == 1) & (agg == 0) & (ctr == 32))
    ok &= (ctr == 32) | ((rep == 1) & (agg != 1) & (c["BINS_PER_PASS"] >= 16384))
    ok &= (agg < 3) | (ctr == 16)
    return ok


@lru_cache(maxsize=4096)
def _legal_bins(per_pass: int, counter: int, bins: int, dtype: str) -> Legality:
    if bins >= 2**31:  # histogram.cu takes the bin count as a C int (and the launch as np.int32)
        return Legality(False, f"{bins} bins: the kernel counts bins in a 32-bit int, at most 2**31 - 1")
    if dtype == "uint8" and bins > 256:
        return Legality(False, "uint8 values cannot reach more than 256 bins")
    if per_pass > _fit_pass(bins):
        return Legality(False, f"{per_pass} bins per pass waste shared memory on {bins} bins")
    if counter == 16 and per_pass < bins:
        return Legality(False, "16-bit counters run in one pass: BINS_PER_PASS must cover the bins")
    return Legality(True)


@lru_cache(maxsize=4096)
def _replicated(bins: int, replicas: int, elem: int, interleaved: int, pad: int) -> Replicated:
    return Replicated(bins, replicas, elem, bool(interleaved), pad)


def legal(
    spec: HistogramCuda, constants: dict[str, int], shape: tuple[int, ...], dtype: str = "int32"
) -> Legality:
    """The restrictions, the layout's budget, passes, occupancy and the shape's own limits (the checks
    of the constants alone are cached: ``_static``)."""
    ok = spec.legal_preamble(constants, shape, dtype)
    if not ok:
        return ok
    c = constants
    fits, per_sm = _static(spec, tuple(c[k] for k in _KEYS), dtype)
    if not fits:
        return fits
    ok = _legal_bins(c["BINS_PER_PASS"], c["COUNTER"], int(shape[1]), dtype)
    return ok if not ok else per_sm


def legal_batch(
    spec: HistogramCuda, columns: dict[str, np.ndarray], shape: tuple[int, ...], dtype: str
) -> np.ndarray:
    """``legal`` of many candidates at once (``columns``: constant -> int array), the same answer row for
    row: the restrictions as array expressions (``_rules_batch``), the footprint once per distinct
    layout, the bins' checks once per distinct pass width and counter."""
    refused = spec.legal_batch_preamble(columns, shape, dtype)  # as ``legal``: every constant, the shape
    if refused is not None:
        return refused
    cols = batch_columns(columns, _KEYS, dtype=np.int64)
    ok = _rules_batch(cols)
    at = np.flatnonzero(ok)
    if len(at):  # _static's footprint checks, on the candidates every restriction keeps
        sub = {k: v[at] for k, v in cols.items()}
        rows, which = per_distinct(sub, _LAYOUT_READS)
        smem = np.array([_static_smem(spec, r, dtype) for r in rows], dtype=np.int64)[which]
        bps = sub["BLOCKS_PER_SM"]
        # smem -1: the layout refused the constants (``_static`` reports its ValueError)
        fits = (smem >= 0) & (smem <= ARCH.smem_per_block)
        ok[at] = fits & (smem * bps <= ARCH.smem_per_sm - 1024 * bps)  # BLOCKS_PER_SM blocks per SM
    rows, at = per_distinct(cols, ("BINS_PER_PASS", "COUNTER"))
    bins = [bool(_legal_bins(r["BINS_PER_PASS"], r["COUNTER"], int(shape[1]), dtype)) for r in rows]
    return ok & np.array(bins, dtype=bool)[at]
