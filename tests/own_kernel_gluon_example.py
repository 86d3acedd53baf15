# README's Gluon example, verbatim (tests/test_readme.py checks README carries this text).
import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import autopad
from autopad.gluon_model import Blocked


@gluon.jit
def transpose(x, y, M, N, BM: gl.constexpr, BN: gl.constexpr, IN: gl.constexpr, OUT: gl.constexpr,
              SMEM: gl.constexpr):  # fmt: skip
    rm = gl.program_id(0) * BM + gl.arange(0, BM, layout=gl.SliceLayout(1, IN))
    rn = gl.program_id(1) * BN + gl.arange(0, BN, layout=gl.SliceLayout(0, IN))
    tile = gl.load(x + rm[:, None] * N + rn[None, :], mask=(rm < M)[:, None] & (rn < N)[None, :])
    t = gl.allocate_shared_memory(tile.dtype, [BM, BN], SMEM, tile).load(OUT)  # store rows, read columns
    om = gl.program_id(0) * BM + gl.arange(0, BM, layout=gl.SliceLayout(1, OUT))
    on = gl.program_id(1) * BN + gl.arange(0, BN, layout=gl.SliceLayout(0, OUT))
    gl.store(y + on[None, :] * M + om[:, None], t, mask=(om < M)[:, None] & (on < N)[None, :])


class GluonTranspose(autopad.TritonKernel):
    KERNEL = transpose
    SPACE = {"BM": (32, 64, 128), "BN": (32, 64), "WARPS": (4, 8), "PAD": (0, 4, 8)}
    SHAPE, GRID, NUM_WARPS = ("M", "N"), ("cdiv(M, BM)", "cdiv(N, BN)"), "WARPS"
    LAYOUT, LAYOUT_ARG = autopad.tile("BM", "BN", pad="PAD", vec=4), "SMEM"
    REGISTER_LAYOUTS = {"IN": Blocked((1, 4), (4, 8), ("WARPS", 1), (1, 0)),
                        "OUT": Blocked((4, 1), (8, 4), (1, "WARPS"), (0, 1))}  # fmt: skip
    SMEM_ACCESSES = (("store", "IN"), ("load", "OUT"))  # the lanes' addresses come from these layouts

    def arguments(self, shape, dtype):
        m, n = shape
        return [torch.randn(m, n), autopad.Out((n, m)), m, n]

    def reference(self, x, m, n):
        return x.t()
