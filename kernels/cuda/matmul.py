"""CUDA fp32 SIMT GEMM kernel spec: C = A @ B, row-major, any M, N, K (matmul.cu), on autopad.CudaKernel.

The layout decision is two tiles: As (BK x BM, A staged transposed, written one word at a time down a
column: the access padding or a swizzle must fix) and Bs (BK x BN, written and read in 16-byte vectors).
``layout`` returns both as one ``OperandTiles`` object whose logical rows 0..BK-1 are As and BK..2BK-1
are Bs, so the model scores the whole k-step with one call; ``smem_pattern`` lists the instructions one
block issues per k-step (one "tile" = one BK slice), taken from the same index arithmetic as the kernel
and built for all warps, loads and k at once (numpy).

Two constants beyond the tile and the layouts:

* ``THREAD_MAP`` (0, 1) places a warp's lanes on the thread tile: 0 row-major (today's kernel); 1 pairs
  lanes so that every 16-byte fragment load of A and of B merges into two 16-lane phases (the model sees
  2 wavefronts per B fragment instead of 4: a third fewer per k-step at 128x128 tiles).
* ``SPLIT_K`` (1, 2, 4) splits K over ``gridDim.z`` when the output tiles cannot fill the SMs (decode-like
  M = 128: 64 tiles of 128x128 on 132 SMs); partial tiles go to an fp32 workspace that a second kernel
  sums. ``legal`` keeps it to those shapes; the model is charged the workspace's bytes.

Where each part lives (matmul.py was split, one concern a module; every name it defined is still importable
from here): matmul_tile.py (the geometry: ``OperandTiles``, the tiles' cache, the threads, ``thread_xy``,
``k_per_split``), matmul_space.py (``SPACE``, ``DEFAULTS``, ``RESTRICTIONS`` and the legality they define),
matmul_cost.py (``launch_info``'s terms: registers needed and allowed, ``REG_CAP_COST``, the swizzled
accesses, split-K's workspace), matmul_regs.py (the compiled register tables ``REGS_SM90`` and
``REGS_SWIZZLE_SM90``); here, the spec class that ties them to matmul.cu (its layout, pattern, macros,
build and launch), ``presets`` and the module-level names of ``SPEC``. The cache key hashes matmul.cu,
common.cuh and all five modules (``SOURCE_FILES``): each decides what is built, launched or predicted, as
the one module did before.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from autopad.access import Instruction
from autopad.bases import CudaKernel, Inputs, Out
from autopad.kernel_base import sibling_files
from autopad.layouts import Legality

from . import matmul_cost, matmul_space

# besides what this module uses, the names matmul.py defined before the split, importable from here as
# before (tests and benchmarks use some of the private ones)
from .matmul_cost import (  # noqa: F401
    _SWIZZLE_READS,
    REG_CAP_COST,
    REG_CAP_SLACK,
    REGS_PER_SM,
    _regs_estimate,
    flops_efficiency,
    register_cap,
    register_need,
    smem_instructions,
    swizzle_accesses,
)
from .matmul_regs import REGS_SM90, REGS_SWIZZLE_SM90  # noqa: F401
from .matmul_space import (  # noqa: F401
    _KEYS,
    _legal_grid,
    _legal_split,
    _static,
    _static_batch,
    _static_tiles,
)
from .matmul_tile import (  # noqa: F401
    _ARCH,
    OperandTiles,
    _check_tiles,
    _col_period,
    _make_tile,
    _operands,
    _round128,
    _threads,
    _tile,
    k_per_split,
    thread_xy,
)

_SOURCE = Path(__file__).with_name("matmul.cu")


class MatmulCuda(CudaKernel):
    """The spec (autopad.bases.CudaKernel): space, the one validity predicate, layout, pattern, launch."""

    NAME = "matmul"
    DTYPES = ("float32",)
    SHAPE = ("M", "N", "K")
    SOURCE_FILE = str(_SOURCE)
    KERNEL = "matmul_kernel"
    DYNAMIC_SMEM = True
    # the space and its restrictions are matmul_space.py's, with the legality they define
    SPACE: dict[str, tuple[int, ...]] = matmul_space.SPACE
    LAYOUT_KEYS = matmul_space.LAYOUT_KEYS
    # smem_pattern reads only these; candidates that differ in operand layouts alone share one pattern
    PATTERN_KEYS = matmul_space.PATTERN_KEYS
    DEFAULTS: dict[str, int] = matmul_space.DEFAULTS
    RESTRICTIONS = matmul_space.RESTRICTIONS
    FLOPS = "2 * M * N * K"
    TOLERANCE = 1e-5  # ||C - C64|| / ||C64||: fp32 accumulation over K <= 16384 lands near 1e-7 .. 1e-6

    # ---- the tuner's side (numpy only) ------------------------------------------------------------------

    def check_shape(self, shape: tuple[int, ...]) -> None:
        if len(shape) != 3:
            raise ValueError(f"shape: matmul takes (M, N, K), got {tuple(shape)!r}")

    def layout(self, constants: dict[str, int], dtype: str = "float32") -> OperandTiles:
        c = constants
        return _operands(_tile(c["BK"], c["BM"], c, "A"), _tile(c["BK"], c["BN"], c, "B"))

    def smem_bytes(self, constants: dict[str, int], dtype: str = "float32") -> int:
        return self.layout(constants, dtype).footprint

    def textbook(self, shape: tuple[int, ...], dtype: str = "float32") -> dict[str, int] | None:
        """The textbook fix for the transposed A tile: pad each As row by one 16-byte vector (4 floats)."""
        c = dict(self.DEFAULTS, PAD_A=4)
        return c if self.legal(c, shape, dtype) else None

    def legal(self, constants: dict[str, int], shape: tuple[int, ...], dtype: str = "float32") -> Legality:
        """The operand layouts' own checks (16-byte fragments) plus the kernel's thread and register limits,
        and where splitting K pays (``matmul_space.legal``)."""
        return matmul_space.legal(self, constants, shape, dtype)

    def legal_batch(self, columns: dict[str, np.ndarray], shape: tuple[int, ...], dtype: str) -> np.ndarray:
        """``legal`` of many candidates at once, the same answer row for row
        (``matmul_space.legal_batch``)."""
        return matmul_space.legal_batch(self, columns, shape, dtype)

    def launch_info_batch(self, columns: dict[str, np.ndarray], shape: tuple[int, ...], dtype: str) -> dict:
        """``launch_info`` of many candidates at once, as a dict of arrays (``matmul_cost``)."""
        return matmul_cost.launch_info_batch(self, columns, shape, dtype)

    def smem_pattern(self, constants: dict[str, int], dtype: str = "float32") -> tuple[Instruction, ...]:
        """One block's shared-memory instructions for one BK step (lane = threadIdx.x % 32), all warps at
        once: the transposing A stores, the B vector stores, and the fragment loads of every k."""
        c = constants
        tx_n, ty_n, t = _threads(c)
        bk, kv, nv = c["BK"], c["BK"] // 4, c["BN"] // 4
        nw = t // 32
        tid = np.arange(t, dtype=np.int64).reshape(nw, 32)
        tx, ty = thread_xy(c, tid)
        out: list[Instruction] = []

        def emit(name: str, op: str, nbytes: int, rows: np.ndarray, cols: np.ndarray) -> None:
            rows, cols = (x.reshape(-1, 32) for x in np.broadcast_arrays(rows, cols))
            out.extend(
                Instruction(f"{name}{n}", op, nbytes, r, cc) for n, (r, cc) in enumerate(zip(rows, cols))
            )

        # As[k + q][r]: the transposing single-word stores, (warp, load, q) x lane
        idx = tid[:, None, :] + t * np.arange(c["BM"] * kv // t)[None, :, None]
        q = np.arange(4)[None, None, :, None]
        emit("stA ", "store", 4, (idx[:, :, None, :] % kv) * 4 + q, idx[:, :, None, :] // kv)
        # Bs[k][n .. n + 3]: one 16-byte store per vector, (warp, load) x lane
        idx = tid[:, None, :] + t * np.arange(c["BN"] * bk // 4 // t)[None, :, None]
        emit("stB ", "store", 16, bk + idx // nv, (idx % nv) * 4)
        # fragment loads, (warp, k, i) x lane: As[k][ty * 4 + i * TY * 4] and Bs[k][tx * 4 + j * TX * 4]
        k = np.arange(bk)[None, :, None, None]
        i = np.arange(c["TM"] // 4)[None, None, :, None]
        emit("ldA ", "load", 16, k, ty[:, None, None, :] * 4 + i * ty_n * 4)
        j = np.arange(c["TN"] // 4)[None, None, :, None]
        emit("ldB ", "load", 16, bk + k, tx[:, None, None, :] * 4 + j * tx_n * 4)
        return tuple(out)

    def grid(self, constants: dict[str, int], shape: tuple[int, ...], dtype: str = "float32") -> tuple:
        m, n, _ = shape
        return (math.ceil(n / constants["BN"]), math.ceil(m / constants["BM"]), constants.get("SPLIT_K", 1))

    def block(self, constants: dict[str, int], shape: tuple[int, ...] = (), dtype: str = "float32") -> tuple:
        return (_threads(constants)[2],)

    def launch_info(self, constants: dict[str, int], shape: tuple[int, ...], dtype: str = "float32") -> dict:
        """The grid and the predictor's extra terms (``matmul_cost.launch_info``)."""
        return matmul_cost.launch_info(self, constants, shape, dtype)

    def traffic(self, shape: tuple[int, ...], dtype: str = "float32") -> dict:
        m, n, k = shape
        return {"bytes": 4 * (m * k + k * n + m * n), "flops": 2 * m * n * k}

    # ---- the measuring side (torch / CUDA) ---------------------------------------------------------------

    def arguments(self, shape: tuple[int, ...], dtype: str = "float32") -> list:
        import torch

        m, n, k = shape
        return [torch.randn(m, k), torch.randn(k, n), Out((m, n), torch.float32)]

    def inputs_from(self, a: Any, b: Any) -> Inputs:
        """``autopad.ops.matmul(a, b)``: A [M, K] and B [K, N] exactly as given (no copy)."""
        return Inputs([a, b], (a.shape[0], b.shape[1], a.shape[1]))

    def alloc_output(self, inputs: Any, constants: dict[str, int] | None = None) -> Any:
        import torch

        a, b = inputs[0], inputs[1]
        return torch.empty((a.shape[0], b.shape[1]), dtype=torch.float32, device=a.device)

    def expected(self, inputs: Any) -> tuple:
        return (self.reference(inputs[0], inputs[1]),)

    def reference(self, a: Any, b: Any) -> Any:
        """float64 product (the check compares against it with a relative tolerance)."""
        return a.double() @ b.double()

    def defines(self, constants: dict[str, int], dtype: str = "float32") -> dict[str, int]:
        d = {k: int(v) for k, v in constants.items()}
        d.update(self.layout(constants).cuda_defines())
        return d

    def build(self, constants: dict[str, int], dtype: str = "float32") -> Built:
        from autopad import cuda_runtime

        d = self.defines(constants)
        main = cuda_runtime.load_kernel(self.source(), "matmul_kernel", d)
        red = None
        if constants.get("SPLIT_K", 1) > 1:
            red = cuda_runtime.load_kernel(self.source(), "matmul_splitk_reduce", d)
        return Built(main, dict(constants), red)

    def launcher(self, built: Built, shape: tuple[int, ...], dtype: str = "float32") -> Any:
        """Grid, block, shared bytes and the scalar arguments computed once; a call only launches."""
        from autopad import cuda_runtime

        c = built.constants
        m, n, k = shape
        s = c.get("SPLIT_K", 1)
        grid, block = self.grid(c, shape), _threads(c)[2]
        smem = self.layout(c).footprint
        tail = (np.int32(m), np.int32(n), np.int32(k), np.int32(k_per_split(c, k)))
        prep = getattr(cuda_runtime, "prepare_launch", None)
        if prep is not None:  # the ops layer's low-overhead launch, where it exists
            main = prep(built.kernel, grid, block, smem)
            red = prep(built.reduce, (math.ceil(m * n / 1024),), 256, 0) if s > 1 else None
        else:

            def main(args: tuple) -> None:
                cuda_runtime.launch(built.kernel, grid, block, args, smem)

            def red(args: tuple) -> None:
                cuda_runtime.launch(built.reduce, (math.ceil(m * n / 1024),), 256, args, 0)

        mn, nsplit = np.int64(m * n), np.int32(s)

        def go(inputs: Any, out: Any) -> None:
            a, b = inputs[0], inputs[1]
            if s == 1:
                main((out, a, b, *tail))
                return
            import torch

            ws = torch.empty((s, m, n), dtype=torch.float32, device=a.device)
            main((ws, a, b, *tail))
            red((out, ws, mn, nsplit))

        return go

    def run(self, built: Built, inputs: Any, out: Any) -> None:
        """One launch (two with split-K). The launcher for this shape and device is made on the first call
        and kept on ``built``: made per call, its host work (the launch geometry, the shared-memory opt-in)
        ran inside the harness's timed interval whenever it outlasted the GPU's lead."""
        import torch

        a, b = inputs[0].contiguous(), inputs[1].contiguous()
        shape = (a.shape[0], b.shape[1], a.shape[1])
        key = (shape, torch.cuda.current_device())
        go = built.launchers.get(key)
        if go is None:
            go = built.launchers[key] = self.launcher(built, shape)
        go((a, b), out)

    def presets(self, dtype: str = "float32") -> dict[str, dict[str, int]]:
        """Named candidates: unpadded, the textbook 4-float pad on As, and an XOR swizzle of As's 16-byte
        chunks by row (row k's chunk j goes to j ^ k: the 4 k-rows a thread writes and the 2 row groups of
        a warp's thread pairs land 16 words apart, conflict-free with no extra memory); each at BK 8 and
        16; and the swizzled BK 16 tile with the paired thread map."""
        sw = {"SW_VEC_A": 4, "SW_PER_PHASE_A": 1, "SW_MAX_PHASE_A": 8}
        d = self.DEFAULTS
        out = {
            "unpadded": dict(d),
            "textbook": dict(d, PAD_A=4),
            "swizzled": dict(d, **sw),
            "unpadded_bk16": dict(d, BK=16, MIN_BLOCKS=1),
            "padded_bk16": dict(d, BK=16, MIN_BLOCKS=1, PAD_A=4),
            "swizzled_bk16": dict(d, BK=16, MIN_BLOCKS=1, **sw),
            "paired_bk16": dict(d, BK=16, MIN_BLOCKS=1, THREAD_MAP=1, **sw),
        }
        return {name: v for name, v in out.items() if self.legal(v, (4096, 4096, 4096), dtype)}


