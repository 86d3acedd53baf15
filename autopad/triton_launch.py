"""A Triton or Gluon kernel launched without the JIT's per-call work, for ``autopad.ops``' hot path.

Why: ``kernel[grid](*args)`` binds every argument, computes the specialisation key, looks the compiled
kernel up and checks the globals on every call; with three Gluon ``TensorDescriptor`` objects made per
call (each validated in ``__post_init__``) ``autopad.ops.matmul`` cost 90 us of host time per call on the
H200 (2026-12-01, benchmarks/profile_ops_host.py) against 18-21 us for ``a @ b``. A bound op launches the
same kernel with the same integers every time: only the tensors change. So the first call goes through the
JIT (which compiles or finds the kernel and returns it), and later calls hand the compiled kernel's own
launcher (``CompiledKernel.run``: the C launcher that also encodes each TMA descriptor) the arguments as
the JIT would have bound them.

What keeps that equal to the JIT's call (otherwise a call takes the JIT again):

- the integers and constexprs are fixed when the launch is made (``fixed``), so the specialisation that
  depends on their values (``== 1``, divisibility by 16) cannot change;
- the JIT specialises a pointer on whether it is a multiple of 16 bytes: the compiled kernel is adopted
  only if every tensor (or descriptor base) of the first call was, and a later call with one that is not
  goes through the JIT, which compiles its own variant;
- the device is the one the kernel was adopted on, and no launch hook is set (a profiler's hook gets the
  JIT's call, with its launch metadata; without one the launch metadata and hooks are None, which the
  launcher skips);
- every parameter is passed, positionally or (after the positional ones) as a keyword of ``opts`` (Gluon
  kernels take ``num_warps`` as a constexpr parameter), nothing filled from a default, so the argument
  list is the JIT's ``bound_args`` in order.

A TMA descriptor argument is given as its tensor after the first call. Triton's launcher would turn a host
descriptor into a CUtensorMap (``make_tensordesc_arg``: the tensor's address, shape and strides with the
compiled kernel's block shape and swizzle) and the kernel's shape and stride parameters on every call;
here that expansion is kept per (address, shape, strides), which is all a tensor map encodes, so a call
with the same tensors (a loop, the caching allocator's recycled blocks) encodes nothing, and the
expanded arguments go straight to the C launcher under the wrapper (no scratch buffers: the kernels
``autopad.ops`` binds need none; a kernel that does takes the wrapper with ``Desc`` stand-ins).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["Desc", "FastLaunch"]


class Desc:
    """What Triton's launcher reads of a host ``TensorDescriptor`` (base, shape, strides, padding)."""

    __slots__ = ("base", "shape", "strides")
    padding = "zero"

    def __init__(self, base: Any, shape: Sequence[int], strides: Sequence[int]) -> None:
        self.base, self.shape, self.strides = base, shape, strides


def _hooked(hook: Any) -> bool:
    """Whether a launch hook would run: Triton 3.6 keeps a ``HookChain`` (empty: nothing to call) where
    older versions kept None; anything else is a hook."""
    return hook is not None and bool(getattr(hook, "calls", True))


def _raw_launcher(run: Any, n_desc: int) -> Any:
    """The C launcher under Triton's descriptor wrapper (``wrap_handle_tensordesc``'s ``launcher``), or
    None where this Triton keeps it elsewhere or the kernel needs scratch buffers."""
    if getattr(run, "global_scratch_size", 1) or getattr(run, "profile_scratch_size", 1):
        return None
    launch = getattr(run, "launch", None)
    if n_desc == 0:
        return launch
    import inspect

    try:
        raw = inspect.getclosurevars(launch).nonlocals.get("launcher")
    except TypeError:
        return None
    return raw if callable(raw) else None


