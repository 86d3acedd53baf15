"""Histogram in plain Triton: per-block ``tl.histogram``, merged into R padded global replicas, then reduced.

``out[b] = #{i : x[i] == b}`` for int32 ``x`` and ``b`` in ``[0, BINS)`` (values outside are ignored, as if
masked). Triton 3.6 has no shared-memory atomics in the language, so privatisation happens one level up:

1. each program bins ``ITERS`` chunks of ``BLOCK`` values with ``tl.histogram`` (lowered to warp ballots and
   popcounts, so its cost does not depend on the data: all-equal input is as fast as uniform input,
   where a naive atomic-per-element histogram serialises 32 lanes on one address);
2. it adds its ``BINS`` counts to replica ``pid % R`` of a global array of ``R`` replicas, each
   ``BINS + PAD`` int32 long. Programs running at the same time use different replicas, so their atomics
   go to different addresses; ``PAD`` spaces the replicas so that two replicas' bins never share a 128-byte
   L2 line when ``BINS * 4`` is not a multiple of 128 (e.g. 16 bins = 64 bytes: replicas r and r + 1 would
   share a line without padding);
3. a second small kernel sums the replicas into ``out`` and zeroes them for the next call.

Layout (autopad.layouts.Replicated(BINS, R, pad=PAD)) is global memory; there are no shared-memory
instructions under the kernel's control, so ``smem_pattern`` is empty and the bank model has nothing to
score: the tuner ranks these candidates by measurement alone. Constants: ``BLOCK, ITERS, WARPS, R, PAD``.
Shape: ``(N, BINS)``.
"""

from __future__ import annotations

from typing import Any

from autopad.access import Instruction
from autopad.layouts import Legality, Replicated

try:  # triton is optional: enumeration and scoring need numpy only
    import triton
    import triton.language as tl

    HAS_TRITON = True
except ImportError:  # pragma: no cover
    HAS_TRITON = False

NAME = "histogram"
BACKEND = "triton"
DTYPES = ("int32",)
SPACE: dict[str, tuple[int, ...]] = {
    "BLOCK": (1024, 2048, 4096),
    "ITERS": (4, 8, 16, 64),
    "WARPS": (4, 8),
    "R": (1, 8, 32),
    "PAD": (0, 32),
}
LAYOUT_KEYS = ("R", "PAD")
# input classes that change the speed (the tuner keys its cache by them)
DISTS = ("uniform", "skewed", "single")
DEFAULTS = {"BLOCK": 2048, "ITERS": 16, "WARPS": 8, "R": 1, "PAD": 0}
BEST_H200 = {
    "BLOCK": 4096,
    "ITERS": 8,
    "WARPS": 8,
    "R": 8,
    "PAD": 32,
}  # fastest measured (0.82 ms, 256M int32)


def textbook(shape: tuple[int, ...], dtype: str) -> dict[str, int]:
    """Privatised replicas, one 128-byte line of padding apart."""
    return {**DEFAULTS, "R": 8, "PAD": 32}


def _bins(shape: tuple[int, ...]) -> int:
    return int(shape[1]) if len(shape) > 1 else 256


def legal(c: dict[str, int], shape: tuple[int, ...], dtype: str) -> Legality:
    if dtype not in DTYPES:
        return Legality(False, f"dtype {dtype} not supported (int32 values)")
    if len(shape) != 2 or shape[0] < 1:
        return Legality(False, f"shape {shape} is not (N, BINS)")
    bins = _bins(shape)
    if bins < 2 or bins & (bins - 1) or bins > 4096:
        return Legality(False, f"BINS {bins}: tl.histogram needs a power of two, here 2..4096")
    if c["BLOCK"] < 32 * c["WARPS"]:
        return Legality(False, "BLOCK smaller than one value per thread")
    if c["R"] == 1 and c["PAD"]:
        return Legality(False, "padding between replicas needs more than one replica")
    return Legality(True)


def layout(c: dict[str, int], dtype: str, bins: int = 256) -> Replicated:
    return Replicated(bins, c["R"], 4, pad=c["PAD"])


def smem_pattern(c: dict[str, int], dtype: str, dist: str = "uniform") -> tuple[Instruction, ...]:
    """None under the kernel's control (tl.histogram's own shared traffic is data-independent)."""
    return ()


