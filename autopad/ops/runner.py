"""The hot path of ``autopad.ops``: one bound closure per op, shape, dtype and device, built on first use.

The first call of a shape does the work once: the plan (``plans``), the constants (``policy.decide``: the
tuned pick, a reusable neighbour's, a fresh tune or the model's), the build (``spec.build``), the launcher
(``spec.launcher(built, shape, dtype)`` where the spec has one, else ``spec.run``), and a template of the
output. The closure it leaves in ``FAST_*`` then costs a call: the output's allocation, the spec's
``inputs_from`` (or the arguments as they are) and the launch. No cache file, model or spec lookup is on
that path; the public functions (``api``) reach the closure with one dictionary lookup.

Under the registered operator, the CUDA implementations below take any strides (a non-contiguous input is
made contiguous first) and empty tensors; the fast path in ``api`` only serves contiguous inputs.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from ..bases import Inputs
from . import peer, plans, policy
from .pitch import is_pitched

__all__ = [
    "FAST_T",
    "FAST_H",
    "FAST_M",
    "Bound",
    "bound",
    "transpose_impl",
    "histogram_impl",
    "matmul_impl",
    "record",
    "decisions",
    "forget",
    "forget_fast",
    "flat_transpose",
    "kernel_call",
]

FAST_T: dict[tuple, Callable[[Any], Any]] = {}  # (shape, dtype, device, backend) -> fn(x)
FAST_H: dict[tuple, Callable[..., Any]] = {}  # (shape, dtype, device, bins, dist, backend[, weights]) -> fn
FAST_M: dict[tuple, Callable[[Any, Any], Any]] = {}  # (a.shape, b.shape, dtypes, devices, backend) -> fn
_BOUND: dict[tuple, Bound] = {}  # kernel-level: (name, backend, shape, dtype, dist, device) -> Bound
PEERS: dict[tuple, peer.Verdict] = {}  # the same keys: the matmul's kernel or torch.mm (``peer``)
_LOCK = threading.RLock()  # the first call of a shape: one thread decides, tunes and builds
_get_dev = getattr(torch._C, "_cuda_getDevice", None)


@dataclass(frozen=True)
class Bound:
    """A kernel decided and built for one shape on one device: what ``decisions()`` reports."""

    spec: Any
    shape: tuple[int, ...]
    dtype: str
    dist: str | None
    device: int
    decision: policy.Decision
    built: Any
    run: Callable[[Any, Any], None]


def bound(plan: plans.Plan, device: int) -> Bound:
    """The decided and built kernel of ``plan`` on ``device`` (decided once per process)."""
    spec = plan.spec
    key = (spec.NAME, spec.BACKEND, plan.shape, plan.dtype, plan.dist, device)
    b = _BOUND.get(key)
    if b is not None:
        return b
    with _LOCK:
        b = _BOUND.get(key)
        if b is None:
            with torch.cuda.device(device):
                decision = policy.decide(spec, plan.shape, plan.dtype, plan.dist, device)
                built = spec.build(decision.params, plan.dtype)
                launcher = getattr(spec.impl, "launcher", None)
                if callable(launcher):
                    run = launcher(built, plan.shape, plan.dtype)
                else:
                    run = functools.partial(spec.impl.run, built)
            b = _BOUND[key] = Bound(spec, plan.shape, plan.dtype, plan.dist, device, decision, built, run)
    return b


def _as_inputs(items: Any, shape: tuple[int, ...]) -> Inputs:
    """``Inputs(items, shape)`` without re-checking the shape (it is the plan's, ints already)."""
    obj = tuple.__new__(Inputs, items)
    obj.shape = shape
    return obj


def kernel_call(b: Bound, args: tuple) -> Callable[..., Any]:
    """``call(*op_args) -> out`` for a bound kernel: the spec's inputs, a fresh output, the launch.

    Made from the first call's arguments (``args``): whether ``inputs_from`` returns ``Inputs`` with their
    shape, and the output's shape, dtype and device, which depend on the shape alone.
    """
    impl, shape, dev, run = b.spec.impl, b.shape, b.device, b.run
    inputs_from = getattr(impl, "inputs_from", None)
    inputs_from = inputs_from if callable(inputs_from) else None
    first = inputs_from(*args) if inputs_from else args
    wrap = not (isinstance(first, Inputs) and first.shape)
    out0 = impl.alloc_output(_as_inputs(first, shape) if wrap else first, b.decision.params)
    acc = bool(getattr(impl, "ACCUMULATES", False))

    def inputs(a: tuple) -> Any:
        got = inputs_from(*a) if inputs_from else a
        return _as_inputs(got, shape) if wrap else got

    if isinstance(out0, torch.Tensor):
        oshape, odt, odev = tuple(out0.shape), out0.dtype, out0.device
        oargs = oshape or ((),)  # the sizes as separate ints: torch parses them faster than a tuple
        new = torch.zeros if acc else torch.empty
        del out0

        def call(*a: Any) -> Any:
            if _get_dev is not None and _get_dev() != dev:  # the caller's current device is another one
                with torch.cuda.device(dev):
                    return call(*a)
            out = new(*oargs, dtype=odt, device=odev)
            run(inputs(a), out)
            return out

    else:  # several outputs: the spec allocates them every call

        def call(*a: Any) -> Any:
            if _get_dev is not None and _get_dev() != dev:
                with torch.cuda.device(dev):
                    return call(*a)
            ins = inputs(a)
            out = impl.alloc_output(ins, b.decision.params)
            if acc:
                for t in out:
                    t.zero_()
            run(ins, out)
            return out

    return call


def dtype_name(dt: Any) -> str:
    return str(dt).replace("torch.", "")


def record(
    op: str,
    shape: tuple,
    dtype: Any,
    dist: str | None = None,
    weights: str | None = None,
    backend: str = "auto",
) -> None:
    """Tell the active ``autopad.ops.record()`` blocks about an op call (real or fake). A symbolic
    (dynamic) dimension has no value to tune for, so such a call is not recorded."""
    if plans.RECORDERS and all(isinstance(d, int) for d in shape):
        plans.note(plans.Item(op, tuple(shape), dtype_name(dtype), dist, weights, backend))


# ---- transpose -------------------------------------------------------------------------------------------


def _transpose_fn(x: Any, backend: str) -> Callable[[Any], Any]:
    record("transpose", tuple(x.shape), x.dtype, backend=backend)
    p = plans.plan_transpose(tuple(x.shape), dtype_name(x.dtype), backend)
    b = bound(p, x.get_device())
    kshape, oshape = p.shape, (*x.shape[:-2], x.shape[-1], x.shape[-2])
    vdt = getattr(torch, p.view) if p.view else None
    odt = x.dtype
    fold = x.dim() > 3
    kx = x.view(vdt) if vdt is not None else x
    call = kernel_call(b, (kx.reshape(kshape) if fold else kx,))
    slow = call
    if vdt is not None or fold:

        def slow(x: Any) -> Any:
            if vdt is not None:
                x = x.view(vdt)
            out = call(x.reshape(kshape) if fold else x)
            if vdt is not None:
                out = out.view(odt)
            return out.view(oshape) if fold else out

    flat = flat_transpose(b, oshape, odt, x.device, slow)
    return flat if flat is not None else slow


class _Ptr:
    """A stand-in tensor for the spec's alignment rule at bind time: only its data pointer is asked."""

    __slots__ = ("ptr",)

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr

    def data_ptr(self) -> int:
        return self.ptr


def flat_transpose(
    b: Bound, oshape: tuple[int, ...], odt: Any, odev: Any, slow: Callable[[Any], Any]
) -> Callable[[Any], Any] | None:
    """The CUDA transpose's call as one closure: device check, allocation, alignment choice, launch.

    The layered call (``kernel_call``: ``inputs_from``, the spec's launcher, its alignment ``_pick``,
    ``prepare_launch``'s fire converting every argument) cost 9-13 us per call on the mocked CPU profile
    (benchmarks/profile_ops_host.py); this one does per call only what changes: the output's allocation,
    the two data pointers, an index into a table of four prepared launches (``cuda_runtime.prepare_fixed``:
    grid, scalars and kernel fixed) by whether each pointer is a multiple of the vector bytes, and the
    launch. The table is the spec's own rule: ``_pick`` asked once per case with stand-in pointers (it
    depends on the pointers only through ``ptr % vector bytes``). The output is allocated in the caller's
    dtype and shape (the kernel moves bits: no dtype view, no fold of batch dims). Another current device
    goes the layered way (``slow``), which switches to it. None where this does not apply (another spec,
    the cuda.core launch path, no driver), and the layered call serves.
    """
    spec, built = b.spec, b.built
    impl = getattr(spec.impl, "SPEC", spec.impl)
    get_dev = _get_dev
    if (spec.NAME, spec.BACKEND) != ("transpose", "cuda") or get_dev is None:
        return None
    if not all(callable(getattr(impl, f, None)) for f in ("_plan", "_pick", "_smem_for")):
        return None
    if not hasattr(built, "kernel") or not isinstance(getattr(built, "constants", None), dict):
        return None
    from .. import cuda_runtime

    bb, m, n = (1, *b.shape) if len(b.shape) == 2 else b.shape
    grid, extra, vb = impl._plan(built, (bb, m, n))
    threads = built.constants["THREADS"]
    gos: dict[tuple, Any] = {}
    table = []
    # the kernel's CUfunction is taken in the current context: that of the bound device, as in ``bound``
    with torch.cuda.device(b.device) if b.device >= 0 else contextlib.nullcontext():
        for case in range(4):  # bit 0: x's pointer is a multiple of vb; bit 1: out's is
            x_ok, out_ok = case & 1, case >> 1
            kernel, flag = impl._pick(built, _Ptr(0 if x_ok else 1), _Ptr(0 if out_ok else 1), m, n, vb)
            key = (id(kernel), tuple(int(f) for f in flag))
            if key not in gos:
                # the spec's launcher passes (out, x, *scalars, *flag): 0 marks a pointer slot; each build
                # has its own shared bytes (the misaligned one holds halo rows)
                args = (0, 0, *extra, *flag)
                smem = impl._smem_for(built, kernel)
                gos[key] = cuda_runtime.prepare_fixed(kernel, grid, threads, smem, args, b.device)
            if gos[key] is None:
                return None
            table.append(gos[key])
    dev, empty = b.device, torch.empty
    oargs = oshape or ((),)

    def flat(x: Any) -> Any:
        if get_dev() != dev:  # the caller's current device is another one
            return slow(x)
        out = empty(*oargs, dtype=odt, device=odev)
        xp, op = x.data_ptr(), out.data_ptr()
        table[(xp % vb == 0) + ((op % vb == 0) << 1)](op, xp)
        return out

    flat.table, flat.vector_bytes, flat.slow = table, vb, slow  # type: ignore[attr-defined]
    return flat


def transpose_impl(x: Any, backend: str = "auto") -> Any:
    """The CUDA implementation of ``autopad::transpose``: ``x.transpose(-1, -2).contiguous()``."""
    if not x.is_contiguous():
        x = x.contiguous()
    if x.numel() == 0:
        return x.new_empty((*x.shape[:-2], x.shape[-1], x.shape[-2]))
    key = (x.shape, x.dtype, x.get_device(), backend)
    fn = FAST_T.get(key)
    if fn is None:
        fn = FAST_T[key] = _transpose_fn(x, backend)
    return fn(x)


# ---- histogram -------------------------------------------------------------------------------------------


def _sums(out: Any, bins: int) -> Any:
    """The per-bin sums of a weighted kernel's output: the floating tensor of a (sums, counts) pair, row 1
    of an int32 [2, bins] holding the sums' float bits, or the float sums themselves."""
    if isinstance(out, (tuple, list)):
        return next(t for t in out if t.is_floating_point())
    if out.dim() == 2:
        row = out[1]
        return row.view(torch.float32) if not row.is_floating_point() else row
    return out


def _histogram_fn(x: Any, bins: int, weights: Any, dist: str | None, backend: str) -> Callable[..., Any]:
    wname = dtype_name(weights.dtype) if weights is not None else None
    record("histogram", (x.numel(), bins), x.dtype, dist, wname, backend)
    p = plans.plan_histogram(x.numel(), bins, dtype_name(x.dtype), dist, wname, backend)
    b = bound(p, x.get_device())
    conv = getattr(torch, p.convert) if p.convert else None
    clamp = p.convert is not None and dtype_name(x.dtype) in ("int64", "uint32", "uint64")

    def prep(x: Any) -> Any:
        if conv is None:
            return x
        return (x.clamp(-1, bins) if clamp else x).to(conv)  # a value beyond int32 must not wrap into a bin

    if weights is None:
        call = kernel_call(b, (prep(x), bins))  # the op's own arguments: inputs_from(x, bins) takes them
        if conv is None:
            return lambda x: call(x, bins)
        return lambda x: call(prep(x), bins)

    out_dt = torch.float32 if weights.dtype == torch.float32 else torch.float64  # torch.bincount's rule
    impl = b.spec.impl
    direct = callable(getattr(impl, "inputs_from", None))
    # weights the kernel reads as they are (histogram_weighted: float32 and float64); others are cast
    native = getattr(impl, "WEIGHT_DTYPES", ("float32",)) if direct else ("float32",)
    wconv = dtype_name(weights.dtype) not in native
    if direct:
        call = kernel_call(b, (prep(x), bins, weights.float() if wconv else weights))

        def raw(x: Any, w: Any) -> Any:
            return call(x, bins, w)

    else:  # the WEIGHTED spec of histogram.py: (values, weights, an empty [bins, 0] marker)
        marker = torch.empty((bins, 0), dtype=torch.int8, device=x.device)
        call = kernel_call(b, (prep(x), weights.float() if wconv else weights, marker))

        def raw(x: Any, w: Any) -> Any:
            return call(x, w, marker)

    def fast(x: Any, w: Any) -> Any:
        s = _sums(raw(prep(x), w.float() if wconv else w), bins)
        return s.to(out_dt) if s.dtype != out_dt else s

    return fast


def histogram_impl(
    x: Any, bins: int, weights: Any = None, dist: str | None = None, backend: str = "auto"
) -> Any:
    """The CUDA implementation of ``autopad::histogram``: counts (int32) of the values in [0, bins), or with
    ``weights`` the per-bin sums (float32 for float32 weights, else float64, as ``torch.bincount``)."""
    x = x if x.is_contiguous() else x.contiguous()
    if weights is None:
        if x.numel() == 0:
            return torch.zeros(bins, dtype=torch.int32, device=x.device)
        key = (x.shape, x.dtype, x.get_device(), bins, dist, backend)
        fn = FAST_H.get(key)
        if fn is None:
            fn = FAST_H[key] = _histogram_fn(x, bins, None, dist, backend)
        return fn(x)
    weights = weights if weights.is_contiguous() else weights.contiguous()
    if x.numel() == 0:
        dt = torch.float32 if weights.dtype == torch.float32 else torch.float64
        return torch.zeros(bins, dtype=dt, device=x.device)
    key = (x.shape, x.dtype, x.get_device(), bins, dist, backend, weights.shape, weights.dtype)
    fn = FAST_H.get(key)
    if fn is None:
        fn = FAST_H[key] = _histogram_fn(x, bins, weights, dist, backend)
    return fn(x, weights)


# ---- matmul ----------------------------------------------------------------------------------------------


_PITCHED_DTYPES = (torch.bfloat16, torch.float16)


def takes_as_is(t: Any) -> bool:
    """Whether matmul keeps operand ``t`` as it is: contiguous, or a 16-bit row-pitched view
    (``autopad.ops.empty_pitched``) that the Gluon GEMM's TMA reads through its row stride."""
    return t.is_contiguous() or (t.dtype in _PITCHED_DTYPES and is_pitched(t))


def _reads_strides(bd: Bound) -> bool:
    """Whether the bound GEMM reads A and B through TMA descriptors, which take each operand's row stride:
    the Gluon kernel (PATH 0). The tl.dot kernel (PATH 1) and the CUDA SIMT GEMM index rows as contiguous."""
    c = bd.decision.params
    return bd.spec.BACKEND == "triton" and c.get("PATH", 0) == 0 and "SWIZZLE" in c


def _matmul_fn(a: Any, b: Any, backend: str) -> Callable[[Any, Any], Any]:
    m, k = a.shape
    n = b.shape[1]
    record("matmul", (m, n, k), a.dtype, backend=backend)
    p = plans.plan_matmul(m, n, k, dtype_name(a.dtype), backend)
    bd = bound(p, a.get_device())
    strided = _reads_strides(bd)

    def dense(a: Any, b: Any) -> tuple[Any, Any]:
        # a row-pitched operand reaching a kernel that cannot take its stride: a contiguous copy (a no-op
        # for a contiguous tensor)
        return (a, b) if strided else (a.contiguous(), b.contiguous())

    first = kernel_call(bd, dense(a, b))
    # fp32 operands are always contiguous here (matmul_impl): no check on their hot path
    call = first if strided or a.dtype not in _PITCHED_DTYPES else (lambda a, b: first(*dense(a, b)))
    run, get_dev = bd.run, _get_dev
    if getattr(run, "fast", None) is None or a.dtype == torch.float32 or get_dev is None:
        return _floored(bd, call, a, b, backend)
    # the Gluon / tl.dot GEMM reads A and B as they are (no ``inputs_from``): its launcher takes the pair
    dev, empty, odt, odev = bd.device, torch.empty, a.dtype, a.device

    def flat(a: Any, b: Any) -> Any:
        if get_dev() != dev:  # the caller's current device is another one: the layered call switches
            return call(a, b)
        out = empty(m, n, dtype=odt, device=odev)
        run(dense(a, b), out)
        return out

    return _floored(bd, flat, a, b, backend)


def _bound_key(bd: Bound) -> tuple:
    return (bd.spec.NAME, bd.spec.BACKEND, bd.shape, bd.dtype, bd.dist, bd.device)


def _floored(
    bd: Bound, fn: Callable[[Any, Any], Any], a: Any, b: Any, backend: str
) -> Callable[[Any, Any], Any]:
    """``fn`` (the bound GEMM), or ``torch.mm`` where that measured faster on this shape (``peer``): judged
    once per bound kernel (under the lock: one thread times, on an otherwise quiet start), on the first
    call's operands. An explicit backend is what the caller asked for: no floor."""
    if backend != "auto":
        return fn
    key = _bound_key(bd)
    with _LOCK:
        verdict = PEERS.get(key)
        if verdict is None:
            verdict = PEERS[key] = _judge(bd, fn, a, b)
    return peer.choose(verdict, fn, a.dtype)


def _judge(bd: Bound, fn: Callable[[Any, Any], Any], a: Any, b: Any) -> peer.Verdict:
    if not a.is_cuda:
        return peer.Verdict(False, why="operands not on a CUDA device")
    if not (a.is_contiguous() and b.is_contiguous()):
        return peer.Verdict(False, why="judged on contiguous operands only")
    if torch.are_deterministic_algorithms_enabled():
        return peer.Verdict(False, why="deterministic algorithms asked for: one implementation, not a race")
    if a.dtype == torch.float32 and peer.tf32_allowed():
        return peer.Verdict(False, why="TF32 allowed: torch.mm would not compute in full fp32")
    with torch.cuda.device(bd.device):
        return peer.judge(lambda: fn(a, b), lambda: torch.mm(a, b), policy.tune_mode())


def matmul_impl(a: Any, b: Any, backend: str = "auto") -> Any:
    """The CUDA implementation of ``autopad::matmul``: ``a @ b`` for [M, K] x [K, N] (B as it is held)."""
    key = (a.shape, b.shape, a.dtype, b.dtype, a.get_device(), b.get_device(), backend)
    fn = FAST_M.get(key)
    # a 16-bit shape the floor gave to torch.mm (ops.peer) hands it the operands as given: torch.mm reads
    # any strides. An fp32 shape's choice is the full_fp32 closure (the kernel again once TF32 is
    # allowed), so it takes the path below and a non-contiguous B is still copied first.
    if fn is torch.mm:
        return fn(a, b)
    # 16-bit operands at a row pitch stay as they are (a kernel that cannot take their stride is handed a
    # contiguous copy by ``_matmul_fn``)
    if not takes_as_is(a):
        a = a.contiguous()
    if not takes_as_is(b):
        # a transposed view of a row-major [N, K] (a Linear weight's .t()) goes through autopad's own
        # transpose; anything else through torch's copy
        b = transpose_impl(b.t(), "auto") if b.t().is_contiguous() else b.contiguous()
    m, k = a.shape
    n = b.shape[1]
    if m == 0 or n == 0 or k == 0:
        return torch.zeros((m, n), dtype=a.dtype, device=a.device)
    if fn is None:
        fn = FAST_M[key] = _matmul_fn(a, b, backend)
    return fn(a, b)


def decisions() -> list[dict[str, Any]]:
    """What this process runs: one row per kernel shape bound so far (kernel, backend, shape, dtype, input
    class, constants, and where they came from: tuned, reused, model or tuned now); for a matmul, ``runs``:
    its kernel or ``torch.mm`` (``peer``), with both times where they were measured."""
    with _LOCK:
        rows = list(_BOUND.values())
    return [
        {
            "kernel": b.spec.NAME,
            "backend": b.spec.BACKEND,
            "shape": b.shape,
            "dtype": b.dtype,
            "dist": b.dist,
            "device": b.device,
            "constants": b.decision.params,
            "source": b.decision.source,
            "detail": b.decision.detail,
            **({"runs": _runs(b)} if _bound_key(b) in PEERS else {}),
        }
        for b in rows
    ]


def _runs(b: Bound) -> str:
    text = PEERS[_bound_key(b)].text()
    if PEERS[_bound_key(b)].use_peer and b.dtype == "float32" and peer.tf32_allowed():
        text += " (TF32 is allowed now: the kernel runs)"
    return text


def forget_fast() -> None:
    """Empty the per-shape closures (kept: the decided and built kernels); the next call of each shape
    goes through the operator once more (``record`` uses this to see every shape)."""
    with _LOCK:
        for memo in (FAST_T, FAST_H, FAST_M):
            memo.clear()


def forget(kernel: str | None = None) -> None:
    """Drop the bound kernels (all, or one kernel's) so that the next call decides again (after a pretune
    or a cache import in this process)."""
    with _LOCK:
        for key in [k for k in _BOUND if kernel is None or k[0].startswith(kernel)]:
            del _BOUND[key]
        for key in [k for k in PEERS if kernel is None or k[0].startswith(kernel)]:
            del PEERS[key]
        for memo, op in ((FAST_T, "transpose"), (FAST_H, "histogram"), (FAST_M, "matmul")):
            if kernel is None or op.startswith(kernel) or kernel.startswith(op):
                memo.clear()
