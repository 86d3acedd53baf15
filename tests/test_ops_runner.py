"""autopad.ops' bound kernels without a GPU: what the op does around the kernel (dtype views, folded batch
dims, narrowed histogram values, the weighted kernel's output, a transposed B), the spec contract
(``inputs_from``, ``alloc_output``, ``ACCUMULATES``, ``launcher``), and the host cost of the eager fast path
with the kernel itself mocked."""

from __future__ import annotations

import functools
import time
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

from autopad import ops  # noqa: E402
from autopad.bases import Inputs  # noqa: E402
from autopad.ops import api, plans, policy, runner  # noqa: E402


class FakeSpec:
    def __init__(self, name, **impl):
        self.NAME, self.BACKEND = name, "cuda"
        self.impl = SimpleNamespace(**impl)


def _transpose_run(seen):
    def run(ins, out):
        seen.append((ins[0].dtype, tuple(ins[0].shape), ins.shape))
        out.copy_(ins[0].transpose(-1, -2))

    return run


def _alloc_transposed(ins, constants):
    x = ins[0]
    return torch.empty((*x.shape[:-2], x.shape[-1], x.shape[-2]), dtype=x.dtype)


@pytest.fixture
def fake_bound(monkeypatch):
    """runner.bound returns fake kernels (CPU torch code) by kernel name; yields what each kernel saw."""
    ops.reset()
    seen = {"transpose": [], "histogram": [], "histogram_weighted": [], "matmul": []}

    def hist_run(ins, out):
        x, bins = ins[0], ins[1]
        seen["histogram"].append((x.dtype, tuple(ins.shape)))
        x = x.long()
        keep = (x >= 0) & (x < bins)
        out.copy_(torch.bincount(x[keep], minlength=bins))

    def whist_run(ins, out):
        x, w, marker = ins
        bins = marker.shape[0]
        seen["histogram_weighted"].append((x.dtype, w.dtype))
        keep = (x >= 0) & (x < bins)
        out[0].copy_(torch.bincount(x[keep].long(), minlength=bins))
        sums = torch.zeros(bins).index_add_(0, x[keep].long(), w[keep])
        out[1].copy_(sums.view(torch.int32))

    def mm_run(ins, out):
        seen["matmul"].append((ins[0].is_contiguous(), ins[1].is_contiguous(), tuple(ins[1].shape)))
        out.copy_(ins[0] @ ins[1])

    specs = {
        "transpose": FakeSpec("transpose", alloc_output=_alloc_transposed),
        "histogram": FakeSpec(
            "histogram",
            inputs_from=lambda x, bins: (x, bins),
            alloc_output=lambda ins, c: torch.empty(ins[1], dtype=torch.int32),
        ),
        "histogram_weighted": FakeSpec(
            "histogram_weighted",
            alloc_output=lambda ins, c: torch.empty((2, ins[2].shape[0]), dtype=torch.int32),
        ),
        "matmul": FakeSpec(
            "matmul", alloc_output=lambda ins, c: torch.empty(ins[0].shape[0], ins[1].shape[1])
        ),
    }
    runs = {"transpose": _transpose_run(seen["transpose"]), "histogram": hist_run,
            "histogram_weighted": whist_run, "matmul": mm_run}  # fmt: skip

    def bound(plan, device):
        name = plan.spec.NAME
        return runner.Bound(specs[name], plan.shape, plan.dtype, plan.dist, device,
                            policy.Decision((), "model"), None, runs[name])  # fmt: skip

    monkeypatch.setattr(runner, "bound", bound)
    yield seen
    ops.reset()