@dataclass(frozen=True)
class Built:
    """The compiled GEMM (and split-K's reduce), its constants, ``run``'s launchers by shape and device."""

    kernel: Any
    constants: dict
    reduce: Any = None
    launchers: dict = field(default_factory=dict, compare=False, repr=False)


# the module is the spec the registry loads (autopad.kernels_registry.BUILTIN): expose SPEC's names
SPEC = MatmulCuda()
NAME, BACKEND, DTYPES, SPACE, DEFAULTS = SPEC.NAME, SPEC.BACKEND, SPEC.DTYPES, SPEC.SPACE, SPEC.DEFAULTS
LAYOUT_KEYS, PATTERN_KEYS, RESTRICTIONS = SPEC.LAYOUT_KEYS, SPEC.PATTERN_KEYS, SPEC.RESTRICTIONS
legal_batch, launch_info_batch = SPEC.legal_batch, SPEC.launch_info_batch
# what keys the tuning cache (``kernels_registry.source_hash``): the kernel and every module of this spec,
# as matmul.py alone was keyed before the split (each decides what is built, launched or predicted)
SOURCE_FILES = sibling_files(
    __file__,
    "matmul.cu",
    "common.cuh",
    "matmul.py",
    "matmul_tile.py",
    "matmul_space.py",
    "matmul_cost.py",
    "matmul_regs.py",
)
SMEM_BUDGET = _ARCH.smem_per_block
RTOL = SPEC.TOLERANCE
legal, layout, smem_pattern, launch_info, traffic = (
    SPEC.legal,
    SPEC.layout,
    SPEC.smem_pattern,
    SPEC.launch_info,
    SPEC.traffic,
)
textbook, check_shape, inputs_from, launcher, presets = (
    SPEC.textbook,
    SPEC.check_shape,
    SPEC.inputs_from,
    SPEC.launcher,
    SPEC.presets,
)
make_inputs, alloc_output, expected, check = SPEC.make_inputs, SPEC.alloc_output, SPEC.expected, SPEC.check
build, run, defines, cache_source = SPEC.build, SPEC.run, SPEC.defines, SPEC.cache_source


def source() -> str:
    return _SOURCE.read_text()


def reference(inputs: Any) -> Any:
    """The fp64 answer from an inputs tuple (the older module-level form some scripts still call)."""
    return SPEC.expected(inputs)[0]
