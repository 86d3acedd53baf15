"""How the histogram's compiled kernels are launched: the launcher a timed run calls, the compiled kernels
with their per-device workspace, and the device facts the launch reads.

A call zeroes the output (``hist_zero``) and launches the passes, each through
``cuda_runtime.prepare_launch`` (the geometry and the shared-memory opt-in done once) and, on sm_90, as a
programmatic dependent launch that overlaps the kernel before it; the 16-bit counters' path adds the
workspace reduce (``hist16_reduce``, RED_SPLIT row groups) in plain stream order. The grid is
BLOCKS_PER_SM x the GPU's own SM count, and an input view that does not start on 16 bytes is copied first
(the kernels read 16 bytes a load).

Why a module of its own: this is the measuring side's launch (torch and the CUDA runtime, imported only
inside the functions), apart from the model's (histogram_pattern.py, histogram_cost.py); the weighted
histogram (histogram_weighted.py) launches through the same ``launch_fn`` and ``Built``. The names the
launchers read (``launch_fn``, ``_sm_count``, ``_sm90``, ``_aligned``) are read from this module, here and
by histogram_weighted.py (histogram.py only re-exports them): patch them here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .histogram import HistogramCuda

__all__ = ["RED_SPLIT", "Built", "launch_fn", "launcher"]


RED_SPLIT = 4  # hist16_reduce: row groups, each adding its partial sums atomically


def launch_fn(kernel: Any, grid: Any, block: Any, smem: int, overlap: bool = False) -> Any:
    """``args -> None`` launching ``kernel``: ``cuda_runtime.prepare_launch`` where it exists (the geometry
    and the shared-memory opt-in done once; ``overlap`` as there), else ``cuda_runtime.launch``."""
    from autopad import cuda_runtime

    prep = getattr(cuda_runtime, "prepare_launch", None)
    if prep is not None:
        return prep(kernel, grid, block, smem, overlap=overlap)

    def fire(args: tuple) -> None:
        cuda_runtime.launch(kernel, grid, block, args, smem)

    return fire


@dataclass(frozen=True, eq=False)
class Built:
    """Compiled kernels (main, and for 16-bit counters the reduce) and a per-device workspace cache."""

    kernels: tuple
    constants: dict
    dtype: str
    _work: dict = field(default_factory=dict)

    def launcher(self, spec: Any, shape: tuple[int, ...]) -> Any:
        """``spec.launcher`` for this shape and device, made once: ``run`` in a timing loop only launches."""
        import torch

        key = ("launcher", shape, torch.cuda.current_device())
        if key not in self._work:
            self._work[key] = spec.launcher(self, shape, self.dtype)
        return self._work[key]

    def workspace(self, device: Any, words: int) -> Any:
        import torch

        key = (str(device), words)
        if key not in self._work:
            self._work[key] = torch.empty(words, dtype=torch.int32, device=device)
        return self._work[key]


_PROPS: dict[int, Any] = {}


def _props() -> Any:
    """torch's properties of the current device, fetched once per device."""
    import torch

    dev = torch.cuda.current_device()
    if dev not in _PROPS:
        _PROPS[dev] = torch.cuda.get_device_properties(dev)
    return _PROPS[dev]


def _sm90() -> bool:
    """Programmatic dependent launch is sm_90's: elsewhere the passes are launched in plain order (the wait
    compiles to nothing there, so the attribute must not let them overlap)."""
    p = _props()
    return (p.major, p.minor) >= (9, 0)


def _sm_count() -> int:
    return _props().multi_processor_count


def _aligned(x: Any) -> Any:
    """The kernels read 16 bytes per load: a view that does not start on 16 bytes is copied (rare)."""
    x = x if x.is_contiguous() else x.contiguous()
    return x.clone() if x.data_ptr() % 16 else x


def launcher(spec: HistogramCuda, built: Built, shape: tuple[int, ...], dtype: str = "int32") -> Any:
    """A function (inputs, out) -> None with the grid, shared memory and scalars precomputed (through
    ``cuda_runtime.prepare_launch``): a call zeroes ``out`` (``hist_zero``) and launches the passes.
    Each pass is launched to overlap the kernel before it (sm_90's programmatic dependent launch): it
    counts its input into shared memory while that kernel finishes and waits for it only before it
    adds to ``out``, so the zeroing's launch and the gap between passes are hidden."""
    c = built.constants
    n, bins = int(shape[0]), int(shape[1])
    blocks = _sm_count() * c["BLOCKS_PER_SM"]
    smem = spec.smem_bytes(c, built.dtype)
    zero = launch_fn(built.kernels[-1], min(-(-bins // 256), 1024), 256, 0)
    b32 = np.int32(bins)
    if c.get("COUNTER", 32) == 16:
        words = -(-bins // 2)
        main = launch_fn(built.kernels[0], blocks, c["THREADS"], smem, overlap=_sm90())
        red = launch_fn(built.kernels[1], (-(-words // 256), RED_SPLIT), 256, 0)
        n64, rows = np.int64(n), np.int32(blocks)

        def go16(inputs: Any, out: Any) -> None:
            x = _aligned(inputs[0])
            ws = built.workspace(x.device, blocks * c["BINS_PER_PASS"] // 2)
            zero((out, b32))
            main((out, ws, x, n64, b32))
            red((out, ws, rows, b32))  # reads the workspace: in plain stream order

        return go16
    args = [(np.int64(n), np.int32(lo), b32) for lo in range(0, bins, c["BINS_PER_PASS"])]
    kern = launch_fn(built.kernels[0], blocks, c["THREADS"], smem, overlap=_sm90())

    def go(inputs: Any, out: Any) -> None:
        x = _aligned(inputs[0])
        zero((out, b32))
        for a in args:
            kern((out, x, *a))

    return go
