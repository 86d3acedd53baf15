"""autopad.ops on a GPU: results against torch on odd shapes and every dtype the ops take, gradients,
CUDA-graph capture, the current stream, torch.compile, first-use tuning, and the host cost of a call.

Correctness runs the model's pick (``AUTOPAD_TUNE=never``: no tuning inside a unit test); one test tunes a
small shape on first use. Each check uses fresh random data and, where the op allocates its output, a
poisoned block handed back by the caching allocator, so an unwritten element cannot pass.
"""

from __future__ import annotations

import os
import time
import warnings

import pytest

import autopad
from autopad import ops

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def model_pick(monkeypatch):
    monkeypatch.setenv("AUTOPAD_TUNE", "never")
    warnings.simplefilter("ignore", ops.AutopadTuningWarning)
    yield
    warnings.resetwarnings()


def _poisoned(fn, *args):
    """fn(*args), after poisoning the block its output will reuse (same size: the allocator hands it back)."""
    import torch

    first = fn(*args)
    torch.cuda.synchronize()
    outs = first if isinstance(first, tuple) else (first,)
    for t in outs:
        t.view(torch.uint8).fill_(0xA5) if t.is_contiguous() else t.fill_(-91)
    del first, outs
    out = fn(*args)
    torch.cuda.synchronize()
    return out


def _random(shape, dtype):
    import torch

    if dtype == torch.bool:
        return torch.rand(shape, device="cuda") > 0.5
    if dtype.is_complex:
        return torch.randn(shape, device="cuda", dtype=dtype)
    if not dtype.is_floating_point:
        info = torch.iinfo(dtype)
        return torch.randint(max(info.min, -1000), min(info.max, 1000), shape, device="cuda", dtype=dtype)
    return torch.randn(shape, device="cuda").to(dtype)


@pytest.mark.parametrize("shape", [(1, 1), (9, 41), (341, 4231), (4097, 33), (3, 257, 129), (2, 3, 33, 65)])
def test_transpose_odd_shapes_fp32(shape):
    import torch

    x = _random(shape, torch.float32)
    assert torch.equal(_poisoned(ops.transpose, x), x.transpose(-1, -2).contiguous())


@pytest.mark.parametrize(
    "dtype", ["float64", "float16", "bfloat16", "int8", "uint8", "int32", "int64", "bool", "complex64"]
)
def test_transpose_every_dtype_bit_exact(dtype):
    import torch

    dt = getattr(torch, dtype)
    x = _random((341, 1031), dt)
    y = _poisoned(ops.transpose, x)
    assert y.dtype == dt and torch.equal(y.view(torch.uint8), x.t().contiguous().view(torch.uint8))


# vector-path picks whose misaligned build holds halo rows (output rows off the vector grid): the flat
# launch path must give that build its own shared bytes (H200 run 30: it faulted with the aligned build's)
_HALO_PICKS = {
    "float16": dict(TILE_M=64, TILE_N=64, THREADS=128, VEC=8, READOUT=1, SW_VEC=8, SW_PER_PHASE=8),
    "int8": dict(TILE_M=64, TILE_N=128, THREADS=128, VEC=16, READOUT=1, SW_VEC=16, SW_PER_PHASE=8),
    "float32": dict(TILE_M=64, TILE_N=64, THREADS=256, VEC=4, READOUT=0, SW_VEC=4, SW_PER_PHASE=4),
    "float64": dict(TILE_M=32, TILE_N=64, THREADS=128, VEC=2, READOUT=0, SW_VEC=2, SW_PER_PHASE=2),
}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int8", "float32", "float64"])
def test_transpose_vector_picks_on_rows_off_the_vector_grid(monkeypatch, dtype):
    import torch
    from autopad.kernels.cuda import transpose as T

    from autopad.ops import policy

    e = torch.empty((), dtype=getattr(torch, dtype)).element_size()
    key = {1: "int8", 2: "float16", 4: "float32", 8: "float64"}[e]
    c = dict(T.DEFAULTS, SCALAR_EDGE=0, GROUP=1, SW_MAX_PHASE=8, **_HALO_PICKS[key])
    decision = policy.Decision(policy._freeze(c), "tuned", "test: a vector-path pick")
    monkeypatch.setattr(policy, "decide", lambda *a, **k: decision)
    ops.reset()
    try:
        for shape in [(341, 1031), (2, 129, 300), (4097, 8191), (37, 45)]:
            assert T.legal(c, shape, key)
            x = _random(shape, getattr(torch, dtype))
            y = _poisoned(ops.transpose, x)
            want = x.transpose(-1, -2).contiguous()
            assert torch.equal(y.view(torch.uint8), want.view(torch.uint8)), (dtype, shape)
    finally:
        ops.reset()


