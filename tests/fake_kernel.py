"""A fake kernel spec for CPU tests: a 32-wide fp32 tile transpose with real layouts and patterns.

Its space (TILE x PAD x VEC) and access pattern are real, so the model ranks it as it would a real
transpose; build/run do nothing (tests pair it with a fake benchmarker).
"""

from __future__ import annotations

from autopad.access import block_tile
from autopad.layouts import Legality, Padded
from autopad.spec import DTYPE_BYTES

NAME = "fake_transpose"
BACKEND = "cuda"
DTYPES = ("float32", "float16")
SPACE = {"TILE": (32, 64), "PAD": (0, 1, 2, 4), "VEC": (1, 2)}
DEFAULTS = {"TILE": 32, "PAD": 0, "VEC": 1}
BLOCK_Y = 8


def textbook(shape, dtype):
    return {"TILE": 32, "PAD": 1, "VEC": 1}


def layout(constants, dtype):
    t = constants["TILE"]
    return Padded(t, t, DTYPE_BYTES[dtype], pad=constants["PAD"])


def legal(constants, shape, dtype):
    if constants["TILE"] // constants["VEC"] > 64:
        return Legality(False, "too many threads per row")
    return layout(constants, dtype).check(constants["VEC"])


def smem_pattern(constants, dtype):
    t, v, e = constants["TILE"], constants["VEC"], DTYPE_BYTES[dtype]
    bx = t // v
    write = block_tile(t, t, bx, BLOCK_Y, "store", e, v)
    read = block_tile(t, t, bx, BLOCK_Y, "load", e, v, transposed=True)
    return write + read


def launch_info(constants, shape, dtype):
    t = constants["TILE"]
    blocks = -(-shape[0] // t) * -(-shape[1] // t)
    return {
        "blocks": blocks,
        "threads": t // constants["VEC"] * BLOCK_Y,
        "smem_bytes": layout(constants, dtype).footprint,
        "tiles_per_block": 1,
    }


def traffic(shape, dtype):
    return {"bytes": 2 * shape[0] * shape[1] * DTYPE_BYTES[dtype], "flops": 0}


def make_inputs(shape, dtype, device, seed, dist="uniform"):
    raise AssertionError("the fake kernel never runs")


alloc_output = build = run = reference = check = make_inputs
