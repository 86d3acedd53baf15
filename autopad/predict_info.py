"""What a spec tells the predictor about its launches, checked: ``launch_info``'s keys (``KEYS``, with their
defaults in ``INFO_DEFAULTS``) and ``traffic``'s bytes and flops.

``check_launch_info`` and ``check_traffic`` turn a spec's answers into dicts of finite, non-negative numbers,
or raise a ``LaunchInfoError`` naming the spec function and the key (a likely typo of a key is pointed out);
``info_columns`` gives ``predict.predict_arrays`` one float64 column per key, a left-out key at its default.

Why a module of its own: this is the predictor's input contract (what a spec may state, and how it is
checked), apart from the arithmetic that reads it (predict.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["KEYS", "INFO_DEFAULTS", "LaunchInfoError", "check_launch_info", "check_traffic", "info_columns"]


class LaunchInfoError(ValueError):
    """A spec's ``launch_info`` or ``traffic`` returned something the predictor cannot use."""


_REQUIRED = ("blocks", "threads")
# optional launch_info keys, all per candidate
KEYS = {
    "smem_bytes": "shared memory per block (default: the layout's footprint)",
    "tiles_per_block": "tiles (k-steps) each block walks through; the pattern is one tile's (default 1)",
    "inflight_bytes": "global bytes each thread keeps in flight (default: footprint / threads)",
    "dram_efficiency": "share of the copy bandwidth its global accesses can reach, <= 1 (default 1)",
    "passes": "launches over the input; each after the first costs Constants.launch_s (default 1)",
    "mma_bytes": "operand bytes of tensor-core arithmetic (2: bf16/fp16, 4: tf32, 1: fp8); 0 = SIMT",
    "l2_bytes": "bytes all blocks read and write through L2, operand re-reads included (default: traffic)",
    "l2_async": "the share of l2_bytes that asynchronous bulk copies (TMA, pipelined cp.async) move, 0 to "
    "1: the Arch's async L2 rate, judged against L2's own latency need; the rest at the plain rate "
    "(default 0)",
    "extra_wavefronts": "shared-memory wavefronts per block the pattern does not list (TMA, wgmma reads)",
    "block_cycles": "SM cycles a block spends after its tiles, over all its launches (a counters' flush)",
    "issue_cycles": "SM cycles of instructions per block per tile the pattern does not list (a warp match)",
    "wait_cycles": "SM cycles per block per tile its warps wait that its own work cannot fill and other "
    "resident blocks can: charged on the issue stream over the blocks an SM holds (default 0)",
    "cycles_off_knee": "1 if issue_cycles and wait_cycles are the SM's throughput, which more warps a "
    "scheduler do not hide: charged without the warp knee the listed accesses' arithmetic takes (default 0)",
    "regs_per_thread": "registers per thread: the register file then limits blocks per SM (default: none)",
    "flops_efficiency": "share of the arithmetic peak its inner loop reaches, <= 1 (register-cap spills)",
    "swizzle_accesses": "warp accesses per block per tile that compute a swizzled address (default: the "
    "pattern's phases x the layout's swizzled share; a 16-byte access computes one address for 4 phases)",
    "smem_instructions": "warp instructions per block per tile that access shared memory, issued by the "
    "warps that do SIMT arithmetic ('flops' with mma_bytes 0): each takes Constants.smem_issue issue slots "
    "(itself and its address arithmetic) from the FFMAs (default 0: not charged)",
    "loop_slots": "issue slots per block per tile that other instructions of the k-loop (its compiled "
    "instructions besides the FFMAs, a checked loop's bounds tests) take from the FFMAs, issued by the warps "
    "that do SIMT arithmetic, as smem_instructions' are: charged at the FFMA rate (default 0)",
    "serial_phases": "1 if each block runs its tile's global loads, shared-memory passes and stores in turn "
    "(barriers between): the resident blocks then queue for DRAM, shared memory and issue (mean value "
    "analysis) instead of the streams overlapping as independent ones (default 0)",
    "latency_phases": "1 if each block runs its phases in turn but keeps its global loads in flight together "
    "and leaves its stores to drain behind it (a block alone on its SM; a GEMM k-step waiting for operand "
    "loads it cannot pipeline, a tile per k-step): the resident blocks queue for the "
    "DRAM round trip, shared memory, arithmetic and issue, and the bandwidth streams still bound the time "
    "from below (default 0; serial_phases, where stated, takes precedence)",
    "read_bytes": "global bytes the kernel's loads read (DRAM, and the first of l2_bytes): only these wait "
    "on the bytes in flight; the rest of the traffic and of l2_bytes are posted stores, at the full rate "
    "(default: every byte waits, as a load)",
    "latency_from_l2": "1 if the loads a latency phase waits for hit L2 (operand re-reads): the queue's "
    "delay is then Arch.l2_latency_s, not the DRAM round trip, and the plain share of l2_bytes (all but "
    "l2_async's) queues at the SM's share of the L2 rate (default 0)",
    "partial_memory_rounds": "1 if a grid's last partial round of blocks costs the DRAM and L2 streams their "
    "blocks' share of a round (the chip's bandwidth serves every SM: no rounds at all), as measured on the "
    "spec's own builds, rather than a whole round (default 0: whole rounds)",
    "phased_loads": "1 if each block issues its global loads in one phase before a barrier (load, barrier, "
    "read out) rather than streaming them through a loop: its bytes in flight then need resident warps "
    "too, and the share of the bandwidth they reach is also bounded by occupancy / 0.25, the bound taken "
    "where neither inflight_bytes nor a staged tile gives any (default 0)",
}
_OPTIONAL = tuple(k for k in KEYS)
# what a candidate's launch info means where it leaves a key out (nan: the term's own default applies)
INFO_DEFAULTS = {
    "blocks": 1.0,
    "threads": 32.0,
    "smem_bytes": 0.0,
    "tiles_per_block": 1.0,
    "inflight_bytes": np.nan,
    "dram_efficiency": 1.0,
    "mma_bytes": 0.0,
    "l2_bytes": np.nan,
    "l2_async": 0.0,
    "extra_wavefronts": 0.0,
    "block_cycles": 0.0,
    "issue_cycles": 0.0,
    "wait_cycles": 0.0,
    "cycles_off_knee": 0.0,
    "flops_efficiency": 1.0,
    "regs_per_thread": 0.0,
    "passes": 1.0,
    "swizzle_accesses": np.nan,
    "smem_instructions": 0.0,
    "loop_slots": 0.0,
    "serial_phases": 0.0,
    "latency_phases": 0.0,
    "latency_from_l2": 0.0,
    "read_bytes": np.nan,
    "phased_loads": 0.0,
    "partial_memory_rounds": 0.0,
}


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
    for k, (_bad, words) in _RANGES.items():
        if k in out and out_of_range(k, np.array([out[k]]))[0]:
            raise LaunchInfoError(f"{where}: {k!r} {words}, got {out[k]}")
    return out