def launch_info(c: dict[str, int], shape: tuple[int, ...], dtype: str) -> dict[str, int]:
    per = c["BLOCK"] * c["ITERS"]
    blocks = -(-shape[0] // per)
    return {"blocks": blocks, "threads": 32 * c["WARPS"], "smem_bytes": 0, "tiles_per_block": c["ITERS"]}


def traffic(shape: tuple[int, ...], dtype: str) -> dict[str, int]:
    """Input bytes read (the convention of the hardware README's bincount figures)."""
    return {"bytes": 4 * int(shape[0]), "flops": 0}


# --------------------------------------------------------------------------------------------------------
# torch / triton side


def make_inputs(
    shape: tuple[int, ...], dtype: str, device: str = "cuda", seed: int = 0, dist: str = "uniform"
) -> tuple[Any, ...]:
    """dist: "uniform" in [0, BINS), "equal" (all 5), "skewed" (geometric: bin b with weight 2^-b-ish)."""
    import torch

    n, bins = int(shape[0]), _bins(shape)
    # drawn on the target device: 2^28 values take seconds on a CPU and milliseconds on a GPU
    g = torch.Generator(device=device).manual_seed(seed)
    if dist in ("equal", "single"):
        x = torch.full((n,), 5 % bins, dtype=torch.int32, device=device)
    elif dist == "skewed":
        p = torch.tensor(0.3, device=device)
        x = torch.distributions.Geometric(probs=p).sample((n,)).clamp(max=bins - 1)
        x = x.to(torch.int32)
    else:
        x = torch.randint(0, bins, (n,), generator=g, dtype=torch.int32, device=device)
    return (x, bins)


def alloc_output(inputs: tuple[Any, ...], constants: dict[str, int] | None = None) -> Any:
    import torch

    x, bins = inputs
    return torch.empty(bins, dtype=torch.int32, device=x.device)


def reference(inputs: tuple[Any, ...]) -> Any:
    import torch

    x, bins = inputs
    v = x[(x >= 0) & (x < bins)]
    return torch.bincount(v, minlength=bins).to(torch.int32)


def check(out: Any, ref: Any) -> tuple[bool, str]:
    """Exact: counts are integers."""
    if tuple(out.shape) != tuple(ref.shape):
        return False, f"shape {tuple(out.shape)} != {tuple(ref.shape)}"
    bad = int((out.long() != ref.long()).sum())
    return (bad == 0, "exact" if bad == 0 else f"{bad} bins differ")


if HAS_TRITON:

    @triton.jit
    def histogram_partial(
        x_ptr,
        rep_ptr,
        n,
        BINS: tl.constexpr,
        BLOCK: tl.constexpr,
        ITERS: tl.constexpr,
        R: tl.constexpr,
        STRIDE: tl.constexpr,
    ):
        pid = tl.program_id(0)
        base = pid.to(tl.int64) * (BLOCK * ITERS)
        acc = tl.zeros([BINS], dtype=tl.int32)
        for i in range(ITERS):
            offs = base + i * BLOCK + tl.arange(0, BLOCK)
            m = offs < n
            x = tl.load(x_ptr + offs, mask=m, other=0)
            acc += tl.histogram(x, BINS, mask=m & (x >= 0) & (x < BINS))
        # replica pid % R, STRIDE = BINS + PAD int32 apart: concurrent programs update different lines
        dst = rep_ptr + (pid % R) * STRIDE + tl.arange(0, BINS)
        tl.atomic_add(dst, acc, mask=acc != 0, sem="relaxed")

    @triton.jit
    def histogram_reduce(rep_ptr, out_ptr, BINS: tl.constexpr, R: tl.constexpr, STRIDE: tl.constexpr):
        b = tl.arange(0, BINS)
        tot = tl.zeros([BINS], dtype=tl.int32)
        for r in range(R):
            tot += tl.load(rep_ptr + r * STRIDE + b)
            tl.store(rep_ptr + r * STRIDE + b, tl.zeros([BINS], dtype=tl.int32))  # ready for the next call
        tl.store(out_ptr + b, tot)


def build(c: dict[str, int], dtype: str) -> dict[str, Any]:
    return {"constants": dict(c), "work": {}}


def _workspace(built: dict[str, Any], device: Any, bins: int) -> Any:
    import torch

    c = built["constants"]
    key = (str(device), bins)
    if key not in built["work"]:
        built["work"][key] = torch.zeros(c["R"] * (bins + c["PAD"]), dtype=torch.int32, device=device)
    return built["work"][key]


def run(built: dict[str, Any], inputs: tuple[Any, ...], out: Any) -> None:
    x, bins = inputs
    c = built["constants"]
    n = x.numel()
    rep = _workspace(built, x.device, bins)
    stride = bins + c["PAD"]
    grid = (max(1, -(-n // (c["BLOCK"] * c["ITERS"]))),)
    histogram_partial[grid](x, rep, n, bins, c["BLOCK"], c["ITERS"], c["R"], stride, num_warps=c["WARPS"])
    histogram_reduce[(1,)](rep, out, bins, c["R"], stride, num_warps=4)
