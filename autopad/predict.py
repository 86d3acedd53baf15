"""The predicted run time of candidates: wavefronts, occupancy, bytes in flight, waves -> seconds.

The score is a time, not a conflict count: a block's shared-memory instructions go through the layout into
the model (wavefronts per tile), and the kernel's whole run is the slowest of three streams, each at the
machine's measured ceiling (``arch.Arch``): global bytes at the copy bandwidth, shared-memory wavefronts
at one per SM per clock, and arithmetic at the fp32 rate. Occupancy (from threads and the layout's
footprint) scales how much of the memory bandwidth the kernel can keep in flight, and the last partial
wave of blocks costs a whole wave. Among candidates free of conflicts, those terms are what separate a
fast transpose from a slow one.

Everything is computed for a whole batch of candidates at once (numpy arrays, one entry per candidate), so
ranking a space of thousands costs one pass. ``Prediction`` records each term, so a verbose report can
show why a candidate ranks where it does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .arch import Arch, get_arch

__all__ = ["Prediction", "predict_batch", "LaunchInfoError", "check_launch_info", "check_traffic"]


class LaunchInfoError(ValueError):
    """A spec's ``launch_info`` or ``traffic`` returned something the predictor cannot use."""


@dataclass(frozen=True)
class Prediction:
    """What the model says of one candidate on one shape."""

    seconds: float
    bound: str  # which stream limits it: "dram", "smem" or "flops"
    wavefronts_per_tile: int
    ideal_per_tile: int
    occupancy: float  # resident warps / the SM's maximum
    footprint: int  # bytes of shared memory per block
    terms: tuple[tuple[str, float], ...] = ()  # the predictor's terms, for --verbose

    @property
    def conflict_degree(self) -> float:
        return self.wavefronts_per_tile / self.ideal_per_tile if self.ideal_per_tile else 1.0


_REQUIRED = ("blocks", "threads")
_OPTIONAL = ("smem_bytes", "tiles_per_block", "inflight_bytes", "dram_efficiency", "passes")


def check_launch_info(info: Any, where: str) -> dict[str, float]:
    """``info`` as a dict of numbers, or a LaunchInfoError naming ``where`` (the spec function) and key."""
    if not isinstance(info, Mapping):
        raise LaunchInfoError(
            f"{where}: returned {type(info).__name__}; return a dict with 'blocks' and 'threads' "
            f"(optional: {', '.join(_OPTIONAL)})"
        )
    missing = [k for k in _REQUIRED if k not in info]
    if missing:
        near = sorted(k for k in info if k not in _REQUIRED + _OPTIONAL)
        hint = f" (it has {', '.join(map(repr, near))}: a typo?)" if near else ""
        raise LaunchInfoError(f"{where}: the dict lacks {', '.join(map(repr, missing))}{hint}")
    out: dict[str, float] = {}
    for k, v in info.items():
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise LaunchInfoError(f"{where}: {k!r} is {v!r}; every value must be a number")
        if not np.isfinite(v) or v < 0:
            raise LaunchInfoError(f"{where}: {k!r} is {v!r}; it must be finite and >= 0")
        out[str(k)] = float(v)
    if out["blocks"] < 1 or out["threads"] < 1:
        raise LaunchInfoError(f"{where}: 'blocks' and 'threads' must be >= 1, got {info!r}")
    if "dram_efficiency" in out and not 0 < out["dram_efficiency"] <= 1:
        raise LaunchInfoError(f"{where}: 'dram_efficiency' must be in (0, 1], got {out['dram_efficiency']}")
    return out


def check_traffic(traffic: Any, where: str) -> dict[str, float]:
    """``traffic(shape, dtype)``'s dict, checked: 'bytes' (and optional 'flops') finite and >= 0."""
    if not isinstance(traffic, Mapping) or "bytes" not in traffic:
        raise LaunchInfoError(
            f"{where}: must return a dict with 'bytes' (and optionally 'flops'), got {traffic!r}"
        )
    out = {}
    for k in ("bytes", "flops"):
        v = traffic.get(k, 0)
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise LaunchInfoError(f"{where}: {k!r} is {v!r}; it must be a number")
        if not np.isfinite(v) or v < 0:
            raise LaunchInfoError(f"{where}: {k!r} is {v!r}; it must be finite and >= 0")
        out[k] = float(v)
    return out


def _knee(x: np.ndarray) -> np.ndarray:
    """The smooth knee x / (1 + x^4)^(1/4): ~x below 1, 1 above, 0.84 at exactly 1."""
    with np.errstate(over="ignore"):
        return np.where(x > 0, x / (1.0 + np.minimum(x, 1e6) ** 4) ** 0.25, 1e-9)


