"""Which GPU is here, without importing torch: its name and compute capability, for cache keys and reports.

Why not torch: importing torch takes 1.4-2 s, and a cache hit (or a model-only ranking on a laptop) should
take milliseconds. The CUDA driver library answers the same question directly: ``cuInit``,
``cuDeviceGetName`` and the compute-capability attributes, through ctypes. Device indices follow
``CUDA_VISIBLE_DEVICES`` exactly as torch's do, since both ask the driver. No driver library (a CPU
machine), a driver error, or ``AUTOPAD_NO_BENCH=1`` means no GPU: an empty dict.

Benchmarking itself still needs torch with CUDA (``gpu_available``); that check imports torch only when it
is about to be used anyway.
"""

from __future__ import annotations

import ctypes
import os
from functools import lru_cache
from typing import Any

__all__ = ["device_info", "device_count", "gpu_available", "no_bench"]

_LIBS = ("libcuda.so.1", "libcuda.so", "nvcuda.dll", "libcuda.dylib")
_CC_MAJOR, _CC_MINOR = 75, 76  # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR / _MINOR


def no_bench() -> bool:
    """True when AUTOPAD_NO_BENCH asks for model-only answers."""
    return os.environ.get("AUTOPAD_NO_BENCH", "") not in ("", "0")


@lru_cache(maxsize=1)
def _driver() -> Any:
    """The initialised CUDA driver library, or None."""
    for name in _LIBS:
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        try:
            if lib.cuInit(0) != 0:
                return None
        except AttributeError:
            return None
        return lib
    return None


@lru_cache(maxsize=1)
def device_count() -> int:
    """CUDA devices the driver shows this process (0 without a driver or with AUTOPAD_NO_BENCH)."""
    if no_bench():
        return 0
    lib = _driver()
    if lib is None:
        return 0
    n = ctypes.c_int(0)
    return int(n.value) if lib.cuDeviceGetCount(ctypes.byref(n)) == 0 else 0


@lru_cache(maxsize=16)
def _info(index: int) -> tuple[tuple[str, Any], ...]:
    lib = _driver()
    if lib is None or index >= device_count():
        return ()
    dev = ctypes.c_int(0)
    if lib.cuDeviceGet(ctypes.byref(dev), index) != 0:
        return ()
    buf = ctypes.create_string_buffer(256)
    if lib.cuDeviceGetName(buf, 256, dev) != 0:
        return ()
    major, minor = ctypes.c_int(0), ctypes.c_int(0)
    if lib.cuDeviceGetAttribute(ctypes.byref(major), _CC_MAJOR, dev) != 0:
        return ()
    if lib.cuDeviceGetAttribute(ctypes.byref(minor), _CC_MINOR, dev) != 0:
        return ()
    name = buf.value.decode("utf-8", "replace")
    return (("name", name), ("cc", f"{major.value}{minor.value}"), ("index", index))


def device_info(index: int = 0) -> dict[str, Any]:
    """{"name", "cc", "index"} of CUDA device ``index``; {} without a GPU or with AUTOPAD_NO_BENCH=1."""
    if no_bench() or not isinstance(index, int) or index < 0:
        return {}
    return dict(_info(index))


def gpu_available() -> bool:
    """True when benchmarking is possible: a CUDA device, torch with CUDA, and AUTOPAD_NO_BENCH unset."""
    if no_bench() or device_count() == 0:
        return False
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())
