"""The direct driver launch through ctypes: ``prepare_fixed`` and ``prepare_launch``'s driver path.

What: the kernel's CUfunction from ``libcuda`` (``_libcuda``, ``_driver_function``), the ctypes mirrors of
``CUlaunchConfig`` and ``CUlaunchAttribute`` (``_config_type``, ``_attribute_type``), each thread's launch
state (``_block_maker``: a configuration and a parameter block whose slots are rewritten per call), and the
two launchers built on them: ``_driver_launcher`` (the fire of ``cuda_launch.prepare_launch``, any argument
list) and ``prepare_fixed`` (scalars fixed once, pointers per call: the hot path of ``autopad.ops``).

Why: cuda.core's ``launch`` packs its arguments anew on every call; a launch through ``cuLaunchKernelEx``
with ready ctypes objects costs a fraction of that (measured below). ``AUTOPAD_LAUNCH=cudacore`` turns this
path off. Split out of ``cuda_runtime``, which re-exports every name; the CPU tests (and
benchmarks/profile_ops_host.py) point ``cuda_driver._LIBCUDA`` at a C stub, and replace torch's entry points
through ``cuda_context._torch_hooks``, which ``prepare_fixed`` reads through that module for that reason.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

from . import cuda_context
from .cuda_context import _CURRENT, _make_current, _on_device, _raise_smem_limit

__all__ = ["prepare_fixed"]

# ---- the direct driver launch (ctypes), for the hot path ---------------------------------------------------
# Measured with the driver mocked by a C stub (benchmarks/profile_ops_host.py, 2-core VM): ctypes costs
# 1.7 us for cuLaunchKernel's 11 arguments converted through argtypes from Python ints, 0.4-0.5 us for
# cuLaunchKernelEx's 4 (config, function, parameter block, extra) passed as ready ctypes objects. The
# launch configuration then carries grid, block, shared bytes and the stream; only the stream field and the
# pointer slots of the parameter block are written per call. Each thread has its own configuration and
# parameter block: ctypes releases the GIL during the call, and another thread writing a shared block
# between this thread's writes and the driver's read of them would launch with its pointers.
_LIBCUDA = "libcuda.so.1"  # the driver library of the direct path (the CPU tests point it at a stub)
_CU: Any = None  # that library, once loaded and typed
_CFG: Any = None  # the ctypes mirror of CUlaunchConfig, once made


def _libcuda() -> Any:
    """The driver library: ``cuKernelGetFunction`` and ``cuLaunchKernel`` typed, and ``launch_ex``, a
    second handle on ``cuLaunchKernelEx`` (CUDA 12+) without argtypes, to be called with ctypes objects
    only, or None where the driver lacks it."""
    global _CU
    if _CU is None:
        import ctypes

        lib = ctypes.CDLL(_LIBCUDA)
        lib.cuLaunchKernel.restype = ctypes.c_int
        lib.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
        lib.cuKernelGetFunction.restype = ctypes.c_int
        lib.cuKernelGetFunction.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
        try:
            ex = lib["cuLaunchKernelEx"]  # a function object of its own: lib.cuLaunchKernelEx stays untyped
            ex.restype = ctypes.c_int
        except AttributeError:
            ex = None
        lib.launch_ex = ex
        _CU = lib
    return _CU


def _config_type() -> Any:
    """``CUlaunchConfig`` (cuda.h): grid x/y/z, block x/y/z, shared bytes, stream, attributes, their count."""
    global _CFG
    if _CFG is None:
        import ctypes

        class LaunchConfig(ctypes.Structure):
            _fields_ = [(n, ctypes.c_uint) for n in ("gx", "gy", "gz", "bx", "by", "bz", "smem")] + [
                ("stream", ctypes.c_void_p),
                ("attrs", ctypes.c_void_p),
                ("nattrs", ctypes.c_uint),
            ]

        _CFG = LaunchConfig
    return _CFG


def _dims3(d: int | Sequence[int]) -> tuple[int, int, int]:
    t = (int(d),) if isinstance(d, int) else tuple(int(x) for x in d)
    return (t + (1, 1))[:3]  # type: ignore[return-value]


def _driver_function(kernel: Any) -> Any:
    """The kernel's CUfunction in the current context (a ctypes c_void_p), or None where the driver or
    the handle is not reachable this way."""
    import ctypes

    try:
        lib = _libcuda()
        fn = ctypes.c_void_p()
        if lib.cuKernelGetFunction(ctypes.byref(fn), ctypes.c_void_p(int(kernel.handle))) != 0:
            return None
    except (OSError, AttributeError, TypeError, ValueError):
        return None
    return fn


def _slot_type(a: Any, tensor: type) -> tuple[int, Any]:
    """(kind, ctypes type) of a launch argument: 0 a pointer (a tensor, or a Python int as in ``launch``),
    1 an integer scalar, 2 a floating one (numpy scalars, passed at their own width)."""
    import ctypes

    import numpy as np

    if isinstance(a, tensor) or (isinstance(a, int) and not isinstance(a, (bool, np.integer))):
        return 0, ctypes.c_uint64
    kinds = {
        "int32": (1, ctypes.c_int32),
        "int64": (1, ctypes.c_int64),
        "uint32": (1, ctypes.c_uint32),
        "uint64": (1, ctypes.c_uint64),
        "float32": (2, ctypes.c_float),
        "float64": (2, ctypes.c_double),
    }
    if isinstance(a, (np.integer, np.floating)) and a.dtype.name in kinds:
        return kinds[a.dtype.name]
    raise TypeError(f"launch: unsupported argument {a!r}")


_ATTR_PROGRAMMATIC_STREAM_SERIALIZATION = 6  # CUlaunchAttributeID (cuda.h)


_ATTR: Any = None  # the ctypes mirror of CUlaunchAttribute, once made


def _attribute_type() -> Any:
    """``CUlaunchAttribute`` (cuda.h): a 4-byte id, 4 bytes of padding, a 64-byte value union (72 bytes)."""
    global _ATTR
    if _ATTR is None:
        import ctypes

        class LaunchAttribute(ctypes.Structure):
            _fields_ = [("id", ctypes.c_uint), ("pad", ctypes.c_char * 4), ("value", ctypes.c_ubyte * 64)]

        _ATTR = LaunchAttribute
    return _ATTR


def _block_maker(
    g: tuple, b: tuple, smem: int, types: Sequence[Any], values: Sequence[Any], overlap: bool = False
) -> Callable:
    """``make() -> (config, pointer to it, parameter block, slots)``: one thread's launch state, the
    scalar slots holding ``values`` (None for the per-call ones); with ``overlap``, the configuration
    carries the programmatic-stream-serialization attribute (``prepare_launch``)."""
    import ctypes

    cfg_t = _config_type()
    attr_t = _attribute_type() if overlap else None

    def make() -> tuple:
        slots = [t() if v is None else t(v) for t, v in zip(types, values)]
        params = (ctypes.c_void_p * max(1, len(slots)))(*[ctypes.addressof(x) for x in slots])
        cfg = cfg_t(g[0], g[1], g[2], b[0], b[1], b[2], smem, None, None, 0)
        if attr_t is not None:
            attrs = (attr_t * 1)()
            attrs[0].id = _ATTR_PROGRAMMATIC_STREAM_SERIALIZATION
            ctypes.c_int.from_buffer(attrs[0].value).value = 1  # programmaticStreamSerializationAllowed
            cfg.attrs, cfg.nattrs = ctypes.addressof(attrs), 1
            cfg.keep = attrs  # alive as long as the configuration
        return (cfg, ctypes.pointer(cfg), params, slots)

    return make


def _launch_error(err: int, g: tuple, b: tuple, smem: int) -> RuntimeError:
    return RuntimeError(f"CUDA launch failed with CUDA error {err} (grid {g}, block {b}, {smem} B)")


def _driver_launcher(
    kernel: Any,
    grid: Any,
    block: Any,
    smem: int,
    dev: int,
    get_dev: Callable[[], int],
    raw_stream: Callable[[int], int],
    tensor: type,
    overlap: bool = False,
) -> Callable[..., None] | None:
    """A ``prepare_launch`` fire that calls the driver through ctypes: each thread's parameter block is
    built for the first argument list it sees (again when the count changes) and only its slots are
    rewritten per call; ``cuLaunchKernelEx`` with ready ctypes objects where the driver has it, else
    ``cuLaunchKernel``. cuda.core's ``launch`` packs its arguments anew on every call. None where the
    driver or the kernel handle is not reachable this way (the caller then uses cuda.core)."""
    fn = _driver_function(kernel)
    if fn is None:
        return None
    lib = _libcuda()
    ex, plain, fv = lib.launch_ex, lib.cuLaunchKernel, fn.value
    g, b = _dims3(grid), _dims3(block)
    tl = threading.local()  # this thread's (n, kinds, config, pointer, params, slots)
    seq = (tuple, list)
    local = _CURRENT

    def state(args: Sequence[Any]) -> tuple:
        kt = [_slot_type(a, tensor) for a in args]
        cfg, pcfg, params, slots = _block_maker(g, b, smem, [t for _, t in kt], [None] * len(kt), overlap)()
        st = tl.st = (len(args), tuple(k for k, _ in kt), cfg, pcfg, params, slots)
        return st

    def fire(*args: Any) -> None:
        if len(args) == 1 and type(args[0]) in seq:
            args = args[0]
        if get_dev() != dev:
            return _on_device(dev, fire, args)
        if getattr(local, "device", None) != dev:
            _make_current(dev)
        st = getattr(tl, "st", None)
        if st is None or st[0] != len(args):
            st = state(args)
        for s, k, a in zip(st[5], st[1], args):
            s.value = (
                (a.data_ptr() if isinstance(a, tensor) else int(a))
                if k == 0
                else (int(a) if k == 1 else float(a))
            )
        stream = raw_stream(dev)
        if ex is not None:
            st[2].stream = stream
            err = ex(st[3], fn, st[4], None)
        else:
            err = plain(fv, g[0], g[1], g[2], b[0], b[1], b[2], smem, stream, st[4], None)
        if err != 0:
            raise _launch_error(err, g, b, smem)

    fire.kernel, fire.config, fire.device = kernel, (g, b, smem), dev  # type: ignore[attr-defined]
    fire.path = "driver"  # type: ignore[attr-defined]
    return fire


def prepare_fixed(
    kernel: Any,
    grid: int | Sequence[int],
    block: int | Sequence[int],
    smem_bytes: int,
    args: Sequence[Any],
    device: int | None = None,
) -> Callable[..., None] | None:
    """A launch with its scalar arguments fixed now, for the hot path: ``go(p0, p1, ...)`` takes the data
    pointers (ints) of the pointer arguments, in order, and launches on torch's current stream.

    ``args`` is the argument list as ``prepare_launch``'s fire takes it: a tensor or a Python int marks a
    pointer slot (its value is not kept), a numpy scalar is passed by value as it is now. Done once: what
    ``prepare_launch`` does, the CUfunction, the types of the slots. Per call: the current device check
    (another one: switched to, as ``prepare_launch`` does), this thread's launch state (made on its first
    call), the pointers and torch's current stream written into it, one ``cuLaunchKernelEx`` with four
    ready ctypes objects. None where this path is off (``AUTOPAD_LAUNCH=cudacore``), or the driver, the
    kernel handle or cuLaunchKernelEx is not reachable: the caller then uses ``prepare_launch``.
    """
    if os.environ.get("AUTOPAD_LAUNCH", "driver") != "driver":
        return None
    get_dev, raw_stream, tensor = cuda_context._torch_hooks()
    dev = int(get_dev()) if device is None else int(device)
    _make_current(dev)
    fn = _driver_function(kernel)
    if fn is None or _libcuda().launch_ex is None:
        return None
    _raise_smem_limit(kernel, dev, int(smem_bytes))
    ex, g, b, smem = _libcuda().launch_ex, _dims3(grid), _dims3(block), int(smem_bytes)
    kt = [_slot_type(a, tensor) for a in args]
    values = [None if k == 0 else (int(a) if k == 1 else float(a)) for (k, _), a in zip(kt, args)]
    make = _block_maker(g, b, smem, [t for _, t in kt], values)
    where = [i for i, (k, _) in enumerate(kt) if k == 0]
    tl = threading.local()  # this thread's (config, pointer to it, params, the pointer slots...)
    local = _CURRENT

    def mine() -> tuple:
        cfg, pcfg, params, slots = make()
        st = tl.st = (cfg, pcfg, params, *[slots[i] for i in where], slots)
        return st

    if len(where) == 2:  # the transpose's (out, x): no loop, no argument tuple

        def go(p0: int, p1: int) -> None:
            if get_dev() != dev:
                return _on_device(dev, go, (p0, p1))
            if getattr(local, "device", None) != dev:
                _make_current(dev)
            st = getattr(tl, "st", None) or mine()
            st[3].value = p0
            st[4].value = p1
            st[0].stream = raw_stream(dev)
            err = ex(st[1], fn, st[2], None)
            if err != 0:
                raise _launch_error(err, g, b, smem)

    else:
        n = len(where)

        def go(*ptrs: int) -> None:
            if len(ptrs) != n:
                raise TypeError(f"launch: {n} pointers expected, got {len(ptrs)}")
            if get_dev() != dev:
                return _on_device(dev, go, ptrs)
            if getattr(local, "device", None) != dev:
                _make_current(dev)
            st = getattr(tl, "st", None) or mine()
            for i, p in enumerate(ptrs):
                st[3 + i].value = p
            st[0].stream = raw_stream(dev)
            err = ex(st[1], fn, st[2], None)
            if err != 0:
                raise _launch_error(err, g, b, smem)

    go.kernel, go.config, go.device, go.pointers = kernel, (g, b, smem), dev, len(where)  # type: ignore[attr-defined]
    return go
