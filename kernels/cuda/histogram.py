"""CUDA histogram kernel specs (histogram.cu): counts, and a weighted (count, sum) variant as ``WEIGHTED``.

Shape is ``(n, bins)``: n values in [0, bins). The layout decision for the plain histogram is the
replicated sub-histogram (``autopad.layouts.Replicated``: replicas, replica-major vs interleaved, padding);
for the weighted one the (count, sum) pair as array-of-structs or struct-of-arrays (``Structs``). Bins
that do not fit in shared memory are covered in passes of BINS_PER_PASS bins (one launch each, each
re-reading the input). ``smem_pattern`` lists one block's shared atomics for one grid-stride iteration
(THREADS x ITEMS x values-per-16-bytes values) drawn from a data distribution (``dist``: "uniform",
"zipf" or "equal"), with the warp aggregation (AGG) applied as the kernel applies it; the zeroing and
the final flush run once per block per pass and are given separately by ``setup_pattern``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from autopad.access import Instruction
from autopad.layouts import Legality, Replicated, Structs
from autopad.spec import DTYPE_BYTES

NAME = "histogram"
BACKEND = "cuda"
DTYPES = ("int32", "uint8")
SPACE: dict[str, tuple[int, ...]] = {
    "BINS_PER_PASS": (256, 1024, 4096, 16384, 32768, 65536),
    "REPLICAS": (1, 2, 4, 8, 16),
    "INTERLEAVED": (0, 1),
    "PAD": (0, 1, 2, 4),
    "AGG": (0, 1, 2),
    "THREADS": (256, 512, 1024),
    "ITEMS": (1, 2, 4),
    "BLOCKS_PER_SM": (1, 2, 4, 8),
}
LAYOUT_KEYS = ("REPLICAS", "INTERLEAVED", "PAD")  # the privatised copies and where they sit
DEFAULTS: dict[str, int] = {
    "BINS_PER_PASS": 256, "REPLICAS": 1, "INTERLEAVED": 0, "PAD": 0, "AGG": 0,
    "THREADS": 256, "ITEMS": 2, "BLOCKS_PER_SM": 4,
}  # fmt: skip
# input classes that change the speed (the tuner keys its cache by them); aliases are the names above
DISTS = ("uniform", "skewed", "single")
_DIST_ALIASES = {"skewed": "zipf", "single": "equal"}
PATTERN_KEYS = ("BINS_PER_PASS", "REPLICAS", "INTERLEAVED", "PAD", "AGG", "THREADS", "ITEMS")
SOURCE_FILES = (str(Path(__file__).with_name("histogram.cu")), str(Path(__file__).with_name("common.cuh")))
SM_COUNT = 132  # H200; run() reads the real count from the device
SMEM_PER_SM = 228 * 1024
SMEM_BUDGET = 227 * 1024
_SOURCE = Path(__file__).with_name("histogram.cu")


def _dims(shape: tuple[int, ...]) -> tuple[int, int]:
    if len(shape) != 2:
        raise ValueError(f"histogram: shape is (n, bins), got {shape!r}")
    return int(shape[0]), int(shape[1])


def _fit_pass(bins: int) -> int:
    """The smallest BINS_PER_PASS that covers ``bins`` in one pass (or the largest there is)."""
    return next((v for v in SPACE["BINS_PER_PASS"] if v >= bins), SPACE["BINS_PER_PASS"][-1])


def layout(constants: dict[str, int], dtype: str = "int32") -> Replicated:
    c = constants
    return Replicated(c["BINS_PER_PASS"], c["REPLICAS"], 4, bool(c["INTERLEAVED"]), c["PAD"])


def _legal_common(c: dict[str, int], shape: tuple[int, ...], dtype: str, lay: Any, space: dict) -> Legality:
    missing = [k for k in space if k not in c]
    if missing:
        return Legality(False, f"missing constants {missing}")
    if dtype not in DTYPES:
        return Legality(False, f"dtype {dtype} not supported")
    ok = lay.check(1, SMEM_BUDGET)
    if not ok:
        return ok
    n, bins = _dims(shape)
    if n < 1 or n >= 2**31 or bins < 1:
        return Legality(False, f"need 1 <= n < 2**31 and bins >= 1, got {shape}")
    if dtype == "uint8" and bins > 256:
        return Legality(False, "uint8 values cannot reach more than 256 bins")
    if c["BINS_PER_PASS"] > _fit_pass(bins):
        return Legality(False, f"{c['BINS_PER_PASS']} bins per pass waste shared memory on {bins} bins")
    if c["THREADS"] * c["BLOCKS_PER_SM"] > 2048:
        return Legality(False, f"{c['BLOCKS_PER_SM']} blocks of {c['THREADS']} threads exceed 2048 per SM")
    if lay.footprint * c["BLOCKS_PER_SM"] > SMEM_PER_SM - 1024 * c["BLOCKS_PER_SM"]:
        return Legality(False, f"{c['BLOCKS_PER_SM']} blocks of {lay.footprint} bytes do not fit one SM")
    return Legality(True)


def legal(constants: dict[str, int], shape: tuple[int, ...], dtype: str = "int32") -> Legality:
    """The Replicated layout's own check, plus pass, occupancy and replica limits."""
    c = constants
    try:
        lay = layout(c, dtype)
    except (ValueError, KeyError) as exc:
        return Legality(False, str(exc))
    ok = _legal_common(c, shape, dtype, lay, SPACE)
    if not ok:
        return ok
    if c["REPLICAS"] > c["THREADS"] // 32:
        return Legality(False, f"{c['REPLICAS']} replicas but only {c['THREADS'] // 32} warps use them")
    if c["REPLICAS"] == 1 and (c["INTERLEAVED"] or c["PAD"]):
        return Legality(False, "one replica: interleaving and padding change nothing (spelt 0, 0)")
    return Legality(True)


