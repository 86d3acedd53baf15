"""The kernel spec: everything the tuner may know about a kernel, and nothing more.

A kernel (built-in or a user's own) is a module or object with the functions below. The tuner enumerates
``SPACE``, keeps what ``legal`` accepts (the one validity predicate, shared by the enumerator, the model
and the benchmark), scores each candidate from ``smem_pattern`` through its ``layout`` and the model, and
benchmarks the shortlist with ``build`` / ``run`` against ``reference``. It never looks inside.

Functions (``constants`` is a dict of tunable name -> int; ``dtype`` a name such as "float32"):

    NAME: str                                   kernel name, e.g. "transpose"
    BACKEND: str                                "cuda" or "triton"
    DTYPES: tuple[str, ...]                     element types it supports
    SPACE: dict[str, tuple[int, ...]]           every tunable and the values to try
    legal(constants, shape, dtype) -> Legality  can this candidate run? if not, why
    layout(constants, dtype) -> layout          the shared-memory layout (autopad.layouts) it uses
    smem_pattern(constants, dtype) -> tuple[Instruction, ...]
                                                shared-memory instructions of one block over one tile
    launch_info(constants, shape, dtype) -> dict
                                                {"blocks": int, "threads": int, "smem_bytes": int,
                                                 "tiles_per_block": int; optional "inflight_bytes"
                                                 (per thread) and "dram_efficiency" (<= 1)}
    traffic(shape, dtype) -> dict               {"bytes": global bytes read + written, "flops": int}
    make_inputs(shape, dtype, device, seed, dist="uniform") -> tuple of tensors
    alloc_output(inputs, constants) -> tensor   (the harness poisons it before each check)
    build(constants, dtype) -> object           compile (thread-safe; may raise with the compiler's log)
    run(built, inputs, out) -> None             launch on torch's current stream
    reference(inputs) -> tensor                 the torch answer
    check(out, ref) -> tuple[bool, str]         exact or within a stated tolerance

Optional: ``DEFAULTS`` (the unpadded baseline constants), ``textbook(shape, dtype)`` (the +1 pad),
``SOURCE_FILES`` (paths of the code that runs; they key the cache, default: the module file),
``PATTERN_KEYS`` (the constants ``smem_pattern`` depends on: candidates equal in them share one pattern),
``LAYOUT_KEYS`` (the constants that only choose the shared-memory layout: the tuner measures one layout
of each of the best launch configurations, and searches the rest from the fastest),
``ACCUMULATES`` (True when ``run`` adds into ``out``: the harness zeroes it before every run),
``DISTS`` (input classes that change the speed, e.g. ("uniform", "skewed", "single")) and
``check_shape(shape)`` (raise ValueError for a shape the kernel cannot take) and
``inputs_from(*args)`` (the kernel's input tuple from an ``autopad.ops`` call's arguments).
With ``DISTS``, ``smem_pattern`` also takes ``dist=`` (the input class decides which bins collide).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any

__all__ = ["KernelSpec", "REQUIRED", "DTYPE_BYTES"]

REQUIRED = (
    "NAME",
    "BACKEND",
    "DTYPES",
    "SPACE",
    "legal",
    "layout",
    "smem_pattern",
    "launch_info",
    "traffic",
    "make_inputs",
    "alloc_output",
    "build",
    "run",
    "reference",
    "check",
)

DTYPE_BYTES = {
    "float64": 8,
    "float32": 4,
    "tf32": 4,  # float32 storage, tensor-core arithmetic
    "float16": 2,
    "bfloat16": 2,
    "float8_e4m3fn": 1,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint8": 1,
}


@dataclass(frozen=True)
class KernelSpec:
    """A checked wrapper around a kernel module or object that provides ``REQUIRED``."""

    impl: Any

    def __post_init__(self) -> None:
        missing = [name for name in REQUIRED if not hasattr(self.impl, name)]
        if missing:
            what = self.impl.__name__ if isinstance(self.impl, ModuleType) else type(self.impl).__name__
            raise ValueError(f"kernel: {what} is not a kernel spec; it lacks {', '.join(missing)}")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.impl, name)
