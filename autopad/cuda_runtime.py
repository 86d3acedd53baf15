"""Run-time CUDA: compile kernel templates with NVRTC (through ``cuda.core``), cache, launch on torch tensors.

Why: autopad benchmarks the same CUDA template under many layouts, each a different set of ``#define``s
(PAD, SW_VEC, ...). Compiling at run time with NVRTC needs no toolchain on the user's machine beyond the
driver and cuda-python, and caching the cubins (in memory and on disk, keyed by everything that changes
the machine code) makes a re-run of the tuner nearly free.

Nothing here is imported by ``import autopad``: ``cuda.core``, ``cuda.bindings`` and torch load lazily,
inside the functions that need them. Where NVRTC's library is missing (a CI box with only ``nvcc``),
``compile_cubin`` falls back to the ``nvcc`` executable, so the same cache and error path can be tested
without a GPU; set ``AUTOPAD_CUDA_COMPILER=nvcc`` or ``=nvrtc`` to force one.

Two more concerns live here:

- **The on-disk cubins are checked before they are loaded.** A cubin is machine code that this process will
  run, and its file name is predictable (a hash of the source and defines), so a file planted or damaged in
  the cache folder must never reach the GPU. Each file carries a header with the sha256 of its payload;
  on read the file must be a regular file (not a symlink), owned by this user, not writable by group or
  others, and its hash must match. Anything else is refused with a warning (once per file) and compiled
  afresh, and the fresh copy replaces it. New files are written 0600 in a 0700 folder.
- **A prepared launch** (``prepare_launch``): what a launch needs that does not change from call to call
  (``cuda.core``'s LaunchConfig, the dynamic shared-memory opt-in, the device) is done once, so that a call
  costs the current stream's raw pointer (a dictionary lookup to its ``cuda.core`` stream), the tensors'
  pointers and the launch itself. ``autopad.ops`` binds one per tuned shape; ``launch`` keeps the same
  caches for callers that launch ad hoc.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import subprocess
import tempfile
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "CompileError",
    "cache_dir",
    "cache_key",
    "compiler_version",
    "compile_cubin",
    "expand_includes",
    "load_kernel",
    "launch",
    "prepare_launch",
    "prepare_fixed",
    "read_cubin",
    "write_cubin",
    "unwrap_cubin",
    "KERNEL_DIR",
]

KERNEL_DIR = Path(__file__).resolve().parent.parent / "kernels" / "cuda"
if not KERNEL_DIR.is_dir():  # installed wheel: kernels ship as autopad/kernels
    KERNEL_DIR = Path(__file__).resolve().parent / "kernels" / "cuda"

_LOCK = threading.Lock()
_MEM_CUBINS: dict[str, bytes] = {}
_MEM_KERNELS: dict[tuple[str, str, int], Any] = {}
_STREAMS: dict[int, dict[int, Any]] = {}  # device -> raw cudaStream_t -> cuda.core Stream
_MAX_STREAMS = 256  # per device; a program that makes streams without end must not grow this without end
_CONFIGS: dict[tuple, Any] = {}  # (grid, block, smem) -> LaunchConfig, for ad hoc launches
_CURRENT = threading.local()  # which device this thread has made current for cuda.core
_SMEM_RAISED: dict[tuple[int, int], int] = {}
_WARNED: set[str] = set()
_IMPORT_LOCK = threading.Lock()
_CC: Any = None  # the cuda.core module, once imported
_INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$', re.MULTILINE)


def _cuda_core() -> Any:
    """``cuda.core``, imported once under a lock. Its package picks a CUDA-major submodule at import; the
    benchmark builds in eight threads at once, and a thread that arrived while another was importing it
    saw the half-made module ("cannot import name 'Device' from 'cuda.core.cu13'", seen on the H200)."""
    global _CC
    if _CC is None:
        with _IMPORT_LOCK:
            import cuda.core

            _CC = cuda.core
    return _CC


class CompileError(RuntimeError):
    """A kernel failed to compile. ``log`` is the compiler's output, ``defines`` the constants used."""

    def __init__(self, name: str, log: str, defines: Mapping[str, object], compiler: str) -> None:
        self.name = name
        self.log = log
        self.defines = dict(defines)
        self.compiler = compiler
        consts = " ".join(f"{k}={v}" for k, v in sorted(self.defines.items()))
        super().__init__(f"{compiler} failed to compile {name} with [{consts}]:\n{log.strip()}")


def cache_dir() -> Path:
    """Where cubins live: ``$AUTOPAD_CACHE_DIR/cubin``, else ``$XDG_CACHE_HOME/autopad/cubin``, else
    ``~/.cache/autopad/cubin`` (the same root as the tuning cache)."""
    root = os.environ.get("AUTOPAD_CACHE_DIR")
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = os.path.join(xdg or os.path.join(os.path.expanduser("~"), ".cache"), "autopad")
    return Path(root).expanduser() / "cubin"