@pytest.mark.parametrize(
    "shape, dtype, kernel_dtype, kernel_shape",
    [
        ((5, 7), torch.float32, torch.float32, (5, 7)),
        ((3, 5, 7), torch.float16, torch.float16, (3, 5, 7)),
        ((2, 3, 5, 7), torch.float32, torch.float32, (6, 5, 7)),  # batch dims folded into one
        ((5, 7), torch.int32, torch.float32, (5, 7)),  # no int32 kernel: its bits move as float32
        ((5, 7), torch.int64, torch.float64, (5, 7)),
        ((5, 7), torch.bool, torch.uint8, (5, 7)),
        ((4, 5, 7), torch.complex64, torch.float64, (4, 5, 7)),
    ],
)
def test_transpose_runs_the_kernel_on_a_view_it_can_move(
    fake_bound, shape, dtype, kernel_dtype, kernel_shape
):
    x = (torch.randn(shape) * 100).to(dtype) if dtype != torch.complex64 else torch.randn(shape, dtype=dtype)
    y = runner.transpose_impl(x)
    assert y.dtype == dtype and torch.equal(y, x.transpose(-1, -2))
    assert fake_bound["transpose"] == [(kernel_dtype, kernel_shape, kernel_shape)]  # Inputs carry the shape
    runner.transpose_impl(x)
    assert len(fake_bound["transpose"]) == 2  # the second call reuses the bound closure


def test_transpose_of_a_non_contiguous_or_empty_tensor(fake_bound):
    x = torch.randn(7, 5).t()
    assert torch.equal(runner.transpose_impl(x), x.t())
    e = runner.transpose_impl(torch.empty(0, 3))
    assert tuple(e.shape) == (3, 0) and fake_bound["transpose"] == [(torch.float32, (5, 7), (5, 7))]


def test_histogram_narrows_int64_without_wrapping_into_a_bin(fake_bound):
    x = torch.tensor([1, 3, 3, 2**32 + 5, -(2**40), 7], dtype=torch.int64)
    h = runner.histogram_impl(x, 6)
    assert h.dtype == torch.int32 and h.tolist() == [0, 1, 0, 2, 0, 0]  # 2**32+5 is not a 5
    assert fake_bound["histogram"] == [(torch.int32, (6, 6))]
    u = runner.histogram_impl(torch.tensor([0, 255, 255], dtype=torch.uint8), 256)
    assert u[255] == 2 and fake_bound["histogram"][-1][0] == torch.uint8  # uint8 is read as it is


def test_weighted_histogram_returns_sums_in_bincounts_dtype(fake_bound):
    x = torch.tensor([0, 2, 2, 9], dtype=torch.int32)
    w = torch.tensor([0.5, 1.0, 2.0, 4.0])
    s = runner.histogram_impl(x, 4, w)
    assert s.dtype == torch.float32 and s.tolist() == [0.5, 0.0, 3.0, 0.0]
    s64 = runner.histogram_impl(x, 4, w.double())
    assert s64.dtype == torch.float64 and s64.tolist() == [0.5, 0.0, 3.0, 0.0]
    assert fake_bound["histogram_weighted"] == [(torch.int32, torch.float32)] * 2  # float32 to the kernel
    assert runner.histogram_impl(x[:0], 4, w[:0]).tolist() == [0.0] * 4
    sums, counts = torch.tensor([1.5, 2.0]), torch.tensor([3, 4], dtype=torch.int32)
    assert runner._sums((sums, counts), 2) is sums and runner._sums((counts, sums), 2) is sums


def test_matmul_takes_b_as_held_and_a_transposed_weight_through_autopads_transpose(fake_bound):
    # seeded, and compared with an absolute tolerance: the fake kernel multiplies a contiguous copy of B
    # where ``a @ w.t()`` multiplies the view, and the CPU GEMM may round those two a step apart, which
    # allclose's relative test rejects next to zero (161 of 20,000 unseeded draws did)
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(3, 4, generator=gen), torch.randn(4, 5, generator=gen)
    assert torch.allclose(runner.matmul_impl(a, b), a @ b, atol=1e-6)
    w = torch.randn(5, 4, generator=gen)  # a Linear weight [N, K]; the user passes w.t()
    assert torch.allclose(runner.matmul_impl(a, w.t()), a @ w.t(), atol=1e-6)
    assert fake_bound["matmul"] == [(True, True, (4, 5))] * 2
    assert fake_bound["transpose"] == [(torch.float32, (5, 4), (5, 4))]  # B made [K, N] by autopad
    assert torch.equal(runner.matmul_impl(a[:, :0], b[:0]), torch.zeros(3, 5))


