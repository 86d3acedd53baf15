"""One tuning question, checked: kernel spec, shape, dtype, input class, and how to search.

Every argument of ``autopad.tune`` is checked here, before any enumeration, compilation or measuring, and a
bad one is a ValueError that names the argument, what was given and what is allowed. Nothing downstream
re-checks: the search, the strategies and the benchmark take a ``Request`` as given.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from .arch import arch_for_device, get_arch
from .kernels_registry import builtin_spec
from .spec import DTYPE_BYTES, KernelSpec, SpecError

__all__ = [
    "Request",
    "normalize_dtype",
    "normalize_shape",
    "resolve",
    "device_index",
    "check_int",
    "check_bool",
]

_DTYPE_ALIASES = {
    "float": "float32",
    "half": "float16",
    "double": "float64",
    "fp32": "float32",
    "fp16": "float16",
    "bf16": "bfloat16",
    "fp64": "float64",
    "fp8": "float8_e4m3fn",
    "float8": "float8_e4m3fn",
}
BACKENDS = ("auto", "cuda", "triton")


def normalize_dtype(dtype: Any) -> str:
    """'float32', torch.float32 or numpy's float32 -> 'float32'."""
    if isinstance(dtype, bool) or dtype is None:
        raise ValueError(f"dtype: {dtype!r} is not an element type; known: {', '.join(DTYPE_BYTES)}")
    name = str(getattr(dtype, "__name__", dtype)).replace("torch.", "")
    if name not in DTYPE_BYTES and name not in _DTYPE_ALIASES:
        name = name.lower()  # 'FP16', 'Float32': the names are lower case
    name = _DTYPE_ALIASES.get(name, name)
    if name not in DTYPE_BYTES:
        raise ValueError(f"dtype: {dtype!r} is not a known element type; known: {', '.join(DTYPE_BYTES)}")
    return name


def _dim(d: Any) -> int | None:
    """One dimension as an int, or None when it is not an integer: an int or any integer type
    (``operator.index``: numpy's, a 0-d tensor's; sizes computed with numpy are np.int64), never a bool, a
    float or text."""
    if isinstance(d, bool):
        return None
    try:
        return operator.index(d)
    except TypeError:
        return None


def normalize_shape(shape: Any) -> tuple[int, ...]:
    """A tuple of positive ints, from a tuple/list or text like '8192x8192'."""
    if isinstance(shape, str):
        try:
            shape = tuple(int(p) for p in shape.lower().split("x"))
        except ValueError:
            raise ValueError(f"shape: {shape!r} is not of the form 8192x8192") from None
    try:
        out = tuple(_dim(d) for d in shape)
    except TypeError:
        raise ValueError(f"shape: expected a tuple of positive ints, got {shape!r}") from None
    if not out or any(d is None or d <= 0 for d in out):
        raise ValueError(f"shape: every dimension must be a positive int, got {shape!r}")
    if any(d >= 2**40 for d in out):
        raise ValueError(f"shape: dimensions must be below 2**40, got {shape!r}")
    return tuple(int(d) for d in out)


def resolve(kernel: str | ModuleType | Any, backend: str = "auto", dtype: str | None = None) -> KernelSpec:
    """A built-in kernel name ('transpose', 'matmul', 'histogram') or a user's spec -> KernelSpec."""
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise ValueError(f"backend: {backend!r} is not one of {', '.join(BACKENDS)}")
    if isinstance(kernel, str):
        return builtin_spec(kernel, backend, dtype)
    if isinstance(kernel, KernelSpec):  # already checked (what resolve or builtin_spec returned): not twice
        return kernel
    if kernel is None or isinstance(kernel, (int, float, bytes, list, tuple, dict)):
        raise ValueError(
            f"kernel: {kernel!r} is not a kernel; give 'transpose', 'matmul', 'histogram' or a kernel spec "
            f"(see autopad.CudaKernel)"
        )
    if isinstance(kernel, type):  # a spec class: use an instance
        try:
            kernel = kernel()
        except TypeError as e:
            raise ValueError(f"kernel: could not instantiate {kernel.__name__}: {e}") from None
    try:
        return KernelSpec(kernel)
    except SpecError as e:
        raise ValueError(str(e)) from None


