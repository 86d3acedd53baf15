# README's "Your own kernel" example, verbatim (tests/test_readme.py checks README carries this text).
import torch

import autopad
from autopad.pattern import Pattern, load, store


class Transpose(autopad.CudaKernel):
    SOURCE = r"""#include "autopad.cuh"
    extern "C" __global__ void transpose(float* out, const float* in, int m, int n) {
        __shared__ float tile[AP_SMEM_ELEMS];
        int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
        for (int j = 0; j < TILE; j += ROWS)
            if (x < n && y + j < m) tile[AP_OFF(threadIdx.y + j, threadIdx.x)] = in[(y + j) * (size_t)n + x];
        __syncthreads();
        x = blockIdx.y * TILE + threadIdx.x, y = blockIdx.x * TILE + threadIdx.y;
        for (int j = 0; j < TILE; j += ROWS)
            if (x < m && y + j < n) out[(y + j) * (size_t)m + x] = tile[AP_OFF(threadIdx.x, threadIdx.y + j)];
    }"""
    SPACE = {"TILE": (32, 64), "ROWS": (4, 8, 16), "PAD": (0, 1, 2, 4)}
    SHAPE, BLOCK, GRID = ("M", "N"), ("TILE", "ROWS"), ("cdiv(N, TILE)", "cdiv(M, TILE)")
    LAYOUT = autopad.tile("TILE", "TILE", pad="PAD")
    PATTERN = Pattern(block=("TILE", "ROWS"), accesses=[
        store(row="ty + j", col="tx", loops={"j": (0, "TILE", "ROWS")}),
        load(row="tx", col="ty + j", loops={"j": (0, "TILE", "ROWS")})])  # fmt: skip

    def arguments(self, shape, dtype):
        m, n = shape
        return [autopad.Out((n, m)), torch.randn(m, n), m, n]

    def reference(self, x, m, n):
        return x.t()