# ---- the checked on-disk cubin format -------------------------------------------------------------------
# header: 16 bytes of magic, then the 32-byte sha256 of the payload, then the payload (the cubin itself)
CUBIN_MAGIC = b"autopad-cubin\x00v1"
_HEADER = len(CUBIN_MAGIC) + 32
_MAX_CUBIN = 256 << 20  # no kernel of autopad's comes near this; a larger file is not one of ours
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _warn_once(path: Path, why: str) -> None:
    key = f"{path}:{why}"
    if key not in _WARNED:
        _WARNED.add(key)
        warnings.warn(f"autopad: refusing cached cubin {path}: {why}; compiling it afresh", stacklevel=4)


def read_cubin(path: str | Path) -> bytes | None:
    """The payload of a checked cubin file, or None (with a warning) when it may not be trusted.

    Trusted means: a regular file (opened without following a symlink), owned by this user, writable by
    no one else, starting with autopad's header whose sha256 matches the payload. A missing file or a
    cubin from before the header existed is None without a warning (it is simply compiled again).
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as e:  # ELOOP: a symlink at the final component
        _warn_once(path, f"cannot be opened safely ({e.strerror or e})")
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            _warn_once(path, "not a regular file")
            return None
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            _warn_once(path, f"owned by uid {st.st_uid}, not by this user ({os.getuid()})")
            return None
        if st.st_mode & 0o022:
            _warn_once(path, f"writable by group or others (mode {stat.S_IMODE(st.st_mode):o})")
            return None
        if st.st_size > _MAX_CUBIN + _HEADER:
            _warn_once(path, f"{st.st_size} bytes, larger than any cubin autopad writes")
            return None
        with os.fdopen(fd, "rb") as f:
            fd = -1
            data = f.read()
    finally:
        if fd >= 0:
            os.close(fd)
    if not data.startswith(CUBIN_MAGIC):
        if not data.startswith(b"\x7fELF"):  # an unheadered ELF is an older autopad's cubin: quietly redo
            _warn_once(path, "not in autopad's checked cubin format")
        return None
    payload = unwrap_cubin(data)
    if payload is None:
        _warn_once(path, "its sha256 does not match its contents (damaged or altered)")
    return payload


def unwrap_cubin(data: bytes) -> bytes | None:
    """The payload of a checked cubin's bytes (header + sha256 + payload), or None if they do not check."""
    if not data.startswith(CUBIN_MAGIC) or len(data) < _HEADER:
        return None
    digest, payload = data[len(CUBIN_MAGIC) : _HEADER], data[_HEADER:]
    return payload if hashlib.sha256(payload).digest() == digest else None


def write_cubin(path: str | Path, payload: bytes) -> Path:
    """Write ``payload`` under autopad's header, atomically (a reader sees the old file or the new one),
    mode 0600 in a folder created 0700; a symlink at ``path`` is replaced, never followed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem[:16]}-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(CUBIN_MAGIC + hashlib.sha256(payload).digest() + payload)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def expand_includes(source: str, base: Path = KERNEL_DIR, _depth: int = 0) -> str:
    """Inline ``#include "x.cuh"`` from ``base`` so the hash and NVRTC both see every line compiled."""
    if _depth > 8:
        raise ValueError("expand_includes: includes nested more than 8 deep")

    def sub(m: re.Match) -> str:
        path = base / m.group(1)
        if not path.is_file():
            return m.group(0)  # leave it for the compiler to report
        return expand_includes(path.read_text(), base, _depth + 1)

    return _INCLUDE_RE.sub(sub, source)


def _backend() -> str:
    forced = os.environ.get("AUTOPAD_CUDA_COMPILER", "").lower()
    if forced in ("nvrtc", "nvcc"):
        return forced
    try:
        from cuda.bindings import nvrtc

        err, _, _ = nvrtc.nvrtcVersion()
        if int(err) == 0:
            return "nvrtc"
    except Exception:  # library not found, cuda-python absent: fall back to the executable
        pass
    if shutil.which("nvcc"):
        return "nvcc"
    raise RuntimeError("cuda_runtime: no NVRTC (pip install cuda-core cuda-bindings) and no nvcc on PATH")


_VERSIONS: dict[tuple[str, str | None], str] = {}


def compiler_version(backend: str | None = None) -> str:
    """``nvrtc-13.0`` or ``nvcc-13.0.88``: part of the cache key, since a new compiler makes new code.

    Asked once per compiler (``nvcc --version`` is a process of its own: ~50 ms on every build otherwise).
    """
    backend = backend or _backend()
    memo = (backend, shutil.which("nvcc") if backend == "nvcc" else None)
    if memo in _VERSIONS:
        return _VERSIONS[memo]
    if backend == "nvrtc":
        from cuda.bindings import nvrtc

        _, major, minor = nvrtc.nvrtcVersion()
        version = f"nvrtc-{major}.{minor}"
    else:
        out = subprocess.run(["nvcc", "--version"], capture_output=True, text=True, check=False).stdout
        m = re.search(r"V(\d+\.\d+\.\d+)", out)
        version = f"nvcc-{m.group(1) if m else 'unknown'}"
    _VERSIONS[memo] = version
    return version


