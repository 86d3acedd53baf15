"""Enumerate legal candidates for a kernel spec, score each analytically, and keep a shortlist.

The order is explicit, as in Triton's autotuner: enumerate the spec's ``SPACE`` -> drop what the spec's
``legal`` rejects (the one validity predicate; nothing illegal is ever scored or run) -> score every
survivor with the model -> rank -> keep ``top_k`` plus the baselines (the unpadded layout and, where legal,
the textbook +1 pad) for measurement.

The score is a predicted time, not a conflict count: a block's shared-memory instructions go through the
layout into the model (wavefronts per tile), and the kernel's whole run is the slowest of three streams,
each at the machine's measured ceiling (``arch.Arch``): global bytes at the copy bandwidth, shared-memory
wavefronts at one per SM per clock, and arithmetic at the fp32 rate. Occupancy (from threads and the
layout's footprint) scales how much of the memory bandwidth the kernel can keep in flight, and the last
partial wave of blocks costs a whole wave. Among candidates free of conflicts, those terms are what
separate a fast transpose from a slow one.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

from .access import score as score_pattern
from .arch import Arch, get_arch
from .layouts import Legality
from .spec import KernelSpec

__all__ = [
    "Candidate",
    "Prediction",
    "enumerate_candidates",
    "launch_config",
    "neighbours",
    "predict",
    "rank",
    "shortlist",
]


@dataclass(frozen=True)
class Prediction:
    """What the model says of one candidate on one shape."""

    seconds: float
    bound: str  # which stream limits it: "dram", "smem" or "flops"
    wavefronts_per_tile: int
    ideal_per_tile: int
    occupancy: float  # resident warps / the SM's maximum
    footprint: int  # bytes of shared memory per block

    @property
    def conflict_degree(self) -> float:
        return self.wavefronts_per_tile / self.ideal_per_tile if self.ideal_per_tile else 1.0


@dataclass(frozen=True)
class Candidate:
    """One point of a kernel's space: its constants, its layout, and the model's prediction."""

    constants: tuple[tuple[str, int], ...]
    layout: Any
    prediction: Prediction
    roles: tuple[str, ...] = field(default=())  # "unpadded", "textbook" for the baselines

    @property
    def params(self) -> dict[str, int]:
        return dict(self.constants)

    @property
    def key(self) -> str:
        """Stable text key of the constants (cache entries and tie-breaks use it)."""
        return ",".join(f"{k}={v}" for k, v in self.constants)


def _freeze(constants: dict[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((str(k), int(v)) for k, v in constants.items()))


def enumerate_candidates(spec: KernelSpec, shape: tuple[int, ...], dtype: str) -> list[dict[str, int]]:
    """Every combination of the spec's tunables that its ``legal`` accepts, in a deterministic order."""
    names = sorted(spec.SPACE)
    out = []
    for values in itertools.product(*(spec.SPACE[n] for n in names)):
        constants = dict(zip(names, values))
        if spec.legal(constants, shape, dtype):
            out.append(constants)
    return out


_PATTERNS: dict[tuple, tuple] = {}


def _pattern(spec: KernelSpec, constants: dict[str, int], dtype: str, dist: str | None = None) -> tuple:
    """The spec's access pattern, shared by candidates that differ only in layout constants.

    A spec may list in ``PATTERN_KEYS`` the constants its pattern depends on (tile, threads, vector
    width); candidates that agree on those reuse one pattern object, so only the layout is re-applied.
    """

    def make() -> tuple:
        if dist is not None:  # data-dependent kernels (histograms) see the input class
            return tuple(spec.smem_pattern(constants, dtype, dist=dist))
        return tuple(spec.smem_pattern(constants, dtype))

    keys = getattr(spec, "PATTERN_KEYS", None)
    if keys is None:
        return make()
    memo = (id(spec.impl), dtype, dist, tuple(constants[k] for k in keys))
    if memo not in _PATTERNS:
        if len(_PATTERNS) > 512:
            _PATTERNS.clear()
        _PATTERNS[memo] = make()
    return _PATTERNS[memo]


