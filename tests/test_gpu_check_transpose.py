"""benchmarks/gpu_check_transpose.py without a GPU: the block order it asks for on a shape too short for it
falls back through the space's own GROUP values (the measuring runs on the H200)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import gpu_check_transpose as G  # noqa: E402


def test_a_block_order_too_long_for_the_shape_falls_back_to_the_next_legal_one():
    from autopad.kernels.cuda import transpose as T

    c = dict(T.DEFAULTS, SCALAR_EDGE=0, TILE_M=64, TILE_N=64, THREADS=256, VEC=1)
    column = dict(c, GROUP=4096)
    assert G.legal_group(T, column, (16384, 16384), "float32") == 4096  # 256 tile rows: legal as asked
    # 32 tile rows: the whole-column walk is GROUP 64's there (4096 is refused as its duplicate), not 16's
    assert not T.legal(column, (2048, 2048), "float32")
    assert G.legal_group(T, column, (2048, 2048), "float32") == 64
    # 16 tile rows: GROUP 64 is refused too, 16 walks them all
    assert G.legal_group(T, column, (1000, 37), "float32") == 16
    # a request is never raised past itself
    assert G.legal_group(T, dict(c, GROUP=1), (16384, 16384), "float32") == 1
    assert G.legal_group(T, dict(c, GROUP=64), (4097, 8191), "float32") == 64