def cache_key(source: str, defines: Mapping[str, object], arch: str, version: str) -> str:
    """sha256 of the expanded source, the sorted defines, the target arch and the compiler version."""
    h = hashlib.sha256()
    for part in (source, repr(sorted((k, str(v)) for k, v in defines.items())), arch, version):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def _compile_nvrtc(source: str, defines: Mapping[str, object], arch: str, name: str) -> bytes:
    cc = _cuda_core()
    Program, ProgramOptions = cc.Program, cc.ProgramOptions

    opts = ProgramOptions(
        name=name,
        arch=arch,
        std="c++17",
        define_macro=[(k, str(v)) for k, v in defines.items()] or None,  # cuda.core rejects []
    )

    class _Log:
        text = ""

        def write(self, s: str) -> None:
            self.text += s

    log = _Log()
    try:
        obj = Program(source, "c++", options=opts).compile("cubin", logs=log)
    except Exception as exc:  # cuda.core raises its own error type; keep the log and the defines
        raise CompileError(name, (log.text + "\n" + str(exc)).strip(), defines, "NVRTC") from exc
    return bytes(obj.code)


def _compile_nvcc(source: str, defines: Mapping[str, object], arch: str, name: str) -> bytes:
    with tempfile.TemporaryDirectory(prefix="autopad-nvcc-") as tmp:
        src = Path(tmp) / f"{name}.cu"
        out = Path(tmp) / f"{name}.cubin"
        src.write_text(source)
        cmd = ["nvcc", f"-arch={arch}", "-std=c++17", "--cubin", "-o", str(out), str(src)]
        cmd[1:1] = [f"-D{k}={v}" for k, v in defines.items()]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise CompileError(name, proc.stdout + proc.stderr, defines, "nvcc")
        return out.read_bytes()


def compile_cubin(
    source: str, defines: Mapping[str, object], arch: str = "sm_90", name: str = "kernel"
) -> bytes:
    """The cubin for ``source`` under ``defines``: from memory, else disk, else the compiler (then stored).

    Raises ``CompileError`` (with the log and the defines) when the compiler rejects the source.
    """
    source = expand_includes(source)
    backend = _backend()
    key = cache_key(source, defines, arch, compiler_version(backend))
    with _LOCK:
        hit = _MEM_CUBINS.get(key)
    if hit is not None:
        return hit
    path = cache_dir() / f"{key}.cubin"
    data = read_cubin(path)  # None: absent, or refused (not ours, altered): compile afresh
    if data is None:
        fn = _compile_nvrtc if backend == "nvrtc" else _compile_nvcc
        data = fn(source, defines, arch, name)
        write_cubin(path, data)
    with _LOCK:
        _MEM_CUBINS[key] = data
    return data


def _device_arch(device: int) -> str:
    Device = _cuda_core().Device

    major, minor = Device(device).compute_capability
    return f"sm_{major}{minor}"


def load_kernel(
    source: str, kernel_name: str, defines: Mapping[str, object], device: int | None = None
) -> Any:
    """A ``cuda.core.Kernel`` for ``kernel_name`` (an ``extern "C"`` function) compiled for ``device``."""
    import torch

    cc = _cuda_core()
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
        _cuda_core().Device(device).set_current()
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
        s = by_ptr[ptr] = _cuda_core().Device(device).create_stream(ts)
    return s


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
    cc = _cuda_core()
    get_dev, raw_stream, tensor = _torch_hooks()
    device = int(get_dev())
    _make_current(device)
    ptr = raw_stream(device)
    stream = _STREAMS.get(device, {}).get(ptr)
    if stream is None:
        stream = _stream_for(device, ptr)
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
    cc = _cuda_core()
    get_dev, raw_stream, tensor = _torch_hooks()
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
    streams = _STREAMS.setdefault(dev, {})
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
            s = _stream_for(dev, ptr)
        cc_launch(s, cfg, kernel, *[a.data_ptr() if isinstance(a, tensor) else a for a in args])

    fire.kernel, fire.config, fire.device = kernel, cfg, dev  # type: ignore[attr-defined]
    return fire


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


def _on_device(dev: int, fn: Callable[..., None], args: Sequence[Any]) -> None:
    """Call ``fn(*args)`` with ``dev`` made torch's current device (the caller's was another)."""
    import torch

    with torch.cuda.device(dev):
        _CURRENT.device = None
        fn(*args)
    # leaving the guard, torch made its previous device's primary context current again
    _CURRENT.device = None


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
    get_dev, raw_stream, tensor = _torch_hooks()
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


def _fire_elsewhere(dev: int, cfg: Any, kernel: Any, args: Sequence[Any], tensor: type) -> None:
    """A prepared launch called while another device (or no context) is current on this thread."""
    import torch

    get_dev, raw_stream, _ = _torch_hooks()
    with torch.cuda.device(dev):
        _CURRENT.device = None
        _make_current(dev)
        ptr = raw_stream(dev)
        s = _STREAMS.get(dev, {}).get(ptr)
        if s is None:
            s = _stream_for(dev, ptr)
        _cuda_core().launch(s, cfg, kernel, *_convert(args, tensor))
    # leaving the guard, torch made its previous device's primary context current again (cudaSetDevice),
    # which is the context cuda.core would set for that device
    _CURRENT.device = int(get_dev())
