"""CUDA transpose kernel spec: in [B, M, N] (or [M, N]) -> out [B, N, M], any element type of 1 to 8 bytes.

The kernel (transpose.cu) stages a TILE_M x TILE_N tile through shared memory: vectorised row-wise loads
from global memory, one VEC-wide st.shared per vector, then a column walk read-out (READOUT 0: one
element per ld.shared; 1: 4-byte words transposed in registers; 2: ldmatrix.x4.trans, 16-bit only) and a
wide global store. This module is the spec the tuner sees (autopad/spec.py), on ``autopad.CudaKernel``: the
constants, the one validity predicate ``legal`` (vectorised ``RESTRICTIONS`` first), the layout, and
``smem_pattern``: the exact shared-memory instructions one block issues for one tile, derived from the same
constants as the kernel's index arithmetic (numpy over warps, passes and lanes), so that the model scores
what the kernel does.

SCALAR_EDGE chooses the global side. 1 is the original kernel (edge tiles and rows that are not whole
vectors go through a guarded scalar path; the H200 quality study measured that path, hence
``SCALAR_PATH_COST``). 0 keeps every global access an aligned vector: misaligned rows (4097 x 8191) are
funnel-shifted in registers, edges are predicated whole vectors, and the kernel is built with
``__launch_bounds__(THREADS, MIN_BLOCKS)`` so that its registers allow the occupancy the model assumes
(``min_blocks``); at sm_90 the original 128 x 128 fp16 read-outs took 128 to 182 registers (1 to 2 blocks
per SM), the vector path 40 to 48. The original path states the registers its builds take
(``REGS_ORIGINAL_SM90``, compiled) and that its blocks run load, shared-memory passes and stores in turn
(``serial_phases``: the predictor queues its resident blocks for DRAM and shared memory), which together
rank the recorded studies' spaces (runs 1 and 2: all original path) at Spearman 0.92-0.94 on aligned
shapes; the vector path does not run its phases in turn (under the queue run 46's pick went from 1.02 to
1.13 of the best: transpose_model_gaps.md, fifth pass), but states the registers it is built for (its aligned
build everywhere since 2026-12-07, its shifted build where they leave a block alone on its SM) and, where a
block is alone, ``latency_phases`` (its loads, barrier and read-out in turn, with the DRAM round trip but not
the bandwidth in the queue: H200 run 114); its memory streams pay a partial round at its blocks' share
(``partial_memory_rounds``). Both paths state
``phased_loads`` (every pass of the tile's loads is issued before the barrier, so its bytes in flight need
resident warps too: H100 run 166's profile). On misaligned rows the
vector path's shuffles, funnel shifts and shifted read-out cost instructions the aligned build does not run;
the spec states them as issue time (``issue_cycles``, read off the SASS): narrow vectors there are
instruction-bound (H200 run 46). Where output rows are off the vector grid, READOUT 0 and the 2-byte READOUT 1
build read out by the shifted gather, whose banks depend on each output row's shift from the vector grid (M,
and batched N too); the patterns have no shape (READOUT 0's lists the gather at shift 0, READOUT 1's its word
loads), so launch info adds the gather at the shape's shifts minus the listed read-out (``extra_wavefronts``).

Where each part lives (transpose.py was split, one concern a module; every name it defined is still importable
from here): transpose_tile.py (the tile's geometry: dims, phases, layout, footprint, halo, the path),
transpose_space.py (``SPACE``, ``DEFAULTS``, ``RESTRICTIONS`` and the legality they define),
transpose_pattern.py (``SmemPattern``, the block's pattern), transpose_cost.py (``launch_info``'s terms and
their measured constants), transpose_launch.py (``Built``, ``min_blocks``' register arithmetic, the launch),
transpose_regs.py (the original path's compiled registers, ``REGS_ORIGINAL_SM90``); here, the spec class that
ties them to transpose.cu (its layout, macros and build), ``presets`` and the module-level names of ``SPEC``.
The cache key hashes transpose.cu, common.cuh and all seven modules (``SOURCE_FILES``): each decides what is
built, launched or predicted, as the one module did before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from autopad.kernels.transpose_io import TransposeIO
from autopad.kernels.transpose_io import input_tensor as _x  # noqa: F401

from autopad.bases import CudaKernel, Out
from autopad.kernel_base import sibling_files
from autopad.layouts import Legality, Padded, Swizzled
from autopad.spec import DTYPE_BYTES

from . import transpose_cost, transpose_launch, transpose_space

# besides what this module uses, the names transpose.py defined before the split, importable from here as
# before (tests and benchmarks use some of the private ones)
from .transpose_cost import (  # noqa: F401
    _GATHER_EXTRA,
    _GATHER_KEYS,
    _INT_WARP_INSTR_PER_CLK,
    _MIS_PASS_INSTR,
    _MIS_WORD_INSTR,
    COLUMN_GROUP,
    GROUP_GAIN,
    NARROW_ACCESS_COST,
    ORIGINAL_PATH_EFFICIENCY,
    SCALAR_PATH_COST,
    SEAM_SECTOR_BYTES,
    SEGMENT_BYTES,
    WIDE_PITCH_BYTES,
    WIDE_PITCH_ORDER_TIME,
    _gather_extra,
    _gathered,
    _launch_arrays,
    _launch_info,
    segment_efficiency,
    vector_seam_rows,
    wide_pitch,
)
from .transpose_launch import _REG_OVERHEAD, _REG_PER_PASS, Built  # noqa: F401
from .transpose_pattern import _LANES, _LANES32, _LDSM_ROW, _LDSM_ROW32, SmemPattern, _Names, _pattern  # noqa: F401
from .transpose_regs import REGS_ORIGINAL_SM90  # noqa: F401
from .transpose_space import (  # noqa: F401
    _GROUPS,
    _I_RO,
    _I_SC,
    _I_TM,
    _I_TN,
    _I_VEC,
    _KEYS,
    _THREAD_KEYS,
    _TILE_KEYS,
    DEFAULTS,
    FAMILY_KEYS,
    LAYOUT_KEYS,
    LAYOUT_READS,
    MAX_VEC_REGS,
    PATTERN_KEYS,
    RESTRICTIONS,
    SPACE,
    _each,
    _key_of,
    _legal_shape,
    _legal_static,
    _legal_threads,
    _legal_tile,
)
from .transpose_tile import (  # noqa: F401
    _ARCH,
    _LEGAL,
    _cdiv,
    _dims,
    _halo,
    _hpass,
    _layout,
    _lkey,
    _phases,
    _scalar,
    _smem,
)

_SOURCE = Path(__file__).with_name("transpose.cu")
# what keys the tuning cache (``kernels_registry.source_hash``): the kernel and every module of this spec,
# as transpose.py alone was keyed before the split (each decides what is built, launched or predicted)
SOURCE_FILES = sibling_files(
    __file__,
    "transpose.cu",
    "common.cuh",
    "transpose.py",
    "transpose_tile.py",
    "transpose_space.py",
    "transpose_pattern.py",
    "transpose_cost.py",
    "transpose_launch.py",
    "transpose_regs.py",
)


class TransposeCuda(TransposeIO, CudaKernel):
    """The CUDA transpose as the tuner sees it (see the module docstring)."""

    NAME = "transpose"
    DTYPES = ("float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "int8", "uint8")
    # the space and its restrictions are transpose_space.py's, with the legality they define
    SPACE: dict[str, tuple[int, ...]] = SPACE
    DEFAULTS = DEFAULTS
    LAYOUT_KEYS = LAYOUT_KEYS
    FAMILY_KEYS = FAMILY_KEYS
    LAYOUT_READS = LAYOUT_READS
    PATTERN_KEYS = PATTERN_KEYS
    RESTRICTIONS = RESTRICTIONS
    SOURCE_FILE = str(_SOURCE)
    KERNEL = "transpose_kernel"
    DYNAMIC_SMEM = True

    # ---- the tuner's side (numpy only) ---------------------------------------------------------------

    def check_shape(self, shape: tuple[int, ...]) -> None:
        """Raise ValueError unless ``shape`` is [M, N] or [B, M, N] of positive sizes within the grid."""
        if len(shape) not in (2, 3) or any(isinstance(d, bool) or int(d) != d for d in shape):
            raise ValueError(
                f"shape: transpose takes [M, N] or [B, M, N] integer sizes, got {tuple(shape)!r}"
            )
        b, m, n = _dims(tuple(int(d) for d in shape))
        if min(b, m, n) < 1:
            raise ValueError(f"shape: every size must be at least 1, got {tuple(shape)!r}")
        if m >= 2**31 or n >= 2**31 or b * m * n >= 2**59:
            raise ValueError(f"shape: {tuple(shape)!r} is too large (sizes below 2**31, 2**59 elements)")

    def layout(self, constants: dict[str, int], dtype: str) -> Padded | Swizzled:
        """The shared tile: Padded when SW_MAX_PHASE == 1, else Swizzled (same formula, see layouts.py)."""
        return _layout(*_lkey(constants, self._e(dtype)))

    def smem_bytes(self, constants: dict[str, int], dtype: str, misaligned: bool = False) -> int:
        """The shared tile's bytes; the misaligned build's also holds halo rows past the tile (output rows
        off the vector grid are written as whole vectors, transpose.cu): VEC, or VEC + 12 for the 1-byte
        register read-out's window."""
        e = self._e(dtype)
        return _smem(_lkey(constants, e), _halo(constants, misaligned, e))

    def legal(self, constants: dict[str, int], shape: tuple[int, ...], dtype: str) -> Legality:
        """Can this candidate run? The layout's own check, then the kernel's thread and register arithmetic,
        then the grid for this shape (``transpose_space.legal``)."""
        return transpose_space.legal(self, constants, shape, dtype)

    def legal_batch(self, columns: dict[str, np.ndarray], shape: tuple[int, ...], dtype: str) -> np.ndarray:
        """``legal`` of many candidates at once, the same answer row for row
        (``transpose_space.legal_batch``)."""
        return transpose_space.legal_batch(self, columns, shape, dtype)

    def launch_info_batch(self, columns: dict[str, np.ndarray], shape: tuple[int, ...], dtype: str) -> dict:
        """``launch_info`` of many candidates at once, as a dict of arrays (``transpose_cost``)."""
        return transpose_cost.launch_info_batch(self, columns, shape, dtype)

    def smem_pattern(self, constants: dict[str, int], dtype: str, dist: str | None = None) -> SmemPattern:
        """Every shared-memory instruction of one block over one tile, lane = threadIdx.x (block is 1-D).

        Store phase: warp w, pass p: lane writes VEC elements at (ly + p*LY, lx*VEC) in one VEC*elem store.
        Read-out 0: warp w, pass p, element v: lane reads (sx*VEC + v, sy + p*SY), elem bytes. Read-out 1:
        4-byte words at (sx*VEC + v, (sy + p*SY) * G). Read-out 2: one ldmatrix.x4.trans per 32 x 8 block
        (autopad.model's op of that name: lane 8i + j gives the 16-byte row j of matrix i, one phase per
        matrix).
        """
        c = constants
        return _pattern(c["TILE_M"], c["TILE_N"], c["THREADS"], c["VEC"], c.get("READOUT", 0), self._e(dtype))

    def grid(self, constants: dict[str, int], shape: tuple[int, ...], dtype: str = "float32") -> tuple:
        b, m, n = _dims(tuple(shape))
        gx, gy = _cdiv(n, constants["TILE_N"]), _cdiv(m, constants["TILE_M"])
        if not _scalar(constants):
            return (b * gx * gy, 1, 1)
        return (gx, gy, min(b, 65535))

    def block(self, constants: dict[str, int], shape: tuple[int, ...] = (), dtype: str = "float32") -> tuple:
        return (constants["THREADS"],)

    def launch_info(self, constants: dict[str, int], shape: tuple[int, ...], dtype: str) -> dict:
        """The grid and the predictor's extra terms (``transpose_cost.launch_info``)."""
        return transpose_cost.launch_info(self, constants, shape, dtype)

    def traffic(self, shape: tuple[int, ...], dtype: str) -> dict:
        b, m, n = _dims(tuple(shape))
        return {"bytes": 2 * b * m * n * self._e(dtype), "flops": 0}

    def textbook(self, shape: tuple[int, ...], dtype: str) -> dict[str, int] | None:
        """The classic 32 x 33 tile: DEFAULTS with one element of padding per row."""
        c = dict(self.DEFAULTS, PAD=1)
        return c if self.legal(c, shape, dtype) else None

    def min_blocks(self, constants: dict[str, int], dtype: str, misaligned: bool = False) -> int:
        """The occupancy the vector path (SCALAR_EDGE 0) is built for (``transpose_launch.min_blocks``)."""
        return transpose_launch.min_blocks(self, constants, dtype, misaligned)

    # ---- the measuring side (torch) ------------------------------------------------------------------

    def arguments(self, shape: tuple[int, ...], dtype: str) -> list:
        import torch

        b, m, n = _dims(tuple(shape))
        td = getattr(torch, dtype)
        if dtype in ("int8", "uint8"):
            lo, hi = (-128, 128) if dtype == "int8" else (0, 256)
            x = torch.randint(lo, hi, tuple(shape), dtype=torch.int16).to(td)
        else:
            x = torch.randn(tuple(shape)).clamp(-400, 400).to(td)
        return [Out((*tuple(shape)[:-2], n, m), td), x]

    def defines(self, constants: dict[str, int], dtype: str, misaligned: bool = False) -> dict[str, int]:
        """Every -D the template takes: the layout's own macros plus the tile and thread constants."""
        c = constants
        d = {k: int(c[k]) for k in ("TILE_M", "TILE_N", "THREADS", "VEC", "READOUT")}
        d.update(self.layout(c, dtype).cuda_defines())
        d["ELEM_BYTES"] = self._e(dtype)
        if not _scalar(c):
            d["SCALAR_EDGE"] = 0
            d["MISALIGNED"] = int(misaligned)
            d["MIN_BLOCKS"] = self.min_blocks(c, dtype, misaligned)
        return d

    def build(self, constants: dict[str, int], dtype: str) -> Built:
        from autopad import cuda_runtime

        src = self.source()
        k = cuda_runtime.load_kernel(src, self.KERNEL, self.defines(constants, dtype))
        shifted = None
        if not _scalar(constants) and constants["VEC"] > 1:
            shifted = cuda_runtime.load_kernel(src, self.KERNEL, self.defines(constants, dtype, True))
        return Built(k, dict(constants), dtype, shifted)

    # the launch's steps, asked by autopad.ops.runner's flat path as well as by ``run`` and ``launcher``
    def _plan(self, built: Built, shape: tuple[int, ...]) -> tuple[tuple, tuple, int]:
        """(grid, the int32 arguments after the two pointers, vector bytes): ``transpose_launch.plan``."""
        return transpose_launch.plan(self, built, shape)

    def _smem_for(self, built: Built, kernel: Any) -> int:
        """Dynamic shared bytes for this build of the candidate: ``transpose_launch.smem_for``."""
        return transpose_launch.smem_for(self, built, kernel)

    def _pick(self, built: Built, x: Any, out: Any, m: int, n: int, vb: int) -> tuple[Any, tuple]:
        """The kernel for these pointers and the scalar path's ``aligned`` flag: ``transpose_launch.pick``."""
        return transpose_launch.pick(built, x, out, m, n, vb)

    def run(self, built: Built, inputs: Any, out: Any) -> None:
        transpose_launch.run(self, built, inputs, out)

    def launcher(self, built: Built, shape: tuple[int, ...], dtype: str) -> Any:
        """A call that only picks the build for the pointers' alignment and launches
        (``transpose_launch.launcher``)."""
        return transpose_launch.launcher(self, built, shape, dtype)


