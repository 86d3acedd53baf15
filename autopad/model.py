"""The analytical bank-conflict model: one warp instruction -> wavefronts, ideal, conflicts (numpy only).

The rules (fitted to 558 Nsight Compute probes on an H200; see ../shared/hardware/README.md):

* bank of byte address ``a`` is ``(a // 4) % 32``; an access of ``w`` bytes covers ``max(1, w // 4)``
  consecutive 4-byte words;
* the warp is cut into phases of consecutive lanes (``Arch.phase_lanes``); 8- and 16-byte loads merge two
  neighbouring phases when every active lane ``n`` reads the same address as lane ``n ^ 1`` (or every one
  as lane ``n ^ 2``), an inactive partner counting as a match (measured by ``autopad validate``): the pair
  needs half the data, so twice the lanes fit in one 128-byte phase;
* a phase costs the largest number of *distinct words* that fall in one bank: lanes that ask for the same
  word share it (broadcast; a 1-byte and a 2-byte access to one word are one word);
* atomics never broadcast: every active lane's word counts, so 32 lanes adding to one counter cost 32;
* wavefronts = sum of phase costs, ideal = number of non-empty phases, conflicts = wavefronts - ideal.

The README's fitted rules also floor a load phase at ``ceil(distinct addresses * width / 128)``. For
width-aligned addresses (the only ones the hardware accepts, and the only ones ``analyze`` accepts) that
floor never binds: aligned accesses of 4 bytes or more cover disjoint words, so the busiest bank already
holds at least ``distinct * width / 128`` of them, and narrower accesses move at most 64 bytes. The model
therefore leaves it out; tests/test_model.py checks the literal rule against the model on random input.

Everything is vectorised over a batch of instructions: each phase becomes one row, one sort per row puts
a bank's words side by side, and running sums count the distinct words per bank. No per-lane Python loop;
large batches are cut into chunks that run on all cores (numpy releases the GIL).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from .arch import Arch, get_arch

__all__ = ["Analysis", "analyze", "analyze_batch", "OPS", "WIDTHS"]

OPS = ("load", "store", "atomic")
WIDTHS = (1, 2, 4, 8, 16)
_CHUNK = 1 << 15  # instructions per vectorised block: bounds memory at a few tens of MB


@dataclass(frozen=True)
class Analysis:
    """The cost of one warp instruction, in Nsight Compute's units."""

    wavefronts: int
    ideal: int
    conflicts: int
    phase_costs: tuple[int, ...]

    @property
    def degree(self) -> float:
        """Slowdown over a conflict-free instruction (1.0 = no conflict)."""
        return self.wavefronts / self.ideal if self.ideal else 1.0


def _check(op: str, access_bytes: int, arch: Arch) -> None:
    if op not in OPS:
        raise ValueError(f"op: {op!r} is not one of {', '.join(OPS)}")
    if access_bytes not in WIDTHS:
        raise ValueError(f"access_bytes: {access_bytes!r} is not one of {WIDTHS}")
    if op == "atomic" and access_bytes not in (4, 8):
        raise ValueError(f"access_bytes: atomics are 4 or 8 bytes wide, got {access_bytes}")