# each key's own range beyond finite and >= 0: (which values break it, as arrays; how the error says it)
_RANGES = {
    "dram_efficiency": (lambda v: (v <= 0) | (v > 1), "must be in (0, 1]"),
    "flops_efficiency": (lambda v: (v <= 0) | (v > 1), "must be in (0, 1]"),
    "l2_async": (lambda v: v > 1, "is a share of l2_bytes, 0 to 1"),
    "mma_bytes": (lambda v: ~np.isin(v, (0, 1, 2, 4, 8)), "must be 0, 1, 2, 4 or 8"),
}


def out_of_range(key: str, values: np.ndarray) -> np.ndarray:
    """Which of one key's values (float64, finite and >= 0 already checked) break the key's own range, as
    ``check_launch_info`` words it: every candidate's, where that checks one (the batch paths of
    search_infos.py check all of a key's values at once and word the first failure by it)."""
    if key in ("blocks", "threads"):
        return values < 1
    rule = _RANGES.get(key)
    return rule[0](values) if rule else np.zeros(values.shape, dtype=bool)


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


def info_columns(infos: Sequence[Mapping[str, float]] | Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Launch infos as one float64 column per key of ``KEYS`` plus blocks and threads, a left-out key
    taking its default: from a list of ``launch_info`` dicts, or from columns (a dict of arrays)."""
    if isinstance(infos, Mapping):
        n = len(np.asarray(infos["blocks"])) if "blocks" in infos else 0
        return {
            k: np.asarray(infos[k], dtype=np.float64) if k in infos else np.full(n, d)
            for k, d in INFO_DEFAULTS.items()
        }
    return {k: np.array([i.get(k, d) for i in infos], dtype=np.float64) for k, d in INFO_DEFAULTS.items()}
