"""The GEMM spec's measuring side: which compiled kernel a candidate builds, and the launcher a timed run
calls (the Gluon kernels through TMA tensor descriptors over the user's own tensors, the split-K reduce,
the plain ``tl.dot`` kernel), with the device facts it reads; and the plain-Triton baseline ``run_tl``.

The kernels are bound here, by module name (``matmul_gluon``, ``matmul_gluon_persistent``,
``matmul_gluon_ws``, ``matmul_gluon_pingpong``, ``matmul_tl``, ``splitk_reduce``): ``build`` and the
launchers look them up in this module, so a test substitutes recorders here.

Why a module of its own: this is the half of the spec that needs torch and Triton (imported inside the
functions), apart from the numpy-only model (matmul_model.py); the kernels themselves are in
matmul_kernels.py.
"""

from __future__ import annotations

from typing import Any

from autopad.kernels.triton import matmul_kernels as _k

from autopad.triton_launch import FastLaunch

from .matmul_tiles import _ARCH, _cdiv, b_kn, c_bufs, ws_maxnreg

__all__ = ["build", "launcher", "run_tl"]

HAS_TRITON = _k.HAS_TRITON
nvmma = _k.nvmma
if HAS_TRITON:  # module names: build() and the launchers look them up here (tests substitute recorders)
    matmul_gluon, matmul_gluon_persistent = _k.matmul_gluon, _k.matmul_gluon_persistent
    matmul_gluon_ws, matmul_gluon_pingpong = _k.matmul_gluon_ws, _k.matmul_gluon_pingpong
    matmul_tl, splitk_reduce = _k.matmul_tl, _k.splitk_reduce


_REDUCE_BLOCK = 1024


def build(constants: dict[str, int], dtype: str) -> dict[str, Any]:
    c = dict(constants)
    built = {"constants": c, "dtype": dtype}
    if c.get("PATH", 0):
        return {**built, "kernel": matmul_tl}
    kernels = {0: matmul_gluon, 1: matmul_gluon_persistent, 2: matmul_gluon_ws, 3: matmul_gluon_pingpong}
    return {
        **built,
        "kernel": kernels[c.get("PERSIST", 0)],
        "layout": nvmma(c["SWIZZLE"], dtype),
        "c_layout": nvmma(c["SWIZZLE"], "tf32" if c.get("SPLIT_K", 1) > 1 else dtype),
    }


def launcher(built: dict[str, Any], shape: tuple[int, ...], dtype: str, kn: bool | None = None) -> Any:
    """Everything shape-dependent done once (grid, block shapes, layouts, the workspace's shape, the
    kernels' fixed arguments); a call passes the tensors. The first call goes through Triton's JIT with
    Gluon's ``TensorDescriptor``; later calls through the compiled kernel's own launcher
    (``autopad.triton_launch.FastLaunch``, given the tensors: it keeps their TMA tensor maps per
    address), unless a pointer, the device or a launch hook sends them to the JIT again. ``kn``
    overrides B's form (False: a 16-bit B given as [N, K], to compare with the [K, N] path)."""
    import torch

    c = built["constants"]
    m, n, k = shape
    bm, bn, bk, s = c["BM"], c["BN"], c["BK"], c.get("SPLIT_K", 1)
    kn = b_kn(dtype) if kn is None else kn
    tiles = _cdiv(m, bm) * _cdiv(n, bn)
    kernel = built["kernel"]
    if c.get("PATH", 0):
        args = (m, n, k, bm, bn, bk, c["GROUP_M"], dtype == "tf32", kn)
        fl_tl = FastLaunch(kernel, (tiles,), args, {"num_warps": c["WARPS"], "num_stages": c["STAGES"]})

        def go_tl(inputs: Any, out: Any) -> None:
            a, b = inputs[0], inputs[1]
            if not fl_tl.launch(a, b, out):
                fl_tl.first(a, b, out)

        go_tl.fast = fl_tl  # type: ignore[attr-defined]
        return go_tl

    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    lay, c_lay = built["layout"], built["c_layout"]
    a_block, b_block, c_block = [bm, bk], ([bk, bn] if kn else [bn, bk]), [bm, bn]
    ws_rows = s * _cdiv(m, bm) * bm
    opts: dict[str, Any] = {"num_warps": c["WARPS"]}
    if c.get("PERSIST", 0):
        grid: tuple[int, ...] = (min(tiles, _sm_count()),)
        extra: tuple = (c["STAGES"], c["GROUP_M"], kn)
        if c["PERSIST"] == 2:
            extra += (c_bufs(c, dtype),)
        if c["PERSIST"] >= 2:
            opts["maxnreg"] = ws_maxnreg(c)
    else:
        grid = (tiles * s,)
        extra = (c["STAGES"], c["GROUP_M"], s, kn)
    fl = FastLaunch(kernel, grid, (m, n, k, *extra), opts)
    red = FastLaunch(
        splitk_reduce,
        (_cdiv(m * n, _REDUCE_BLOCK),),
        (m * n, ws_rows // s * n, s, _REDUCE_BLOCK),
        {"num_warps": 4},
    )
    td, f32 = TensorDescriptor.from_tensor, torch.float32

    def go(inputs: Any, out: Any) -> None:
        a, b = inputs[0], inputs[1]
        if (a.data_ptr() | b.data_ptr()) & 15:  # TMA reads from 16-byte-aligned addresses only: a view
            a, b = _aligned(a), _aligned(b)  # at an odd offset is copied to a fresh (aligned) block
        cc = out if s == 1 else torch.empty((ws_rows, n), dtype=f32, device=a.device)
        if not fl.launch(a, b, cc):
            fl.first(td(a, a_block, lay), td(b, b_block, lay), td(cc, c_block, c_lay))
        if s > 1 and not red.launch(cc, out):
            red.first(cc, out)

    go.fast = fl  # type: ignore[attr-defined]
    return go


def _aligned(t: Any) -> Any:
    """``t`` if its address is a multiple of 16 bytes, else a copy in a fresh block (which is)."""
    return t if t.data_ptr() % 16 == 0 else t.clone()


def b_kn_tensor(a: Any) -> bool:
    """B's form from A's dtype (the reference sees tensors, not the dtype name): [K, N] unless fp32."""
    import torch

    return a.dtype != torch.float32


_SMS: dict[int, int] = {}


def _sm_count() -> int:
    """SMs of the current GPU (the persistent grid); the sm_90 profile's count where there is none."""
    import torch

    if not torch.cuda.is_available():
        return _ARCH.sm_count
    dev = torch.cuda.current_device()
    if dev not in _SMS:
        _SMS[dev] = torch.cuda.get_device_properties(dev).multi_processor_count
    return _SMS[dev]


def run_tl(
    inputs: Any,
    out: Any,
    bm: int = 128,
    bn: int = 256,
    bk: int = 64,
    stages: int = 3,
    warps: int = 8,
) -> None:
    """The plain-Triton baseline (``tl.dot``; Triton pipelines and lays out shared memory itself), on the
    spec's inputs (B [K, N] for 16-bit, [N, K] for fp32)."""
    import torch

    a, b = inputs[0], inputs[1]
    m, k = a.shape
    kn = a.dtype != torch.float32
    n = b.shape[1] if kn else b.shape[0]
    grid = (_cdiv(m, bm) * _cdiv(n, bn),)
    matmul_tl[grid](a, b, out, m, n, k, bm, bn, bk, 8, not kn, kn, num_warps=warps, num_stages=stages)