def test_transpose_non_contiguous_empty_and_batched_views():
    import torch

    x = torch.randn(65, 33, device="cuda").t()  # a view
    assert torch.equal(ops.transpose(x), x.t().contiguous())
    assert ops.transpose(torch.empty(0, 5, device="cuda")).shape == (5, 0)
    b = torch.randn(4, 130, 70, device="cuda")[::2]  # every other batch: not contiguous
    assert torch.equal(ops.transpose(b), b.transpose(-1, -2).contiguous())


def test_transpose_gradient_on_an_odd_shape():
    import torch

    x = torch.randn(3, 257, 129, device="cuda", requires_grad=True)
    g = torch.randn(3, 129, 257, device="cuda")
    (ops.transpose(x) * g).sum().backward()
    assert torch.equal(x.grad, g.transpose(-1, -2))


@pytest.mark.parametrize("bins", [1, 300, 4096, 70_000])
@pytest.mark.parametrize("dtype", ["int32", "uint8", "int64"])
def test_histogram_counts_match_bincount(bins, dtype):
    import torch

    if dtype == "uint8" and bins > 256:
        pytest.skip("uint8 values stop at 255")
    dt = getattr(torch, dtype)
    x = torch.randint(-3, bins + 3, (100_003,), device="cuda").clamp(min=0 if dtype == "uint8" else -3).to(dt)
    h = _poisoned(ops.histogram, x, bins)
    keep = x.long()[(x.long() >= 0) & (x.long() < bins)]
    assert h.dtype == torch.int32 and torch.equal(h.long(), torch.bincount(keep, minlength=bins))


def test_histogram_of_skewed_data_and_a_single_value():
    import torch

    x = torch.full((1 << 20,), 5, device="cuda", dtype=torch.int32)
    assert ops.histogram(x, 256, dist="single")[5].item() == 1 << 20
    z = (torch.rand(1 << 20, device="cuda") ** 4 * 4096).int()
    assert torch.equal(ops.histogram(z, 4096, dist="skewed").long(), torch.bincount(z.long(), minlength=4096))


@pytest.mark.parametrize("wdtype", ["float32", "float64"])
def test_weighted_histogram_and_its_gradient(wdtype):
    import torch

    wt = getattr(torch, wdtype)
    x = torch.randint(0, 1000, (200_003,), device="cuda", dtype=torch.int32)
    w = torch.rand(200_003, device="cuda", dtype=wt, requires_grad=True)
    s = ops.histogram(x, 1000, weights=w)
    ref = torch.bincount(x, weights=w.detach(), minlength=1000)
    assert s.dtype == ref.dtype and torch.allclose(s.double(), ref.double(), rtol=1e-4, atol=1e-3)
    g = torch.randn(1000, device="cuda", dtype=s.dtype)
    (s * g).sum().backward()
    assert torch.equal(w.grad, g[x.long()].to(wt))


