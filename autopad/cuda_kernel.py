"""``CudaKernel``: the spec base for a raw CUDA kernel, compiled with NVRTC per candidate and launched
through autopad.cuda_runtime.

What: the source (``SOURCE`` or ``SOURCE_FILE``), the ``extern "C" __global__`` function's name (found in
the source, ``_KERNEL_RE``), the ``-D`` defines of a candidate (its constants and the layout's ``AP_*``
parameters), ``build`` (load the kernel) and ``run`` (Python scalars as int32 / float32, the launch
geometry from GRID and BLOCK).

Why apart: the only part of a CUDA spec that knows about CUDA; what every spec shares is in
kernel_base.py. Moved from autopad/bases.py unchanged; ``autopad.bases`` re-exports every name. torch and
the CUDA runtime load only inside ``build`` and ``run``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .kernel_args import _shape_of
from .kernel_base import KernelBase
from .spec import SpecError

__all__ = ["CudaKernel"]

_KERNEL_RE = re.compile(r'extern\s+"C"\s+__global__\s+(?:__launch_bounds__\([^)]*\)\s+)?void\s+(\w+)\s*\(')


@dataclass(frozen=True)
class _BuiltCuda:
    kernel: Any
    constants: dict
    dtype: str


class CudaKernel(KernelBase):
    """A raw CUDA kernel: ``SOURCE`` (or ``SOURCE_FILE``), compiled at run time with NVRTC per candidate.

    Every constant of the candidate is a ``#define``, and so are the layout's parameters under fixed names
    (``AP_PAD``, ``AP_SW_VEC``, ... and ``AP_OFF(r, c)``, see kernels/cuda/autopad.cuh). ``KERNEL`` names
    the ``extern "C" __global__`` function (found in the source when there is one). Shared memory is
    static by default (``__shared__ T tile[AP_SMEM_ELEMS]``); set ``DYNAMIC_SMEM = True`` for
    ``extern __shared__``, and the launch passes the layout's footprint. Python ints are passed as
    ``int``, floats as ``float``; give numpy scalars (``np.int64(n)``) for other widths.
    """

    BACKEND = "cuda"
    SOURCE: str = ""
    SOURCE_FILE: str | None = None
    KERNEL: str | None = None
    DYNAMIC_SMEM: bool = False

    def source(self) -> str:
        if self.SOURCE_FILE:
            from pathlib import Path

            return Path(self.SOURCE_FILE).read_text()
        if not self.SOURCE:
            raise SpecError(f"SOURCE: {type(self).__name__} has no CUDA source (set SOURCE or SOURCE_FILE)")
        return self.SOURCE

    def cache_source(self) -> str:
        return self.source() + "\n" + super().cache_source()

    def kernel_name(self) -> str:
        if self.KERNEL:
            return self.KERNEL
        found = _KERNEL_RE.findall(self.source())
        if len(found) != 1:
            raise SpecError(
                f'KERNEL: the source has {len(found)} extern "C" __global__ functions ({found}); '
                "set KERNEL to the one to tune"
            )
        return found[0]

    def defines(self, constants: Mapping[str, int], dtype: str) -> dict[str, int]:
        d: dict[str, int] = {k: int(v) for k, v in constants.items()}
        d["AP_ELEM_BYTES"] = self._e(dtype)
        if self.LAYOUT is not None:
            lay = self.layout(constants, dtype)
            for k, v in getattr(lay, "cuda_defines", dict)().items():
                d[f"AP_{k}"] = int(v)
            for name in ("rows", "cols"):
                if hasattr(lay, name):
                    d[f"AP_{name.upper()}"] = int(getattr(lay, name))
            d["AP_SMEM_ELEMS"] = -(-int(lay.footprint) // self._e(dtype))
        return d

    def build(self, constants: Mapping[str, int], dtype: str) -> _BuiltCuda:
        from . import cuda_runtime

        k = cuda_runtime.load_kernel(self.source(), self.kernel_name(), self.defines(constants, dtype))
        return _BuiltCuda(k, dict(constants), dtype)

    def run(self, built: _BuiltCuda, inputs: Sequence[Any], out: Any) -> None:
        import torch

        from . import cuda_runtime

        args = []
        for a in self._fill(inputs, out):
            if isinstance(a, torch.Tensor):
                args.append(a)
            elif isinstance(a, bool):
                args.append(np.int32(a))
            elif isinstance(a, int):
                args.append(np.int32(a))
            elif isinstance(a, float):
                args.append(np.float32(a))
            else:
                args.append(a)
        shape = _shape_of(inputs)
        grid = self.grid(built.constants, shape, built.dtype)
        block = self.block(built.constants, shape, built.dtype)
        smem = self.smem_bytes(built.constants, built.dtype) if self.DYNAMIC_SMEM else 0
        cuda_runtime.launch(built.kernel, grid, block, args, smem)
