"""Weighted histogram on ``autopad.CudaKernel`` (whist_kernel in histogram.cu): a count and a float sum a bin.

``sums[b] = sum of w[i] over x[i] == b`` (what ``torch.bincount(x, weights=w, minlength=bins)`` returns:
float32 for float32 weights) and ``counts[b] = #{i : x[i] == b}``, for int32 x and float32 w (float64 w:
a build of its own, ``W_F64``, reads them as they are and adds them as float32; tuned with float32).
The layout decision is the (count, sum) pair in shared memory: array-of-structs (``AOS`` 1, ``PAD``
bytes after each 8-byte record) or struct-of-arrays (``autopad.layouts.Structs``). With 8-byte records
bins b and b + 16 share a bank, so AoS conflicts where SoA does not (measured on the H200: SoA 0.61 of
copy, AoS 0.46, uniform 256 bins). A +1 on the count is ATOMS.POPC.INC (equal lanes served once); the
float add compiles to a compare-and-swap loop (every lane counts, equal bins serialise) unless the warp
aggregates a uniform warp's weights first (``AGG`` 2). ``REPLICAS`` copies of each record, lane l on copy
l % REPLICAS (record ``bin * REPLICAS + copy``): with 32 struct-of-arrays copies lane l's words sit in
bank l whatever its bin, so the loop's compare-and-swap takes one round, and lanes on one bin do not meet
(H200 run 124, 2^26 x 256 uniform: 0.60 of the read rate with one SoA copy, 0.93 with 32; skewed 0.09 ->
0.71). Shape ``(n, bins)``; outputs ``(sums, counts)``: ``autopad.ops`` returns the first.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from autopad.bases import CudaKernel, Inputs, Out
from autopad.kernel_base import sibling_files
from autopad.layouts import Legality, Structs

from . import histogram as H
from . import histogram_launch as HL  # read where defined: a patch of histogram_launch reaches the launcher

_SOURCE = Path(__file__).with_name("histogram.cu")
# what keys the tuning cache: the kernel and the Python that decides what is built and launched (this
# module: layout, macros, grid; histogram_launch.py: the launch itself, the aligned inputs, the SM count)
SOURCE_FILES = sibling_files(
    __file__, "histogram.cu", "common.cuh", "histogram_weighted.py", "histogram_launch.py"
)
TOLERANCE_F32 = 1e-4  # float32 atomics add in no fixed order: relative error of the sums against float64


class HistogramWeightedCuda(CudaKernel):
    """Counts and float32 sums of weights per bin, int32 values in [0, bins) (others ignored)."""

    NAME = "histogram_weighted"
    DTYPES = ("int32",)
    SHAPE = ("N", "BINS")
    SOURCE_FILE = str(_SOURCE)
    KERNEL = "whist_kernel"
    SPACE: dict[str, tuple[int, ...]] = {
        "BINS_PER_PASS": (256, 1024, 4096, 16384, 32768, 65536),
        "AOS": (0, 1),
        "PAD": (0, 4, 8),
        "AGG": (0, 2),
        "REPLICAS": (1, 2, 4, 8, 16, 32),
        "THREADS": (256, 512, 1024),
        "ITEMS": (1, 2, 4),
        "BLOCKS_PER_SM": (1, 2, 4, 8),
    }
    DEFAULTS = {
        "BINS_PER_PASS": 256, "AOS": 1, "PAD": 0, "AGG": 0, "REPLICAS": 1, "THREADS": 256, "ITEMS": 2,
        "BLOCKS_PER_SM": 4,
    }  # fmt: skip
    LAYOUT_KEYS = ("AOS", "PAD", "REPLICAS")
    PATTERN_KEYS = ("AGG", "BINS_PER_PASS", "ITEMS", "REPLICAS", "THREADS")
    DISTS = H.DISTS
    WEIGHT_DTYPES = ("float32", "float64")  # what inputs_from and the launcher take as they are
    TOLERANCE = {"float32": TOLERANCE_F32}
    RESTRICTIONS = ("THREADS * BLOCKS_PER_SM <= 2048", "AOS == 1 or PAD == 0")  # SoA has no padding to tune

    def layout(self, constants: dict[str, int], dtype: str = "int32") -> Structs:
        c = constants  # record bin * REPLICAS + copy
        return Structs(c["BINS_PER_PASS"] * _replicas(c), (4, 4), aos=bool(c["AOS"]), pad=c["PAD"])

    def smem_bytes(self, constants: dict[str, int], dtype: str = "int32") -> int:
        return self.layout(constants, dtype).footprint

    def check_shape(self, shape: tuple[int, ...]) -> None:
        H.SPEC.check_shape(shape)

    def legal(self, constants: dict[str, int], shape: tuple[int, ...], dtype: str = "int32") -> Legality:
        ok = self.legal_preamble(constants, shape, dtype, _REQUIRED)
        if not ok:
            return ok
        try:
            lay = self.layout(constants, dtype)
        except (ValueError, KeyError) as exc:
            return Legality(False, str(exc))
        c, bins = constants, int(shape[1])
        if c["THREADS"] * c["BLOCKS_PER_SM"] > 2048:
            return Legality(False, f"{c['BLOCKS_PER_SM']} blocks of {c['THREADS']} threads > 2048 per SM")
        if not c["AOS"] and c["PAD"]:
            return Legality(False, "SoA has no padding to tune (spelt PAD = 0)")
        ok = lay.check(1, H.ARCH.smem_per_block)
        if not ok:
            return ok
        if c["BINS_PER_PASS"] > H._fit_pass(bins):
            return Legality(False, f"{c['BINS_PER_PASS']} bins per pass waste shared memory on {bins} bins")
        bps = c["BLOCKS_PER_SM"]
        if lay.footprint * bps > H.ARCH.smem_per_sm - 1024 * bps:
            return Legality(False, f"{bps} blocks of {lay.footprint} bytes do not fit one SM")
        return Legality(True)

    def grid(self, constants: dict[str, int], shape: tuple[int, ...] = (), dtype: str = "int32") -> tuple:
        return (H.ARCH.sm_count * constants["BLOCKS_PER_SM"],)

    def block(self, constants: dict[str, int], shape: tuple[int, ...] = (), dtype: str = "int32") -> tuple:
        return (constants["THREADS"],)

    def smem_pattern(self, constants: dict[str, int], dtype: str = "int32", dist: str | None = None) -> Any:
        """Per value: a +1 on the count (field 0, ATOMS.POPC.INC) and a float add on the sum (field 1, a
        compare-and-swap loop: every lane's word counts, equal bins serialise); AGG 2: lane 0 alone on a
        uniform warp (copy 0). Rows are records (bin * REPLICAS + the lane's copy), columns the field."""
        c = constants
        b = H.block_values(dist or "uniform", c["BINS_PER_PASS"], c["THREADS"], c["ITEMS"], 4)
        u = H.uniform_rows(b) if c["AGG"] == 2 else None
        reps = _replicas(c)
        rec = b * reps + np.arange(32) % reps  # lane l updates copy l % REPLICAS
        if u is not None:
            rec[u] = b[u] * reps  # the uniform warp's lane 0 (the only lane the update keeps)
        groups = []
        for f in (0, 1):  # count: +1 (POPC.INC); sum: a CAS loop
            act = H.aggregate(rec, c["AGG"], increment=(f == 0), uniform=u)
            groups.append(H._group("atomic", 4, act, rec, np.full(b.shape, f)))
        # interleave as the kernel issues them: count then sum for each value
        op, width, r0, c0, k0 = groups[0]
        _, _, r1, c1, _ = groups[1]
        rows = np.stack([r0, r1], axis=1).reshape(-1, 32)
        cols = np.stack([c0, c1], axis=1).reshape(-1, 32)
        return H.Pattern(((op, width, rows, cols, np.ones(len(rows), dtype=np.int64)),), ("count/sum",))

    def launch_info(self, constants: dict[str, int], shape: tuple[int, ...], dtype: str = "int32") -> dict:
        n, bins = int(shape[0]), int(shape[1])
        c = constants
        blocks = H.ARCH.sm_count * c["BLOCKS_PER_SM"]
        passes = math.ceil(bins / c["BINS_PER_PASS"])
        return {
            "blocks": blocks,
            "threads": c["THREADS"],
            "smem_bytes": self.smem_bytes(c, dtype),
            "tiles_per_block": passes * math.ceil(n / (c["THREADS"] * c["ITEMS"] * 4 * blocks)),
            "passes": passes,
            "inflight_bytes": c["ITEMS"] * 32,  # a 16-byte load of values and one of weights
        }

    def traffic(self, shape: tuple[int, ...], dtype: str = "int32") -> dict:
        n, bins = int(shape[0]), int(shape[1])
        return {"bytes": 8 * n + 8 * bins, "flops": n}

    def textbook(self, shape: tuple[int, ...], dtype: str = "int32") -> dict[str, int] | None:
        c = dict(self.DEFAULTS, BINS_PER_PASS=H._fit_pass(int(shape[1])), AOS=0)
        return c if self.legal(c, shape, dtype) else None

    # ---- measuring ------------------------------------------------------------------------------------

    def arguments(self, shape: tuple[int, ...], dtype: str, dist: str | None = None) -> list:
        import torch

        n, bins = int(shape[0]), int(shape[1])
        x = H.draw_values(n, bins, dist or "uniform").int()
        w = torch.rand(n, dtype=torch.float32)
        return [x, w, Out((bins,), torch.float32), Out((bins,), torch.int32), bins]

    def reference(self, x: Any, w: Any, bins: int) -> tuple:
        import torch

        keep = (x >= 0) & (x < bins)
        xk = x[keep].long()
        sums = torch.zeros(bins, dtype=torch.float64, device=x.device).index_add_(0, xk, w[keep].double())
        return sums.float(), torch.bincount(xk, minlength=bins).int()

    def expected(self, inputs: Any) -> tuple:
        return self.reference(inputs[0], inputs[1], int(inputs[4]))

    def inputs_from(self, x: Any, bins: int, weights: Any) -> Inputs:
        """The kernel's inputs for ``autopad.ops.histogram(x, bins, weights=w)``: no copies; the outputs are
        (sums float32 [bins], counts int32 [bins]), and ``sums`` is ``torch.bincount(x, w, bins)``."""
        import torch

        if str(weights.dtype).removeprefix("torch.") not in self.WEIGHT_DTYPES or weights.shape != x.shape:
            raise ValueError(
                f"weights: need {' or '.join(self.WEIGHT_DTYPES)} of x's shape {tuple(x.shape)}, "
                f"got {weights.dtype} {tuple(weights.shape)}"
            )
        out = (Out((bins,), torch.float32), Out((bins,), torch.int32))
        return Inputs((x, weights, *out, int(bins)), (x.numel(), int(bins)))

    def defines(self, constants: dict[str, int], dtype: str = "int32") -> dict[str, int]:
        c, lay = constants, self.layout(constants)
        base1 = lay._soa_bases()[1] if not lay.aos else 0
        return {
            "BINS": c["BINS_PER_PASS"], "W_AOS": int(lay.aos), "W_STRIDE": lay.stride, "W_BASE1": base1,
            "AGG": c["AGG"], "THREADS": c["THREADS"], "ITEMS": c["ITEMS"], "VALUE_BYTES": 4,
            "W_REPLICAS": _replicas(c),
        }  # fmt: skip

    def _compile(self, constants: dict[str, int], dtype: str, **extra: int) -> Any:
        from autopad import cuda_runtime

        d = {**self.defines(constants, dtype), **extra}
        return cuda_runtime.load_kernel(_SOURCE.read_text(), "whist_kernel", d)

    def build(self, constants: dict[str, int], dtype: str = "int32") -> HL.Built:
        return HL.Built((self._compile(constants, dtype),), dict(constants), dtype)

    def wide_kernel(self, built: HL.Built) -> Any:
        """The float64-weights build (``W_F64``) of ``built``'s constants, compiled on first use and kept."""
        if "f64" not in built._work:
            built._work["f64"] = self._compile(built.constants, built.dtype, W_F64=1)
        return built._work["f64"]

    def launcher(self, built: HL.Built, shape: tuple[int, ...], dtype: str = "int32") -> Any:
        """Grid, shared memory and scalars computed once; a call zeroes both outputs and launches (the
        float64-weights build for float64 weights, made on the first such call)."""
        c = built.constants
        n, bins = int(shape[0]), int(shape[1])
        geometry = (HL._sm_count() * c["BLOCKS_PER_SM"], c["THREADS"], self.smem_bytes(c))
        kern = HL.launch_fn(built.kernels[0], *geometry)
        wide: list = []
        scalars = [(np.int64(n), np.int32(lo), np.int32(bins)) for lo in range(0, bins, c["BINS_PER_PASS"])]

        def go(inputs: Any, out: Any) -> None:
            x, w = HL._aligned(inputs[0]), HL._aligned(inputs[1])
            sums, counts = out
            sums.zero_()
            counts.zero_()
            k = kern
            if w.element_size() == 8:  # float64 weights (inputs_from takes float32 and float64 only)
                if not wide:
                    wide.append(HL.launch_fn(self.wide_kernel(built), *geometry))
                k = wide[0]
            for s in scalars:
                k((counts, sums, x, w, *s))

        return go

    def run(self, built: HL.Built, inputs: Any, out: Any) -> None:
        """Zero both outputs and add every pass's counts and sums into them."""
        shape = getattr(inputs, "shape", ()) or (inputs[0].numel(), out[0].shape[0])
        built.launcher(self, tuple(shape))(inputs, out)


def presets(bins: int = 256) -> dict[str, dict[str, int]]:
    """AoS and SoA, each with and without the uniform-warp aggregation, and each with the most lane copies
    (``REPLICAS``) that fit its launch (two blocks an SM; one above 1,024 bins a pass; none where even two
    copies do not fit)."""
    d = HistogramWeightedCuda.DEFAULTS
    bpp = min(H._fit_pass(bins), 16384)
    out = {
        "aos": dict(d, BINS_PER_PASS=bpp),
        "soa": dict(d, BINS_PER_PASS=bpp, AOS=0),
        "aos_agg": dict(d, BINS_PER_PASS=bpp, AGG=2),
        "soa_agg": dict(d, BINS_PER_PASS=bpp, AOS=0, AGG=2),
    }
    if bpp > 1024:
        out = {k: dict(v, THREADS=1024, BLOCKS_PER_SM=1) for k, v in out.items()}
    launch = {"THREADS": 1024, "BLOCKS_PER_SM": 1} if bpp > 1024 else {"THREADS": 512, "BLOCKS_PER_SM": 2}
    for reps in (32, 16, 8, 4, 2):
        lanes = dict(d, BINS_PER_PASS=bpp, AOS=0, REPLICAS=reps, **launch)
        if SPEC.legal(lanes, (1 << 20, bins)):
            out["soa_lanes"], out["aos_lanes"] = lanes, dict(lanes, AOS=1)
            break
    return {k: v for k, v in out.items() if SPEC.legal(v, (1 << 20, bins))}


# ---- the module is the spec (autopad.kernels_registry: ("histogram_weighted", "cuda")) -----------------
SPEC = HistogramWeightedCuda()
# constants a candidate may leave out, with what is read for them: one copy, as before REPLICAS was in the
# space (layout, defines and the pattern read it through ``_replicas``); ``legal`` needs the rest given
_OPTIONAL = {"REPLICAS": 1}
_REQUIRED = tuple(k for k in SPEC.SPACE if k not in _OPTIONAL)


def _replicas(constants: dict[str, int]) -> int:
    return constants.get("REPLICAS", _OPTIONAL["REPLICAS"])


NAME, BACKEND, DTYPES, SPACE, DEFAULTS = SPEC.NAME, SPEC.BACKEND, SPEC.DTYPES, SPEC.SPACE, SPEC.DEFAULTS
LAYOUT_KEYS, PATTERN_KEYS, RESTRICTIONS = SPEC.LAYOUT_KEYS, SPEC.PATTERN_KEYS, SPEC.RESTRICTIONS
DISTS, WEIGHT_DTYPES = H.DISTS, SPEC.WEIGHT_DTYPES
legal, layout, smem_pattern, launch_info, traffic = (
    SPEC.legal, SPEC.layout, SPEC.smem_pattern, SPEC.launch_info, SPEC.traffic
)  # fmt: skip
textbook, make_inputs, alloc_output, build, run, check = (
    SPEC.textbook, SPEC.make_inputs, SPEC.alloc_output, SPEC.build, SPEC.run, SPEC.check
)  # fmt: skip
expected, inputs_from, check_shape, launcher, defines = (
    SPEC.expected, SPEC.inputs_from, SPEC.check_shape, SPEC.launcher, SPEC.defines
)  # fmt: skip


def reference(inputs: Any) -> tuple:
    """torch's (sums, counts) for ``make_inputs``'s inputs (the harness uses ``expected``)."""
    return SPEC.expected(inputs)