@pytest.mark.parametrize("shape", [(1, 1, 1), (33, 17, 65), (257, 129, 65), (1000, 37, 300)])
def test_matmul_fp32_odd_shapes(shape):
    import torch

    m, k, n = shape
    a, b = torch.randn(m, k, device="cuda"), torch.randn(k, n, device="cuda")
    ref = a.double() @ b.double()
    got = _poisoned(ops.matmul, a, b)
    assert ((got.double() - ref).norm() / ref.norm()).item() < 1e-5


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("shape", [(256, 128, 64), (1000, 136, 200)])
def test_matmul_16bit_takes_b_as_held(shape, dtype):
    import torch

    dt = getattr(torch, dtype)
    m, k, n = shape
    a, b = torch.randn(m, k, device="cuda", dtype=dt), torch.randn(k, n, device="cuda", dtype=dt)
    ref = a.float() @ b.float()
    got = _poisoned(ops.matmul, a, b)
    assert got.dtype == dt and ((got.float() - ref).norm() / ref.norm()).item() < 1e-2
    w = torch.randn(n, k, device="cuda", dtype=dt)  # a Linear weight: the user passes w.t()
    got = ops.matmul(a, w.t())
    ref = a.float() @ w.float().t()
    assert ((got.float() - ref).norm() / ref.norm()).item() < 1e-2


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("shape", [(300, 1000, 520), (257, 130, 1001)])  # (m, k, n); K*2 % 16 != 0: tl.dot
def test_matmul_16bit_reads_row_pitched_operands(shape, dtype):
    """Operands from ``ops.empty_pitched`` (rows 128 bytes apart): the TMA GEMM reads them as they are, a
    kernel that cannot (the tl.dot path of a shape TMA cannot describe) gets contiguous copies; both right,
    on the operator's first call and on the direct path after it, and a contiguous call of the same shape."""
    import torch

    from autopad.ops import runner

    dt = getattr(torch, dtype)
    m, k, n = shape
    a, b = ops.empty_pitched(m, k, dt, "cuda"), ops.empty_pitched(k, n, dt, "cuda")
    assert not a.is_contiguous() and not b.is_contiguous()
    for _ in range(3):
        a.normal_(), b.normal_()
        got = _poisoned(ops.matmul, a, b)
        ref = a.float() @ b.float()
        assert got.dtype == dt and got.is_contiguous()
        assert ((got.float() - ref).norm() / ref.norm()).item() < 1e-2
    got = ops.matmul(a.contiguous(), b.contiguous())
    assert ((got.float() - ref).norm() / ref.norm()).item() < 1e-2
    (bd,) = [
        x
        for x in runner._BOUND.values()
        if x.spec.NAME == "matmul" and x.shape == (m, n, k) and x.dtype == dtype
    ]
    assert runner._reads_strides(bd) == ((k * 2) % 16 == 0 and (n * 2) % 16 == 0)


def test_matmul_gradients_on_odd_shapes():
    import torch

    a = torch.randn(33, 17, device="cuda", dtype=torch.float32, requires_grad=True)
    b = torch.randn(17, 65, device="cuda", dtype=torch.float32, requires_grad=True)
    g = torch.randn(33, 65, device="cuda")
    (ops.matmul(a, b) * g).sum().backward()
    assert torch.allclose(a.grad, g @ b.detach().t(), rtol=1e-4, atol=1e-4)
    assert torch.allclose(b.grad, a.detach().t() @ g, rtol=1e-4, atol=1e-4)


def test_cuda_graph_capture_replays_with_new_data():
    import torch

    x = torch.randn(1000, 37, device="cuda")
    v = torch.randint(0, 300, (50_001,), device="cuda", dtype=torch.int32)
    a, b = torch.randn(64, 48, device="cuda"), torch.randn(48, 80, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm up: bind the kernels outside the capture
        for _ in range(2):
            ops.transpose(x), ops.histogram(v, 300), ops.matmul(a, b)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        yt, h, c = ops.transpose(x), ops.histogram(v, 300), ops.matmul(a, b)
    x.copy_(torch.randn_like(x))
    v.copy_(torch.randint(0, 300, v.shape, device="cuda", dtype=torch.int32))
    a.copy_(torch.randn_like(a))
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(yt, x.t().contiguous())
    assert torch.equal(h.long(), torch.bincount(v, minlength=300))
    assert torch.allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_ops_run_on_the_current_stream_in_order():
    import torch

    s = torch.cuda.Stream()
    x = torch.randn(2048, 1024, device="cuda")
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        big = torch.randn(8192, 8192, device="cuda")  # keeps the side stream busy
        y = x * 2  # on s: the transpose must see it, not an old x
        t = ops.transpose(y)
        t2 = t * 1  # and work after it on s must see the transpose
    s.synchronize()
    assert torch.equal(t2, (x * 2).t().contiguous())
    del big


def test_torch_compile_fullgraph_runs_the_operators():
    import torch

    torch._dynamo.reset()

    def f(x, a, b):
        return ops.transpose(x) + 1, ops.matmul(a, b)

    g = torch.compile(f, fullgraph=True)
    x, a, b = (
        torch.randn(129, 65, device="cuda"),
        torch.randn(33, 17, device="cuda"),
        torch.randn(17, 9, device="cuda"),
    )
    y, c = g(x, a, b)
    assert torch.equal(y, x.t() + 1) and torch.allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_first_use_tunes_once_says_so_and_is_cached(monkeypatch):
    import torch

    monkeypatch.delenv("AUTOPAD_TUNE")
    ops.reset()
    warnings.resetwarnings()
    x = torch.randn(320, 192, device="cuda")
    with pytest.warns(ops.AutopadTuningWarning, match="tuning transpose"):
        assert torch.equal(ops.transpose(x), x.t().contiguous())
    row = next(d for d in ops.decisions() if d["kernel"] == "transpose" and d["shape"] == (320, 192))
    assert row["source"] == "tuned now"
    ops.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ops.AutopadTuningWarning)  # found in the cache: no word, no tuning
        ops.transpose(x)
    row = next(d for d in ops.decisions() if d["kernel"] == "transpose" and d["shape"] == (320, 192))
    assert row["source"] == "tuned"


