"""How the CUDA transpose's compiled kernels are built for occupancy and launched: the compiled kernels
(``Built``), the occupancy the vector path is built for (``min_blocks``: ``__launch_bounds__``'s min
blocks, from the measured register overhead), and the launch a timed run calls.

A candidate on the vector path (SCALAR_EDGE 0, VEC > 1) has two builds: ``kernel`` for rows and pointers
on the vector grid, ``shifted`` (MISALIGNED 1: funnel-shifted rows, halo rows in shared memory) for any
other; the launch picks one per call from the pointers' alignment. The original scalar path has one build
and takes a trailing ``aligned`` flag instead. Grid, shared bytes and scalar arguments are fixed once per
launcher (``cuda_runtime.prepare_launch`` where it exists).

Why a module of its own: this is the measuring side's launch (the CUDA runtime, imported only inside the
functions) and the register arithmetic of the build, apart from the model's view (transpose_pattern.py,
transpose_cost.py). ``_REG_OVERHEAD`` is read here alone (benchmarks/fit_register_overhead.py sets it in
place).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from autopad.kernels.transpose_io import input_tensor as _x

from .transpose_tile import _ARCH, _dims, _halo, _hpass, _phases, _scalar

if TYPE_CHECKING:
    from .transpose import TransposeCuda

__all__ = ["Built", "launcher", "min_blocks", "register_need", "run"]

# registers a thread needs besides the loaded vectors (addresses, indices, the read-out): ptxas -v over the
# vector path's space at sm_90, built at the model's occupancy and lowered until no spill; the largest
# overhead seen, rounded up (see tests/test_cuda_transpose.py)
_REG_OVERHEAD = {0: 16, 1: 4}  # registers besides the loads: aligned build, misaligned build
# registers a load pass holds besides its words: the misaligned build's row pointer, segment end, shift and
# predicates (the next lane's vector is a shuffle result used at once, not held across passes); fitted with
# ptxas on all 289 misaligned geometries (benchmarks/results/cpu/register_overhead.md): none spills
_REG_PER_PASS = {0: 0, 1: 5}


@dataclass(frozen=True)
class Built:
    """Compiled kernels: ``kernel`` (aligned rows), ``shifted`` (vector path, VEC > 1: any alignment)."""

    kernel: Any
    constants: dict
    dtype: str
    shifted: Any = None


def min_blocks(spec: TransposeCuda, constants: dict[str, int], dtype: str, misaligned: bool = False) -> int:
    """The occupancy the vector path (SCALAR_EDGE 0) is built for (``__launch_bounds__`` min blocks):
    what threads and shared memory allow, lowered only where the loaded vectors plus the measured register
    overhead would not fit (then registers allow fewer blocks, not spills). The model states the same
    estimate (``transpose_cost``: the aligned build's everywhere, the shifted build's where a block is alone
    on its SM), so it counts the blocks the build holds."""
    c, e = constants, spec._e(dtype)
    fit = min(
        _ARCH.max_threads_per_sm // c["THREADS"],
        _ARCH.smem_per_sm // (spec.smem_bytes(c, dtype, misaligned) + 1024),
        _ARCH.max_blocks_per_sm,
    )
    _, ly, lpass = _phases(c)[:3]
    hpass = _hpass(c["VEC"], ly, c.get("READOUT", 0), e) if _halo(c, misaligned, e) else 0
    need = int(register_need(c["VEC"], e, lpass + hpass, c.get("READOUT", 0), misaligned))
    return int(max(1, min(fit, 65536 // (c["THREADS"] * need))))


def register_need(vec: Any, e: int, passes: Any, readout: Any, misaligned: Any) -> Any:
    """Registers a vector-path thread needs (scalars or arrays), rounded up to the allocation step of 8: its
    ``passes`` load passes' words, and in the misaligned build each pass's addresses and shift, plus the
    overhead and, for READOUT 1, the VEC words it permutes. The estimate ``min_blocks`` builds for; within a
    few registers of NVRTC 13.0's counts (93 against 96 for fp16 64 x 128 READOUT 1, 80 against 72 for
    int8 256 x 128 at 512 threads, both misaligned builds; nvcc 13.0 builds the latter at 96)."""
    mis = np.asarray(misaligned, dtype=bool)
    words = passes * np.maximum(1, np.asarray(vec) * e // 4)  # the loaded vectors, in 4-byte registers
    need = words + passes * np.where(mis, _REG_PER_PASS[1], _REG_PER_PASS[0])
    need = need + np.where(mis, _REG_OVERHEAD[1], _REG_OVERHEAD[0])
    need = need + np.where(np.asarray(readout) == 1, vec, 0)
    return np.minimum(255, -(-need // 8) * 8)


def plan(spec: TransposeCuda, built: Built, shape: tuple[int, ...]) -> tuple[tuple, tuple, int]:
    """(grid, the int32 arguments after the two pointers, vector bytes); a picked kernel's shared bytes
    are ``smem_for``'s (the misaligned build holds halo rows too)."""
    c = built.constants
    b, m, n = _dims(tuple(shape))
    i32 = np.int32
    if not _scalar(c):
        extra = (i32(m), i32(n), i32(b), i32(c.get("GROUP", 1)))
    else:
        extra = (i32(m), i32(n), i32(b))
    return spec.grid(c, shape), extra, c["VEC"] * spec._e(built.dtype)