def _sample(dist: str, bins: int, size: int, seed: int = 0) -> np.ndarray:
    dist = _DIST_ALIASES.get(dist, dist)
    rng = np.random.default_rng(seed)
    if dist == "uniform":
        return rng.integers(0, bins, size)
    if dist == "equal":
        return np.full(size, min(5, bins - 1))
    if dist == "zipf":
        return (rng.zipf(1.5, size) - 1) % bins
    raise ValueError(f"dist: {dist!r} is not uniform, zipf or equal")


# ``atomicAdd(&h[i], 1u)`` compiles to ATOMS.POPC.INC.32 on sm_90 (checked in the SASS of histogram.cu):
# the hardware adds the popcount of the lanes that share an address, so equal bins in a warp cost one
# update, like a broadcast. Measured on the H200 (benchmarks/results/h200/notes_cuda.md): 64M equal int32
# values bin at the same 3.2 TB/s as uniform ones with no software aggregation, where 32 serialised
# lanes would cost ~3x that time. The float sums of the weighted histogram compile to a CAS loop
# (ATOMS.CAST.SPIN) and get no such help. Set False to score +1 updates lane by lane.
POPC_INC_AGGREGATES = True


def _first_lanes(b: np.ndarray) -> np.ndarray:
    _, first = np.unique(b, return_index=True)
    act = np.zeros(32, dtype=bool)
    act[first] = True
    return act


def _aggregate(b: np.ndarray, agg: int, increment: bool = True) -> tuple[np.ndarray, bool]:
    """Which lanes' atomics reach shared memory (and whether the warp took the uniform path).

    AGG 2 on a uniform warp: lane 0 alone. AGG 1: one leader per distinct bin. Otherwise every lane, but
    a +1 update (``increment``) is an ATOMS.POPC.INC that serves each distinct address once.
    """
    if agg == 2 and (b == b[0]).all():
        act = np.zeros(32, dtype=bool)
        act[0] = True
        return act, True
    if agg == 1 or (increment and POPC_INC_AGGREGATES):
        return _first_lanes(b), False
    return np.ones(32, dtype=bool), False


def smem_pattern(
    constants: dict[str, int], dtype: str = "int32", dist: str = "uniform"
) -> tuple[Instruction, ...]:
    """One block's shared atomics for one grid-stride iteration; lane j of warp w holds values of thread
    w*32+j: component q of its it-th 16-byte vector. Replica = warp % REPLICAS."""
    c = constants
    per = 16 // DTYPE_BYTES[dtype]
    warps = c["THREADS"] // 32
    vals = _sample(dist, c["BINS_PER_PASS"], warps * 32 * c["ITEMS"] * per)
    vals = vals.reshape(warps, c["ITEMS"], per, 32)
    out = []
    for w in range(warps):
        for it in range(c["ITEMS"]):
            for q in range(per):
                b = vals[w, it, q]
                act, _ = _aggregate(b, c["AGG"])
                rows = np.where(act, w % c["REPLICAS"], -1)
                out.append(Instruction(f"atom w{w} i{it} q{q}", "atomic", 4, rows, np.where(act, b, 0)))
    return tuple(out)