def test_host_cost_of_a_small_call_against_torch_eager():
    """Back-to-back calls on a 64x64 fp32 tensor: the GPU finishes each in ~2 us, so the time per call is
    the host's. The target: no more than torch's own x.t().contiguous()."""
    import torch

    x = torch.randn(64, 64, device="cuda")
    ops.transpose(x)

    def per_call(fn, n=3000):
        best = float("inf")
        for _ in range(3):
            torch.cuda.synchronize()
            t = time.perf_counter()
            for _ in range(n):
                fn(x)
            torch.cuda.synchronize()
            best = min(best, (time.perf_counter() - t) / n * 1e6)
        return best

    from autopad.ops import runner

    closure = runner.FAST_T[(x.shape, x.dtype, x.get_device(), "auto")]
    path = "flat" if hasattr(closure, "table") else "layered"
    ours, eager = per_call(ops.transpose), per_call(lambda t: t.t().contiguous())
    bare = per_call(closure)  # the bound closure alone: the public call less its guards and lookup
    launch = os.environ.get("AUTOPAD_LAUNCH", "driver")
    print(
        f"\nautopad.ops.transpose 64x64 fp32: {ours:.1f} us per call ({path} closure {bare:.1f} us, launch "
        f"path {launch}); x.t().contiguous(): {eager:.1f} us"
    )
    assert ours <= 1.5 * eager + 2.0, (ours, eager)


def test_import_autopad_ops_defines_the_operators():
    import torch

    ops.register()
    assert autopad.ops.transpose.__module__ == "autopad.ops.api" and hasattr(torch.ops.autopad, "matmul")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int8", "float64"])
def test_transpose_on_the_triton_backend_takes_the_compiled_launcher_and_stays_right(dtype):
    """``backend="triton"`` (the Gluon kernel): fresh data every call on odd and batched shapes; after the
    first call of a shape the compiled kernel's own launcher serves (``autopad.triton_launch``), a view
    at an address off the 16-byte grid goes through the JIT again, and a CUDA graph replays with new data."""
    import torch

    from autopad.ops import runner

    dt = getattr(torch, dtype)
    for shape in [(9, 41), (341, 4231), (3, 257, 129)]:
        for _ in range(3):
            x = _random(shape, dt)
            assert torch.equal(_poisoned(ops.transpose, x, "triton"), x.transpose(-1, -2))
        (bd,) = [
            b
            for b in runner._BOUND.values()
            if b.spec.NAME == "transpose"
            and b.spec.BACKEND == "triton"
            and b.shape == shape
            and b.dtype == dtype
        ]
        assert bd.run.fast.ready
    odd = _random((341 * 4231 + 1,), dt)[1:].view(341, 4231)
    assert odd.data_ptr() % 16 and odd.is_contiguous()
    assert torch.equal(ops.transpose(odd, "triton"), odd.t())
    x = _random((257, 129), dt)
    ops.transpose(x, "triton")
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s), torch.cuda.graph(g):
        y = ops.transpose(x, "triton")
    torch.cuda.current_stream().wait_stream(s)
    x.copy_(_random((257, 129), dt))
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(y, x.t())


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_matmul_16bit_repeated_calls_take_the_compiled_launcher_and_stay_right(dtype):
    """After the first call (Triton's JIT) the Gluon kernel is launched through the compiled kernel's own
    launcher (``autopad.triton_launch``): fresh data every call, a view at an address that is not a multiple
    of 16 bytes (TMA cannot read it: copied first), and a CUDA graph replay with new data."""
    import torch

    from autopad.ops import runner

    dt = getattr(torch, dtype)
    m, k, n = 136, 200, 264
    a, b = torch.empty(m, k, device="cuda", dtype=dt), torch.empty(k, n, device="cuda", dtype=dt)
    for _ in range(3):
        a.normal_(), b.normal_()
        got = _poisoned(ops.matmul, a, b)
        ref = a.float() @ b.float()
        assert ((got.float() - ref).norm() / ref.norm()).item() < 1e-2
    (bd,) = [
        x
        for x in runner._BOUND.values()
        if x.spec.NAME == "matmul" and x.shape == (m, n, k) and x.dtype == dtype
    ]
    assert bd.run.fast.ready  # the compiled kernel was adopted after the first call
    buf = torch.randn(m * k + 1, device="cuda").to(dt)
    odd = buf[1:].view(m, k)
    assert odd.data_ptr() % 16 and odd.is_contiguous()
    got = ops.matmul(odd, b)
    ref = odd.float() @ b.float()
    assert ((got.float() - ref).norm() / ref.norm()).item() < 1e-2
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s), torch.cuda.graph(g):
        c = ops.matmul(a, b)
    torch.cuda.current_stream().wait_stream(s)
    a.normal_()
    g.replay()
    torch.cuda.synchronize()
    ref = a.float() @ b.float()
    assert ((c.float() - ref).norm() / ref.norm()).item() < 1e-2


