"""CUDA histogram spec (histogram.cu) on ``autopad.CudaKernel``: counts of int32 or uint8 values in [0, bins).

Shape ``(n, bins)``. The layout decision is the privatised sub-histogram (``autopad.layouts.Replicated``):
how many replicas, replica-major or interleaved, padding, and who shares a replica (``PRIV``: 0 a warp,
1 one lane position of every warp: with 32 interleaved replicas lane l always hits bank l, one wavefront
per update instruction whatever the data). ``COUNTER`` 16 keeps 16-bit counters (two bins a word) so that
65,536 bins fit one pass in 128 KB; the kernel spills a counter to global memory before it can overflow
and the blocks' counters are summed from a workspace by a second kernel (histogram.cu explains the
arithmetic). Bins that fit neither are covered in passes of BINS_PER_PASS bins, each re-reading the input.

``smem_pattern`` lists one block's shared atomics for one grid-stride iteration (THREADS x ITEMS x
values-per-16-bytes values) drawn from an input class (``dist``: "uniform", "skewed" = Zipf(1.5), "single" =
all equal, "sorted" = runs of ``SORTED_RUN`` equal values), with the aggregation the kernel applies: its
warp aggregation (AGG) and the hardware's (``atomicAdd(&h[b], 1u)`` is ATOMS.POPC.INC, which serves lanes
that share an address once). It is built with numpy over all warps at once: one draw of values per (dist,
bins), a sort per row for the first lane of each address. The 16-bit counters' zeroing, overflow scans and

Where each part lives (histogram.py was split, one concern a module; every name it defined is still
importable from here): histogram_inputs.py (the input classes: ``DISTS``, ``sample``, ``block_values``,
``draw_values``), histogram_pattern.py (``Pattern``, ``aggregate``, the block's pattern, the
``POPC_INC_AGGREGATES`` switch), histogram_space.py (``SPACE``, ``DEFAULTS``, ``RESTRICTIONS`` and the
legality they define), histogram_cost.py (``launch_info``'s terms and their measured constants),
histogram_launch.py (``Built``, ``launch_fn`` and the launcher, the device facts it reads); here, the spec
class that ties them to histogram.cu (its layout, macros and build), ``presets`` and the module-level
names of ``SPEC``. The cache key hashes histogram.cu, common.cuh and the two modules that decide what is
built and launched, this one and histogram_launch.py (``SOURCE_FILES``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from autopad.bases import CudaKernel, Inputs, Out
from autopad.kernel_base import sibling_files
from autopad.layouts import Legality, Replicated
from autopad.spec import DTYPE_BYTES, batched_info

from . import histogram_cost, histogram_launch, histogram_pattern, histogram_space

# besides what this module uses, the names histogram.py defined before the split, importable from here as
# before (tests, benchmarks and histogram_weighted.py use some of the private ones)
from .histogram_cost import (  # noqa: F401
    _AGG_CYCLES,
    FLUSH_BIN_CYCLES,
    FLUSH_LINE_CYCLES,
    FLUSH_WARP_CYCLES,
    MATCH_ANY_CYCLES,
    SPILL_AT,
    UNIFORM_TEST_CYCLES,
    _busiest_sm_tiles,
    _flush_cycles,
    _scan_every,
)
from .histogram_inputs import (  # noqa: F401
    _DIST_ALIASES,
    _MAX_DRAW,
    DISTS,
    SORTED_RUN,
    _draw,
    block_values,
    canonical_dist,
    draw_values,
    sample,
)
from .histogram_launch import (  # noqa: F401
    _PROPS,
    RED_SPLIT,
    Built,
    _aligned,
    _props,
    _sm90,
    _sm_count,
    launch_fn,
)
from .histogram_pattern import (  # noqa: F401
    POPC_INC_AGGREGATES,
    Pattern,
    _frozen,
    _group,
    _iid_lanes,
    _lanes,
    _pattern,
    aggregate,
    first_lanes,
    uniform_rows,
)
from .histogram_space import (  # noqa: F401
    _FOOTPRINT,
    _KEYS,
    _LAYOUT_READS,
    ARCH,
    DEFAULTS,
    LAYOUT_KEYS,
    LAYOUT_READS,
    PATTERN_KEYS,
    RESTRICTIONS,
    SPACE,
    _broken_rule,
    _fit_pass,
    _legal_bins,
    _replicated,
    _rules_batch,
    _static,
    _static_smem,
)

_SOURCE = Path(__file__).with_name("histogram.cu")
# what keys the tuning cache (``kernels_registry.source_hash``): the kernels and the Python that decides what
# is built and launched (this module: layout, macros, the kernels built; histogram_launch.py: grid, shared
# memory, passes). The space, the input classes and the model (histogram_space/_inputs/_pattern/_cost.py)
# are left out, so that they can change without orphaning the tunes already cached.
SOURCE_FILES = sibling_files(__file__, "histogram.cu", "common.cuh", "histogram.py", "histogram_launch.py")


class HistogramCuda(CudaKernel):
    """``out[b] = #{i : x[i] == b}`` for int32 or uint8 x, b in [0, bins); values outside are ignored."""

    NAME = "histogram"
    DTYPES = ("int32", "uint8")
    SHAPE = ("N", "BINS")
    SOURCE_FILE = str(_SOURCE)
    # the space and its restrictions are histogram_space.py's, with the legality they define
    SPACE: dict[str, tuple[int, ...]] = SPACE
    DEFAULTS = DEFAULTS
    LAYOUT_KEYS = LAYOUT_KEYS
    PATTERN_KEYS = PATTERN_KEYS
    LAYOUT_READS = LAYOUT_READS
    DISTS = DISTS
    ACCUMULATES = False  # run() zeroes the output itself
    RESTRICTIONS = RESTRICTIONS

    # ---- the model's side ---------------------------------------------------------------------------

    def layout(self, constants: dict[str, int], dtype: str = "int32") -> Replicated:
        c = constants
        if c.get("COUNTER", 32) == 16:
            return _replicated(c["BINS_PER_PASS"], 1, 2, 0, 0)
        if c.get("PRIV", 0) == 2:  # word (b // 4) * THREADS + t: "replica" t of word-column b // 4
            return _replicated(c["BINS_PER_PASS"] // 4, c["THREADS"], 4, 1, 0)
        return _replicated(c["BINS_PER_PASS"], c["REPLICAS"], 4, c["INTERLEAVED"], c["PAD"])

    def smem_bytes(self, constants: dict[str, int], dtype: str = "int32") -> int:
        """The layout's footprint; per-thread bytes add a 32-bit block histogram after them."""
        extra = 4 * constants["BINS_PER_PASS"] if constants.get("PRIV", 0) == 2 else 0
        return self.layout(constants, dtype).footprint + extra

    def check_shape(self, shape: tuple[int, ...]) -> None:
        """(n, bins) with 1 <= n < 2**31 and bins >= 1; a ValueError says what is allowed."""
        if len(shape) != 2 or any(isinstance(d, bool) or not isinstance(d, (int, np.integer)) for d in shape):
            raise ValueError(f"histogram: shape is (n, bins), two ints, got {shape!r}")
        n, bins = int(shape[0]), int(shape[1])
        if not 1 <= n < 2**31 or bins < 1:
            raise ValueError(f"histogram: need 1 <= n < 2**31 values and bins >= 1, got n={n}, bins={bins}")

    def legal(self, constants: dict[str, int], shape: tuple[int, ...], dtype: str = "int32") -> Legality:
        """The restrictions, the layout's budget, passes, occupancy and the shape's own limits
        (``histogram_space.legal``)."""
        return histogram_space.legal(self, constants, shape, dtype)

    def legal_batch(self, columns: dict[str, np.ndarray], shape: tuple[int, ...], dtype: str) -> np.ndarray:
        """``legal`` of many candidates at once, the same answer row for row
        (``histogram_space.legal_batch``)."""
        return histogram_space.legal_batch(self, columns, shape, dtype)

    def launch_info_batch(self, columns: dict[str, np.ndarray], shape: tuple[int, ...], dtype: str) -> dict:
        """``launch_info`` of many candidates at once, as a dict of arrays: asked once per distinct
        combination of what it reads besides the layout, the footprint once per distinct layout."""
        reads = ("THREADS", "BLOCKS_PER_SM", "BINS_PER_PASS", "ITEMS", "PRIV", "COUNTER", "AGG")
        return batched_info(self, columns, shape, dtype, reads, _LAYOUT_READS)

    def grid(self, constants: dict[str, int], shape: tuple[int, ...] = (), dtype: str = "int32") -> tuple:
        return (ARCH.sm_count * constants["BLOCKS_PER_SM"],)

    def block(self, constants: dict[str, int], shape: tuple[int, ...] = (), dtype: str = "int32") -> tuple:
        return (constants["THREADS"],)

    def smem_pattern(
        self, constants: dict[str, int], dtype: str = "int32", dist: str | None = None
    ) -> Pattern:
        """One block's shared-memory updates for one grid-stride iteration, for the input class ``dist``."""
        key = tuple(sorted((k, int(constants[k])) for k in self.PATTERN_KEYS))
        return histogram_pattern.block_pattern(key, dtype, dist or "uniform")

    def launch_info(self, constants: dict[str, int], shape: tuple[int, ...], dtype: str = "int32") -> dict:
        """The grid, its passes and the predictor's extra terms (``histogram_cost.launch_info``)."""
        return histogram_cost.launch_info(self, constants, shape, dtype)

    def traffic(self, shape: tuple[int, ...], dtype: str = "int32") -> dict:
        n, bins = int(shape[0]), int(shape[1])
        return {"bytes": n * DTYPE_BYTES[dtype] + 4 * bins, "flops": 0}

    def textbook(self, shape: tuple[int, ...], dtype: str = "int32") -> dict[str, int] | None:
        """The usual recipe: a few replica-major replicas each padded by one word."""
        c = dict(self.DEFAULTS, BINS_PER_PASS=_fit_pass(int(shape[1])), REPLICAS=4, PAD=1)
        return c if self.legal(c, shape, dtype) else None

    # ---- the measuring side (torch) -----------------------------------------------------------------

    def arguments(self, shape: tuple[int, ...], dtype: str, dist: str | None = None) -> list:
        """Values of the input class on the current device, the int32 [bins] output, and bins."""
        import torch

        n, bins = int(shape[0]), int(shape[1])
        x = draw_values(n, bins, dist or "uniform")
        return [x.to(getattr(torch, dtype)), Out((bins,), torch.int32), bins]

    def reference(self, x: Any, bins: int) -> Any:
        import torch

        x = x.long()
        return torch.bincount(x[(x >= 0) & (x < bins)], minlength=bins).int()

    def expected(self, inputs: Any) -> tuple:
        return (self.reference(inputs[0], int(inputs[2])),)

    def inputs_from(self, x: Any, bins: int) -> Inputs:
        """The kernel's inputs for ``autopad.ops.histogram(x, bins)``: no copy of x."""
        import torch

        return Inputs((x, Out((bins,), torch.int32), int(bins)), (x.numel(), int(bins)))

    def defines(self, constants: dict[str, int], dtype: str = "int32") -> dict[str, int]:
        c = constants
        d = dict(self.layout(c, dtype).cuda_defines())
        d.update(VALUE_BYTES=DTYPE_BYTES[dtype], AGG=c["AGG"], THREADS=c["THREADS"], ITEMS=c["ITEMS"])
        if c.get("PRIV", 0):
            d["PRIV"] = c["PRIV"]
        if c.get("COUNTER", 32) == 16:  # builds hist16_kernel and hist16_reduce
            d["COUNTER"] = 16
        if c.get("PRIV", 0) == 2:  # the kernel's own macros: BINS bins of THREADS byte counters
            d.update(BINS=c["BINS_PER_PASS"], REPLICAS=1, INTERLEAVED=0, PAD=0)
        return d

    def build(self, constants: dict[str, int], dtype: str = "int32") -> Built:
        from autopad import cuda_runtime

        d = self.defines(constants, dtype)
        src = _SOURCE.read_text()
        if constants.get("COUNTER", 32) == 16:
            names: tuple[str, ...] = ("hist16_kernel", "hist16_reduce")
        else:
            names = ("hist8_kernel" if constants.get("PRIV", 0) == 2 else "hist_kernel",)
        ks = tuple(cuda_runtime.load_kernel(src, k, d) for k in (*names, "hist_zero"))
        return Built(ks, dict(constants), dtype)

    def launcher(self, built: Built, shape: tuple[int, ...], dtype: str = "int32") -> Any:
        """A function (inputs, out) -> None with the grid, shared memory and scalars precomputed: it zeroes
        ``out`` and launches the passes, each overlapping the kernel before it on sm_90
        (``histogram_launch.launcher``)."""
        return histogram_launch.launcher(self, built, shape, dtype)

    def run(self, built: Built, inputs: Any, out: Any) -> None:
        """Zero ``out`` (int32 [bins]) and add every pass's counts into it."""
        shape = getattr(inputs, "shape", ()) or (inputs[0].numel(), out.shape[0])
        built.launcher(self, tuple(shape))(inputs, out)


def presets(dtype: str = "int32", bins: int = 256) -> dict[str, dict[str, int]]:
    """Named candidates: the plain kernel (one replica, no aggregation), the textbook padded replicas, the
    warp aggregations with and without replicas, per-lane replicas and, for large bins, 16-bit counters."""
    d = HistogramCuda.DEFAULTS
    bpp = _fit_pass(bins)
    base = dict(d, BINS_PER_PASS=bpp)
    if bpp * 4 * base["BLOCKS_PER_SM"] > ARCH.smem_per_sm // 2:  # big: fewer, larger blocks, and passes
        bpp = min(bpp, 32768)
        base = dict(base, BINS_PER_PASS=bpp, THREADS=1024, BLOCKS_PER_SM=max(1, 2 * 16384 // bpp))
    out = {
        "unpadded": base,
        "textbook": dict(base, REPLICAS=4, PAD=1),
        "agg_match": dict(base, AGG=1),
        "agg_uniform": dict(base, AGG=2),
        "agg_uniform_rep4": dict(base, AGG=2, REPLICAS=4, PAD=1),
        "agg_uniform_rep8_il": dict(base, AGG=2, REPLICAS=8, INTERLEAVED=1, PAD=1),
        "lane_rep32": dict(base, PRIV=1, REPLICAS=32, INTERLEAVED=1, THREADS=1024, BLOCKS_PER_SM=2, ITEMS=2),
        "thread_bytes": dict(base, PRIV=2, THREADS=256, BLOCKS_PER_SM=2, ITEMS=4),
    }
    if _fit_pass(bins) >= 16384:
        c16 = dict(d, BINS_PER_PASS=_fit_pass(bins), COUNTER=16, THREADS=1024, BLOCKS_PER_SM=1, ITEMS=2)
        out.update({"c16": c16, "c16_agg_uniform": dict(c16, AGG=2), "c16_runs": dict(c16, AGG=3),
                    "c16_split": dict(c16, AGG=4)})  # fmt: skip
    spec = HistogramCuda()
    return {k: v for k, v in out.items() if spec.legal(v, (1 << 20, bins), dtype)}


def __getattr__(name: str) -> Any:  # the weighted spec moved to histogram_weighted.py; old names still work
    if name in ("WEIGHTED", "w_presets"):
        from . import histogram_weighted as w

        return w if name == "WEIGHTED" else w.presets  # the module: reference(inputs) as before
    raise AttributeError(name)


# ---- the module is the spec (autopad.kernels_registry imports it) --------------------------------------
SPEC = HistogramCuda()
NAME, BACKEND, DTYPES, SPACE, DEFAULTS = SPEC.NAME, SPEC.BACKEND, SPEC.DTYPES, SPEC.SPACE, SPEC.DEFAULTS
LAYOUT_KEYS, PATTERN_KEYS, RESTRICTIONS = SPEC.LAYOUT_KEYS, SPEC.PATTERN_KEYS, SPEC.RESTRICTIONS
LAYOUT_READS = SPEC.LAYOUT_READS
legal_batch, launch_info_batch = SPEC.legal_batch, SPEC.launch_info_batch
legal, layout, smem_pattern, launch_info, traffic = (
    SPEC.legal, SPEC.layout, SPEC.smem_pattern, SPEC.launch_info, SPEC.traffic
)  # fmt: skip
textbook, make_inputs, alloc_output, build, run, check = (
    SPEC.textbook, SPEC.make_inputs, SPEC.alloc_output, SPEC.build, SPEC.run, SPEC.check
)  # fmt: skip
expected, inputs_from, check_shape, launcher, defines = (
    SPEC.expected, SPEC.inputs_from, SPEC.check_shape, SPEC.launcher, SPEC.defines
)  # fmt: skip


def reference(inputs: Any) -> Any:
    """torch's counts for ``make_inputs``'s inputs (the harness uses ``expected``)."""
    return SPEC.expected(inputs)[0]
