"""Base specs: write the kernel, its space, its launch geometry, its arguments and its reference; autopad
derives the rest.

A spec for the tuner (autopad/spec.py) has fifteen names; most are the same in every kernel: allocate the
inputs, allocate and poison the outputs, compile, launch, compare with torch, count the bytes moved. As in
Kernel Tuner (``tune_kernel(name, source, problem_size, arguments, tune_params, answer=)``) and Triton
(``@autotune`` on the kernel call), those are derived here from what only the author knows:

    class Transpose(autopad.CudaKernel):
        SOURCE = "..."                                   # CUDA with #include "autopad.cuh", AP_OFF(r, c)
        SPACE = {"TILE": (32, 64), "PAD": (0, 1, 2)}     # the tunables, each a -D define
        SHAPE = ("M", "N")                               # names of the problem's dimensions
        LAYOUT = autopad.tile("TILE", "TILE", pad="PAD") # the shared tile, in terms of the constants
        BLOCK = ("TILE", 8)                              # expressions over constants and shape names
        GRID = ("cdiv(N, TILE)", "cdiv(M, TILE)")
        PATTERN = autopad.Pattern(...)                   # how a block's threads touch the tile (optional)

        def arguments(self, shape, dtype): ...           # tensors, autopad.Out(shape) outputs, scalars
        def reference(self, x, m, n): ...                # torch's answer from the inputs

Derived: ``legal`` (the layout's own check, the architecture's shared-memory and launch limits, the
``RESTRICTIONS``), ``layout``, ``smem_pattern``, ``launch_info`` (blocks and threads from GRID and BLOCK,
shared memory from the layout), ``traffic`` (the arguments' bytes, counted on torch's meta device; flops
from ``FLOPS``), ``make_inputs`` (``arguments`` under a fresh seed on the GPU), ``alloc_output`` (the
``Out`` placeholders), ``build`` / ``run`` (NVRTC and cuda.core for CUDA; the ``@triton.jit`` or
``@gluon.jit`` call for Triton), ``check`` (exact for integers, a relative error per dtype for floats).
Any of them can still be overridden. torch, triton and CUDA load only inside the functions that use them.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from .arch import get_arch
from .expr import ExprError, compile_expr, names_in
from .layouts import Legality, Padded, Swizzled
from .spec import DTYPE_BYTES, SpecError

__all__ = ["Out", "Inputs", "TileLayout", "tile", "KernelBase", "CudaKernel", "TritonKernel", "TOLERANCE"]

# relative Frobenius error allowed per dtype when comparing with the reference (integers: exact)
TOLERANCE = {
    "float64": 1e-10,
    "float32": 1e-5,
    "tf32": 3e-3,
    "float16": 3e-3,
    "bfloat16": 1e-2,
    "float8_e4m3fn": 6e-2,
}


class Inputs(tuple):
    """A kernel's argument list (outputs as ``Out`` placeholders) that remembers the problem shape, which
    the launch geometry needs."""

    shape: tuple[int, ...] = ()

    def __new__(cls, items: Sequence[Any], shape: Sequence[int]) -> Inputs:
        obj = super().__new__(cls, items)
        obj.shape = tuple(int(d) for d in shape)
        return obj


class Out:
    """An output argument: the harness allocates it (poisoned) and passes it in this position."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: Sequence[int] | int, dtype: Any = None) -> None:
        dims = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        if any(isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 0 for d in dims):
            raise SpecError(f"arguments: Out({shape!r}) needs a shape of non-negative ints")
        self.shape = tuple(int(d) for d in dims)
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"Out({self.shape}, {self.dtype})"


def _env(constants: Mapping[str, int], shape_names: Sequence[str], shape: Sequence[int], e: int) -> dict:
    env = dict(constants)
    env.update(zip(shape_names, shape))
    env["E"] = e
    return env


def _eval(expr: Any, env: Mapping[str, Any], where: str) -> int:
    try:
        v = compile_expr(expr)(env)
    except ExprError as e:
        raise SpecError(f"{where}: {e}") from None
    except ZeroDivisionError:
        raise SpecError(f"{where}: {expr!r} divides by zero for {dict(env)}") from None
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v.item()
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise SpecError(f"{where}: {expr!r} gave {v!r}, not an integer")
    return int(v)