def test_kernel_call_follows_the_spec_contract():
    made = []
    spec = FakeSpec(
        "k",
        inputs_from=lambda x: Inputs((x, 7), (99,)),  # a spec's own input form, with its shape
        alloc_output=lambda ins, c: torch.full((3,), 5.0),
        ACCUMULATES=True,
    )

    def run(ins, out):
        made.append((ins[1], ins.shape, out.tolist()))
        out += 1

    b = runner.Bound(spec, (99,), "float32", None, -1, policy.Decision((), "model"), None, run)
    call = runner.kernel_call(b, (torch.zeros(1),))
    assert call(torch.zeros(1)).tolist() == [1.0] * 3
    assert made == [(7, (99,), [0.0] * 3)]  # ACCUMULATES: a zeroed output, not the template's values

    two = FakeSpec("k2", alloc_output=lambda ins, c: (torch.empty(2), torch.empty(3)))
    seen = []
    b2 = runner.Bound(two, (2,), "float32", None, -1, policy.Decision((), "model"), None,
                      lambda ins, out: seen.append((ins.shape, len(out))))  # fmt: skip
    runner.kernel_call(b2, (torch.zeros(1),))(torch.zeros(1))
    assert seen == [((2,), 2)]  # no inputs_from: the op's arguments, carrying the plan's shape


def test_eager_fast_path_host_cost_with_the_kernel_mocked(monkeypatch):
    """The public call's Python path (guards, lookup, allocation, launcher call) with a no-op kernel,
    against torch's own x.t().contiguous() on the same machine (which also copies 16 KB)."""
    ops.reset()

    def bound(plan, device):
        spec = FakeSpec("transpose", alloc_output=_alloc_transposed)
        return runner.Bound(spec, plan.shape, plan.dtype, None, device, policy.Decision((), "model"), None,
                            lambda ins, out: None)  # fmt: skip

    monkeypatch.setattr(runner, "bound", bound)
    x = torch.randn(64, 64)
    runner.transpose_impl(x)  # binds the closure for this shape, as the operator's first call does

    def per_call(fn):
        best = float("inf")
        for _ in range(5):
            t = time.perf_counter()
            for _ in range(3000):
                fn(x)
            best = min(best, (time.perf_counter() - t) / 3000 * 1e6)
        return best

    ours = per_call(api.transpose)
    eager = per_call(lambda t: t.t().contiguous())
    print(
        f"\neager fast path, kernel mocked: {ours:.2f} us per call; x.t().contiguous() on CPU: {eager:.2f} us"
    )
    ops.reset()
    assert ours < 25  # a few us on an idle core (dominated by torch.empty); loose for a loaded machine