def check_int(name: str, value: Any, low: int, allow_none: bool = False, what: str = "") -> int | None:
    """``value`` as an int >= ``low`` (bool refused), or a ValueError naming ``name``."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        extra = f" ({what})" if what else ""
        none = " or None" if allow_none else ""
        raise ValueError(f"{name}: must be an int >= {low}{none}{extra}, got {value!r}")
    return int(value)


def check_bool(name: str, value: Any) -> bool:
    """A real bool: 'no', 0 or None are refused, so a string that reads false is never taken as true."""
    if not isinstance(value, bool):
        raise ValueError(f"{name}: must be True or False, got {value!r}")
    return value


def device_index(device: Any) -> int:
    """A CUDA device as an index: an int, 'cuda', 'cuda:N' or a torch.device."""
    if device is None:
        return 0
    if isinstance(device, int) and not isinstance(device, bool) and device >= 0:
        return device
    text = str(device)
    if text == "cuda":
        return 0
    if text.startswith("cuda:") and text[5:].isdigit():
        return int(text[5:])
    raise ValueError(f"device: {device!r} is not a CUDA device (use an index, 'cuda' or 'cuda:N')")


@dataclass(frozen=True)
class Request:
    """Everything ``tune`` was asked, checked; ``make`` is the one place arguments are validated."""

    spec: KernelSpec
    shape: tuple[int, ...]
    dtype: str
    dist: str | None
    arch: str
    device: int
    top_k: int
    refine: int
    budget: int | None
    time_budget_s: float | None
    strategy: str
    seed: int
    cache: bool
    retune: bool
    export: Path | None = None
    overwrite: bool = False  # whether ``export`` may replace a different file there

    @classmethod
    def make(
        cls,
        kernel: Any,
        shape: Any,
        dtype: Any = "float32",
        backend: str = "auto",
        top_k: int = 6,
        device: Any = None,
        cache: bool = True,
        budget: int | None = None,
        time_budget_s: float | None = None,
        dist: str | None = None,
        arch: str | None = None,
        retune: bool = False,
        refine: int = 16,
        strategy: str = "model",
        seed: int = 0,
        export: str | Path | None = None,
        gpu_cc: str = "",
        overwrite: bool = False,
        device_count: int | None = None,
        gpu_name: str = "",
    ) -> Request:
        shape = normalize_shape(shape)
        dtype = normalize_dtype(dtype)
        spec = resolve(kernel, backend, dtype)
        if dtype not in spec.DTYPES:
            raise ValueError(
                f"dtype: {spec.NAME} [{spec.BACKEND}] supports {', '.join(spec.DTYPES)}, not {dtype}"
                + ("" if backend != "auto" else "; try the other backend with backend='cuda' or 'triton'")
            )
        if hasattr(spec, "check_shape"):
            spec.check_shape(shape)
        dists = getattr(spec, "DISTS", None)
        if dists:
            dist = dist or dists[0]
            if dist not in dists:
                raise ValueError(f"dist: {dist!r} is not one of {', '.join(dists)}")
        elif dist is not None:
            raise ValueError(f"dist: {spec.NAME} takes no input distribution")
        top_k = check_int("top_k", top_k, 1)
        budget = check_int("budget", budget, 1, allow_none=True, what="candidates to measure in all")
        refine = check_int("refine", refine, 0, what="extra candidates the local search may measure")
        seed = check_int("seed", seed, 0)
        if time_budget_s is not None:
            if (
                isinstance(time_budget_s, bool)
                or not isinstance(time_budget_s, (int, float))
                or not math.isfinite(time_budget_s)
                or time_budget_s <= 0
            ):
                raise ValueError(
                    f"time_budget_s: must be a number of seconds > 0 or None, got {time_budget_s!r}"
                )
            time_budget_s = float(time_budget_s)
        from .strategies import names as strategy_names

        if not isinstance(strategy, str) or strategy not in strategy_names():
            raise ValueError(f"strategy: {strategy!r} is not one of {', '.join(strategy_names())}")
        index = device_index(device)
        if device_count is not None and device_count > 0 and index >= device_count:
            raise ValueError(
                f"device: {device!r} is not one of the {device_count} CUDA device(s) 0..{device_count - 1}"
            )
        if arch is None:
            arch = arch_for_device(gpu_cc, gpu_name)
        profile = get_arch(arch)
        if isinstance(arch, str):  # the profile's own name ('H100' -> 'h100'): the search parameters hold it
            arch = profile.name
        out = None
        if export is not None:
            from .export import FORMATS

            out = Path(export)
            if out.suffix.lower() not in FORMATS:
                raise ValueError(f"export: {str(export)!r} does not end in one of {' '.join(FORMATS)}")
        return cls(
            spec,
            shape,
            dtype,
            dist,
            arch,
            index,
            top_k,
            refine,
            budget,
            time_budget_s,
            strategy,
            seed,
            check_bool("cache", cache),
            check_bool("retune", retune),
            out,
            check_bool("overwrite", overwrite),
        )
