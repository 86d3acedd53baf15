"""autopad.ops.pitch: row-pitched 2-D tensors for the GEMM (CPU; the GEMM itself: test_ops_gpu.py)."""

from __future__ import annotations

import types

import pytest

torch = pytest.importorskip("torch")

from autopad import ops  # noqa: E402
from autopad.ops.pitch import _pitch, is_pitched  # noqa: E402


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32, torch.int8, torch.float64])
@pytest.mark.parametrize("cols", [1, 63, 64, 1000, 5000, 8191])
def test_rows_start_on_128_byte_boundaries(dtype, cols):
    t = ops.empty_pitched(7, cols, dtype)
    e = t.element_size()
    assert t.shape == (7, cols) and t.stride(1) == 1
    assert (t.stride(0) * e) % 128 == 0 and t.stride(0) >= cols
    assert (t.stride(0) - cols) * e < 128  # the least padding that does it
    assert is_pitched(t)


def test_pitch_arithmetic_and_bad_arguments():
    assert _pitch(5000, 2, 128) == 5056 and _pitch(1000, 2, 128) == 1024 and _pitch(64, 2, 128) == 64
    assert _pitch(5000, 2, 256) == 5120
    for bad in (8, 100, 3):
        with pytest.raises(ValueError, match="align"):
            ops.empty_pitched(4, 4, torch.float16, align=bad)
    with pytest.raises(ValueError, match="rows and cols"):
        ops.empty_pitched(-1, 4, torch.float16)
    with pytest.raises(ValueError, match="2-D"):
        ops.pitched(torch.zeros(3, 4, 5))


def test_pitched_copies_into_a_padded_view_and_keeps_one_as_is():
    x = torch.randn(33, 1001).to(torch.bfloat16)
    y = ops.pitched(x)
    assert torch.equal(x, y) and y.stride() == (1024, 1)
    assert ops.pitched(y) is y or y.data_ptr() % 128  # already pitched (if the allocator aligned it)


def test_what_counts_as_pitched():
    wide = torch.zeros(16, 64, dtype=torch.float16)
    assert is_pitched(wide[:, :40])  # a column slice of a wider tensor: rows 128 bytes apart
    assert not is_pitched(wide.t())  # column-major
    assert not is_pitched(torch.zeros(16, 13, dtype=torch.float16))  # 26-byte rows
    flat = torch.zeros(16 * 64 + 8, dtype=torch.float16)
    assert not is_pitched(flat[1:1025].view(16, 64))  # 2 bytes past an aligned address
    assert not is_pitched(torch.zeros(4, 4, 4, dtype=torch.float16))


def test_only_the_tma_gemm_takes_a_pitched_operand_as_is():
    from autopad.ops.runner import _reads_strides

    def bound(backend, params):
        return types.SimpleNamespace(
            spec=types.SimpleNamespace(BACKEND=backend), decision=types.SimpleNamespace(params=params)
        )

    gluon = {"BM": 128, "BN": 256, "BK": 64, "SWIZZLE": 128, "PATH": 0}
    assert _reads_strides(bound("triton", gluon))
    assert not _reads_strides(bound("triton", {**gluon, "PATH": 1}))  # tl.dot: pointer arithmetic, contiguous
    assert not _reads_strides(bound("cuda", {"BM": 128, "BN": 128}))  # the SIMT GEMM