def test_the_floor_times_on_the_gpu_and_a_floored_shape_runs_torch_mm(monkeypatch):
    """ops.peer on the device: judge times two calls with the project's timer (the same GEMM twice: no
    clear winner, the kernel stays); a shape whose verdict is torch.mm returns torch.mm's result, also under
    a CUDA graph, and decisions() says so."""
    import torch

    from autopad.ops import peer, runner

    monkeypatch.delenv(peer.ENV, raising=False)
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    v = peer.judge(lambda: torch.mm(a, b), lambda: torch.mm(a, b), "first-use")
    assert v.kernel_ms and v.peer_ms and not v.use_peer and 0.9 < v.peer_ms / v.kernel_ms < 1.1
    monkeypatch.setattr(runner, "_judge", lambda bd, fn, x, y: peer.Verdict(True, 0.2, 0.1, "forced"))
    m, k, n = 333, 129, 517
    x = torch.randn(m, k, device="cuda", dtype=torch.float16)
    y = torch.randn(k, n, device="cuda", dtype=torch.float16)
    try:
        assert torch.equal(_poisoned(ops.matmul, x, y), torch.mm(x, y))
        (row,) = [d for d in ops.decisions() if d["kernel"] == "matmul" and d["shape"] == (m, n, k)]
        assert row["runs"].startswith("torch.mm (cuBLAS)")
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s), torch.cuda.graph(g):
            c = ops.matmul(x, y)
        torch.cuda.current_stream().wait_stream(s)
        x.normal_()
        g.replay()
        torch.cuda.synchronize()
        assert torch.equal(c, torch.mm(x, y))
    finally:
        ops.reset()  # the forced verdict goes with its shape


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_the_floor_judges_a_real_first_call(monkeypatch, dtype):
    """AUTOPAD_PEER=on (the suite runs AUTOPAD_TUNE=never, the model's pick): the first call of a shape times
    the bound kernel and torch.mm; either may win, the answer is right and decisions() gives both times."""
    import torch

    from autopad.ops import peer

    monkeypatch.setenv(peer.ENV, "on")
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    dt = getattr(torch, dtype)
    m, k, n = (3000, 1000, 5000) if dtype == "bfloat16" else (1000, 1000, 1000)
    try:
        a, b = torch.randn(m, k, device="cuda").to(dt), torch.randn(k, n, device="cuda").to(dt)
        got = _poisoned(ops.matmul, a, b)
        ref = a.double() @ b.double()
        assert ((got.double() - ref).norm() / ref.norm()).item() < (1e-2 if dtype == "bfloat16" else 1e-5)
        (row,) = [d for d in ops.decisions() if d["kernel"] == "matmul" and d["shape"] == (m, n, k)]
        assert " ms, torch.mm (cuBLAS) " in row["runs"] and "at first use" in row["runs"], row["runs"]
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32
        ops.reset()
