"""autopad.ops autograd, and which calls take the fast path, without a GPU.

The operators' CUDA kernels are replaced for these tests by CPU kernels (torch's own answers, registered on
the CPU key of ``autopad::*`` for the test's duration, over the operators' own CPU kernels, which refuse
CPU tensors), so that autograd's formulas, their use of autopad's own operators in the backward, and the
public functions' routing can be checked on real CPU tensors.
"""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")

from autopad import ops  # noqa: E402
from autopad.ops import api, registry, runner  # noqa: E402


@pytest.fixture
def cpu_kernels():
    """CPU kernels for the three operators; yields the list of (op, shapes) they were called with."""
    ops.register()
    lib = torch.library.Library("autopad", "IMPL")
    calls = []

    def transpose(x, backend="auto"):
        calls.append(("transpose", tuple(x.shape)))
        return x.transpose(-1, -2).contiguous()

    def histogram(x, bins, weights=None, dist=None, backend="auto"):
        calls.append(("histogram", tuple(x.shape)))
        keep = (x >= 0) & (x < bins)
        if weights is None:
            return torch.bincount(x[keep].long(), minlength=bins).int()
        dt = torch.float32 if weights.dtype == torch.float32 else torch.float64
        return torch.zeros(bins, dtype=dt).index_add_(0, x[keep].long(), weights[keep].to(dt))

    def matmul(a, b, backend="auto"):
        calls.append(("matmul", tuple(a.shape), tuple(b.shape)))
        return a @ b

    with warnings.catch_warnings():  # these replace the operators' own CPU kernels (which refuse)
        warnings.filterwarnings("ignore", "Warning only once for all operators")
        for name, fn in (("transpose", transpose), ("histogram", histogram), ("matmul", matmul)):
            lib.impl(name, fn, "CPU")
    yield calls
    lib._destroy()


def test_transpose_gradient_is_autopads_transpose_of_the_gradient(cpu_kernels):
    x = torch.randn(5, 7, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: torch.ops.autopad.transpose(t), (x,))
    cpu_kernels.clear()
    y = torch.ops.autopad.transpose(x)
    assert y.requires_grad
    (y * torch.arange(35.0, dtype=torch.float64).view(7, 5)).sum().backward()
    assert torch.equal(x.grad, torch.arange(35.0, dtype=torch.float64).view(7, 5).t())
    assert cpu_kernels == [("transpose", (5, 7)), ("transpose", (7, 5))]  # forward, then the backward


def test_transpose_backward_takes_an_expanded_gradient(cpu_kernels):
    x = torch.randn(3, 4, 6, requires_grad=True)
    torch.ops.autopad.transpose(x).sum().backward()  # the gradient of sum() is an expanded (stride 0) tensor
    assert torch.equal(x.grad, torch.ones(3, 4, 6))


def test_matmul_gradients_run_autopads_matmul_and_transpose(cpu_kernels):
    a = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    b = torch.randn(4, 5, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda p, q: torch.ops.autopad.matmul(p, q), (a, b))
    cpu_kernels.clear()
    a2 = a.detach().requires_grad_()
    torch.ops.autopad.matmul(a2, b.detach()).sum().backward()  # only A wants a gradient
    assert [c[0] for c in cpu_kernels] == ["matmul", "transpose", "matmul"]
    assert torch.allclose(a2.grad, torch.ones(3, 5, dtype=torch.float64) @ b.detach().t())


def test_histogram_counts_are_integers_and_weights_get_gradients(cpu_kernels):
    x = torch.tensor([0, 2, 2, 5, -1, 9, 3], dtype=torch.int32)
    h = torch.ops.autopad.histogram(x, 6)
    assert h.dtype == torch.int32 and not h.requires_grad
    assert h.tolist() == [1, 0, 2, 1, 0, 1]
    w = torch.rand(7, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda v: torch.ops.autopad.histogram(x, 6, v), (w,))
    g = torch.arange(6.0, dtype=torch.float64)
    (torch.ops.autopad.histogram(x, 6, w) * g).sum().backward()
    # value i's weight gets its bin's gradient; -1 and 9 fall outside [0, 6): no gradient
    assert w.grad.tolist() == [0.0, 2.0, 2.0, 5.0, 0.0, 0.0, 3.0]


def test_joint_graph_of_aot_autograd_holds_autopads_operators(cpu_kernels):
    from functorch.compile import aot_function, make_boxed_func

    graphs = {}

    def keep(name):
        def compiler(gm, example_inputs):
            graphs[name] = gm
            return make_boxed_func(gm.forward)

        return compiler

    f = aot_function(lambda a, b: torch.ops.autopad.matmul(a, b).sum(), keep("fw"), keep("bw"))
    a, b = torch.randn(3, 4, requires_grad=True), torch.randn(4, 5, requires_grad=True)
    f(a, b).backward()
    bw = [str(n.target) for n in graphs["bw"].graph.nodes if n.op == "call_function"]
    assert bw.count("autopad.matmul.default") == 2 and bw.count("autopad.transpose.default") == 2
    assert torch.allclose(b.grad, a.detach().t() @ torch.ones(3, 5))


@pytest.fixture
def routed(cpu_kernels, monkeypatch):
    """The public functions on CPU tensors: argument checks off, and a fast closure bound for the CPU key
    (device -1) of a 4x6 float32 transpose that records its use."""
    monkeypatch.setattr(registry, "check_transpose", lambda *a: None)
    fast_calls = []

    def fast(x):
        fast_calls.append(tuple(x.shape))
        return x.t().contiguous()

    key = (torch.Size([4, 6]), torch.float32, -1, "auto")
    monkeypatch.setitem(runner.FAST_T, key, fast)
    return fast_calls, cpu_kernels


def test_plain_eager_call_takes_the_bound_kernel_directly(routed):
    fast_calls, op_calls = routed
    x = torch.randn(4, 6)
    assert torch.equal(api.transpose(x), x.t())
    assert fast_calls == [(4, 6)] and op_calls == []
    with torch.no_grad():
        api.transpose(x.requires_grad_())  # a gradient is not wanted under no_grad
    assert len(fast_calls) == 2 and op_calls == []


@pytest.mark.parametrize(
    "how",
    ["requires_grad", "non_contiguous", "make_fx", "dispatch_mode", "other_shape"],
)
def test_everything_else_goes_through_the_operator(routed, how):
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.utils._python_dispatch import TorchDispatchMode

    fast_calls, op_calls = routed
    x = torch.randn(4, 6)
    if how == "requires_grad":
        y = api.transpose(x.requires_grad_())
        y.sum().backward()
        assert torch.equal(x.grad, torch.ones(4, 6))
    elif how == "non_contiguous":
        api.transpose(torch.randn(6, 4).t())
    elif how == "make_fx":
        gm = make_fx(lambda t: api.transpose(t))(x)
        assert "autopad.transpose.default" in str(gm.code)
    elif how == "dispatch_mode":

        class Seen(TorchDispatchMode):
            ops = []

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                Seen.ops.append(str(func))
                return func(*args, **(kwargs or {}))

        with Seen():
            api.transpose(x)
        assert "autopad.transpose.default" in Seen.ops
    else:
        api.transpose(torch.randn(5, 6))
    assert fast_calls == [] and op_calls


def test_torch_compile_traces_the_operator_not_the_fast_path(routed):
    fast_calls, op_calls = routed
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    x = torch.randn(4, 6)
    out = torch.compile(lambda t: api.transpose(t) + 1, backend=backend, fullgraph=True)(x)
    assert torch.equal(out, x.t() + 1)
    assert "torch.ops.autopad.transpose" in graphs[0].code and fast_calls == []
