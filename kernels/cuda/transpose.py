"""CUDA transpose kernel spec: in [B, M, N] (or [M, N]) -> out [B, N, M], any element type of 1 to 8 bytes.

The kernel (transpose.cu) stages a TILE_M x TILE_N tile through shared memory: vectorised row-wise loads
from global memory, one VEC-wide st.shared per vector, then a column walk of single-element ld.shared
gathered into a vector for a wide global store. This module is the spec the tuner sees (autopad/spec.py):
the constants, the one validity predicate ``legal``, the layout, and ``smem_pattern``: the exact list of
shared-memory instructions one block issues for one tile, derived from the same constants as the
kernel's index arithmetic, so that the model scores what the kernel does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from autopad.access import Instruction
from autopad.layouts import Legality, Padded, Swizzled
from autopad.spec import DTYPE_BYTES

NAME = "transpose"
BACKEND = "cuda"
DTYPES = ("float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "int8", "uint8")
SPACE: dict[str, tuple[int, ...]] = {
    "TILE_M": (32, 64, 128),
    "TILE_N": (32, 64, 128),
    "THREADS": (128, 256, 512),
    "VEC": (1, 2, 4, 8, 16),
    "PAD": (0, 1, 2, 4, 8, 16),
    "SW_VEC": (1, 2, 4, 8, 16),
    "SW_PER_PHASE": (1, 2, 4, 8, 16),
    "SW_MAX_PHASE": (1, 2, 4, 8, 16, 32),
    "READOUT": (0, 1),
}
LAYOUT_KEYS = ("PAD", "SW_VEC", "SW_PER_PHASE", "SW_MAX_PHASE")  # the rest is the launch configuration
# cheap necessary conditions of ``legal``, evaluated over the whole space at once (E = element bytes);
# ``legal`` still decides every survivor
RESTRICTIONS = (
    "SW_MAX_PHASE > 1 or (SW_VEC == 1 and SW_PER_PHASE == 1)",
    "SW_MAX_PHASE == 1 or (PAD == 0 and VEC <= SW_VEC and SW_VEC * SW_MAX_PHASE <= TILE_N)",
    "VEC * E <= 16 and PAD % VEC == 0 and TILE_M % VEC == 0 and TILE_N % VEC == 0",
    "THREADS % (TILE_N // VEC) == 0 and THREADS % (TILE_M // VEC) == 0",
    "READOUT == 0 or (E <= 2 and VEC * E == 16)",
)
DEFAULTS: dict[str, int] = {
    "TILE_M": 32,
    "TILE_N": 32,
    "THREADS": 256,
    "VEC": 1,
    "PAD": 0,
    "SW_VEC": 1,
    "SW_PER_PHASE": 1,
    "SW_MAX_PHASE": 1,
    "READOUT": 0,
}
# smem_pattern depends on these alone: candidates that differ only in PAD / SW_* share one pattern
PATTERN_KEYS = ("TILE_M", "TILE_N", "THREADS", "VEC", "READOUT")
SOURCE_FILES = (str(Path(__file__).with_name("transpose.cu")), str(Path(__file__).with_name("common.cuh")))
SMEM_BUDGET = 227 * 1024
MAX_VEC_REGS = 64  # 4-byte registers the load phase may hold per thread (LPASS x VEC x elem / 4)
_SOURCE = Path(__file__).with_name("transpose.cu")


def _elem(dtype: str) -> int:
    if dtype not in DTYPES:
        raise ValueError(f"transpose: dtype {dtype!r} is not one of {DTYPES}")
    return DTYPE_BYTES[dtype]


def _dims(shape: tuple[int, ...]) -> tuple[int, int, int]:
    if len(shape) == 2:
        return 1, int(shape[0]), int(shape[1])
    if len(shape) == 3:
        return int(shape[0]), int(shape[1]), int(shape[2])
    raise ValueError(f"transpose: shape must be [M, N] or [B, M, N], got {shape!r}")


def layout(constants: dict[str, int], dtype: str) -> Padded | Swizzled:
    """The shared tile: Padded when SW_MAX_PHASE == 1, else Swizzled (same formula, see layouts.py)."""
    c, e = constants, _elem(dtype)
    if c["SW_MAX_PHASE"] == 1:
        return Padded(c["TILE_M"], c["TILE_N"], e, pad=c["PAD"])
    return Swizzled(
        c["TILE_M"],
        c["TILE_N"],
        e,
        sw_vec=c["SW_VEC"],
        per_phase=c["SW_PER_PHASE"],
        max_phase=c["SW_MAX_PHASE"],
    )


def _phases(c: dict[str, int]) -> tuple[int, int, int, int, int, int]:
    lx = c["TILE_N"] // c["VEC"]
    ly = c["THREADS"] // lx
    sx = c["TILE_M"] // c["VEC"]
    sy = c["THREADS"] // sx
    return lx, ly, c["TILE_M"] // ly, sx, sy, c["TILE_N"] // sy


def legal(constants: dict[str, int], shape: tuple[int, ...], dtype: str) -> Legality:
    """Can this candidate run? The layout's own check, then the kernel's thread and register arithmetic."""
    missing = [k for k in SPACE if k not in constants]
    if missing:
        return Legality(False, f"missing constants {missing}")
    if dtype not in DTYPES:
        return Legality(False, f"dtype {dtype} not supported")
    c, e = constants, DTYPE_BYTES[dtype]
    if c["SW_MAX_PHASE"] == 1 and (c["SW_VEC"], c["SW_PER_PHASE"]) != (1, 1):
        return Legality(False, "no swizzle (SW_MAX_PHASE = 1) is spelt SW_VEC = SW_PER_PHASE = 1")
    if c["SW_MAX_PHASE"] > 1 and c["PAD"]:
        return Legality(False, "padding and swizzle are exclusive")
    try:
        lay = layout(c, dtype)
    except ValueError as exc:
        return Legality(False, str(exc))
    ok = lay.check(c["VEC"], SMEM_BUDGET)
    if not ok:
        return ok
    if c["TILE_M"] % c["VEC"]:
        return Legality(False, f"TILE_M {c['TILE_M']} is not a whole number of {c['VEC']}-element vectors")
    t = c["THREADS"]
    if t % 32 or t > 1024:
        return Legality(False, f"{t} threads is not a whole number of warps up to 1024")
    lx, ly, lpass, sx, sy, spass = _phases(c)
    if t % lx or ly == 0 or c["TILE_M"] % ly:
        return Legality(False, f"{t} threads cannot sweep {c['TILE_M']} rows in rows of {lx} vectors")
    if t % sx or sy == 0 or c["TILE_N"] % sy:
        return Legality(False, f"{t} threads cannot sweep {c['TILE_N']} columns in groups of {sx} vectors")
    if c["READOUT"] not in (0, 1):
        return Legality(False, f"READOUT {c['READOUT']} is not 0 (element gather) or 1 (register transpose)")
    if c["READOUT"] == 1:
        if e > 2 or c["VEC"] * e != 16:
            return Legality(False, "the register read-out needs 1- or 2-byte elements in 16-byte vectors")
        if c["TILE_N"] % (sy * (4 // e)):
            return Legality(False, f"{c['TILE_N']} columns: not whole {sy * 4 // e}-row passes")
    if lpass * c["VEC"] * e > 4 * MAX_VEC_REGS:
        return Legality(False, f"{lpass} passes of {c['VEC'] * e} bytes exceed {MAX_VEC_REGS} registers")
    b, m, n = _dims(shape)
    if min(b, m, n) < 1:
        return Legality(False, f"empty shape {shape}")
    if math.ceil(m / c["TILE_M"]) > 65535:
        return Legality(False, f"{m} rows need more than 65535 tiles of {c['TILE_M']} in grid.y")
    if b * m * n >= 2**62 // e:
        return Legality(False, "tensor too large")
    return Legality(True)


def smem_pattern(constants: dict[str, int], dtype: str) -> tuple[Instruction, ...]:
    """Every shared-memory instruction of one block over one tile, lane = threadIdx.x (block is 1-D).

    Store phase: warp w, pass p: lane writes VEC elements at (ly + p*LY, lx*VEC) in one VEC*elem store.
    Read phase: warp w, pass p, element v: lane reads (sx*VEC + v, sy + p*SY), elem bytes.
    """
    c, e = constants, _elem(dtype)
    lx, ly, lpass, sx, sy, spass = _phases(c)
    vec = c["VEC"]
    out: list[Instruction] = []
    for w in range(c["THREADS"] // 32):
        tid = np.arange(w * 32, w * 32 + 32, dtype=np.int64)
        for p in range(lpass):
            out.append(Instruction(f"st w{w} p{p}", "store", vec * e, tid // lx + p * ly, (tid % lx) * vec))
        if c["READOUT"] == 1:  # VEC 4-byte loads per pass: rows sx*VEC + v, columns G*(sy + p*SY) ..
            g = 4 // e
            for p in range(c["TILE_N"] // (sy * g)):
                for v in range(vec):
                    rows, cols = (tid % sx) * vec + v, (tid // sx + p * sy) * g
                    out.append(Instruction(f"ld4 w{w} p{p} v{v}", "load", 4, rows, cols))
            continue
        for p in range(spass):
            for v in range(vec):
                rows, cols = (tid % sx) * vec + v, tid // sx + p * sy
                out.append(Instruction(f"ld w{w} p{p} v{v}", "load", e, rows, cols))
    return tuple(out)


def _grid(constants: dict[str, int], shape: tuple[int, ...]) -> tuple[int, int, int]:
    b, m, n = _dims(shape)
    return math.ceil(n / constants["TILE_N"]), math.ceil(m / constants["TILE_M"]), min(b, 65535)


def launch_info(constants: dict[str, int], shape: tuple[int, ...], dtype: str) -> dict:
    gx, gy, gz = _grid(constants, shape)
    b = _dims(shape)[0]
    lpass = _phases(constants)[2]
    return {
        "blocks": gx * gy * gz,
        "threads": constants["THREADS"],
        "smem_bytes": layout(constants, dtype).footprint,
        "tiles_per_block": math.ceil(b / gz),
        # the load loop issues all its passes before the first use: bytes each thread has in flight
        "inflight_bytes": lpass * constants["VEC"] * _elem(dtype),
        "dram_efficiency": _scalar_path_efficiency(constants, shape),
    }


# Rows that are not a whole number of VEC-element vectors (4097 x 8191) send every tile down the guarded
# scalar path: VEC bounds-checked loads per vector, lanes VEC elements apart. The exhaustive study on the
# H200 (benchmarks/results/h200/quality, 4097 x 8191 fp32 and fp16) measured the best tile of each width at
# 1.00 / 1.10 / 1.35 / 2.25 x the VEC = 1 time for VEC = 1 / 2 / 4 / 8 (fp16), 1.0 / 1.0 / 1.27 (fp32):
# about 12% of streaming rate lost per extra element of the vector.
SCALAR_PATH_COST = 0.12


def _scalar_path_efficiency(constants: dict[str, int], shape: tuple[int, ...]) -> float:
    _, m, n = _dims(shape)
    v = constants["VEC"]
    return 1.0 if (m % v == 0 and n % v == 0) else 1.0 / (1.0 + SCALAR_PATH_COST * (v - 1))


def traffic(shape: tuple[int, ...], dtype: str) -> dict:
    b, m, n = _dims(shape)
    return {"bytes": 2 * b * m * n * _elem(dtype), "flops": 0}


def textbook(shape: tuple[int, ...], dtype: str) -> dict[str, int] | None:
    """The classic 32 x 33 tile: DEFAULTS with one element of padding per row."""
    c = dict(DEFAULTS, PAD=1)
    return c if legal(c, shape, dtype) else None


def make_inputs(
    shape: tuple[int, ...], dtype: str, device: Any = "cuda", seed: int = 0, dist: str = "uniform"
) -> tuple[Any, ...]:
    import torch

    g = torch.Generator(device=device).manual_seed(seed)
    td = getattr(torch, dtype)
    if dtype in ("int8", "uint8"):
        lo, hi = (-128, 128) if dtype == "int8" else (0, 256)
        x = torch.randint(lo, hi, shape, generator=g, device=device, dtype=torch.int16).to(td)
    else:
        x = torch.randn(shape, generator=g, device=device, dtype=torch.float32)
        x = x.clamp(-400, 400).to(td)
    return (x,)


def alloc_output(inputs: tuple[Any, ...], constants: dict[str, int]) -> Any:
    import torch

    x = inputs[0]
    return torch.empty((*x.shape[:-2], x.shape[-1], x.shape[-2]), dtype=x.dtype, device=x.device)


@dataclass(frozen=True)
class Built:
    kernel: Any
    constants: dict
    dtype: str


def defines(constants: dict[str, int], dtype: str) -> dict[str, int]:
    """Every -D the template takes: the layout's own macros plus the tile and thread constants."""
    d = {k: constants[k] for k in ("TILE_M", "TILE_N", "THREADS", "VEC", "READOUT")}
    d.update(layout(constants, dtype).cuda_defines())
    d["ELEM_BYTES"] = _elem(dtype)
    return d


