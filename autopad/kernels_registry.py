"""Where the built-in kernels live, which backend ``auto`` means, and the source hash that keys the cache.

"transpose", "matmul" and "histogram" exist as raw CUDA (kernels/cuda) and as Triton/Gluon
(kernels/triton) specs; "histogram_weighted" (counts and float sums per bin, AoS or SoA) as CUDA.
``backend="auto"`` is a fixed rule of kernel and dtype, the same on every machine
(so the same command gives the same constant names everywhere): the CUDA kernels for transpose and
histogram, and for matmul the Gluon (wgmma) kernel in 16-bit and tf32, the CUDA SIMT kernel in fp32.
``auto_backend`` says which and why, for the first line of a report.
"""

from __future__ import annotations

import hashlib
import importlib
from pathlib import Path
from types import ModuleType

from .spec import KernelSpec

__all__ = ["BUILTIN", "builtin_spec", "source_hash", "kernel_names", "auto_backend"]

BUILTIN = {
    ("transpose", "cuda"): "autopad.kernels.cuda.transpose",
    ("matmul", "cuda"): "autopad.kernels.cuda.matmul",
    ("histogram", "cuda"): "autopad.kernels.cuda.histogram",
    ("transpose", "triton"): "autopad.kernels.triton.transpose",
    ("matmul", "triton"): "autopad.kernels.triton.matmul",
    ("histogram", "triton"): "autopad.kernels.triton.histogram",
    ("histogram_weighted", "cuda"): "autopad.kernels.cuda.histogram_weighted",
}


def kernel_names() -> list[str]:
    return sorted({k for k, _ in BUILTIN})


def auto_backend(name: str, dtype: str | None = None) -> tuple[str, str]:
    """The backend ``auto`` picks for ``name`` in ``dtype``, and a one-line reason."""
    if name == "matmul" and dtype in ("bfloat16", "float16", "tf32"):
        return "triton", f"matmul in {dtype} runs on the tensor cores (Gluon wgmma kernel)"
    if name == "matmul":
        return "cuda", "matmul in float32 runs the CUDA SIMT kernel (the Gluon kernel takes 16-bit and tf32)"
    return "cuda", f"{name} defaults to its CUDA kernel (backend='triton' for the Triton one)"


def builtin_spec(name: str, backend: str = "auto", dtype: str | None = None) -> KernelSpec:
    """The built-in spec for ``name`` on ``backend``; a ValueError names the choices."""
    if not isinstance(name, str) or name not in kernel_names():
        raise ValueError(
            f"kernel: unknown kernel {name!r}; built-in: {', '.join(kernel_names())} "
            f"(or pass your own kernel spec, see autopad.CudaKernel)"
        )
    chosen = auto_backend(name, dtype)[0] if backend == "auto" else backend
    if (name, chosen) not in BUILTIN:
        raise ValueError(f"backend: {name} has no {chosen} implementation")
    return KernelSpec(importlib.import_module(BUILTIN[(name, chosen)]))


def source_hash(spec: KernelSpec) -> str:
    """Hash of the kernel's source, for cache keys: the files its spec lists in SOURCE_FILES (the code
    that runs, e.g. the .cu file), else its whole module. A spec whose SPACE lives apart from its kernel
    source can then grow its space without losing the timings already cached."""
    h = hashlib.sha256()
    impl = spec.impl
    files = [Path(p) for p in getattr(impl, "SOURCE_FILES", ())]
    if not files:
        mod = impl if isinstance(impl, ModuleType) else importlib.import_module(type(impl).__module__)
        if getattr(mod, "__file__", None):
            files.append(Path(mod.__file__))
    for f in files:
        try:
            h.update(f.read_bytes())
        except OSError:
            h.update(str(f).encode())
    if not files:
        h.update(repr(impl).encode())
    return h.hexdigest()[:16]