def predict_batch(
    infos: Sequence[Mapping[str, float]],
    traffic: Mapping[str, float],
    wavefronts: np.ndarray,
    ideal: np.ndarray,
    arch: str | Arch = "sm_90",
) -> list[Prediction]:
    """Predicted time of each candidate from its launch info, the shape's traffic and its wavefronts per
    tile."""
    a = get_arch(arch)
    n = len(infos)
    if n == 0:
        return []

    def col(key: str, default: float) -> np.ndarray:
        return np.array([i.get(key, default) for i in infos], dtype=np.float64)

    blocks, threads = col("blocks", 1), col("threads", 32)
    smem, tiles = col("smem_bytes", 0), col("tiles_per_block", 1)
    inflight, dram_eff = col("inflight_bytes", np.nan), col("dram_efficiency", 1.0)

    # blocks an SM can hold: limited by threads, shared memory (the runtime reserves 1 KB per block) and
    # the block-slot count ...
    per_sm = np.minimum(a.max_threads_per_sm // np.maximum(threads, 1), a.max_blocks_per_sm)
    per_sm = np.where(smem > 0, np.minimum(per_sm, a.smem_per_sm // (smem + 1024)), per_sm)
    # ... and how many it does hold: a grid of fewer blocks than slots leaves them empty (256 GEMM blocks on
    # 132 SMs run 2 per SM, however many would fit), so concurrency and waves follow the grid too
    resident = np.maximum(1, np.minimum(per_sm, np.ceil(blocks / a.sm_count)))
    occupancy = np.minimum(1.0, resident * threads / a.max_threads_per_sm)

    # quantised waves: a partial last wave of blocks takes as long as a full one. Counted with the blocks
    # an SM really holds, a grid of one partial wave costs the imbalance between SMs (2 blocks on some,
    # 1 on others), not the whole SM's worth of empty slots.
    waves = blocks / (a.sm_count * resident)
    wave_factor = np.where(waves > 0, np.ceil(waves) / np.maximum(waves, 1e-30), 1.0)

    # Little's law: to stream at the copy bandwidth an SM needs latency x its share of the bandwidth in
    # flight (~1 us x 32 GB/s = 32 KB on an H200). A spec that says how many bytes each thread has in
    # flight (``inflight_bytes``) is judged by that, on the smooth knee that gives 0.84 at exactly enough
    # (the 32x33 fp32 transpose: 16 bytes x 2048 threads, measured 0.84 of copy); otherwise by occupancy
    # alone (a quarter of the SM's threads taken as enough).
    need = a.dram_latency_s * a.dram_bytes_per_s / a.sm_count
    x = np.where(np.isnan(inflight), occupancy / 0.25, resident * threads * np.nan_to_num(inflight) / need)
    # a spec may know its global accesses stream worse than a copy (a guarded scalar path for misaligned
    # rows, say): ``dram_efficiency`` scales the bandwidth it can reach
    mem_eff = _knee(x) * dram_eff
    t_dram = traffic["bytes"] / (a.dram_bytes_per_s * mem_eff)
    t_smem = np.asarray(wavefronts, dtype=np.float64) * tiles * blocks / a.smem_wavefronts_per_s
    # arithmetic needs warps to hide its latencies (shared loads, the FMA pipeline): one resident warp per
    # scheduler (4 per SM) reaches ~0.84 of the peak on the same smooth knee, two ~0.97. A 1024^3 SIMT GEMM
    # of 128 blocks runs one block per SM: 4 warps measured 1.11x slower than 8 (quality study, H200).
    w = resident * threads / 32 / 4
    t_flops = traffic.get("flops", 0.0) / (a.fp32_flops * _knee(w))
    terms = np.stack([t_dram, t_smem, t_flops]) * wave_factor
    bound_i = terms.argmax(axis=0)
    top = terms.max(axis=0)
    # the streams overlap imperfectly: the slowest dominates, the others add a little
    seconds = top + 0.1 * (terms.sum(axis=0) - top)
    names = ("dram", "smem", "flops")
    out = []
    for i in range(n):
        out.append(
            Prediction(
                float(seconds[i]),
                names[int(bound_i[i])],
                int(wavefronts[i]),
                int(ideal[i]),
                float(occupancy[i]),
                int(smem[i]),
                (
                    ("dram_s", float(terms[0, i])),
                    ("smem_s", float(terms[1, i])),
                    ("flops_s", float(terms[2, i])),
                    ("mem_efficiency", float(mem_eff[i])),
                    ("wave_factor", float(wave_factor[i])),
                    ("resident_blocks", float(resident[i])),
                ),
            )
        )
    return out
