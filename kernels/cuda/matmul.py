"""CUDA fp32 SIMT GEMM kernel spec: C = A @ B, row-major, any M, N, K (matmul.cu).

The layout decision is two tiles: As (BK x BM, A staged transposed, written one word at a time down a
column: the access padding or a swizzle must fix) and Bs (BK x BN, written and read in 16-byte vectors).
``layout`` returns both as one ``OperandTiles`` object whose logical rows 0..BK-1 are As and BK..2BK-1
are Bs, so the model scores the whole k-step with one call; ``smem_pattern`` lists the instructions one
block issues per k-step (one "tile" = one BK slice), taken from the same index arithmetic as the kernel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from autopad.access import Instruction
from autopad.layouts import Legality, Padded, Swizzled

NAME = "matmul"
BACKEND = "cuda"
DTYPES = ("float32",)
# smem_pattern reads only these; candidates that differ in operand layouts alone share one pattern
PATTERN_KEYS = ("BM", "BN", "BK", "TM", "TN")
SOURCE_FILES = (str(Path(__file__).with_name("matmul.cu")), str(Path(__file__).with_name("common.cuh")))
SPACE: dict[str, tuple[int, ...]] = {
    "BM": (64, 128),
    "BN": (64, 128),
    "BK": (8, 16),
    "TM": (4, 8),
    "TN": (4, 8),
    "MIN_BLOCKS": (1, 2),
    "PAD_A": (0, 1, 4, 8),
    "SW_VEC_A": (1, 4),
    "SW_PER_PHASE_A": (1, 2, 4),
    "SW_MAX_PHASE_A": (1, 2, 4, 8),
    "PAD_B": (0, 4),
    "SW_VEC_B": (1, 4),
    "SW_PER_PHASE_B": (1, 2, 4),
    "SW_MAX_PHASE_B": (1, 2, 4, 8),
}
LAYOUT_KEYS = tuple(f"{k}_{x}" for x in "AB" for k in ("PAD", "SW_VEC", "SW_PER_PHASE", "SW_MAX_PHASE"))
DEFAULTS: dict[str, int] = {
    "BM": 128,
    "BN": 128,
    "BK": 8,
    "TM": 8,
    "TN": 8,
    "MIN_BLOCKS": 2,
    "PAD_A": 0,
    "SW_VEC_A": 1,
    "SW_PER_PHASE_A": 1,
    "SW_MAX_PHASE_A": 1,
    "PAD_B": 0,
    "SW_VEC_B": 1,
    "SW_PER_PHASE_B": 1,
    "SW_MAX_PHASE_B": 1,
}
SMEM_BUDGET = 227 * 1024
_SOURCE = Path(__file__).with_name("matmul.cu")


def _tile(rows: int, cols: int, c: dict[str, int], x: str) -> Padded | Swizzled:
    if c[f"SW_MAX_PHASE_{x}"] == 1:
        return Padded(rows, cols, 4, pad=c[f"PAD_{x}"])
    return Swizzled(
        rows,
        cols,
        4,
        sw_vec=c[f"SW_VEC_{x}"],
        per_phase=c[f"SW_PER_PHASE_{x}"],
        max_phase=c[f"SW_MAX_PHASE_{x}"],
    )


def _round128(nbytes: int) -> int:
    return -(-nbytes // 128) * 128


@dataclass(frozen=True)
class OperandTiles:
    """As (logical rows 0..BK-1) and Bs (rows BK..2BK-1) of one buffer; Bs starts 128-byte aligned after As.

    Both buffers of the double buffer start on 128-byte boundaries, so they map to the same banks and
    scoring one buffer scores both. ``footprint`` counts both buffers.
    """

    a: Padded | Swizzled
    b: Padded | Swizzled

    @property
    def a_bytes(self) -> int:
        return _round128(self.a.footprint)

    @property
    def footprint(self) -> int:
        return 2 * (self.a_bytes + _round128(self.b.footprint))

    def offsets(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        r = np.asarray(rows, dtype=np.int64)
        c = np.asarray(cols, dtype=np.int64)
        k = self.a.rows
        oa = self.a.offsets(np.where(r < k, r, -1), c)
        ob = self.b.offsets(np.where(r >= k, r - k, -1), c) + self.a_bytes
        return np.where(r < 0, -1, np.where(r < k, oa, ob))

    def check(self, vec: int = 4, budget: int | None = None) -> Legality:
        for t in (self.a, self.b):
            ok = t.check(vec, budget)
            if not ok:
                return ok
        if budget is not None and self.footprint > budget:
            return Legality(False, f"double-buffered tiles need {self.footprint} bytes > {budget}")
        return Legality(True)

    def cuda_defines(self) -> dict[str, int]:
        d = {f"{k}_A": v for k, v in self.a.cuda_defines().items()}
        d.update({f"{k}_B": v for k, v in self.b.cuda_defines().items()})
        return d

    def describe(self) -> str:
        return f"A: {self.a.describe()}, B: {self.b.describe()}"


def layout(constants: dict[str, int], dtype: str = "float32") -> OperandTiles:
    c = constants
    return OperandTiles(_tile(c["BK"], c["BM"], c, "A"), _tile(c["BK"], c["BN"], c, "B"))


def _threads(c: dict[str, int]) -> tuple[int, int, int]:
    tx, ty = c["BN"] // c["TN"], c["BM"] // c["TM"]
    return tx, ty, tx * ty


def legal(constants: dict[str, int], shape: tuple[int, ...], dtype: str = "float32") -> Legality:
    """The operand layouts' own checks (16-byte fragments) plus the kernel's thread and register limits."""
    missing = [k for k in SPACE if k not in constants]
    if missing:
        return Legality(False, f"missing constants {missing}")
    if dtype not in DTYPES:
        return Legality(False, f"dtype {dtype} not supported (fp32 only)")
    c = constants
    for x in ("A", "B"):
        if c[f"SW_MAX_PHASE_{x}"] == 1 and (c[f"SW_VEC_{x}"], c[f"SW_PER_PHASE_{x}"]) != (1, 1):
            return Legality(False, f"no swizzle on {x} is spelt SW_VEC_{x} = SW_PER_PHASE_{x} = 1")
        if c[f"SW_MAX_PHASE_{x}"] > 1 and c[f"PAD_{x}"]:
            return Legality(False, f"padding and swizzle on {x} are exclusive")
    if c["BM"] % c["TM"] or c["BN"] % c["TN"] or c["TM"] % 4 or c["TN"] % 4 or c["BK"] % 4:
        return Legality(False, "thread tile must divide the block tile in 4-wide vectors")
    try:
        lay = layout(c)
    except ValueError as exc:
        return Legality(False, str(exc))
    ok = lay.check(4, SMEM_BUDGET)  # fragments are 16-byte ld.shared; B is stored in 16-byte vectors
    if not ok:
        return ok
    _, _, t = _threads(c)
    if t % 32 or t < 64 or t > 1024:
        return Legality(False, f"{t} threads: need a whole number of warps, 64 to 1024")
    if (c["BM"] * c["BK"] // 4) % t or c["BM"] * c["BK"] // 4 < t:
        return Legality(False, f"A tile's {c['BM'] * c['BK'] // 4} vectors do not divide among {t} threads")
    if (c["BN"] * c["BK"] // 4) % t or c["BN"] * c["BK"] // 4 < t:
        return Legality(False, f"B tile's {c['BN'] * c['BK'] // 4} vectors do not divide among {t} threads")
    if c["TM"] * c["TN"] > 64:
        return Legality(False, "more than 64 accumulators per thread")
    if c["MIN_BLOCKS"] * t * 128 > 65536 and c["TM"] * c["TN"] >= 64:
        return Legality(False, "64 accumulators need 128 registers: at most 65536 / 128 threads per SM")
    if len(shape) != 3 or min(shape) < 1:
        return Legality(False, f"shape must be (M, N, K) >= 1, got {shape}")
    if math.ceil(shape[0] / c["BM"]) > 65535:
        return Legality(False, "M too large for grid.y")
    return Legality(True)


def smem_pattern(constants: dict[str, int], dtype: str = "float32") -> tuple[Instruction, ...]:
    """One block's shared-memory instructions for one BK step (lane = threadIdx.x)."""
    c = constants
    tx_n, ty_n, t = _threads(c)
    bk, kv, nv = c["BK"], c["BK"] // 4, c["BN"] // 4
    out: list[Instruction] = []
    for w in range(t // 32):
        tid = np.arange(w * 32, w * 32 + 32, dtype=np.int64)
        tx, ty = tid % tx_n, tid // tx_n
        for lo in range(c["BM"] * kv // t):
            idx = tid + lo * t
            for q in range(4):  # As[k + q][r]: the transposing single-word stores
                out.append(Instruction(f"stA w{w} l{lo} q{q}", "store", 4, (idx % kv) * 4 + q, idx // kv))
        for lo in range(c["BN"] * bk // 4 // t):
            idx = tid + lo * t
            out.append(Instruction(f"stB w{w} l{lo}", "store", 16, bk + idx // nv, (idx % nv) * 4))
        for k in range(bk):
            for i in range(c["TM"] // 4):
                cols = ty * 4 + i * ty_n * 4
                out.append(Instruction(f"ldA w{w} k{k} i{i}", "load", 16, np.full(32, k), cols))
            for j in range(c["TN"] // 4):
                cols = tx * 4 + j * tx_n * 4
                out.append(Instruction(f"ldB w{w} k{k} j{j}", "load", 16, np.full(32, bk + k), cols))
    return tuple(out)


def launch_info(constants: dict[str, int], shape: tuple[int, ...], dtype: str = "float32") -> dict:
    m, n, k = shape
    return {
        "blocks": math.ceil(m / constants["BM"]) * math.ceil(n / constants["BN"]),
        "threads": _threads(constants)[2],
        "smem_bytes": layout(constants).footprint,
        "tiles_per_block": math.ceil(k / constants["BK"]),
    }


def traffic(shape: tuple[int, ...], dtype: str = "float32") -> dict:
    m, n, k = shape
    return {"bytes": 4 * (m * k + k * n + m * n), "flops": 2 * m * n * k}


def textbook(shape: tuple[int, ...], dtype: str = "float32") -> dict[str, int] | None:
    """The textbook fix for the transposed A tile: pad each As row by one 16-byte vector (4 floats)."""
    c = dict(DEFAULTS, PAD_A=4)
    return c if legal(c, shape, dtype) else None


def make_inputs(
    shape: tuple[int, ...], dtype: str = "float32", device: Any = "cuda", seed: int = 0, dist: str = "uniform"
) -> tuple[Any, ...]:
    import torch

    m, n, k = shape
    g = torch.Generator(device=device).manual_seed(seed)
    a = torch.randn((m, k), generator=g, device=device, dtype=torch.float32)
    b = torch.randn((k, n), generator=g, device=device, dtype=torch.float32)
    return a, b


def alloc_output(inputs: tuple[Any, ...], constants: dict[str, int]) -> Any:
    import torch

    a, b = inputs
    return torch.empty((a.shape[0], b.shape[1]), dtype=torch.float32, device=a.device)


@dataclass(frozen=True)
class Built:
    kernel: Any
    constants: dict


def defines(constants: dict[str, int], dtype: str = "float32") -> dict[str, int]:
    d = {k: constants[k] for k in ("BM", "BN", "BK", "TM", "TN", "MIN_BLOCKS")}
    d.update(layout(constants).cuda_defines())
    return d


def source() -> str:
    return _SOURCE.read_text()


def build(constants: dict[str, int], dtype: str = "float32") -> Built:
    from autopad import cuda_runtime

    return Built(cuda_runtime.load_kernel(source(), "matmul_kernel", defines(constants)), dict(constants))


def run(built: Built, inputs: tuple[Any, ...], out: Any) -> None:
    from autopad import cuda_runtime

    a, b = (t.contiguous() for t in inputs)
    c = built.constants
    m, k = a.shape
    n = b.shape[1]
    grid = (math.ceil(n / c["BN"]), math.ceil(m / c["BM"]), 1)
    i32 = np.int32
    cuda_runtime.launch(
        built.kernel, grid, _threads(c)[2], (out, a, b, i32(m), i32(n), i32(k)), layout(c).footprint
    )


def reference(inputs: tuple[Any, ...]) -> Any:
    """float64 product (the check compares against it with a relative tolerance)."""
    a, b = inputs
    return a.double() @ b.double()


RTOL = 1e-5  # ||C - C64|| / ||C64||: fp32 accumulation over K <= 16384 lands near 1e-7 .. 1e-6


def check(out: Any, ref: Any) -> tuple[bool, str]:
    """Relative Frobenius error against the float64 reference within ``RTOL``; NaN never passes."""
    import torch

    if out.shape != ref.shape:
        return False, f"shape {tuple(out.shape)} != {tuple(ref.shape)}"
    o, r = out.double(), ref.double()
    if not torch.isfinite(o).all():
        return False, "non-finite values (unwritten output?)"
    err = (torch.linalg.norm(o - r) / torch.linalg.norm(r).clamp_min(1e-30)).item()
    return err <= RTOL, f"relative error {err:.2e} (tolerance {RTOL:.0e})"


def presets(dtype: str = "float32") -> dict[str, dict[str, int]]:
    """Named candidates: unpadded, the textbook 4-float pad on As, and an XOR swizzle of As's 16-byte chunks
    by row (row k's chunk j goes to j ^ k: the 4 k-rows a thread writes and the 2 row groups of a warp's
    thread pairs land 16 words apart, conflict-free with no extra memory); each at BK 8 and 16."""
    sw = {"SW_VEC_A": 4, "SW_PER_PHASE_A": 1, "SW_MAX_PHASE_A": 8}
    out = {
        "unpadded": dict(DEFAULTS),
        "textbook": dict(DEFAULTS, PAD_A=4),
        "swizzled": dict(DEFAULTS, **sw),
        "unpadded_bk16": dict(DEFAULTS, BK=16, MIN_BLOCKS=1),
        "padded_bk16": dict(DEFAULTS, BK=16, MIN_BLOCKS=1, PAD_A=4),
        "swizzled_bk16": dict(DEFAULTS, BK=16, MIN_BLOCKS=1, **sw),
    }
    return {k: v for k, v in out.items() if legal(v, (4096, 4096, 4096), dtype)}