def predict(
    spec: KernelSpec,
    constants: dict[str, int],
    shape: tuple[int, ...],
    dtype: str,
    arch: str | Arch = "sm_90",
    dist: str | None = None,
) -> Prediction:
    """Predicted run time of one candidate from its access pattern, footprint and traffic."""
    a = get_arch(arch)
    layout = spec.layout(constants, dtype)
    cost = score_pattern(_pattern(spec, constants, dtype, dist), layout, a)
    info = spec.launch_info(constants, shape, dtype)
    traffic = spec.traffic(shape, dtype)
    blocks, threads = int(info["blocks"]), int(info["threads"])
    smem = int(info.get("smem_bytes", getattr(layout, "footprint", 0)))
    tiles = int(info.get("tiles_per_block", 1))

    # blocks an SM can hold: limited by threads, shared memory and the block-slot count
    per_sm = min(a.max_threads_per_sm // max(threads, 1), a.max_blocks_per_sm)
    if smem:
        per_sm = min(per_sm, a.smem_per_sm // (smem + 1024))  # the runtime reserves 1 KB per block
    # ... and how many it does hold: a grid of fewer blocks than slots leaves them empty (256 GEMM blocks on
    # 132 SMs run 2 per SM, however many would fit), so concurrency and waves follow the grid too
    resident = max(1, min(per_sm, math.ceil(blocks / a.sm_count)))
    occupancy = min(1.0, resident * threads / a.max_threads_per_sm)

    # quantised waves: a partial last wave of blocks takes as long as a full one. Counted with the blocks
    # an SM really holds, a grid of one partial wave costs the imbalance between SMs (2 blocks on some,
    # 1 on others), not the whole SM's worth of empty slots.
    waves = blocks / (a.sm_count * resident)
    wave_factor = math.ceil(waves) / waves if waves > 0 else 1.0

    # Little's law: to stream at the copy bandwidth an SM needs latency x its share of the bandwidth in
    # flight (~1 us x 32 GB/s = 32 KB on an H200). A spec that says how many bytes each thread has in
    # flight (``inflight_bytes``) is judged by that, on a smooth knee x / (1 + x^4)^(1/4) that gives 0.84 at
    # exactly enough (the 32x33 fp32 transpose: 16 bytes x 2048 threads, measured 0.84 of copy); otherwise
    # by occupancy alone (a quarter of the SM's threads taken as enough).
    if "inflight_bytes" in info:
        need = a.dram_latency_s * a.dram_bytes_per_s / a.sm_count
        x = resident * threads * float(info["inflight_bytes"]) / need
    else:
        x = occupancy / 0.25
    mem_eff = x / (1.0 + x**4) ** 0.25 if x > 0 else 1e-9
    # a spec may know its global accesses stream worse than a copy (a guarded scalar path for misaligned
    # rows, say): ``dram_efficiency`` scales the bandwidth it can reach
    mem_eff *= float(info.get("dram_efficiency", 1.0))
    t_dram = traffic["bytes"] / (a.dram_bytes_per_s * mem_eff)
    t_smem = cost.wavefronts * tiles * blocks / a.smem_wavefronts_per_s
    # arithmetic needs warps to hide its latencies (shared loads, the FMA pipeline): one resident warp per
    # scheduler (4 per SM) reaches ~0.84 of the peak on the same smooth knee, two ~0.97. A 1024^3 SIMT GEMM
    # of 128 blocks runs one block per SM: 4 warps measured 1.11x slower than 8 (quality study, H200).
    w = resident * threads / 32 / 4
    t_flops = traffic.get("flops", 0) / (a.fp32_flops * (w / (1.0 + w**4) ** 0.25))
    terms = {"dram": t_dram * wave_factor, "smem": t_smem * wave_factor, "flops": t_flops * wave_factor}
    bound = max(terms, key=terms.get)
    # the streams overlap imperfectly: the slowest dominates, the others add a little
    seconds = terms[bound] + 0.1 * (sum(terms.values()) - terms[bound])
    return Prediction(seconds, bound, cost.wavefronts, cost.ideal, occupancy, smem)


def _roles(
    spec: KernelSpec, constants: dict[str, int], shape: tuple[int, ...], dtype: str
) -> tuple[str, ...]:
    roles = []
    if getattr(spec, "DEFAULTS", None) is not None and _freeze(constants) == _freeze(spec.DEFAULTS):
        roles.append("unpadded")
    textbook = spec.textbook(shape, dtype) if hasattr(spec, "textbook") else None
    if textbook is not None and _freeze(constants) == _freeze(textbook):
        roles.append("textbook")
    return tuple(roles)


def rank(
    spec: KernelSpec,
    shape: tuple[int, ...],
    dtype: str,
    arch: str | Arch = "sm_90",
    extra: list[dict[str, int]] | None = None,
    dist: str | None = None,
) -> list[Candidate]:
    """All legal candidates, best predicted first; ties go to fewer conflicts, then the smaller footprint.

    ``extra`` adds constants outside the enumeration (the baselines), each still subject to ``legal``.
    """
    seen = {_freeze(c): c for c in enumerate_candidates(spec, shape, dtype)}
    for c in extra or []:
        frozen = _freeze(c)
        if frozen not in seen and spec.legal(c, shape, dtype):
            seen[frozen] = c
    out = []
    for frozen, c in seen.items():
        p = predict(spec, c, shape, dtype, arch, dist)
        out.append(Candidate(frozen, spec.layout(c, dtype), p, _roles(spec, c, shape, dtype)))
    out.sort(
        key=lambda c: (c.prediction.seconds, c.prediction.wavefronts_per_tile, c.prediction.footprint, c.key)
    )
    return out


def baselines(spec: KernelSpec, shape: tuple[int, ...], dtype: str) -> list[dict[str, int]]:
    """The unpadded constants and, where the spec has one, the textbook +1 pad."""
    out = []
    if getattr(spec, "DEFAULTS", None) is not None:
        out.append(dict(spec.DEFAULTS))
    if hasattr(spec, "textbook"):
        t = spec.textbook(shape, dtype)
        if t is not None:
            out.append(dict(t))
    return out


def launch_config(spec: KernelSpec, constants: dict[str, int] | Candidate) -> tuple[tuple[str, int], ...]:
    """The constants that are not the layout's: tile, threads, vector width, ... (the spec's optional
    ``LAYOUT_KEYS`` names the layout's; without it every constant counts, and each candidate is its own)."""
    params = getattr(constants, "params", constants)  # a Candidate, or anything with .params, or a dict
    layout_keys = set(getattr(spec, "LAYOUT_KEYS", ()))
    return tuple(sorted((k, v) for k, v in params.items() if k not in layout_keys))


def shortlist(ranked: list[Candidate], top_k: int, spec: KernelSpec | None = None) -> list[Candidate]:
    """What to measure first: the ``top_k`` best predicted, every baseline (always measured, for
    comparison), and, given the spec, the best-predicted layout of each of the ``top_k`` best launch
    configurations.

    Why both: the model ranks layouts of one launch configuration well (bank conflicts are what it
    counts), but it ties many launch configurations at the memory-bandwidth floor, where the top_k alone
    can be six conflict-free layouts of a single tile shape; one layout per configuration spends the
    measurements on the choice the model cannot make.
    """
    if top_k < 1:
        raise ValueError(f"top_k: must be at least 1, got {top_k}")
    keep = {c.key: c for c in ranked[:top_k]}
    if spec is not None:
        seen: set = set()
        for c in ranked:
            cfg = launch_config(spec, c)
            if cfg in seen:
                continue
            seen.add(cfg)
            keep.setdefault(c.key, c)
            if len(seen) >= top_k:
                break
    for c in ranked[top_k:]:
        if c.roles:
            keep.setdefault(c.key, c)
    return list(keep.values())


def neighbours(
    spec: KernelSpec, ranked: list[Candidate], around: Candidate, layouts: int = 3
) -> list[Candidate]:
    """Where to look next after measuring: candidates one step from ``around`` in its launch configuration.

    For each non-layout constant, the value before and after ``around``'s in the spec's ``SPACE`` order,
    each as its best-predicted layout; and the next ``layouts`` best-predicted layouts of ``around``'s own
    configuration (the model cannot see a swizzle's index arithmetic, so layouts it ties are compared on
    the GPU). The tuner measures these and moves to the fastest until none is faster: a local search that
    the model seeds and the measurements steer.
    """
    layout_keys = set(getattr(spec, "LAYOUT_KEYS", ()))
    best_of: dict[tuple, Candidate] = {}
    same = []
    here = launch_config(spec, around)
    for c in ranked:
        cfg = launch_config(spec, c)
        best_of.setdefault(cfg, c)
        if cfg == here and c.key != around.key and len(same) < layouts:
            same.append(c)
    out = []
    base = dict(here)
    for name, value in here:
        if name in layout_keys:
            continue
        values = list(spec.SPACE.get(name, ()))
        if value not in values:
            continue
        i = values.index(value)
        for j in (i - 1, i + 1):
            if 0 <= j < len(values):
                step = tuple(sorted({**base, name: values[j]}.items()))
                if step in best_of:
                    out.append(best_of[step])
    return out + same


def check_legal(spec: KernelSpec, constants: dict[str, int], shape: tuple[int, ...], dtype: str) -> Legality:
    """The spec's validity predicate, as a Legality (specs may return a bool)."""
    res = spec.legal(constants, shape, dtype)
    return res if isinstance(res, Legality) else Legality(bool(res), "" if res else "rejected by the spec")
