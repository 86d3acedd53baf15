"""Where a launch goes: this thread's current CUDA context, torch's current stream, the shared-memory opt-in.

What: the per-thread and per-device state that both launch paths (``cuda_launch``'s cuda.core one and
``cuda_driver``'s ctypes one) share: ``_torch_hooks`` (torch's C entry points for the current device and its
raw current stream, the cheapest ways to ask), ``_make_current`` (the device's primary context made current
for cuda.core, once per thread: ``_CURRENT``), ``_stream_for`` (the cuda.core Stream wrapping a raw stream,
kept per device in ``_STREAMS``), ``_raise_smem_limit`` (the opt-in above 48 KB of dynamic shared memory)
and ``_on_device`` (a call made with another device current).

Why a module of its own: the two launch paths need it and the cuda.core one falls back on the other, so it
sits below both. Split out of ``cuda_runtime``, which re-exports every name. ``_torch_hooks``,
``_stream_for`` and ``_STREAMS`` are read by the launch modules through this module (``cuda_context.X``), and
``_cuda_core`` here through ``cuda_compile``, so that a patch of the module that defines one (the CPU tests'
fakes: tests/cuda_fakes.py) reaches every reader.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from . import cuda_compile

_STREAMS: dict[int, dict[int, Any]] = {}  # device -> raw cudaStream_t -> cuda.core Stream
_MAX_STREAMS = 256  # per device; a program that makes streams without end must not grow this without end
_CURRENT = threading.local()  # which device this thread has made current for cuda.core
_SMEM_RAISED: dict[tuple[int, int], int] = {}


def _raise_smem_limit(kernel: Any, device: int, nbytes: int) -> None:
    """Dynamic shared memory above 48 KB needs the kernel's opt-in attribute raised first."""
    if nbytes <= 48 * 1024:
        return
    key = (id(kernel), device)
    if _SMEM_RAISED.get(key, 0) >= nbytes:
        return
    from cuda.bindings import driver

    attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    (err,) = driver.cuKernelSetAttribute(attr, int(nbytes), kernel.handle, driver.CUdevice(device))
    if int(err) != 0:  # older drivers: set it on the context's CUfunction instead
        err2, fn = driver.cuKernelGetFunction(kernel.handle)
        (err,) = driver.cuFuncSetAttribute(fn, attr, int(nbytes)) if int(err2) == 0 else (err2,)
    if int(err) != 0:
        raise RuntimeError(f"raising the dynamic shared memory limit to {nbytes} bytes failed: {err}")
    _SMEM_RAISED[key] = nbytes


def _torch_hooks() -> tuple[Callable[[], int], Callable[[int], int], type]:
    """(current device, raw current stream of a device, the Tensor type): torch's C entry points, the
    cheapest ways to ask (the Python ``torch.cuda.current_stream()`` builds a Stream object per call)."""
    import torch

    get_dev = getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is None:

        def raw(device: int) -> int:
            return int(torch.cuda.current_stream(device).cuda_stream)

    return get_dev, raw, torch.Tensor


def _make_current(device: int) -> None:
    """Make ``device``'s primary context current on this thread, for cuda.core (once per thread)."""
    if getattr(_CURRENT, "device", None) != device:
        # cuda.core's current device is per thread: a kernel built in a worker thread is launched from
        # another one (the benchmark compiles in parallel, then times on the main thread)
        cuda_compile._cuda_core().Device(device).set_current()
        _CURRENT.device = device


def _stream_for(device: int, ptr: int) -> Any:
    """The cuda.core Stream wrapping torch's current stream of ``device`` (raw pointer ``ptr``)."""
    import torch

    by_ptr = _STREAMS.setdefault(device, {})
    s = by_ptr.get(ptr)
    if s is None:
        ts = torch.cuda.current_stream(device)
        if int(ts.cuda_stream) != ptr:  # the caller's pointer is stale: wrap the stream that is current
            ptr = int(ts.cuda_stream)
        if len(by_ptr) >= _MAX_STREAMS:
            by_ptr.clear()
        s = by_ptr[ptr] = cuda_compile._cuda_core().Device(device).create_stream(ts)
    return s


def _on_device(dev: int, fn: Callable[..., None], args: Sequence[Any]) -> None:
    """Call ``fn(*args)`` with ``dev`` made torch's current device (the caller's was another)."""
    import torch

    with torch.cuda.device(dev):
        _CURRENT.device = None
        fn(*args)
    # leaving the guard, torch made its previous device's primary context current again
    _CURRENT.device = None