@dataclass(frozen=True)
class TileLayout:
    """A shared tile described in terms of the spec's constants: rows, cols, padding, swizzle, vector.

    Every field is an int or an expression over the constants (``"TILE_M"``, ``"BN + 8"``); ``make``
    turns it into an ``autopad.layouts`` layout for one candidate. ``swizzle`` is the Gluon triple
    ``(vec, per_phase, max_phase)``; ``vec`` is the widest access the kernel makes to the tile, in
    elements (the layout's legality depends on it).
    """

    rows: Any
    cols: Any
    pad: Any = 0
    swizzle: tuple[Any, Any, Any] | None = None
    vec: Any = 1

    def names(self) -> frozenset[str]:
        parts = [self.rows, self.cols, self.pad, self.vec, *(self.swizzle or ())]
        return frozenset().union(*(names_in(p) for p in parts)) - {"E"}

    def layout_names(self) -> frozenset[str]:
        """The constants that choose only the layout (padding and swizzle), not the tile's shape."""
        parts = [self.pad, *(self.swizzle or ())]
        return frozenset().union(*(names_in(p) for p in parts)) - {"E"}

    def make(self, constants: Mapping[str, int], elem_bytes: int) -> Any:
        env = {**constants, "E": elem_bytes}
        r, c = _eval(self.rows, env, "LAYOUT rows"), _eval(self.cols, env, "LAYOUT cols")
        pad = _eval(self.pad, env, "LAYOUT pad")
        sw = tuple(_eval(x, env, "LAYOUT swizzle") for x in self.swizzle) if self.swizzle else (1, 1, 1)
        if sw[2] == 1:
            return Padded(r, c, elem_bytes, pad=pad)
        if pad == 0:
            return Swizzled(r, c, elem_bytes, sw_vec=sw[0], per_phase=sw[1], max_phase=sw[2])
        from . import layouts

        tile_cls = getattr(layouts, "Tile", None)
        if tile_cls is None:
            raise ValueError("padding and swizzle together need autopad.layouts.Tile")
        return tile_cls(r, c, elem_bytes, pad=pad, swizzle=layouts.Swizzle(*sw))

    def vec_of(self, constants: Mapping[str, int], elem_bytes: int) -> int:
        return _eval(self.vec, {**constants, "E": elem_bytes}, "LAYOUT vec")


def tile(
    rows: Any, cols: Any, pad: Any = 0, swizzle: tuple[Any, Any, Any] | None = None, vec: Any = 1
) -> TileLayout:
    """A ``rows x cols`` shared tile whose padding and swizzle come from the spec's constants.

    >>> tile("TILE", "TILE", pad="PAD")                                  # the classic [32][33]
    >>> tile("BM", "BK", swizzle=("SW_VEC", "SW_PER_PHASE", "SW_MAX_PHASE"), vec="VEC")
    """
    return TileLayout(rows, cols, pad, tuple(swizzle) if swizzle is not None else None, vec)


_NO_LAYOUT = Padded(1, 1, 4)  # a kernel with no tuned tile: nothing for the model to score


