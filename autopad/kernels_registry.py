"""Where the built-in kernels live, and the source hash that keys their cache entries.

"transpose", "matmul" and "histogram" exist as raw CUDA (kernels/cuda) and as Triton/Gluon
(kernels/triton) specs. ``backend="auto"`` takes CUDA where ``cuda.core`` can be imported, else Triton
where Triton can, else CUDA (a model-only ranking needs neither).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
from pathlib import Path
from types import ModuleType

from .spec import KernelSpec

__all__ = ["BUILTIN", "builtin_spec", "source_hash", "kernel_names"]

BUILTIN = {
    ("transpose", "cuda"): "autopad.kernels.cuda.transpose",
    ("matmul", "cuda"): "autopad.kernels.cuda.matmul",
    ("histogram", "cuda"): "autopad.kernels.cuda.histogram",
    ("transpose", "triton"): "autopad.kernels.triton.transpose",
    ("matmul", "triton"): "autopad.kernels.triton.matmul",
    ("histogram", "triton"): "autopad.kernels.triton.histogram",
}


def kernel_names() -> list[str]:
    return sorted({k for k, _ in BUILTIN})


def _auto_backend() -> str:
    for backend, probe in (("cuda", "cuda.core"), ("triton", "triton")):
        try:
            if importlib.util.find_spec(probe) is not None:
                return backend
        except (ImportError, ValueError):
            continue
    return "cuda"


def builtin_spec(name: str, backend: str = "auto") -> KernelSpec:
    """The built-in spec for ``name`` on ``backend``; a ValueError names the choices."""
    if name not in kernel_names():
        raise ValueError(
            f"kernel: unknown kernel {name!r}; built-in: {', '.join(kernel_names())} "
            f"(or pass your own kernel spec, see autopad.spec)"
        )
    chosen = _auto_backend() if backend == "auto" else backend
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
