"""``KernelBase``: what the CUDA and Triton spec bases share (autopad/bases.py tells the author's side).

What: from what only the author writes (``arguments``, ``reference``, SPACE, SHAPE, LAYOUT, PATTERN, GRID,
BLOCK, ...) it derives the rest of the tuner's spec (autopad/spec.py): ``legal`` (the layout's own check,
the architecture's shared-memory and launch limits, the ``RESTRICTIONS``), ``layout``, ``smem_pattern``,
``launch_info``, ``traffic``, ``cache_source`` on the tuner's side (numpy only), and ``make_inputs``,
``alloc_output``, ``expected``, ``check`` (``TOLERANCE`` per dtype) on the measuring side (torch, loaded
inside the functions).

Why apart: the backends' own parts (compiling and launching: cuda_kernel.py, triton_kernel.py) vary; this
does not. Moved from autopad/bases.py unchanged; ``autopad.bases`` re-exports every name.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from .arch import get_arch
from .expr import ExprError, compile_expr, names_in
from .kernel_args import Inputs, Out, _meta_bytes, _torch_dtype
from .layouts import Legality, Padded
from .spec import DTYPE_BYTES, SpecError, is_tolerance
from .tile_spec import TileLayout, _env, _eval

__all__ = ["KernelBase", "TOLERANCE", "batch_columns", "batch_rows", "sibling_files"]

# relative Frobenius error allowed per dtype when comparing with the reference (integers: exact)
TOLERANCE = {
    "float64": 1e-10,
    "float32": 1e-5,
    "tf32": 3e-3,
    "float16": 3e-3,
    "bfloat16": 1e-2,
    "float8_e4m3fn": 6e-2,
}


def sibling_files(module_file: str, *names: str) -> tuple[str, ...]:
    """The paths of ``names`` in ``module_file``'s folder: a spec's ``SOURCE_FILES`` (what keys its tuning
    cache: the kernel source and the Python modules that decide what is built, launched or predicted)."""
    from pathlib import Path

    return tuple(str(Path(module_file).with_name(n)) for n in names)


def batch_rows(columns: Mapping[str, Any]) -> int:
    """How many candidates a ``legal_batch``'s columns hold (0 when no column is given)."""
    return len(next(iter(columns.values()))) if columns else 0


def batch_columns(
    columns: Mapping[str, Any],
    keys: Iterable[str],
    defaults: Mapping[str, int] | None = None,
    dtype: Any = None,
) -> dict[str, np.ndarray]:
    """The columns ``keys`` as arrays (of ``dtype`` where given); a key absent from ``columns`` is filled
    with its entry of ``defaults``, the value ``legal`` reads for it when a candidate leaves it out."""
    defaults = defaults or {}
    n = batch_rows(columns)
    return {
        k: np.asarray(columns[k], dtype=dtype) if k in columns else np.full(n, defaults[k], dtype=dtype)
        for k in keys
    }