@pytest.mark.parametrize(
    "op, args, backend",
    [
        ("transpose", lambda: (torch.randn(2, 3, 33, 65),), "cuda"),
        ("transpose", lambda: (torch.randn(33, 65).half(),), "triton"),
        ("histogram", lambda: (torch.randint(0, 300, (1001,)), 300), "cuda"),
        ("histogram", lambda: (torch.randint(0, 256, (1001,), dtype=torch.int32), 256), "triton"),
        (
            "histogram",
            lambda: (torch.randint(0, 300, (1001,), dtype=torch.int32), 300, torch.rand(1001)),
            "auto",
        ),
        ("matmul", lambda: (torch.randn(33, 17), torch.randn(17, 65)), "cuda"),
        ("matmul", lambda: (torch.randn(64, 32).bfloat16(), torch.randn(32, 48).bfloat16()), "auto"),
    ],
)
def test_the_built_in_specs_outputs_match_the_fake_implementations(monkeypatch, op, args, backend):
    """The real specs' inputs_from / alloc_output (on CPU tensors; the launch mocked) give what the
    operators' fake implementations promise: the same shape and dtype."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    ops.reset()
    seen = []

    def bound(plan, device):
        def run(ins, out):
            seen.append((type(ins).__name__, tuple(getattr(ins, "shape", ()))))
            for t in out if isinstance(out, tuple) else (out,):
                t.zero_()

        consts = dict(plan.spec.DEFAULTS)
        return runner.Bound(plan.spec, plan.shape, plan.dtype, plan.dist, device,
                            policy.Decision(tuple(sorted(consts.items())), "model"), None, run)  # fmt: skip

    monkeypatch.setattr(runner, "bound", bound)
    real = args()
    impl = {
        "transpose": runner.transpose_impl,
        "histogram": runner.histogram_impl,
        "matmul": runner.matmul_impl,
    }
    if op == "histogram" and len(real) == 3:
        got = impl[op](real[0], real[1], real[2], None, backend)
    else:
        got = impl[op](*real, backend=backend)
    mode = FakeTensorMode()
    fakes = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in real]
    with mode:
        want = getattr(torch.ops.autopad, op)(*fakes, backend=backend)
    assert tuple(got.shape) == tuple(want.shape) and got.dtype == want.dtype
    assert seen and seen[0][0] == "Inputs" and seen[0][1]  # the kernel got Inputs carrying their shape
    ops.reset()


# ---- the flat transpose path: the real CUDA spec, launches recorded instead of made -----------------------


class _Kernel:
    """A stand-in built kernel, equal by name (a bound kernel is rebuilt per ``bound`` call here)."""

    def __init__(self, name):
        self.name = name


def _recorded_launches(monkeypatch):
    """cuda_runtime's prepare_fixed and prepare_launch as recorders of what would reach the driver:
    (path, kernel, grid, block, shared bytes, arguments with tensors as pointers, scalars as ints)."""
    from autopad import cuda_runtime as rt

    got = []

    def norm(a):
        return a.data_ptr() if isinstance(a, torch.Tensor) else int(a)

    def prepare_fixed(kernel, grid, block, smem, args, device=None):
        slots = [i for i, a in enumerate(args) if type(a) is int]  # plain ints mark the pointer slots

        def go(*ptrs):
            vals = [norm(a) for a in args]
            for i, p in zip(slots, ptrs, strict=True):
                vals[i] = p
            got.append(("fixed", kernel.name, grid, block, smem, tuple(vals)))

        return go

    def prepare_launch(kernel, grid, block, smem=0, device=None):
        return lambda *args: got.append(
            ("fire", kernel.name, grid, block, smem, tuple(norm(a) for a in args))
        )

    monkeypatch.setattr(rt, "prepare_fixed", prepare_fixed)
    monkeypatch.setattr(rt, "prepare_launch", prepare_launch)
    monkeypatch.setattr(runner, "_get_dev", lambda: -1)  # CPU tensors: device -1 is "current"
    return got


@functools.cache
def _legal_pick(name, backend, shape, dtype, which):
    """Legal constants of the path ``which`` asks for ("model": the defaults, PAD 1; "vector": SCALAR_EDGE
    0 with VEC > 1; "scalar": SCALAR_EDGE 1 with VEC > 1), found by a short walk (the model's ranking of
    a whole space takes seconds)."""
    from autopad.kernels_registry import builtin_spec

    spec = builtin_spec(name, backend, dtype)
    if which == "model":
        return dict(spec.DEFAULTS, PAD=1)
    for vec in (8, 4, 2):
        for tile in (32, 64, 128):
            for threads in (256, 128, 512):
                c = dict(spec.DEFAULTS, VEC=vec, TILE_M=tile, TILE_N=tile, THREADS=threads)
                c["SCALAR_EDGE"] = int(which == "scalar")
                if spec.legal(c, shape, dtype):
                    return c
    raise AssertionError(f"no legal {which} constants for {shape} {dtype}")


def _real_transpose_bound(monkeypatch, which):
    """runner.bound: the real CUDA transpose spec and its launcher with ``_legal_pick``'s constants and
    stand-in kernels."""

    def bound(plan, device):
        spec = plan.spec
        c = _legal_pick(spec.NAME, spec.BACKEND, plan.shape, plan.dtype, which)
        shifted = _Kernel("shifted") if not c.get("SCALAR_EDGE", 1) and c["VEC"] > 1 else None
        built = spec.impl.Built(_Kernel("aligned"), c, plan.dtype, shifted)
        run = spec.impl.launcher(built, plan.shape, plan.dtype)
        return runner.Bound(spec, plan.shape, plan.dtype, None, device,
                            policy.Decision(policy._freeze(c), "model"), built, run)  # fmt: skip

    monkeypatch.setattr(runner, "bound", bound)
    return bound


def _at_offset(t, offset):
    """A contiguous copy of ``t`` whose data starts ``offset`` elements into its storage."""
    buf = torch.zeros(t.numel() + 1, dtype=t.dtype)
    v = buf[offset : offset + t.numel()].view(t.shape)
    v.copy_(t)
    return v


@pytest.mark.parametrize(
    "shape, dtype, which",
    [
        ((64, 96), torch.float32, "model"),
        ((64, 96), torch.float32, "vector"),
        ((33, 65), torch.float16, "vector"),  # rows that are not whole vectors: the shifted build
        ((40, 72), torch.float16, "scalar"),  # the scalar path: an `aligned` flag as the last argument
        ((3, 40, 72), torch.float32, "vector"),
        ((2, 3, 8, 16), torch.float32, "model"),  # batch dims folded by the kernel, not by the flat path
        ((16, 24), torch.int32, "vector"),  # moved as float32 bits
    ],
)
def test_flat_transpose_launches_what_the_spec_launcher_launches(monkeypatch, shape, dtype, which):
    ops.reset()
    got = _recorded_launches(monkeypatch)
    bound = _real_transpose_bound(monkeypatch, which)
    x = (torch.randn(shape) * 100).to(dtype)
    runner.transpose_impl(x)  # binds the closure, as the operator's first call does
    fn = runner.FAST_T[(x.shape, x.dtype, -1, "auto")]
    assert hasattr(fn, "table"), "the CUDA transpose takes the flat path"
    p = plans.plan_transpose(tuple(shape), runner.dtype_name(dtype))
    go = bound(p, -1).run  # the spec's own launcher for the same constants
    kdt = getattr(torch, p.view) if p.view else dtype
    vb, e = fn.vector_bytes, x.element_size()
    cases = set()
    for x_off in (0, 1):
        for out_off in (0, 1):
            xs = _at_offset(x, x_off)
            out = _at_offset(torch.empty((*shape[:-2], shape[-1], shape[-2]), dtype=dtype), out_off)
            got.clear()
            go(Inputs((xs.view(kdt).reshape(p.shape),), p.shape), out.view(kdt).reshape(-1))
            case = (xs.data_ptr() % vb == 0) + ((out.data_ptr() % vb == 0) << 1)
            fn.table[case](out.data_ptr(), xs.data_ptr())
            cases.add(case)
            (_, *want), (path, *flat) = got
            assert path == "fixed" and flat == want, (x_off, out_off)
            got.clear()
            y = fn(xs)  # the whole flat call: allocation, the alignment index, the launch
            assert y.shape == out.shape and y.dtype == dtype and y.is_contiguous()
            go(Inputs((xs.view(kdt).reshape(p.shape),), p.shape), y.view(kdt).reshape(-1))
            assert got[0][1:] == got[1][1:]
    assert cases == ({0, 1, 2, 3} if vb > e else {3})  # misaligned pointers exist only when vb > e
    ops.reset()


def test_flat_transpose_goes_the_layered_way_on_another_device_or_without_the_driver(monkeypatch):
    ops.reset()
    got = _recorded_launches(monkeypatch)
    _real_transpose_bound(monkeypatch, "vector")
    state = {"dev": -1}
    monkeypatch.setattr(runner, "_get_dev", lambda: state["dev"])

    class Guard:
        def __init__(self, d):
            self.d = d

        def __enter__(self):
            self.prev, state["dev"] = state["dev"], self.d

        def __exit__(self, *a):
            state["dev"] = self.prev

    monkeypatch.setattr(torch.cuda, "device", Guard)
    x = torch.randn(64, 96)
    runner.transpose_impl(x)
    fn = runner.FAST_T[(x.shape, x.dtype, -1, "auto")]
    got.clear()
    state["dev"] = 3  # the caller made another device current
    y = fn(x)
    assert [g[0] for g in got] == ["fire"] and got[0][5][:2] == (y.data_ptr(), x.data_ptr())
    assert state["dev"] == 3  # the guard restored the caller's device

    from autopad import cuda_runtime as rt

    ops.reset()
    state["dev"] = -1
    monkeypatch.setattr(rt, "prepare_fixed", lambda *a, **k: None)  # AUTOPAD_LAUNCH=cudacore, no driver
    runner.transpose_impl(x)
    fn = runner.FAST_T[(x.shape, x.dtype, -1, "auto")]
    got.clear()
    assert not hasattr(fn, "table") and fn(x).shape == (96, 64) and [g[0] for g in got] == ["fire"]
    ops.reset()


def test_flat_transpose_costs_less_host_time_than_the_layered_call(monkeypatch):
    """With both launches no-ops, the flat closure against kernel_call's (inputs_from, the spec's launcher,
    its _pick, a fire): the Python layers the flat path removes (5-8 us on the mocked profile)."""
    from autopad import cuda_runtime as rt

    ops.reset()
    _real_transpose_bound(monkeypatch, "model")
    monkeypatch.setattr(rt, "prepare_fixed", lambda *a, **k: lambda p0, p1: None)
    monkeypatch.setattr(rt, "prepare_launch", lambda *a, **k: lambda *args: None)
    monkeypatch.setattr(runner, "_get_dev", lambda: -1)
    x = torch.randn(64, 64)
    runner.transpose_impl(x)
    flat = runner.FAST_T[(x.shape, x.dtype, -1, "auto")]
    layered = flat.slow

    def best(fn):
        b = float("inf")
        for _ in range(7):
            t = time.perf_counter()
            for _ in range(1000):
                fn(x)
            b = min(b, (time.perf_counter() - t) / 1000 * 1e6)
        return b

    f, lay = min(best(flat), best(flat)), min(best(layered), best(layered))
    print(f"\nmocked launches: flat {f:.2f} us per call, layered {lay:.2f} us")
    ops.reset()
    assert f < 0.8 * lay, (f, lay)


def test_flat_transpose_gives_the_misaligned_build_its_halo_rows(monkeypatch):
    """The shifted (misaligned) build holds VEC halo rows past its tile: the flat path launches it with
    the spec's shared bytes for that build, more than the aligned build's (H200 run 30: launched with the
    aligned build's bytes, the 4097 x 8191 bf16 / fp16 / int8 ops faulted)."""
    from autopad.kernels.cuda import transpose as T

    ops.reset()
    got = _recorded_launches(monkeypatch)
    _real_transpose_bound(monkeypatch, "vector")
    x = torch.randn(33, 65).to(torch.float16)
    runner.transpose_impl(x)
    fn = runner.FAST_T[(x.shape, x.dtype, -1, "auto")]
    c = _legal_pick("transpose", "cuda", (33, 65), "float16", "vector")
    got.clear()
    fn(x)  # rows of 65 halves: the shifted build
    ((_, kernel, _, _, smem, _),) = got
    assert kernel == "shifted"
    assert smem == T.SPEC.smem_bytes(c, "float16", True) > T.SPEC.smem_bytes(c, "float16")
    ops.reset()


def test_weighted_histogram_hands_float64_weights_to_a_kernel_that_reads_them(monkeypatch):
    """A weighted spec whose WEIGHT_DTYPES holds float64 (histogram_weighted's W_F64 build) gets float64
    weights as they are, with no cast pass; other weights (float16 here) are still cast to float32."""
    ops.reset()
    seen = []

    def run(ins, out):
        x, w = ins[0], ins[1]
        seen.append(w.dtype)
        out[0].zero_().index_add_(0, x.long(), w.float())
        out[1].zero_().index_add_(0, x.long(), torch.ones_like(x))

    spec = FakeSpec(
        "histogram_weighted",
        inputs_from=lambda x, bins, w: (x, w, bins),
        alloc_output=lambda ins, c: (torch.empty(ins[2]), torch.empty(ins[2], dtype=torch.int32)),
        WEIGHT_DTYPES=("float32", "float64"),
    )
    monkeypatch.setattr(
        runner,
        "bound",
        lambda plan, device: runner.Bound(
            spec, plan.shape, plan.dtype, plan.dist, device, policy.Decision((), "model"), None, run
        ),
    )
    x = torch.tensor([0, 2, 2, 3], dtype=torch.int32)
    w = torch.tensor([0.5, 1.0, 2.0, 4.0])
    s64 = runner.histogram_impl(x, 4, w.double())
    assert s64.dtype == torch.float64 and s64.tolist() == [0.5, 0.0, 3.0, 4.0]
    s16 = runner.histogram_impl(x, 4, w.half())
    assert s16.dtype == torch.float64 and s16.tolist() == [0.5, 0.0, 3.0, 4.0]
    assert seen == [torch.float64, torch.float32]
    ops.reset()
