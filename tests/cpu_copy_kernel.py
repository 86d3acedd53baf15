"""A kernel spec that runs on CPU tensors, for the worker's measuring loop without a GPU
(tests/test_bench_local.py): MODE 0 copies, 1 writes nothing (the poisoned output must catch it even when
the candidate before wrote the right answer into the same buffer), 2 copies one value wrong. ``SEEN``
records, per run, the input's and output's data pointers, the input's first value and whether the output
came in poisoned (all NaN)."""

from __future__ import annotations

# the static parts, the output, the reference and the check are broken_kernel's (the same 1-D float copy)
from broken_kernel import alloc_output, check, layout, reference, smem_pattern, traffic  # noqa: F401

from autopad.layouts import Legality

NAME = "cpu_copy"
BACKEND = "cuda"
DTYPES = ("float32",)
SPACE = {"MODE": (0, 1, 2)}
DEFAULTS = {"MODE": 0}
SEEN: list[tuple[int, int, float, bool]] = []


def legal(c, shape, dtype):
    return Legality(c["MODE"] in SPACE["MODE"], "")


def launch_info(c, shape, dtype):
    return {"blocks": 1, "threads": 32, "smem_bytes": 0, "tiles_per_block": 1}


def make_inputs(shape, dtype, device, seed, dist="uniform"):
    import torch

    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape[0], generator=g), 3)


def build(c, dtype):
    return c["MODE"]


def run(mode, inputs, out):
    x = inputs[0]
    SEEN.append((x.data_ptr(), out.data_ptr(), float(x[0]), bool(out.isnan().all())))
    if mode != 1:
        out.copy_(x)
    if mode == 2:
        out[5] += 1.0