def smem_for(spec: TransposeCuda, built: Built, kernel: Any) -> int:
    """Dynamic shared bytes for this build of the candidate (the misaligned one holds the halo)."""
    return spec.smem_bytes(built.constants, built.dtype, kernel is built.shifted)


def pick(built: Built, x: Any, out: Any, m: int, n: int, vb: int) -> tuple[Any, tuple]:
    """The kernel for these pointers, and the scalar path's trailing ``aligned`` flag."""
    ok = m % built.constants["VEC"] == 0 and n % built.constants["VEC"] == 0
    ok = ok and x.data_ptr() % vb == 0 and out.data_ptr() % vb == 0
    if _scalar(built.constants):
        return built.kernel, (np.int32(ok),)
    return (built.kernel if ok or built.shifted is None else built.shifted), ()


def run(spec: TransposeCuda, built: Built, inputs: Any, out: Any) -> None:
    """Launch the build the pointers' alignment picks on ``inputs`` (the tensor or its tuple) into ``out``."""
    from autopad import cuda_runtime

    x = _x(inputs)
    x = x if x.is_contiguous() else x.contiguous()
    b, m, n = _dims(tuple(x.shape))
    grid, extra, vb = spec._plan(built, (b, m, n))
    kernel, flag = spec._pick(built, x, out, m, n, vb)
    smem = spec._smem_for(built, kernel)
    cuda_runtime.launch(kernel, grid, built.constants["THREADS"], (out, x, *extra, *flag), smem)


def launcher(spec: TransposeCuda, built: Built, shape: tuple[int, ...], dtype: str) -> Any:
    """A call that only picks the build for the pointers' alignment and launches: grid, shared memory
    and the scalar arguments are fixed here (``cuda_runtime.prepare_launch`` where it exists)."""
    from autopad import cuda_runtime

    b, m, n = _dims(tuple(shape))
    grid, extra, vb = spec._plan(built, (b, m, n))
    threads = built.constants["THREADS"]
    prepare = getattr(cuda_runtime, "prepare_launch", None)

    def fire_for(kernel: Any) -> Any:
        nbytes = spec._smem_for(built, kernel)
        if prepare is not None:
            return prepare(kernel, grid, threads, nbytes)
        return lambda *args: cuda_runtime.launch(kernel, grid, threads, args, nbytes)

    fires = {id(k): fire_for(k) for k in (built.kernel, built.shifted) if k is not None}

    def go(inputs: Any, out: Any) -> None:
        x = inputs[-1]
        kernel, flag = spec._pick(built, x, out, m, n, vb)
        fires[id(kernel)](out, x, *extra, *flag)

    return go