# tile shapes whose swizzled read-out the model scores best at 256 threads (searched over 32/64/128 tiles,
# per_phase 1..16, max_phase 2..32 with 16-byte vectors; see tests/test_cuda_transpose.py)
_BEST_TILE = {8: (64, 128), 4: (32, 128), 2: (64, 128), 1: (128, 128)}


def presets(dtype: str) -> dict[str, dict[str, int]]:
    """Named candidates: the baselines and 16-byte-vector tiles, swizzled and not (for the tuner's shortlist
    and the benchmark), on the original path (SCALAR_EDGE 1). The swizzle permutes VEC-element chunks by the
    row's VEC-row group: the column walk's lanes (rows sx*VEC + v) then land in distinct chunks, so in
    distinct banks."""
    if dtype not in SPEC.DTYPES:
        raise ValueError(f"transpose: dtype {dtype!r} is not one of {SPEC.DTYPES}")
    e = DTYPE_BYTES[dtype]
    vec = 16 // e
    tm, tn = _BEST_TILE[e]
    sw = {"SW_VEC": vec, "SW_PER_PHASE": vec, "SW_MAX_PHASE": 8}
    d = SPEC.DEFAULTS
    base = dict(d, THREADS=256, VEC=vec)
    out = {
        "unpadded": dict(d),
        "textbook": dict(d, PAD=1),
        "vec_unpadded": dict(base, TILE_M=tm, TILE_N=tn),
        "vec_swizzled": dict(base, TILE_M=tm, TILE_N=tn, **sw),
        "vec64_unpadded": dict(base, TILE_M=64, TILE_N=64),
        "vec64_swizzled": dict(base, TILE_M=64, TILE_N=64, **sw),
        "vec64_padded": dict(base, TILE_M=64, TILE_N=64, PAD=vec),
    }
    if e <= 2:  # word loads + register transpose of the read-out
        out["rt_unpadded"] = dict(base, TILE_M=tm, TILE_N=tn, READOUT=1)
        out["rt_swizzled"] = dict(base, TILE_M=tm, TILE_N=tn, READOUT=1, **sw)
    if e == 1:  # 256-byte tile rows, as 16-bit's 128 x 128, with 16 swizzle phases (16 row groups of 16)
        wide = {"SW_VEC": 16, "SW_PER_PHASE": 16, "SW_MAX_PHASE": 16}
        out["rt_wide"] = dict(base, TILE_M=128, TILE_N=256, THREADS=512, READOUT=1, **wide)
    return {k: v for k, v in out.items() if SPEC.legal(v, (4096, 4096), dtype)}