def source() -> str:
    return _SOURCE.read_text()


def build(constants: dict[str, int], dtype: str) -> Built:
    from autopad import cuda_runtime

    k = cuda_runtime.load_kernel(source(), "transpose_kernel", defines(constants, dtype))
    return Built(k, dict(constants), dtype)


def run(built: Built, inputs: tuple[Any, ...], out: Any) -> None:
    from autopad import cuda_runtime

    x = inputs[0].contiguous()
    b, m, n = _dims(tuple(x.shape))
    vb = built.constants["VEC"] * _elem(built.dtype)
    aligned = int(
        n % built.constants["VEC"] == 0
        and m % built.constants["VEC"] == 0
        and x.data_ptr() % vb == 0
        and out.data_ptr() % vb == 0
    )
    smem = layout(built.constants, built.dtype).footprint
    i32 = np.int32
    cuda_runtime.launch(
        built.kernel,
        _grid(built.constants, (b, m, n)),
        built.constants["THREADS"],
        (out, x, i32(m), i32(n), i32(b), i32(aligned)),
        smem,
    )


def reference(inputs: tuple[Any, ...]) -> Any:
    return inputs[0].transpose(-1, -2).contiguous()


def check(out: Any, ref: Any) -> tuple[bool, str]:
    """Exact: a transpose moves bits, so compare them bit for bit."""
    import torch

    if out.shape != ref.shape:
        return False, f"shape {tuple(out.shape)} != {tuple(ref.shape)}"
    # flatten first: a contiguous [N, 1] tensor may keep a stride != 1 on its size-1 dim, which view rejects
    bad = (
        (out.contiguous().flatten().view(torch.uint8) != ref.contiguous().flatten().view(torch.uint8))
        .sum()
        .item()
    )
    return (bad == 0), ("exact" if bad == 0 else f"{bad} bytes differ")


