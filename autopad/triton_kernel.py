"""``TritonKernel``: the spec base for a ``@triton.jit`` or ``@gluon.jit`` kernel.

What: the kernel function (``KERNEL``, or a function returning it so that triton loads only when
measuring), constexpr keywords from the candidate's constants, ``NUM_WARPS`` / ``NUM_STAGES`` as launch
options, the Gluon shared layout (``LAYOUT_ARG``) and register layouts (``REGISTER_LAYOUTS``), and the
access pattern derived from those layouts (``SMEM_ACCESSES``: no hand-written pattern).

Why apart: the only part of a Triton spec that knows about Triton and Gluon; what every spec shares is in
kernel_base.py. Moved from autopad/bases.py unchanged; ``autopad.bases`` re-exports every name.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from .gluon_blocked import _FIELDS as _BLOCKED_FIELDS
from .kernel_args import _shape_of
from .kernel_base import KernelBase
from .spec import DTYPE_BYTES, SpecError
from .tile_spec import TileLayout, _eval

__all__ = ["TritonKernel"]


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
        entries = self.SMEM_ACCESSES
        # (a string, or one pair not inside a tuple, was unpacked letter by letter: "too many values")
        if isinstance(entries, str) or not all(isinstance(e, (tuple, list)) and len(e) == 2 for e in entries):
            raise SpecError(
                f"SMEM_ACCESSES: give a tuple of (op, layout name) pairs such as (('store', 'IN'), "
                f"('load', 'OUT')), got {entries!r}"
            )
        accesses = []
        for op, name in entries:
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

    def expressions(self) -> list[tuple[str, Any, set[str], bool]]:
        """KernelBase's, and the launch options (over the constants) and each register layout's fields (over
        the constants and E), as ``num_warps``, ``launch_options``, ``build`` and the model evaluate them."""
        constants = set(self.SPACE)
        out = super().expressions()
        if type(self).num_warps is TritonKernel.num_warps:
            out.append(("NUM_WARPS", self.NUM_WARPS, constants, False))
        if type(self).launch_options is TritonKernel.launch_options:
            out.append(("NUM_STAGES", self.NUM_STAGES, constants, False))
        for name, blocked in dict(self.REGISTER_LAYOUTS).items():
            fields = [x for f in _BLOCKED_FIELDS for x in getattr(blocked, f, ()) if isinstance(x, str)]
            out.append((f"REGISTER_LAYOUTS[{name!r}]", tuple(fields), constants | {"E"}, False))
        return out

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
        # the register layouts resolved as the model resolves them (pattern.py): over the constants and E
        env = {**constants, "E": DTYPE_BYTES[dtype]}
        for name, blocked in self.REGISTER_LAYOUTS.items():
            b = blocked(env) if callable(blocked) else blocked
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