class KernelBase:
    """What CUDA and Triton specs share; see the module docstring. Subclasses set BACKEND."""

    NAME: str = ""
    BACKEND: str = ""
    DTYPES: tuple[str, ...] = ("float32",)
    SPACE: dict[str, tuple[int, ...]] = {}
    SHAPE: tuple[str, ...] | None = None  # names of the problem's dims, for GRID/BLOCK/FLOPS expressions
    LAYOUT: Any = None  # a TileLayout (autopad.tile), a function (constants, dtype) -> layout, or None
    PATTERN: Any = None  # an autopad.pattern.Pattern, a function (constants, dtype) -> instructions, or None
    RESTRICTIONS: tuple[Any, ...] = ()
    GRID: Any = None  # expressions over constants and shape names, or override grid()
    BLOCK: Any = (128,)
    TILES_PER_BLOCK: Any = 1
    INFLIGHT_BYTES: Any = None  # bytes each thread keeps in flight from global memory, if known
    FLOPS: Any = 0  # expression over shape names
    TOLERANCE: Any = None  # a float, or a dict dtype -> relative error; None: autopad.bases.TOLERANCE
    ARCH: str = "sm_90"  # the limits legal() checks against
    UNCHECKED: bool = False  # True: no Out and no reference; candidates are timed unchecked (say so)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.__dict__.get("NAME"):
            cls.NAME = re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower()

    # ---- what the author writes ----------------------------------------------------------------------

    def arguments(self, shape: tuple[int, ...], dtype: str) -> Sequence[Any]:
        """The kernel's arguments in order: tensors (inputs), ``Out(shape)`` (outputs) and scalars."""
        raise SpecError(f"arguments: {type(self).__name__} must define arguments(self, shape, dtype)")

    def reference(self, *inputs: Any) -> Any:
        """torch's answer: the outputs (one tensor, or a tuple in the order of the Out arguments)."""
        raise SpecError(f"reference: {type(self).__name__} must define reference(self, *inputs)")

    # ---- helpers --------------------------------------------------------------------------------------

    def _names(self, shape: Sequence[int]) -> tuple[str, ...]:
        names = self.SHAPE
        if names is None:
            names = tuple(f"S{i}" for i in range(len(shape)))
        if isinstance(names, str) or len(names) != len(shape):
            raise SpecError(
                f"SHAPE: {names!r} must name each of the {len(shape)} dimensions of shape {tuple(shape)}"
            )
        return tuple(names)

    def _e(self, dtype: str) -> int:
        return DTYPE_BYTES[dtype]

    def _dims(self, spec: Any, c: Mapping[str, int], shape: Sequence[int], dtype: str, what: str) -> tuple:
        if callable(spec):
            out = spec(dict(c), tuple(shape))
            out = (out,) if isinstance(out, (int, np.integer)) else tuple(out)
            return tuple(int(x) for x in out)
        if spec is None:
            raise SpecError(
                f"{what}: {type(self).__name__} must set {what} (expressions) or define {what.lower()}()"
            )
        items = (spec,) if isinstance(spec, (str, int)) else tuple(spec)
        env = _env(c, self._names(shape), shape, self._e(dtype))
        return tuple(_eval(x, env, what) for x in items)

    def grid(self, constants: Mapping[str, int], shape: tuple[int, ...], dtype: str = "float32") -> tuple:
        return self._dims(self.GRID, constants, shape, dtype, "GRID")

    def block(
        self, constants: Mapping[str, int], shape: tuple[int, ...] = (), dtype: str = "float32"
    ) -> tuple:
        if callable(self.BLOCK):
            return self._dims(self.BLOCK, constants, shape, dtype, "BLOCK")
        items = (self.BLOCK,) if isinstance(self.BLOCK, (str, int)) else tuple(self.BLOCK)
        env = {**constants, "E": self._e(dtype)}
        return tuple(_eval(x, env, "BLOCK") for x in items)

    def threads(self, constants: Mapping[str, int], dtype: str = "float32") -> int:
        return math.prod(self.block(constants, (), dtype))

    # ---- the tuner's side (numpy only) ---------------------------------------------------------------

    @property
    def DEFAULTS(self) -> dict[str, int]:  # noqa: N802  (a spec constant, derived)
        """The unpadded, unswizzled baseline: the first value of every constant, layout constants at their
        no-op (0 padding, 1 for a swizzle's parts)."""
        out = {k: v[0] for k, v in self.SPACE.items()}
        lay = self.LAYOUT
        if isinstance(lay, TileLayout):
            for expr, neutral in ((lay.pad, 0), *((x, 1) for x in (lay.swizzle or ()))):
                if isinstance(expr, str) and expr in self.SPACE and neutral in self.SPACE[expr]:
                    out[expr] = neutral
        return out

    @property
    def LAYOUT_KEYS(self) -> tuple[str, ...]:  # noqa: N802
        lay = self.LAYOUT
        if isinstance(lay, TileLayout):
            return tuple(sorted(lay.layout_names() & set(self.SPACE)))
        return ()

    @property
    def PATTERN_KEYS(self) -> tuple[str, ...] | None:  # noqa: N802
        keys = getattr(self.PATTERN, "keys", None)
        if keys is None or callable(keys):
            return None
        names = set(keys)
        if getattr(self.PATTERN, "needs_layout", False) and isinstance(self.LAYOUT, TileLayout):
            names |= self.LAYOUT.names()
        return tuple(sorted(names & set(self.SPACE)))

    def layout(self, constants: Mapping[str, int], dtype: str) -> Any:
        lay = self.LAYOUT
        if lay is None:
            return _NO_LAYOUT
        if isinstance(lay, TileLayout):
            return lay.make(constants, self._e(dtype))
        return lay(dict(constants), dtype)

    def _vec(self, constants: Mapping[str, int], dtype: str) -> int:
        lay = self.LAYOUT
        return lay.vec_of(constants, self._e(dtype)) if isinstance(lay, TileLayout) else 1

    def smem_pattern(self, constants: Mapping[str, int], dtype: str, dist: str | None = None) -> Any:
        pat = self.PATTERN
        if pat is None:
            return ()
        lay = self.layout(constants, dtype) if getattr(pat, "needs_layout", False) else None
        if hasattr(pat, "stacked"):  # autopad.pattern.Pattern: the model's stacked form directly
            return pat.stacked(dict(constants), self._e(dtype), layout=lay)
        if hasattr(pat, "instructions"):
            return pat.instructions(dict(constants), self._e(dtype), layout=lay)
        return pat(dict(constants), dtype)

    def smem_bytes(self, constants: Mapping[str, int], dtype: str) -> int:
        """Shared memory per block: the tile's footprint (override for several buffers)."""
        return 0 if self.LAYOUT is None else int(self.layout(constants, dtype).footprint)

    def legal(self, constants: Mapping[str, int], shape: tuple[int, ...], dtype: str) -> Legality:
        """The layout's own check, the architecture's limits, and the restrictions; each with its reason."""
        missing = [k for k in self.SPACE if k not in constants]
        if missing:
            return Legality(False, f"missing constants {missing}")
        if dtype not in self.DTYPES:
            return Legality(False, f"dtype {dtype} is not one of {self.DTYPES}")
        a = get_arch(self.ARCH)
        env = {**constants, "E": self._e(dtype)}
        for r in self.RESTRICTIONS:
            if isinstance(r, str):
                ok = compile_expr(r)(env)
            else:
                ok = r(env)
            if not bool(ok):
                return Legality(
                    False, f"restriction {r if isinstance(r, str) else getattr(r, '__name__', r)!s}"
                )
        try:
            lay = self.layout(constants, dtype)
        except (ValueError, ExprError) as exc:
            return Legality(False, str(exc))
        if self.LAYOUT is not None:
            ok = lay.check(self._vec(constants, dtype), a.smem_per_block)
            if not ok:
                return ok
        smem = self.smem_bytes(constants, dtype)
        if smem > a.smem_per_block:
            return Legality(
                False, f"{smem} bytes of shared memory exceed {a.name}'s {a.smem_per_block} per block"
            )
        try:
            block = self.block(constants, shape, dtype)
            grid = self.grid(constants, shape, dtype)
        except SpecError as exc:
            return Legality(False, str(exc))
        if math.prod(block) > 1024 or any(b < 1 for b in block):
            return Legality(False, f"a block of {block} threads is not 1 to 1024 threads")
        if len(block) > 1 and (block[0] > 1024 or block[1] > 1024 or (len(block) > 2 and block[2] > 64)):
            return Legality(False, f"block {block} exceeds the per-dimension limits (1024, 1024, 64)")
        if any(g < 1 for g in grid) or grid[0] >= 2**31 or any(g > 65535 for g in grid[1:]):
            return Legality(False, f"grid {grid} is outside CUDA's limits (x < 2**31, y and z <= 65535)")
        return Legality(True)

    def launch_info(self, constants: Mapping[str, int], shape: tuple[int, ...], dtype: str) -> dict:
        env = _env(constants, self._names(shape), shape, self._e(dtype))
        info = {
            "blocks": math.prod(self.grid(constants, shape, dtype)),
            "threads": self.threads(constants, dtype),
            "smem_bytes": self.smem_bytes(constants, dtype),
            "tiles_per_block": _eval(self.TILES_PER_BLOCK, env, "TILES_PER_BLOCK"),
        }
        if self.INFLIGHT_BYTES is not None:
            info["inflight_bytes"] = _eval(self.INFLIGHT_BYTES, env, "INFLIGHT_BYTES")
        return info

    def traffic(self, shape: tuple[int, ...], dtype: str) -> dict:
        """Bytes of every tensor argument (read or written once), counted on torch's meta device."""
        return {"bytes": _meta_bytes(self, tuple(shape), dtype), "flops": self._flops(shape, dtype)}

    def _flops(self, shape: Sequence[int], dtype: str) -> int:
        env = _env({}, self._names(shape), shape, self._e(dtype))
        return _eval(self.FLOPS, env, "FLOPS")

    def cache_source(self) -> str:
        """The text that keys this kernel's cache entries (its source and its spec's code)."""
        try:
            return inspect.getsource(type(self))
        except (OSError, TypeError):
            return repr(type(self).__dict__)

    # ---- the measuring side (torch) -------------------------------------------------------------------

    def _call_arguments(self, shape: tuple[int, ...], dtype: str, dist: str | None) -> list:
        sig = inspect.signature(self.arguments)
        args = (
            self.arguments(shape, dtype, dist)
            if "dist" in sig.parameters and dist is not None
            else self.arguments(shape, dtype)
        )
        if args is None or isinstance(args, (str, bytes)) or not hasattr(args, "__iter__"):
            raise SpecError(f"arguments: returned {args!r}; return a list of tensors, Out(...) and scalars")
        return list(args)

    def make_inputs(
        self, shape: tuple[int, ...], dtype: str, device: Any = "cuda", seed: int = 0, dist: str = "uniform"
    ) -> tuple:
        import torch

        device = torch.device(device)
        devices = (
            [device.index if device.index is not None else torch.cuda.current_device()]
            if (device.type == "cuda")
            else []
        )
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(seed)
            with device:
                args = self._call_arguments(tuple(shape), dtype, dist)
        out = []
        for i, a in enumerate(args):
            if isinstance(a, Out):
                out.append(Out(a.shape, a.dtype if a.dtype is not None else _torch_dtype(dtype)))
            elif isinstance(a, torch.Tensor):
                out.append(a.to(device) if a.device != device else a)
            elif isinstance(a, np.ndarray):
                out.append(torch.from_numpy(a).to(device))
            elif isinstance(a, (bool, int, float, np.integer, np.floating)):
                out.append(a)
            else:
                raise SpecError(
                    f"arguments: argument {i} is {type(a).__name__}; give tensors, Out(...) or numbers"
                )
        if not self.UNCHECKED and not any(isinstance(a, Out) for a in out):
            raise SpecError("arguments: no Out(...) argument, so there is nothing to check the kernel by")
        return Inputs(out, shape)

    def alloc_output(self, inputs: Sequence[Any], constants: Mapping[str, int] | None = None) -> Any:
        import torch

        dev = next((a.device for a in inputs if isinstance(a, torch.Tensor)), torch.device("cuda"))
        outs = tuple(torch.empty(o.shape, dtype=o.dtype, device=dev) for o in inputs if isinstance(o, Out))
        return outs[0] if len(outs) == 1 else outs

    def _fill(self, inputs: Sequence[Any], out: Any) -> list:
        outs = iter(out if isinstance(out, tuple) else (out,))
        return [next(outs) if isinstance(a, Out) else a for a in inputs]

    def expected(self, inputs: Sequence[Any]) -> tuple:
        """The reference outputs for the harness: ``reference`` on the non-output arguments."""
        if self.UNCHECKED:
            return ()
        ref = self.reference(*[a for a in inputs if not isinstance(a, Out)])
        refs = tuple(ref) if isinstance(ref, (tuple, list)) else (ref,)
        n = sum(isinstance(a, Out) for a in inputs)
        if len(refs) != n:
            raise SpecError(f"reference: returned {len(refs)} tensor(s) for {n} Out argument(s)")
        return refs

    def check(self, out: Any, ref: Any) -> tuple[bool, str]:
        import torch

        if self.UNCHECKED:
            return True, "not checked: the spec gives no reference"
        outs = out if isinstance(out, tuple) else (out,)
        refs = ref if isinstance(ref, tuple) else (ref,)
        notes = []
        for i, (o, r) in enumerate(zip(outs, refs)):
            r = torch.as_tensor(r, device=o.device)
            if tuple(o.shape) != tuple(r.shape):
                return False, f"output {i}: shape {tuple(o.shape)}, reference {tuple(r.shape)}"
            if not (o.is_floating_point() or r.is_floating_point()):
                bad = int((o.long() != r.long()).sum().item())
                if bad:
                    return False, f"output {i}: {bad} of {o.numel()} elements differ"
                notes.append("exact")
                continue
            od, rd = o.double(), r.double()
            if not torch.isfinite(od[torch.isfinite(rd)]).all():
                return False, f"output {i}: non-finite values where the reference is finite (unwritten?)"
            tol = self._tolerance(o.dtype)
            err = float(torch.linalg.vector_norm(od - rd) / max(float(torch.linalg.vector_norm(rd)), 1e-300))
            if err > tol:
                return False, f"output {i}: relative error {err:.2e} > tolerance {tol:.0e}"
            notes.append(f"rel err {err:.1e}")
        return True, ", ".join(notes)

    def _tolerance(self, torch_dtype: Any) -> float:
        name = str(torch_dtype).replace("torch.", "")
        t = self.TOLERANCE
        if isinstance(t, (int, float)):
            return float(t)
        if isinstance(t, Mapping) and name in t:
            return float(t[name])
        return TOLERANCE.get(name, 1e-5)


