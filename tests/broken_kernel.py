"""A kernel spec with deliberately broken candidates, for the fault-isolation tests (GPU).

MODE 0 copies correctly; 1 reads through a misaligned 8-byte pointer (a "misaligned address" fault,
which poisons the CUDA context); 2 writes far out of bounds (an illegal address); 3 spins forever (a
hang); 4 writes a wrong value; 5 does not compile. Tuning it must pick MODE 0 and record the rest with
their reasons, in a worker process that is replaced after each fault.
"""

from __future__ import annotations

import numpy as np

from autopad.access import row_walk
from autopad.layouts import Legality, Padded

NAME = "broken_copy"
BACKEND = "cuda"
DTYPES = ("float32",)
SPACE = {"MODE": (0, 1, 2, 3, 4, 5)}
DEFAULTS = {"MODE": 0}

SOURCE = r"""
extern "C" __global__ void broken_copy(float* out, const float* in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
#if MODE == 5
    this_does_not_compile;
#endif
    if (i >= n) return;
#if MODE == 1
    const double* p = reinterpret_cast<const double*>(reinterpret_cast<const char*>(in) + 4);
    out[i] = (float)p[i % 2];
#elif MODE == 2
    out[i + (1 << 28)] = in[i];
#elif MODE == 3
    // spin on the clock for ~2^40 cycles (minutes): clock64() is volatile, so this cannot be optimised away
    // (a plain `while (spin)` on a local may be, and was: the run of 2026-11-29 finished it correctly)
    long long t0 = clock64();
    while (clock64() - t0 < (1LL << 40)) { }
    out[i] = in[i];
#elif MODE == 4
    out[i] = in[i] + (i == 7 ? 1.0f : 0.0f);
#else
    out[i] = in[i];
#endif
}
"""


def legal(c, shape, dtype):
    return Legality(c["MODE"] in SPACE["MODE"], "")


def layout(c, dtype):
    return Padded(1, 32, 4)


def smem_pattern(c, dtype):
    # every mode looks the same to the model; MODE breaks ties in the key order only
    return (row_walk(0),)


def launch_info(c, shape, dtype):
    return {"blocks": -(-shape[0] // 256), "threads": 256, "smem_bytes": 0, "tiles_per_block": 1}


def traffic(shape, dtype):
    return {"bytes": 8 * shape[0], "flops": 0}


def make_inputs(shape, dtype, device, seed, dist="uniform"):
    import torch

    g = torch.Generator(device=device).manual_seed(seed)
    return (torch.randn(shape[0], generator=g, device=device),)


def alloc_output(inputs, c):
    import torch

    return torch.empty_like(inputs[0])


def build(c, dtype):
    from autopad import cuda_runtime

    return cuda_runtime.load_kernel(SOURCE, "broken_copy", {"MODE": c["MODE"]})


def run(kernel, inputs, out):
    from autopad import cuda_runtime

    n = inputs[0].numel()
    cuda_runtime.launch(kernel, -(-n // 256), 256, (out, inputs[0], np.int32(n)))


def reference(inputs):
    return inputs[0].clone()


def check(out, ref):
    bad = int((out != ref).sum())
    return bad == 0, "exact" if bad == 0 else f"{bad} elements differ"
