"""Load a cubin as a ``cuda.core`` kernel and launch it on torch's current stream, ad hoc or prepared.

What: ``load_kernel`` (compiled by ``cuda_compile`` for the device's arch, kept per cubin, name and
device), ``launch`` (an ad hoc launch; its LaunchConfigs kept per geometry) and ``prepare_launch`` (what does
not change from call to call done once: the device, the dynamic shared-memory opt-in, the launch
configuration; a call costs the current stream's raw pointer, the tensors' pointers and the launch itself).
``prepare_launch`` uses ``cuda_driver``'s direct path where it can, else cuda.core's ``launch``.

Why: ``autopad.ops`` binds one prepared launch per tuned shape; ``launch`` keeps the same caches for callers
that launch ad hoc (the benchmark, the probes). Nothing here is imported by ``import autopad``: cuda.core and
torch load inside the functions. Split out of ``cuda_runtime``, which re-exports every name. ``_cuda_core``,
``_torch_hooks``, ``_stream_for`` and ``_STREAMS`` are read through the module that defines them
(``cuda_compile.X``, ``cuda_context.X``), never bound here, so that one patch there (tests/cuda_fakes.py)
reaches this module too.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from . import cuda_compile, cuda_context
from .cuda_compile import _LOCK, compile_cubin
from .cuda_context import _CURRENT, _make_current, _raise_smem_limit
from .cuda_driver import _driver_launcher

__all__ = ["launch", "load_kernel", "prepare_launch"]

_MEM_KERNELS: dict[tuple[str, str, int], Any] = {}
_CONFIGS: dict[tuple, Any] = {}  # (grid, block, smem) -> LaunchConfig, for ad hoc launches


def _device_arch(device: int) -> str:
    Device = cuda_compile._cuda_core().Device

    major, minor = Device(device).compute_capability
    return f"sm_{major}{minor}"


def load_kernel(
    source: str, kernel_name: str, defines: Mapping[str, object], device: int | None = None
) -> Any:
    """A ``cuda.core.Kernel`` for ``kernel_name`` (an ``extern "C"`` function) compiled for ``device``."""
    import torch

    cc = cuda_compile._cuda_core()
    Device, ObjectCode = cc.Device, cc.ObjectCode

    device = torch.cuda.current_device() if device is None else device
    Device(device).set_current()
    _CURRENT.device = device
    arch = _device_arch(device)
    cubin = compile_cubin(source, defines, arch, name=kernel_name)
    mkey = (hashlib.sha256(cubin).hexdigest(), kernel_name, device)
    with _LOCK:
        k = _MEM_KERNELS.get(mkey)
    if k is None:
        k = ObjectCode.from_cubin(cubin, name=kernel_name).get_kernel(kernel_name)
        with _LOCK:
            _MEM_KERNELS[mkey] = k
    return k


def _dims(d: int | Sequence[int]) -> int | tuple[int, ...]:
    return tuple(int(x) for x in d) if isinstance(d, Sequence) else int(d)


def _convert(args: Sequence[Any], tensor: type) -> list[Any]:
    """Launch arguments: tensors become their pointers; numpy scalars and ints pass as they are."""
    import numpy as np

    conv = [a.data_ptr() if isinstance(a, tensor) else a for a in args]
    for a in conv:
        if not isinstance(a, (int, np.integer, np.floating)):
            raise TypeError(f"launch: unsupported argument {a!r}")
    return conv


def launch(
    kernel: Any,
    grid: int | Sequence[int],
    block: int | Sequence[int],
    args: Sequence[Any],
    shmem_bytes: int = 0,
) -> None:
    """Launch ``kernel`` on torch's current stream. ``args``: torch tensors (passed as pointers),
    numpy scalars (passed by value, their own width) or Python ints (pointers)."""
    cc = cuda_compile._cuda_core()
    get_dev, raw_stream, tensor = cuda_context._torch_hooks()
    device = int(get_dev())
    _make_current(device)
    ptr = raw_stream(device)
    stream = cuda_context._STREAMS.get(device, {}).get(ptr)
    if stream is None:
        stream = cuda_context._stream_for(device, ptr)
    _raise_smem_limit(kernel, device, shmem_bytes)
    conv = _convert(args, tensor)
    ckey = (_dims(grid), _dims(block), int(shmem_bytes))
    cfg = _CONFIGS.get(ckey)
    if cfg is None:
        if len(_CONFIGS) > 4096:
            _CONFIGS.clear()
        cfg = _CONFIGS[ckey] = cc.LaunchConfig(grid=ckey[0], block=ckey[1], shmem_size=ckey[2])
    cc.launch(stream, cfg, kernel, *conv)


def prepare_launch(
    kernel: Any,
    grid: int | Sequence[int],
    block: int | Sequence[int],
    smem_bytes: int = 0,
    device: int | None = None,
    overlap: bool = False,
) -> Callable[..., None]:
    """A launcher for ``kernel`` with a fixed geometry, for the hot path: ``fire(*args)`` or ``fire(args)``.

    ``overlap``: launch with programmatic stream serialization (sm_90's programmatic dependent launch), so
    that the kernel may start while the one ahead of it in the stream still runs; the kernel must execute
    ``griddepcontrol.wait`` (``AP_GRID_WAIT`` in kernels/cuda/common.cuh) before it touches what that
    kernel writes. Only the direct driver path sets the attribute; elsewhere the launch is in plain stream
    order, which is correct for such a kernel too (the wait returns at once).

    Done here, once: the device (torch's current one unless given), the dynamic shared-memory opt-in, the
    ``cuda.core`` LaunchConfig. Done per call: torch's current stream as a raw pointer (its ``cuda.core``
    wrapper comes from a dictionary, made on first sight of a stream), each tensor's ``data_ptr()``, the
    launch. A call from a thread whose current device is not ``device`` switches to it for the launch.
    Arguments are as for ``launch``: tensors (pointers), numpy scalars (by value) or Python ints (pointers);
    a type error is raised by ``cuda.core`` at the launch.
    """
    cc = cuda_compile._cuda_core()
    get_dev, raw_stream, tensor = cuda_context._torch_hooks()
    dev = int(get_dev()) if device is None else int(device)
    _make_current(dev)
    _raise_smem_limit(kernel, dev, int(smem_bytes))
    if os.environ.get("AUTOPAD_LAUNCH", "driver") == "driver":
        direct = _driver_launcher(
            kernel, grid, block, int(smem_bytes), dev, get_dev, raw_stream, tensor, bool(overlap)
        )
        if direct is not None:
            return direct
    cfg = cc.LaunchConfig(grid=_dims(grid), block=_dims(block), shmem_size=int(smem_bytes))
    cc_launch = cc.launch
    streams = cuda_context._STREAMS.setdefault(dev, {})
    local = _CURRENT
    seq = (tuple, list)

    def fire(*args: Any) -> None:
        if len(args) == 1 and type(args[0]) in seq:
            args = args[0]
        if get_dev() != dev or getattr(local, "device", None) != dev:
            return _fire_elsewhere(dev, cfg, kernel, args, tensor)
        ptr = raw_stream(dev)
        s = streams.get(ptr)
        if s is None:
            s = cuda_context._stream_for(dev, ptr)
        cc_launch(s, cfg, kernel, *[a.data_ptr() if isinstance(a, tensor) else a for a in args])

    fire.kernel, fire.config, fire.device = kernel, cfg, dev  # type: ignore[attr-defined]
    return fire


def _fire_elsewhere(dev: int, cfg: Any, kernel: Any, args: Sequence[Any], tensor: type) -> None:
    """A prepared launch called while another device (or no context) is current on this thread."""
    import torch

    get_dev, raw_stream, _ = cuda_context._torch_hooks()
    with torch.cuda.device(dev):
        _CURRENT.device = None
        _make_current(dev)
        ptr = raw_stream(dev)
        s = cuda_context._STREAMS.get(dev, {}).get(ptr)
        if s is None:
            s = cuda_context._stream_for(dev, ptr)
        cuda_compile._cuda_core().launch(s, cfg, kernel, *_convert(args, tensor))
    # leaving the guard, torch made its previous device's primary context current again (cudaSetDevice),
    # which is the context cuda.core would set for that device
    _CURRENT.device = int(get_dev())
