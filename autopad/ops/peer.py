"""torch's own call as the floor of ``autopad.ops.matmul``: on a shape where it has timed both, the op is
not more than ``MARGIN`` slower than ``torch.mm`` (calls of ``MIN_MS`` of GPU time or more).

Why: a user calls ``autopad.ops.matmul`` instead of ``a @ b`` to go faster. On most shapes autopad's tuned
GEMM matches or beats cuBLAS (H200: 1.00 at 4096^3 and 8192^3 bf16, 1.03 at fp32 3000x1000x2000), but on
some it cannot (bf16 3000x5000x1000: the best of its 1,117 candidates 0.79 of cuBLAS, for want of TMA
multicast in Triton 3.6). Running the slower kernel there, having measured it, would serve nobody. So the
first call of a shape on a device times the bound kernel and ``torch.mm`` on the call's own operands, with
the project's one timing path (``bench_timing.benchmark``: L2 flushed, CUDA events, median), and the op
runs ``torch.mm`` for that shape when it measured more than ``MARGIN`` faster. ``decisions()`` says which
runs and both times.

The runner (``runner._judge``) asks for a verdict only with ``backend="auto"``, contiguous CUDA operands,
deterministic algorithms off and, for fp32, TF32 off (``torch.mm`` would not compute in full fp32; TF32
allowed later sends fp32 calls back to the kernel). Here, nothing is timed where the user asked for no
in-line GPU work (``AUTOPAD_TUNE=never`` or ``offline``, unless ``AUTOPAD_PEER=on`` asks for the floor
anyway), inside a CUDA-graph capture, or with ``AUTOPAD_PEER=off``: the kernel runs. The cost, once per
shape and process (the verdict is not written to the cache): three timings of about 30 runs each, each
behind the timer's 256 MB L2 flush (a buffer torch's allocator keeps), and a device synchronisation.
Transpose and histogram have no such floor: their kernels beat ``x.t().contiguous()`` and
``torch.bincount`` on every shape measured (README, Measured results; benchmarks/results/h200/HISTORY.md).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["MARGIN", "MIN_MS", "ENV", "PEER_NAME", "Verdict", "setting", "judge", "tf32_allowed", "choose"]

MARGIN = 0.02  # torch's call is taken when its median time is more than 2% below the kernel's
MIN_MS = 0.03  # below 30 us of GPU time the op's shorter host path (README: 12.6 against 17.7 us) counts more
ENV = "AUTOPAD_PEER"  # unset / "auto": as AUTOPAD_TUNE allows; "on": also under never / offline; "off"
PEER_NAME = "torch.mm (cuBLAS)"
REPS = 30


@dataclass(frozen=True)
class Verdict:
    """Which call a shape runs (``use_peer``), the two medians (ms) where they were timed, and why."""

    use_peer: bool
    kernel_ms: float | None = None
    peer_ms: float | None = None
    why: str = ""

    def text(self) -> str:
        if self.peer_ms is None:
            return f"autopad's kernel ({self.why})"
        ran = PEER_NAME if self.use_peer else "autopad's kernel"
        return f"{ran}: kernel {self.kernel_ms:.4f} ms, {PEER_NAME} {self.peer_ms:.4f} ms at first use"


def setting() -> str:
    """``AUTOPAD_PEER``: "auto" (unset), "on" or "off"; any other value is an error."""
    value = os.environ.get(ENV, "auto").strip().lower() or "auto"
    if value not in ("auto", "on", "off"):
        raise ValueError(f"{ENV}: {value!r} is not 'auto', 'on' or 'off'")
    return value


def _capturing() -> bool:
    import torch

    return bool(torch.cuda.is_available() and torch.cuda.is_current_stream_capturing())


def judge(
    kernel: Callable[[], Any],
    peer: Callable[[], Any],
    tune_mode: str,
    timer: Callable[[Callable[[], Any]], float] | None = None,
) -> Verdict:
    """Time ``kernel()`` and ``peer()`` (each a complete op call on the first call's operands) and say
    which to run. ``timer`` (tests) returns a callable's median ms; by default ``bench_timing.benchmark``.
    """
    mode = setting()
    if mode == "off":
        return Verdict(False, why=f"{ENV}=off")
    if tune_mode in ("never", "offline") and mode != "on":
        return Verdict(False, why=f"AUTOPAD_TUNE={tune_mode}: nothing is timed in line ({ENV}=on would)")
    if _capturing():
        return Verdict(False, why="first call inside a CUDA-graph capture: nothing timed")
    if timer is None:
        from ..bench_timing import benchmark

        def timer(fn: Callable[[], Any]) -> float:
            return benchmark(fn, reps=REPS, warmup=3).ms

    try:
        # the kernel first and last (its better time counts): torch's call must win clearly
        k1 = timer(kernel)
        if k1 < MIN_MS:
            return Verdict(False, k1, None, f"{k1 * 1e3:.1f} us: under {MIN_MS * 1e3:.0f} us, not compared")
        p = timer(peer)
        k = min(k1, timer(kernel))
    except Exception as exc:  # timing must never cost the caller its answer: the kernel ran correctly
        return Verdict(False, why=f"not timed ({type(exc).__name__}: {exc})")
    return Verdict(p < k * (1.0 - MARGIN), k, p, f"timed at first use, margin {MARGIN:.0%}")


def tf32_allowed() -> bool:
    """Whether ``torch.mm`` may round fp32 inputs to TF32 now, by either of torch's switches (the
    ``fp32_precision`` API, whose "none" inherits the generic setting, or the older ``allow_tf32``, which
    raises once the newer one is set); a setting that cannot be read counts as allowed."""
    import torch

    try:
        p = torch.backends.cuda.matmul.fp32_precision
        if p == "none":
            p = torch.backends.fp32_precision
        if p in ("tf32", "ieee"):
            return p == "tf32"
    except Exception:  # an older torch without the API, or a value it refuses to report
        pass
    try:
        return bool(torch._C._get_cublas_allow_tf32())
    except Exception:
        return True


def choose(verdict: Verdict, fn: Callable[[Any, Any], Any], dtype: Any) -> Callable[[Any, Any], Any]:
    """What the op calls for a judged shape: ``fn`` (the bound kernel) or ``torch.mm``; for fp32, torch.mm
    only while TF32 stays off (the op's fp32 is full fp32)."""
    import torch

    if not verdict.use_peer:
        return fn
    mm = torch.mm
    if dtype != torch.float32:
        return mm

    def full_fp32(a: Any, b: Any) -> Any:
        return fn(a, b) if tf32_allowed() else mm(a, b)

    return full_fp32