def _phase_lanes(addr: np.ndarray, op: str, access_bytes: int, arch: Arch) -> np.ndarray:
    """Lanes per phase for each instruction of the batch (merging paired wide loads)."""
    n, w = addr.shape
    base = arch.phase_lanes(access_bytes)
    lanes = np.full(n, base, dtype=np.int64)
    if op == "load" and arch.merge_paired_loads and access_bytes > arch.bank_bytes and base < w:
        # Every active lane n must read what lane n^1 (or n^2) reads; a partner that is inactive (-1)
        # does not break the pairing (measured: `autopad validate` on the H200, 2026-11-29).
        def paired(a: np.ndarray, b: np.ndarray, axes: int | tuple[int, int]) -> np.ndarray:
            return ((a == b) | (a < 0) | (b < 0)).all(axis=axes)

        pairs1 = addr.reshape(n, w // 2, 2)
        pairs2 = addr.reshape(n, w // 4, 2, 2)
        merged = paired(pairs1[:, :, 0], pairs1[:, :, 1], 1)
        merged |= paired(pairs2[:, :, 0, :], pairs2[:, :, 1, :], (1, 2))
        lanes[merged] = base * 2
    return lanes


def _phase_cost(lanes: np.ndarray, op: str, unit: int, unit_banks: int) -> np.ndarray:
    """Cost of each row of ``lanes`` (one phase each; -1 = inactive): most distinct units in one bank."""
    top = int(lanes.max(initial=0)) // unit
    shift = max(1, top.bit_length())
    dtype = np.int32 if shift + (unit_banks - 1).bit_length() < 31 else np.int64
    word = lanes.astype(dtype) // unit  # an inactive lane (-1) stays negative
    # key = (bank, word) packed in one integer; sorting makes each bank's words contiguous, equal words
    # side by side. Inactive lanes get key -1 and sort first.
    key = ((word % unit_banks) << shift) | word
    key[word < 0] = -1
    key.sort(axis=1)
    counted = key >= 0  # atomics: no broadcast, every active lane's word is its own request
    if op != "atomic":
        counted[:, 1:] &= key[:, 1:] != key[:, :-1]  # a word counts once: where it differs from its left
    # rank of each entry among the counted words of its bank, via running sums:
    # rank = counted so far - counted before the bank's run began; the phase costs the largest rank
    bank = key >> shift
    running = np.cumsum(counted, axis=1, dtype=dtype)
    starts = np.ones(key.shape, dtype=bool)
    np.not_equal(bank[:, 1:], bank[:, :-1], out=starts[:, 1:])
    before = running - counted
    before *= starts
    np.maximum.accumulate(before, axis=1, out=before)
    running -= before
    return running.max(axis=1)


def _batch_core(addr: np.ndarray, op: str, access_bytes: int, arch: Arch) -> tuple[np.ndarray, np.ndarray]:
    """Per-phase costs (n, most phases) and lanes per phase (n,) for a validated batch."""
    n, w = addr.shape
    lanes = _phase_lanes(addr, op, access_bytes, arch)
    # A width-aligned access of k = width/4 words covers banks 4j..4j+k-1 of one aligned group of k
    # banks, and every word of it meets exactly the same competitors. So counting in "units" of the
    # access width over banks/k unit-banks gives the same per-bank maximum as counting all k words.
    # Narrower accesses count in whole words: bytes of one word are one word (they broadcast).
    unit = max(access_bytes, arch.bank_bytes)
    unit_banks = arch.banks * arch.bank_bytes // unit
    cost = np.zeros((n, w // arch.phase_lanes(access_bytes)), dtype=np.int64)
    for size in np.unique(lanes):  # at most two: plain phases and merged ones
        rows = np.nonzero(lanes == size)[0] if size != lanes[0] or not (lanes == size).all() else slice(None)
        part = addr[rows]
        per_phase = w // int(size)
        # phases are runs of consecutive lanes, so each phase becomes a row of its own
        cost[rows, :per_phase] = _phase_cost(part.reshape(-1, int(size)), op, unit, unit_banks).reshape(
            -1, per_phase
        )
    return cost, lanes


def _as_address_array(addresses: object, warp: int, access_bytes: int) -> np.ndarray:
    """Validate and convert to an int64 array (n, warp) with -1 for inactive lanes."""
    if isinstance(addresses, np.ndarray):
        arr = addresses
        if arr.ndim == 1:
            arr = arr[None, :]
        if arr.ndim != 2 or not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(
                f"addresses: expected integer byte addresses of shape (n, {warp}) or ({warp},), "
                f"got dtype {arr.dtype} and shape {addresses.shape}"
            )
        arr = arr.astype(np.int64, copy=False)
    else:
        try:
            rows = list(addresses)  # type: ignore[call-overload]
        except TypeError:
            raise ValueError(
                f"addresses: expected a sequence of {warp} byte addresses, got {addresses!r}"
            ) from None
        out = np.full((1, len(rows)), -1, dtype=np.int64)
        for lane, a in enumerate(rows):
            if a is None:
                continue
            if isinstance(a, bool) or not isinstance(a, (int, np.integer)):
                raise ValueError(f"addresses: lane {lane} is {a!r}; each lane is an int byte address or None")
            if a < 0:
                raise ValueError(
                    f"addresses: lane {lane} has negative address {a}; use None for an inactive lane"
                )
            out[0, lane] = a
        arr = out
    if arr.shape[1] != warp:
        raise ValueError(f"addresses: need one entry per lane ({warp} for this arch), got {arr.shape[1]}")
    if arr.min(initial=0) < -1:
        raise ValueError(
            "addresses: negative byte address; use -1 (array) or None (list) for an inactive lane"
        )
    if arr.max(initial=0) >= 1 << 40:
        raise ValueError("addresses: byte address beyond 2**40 is not a shared-memory address")
    if access_bytes == 1 or not ((arr & (access_bytes - 1)) != 0).any():
        return arr  # fast path; an inactive lane (-1) fails it and falls through to the exact check
    bad = (arr >= 0) & ((arr & (access_bytes - 1)) != 0)
    if bad.any():
        r, lane = np.argwhere(bad)[0]
        raise ValueError(
            f"addresses: lane {lane} address {arr[r, lane]} is not aligned to the {access_bytes}-byte access "
            f"width; shared-memory accesses must be aligned to their width"
        )
    return arr


def analyze_batch(
    addresses: np.ndarray, access_bytes: int = 4, op: str = "load", arch: str | Arch = "sm_90"
) -> tuple[np.ndarray, np.ndarray]:
    """Wavefronts and ideal wavefronts for many instructions at once.

    ``addresses`` is an integer array (n, warp) of per-lane byte addresses, -1 for an inactive lane.
    Returns two int64 arrays of length n: wavefronts and ideal (conflicts = wavefronts - ideal).
    """
    a = get_arch(arch)
    _check(op, access_bytes, a)
    if not isinstance(addresses, np.ndarray):
        addresses = np.asarray(addresses)
    if addresses.ndim == 1:
        addresses = addresses[None, :]
    wave = np.empty(addresses.shape[0], dtype=np.int64)
    ideal = np.empty(addresses.shape[0], dtype=np.int64)

    def run(start: int) -> None:
        sl = slice(start, start + _CHUNK)
        cost, _ = _batch_core(
            _as_address_array(addresses[sl], a.warp_size, access_bytes), op, access_bytes, a
        )
        wave[sl], ideal[sl] = cost.sum(axis=1), (cost > 0).sum(axis=1)

    starts = range(0, addresses.shape[0], _CHUNK)
    if len(starts) < 4:
        for s in starts:
            run(s)
    else:  # numpy's sorts and ufuncs release the GIL, so chunks run in parallel on every core
        with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
            list(pool.map(run, starts))
    return wave, ideal


def analyze(
    addresses: Sequence[int | None] | np.ndarray,
    access_bytes: int = 4,
    op: str = "load",
    arch: str | Arch = "sm_90",
) -> Analysis:
    """Cost of one warp instruction: per-lane byte addresses (None = inactive lane) -> Analysis.

    >>> analyze([lane * 4 * 32 for lane in range(32)]).wavefronts   # column of a 32x32 fp32 tile
    32
    >>> analyze([lane * 4 * 33 for lane in range(32)]).wavefronts   # the same column, rows padded to 33
    1
    """
    a = get_arch(arch)
    _check(op, access_bytes, a)
    arr = _as_address_array(addresses, a.warp_size, access_bytes)
    if arr.shape[0] != 1:
        raise ValueError(f"addresses: analyze takes one instruction; got {arr.shape[0]}, use analyze_batch")
    cost, lanes = _batch_core(arr, op, access_bytes, a)
    costs = [int(c) for c in cost[0, : a.warp_size // int(lanes[0])]]
    wavefronts = int(sum(costs))
    ideal = sum(1 for c in costs if c)
    return Analysis(
        wavefronts=wavefronts, ideal=ideal, conflicts=wavefronts - ideal, phase_costs=tuple(costs)
    )