def _torch_dtype(dtype: str) -> Any:
    import torch

    return torch.float32 if dtype == "tf32" else getattr(torch, dtype)


@lru_cache(maxsize=256)
def _meta_bytes_cached(spec: Any, shape: tuple[int, ...], dtype: str) -> int:
    try:
        import torch
    except ImportError:
        raise SpecError(
            f"traffic: {type(spec).__name__} counts its bytes from its arguments, which needs torch; "
            f"define traffic(self, shape, dtype) -> {{'bytes': ..., 'flops': ...}} to rank without torch"
        ) from None
    with torch.device("meta"):
        args = spec._call_arguments(shape, dtype, None)
    total = 0
    for a in args:
        if isinstance(a, Out):
            n = math.prod(a.shape)
            dt = a.dtype if a.dtype is not None else _torch_dtype(dtype)
            total += n * torch.empty((), dtype=dt, device="meta").element_size()
        elif isinstance(a, torch.Tensor):
            total += a.numel() * a.element_size()
        elif isinstance(a, np.ndarray):
            total += a.nbytes
    return total


def _meta_bytes(spec: Any, shape: tuple[int, ...], dtype: str) -> int:
    return _meta_bytes_cached(spec, shape, dtype)


def _shape_of(inputs: Sequence[Any]) -> tuple[int, ...]:
    shape = getattr(inputs, "shape", None)
    if not isinstance(shape, tuple) or not shape:
        raise SpecError("run: the inputs do not carry the problem shape; build them with make_inputs()")
    return shape


