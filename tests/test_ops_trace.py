"""autopad.ops under tracing, without a GPU: FakeTensor CUDA inputs through the fake implementations,
``make_fx``, ``torch.compile(fullgraph=True)`` and ``torch.export`` each see one autopad node per call.

Fake CUDA tensors are built from meta tensors (a CPU-only torch cannot allocate, or guard, a CUDA device);
nothing here runs a kernel, and eager autograd on fake CUDA tensors is avoided (torch aborts on it).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode  # noqa: E402
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402

import autopad  # noqa: E402
from autopad import ops  # noqa: E402

MODE = FakeTensorMode()


def fake(*shape, dtype=torch.float32):
    """A fake tensor on cuda:0 (contiguous), usable without CUDA."""
    return FakeTensor(MODE, torch.empty(*shape, device="meta", dtype=dtype), torch.device("cuda", 0))


def autopad_nodes(gm):
    return [str(n.target) for n in gm.graph.nodes if n.op == "call_function" and "autopad" in str(n.target)]


def test_operators_exist_after_import_with_torch():
    ops.register()
    for name in ("transpose", "histogram", "matmul"):
        assert hasattr(torch.ops.autopad, name)
    assert ops.transpose.__module__ == "autopad.ops.api"  # the fast function replaced the lazy one


@pytest.mark.parametrize(
    "shape, want",
    [((5, 7), (7, 5)), ((3, 5, 7), (3, 7, 5)), ((2, 3, 5, 7), (2, 3, 7, 5)), ((1, 9), (9, 1))],
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool, torch.complex64])
def test_fake_transpose_is_exact_about_shape_dtype_and_strides(shape, want, dtype):
    with MODE:
        y = ops.transpose(fake(*shape, dtype=dtype))
    assert tuple(y.shape) == want and y.dtype == dtype and y.device == torch.device("cuda", 0)
    assert y.is_contiguous()


@pytest.mark.parametrize(
    "vdtype, wdtype, out",
    [
        (torch.int32, None, torch.int32),
        (torch.int64, None, torch.int32),
        (torch.uint8, torch.float32, torch.float32),  # torch.bincount: float32 weights keep float32
        (torch.int32, torch.float64, torch.float64),
        (torch.int32, torch.float16, torch.float64),  # ... any other weights give float64
    ],
)
def test_fake_histogram_dtypes(vdtype, wdtype, out):
    with MODE:
        w = None if wdtype is None else fake(100, dtype=wdtype)
        h = ops.histogram(fake(100, dtype=vdtype), 4096, weights=w)
    assert tuple(h.shape) == (4096,) and h.dtype == out


def test_fake_matmul_shape_and_dtype():
    with MODE:
        c = ops.matmul(fake(3, 4, dtype=torch.bfloat16), fake(4, 6, dtype=torch.bfloat16))
    assert tuple(c.shape) == (3, 6) and c.dtype == torch.bfloat16 and c.is_contiguous()


def test_meta_tensors_take_the_fake_implementation():
    y = torch.ops.autopad.transpose(torch.empty(3, 4, device="meta"))
    assert y.device.type == "meta" and tuple(y.shape) == (4, 3)


def test_fake_implementations_reject_what_the_kernels_cannot_do():
    with MODE, pytest.raises(RuntimeError, match="K"):
        torch.ops.autopad.matmul(fake(3, 4), fake(5, 6))
    with MODE, pytest.raises(RuntimeError, match="1-D"):
        torch.ops.autopad.histogram(fake(4, 4, dtype=torch.int32), 16)


def _model(x, a, b, v):
    y = ops.transpose(x) * 2
    return y, ops.matmul(a, b), ops.histogram(v, 256)


def _args():
    return fake(5, 7), fake(3, 4), fake(4, 6), fake(100, dtype=torch.int32)


def test_make_fx_records_one_node_per_call():
    with MODE:
        gm = make_fx(_model)(*_args())
    assert autopad_nodes(gm) == [
        "autopad.transpose.default",
        "autopad.matmul.default",
        "autopad.histogram.default",
    ]


def test_torch_compile_fullgraph_sees_the_operators_and_never_autopads_python():
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    out = torch.compile(_model, backend=backend, fullgraph=True)(*_args())
    assert len(graphs) == 1  # one graph: no break
    assert [n for n in autopad_nodes(graphs[0])] == [
        "autopad.transpose",
        "autopad.matmul",
        "autopad.histogram",
    ]
    calls = [n for n in graphs[0].graph.nodes if n.op in ("call_function", "call_method", "call_module")]
    assert len(calls) == 4  # the three operators and the multiply: nothing else was traced
    assert tuple(out[0].shape) == (7, 5) and tuple(out[2].shape) == (256,)


@pytest.mark.parametrize("strict", [False, True])
def test_torch_export_keeps_the_operators(strict):
    class M(torch.nn.Module):
        def forward(self, x, a, b, v):
            return _model(x, a, b, v)

    with MODE:
        ep = torch.export.export(M(), _args(), strict=strict)
    names = [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]
    assert [n for n in names if "autopad" in n] == [
        "autopad.transpose.default",
        "autopad.matmul.default",
        "autopad.histogram.default",
    ]


def test_record_collects_shapes_from_fake_calls_for_pretune(tmp_path):
    with ops.record() as rec:
        with MODE:
            _model(*_args())
            ops.histogram(fake(1000, dtype=torch.int64), 4096, weights=fake(1000))
            _model(*_args())  # a repeated call is recorded once
    assert rec.lines() == [
        "transpose 5x7 float32",
        "matmul 3x6x4 float32",
        "histogram 100x256 int32",
        "histogram 1000x4096 int64 weights=float32",
    ]
    again = ops.load_items(rec.save(tmp_path / "shapes.txt"))
    assert again == rec.items
    with MODE:
        _model(*_args())
    assert len(rec) == 4  # outside the block nothing more is recorded


def test_import_autopad_alone_defines_nothing_and_imports_no_torch():
    import subprocess
    import sys

    code = (
        "import sys, autopad, autopad.ops as o; "
        "print('torch' in sys.modules, o.transpose.__module__, o.TUNE_MODES)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split()[0] == "False" and "autopad.ops" in out and "offline" in out
    code = "import torch, autopad; print(hasattr(torch.ops.autopad, 'transpose'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True"
    assert autopad.ops is ops