_NO_LAYOUT = Padded(1, 1, 4)  # a kernel with no tuned tile: nothing for the model to score
_LEGAL = Legality(True)  # ``legal_preamble``'s answer when every check passes (asked per candidate)
# the spec constants that may be given as functions: LAYOUT (constants, dtype) -> layout, PATTERN
# (constants, dtype) -> instructions, GRID and BLOCK (constants, shape) -> dims
_FUNCTION_CONSTANTS = ("LAYOUT", "PATTERN", "GRID", "BLOCK")


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
        # a plain function given as one of these constants is a value, not a method: set on the class it
        # would be bound and called with the spec as an extra first argument (a TypeError); one written
        # as a method (its first parameter ``self``) stays one
        for name in _FUNCTION_CONSTANTS:
            v = cls.__dict__.get(name)
            if inspect.isfunction(v) and next(iter(inspect.signature(v).parameters), None) != "self":
                setattr(cls, name, staticmethod(v))

    # ---- what the author writes ----------------------------------------------------------------------

    def arguments(self, shape: tuple[int, ...], dtype: str) -> Sequence[Any]:
        """The kernel's arguments in order: tensors (inputs), ``Out(shape)`` (outputs) and scalars."""
        raise SpecError(f"arguments: {type(self).__name__} must define arguments(self, shape, dtype)")

    def reference(self, *inputs: Any) -> Any:
        """torch's answer: the outputs (one tensor, or a tuple in the order of the Out arguments)."""
        raise SpecError(f"reference: {type(self).__name__} must define reference(self, *inputs)")

    def _evaluates(self, *methods: str) -> bool:
        """Whether the base's own ``methods`` evaluate the fields (a subclass that overrides one reads them,
        or other names, its own way: its fields are not checked)."""
        return all(getattr(type(self), m) is getattr(KernelBase, m, None) for m in methods)

    def expressions(self) -> list[tuple[str, Any, set[str], bool]]:
        """(field, its expression or expressions, the names it is evaluated with, whether those include the
        shape's) of every expression field the base evaluates: GRID, BLOCK, TILES_PER_BLOCK, INFLIGHT_BYTES,
        FLOPS, where the method that reads it is the base's (a subclass adds its own fields)."""
        constants = set(self.SPACE) | {"E"}
        shape = set(self.SHAPE) if isinstance(self.SHAPE, (tuple, list)) else set()
        out = []  # _env's names: the constants, the shape's names, E (the element's bytes)
        if self._evaluates("grid"):
            out.append(("GRID", self.GRID, constants | shape, True))
        if self._evaluates("block"):
            out.append(("BLOCK", self.BLOCK, constants, False))
        if self._evaluates("launch_info"):
            out.append(("TILES_PER_BLOCK", self.TILES_PER_BLOCK, constants | shape, True))
            out.append(("INFLIGHT_BYTES", self.INFLIGHT_BYTES, constants | shape, True))
        if self._evaluates("traffic", "_flops"):
            out.append(("FLOPS", self.FLOPS, shape | {"E"}, True))
        return out

    def check_expressions(self) -> None:
        """Each expression (``expressions``) is an int or integer arithmetic over only what it is evaluated
        with, checked when the spec is loaded (``KernelSpec``): a misspelt name was found only when every
        candidate failed on it, reported as "shape: ... has no legal candidate for shape"."""
        for what, spec, known, sees_shape in self.expressions():
            if spec is None or callable(spec):
                continue
            for text in tuple(spec) if isinstance(spec, (tuple, list)) else (spec,):
                try:
                    compile_expr(text)  # an int (numpy's too) or text in the whitelist
                except ExprError as e:
                    raise SpecError(f"{what}: {e}") from None
                # without SHAPE the dims are S0, S1, ... (as many as the shape has), where the shape is given
                free = sees_shape and self.SHAPE is None
                unknown = sorted(n for n in names_in(text) - known if not (free and re.fullmatch(r"S\d+", n)))
                if unknown:
                    allowed = ", ".join(sorted(known))
                    raise SpecError(
                        f"{what}: {text!r} names {', '.join(unknown)}, which is not one of {allowed}"
                    )

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

    def legal_preamble(
        self,
        constants: Mapping[str, int],
        shape: tuple[int, ...] | None,
        dtype: str,
        keys: Iterable[str] | None = None,
    ) -> Legality:
        """The checks every spec's ``legal`` starts with, in this order, each with its reason: the constants
        ``keys`` (default: every one of SPACE; a spec that reads some with a default leaves those out) are
        all given, ``dtype`` is one of DTYPES, and the spec's ``check_shape(shape)`` raises no ValueError
        (not asked when ``shape`` is None: a spec whose ``legal`` judges the shape its own way).
        Legality(True) when all pass; the built-in specs' ``legal`` and the derived one below begin with
        it."""
        missing = [k for k in (self.SPACE if keys is None else keys) if k not in constants]
        if missing:
            return Legality(False, f"missing constants {missing}")
        if dtype not in self.DTYPES:
            return Legality(False, f"dtype {dtype} is not one of {self.DTYPES}")
        check_shape = getattr(self, "check_shape", None) if shape is not None else None
        if check_shape is not None:
            try:
                check_shape(tuple(shape))
            except ValueError as exc:
                return Legality(False, str(exc))
        return _LEGAL

    def legal_batch_preamble(
        self,
        columns: Mapping[str, Any],
        shape: tuple[int, ...] | None,
        dtype: str,
        keys: Iterable[str] | None = None,
    ) -> np.ndarray | None:
        """``legal_preamble`` for a ``legal_batch`` (``columns``: constant -> array, a candidate per entry),
        asked with the ``shape`` and ``keys`` its ``legal`` gives ``legal_preamble``: None when the whole
        batch can be judged (every column of ``keys`` given, ``dtype`` allowed, ``check_shape`` passes),
        else the batch's answer, all False (``legal`` refuses every row for the same reason, never raises).
        A column left out of ``keys`` is one ``legal`` reads with a default: ``batch_columns`` fills it."""
        if self.legal_preamble(columns, shape, dtype, keys):  # asks only ``k in columns`` of the constants
            return None
        return np.zeros(batch_rows(columns), dtype=bool)

    def legal(self, constants: Mapping[str, int], shape: tuple[int, ...], dtype: str) -> Legality:
        """The layout's own check, the architecture's limits, and the restrictions; each with its reason."""
        ok = self.legal_preamble(constants, None, dtype)
        if not ok:
            return ok
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
            tol = self._tolerance(o.dtype)
            if o.is_complex() or r.is_complex():  # .long() / .double() would drop the imaginary parts
                # (a lazily conjugated or negated tensor, x.conj() or x.mH, has no real view until resolved)
                o, r = (
                    torch.view_as_real(x.to(torch.complex128).resolve_conj().resolve_neg()) for x in (o, r)
                )
            if not (o.is_floating_point() or r.is_floating_point()):
                bad = int((o.long() != r.long()).sum().item())
                if bad:
                    return False, f"output {i}: {bad} of {o.numel()} elements differ"
                notes.append("exact")
                continue
            od, rd = o.double(), r.double()
            finite = torch.isfinite(rd)
            # where the reference is NaN or infinite the output must be the same; the error below is taken
            # over the finite entries alone (one NaN in it made the error NaN, and NaN > tol passed anything)
            same = (od == rd) | (torch.isnan(od) & torch.isnan(rd))
            bad = int((~finite & ~same).sum().item())
            if bad:
                return False, f"output {i}: {bad} elements differ where the reference is NaN or infinite"
            od, rd = od[finite], rd[finite]
            if not torch.isfinite(od).all():
                return False, f"output {i}: non-finite values where the reference is finite (unwritten?)"
            err = float(torch.linalg.vector_norm(od - rd) / max(float(torch.linalg.vector_norm(rd)), 1e-300))
            if not err <= tol:  # (written so that a NaN error fails)
                return False, f"output {i}: relative error {err:.2e} > tolerance {tol:.0e}"
            notes.append(f"rel err {err:.1e}")
        return True, ", ".join(notes)

    def _tolerance(self, torch_dtype: Any) -> float:
        name = str(torch_dtype).replace("torch.", "")
        t = self.TOLERANCE
        if is_tolerance(t):  # a number, numpy's too (the load check refuses any other)
            return float(t)
        if isinstance(t, Mapping) and name in t:
            return float(t[name])
        return TOLERANCE.get(name, 1e-5)