class FastLaunch:
    """``kernel[grid](*varying, *fixed, **opts)``, through the JIT the first time and the compiled kernel's
    launcher afterwards.

    ``varying``: the per-call tensors or descriptors (leading parameters); ``fixed``: every later parameter
    (integers, constexprs), all positional; ``opts``: keywords (``num_warps``, ...). ``first(*varying)``
    takes real descriptors; ``launch(*tensors)`` takes each descriptor's tensor instead and returns False
    (nothing launched) where the JIT must serve, the caller then calls ``first``.
    """

    __slots__ = (
        "kernel", "grid", "fixed", "opts", "compiled", "device", "_tail", "_desc", "_maps", "_stream", "_dev",
        "_hook", "_g", "_raw", "_head",
    )  # fmt: skip

    def __init__(self, kernel: Any, grid: Sequence[int], fixed: Sequence[Any], opts: dict[str, Any]) -> None:
        self.kernel, self.grid, self.fixed, self.opts = kernel, tuple(grid), tuple(fixed), dict(opts)
        g = (*self.grid, 1, 1)
        self._g = (int(g[0]), int(g[1]), int(g[2]))
        self.compiled: Any = None
        self.device = -1
        self._tail: tuple = ()  # fixed, then the parameters passed as keywords, in the kernel's order
        self._desc: tuple[int, ...] = ()  # positions of the descriptor arguments among ``varying``
        self._maps: list[dict] = []  # per descriptor: (address, shape, strides) -> its expanded arguments
        self._stream = self._dev = self._hook = self._raw = self._head = None

    @property
    def ready(self) -> bool:
        return self.compiled is not None

    def first(self, *varying: Any) -> None:
        """The JIT's call; adopts the compiled kernel it returns where that is safe (see the module)."""
        ret = self.kernel[self.grid](*varying, *self.fixed, **self.opts)
        if self.compiled is None:
            self._adopt(ret, varying)

    def _adopt(self, ret: Any, varying: tuple) -> None:
        names = getattr(self.kernel, "arg_names", None)
        if names is None:
            return
        rest = list(names[len(varying) + len(self.fixed) :])
        if len(names) < len(varying) + len(self.fixed) or any(r not in self.opts for r in rest):
            return  # a parameter came from its default: the JIT's bound list is not ours
        if not all(hasattr(ret, a) for a in ("run", "function", "packed_metadata")):
            return  # not a compiled kernel (an interpreter, a stand-in)
        if any(getattr(v, "base", v).data_ptr() % 16 for v in varying):
            return  # compiled for an unaligned pointer: keep asking the JIT
        try:
            import torch
            import triton

            run = ret.run  # loads the module and its function handles once
            self._stream = torch._C._cuda_getCurrentRawStream
            self._dev = torch._C._cuda_getDevice
            self._hook = triton.knobs.runtime
            self.device = self._dev()
        except (ImportError, AttributeError, RuntimeError):
            return
        self._desc = tuple(i for i, v in enumerate(varying) if hasattr(v, "block_shape"))
        self._maps = [{} for _ in self._desc]
        metas = getattr(ret.metadata, "tensordesc_meta", None) or [None] * len(self._desc)
        self._raw = _raw_launcher(run, len(self._desc)) if len(metas) == len(self._desc) else None
        if self._raw is not None:
            # the C launcher's leading arguments after the function: cooperative grid, PDL, the two scratch
            # buffers (none), the packed metadata, launch metadata and hooks (none)
            coop, pdl = run.launch_cooperative_grid, run.launch_pdl
            self._head = (coop, pdl, None, None, ret.packed_metadata, None, None, None)
        self._tail = (*self.fixed, *(self.opts[r] for r in rest))
        self.compiled = (ret, run, ret.function, ret.packed_metadata, metas)

    def _expand(self, j: int, t: Any) -> tuple:
        """Descriptor ``j``'s launcher arguments for tensor ``t`` (Triton's own expansion, kept per address,
        shape and strides)."""
        key = (t.data_ptr(), tuple(t.shape), tuple(t.stride()))
        got = self._maps[j].get(key)
        if got is None:
            from triton.backends.nvidia.driver import make_tensordesc_arg

            got = tuple(make_tensordesc_arg(Desc(t, list(key[1]), list(key[2])), self.compiled[4][j]))
            if len(self._maps[j]) >= 64:  # bounded: a long run of new addresses starts afresh
                self._maps[j].clear()
            self._maps[j][key] = got
        return got

    def launch(self, *varying: Any) -> bool:
        """Launch through the compiled kernel's launcher; False (nothing launched) where the JIT must serve:
        nothing adopted yet, a pointer not a multiple of 16 bytes, another current device, a launch hook."""
        c = self.compiled
        if c is None:
            return False
        for v in varying:
            if v.data_ptr() & 15:
                return False
        dev = self._dev()
        if (
            dev != self.device
            or _hooked(self._hook.launch_enter_hook)
            or _hooked(self._hook.launch_exit_hook)
        ):
            return False
        g0, g1, g2 = self._g
        desc = self._desc
        if self._raw is not None:
            if desc:
                args: list = []
                j = 0
                for i, v in enumerate(varying):
                    if j < len(desc) and desc[j] == i:
                        args.extend(self._expand(j, v))
                        j += 1
                    else:
                        args.append(v)
                self._raw(g0, g1, g2, self._stream(dev), c[2], *self._head, *args, *self._tail)
            else:
                self._raw(g0, g1, g2, self._stream(dev), c[2], *self._head, *varying, *self._tail)
            return True
        if desc:
            varying = tuple(
                Desc(v, tuple(v.shape), v.stride()) if i in desc else v for i, v in enumerate(varying)
            )
        c[1](g0, g1, g2, self._stream(dev), c[2], c[3], None, None, None, *varying, *self._tail)
        return True
