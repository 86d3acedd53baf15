"""Histogram: legality, interpreter runs on uniform, all-equal and skewed data, (gpu) exact counts."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

H = pytest.importorskip("autopad.kernels.triton.histogram")


def test_legal():
    assert H.legal(H.DEFAULTS, (1 << 20, 256), "int32")
    assert not H.legal(H.DEFAULTS, (1 << 20, 100), "int32")  # tl.histogram needs power-of-two bins
    assert not H.legal({**H.DEFAULTS, "R": 1, "PAD": 32}, (1 << 20, 256), "int32")
    assert not H.legal(H.DEFAULTS, (1 << 20, 256), "float32")
    assert H.smem_pattern(H.DEFAULTS, "int32") == ()
    assert H.layout(H.textbook((1, 256), "int32"), "int32").footprint == 8 * (256 + 32) * 4


_INTERP = r"""
import os
os.environ["TRITON_INTERPRET"] = "1"
from autopad.kernels.triton import histogram as H
for n, bins in [(1, 16), (4097, 16), (3000, 64)]:
    for dist in ("uniform", "equal", "skewed"):
        x = H.make_inputs((n, bins), "int32", "cpu", seed=n, dist=dist)
        b = H.build({"BLOCK": 1024, "ITERS": 2, "WARPS": 4, "R": 4, "PAD": 32}, "int32")
        for _ in range(2):  # the reduce kernel re-zeroes the replicas: a second call must not double count
            out = H.alloc_output(x).fill_(-7)
            H.run(b, x, out)
            ok, why = H.check(out, H.reference(x))
            assert ok, (n, bins, dist, why)
print("OK")
"""


def test_histogram_under_interpreter():
    pytest.importorskip("triton")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    r = subprocess.run([sys.executable, "-c", _INTERP], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr[-3000:]


@pytest.mark.gpu
@pytest.mark.parametrize("bins", [16, 256, 1024])
def test_histogram_exact_on_gpu(bins):
    import torch

    for c in (H.DEFAULTS, H.textbook((1, bins), "int32"), {**H.DEFAULTS, "R": 32, "PAD": 32, "ITERS": 4}):
        built = H.build(c, "int32")
        for n in (1, 31, 33, 1000 * 37, 4097 * 8191):
            for dist in ("uniform", "equal", "skewed"):
                x = H.make_inputs((n, bins), "int32", "cuda", seed=n % 97, dist=dist)
                for _ in range(2):
                    out = H.alloc_output(x).fill_(-1)
                    H.run(built, x, out)
                    torch.cuda.synchronize()
                    ok, why = H.check(out, H.reference(x))
                    assert ok, (c, n, bins, dist, why)