# the module is the spec the registry loads (autopad.kernels_registry.BUILTIN): expose SPEC's names
SPEC = TransposeCuda()
NAME, BACKEND, DTYPES, SPACE = SPEC.NAME, SPEC.BACKEND, SPEC.DTYPES, SPEC.SPACE
DEFAULTS, LAYOUT_KEYS, PATTERN_KEYS, RESTRICTIONS = (
    SPEC.DEFAULTS,
    SPEC.LAYOUT_KEYS,
    SPEC.PATTERN_KEYS,
    SPEC.RESTRICTIONS,
)
LAYOUT_READS = SPEC.LAYOUT_READS
legal, layout, smem_pattern, launch_info, traffic = (
    SPEC.legal,
    SPEC.layout,
    SPEC.smem_pattern,
    SPEC.launch_info,
    SPEC.traffic,
)
legal_batch, launch_info_batch = SPEC.legal_batch, SPEC.launch_info_batch
textbook, check_shape, inputs_from, launcher, grid = (
    SPEC.textbook,
    SPEC.check_shape,
    SPEC.inputs_from,
    SPEC.launcher,
    SPEC.grid,
)
make_inputs, alloc_output, expected, check = SPEC.make_inputs, SPEC.alloc_output, SPEC.expected, SPEC.check
build, run, defines, source, min_blocks = SPEC.build, SPEC.run, SPEC.defines, SPEC.source, SPEC.min_blocks


def reference(inputs: Any) -> Any:
    """torch's answer from an inputs tuple or the tensor (the module-level form older scripts call)."""
    return SPEC.reference(inputs)


__all__ = ["TransposeCuda", "SPEC", "Built", "SmemPattern", "presets", "DTYPE_BYTES", "NARROW_ACCESS_COST"]