_KERNEL_RE = re.compile(r'extern\s+"C"\s+__global__\s+(?:__launch_bounds__\([^)]*\)\s+)?void\s+(\w+)\s*\(')


@dataclass(frozen=True)
class _BuiltCuda:
    kernel: Any
    constants: dict
    dtype: str


class CudaKernel(KernelBase):
    """A raw CUDA kernel: ``SOURCE`` (or ``SOURCE_FILE``), compiled at run time with NVRTC per candidate.

    Every constant of the candidate is a ``#define``, and so are the layout's parameters under fixed names
    (``AP_PAD``, ``AP_SW_VEC``, ... and ``AP_OFF(r, c)``, see kernels/cuda/autopad.cuh). ``KERNEL`` names
    the ``extern "C" __global__`` function (found in the source when there is one). Shared memory is
    static by default (``__shared__ T tile[AP_SMEM_ELEMS]``); set ``DYNAMIC_SMEM = True`` for
    ``extern __shared__``, and the launch passes the layout's footprint. Python ints are passed as
    ``int``, floats as ``float``; give numpy scalars (``np.int64(n)``) for other widths.
    """

    BACKEND = "cuda"
    SOURCE: str = ""
    SOURCE_FILE: str | None = None
    KERNEL: str | None = None
    DYNAMIC_SMEM: bool = False

    def source(self) -> str:
        if self.SOURCE_FILE:
            from pathlib import Path

            return Path(self.SOURCE_FILE).read_text()
        if not self.SOURCE:
            raise SpecError(f"SOURCE: {type(self).__name__} has no CUDA source (set SOURCE or SOURCE_FILE)")
        return self.SOURCE

    def cache_source(self) -> str:
        return self.source() + "\n" + super().cache_source()

    def kernel_name(self) -> str:
        if self.KERNEL:
            return self.KERNEL
        found = _KERNEL_RE.findall(self.source())
        if len(found) != 1:
            raise SpecError(
                f'KERNEL: the source has {len(found)} extern "C" __global__ functions ({found}); '
                "set KERNEL to the one to tune"
            )
        return found[0]

    def defines(self, constants: Mapping[str, int], dtype: str) -> dict[str, int]:
        d: dict[str, int] = {k: int(v) for k, v in constants.items()}
        d["AP_ELEM_BYTES"] = self._e(dtype)
        if self.LAYOUT is not None:
            lay = self.layout(constants, dtype)
            for k, v in getattr(lay, "cuda_defines", dict)().items():
                d[f"AP_{k}"] = int(v)
            for name in ("rows", "cols"):
                if hasattr(lay, name):
                    d[f"AP_{name.upper()}"] = int(getattr(lay, name))
            d["AP_SMEM_ELEMS"] = -(-int(lay.footprint) // self._e(dtype))
        return d

    def build(self, constants: Mapping[str, int], dtype: str) -> _BuiltCuda:
        from . import cuda_runtime

        k = cuda_runtime.load_kernel(self.source(), self.kernel_name(), self.defines(constants, dtype))
        return _BuiltCuda(k, dict(constants), dtype)

    def run(self, built: _BuiltCuda, inputs: Sequence[Any], out: Any) -> None:
        import torch

        from . import cuda_runtime

        args = []
        for a in self._fill(inputs, out):
            if isinstance(a, torch.Tensor):
                args.append(a)
            elif isinstance(a, bool):
                args.append(np.int32(a))
            elif isinstance(a, int):
                args.append(np.int32(a))
            elif isinstance(a, float):
                args.append(np.float32(a))
            else:
                args.append(a)
        shape = _shape_of(inputs)
        grid = self.grid(built.constants, shape, built.dtype)
        block = self.block(built.constants, shape, built.dtype)
        smem = self.smem_bytes(built.constants, built.dtype) if self.DYNAMIC_SMEM else 0
        cuda_runtime.launch(built.kernel, grid, block, args, smem)


class TritonKernel(KernelBase):
    """A ``@triton.jit`` or ``@gluon.jit`` kernel: ``KERNEL`` (the function, or a zero-argument function
    returning it, so that triton is imported only when measuring).

    Constants that are parameters of the kernel are passed as constexpr keywords; ``NUM_WARPS`` and
    ``NUM_STAGES`` (ints or expressions) become the launch options. For Gluon, ``LAYOUT_ARG`` names the
    constexpr parameter that receives the candidate's shared layout (as a ``gl.*SharedLayout``), and
    ``REGISTER_LAYOUTS`` maps constexpr parameters to ``autopad.gluon_model.Blocked`` templates whose
    fields may be constant names; the same objects describe the kernel's accesses to the model, so a Gluon
    kernel needs no hand-written pattern.
    """

    BACKEND = "triton"
    KERNEL: Any = None
    NUM_WARPS: Any = 4
    NUM_STAGES: Any = None
    LAYOUT_ARG: str | None = None
    REGISTER_LAYOUTS: dict[str, Any] = {}
    # ("store" | "load", a REGISTER_LAYOUTS name): the kernel's smem.store(x) / smem.load(L) of the whole
    # LAYOUT tile in that register layout. With these and no PATTERN, the model takes every lane's address
    # from the layouts themselves (autopad.gluon_model): no hand-written pattern.
    SMEM_ACCESSES: tuple[tuple[str, str], ...] = ()

    def _gluon_pattern(self) -> Any:
        cls = type(self)
        cached = cls.__dict__.get("_derived_pattern")
        if cached is not None:
            return cached
        from .pattern import Pattern, gluon_load, gluon_store

        if not isinstance(self.LAYOUT, TileLayout):
            raise SpecError("SMEM_ACCESSES: the shared tile must be an autopad.tile(...) LAYOUT")
        shape = (self.LAYOUT.rows, self.LAYOUT.cols)
        accesses = []
        for op, name in self.SMEM_ACCESSES:
            if op not in ("store", "load") or name not in self.REGISTER_LAYOUTS:
                raise SpecError(
                    f"SMEM_ACCESSES: ({op!r}, {name!r}) must be ('store' | 'load', one of "
                    f"{sorted(self.REGISTER_LAYOUTS)})"
                )
            make = gluon_store if op == "store" else gluon_load
            accesses.append(make(self.REGISTER_LAYOUTS[name], shape, name=f"{op} {name}"))
        pat = Pattern(accesses=accesses)
        cls._derived_pattern = pat
        return pat

    @property
    def PATTERN_KEYS(self) -> tuple[str, ...] | None:  # noqa: N802
        if self.PATTERN is None and self.SMEM_ACCESSES:
            keys = set(self._gluon_pattern().keys) | set(self.LAYOUT.names())
            return tuple(sorted(keys & set(self.SPACE)))
        return super().PATTERN_KEYS

    def smem_pattern(self, constants: Mapping[str, int], dtype: str, dist: str | None = None) -> Any:
        if self.PATTERN is None and self.SMEM_ACCESSES:
            lay = self.layout(constants, dtype)
            return self._gluon_pattern().stacked(dict(constants), self._e(dtype), layout=lay)
        return super().smem_pattern(constants, dtype, dist)

    def jit(self) -> Any:
        k = self.KERNEL
        if k is None:
            raise SpecError(f"KERNEL: {type(self).__name__} must set KERNEL to its @triton.jit function")
        if not hasattr(k, "arg_names") and callable(k):
            k = k()
        if not hasattr(k, "arg_names"):
            raise SpecError(f"KERNEL: {k!r} is not a @triton.jit or @gluon.jit function")
        return k

    def num_warps(self, constants: Mapping[str, int]) -> int:
        return _eval(self.NUM_WARPS, dict(constants), "NUM_WARPS")

    def threads(self, constants: Mapping[str, int], dtype: str = "float32") -> int:
        return 32 * self.num_warps(constants)

    def block(
        self, constants: Mapping[str, int], shape: tuple[int, ...] = (), dtype: str = "float32"
    ) -> tuple:
        return (self.threads(constants, dtype),)

    def launch_options(self, constants: Mapping[str, int]) -> dict[str, int]:
        out = {"num_warps": self.num_warps(constants)}
        if self.NUM_STAGES is not None:
            out["num_stages"] = _eval(self.NUM_STAGES, dict(constants), "NUM_STAGES")
        return out

    def kernel_args(self, constants: Mapping[str, int]) -> list[str]:
        """The constants the kernel takes as parameters (what a ``triton.Config`` may hold)."""
        try:
            names = self.jit().arg_names
        except Exception:
            return sorted(constants)
        return [n for n in names if n in constants]

    def cache_source(self) -> str:
        try:
            fn = self.jit()
            text = inspect.getsource(getattr(fn, "fn", fn))
        except Exception:
            text = repr(self.KERNEL)
        return text + "\n" + super().cache_source()

    def build(self, constants: Mapping[str, int], dtype: str) -> dict[str, Any]:
        fn = self.jit()
        kwargs = {n: int(constants[n]) for n in fn.arg_names if n in constants}
        if self.LAYOUT_ARG:
            from .gluon_model import to_gluon

            kwargs[self.LAYOUT_ARG] = to_gluon(self.layout(constants, dtype))
        for name, blocked in self.REGISTER_LAYOUTS.items():
            b = blocked(dict(constants)) if callable(blocked) else blocked
            kwargs[name] = b.gluon()
        return {
            "kernel": fn,
            "kwargs": kwargs,
            "options": self.launch_options(constants),
            "constants": dict(constants),
            "dtype": dtype,
        }

    def run(self, built: dict[str, Any], inputs: Sequence[Any], out: Any) -> None:
        args = self._fill(inputs, out)
        grid = self.grid(built["constants"], _shape_of(inputs), built["dtype"])
        built["kernel"][grid](*args, **built["kwargs"], **built["options"])
