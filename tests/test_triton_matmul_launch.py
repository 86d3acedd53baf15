"""kernels/triton/matmul_launch.py, checked without a GPU: what the launcher hands each kernel (recorders
stand in for the kernels, patched where build and the launchers read them: matmul_launch), which kernel
a candidate builds, and the device facts the launch reads."""

from __future__ import annotations

import pytest

G = pytest.importorskip("autopad.kernels.triton.matmul")
from autopad.kernels.triton import matmul_launch as ML  # noqa: E402

D = G.DEFAULTS
P1 = {**D, "PATH": 1}


# the Gluon kernel of each PERSIST value
GLUON_KERNELS = ("matmul_gluon", "matmul_gluon_persistent", "matmul_gluon_ws", "matmul_gluon_pingpong")


class _Recorder:
    """Stands in for a @gluon.jit / @triton.jit function: ``fn[grid](*args, **kw)`` records the call."""

    def __init__(self) -> None:
        self.calls: list = []

    def __getitem__(self, grid):
        return lambda *args, **kw: self.calls.append((grid, args, kw))


@pytest.mark.parametrize(
    "c,shape,dt",
    [(D, (1000, 1032, 520), "bfloat16"), ({**D, "PERSIST": 1}, (3000, 5000, 1000), "float16"),
     ({**D, "PERSIST": 2}, (3000, 5000, 1000), "bfloat16"),
     ({**D, "PERSIST": 2, "STAGES": 2}, (3000, 5000, 1000), "float16"),
     ({**D, "BN": 128, "WARPS": 4, "PERSIST": 3}, (3000, 5000, 1000), "bfloat16"),
     ({**D, "SPLIT_K": 4}, (136, 2056, 4104), "bfloat16"),
     ({**D, "BN": 128, "BK": 32}, (64, 40, 24), "tf32"), (P1, (999, 1001, 77), "float16"),
     ({**P1, "BN": 128, "BK": 32}, (64, 41, 23), "tf32")],
)  # fmt: skip
def test_launcher_hands_the_kernel_the_users_tensors_and_matching_descriptors(c, shape, dt, monkeypatch):
    """What the launcher passes, checked without a GPU: descriptors over the user's own A and B (no copy),
    block shapes and layouts as the compiled kernel was built for, the grid, the split-K workspace and its
    reduction."""
    torch = pytest.importorskip("torch")
    rec = {n: _Recorder() for n in (*GLUON_KERNELS, "splitk_reduce", "matmul_tl")}
    for n, r in rec.items():
        monkeypatch.setattr(ML, n, r)  # where build and the launchers read them
    m, n, k = shape
    tdt = torch.float32 if dt == "tf32" else getattr(torch, dt)
    a, b = torch.randn(m, k).to(tdt), torch.randn(k, n).to(tdt)
    x = G.inputs_from(a, b)
    out = G.alloc_output(x)
    G.launcher(G.build(c, dt), shape, dt)(x, out)
    tiles = -(-m // c["BM"]) * -(-n // c["BN"])
    if c["PATH"]:  # tl.dot: the user's tensors as pointers, the tile constants, Triton's stages and warps
        ((grid, args, kw),) = rec["matmul_tl"].calls
        assert args[0] is x[0] and args[1] is x[1] and args[2] is out and grid == (tiles,)
        assert args[3:] == (m, n, k, c["BM"], c["BN"], c["BK"], c["GROUP_M"], dt == "tf32", G.b_kn(dt))
        assert kw == {"num_warps": c["WARPS"], "num_stages": c["STAGES"]}
        return
    kern = rec[GLUON_KERNELS[c["PERSIST"]]]
    ((grid, args, kw),) = kern.calls
    a_desc, b_desc, c_desc = args[:3]
    reg = {"maxnreg": G.ws_maxnreg(c)} if c["PERSIST"] >= 2 else {}
    assert a_desc.base is a and args[3:6] == (m, n, k) and kw == {"num_warps": c["WARPS"], **reg}
    assert a_desc.block_shape == [c["BM"], c["BK"]]
    if G.b_kn(dt):
        assert b_desc.base is b and b_desc.block_shape == [c["BK"], c["BN"]]
    else:
        assert tuple(b_desc.base.shape) == (n, k) and b_desc.block_shape == [c["BN"], c["BK"]]
    assert a_desc.layout.swizzle_byte_width == c["SWIZZLE"] == c_desc.layout.swizzle_byte_width
    s = c["SPLIT_K"]
    if c["PERSIST"]:
        cb = (G.c_bufs(c, dt),) if c["PERSIST"] == 2 else ()
        assert grid == (min(tiles, G._sm_count()),) and args[6:] == (c["STAGES"], c["GROUP_M"], True, *cb)
    else:
        assert grid == (tiles * s,) and args[6:] == (c["STAGES"], c["GROUP_M"], s, G.b_kn(dt))
    if s == 1:
        assert c_desc.base is out and not rec["splitk_reduce"].calls
    else:
        mp = -(-m // c["BM"]) * c["BM"]
        assert c_desc.base.dtype == torch.float32 and tuple(c_desc.base.shape) == (s * mp, n)
        assert c_desc.layout.element_bitwidth == 32
        ((rgrid, rargs, _),) = rec["splitk_reduce"].calls
        assert rargs[0] is c_desc.base and rargs[1] is out and rargs[2:5] == (m * n, mp * n, s)


def test_build_picks_the_kernel_of_the_path_and_persistence(monkeypatch):
    pytest.importorskip("triton")
    rec = {n: _Recorder() for n in (*GLUON_KERNELS, "splitk_reduce", "matmul_tl")}
    for n, r in rec.items():
        monkeypatch.setattr(ML, n, r)
    for p, name in enumerate(GLUON_KERNELS):
        built = G.build({**D, "PERSIST": p}, "bfloat16")
        assert built["kernel"] is rec[name] and built["layout"].swizzle_byte_width == D["SWIZZLE"]
    assert G.build(P1, "float16")["kernel"] is rec["matmul_tl"]
    split = G.build({**D, "SPLIT_K": 2}, "bfloat16")
    assert split["c_layout"].element_bitwidth == 32 and split["layout"].element_bitwidth == 16


def test_alignment_and_the_sm_count_without_a_gpu():
    torch = pytest.importorskip("torch")
    x = torch.zeros(64, dtype=torch.float16)
    assert ML._aligned(x) is x
    off = x[1:]  # 2 bytes on: copied to a fresh block
    assert ML._aligned(off) is not off and ML._aligned(off).data_ptr() % 16 == 0
    assert ML.b_kn_tensor(x) and not ML.b_kn_tensor(x.float())
    if not torch.cuda.is_available():
        assert ML._sm_count() == ML._ARCH.sm_count == 132  # the sm_90 profile's count