def setup_pattern(constants: dict[str, int], dtype: str = "int32") -> tuple[Instruction, ...]:
    """Once per block per pass: zeroing (word stores, in footprint order) and the flush (replica loads)."""
    c = constants
    lay = layout(c, dtype)
    words = lay.footprint // 4
    lane = np.arange(32)
    out = []
    for base in range(0, words, 32):  # zeroing walks raw words; map each back to its (replica, bin)
        idx = base + lane
        if lay.interleaved:
            r, col = idx % (lay.replicas + lay.pad), idx // (lay.replicas + lay.pad)
        else:
            r, col = idx // (lay.bins + lay.pad), idx % (lay.bins + lay.pad)
        r = np.where(idx < words, r, -1)
        out.append(Instruction(f"zero {base}", "store", 4, r, col))
    for b0 in range(0, c["BINS_PER_PASS"], 32):
        for r in range(c["REPLICAS"]):
            out.append(Instruction(f"flush b{b0} r{r}", "load", 4, np.full(32, r), b0 + lane))
    return tuple(out)


def _blocks(c: dict[str, int], sm_count: int = SM_COUNT) -> int:
    return sm_count * c["BLOCKS_PER_SM"]


def launch_info(constants: dict[str, int], shape: tuple[int, ...], dtype: str = "int32") -> dict:
    n, bins = _dims(shape)
    c = constants
    per_iter = c["THREADS"] * c["ITEMS"] * (16 // DTYPE_BYTES[dtype])
    passes = math.ceil(bins / c["BINS_PER_PASS"])
    return {
        "blocks": _blocks(c),
        "threads": c["THREADS"],
        "smem_bytes": layout(c, dtype).footprint,
        "tiles_per_block": passes * math.ceil(n / (per_iter * _blocks(c))),
        "passes": passes,
        "inflight_bytes": c["ITEMS"] * 16,  # ITEMS 16-byte loads per thread per iteration
    }


def traffic(shape: tuple[int, ...], dtype: str = "int32") -> dict:
    n, bins = _dims(shape)
    return {"bytes": n * DTYPE_BYTES[dtype] + 4 * bins, "flops": 0}


def textbook(shape: tuple[int, ...], dtype: str = "int32") -> dict[str, int] | None:
    """The usual recipe: a few replica-major replicas each padded by one word."""
    c = dict(DEFAULTS, BINS_PER_PASS=_fit_pass(_dims(shape)[1]), REPLICAS=4, PAD=1)
    return c if legal(c, shape, dtype) else None


def make_inputs(
    shape: tuple[int, ...], dtype: str = "int32", device: Any = "cuda", seed: int = 0, dist: str = "uniform"
) -> tuple[Any, ...]:
    import torch

    n, bins = _dims(shape)
    g = torch.Generator(device=device).manual_seed(seed)
    dist = _DIST_ALIASES.get(dist, dist)
    if dist == "uniform":
        x = torch.randint(0, bins, (n,), generator=g, device=device, dtype=torch.int64)
    elif dist == "equal":
        x = torch.full((n,), min(5, bins - 1), device=device, dtype=torch.int64)
    elif dist == "zipf":  # P(k) ~ 1/(k+1)^1.5 by inverse transform over the bins, in random order
        p = 1.0 / torch.arange(1, bins + 1, device=device, dtype=torch.float64) ** 1.5
        x = (
            torch.multinomial(p.float(), n, replacement=True, generator=g)
            if n < 2**24
            else (
                torch.searchsorted(
                    torch.cumsum(p / p.sum(), 0),
                    torch.rand(n, generator=g, device=device, dtype=torch.float64),
                ).clamp_max(bins - 1)
            )
        )
    else:
        raise ValueError(f"dist: {dist!r} is not uniform, zipf or equal")
    # the second input is an empty [bins, 0] tensor: it carries the bin count (no bytes) through the harness
    return x.to(getattr(torch, dtype)), torch.empty((bins, 0), device=device, dtype=torch.int8)


def alloc_output(inputs: tuple[Any, ...], constants: dict[str, int]) -> Any:
    """int32 [bins] counts (the kernel adds with 32-bit atomics; n < 2**31)."""
    import torch

    return torch.empty(inputs[1].shape[0], dtype=torch.int32, device=inputs[0].device)


@dataclass(frozen=True)
class Built:
    kernel: Any
    constants: dict
    dtype: str
    bins: int = 0


def defines(constants: dict[str, int], dtype: str = "int32") -> dict[str, int]:
    c = constants
    d = dict(layout(c, dtype).cuda_defines())
    d.update(
        {"VALUE_BYTES": DTYPE_BYTES[dtype], "AGG": c["AGG"], "THREADS": c["THREADS"], "ITEMS": c["ITEMS"]}
    )
    return d


def build(constants: dict[str, int], dtype: str = "int32") -> Built:
    from autopad import cuda_runtime

    k = cuda_runtime.load_kernel(_SOURCE.read_text(), "hist_kernel", defines(constants, dtype))
    return Built(k, dict(constants), dtype)


def _sm_count() -> int:
    import torch

    return torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count


def run(built: Built, inputs: tuple[Any, ...], out: Any) -> None:
    """Zero ``out`` (int32 [bins]) and add every pass's counts into it."""
    from autopad import cuda_runtime

    x = inputs[0].contiguous()
    if x.data_ptr() % 16:
        x = x.clone()
    bins = out.shape[0]
    c = built.constants
    out.zero_()
    smem = layout(c, built.dtype).footprint
    for lo in range(0, bins, c["BINS_PER_PASS"]):
        args = (out, x, np.int64(x.numel()), np.int32(lo), np.int32(bins))
        cuda_runtime.launch(built.kernel, _blocks(c, _sm_count()), c["THREADS"], args, smem)


def reference(inputs: tuple[Any, ...]) -> Any:
    import torch

    bins = inputs[1].shape[0]
    x = inputs[0].long()
    return torch.bincount(x[(x >= 0) & (x < bins)], minlength=bins).int()


def check(out: Any, ref: Any) -> tuple[bool, str]:
    """Exact: counts are integers."""
    if out.shape != ref.shape:
        return False, f"shape {tuple(out.shape)} != {tuple(ref.shape)}"
    bad = (out.long() != ref.long()).sum().item()
    return bad == 0, "exact" if bad == 0 else f"{bad} bins differ"


# ---- weighted histogram: (count, sum) per bin, AoS vs SoA ----------------------------------------------
W_SPACE: dict[str, tuple[int, ...]] = {
    "BINS_PER_PASS": SPACE["BINS_PER_PASS"],
    "AOS": (0, 1),
    "PAD": (0, 4, 8),
    "AGG": (0, 2),
    "THREADS": (256, 512, 1024),
    "ITEMS": (1, 2, 4),
    "BLOCKS_PER_SM": (1, 2, 4, 8),
}
W_DEFAULTS = {
    "BINS_PER_PASS": 256,
    "AOS": 1,
    "PAD": 0,
    "AGG": 0,
    "THREADS": 256,
    "ITEMS": 2,
    "BLOCKS_PER_SM": 4,
}
W_RTOL = 1e-4  # float32 atomics add the weights in no fixed order: |sum - sum64| <= W_RTOL * sum|w| per bin


def _w_layout(constants: dict[str, int], dtype: str = "int32") -> Structs:
    c = constants
    return Structs(c["BINS_PER_PASS"], (4, 4), aos=bool(c["AOS"]), pad=c["PAD"])


def _w_legal(constants: dict[str, int], shape: tuple[int, ...], dtype: str = "int32") -> Legality:
    if dtype != "int32":
        return Legality(False, "the weighted histogram takes int32 values")
    try:
        lay = _w_layout(constants, dtype)
    except (ValueError, KeyError) as exc:
        return Legality(False, str(exc))
    ok = _legal_common(constants, shape, dtype, lay, W_SPACE)
    if not ok:
        return ok
    if not constants["AOS"] and constants["PAD"]:
        return Legality(False, "SoA has no padding to tune (spelt PAD = 0)")
    return Legality(True)


def _w_pattern(
    constants: dict[str, int], dtype: str = "int32", dist: str = "uniform"
) -> tuple[Instruction, ...]:
    """Per value: a +1 on the count (field 0, ATOMS.POPC.INC) and a float add on the sum (field 1, compiled to
    a compare-and-swap loop: every lane's word counts, equal bins serialise)."""
    c = constants
    warps = c["THREADS"] // 32
    vals = _sample(dist, c["BINS_PER_PASS"], warps * 32 * c["ITEMS"] * 4).reshape(warps, c["ITEMS"], 4, 32)
    out = []
    for w in range(warps):
        for it in range(c["ITEMS"]):
            for q in range(4):
                b = vals[w, it, q]
                for f, what in ((0, "count"), (1, "sum")):  # count: +1 (POPC.INC); sum: a CAS loop
                    act, _ = _aggregate(b, c["AGG"], increment=(f == 0))
                    rows = np.where(act, b, -1)
                    out.append(Instruction(f"{what} w{w} i{it} q{q}", "atomic", 4, rows, np.full(32, f)))
    return tuple(out)


def _w_launch_info(constants: dict[str, int], shape: tuple[int, ...], dtype: str = "int32") -> dict:
    info = launch_info(dict(constants, REPLICAS=1, INTERLEAVED=0, PAD=0), shape, dtype)
    info["smem_bytes"] = _w_layout(constants).footprint
    return info


def _w_traffic(shape: tuple[int, ...], dtype: str = "int32") -> dict:
    n, bins = _dims(shape)
    return {"bytes": 8 * n + 8 * bins, "flops": n}


def _w_textbook(shape: tuple[int, ...], dtype: str = "int32") -> dict[str, int] | None:
    c = dict(W_DEFAULTS, BINS_PER_PASS=_fit_pass(_dims(shape)[1]), AOS=0)
    return c if _w_legal(c, shape, dtype) else None


def _w_make_inputs(
    shape: tuple[int, ...], dtype: str = "int32", device: Any = "cuda", seed: int = 0, dist: str = "uniform"
) -> tuple[Any, ...]:
    import torch

    x, marker = make_inputs(shape, "int32", device, seed, dist)
    g = torch.Generator(device=device).manual_seed(seed + 1)
    w = torch.rand(x.shape, generator=g, device=device, dtype=torch.float32)
    return x, w, marker


def _w_alloc_output(inputs: tuple[Any, ...], constants: dict[str, int]) -> Any:
    """int32 [2, bins]: row 0 the counts, row 1 the float32 sums' bits (one tensor through the harness)."""
    import torch

    return torch.empty((2, inputs[2].shape[0]), dtype=torch.int32, device=inputs[0].device)


def _w_defines(constants: dict[str, int], dtype: str = "int32") -> dict[str, int]:
    c, lay = constants, _w_layout(constants)
    base1 = lay._soa_bases()[1] if not lay.aos else 0
    return {
        "BINS": c["BINS_PER_PASS"], "W_AOS": int(lay.aos), "W_STRIDE": lay.stride, "W_BASE1": base1,
        "AGG": c["AGG"], "THREADS": c["THREADS"], "ITEMS": c["ITEMS"], "VALUE_BYTES": 4,
    }  # fmt: skip


def _w_build(constants: dict[str, int], dtype: str = "int32") -> Built:
    from autopad import cuda_runtime

    k = cuda_runtime.load_kernel(_SOURCE.read_text(), "whist_kernel", _w_defines(constants, dtype))
    return Built(k, dict(constants), dtype)


def _w_run(built: Built, inputs: tuple[Any, ...], out: Any) -> None:
    from autopad import cuda_runtime

    x, w = (t.contiguous() for t in inputs[:2])
    x = x.clone() if x.data_ptr() % 16 else x
    w = w.clone() if w.data_ptr() % 16 else w
    bins = out.shape[1]
    c = built.constants
    out.zero_()
    smem = _w_layout(c).footprint
    for lo in range(0, bins, c["BINS_PER_PASS"]):
        args = (out[0], out[1], x, w, np.int64(x.numel()), np.int32(lo), np.int32(bins))
        cuda_runtime.launch(built.kernel, _blocks(c, _sm_count()), c["THREADS"], args, smem)


def _w_reference(inputs: tuple[Any, ...]) -> Any:
    import torch

    x, w, marker = inputs
    bins = marker.shape[0]
    keep = (x >= 0) & (x < bins)
    xk = x[keep].long()
    counts = torch.bincount(xk, minlength=bins).int()
    sums = torch.zeros(bins, dtype=torch.float64, device=x.device).index_add_(0, xk, w[keep].double())
    return torch.stack([counts, sums.float().view(torch.int32)])


def _w_check(out: Any, ref: Any) -> tuple[bool, str]:
    import torch

    if out.shape != ref.shape:
        return False, f"shape {tuple(out.shape)} != {tuple(ref.shape)}"
    bad = (out[0] != ref[0]).sum().item()
    s, r = out[1].view(torch.float32).double(), ref[1].view(torch.float32).double()
    if not torch.isfinite(s).all():
        return False, "non-finite sums"
    err = ((s - r).abs() / r.abs().clamp_min(1e-6)).max().item()  # weights >= 0: sum|w| = |sum|
    ok = bad == 0 and err <= W_RTOL
    return ok, f"{bad} counts differ, sums max relative error {err:.1e} (tolerance {W_RTOL:.0e})"


WEIGHTED = SimpleNamespace(
    NAME="histogram_weighted",
    BACKEND="cuda",
    DTYPES=("int32",),
    SPACE=W_SPACE,
    DEFAULTS=W_DEFAULTS,
    legal=_w_legal,
    layout=_w_layout,
    smem_pattern=_w_pattern,
    launch_info=_w_launch_info,
    traffic=_w_traffic,
    textbook=_w_textbook,
    make_inputs=_w_make_inputs,
    alloc_output=_w_alloc_output,
    build=_w_build,
    run=_w_run,
    reference=_w_reference,
    check=_w_check,
    defines=_w_defines,
)


def presets(dtype: str = "int32", bins: int = 256) -> dict[str, dict[str, int]]:
    """Named candidates: the plain kernel (one replica, no aggregation), the textbook padded replicas, and
    the two warp aggregations with and without replicas."""
    bpp = _fit_pass(bins)
    base = dict(DEFAULTS, BINS_PER_PASS=bpp)
    if bpp * 4 * base["BLOCKS_PER_SM"] > SMEM_PER_SM // 2:  # big histograms: fewer, larger blocks, passes
        bpp = min(bpp, 32768)
        base = dict(base, BINS_PER_PASS=bpp, THREADS=1024, BLOCKS_PER_SM=max(1, 2 * 16384 // bpp))
    out = {
        "unpadded": base,
        "textbook": dict(base, REPLICAS=4, PAD=1),
        "agg_match": dict(base, AGG=1),
        "agg_uniform": dict(base, AGG=2),
        "agg_uniform_rep4": dict(base, AGG=2, REPLICAS=4, PAD=1),
        "agg_uniform_rep8_il": dict(base, AGG=2, REPLICAS=8, INTERLEAVED=1, PAD=1),
    }
    shape = (1 << 20, bins)
    return {k: v for k, v in out.items() if legal(v, shape, dtype)}


def w_presets(bins: int = 256) -> dict[str, dict[str, int]]:
    bpp = min(_fit_pass(bins), 16384)
    out = {
        "aos": dict(W_DEFAULTS, BINS_PER_PASS=bpp),
        "soa": dict(W_DEFAULTS, BINS_PER_PASS=bpp, AOS=0),
        "aos_agg": dict(W_DEFAULTS, BINS_PER_PASS=bpp, AGG=2),
        "soa_agg": dict(W_DEFAULTS, BINS_PER_PASS=bpp, AOS=0, AGG=2),
    }
    if bpp > 1024:
        out = {k: dict(v, THREADS=1024, BLOCKS_PER_SM=1) for k, v in out.items()}
    return {k: v for k, v in out.items() if _w_legal(v, (1 << 20, bins))}


def inputs_from(x: Any, bins: int) -> tuple[Any, ...]:
    """The kernel's inputs for ``autopad.ops.histogram(x, bins)``: values and an empty [bins, 0] marker."""
    import torch

    return (x, torch.empty((bins, 0), device=x.device, dtype=torch.int32))