# tile shapes whose swizzled read-out the model scores best at 256 threads (searched over 32/64/128 tiles,
# per_phase 1..16, max_phase 2..32 with 16-byte vectors; see tests/test_cuda_transpose.py)
_BEST_TILE = {8: (64, 128), 4: (32, 128), 2: (64, 128), 1: (128, 128)}


def presets(dtype: str) -> dict[str, dict[str, int]]:
    """Named candidates: the baselines and 16-byte-vector tiles, swizzled and not (for the tuner's shortlist
    and the benchmark). The swizzle permutes VEC-element chunks by the row's VEC-row group: the column walk's
    lanes (rows sx*VEC + v) then land in distinct chunks, so in distinct banks."""
    e = _elem(dtype)
    vec = 16 // e
    tm, tn = _BEST_TILE[e]
    sw = {"SW_VEC": vec, "SW_PER_PHASE": vec, "SW_MAX_PHASE": 8}
    base = dict(DEFAULTS, THREADS=256, VEC=vec)
    out = {
        "unpadded": dict(DEFAULTS),
        "textbook": dict(DEFAULTS, PAD=1),
        "vec_unpadded": dict(base, TILE_M=tm, TILE_N=tn),
        "vec_swizzled": dict(base, TILE_M=tm, TILE_N=tn, **sw),
        "vec64_unpadded": dict(base, TILE_M=64, TILE_N=64),
        "vec64_swizzled": dict(base, TILE_M=64, TILE_N=64, **sw),
        "vec64_padded": dict(base, TILE_M=64, TILE_N=64, PAD=vec),
    }
    if e <= 2:  # word loads + register transpose of the read-out
        out["rt_unpadded"] = dict(base, TILE_M=tm, TILE_N=tn, READOUT=1)
        out["rt_swizzled"] = dict(base, TILE_M=tm, TILE_N=tn, READOUT=1, **sw)
    return {k: v for k, v in out.items() if legal(v, (4096, 4096), dtype)}
