"""Which GPU is here, without importing torch: its name and compute capability, for cache keys and reports.

Why not torch: importing torch takes 1.4-2 s, and a cache hit (or a model-only ranking on a laptop) should
take milliseconds. The CUDA driver library answers the same question directly: ``cuInit``,
``cuDeviceGetName`` and the compute-capability attributes, through ctypes. Device indices follow
``CUDA_VISIBLE_DEVICES`` exactly as torch's do, since both ask the driver. No driver library (a CPU
machine), a driver error, or ``AUTOPAD_NO_BENCH=1`` means no GPU: an empty dict.

Initialising the driver still costs time (``cuInit``: 0.72 s on the H200, 2026-12-01), so the answer is
also kept in a small file beside the tuning cache, keyed by what would change it: the boot, the visible
devices (``CUDA_VISIBLE_DEVICES``, ``CUDA_DEVICE_ORDER``) and the driver's list of GPUs in
``/proc/driver/nvidia/gpus``. A later process on the same boot and devices reads it in well under a
millisecond; where that list does not exist (another OS, a sandbox), the driver is asked every time.

Benchmarking itself still needs torch with CUDA (``gpu_available``); that check imports torch only when it
is about to be used anyway.
"""

from __future__ import annotations

import ctypes
import json
import os
from functools import lru_cache
from pathlib import Path
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


_PROC_GPUS = Path("/proc/driver/nvidia/gpus")


def _fingerprint() -> str | None:
    """What the device list depends on, or None when it cannot be known without the driver."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        gpus = sorted(p.name for p in _PROC_GPUS.iterdir())
    except OSError:
        return None
    env = [os.environ.get(k, "") for k in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")]
    return json.dumps([boot, gpus, env])


def _memo_path() -> Path:
    from .cache import cache_dir

    return cache_dir() / "devices.json"


@lru_cache(maxsize=1)
def _known() -> list[dict[str, Any]] | None:
    """The device list remembered for this boot and set of devices, or None."""
    fp = _fingerprint()
    if fp is None:
        return None
    try:
        data = json.loads(_memo_path().read_text())
        if data.get("fingerprint") == fp and isinstance(data.get("devices"), list):
            devs = data["devices"]
            if all(isinstance(d, dict) and isinstance(d.get("name"), str) and isinstance(d.get("cc"), str)
                   for d in devs):  # fmt: skip
                return devs
    except (OSError, ValueError, AttributeError):
        pass
    return None


def _remember(devices: list[dict[str, Any]]) -> None:
    fp = _fingerprint()
    if fp is None:
        return
    try:
        from .files import write_atomic

        write_atomic(_memo_path(), json.dumps({"fingerprint": fp, "devices": devices}))
    except (OSError, ValueError):
        pass  # a cache that cannot be written only costs the next process a driver call


def _no_driver() -> bool:
    """True when Linux shows no NVIDIA driver at all: then there is no GPU, and nothing to load."""
    return os.name == "posix" and Path("/proc").is_dir() and not Path("/proc/driver/nvidia").exists()


@lru_cache(maxsize=1)
def _devices() -> tuple[tuple[tuple[str, Any], ...], ...]:
    known = _known()
    if known is not None:
        return tuple(tuple(sorted(d.items())) for d in known)
    if _no_driver():
        return ()
    lib = _driver()
    if lib is None:
        return ()
    n = ctypes.c_int(0)
    if lib.cuDeviceGetCount(ctypes.byref(n)) != 0:
        return ()
    out = [dict(_info(i)) for i in range(n.value)]
    out = [d for d in out if d]
    _remember(out)
    return tuple(tuple(sorted(d.items())) for d in out)


def device_count() -> int:
    """CUDA devices the driver shows this process (0 without a driver or with AUTOPAD_NO_BENCH)."""
    if no_bench():
        return 0
    return len(_devices())


def _info(index: int) -> tuple[tuple[str, Any], ...]:
    """Ask the driver about device ``index`` (the driver is initialised by the caller)."""
    lib = _driver()
    if lib is None:
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
    if no_bench() or not isinstance(index, int) or isinstance(index, bool) or index < 0:
        return {}
    devs = _devices()
    return dict(devs[index]) if index < len(devs) else {}


def gpu_available() -> bool:
    """True when benchmarking is possible: a CUDA device, torch with CUDA, and AUTOPAD_NO_BENCH unset."""
    if no_bench() or device_count() == 0:
        return False
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())
