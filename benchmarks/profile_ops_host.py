"""Where the host time of a small ``autopad.ops`` call goes: each layer of the eager fast path, timed alone.

Why: on the H200 (2026-12-01, bench_launch.py) ``autopad.ops.transpose`` on a 64x64 fp32 tensor cost 22-24 us
of host time per call against 14-16 us for torch's ``x.t().contiguous()``. A small transpose is all launch
(32 KB moved, ~2-4 us of GPU time), so the call's Python path is what a user waits for. This script times
the whole call, the path as it was layered (``kernel_call`` -> the spec's launcher -> ``prepare_launch``'s
fire), and each step alone (guards, lookup, device check, allocation, inputs, alignment pick, pointers,
stream, the ctypes driver call with argtypes against pre-converted arguments), then on a GPU the public
``ops.matmul`` (bf16: the Gluon kernel through ``autopad.triton_launch``; fp32: the CUDA kernel) against
``a @ b`` with the Gluon launch's parts (TMA descriptors), and the public ``ops.histogram`` of small inputs
against ``torch.bincount``.

- On a GPU (torch.cuda available, no ``--mock``): everything real. Each call launches a real kernel; the
  first call of every shape is checked against torch (exact for transpose, fp64 reference for matmul) on a
  poisoned output before anything is timed. Back-to-back calls of a 64x64 kernel keep the GPU ahead of
  the host, so the wall time per call is the host's. About 30 s.
- Without one (or ``--mock``): the CUDA side is mocked at its lowest level: a C stub library standing in
  for ``libcuda`` (built here with ``cc``; cuLaunchKernel / cuLaunchKernelEx read the first parameter and
  return 0), torch's raw-stream and current-device entry points as C builtins (``dict.get``, ``int``),
  CPU tensors. The kernel is the real spec's, its constants the model's pick; only ``build`` is faked.
  torch.empty on CPU is not the CUDA caching allocator: that row is measured for real only on a GPU.

    python benchmarks/profile_ops_host.py [--mock] [--out DIR] [--calls N]

Prints one table and writes ``profile_ops_host.csv`` under ``--out``: section, row, shape, us per call.
A failing row is recorded as failed with its error, and the rest goes on.
"""

from __future__ import annotations

import argparse
import csv
import ctypes
import os
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy

SHAPES = ((64, 64), (512, 512), (1000, 37))
GEMM_SHAPES = ((128, 128, 128), (1024, 1024, 1024))
HIST_SIZES = (4096, 65536)
STUB = r"""
typedef struct { unsigned gx, gy, gz, bx, by, bz, smem; void* stream; void* attrs; unsigned nattrs; } Cfg;
static volatile unsigned long long seen;
int cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned smem, void* stream, void** params, void** extra) {
  seen = params ? *(unsigned long long*)params[0] : 0; return 0; }
int cuLaunchKernelEx(const Cfg* c, void* f, void** params, void** extra) {
  seen = params ? *(unsigned long long*)params[0] : 0; return c->gx ? 0 : 1; }
int cuKernelGetFunction(void** out, void* k) { *out = k; return 0; }
"""


class LaunchConfig(ctypes.Structure):
    """The driver's CUlaunchConfig (cuda.h, CUDA 12+), for timing cuLaunchKernelEx here."""

    _fields_ = [(n, ctypes.c_uint) for n in ("gx", "gy", "gz", "bx", "by", "bz", "smem")] + [
        ("stream", ctypes.c_void_p),
        ("attrs", ctypes.c_void_p),
        ("nattrs", ctypes.c_uint),
    ]


REPEATS = [5]  # timing runs per row (the best counts); more under --mock, where the CPU is shared
# the clock: wall time on a GPU (what a caller waits, the GPU included); this process's CPU time when
# mocked, where the host path is all CPU and a shared 2-core machine preempts the process mid-run
CLOCK = [time.perf_counter]


def per_call(fn: Callable[[], Any], n: int, sync: Callable[[], None] | None = None) -> float:
    """Best of ``REPEATS`` runs of ``n`` back-to-back calls, in us per call."""
    best, clock = float("inf"), CLOCK[0]
    for _ in range(REPEATS[0]):
        if sync:
            sync()
        t = clock()
        for _ in range(n):
            fn()
        if sync:
            sync()
        best = min(best, (clock() - t) / n * 1e6)
    return best


def build_stub(tmp: Path) -> str | None:
    """The fake libcuda (a C stub, so that ctypes' argument conversion is the real one), or None."""
    src, lib = tmp / "fakecuda.c", tmp / "libfakecuda.so"
    src.write_text(STUB)
    p = subprocess.run(["cc", "-O2", "-shared", "-fPIC", str(src), "-o", str(lib)], capture_output=True)
    return str(lib) if p.returncode == 0 else None


class FakeKernel:
    """A built kernel as the launch path sees it: a handle (the stub's cuKernelGetFunction returns it)."""

    def __init__(self, handle: int) -> None:
        self.handle = handle


def install_mocks(stub: str | None) -> None:
    """Mock CUDA below autopad: the driver library, cuda.core's Device, torch's CUDA entry points, build."""
    import numpy as np
    import torch

    from autopad.ops import plans, policy, runner
    from autopad.search import rank

    try:  # each name is replaced in the module that reads it (autopad.cuda_runtime only re-exports them)
        from autopad import cuda_compile, cuda_context, cuda_driver

        core, context, driver = cuda_compile, cuda_context, cuda_driver
    except ImportError:  # an autopad from before cuda_runtime was split: that one module read them all
        from autopad import cuda_runtime

        core = context = driver = cuda_runtime

    dev = -1  # CPU tensors: x.get_device() is -1, so the bound device is -1 too
    get_dev = (dev).__index__  # a C builtin returning the device, as torch._C._cuda_getDevice
    raw_stream = {dev: 0x1234}.get  # a C builtin, as torch._C._cuda_getCurrentRawStream

    class Device:
        def __init__(self, d: int) -> None:
            pass

        def set_current(self) -> None:
            pass

    cc = type("cc", (), {"Device": Device, "LaunchConfig": lambda **k: k, "launch": lambda *a: None})
    core._cuda_core = lambda: cc
    context._torch_hooks = lambda: (get_dev, raw_stream, torch.Tensor)
    runner._get_dev = get_dev
    if stub is None:
        os.environ["AUTOPAD_LAUNCH"] = "cudacore"
    elif hasattr(driver, "_LIBCUDA"):
        driver._LIBCUDA, driver._CU = stub, None
    else:  # the lead's first driver path: configure it as _libcuda() would
        lib = ctypes.CDLL(stub)
        lib.cuLaunchKernel.restype = ctypes.c_int
        lib.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
        lib.cuKernelGetFunction.restype = ctypes.c_int
        lib.cuKernelGetFunction.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
        driver._CU = lib

    def bound(plan: Any, device: int) -> Any:
        spec = plan.spec
        consts = dict(rank(spec, plan.shape, plan.dtype, "sm_90")[0].constants)
        built_cls = spec.impl.Built
        vec = not consts.get("SCALAR_EDGE", 1) and consts["VEC"] > 1
        built = built_cls(FakeKernel(0x1000), consts, plan.dtype, FakeKernel(0x2000) if vec else None)
        run = spec.impl.launcher(built, plan.shape, plan.dtype)
        decision = policy.Decision(policy._freeze(consts), "model", "profile_ops_host mock")
        return runner.Bound(spec, plan.shape, plan.dtype, plan.dist, device, decision, built, run)

    runner.bound = bound
    del np, plans


class Table:
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def add(self, section: str, row: str, shape: str, fn: Callable[[], float | None]) -> None:
        try:
            us = fn()
            self.rows.append({"section": section, "row": row, "shape": shape, "us_per_call": us, "error": ""})
        except Exception as exc:  # one failing row must not end the run
            err = f"{type(exc).__name__}: {exc}".replace("\n", " ")[:300]
            self.rows.append(
                {"section": section, "row": row, "shape": shape, "us_per_call": None, "error": err}
            )
            if os.environ.get("PROFILE_TRACEBACK"):
                traceback.print_exc()


def transpose_rows(t: Table, x: Any, n: int, sync: Callable[[], None] | None, real: bool) -> None:
    """Every layer of ``autopad.ops.transpose(x)`` for one tensor."""
    import numpy as np
    import torch

    import autopad.ops
    from autopad import cuda_runtime as rt
    from autopad.ops import api, plans, runner

    shape = "x".join(map(str, x.shape))
    sec = "transpose"
    if real:
        autopad.ops.transpose(x)  # binds this shape (the operator's first call)
    else:  # the operator refuses CPU tensors: bind as its CUDA implementation would
        runner.transpose_impl(x)
    ref = x.t().contiguous()
    poison = torch.full_like(ref, float("nan"))
    y = autopad.ops.transpose(x)
    if sync:
        sync()
    if real and not torch.equal(y, ref):
        raise AssertionError(f"autopad.ops.transpose {shape}: wrong result")
    del poison
    key = (x.shape, x.dtype, x.get_device(), "auto")
    call = runner.FAST_T[key]
    plan = plans.plan_transpose(tuple(x.shape), runner.dtype_name(x.dtype), "auto")
    b = runner.bound(plan, x.get_device())  # the bound kernel (built once; the mock builds another)
    impl, built = getattr(b.spec.impl, "SPEC", b.spec.impl), b.built
    layered = runner.kernel_call(b, (x,))
    out = torch.empty_like(ref)
    if real:  # the layered path (kernel_call -> spec launcher -> fire) must be right too
        out.fill_(float("nan"))
        layered(x)
        chk = layered(x)
        sync()
        if not torch.equal(chk, ref):
            raise AssertionError(f"layered path {shape}: wrong result")
    ops_t = autopad.ops.transpose
    per_call(lambda: ops_t(x), n, sync)  # warm-up, not recorded (run 4's first row of all read 7 us high)
    per_call(lambda: x.t().contiguous(), n, sync)
    t.add(sec, "loop (lambda: None)", shape, lambda: per_call(lambda: None, n))
    t.add(
        sec, "autopad.ops.transpose(x): the public call", shape, lambda: per_call(lambda: ops_t(x), n, sync)
    )
    t.add(sec, "torch eager x.t().contiguous()", shape, lambda: per_call(lambda: x.t().contiguous(), n, sync))
    kind = "flat" if hasattr(call, "table") else "layered"
    t.add(sec, f"bound closure FAST_T[key](x) ({kind})", shape, lambda: per_call(lambda: call(x), n, sync))
    t.add(
        sec,
        "layered: kernel_call -> spec launcher -> fire",
        shape,
        lambda: per_call(lambda: layered(x), n, sync),
    )
    comp, grad, modes, fun = api._compiling, api._grad_on, api._modes, api._functorch
    T = torch.Tensor

    def guards() -> bool:
        return not comp() and type(x) is T and not (x.requires_grad and grad()) and not modes() and not fun()

    fast = runner.FAST_T
    t.add(sec, "  api guards (compiling, type, grad, modes, functorch)", shape, lambda: per_call(guards, n))
    t.add(
        sec,
        "  key + FAST_T.get + is_contiguous",
        shape,
        lambda: per_call(
            lambda: fast.get((x.shape, x.dtype, x.get_device(), "auto")) and x.is_contiguous(), n
        ),
    )
    gd = runner._get_dev or (lambda: 0)
    t.add(sec, "  device check (torch._C._cuda_getDevice)", shape, lambda: per_call(gd, n))
    osh, odt, odev = tuple(ref.shape), ref.dtype, ref.device
    t.add(
        sec,
        "  torch.empty(shape tuple, dtype=, device=)",
        shape,
        lambda: per_call(lambda: torch.empty(osh, dtype=odt, device=odev), n),
    )
    t.add(
        sec,
        "  torch.empty(*shape, dtype=, device=)",
        shape,
        lambda: per_call(lambda: torch.empty(*osh, dtype=odt, device=odev), n),
    )
    ins = impl.inputs_from(x)
    t.add(sec, "  spec.inputs_from(x) -> Inputs", shape, lambda: per_call(lambda: impl.inputs_from(x), n))
    go = b.run
    t.add(
        sec,
        "  spec launcher go(inputs, out): pick + fire",
        shape,
        lambda: per_call(lambda: go(ins, out), n, sync),
    )
    bb, m, nn = (1, *x.shape) if x.dim() == 2 else tuple(x.shape)
    grid, extra, vb = impl._plan(built, (bb, m, nn))
    t.add(
        sec,
        "  spec _pick (alignment)",
        shape,
        lambda: per_call(lambda: impl._pick(built, x, out, m, nn, vb), n),
    )
    kernel, flag = impl._pick(built, x, out, m, nn, vb)
    threads = built.constants["THREADS"]
    smem = impl._smem_for(built, kernel)  # the build's own (the misaligned one holds halo rows)
    fire = rt.prepare_launch(kernel, grid, threads, smem)
    args = (out, x, *extra, *flag)
    t.add(
        sec, "  prepare_launch fire(out, x, *scalars)", shape, lambda: per_call(lambda: fire(*args), n, sync)
    )
    t.add(
        sec,
        "  x.data_ptr() + out.data_ptr()",
        shape,
        lambda: per_call(lambda: (x.data_ptr(), out.data_ptr()), n),
    )
    _, raw_stream, _ = rt._torch_hooks()
    dev = b.device
    t.add(sec, "  raw current stream", shape, lambda: per_call(lambda: raw_stream(dev), n))
    launch_rows(t, sec, shape, kernel, grid, threads, smem, (out, x, *extra, *flag), n, sync, raw_stream, dev)
    if hasattr(call, "table"):  # the flat closure's own steps
        tab, vbytes = call.table, call.vector_bytes
        xp, op = x.data_ptr(), out.data_ptr()
        t.add(
            sec,
            "  flat: alignment index",
            shape,
            lambda: per_call(lambda: (xp % vbytes == 0) + ((op % vbytes == 0) << 1), n),
        )
        go3 = tab[(xp % vbytes == 0) + ((op % vbytes == 0) << 1)]
        t.add(
            sec,
            "  flat: prepare_fixed go(out_ptr, x_ptr)",
            shape,
            lambda: per_call(lambda: go3(op, xp), n, sync),
        )
    t.add(
        sec,
        "autopad.ops.transpose(x) again, after the rest",
        shape,
        lambda: per_call(lambda: ops_t(x), n, sync),
    )
    t.add(
        sec, "torch eager again, after the rest", shape, lambda: per_call(lambda: x.t().contiguous(), n, sync)
    )
    del np


def launch_rows(
    t: Table,
    sec: str,
    shape: str,
    kernel: Any,
    grid: Any,
    threads: int,
    smem: int,
    args: tuple,
    n: int,
    sync: Any,
    raw_stream: Any,
    dev: int,
) -> None:
    """The driver call itself, two ways: cuLaunchKernel (11 arguments through ctypes argtypes, from Python
    ints) and cuLaunchKernelEx (4 arguments, all pre-converted ctypes objects)."""
    import numpy as np

    from autopad import cuda_runtime as rt

    lib = rt._libcuda()
    fn = ctypes.c_void_p()
    if lib.cuKernelGetFunction(ctypes.byref(fn), ctypes.c_void_p(int(kernel.handle))) != 0:
        raise RuntimeError("cuKernelGetFunction failed")
    slots = []
    for a in args:
        if isinstance(a, np.integer):
            slots.append(ctypes.c_int32(int(a)))
        else:
            slots.append(ctypes.c_uint64(a.data_ptr()))
    params = (ctypes.c_void_p * len(slots))(*[ctypes.addressof(s) for s in slots])
    g = (tuple(grid) + (1, 1))[:3] if not isinstance(grid, int) else (grid, 1, 1)
    f11 = lib.cuLaunchKernel
    fv = fn.value

    def old() -> None:
        if f11(fv, g[0], g[1], g[2], threads, 1, 1, smem, raw_stream(dev), params, None) != 0:
            raise RuntimeError("cuLaunchKernel failed")

    t.add(sec, "  cuLaunchKernel, 11 args via argtypes", shape, lambda: per_call(old, n, sync))
    ex = getattr(lib, "cuLaunchKernelEx", None)
    if ex is None:
        return
    fex = lib["cuLaunchKernelEx"]  # a second function object: no argtypes, ctypes objects pass as they are
    fex.restype = ctypes.c_int
    cfg = LaunchConfig(g[0], g[1], g[2], threads, 1, 1, smem, raw_stream(dev), None, 0)
    pcfg = ctypes.pointer(cfg)

    def new() -> None:
        cfg.stream = raw_stream(dev)
        if fex(pcfg, fn, params, None) != 0:
            raise RuntimeError("cuLaunchKernelEx failed")

    t.add(sec, "  cuLaunchKernelEx, 4 pre-converted args", shape, lambda: per_call(new, n, sync))


def gemm_rows(t: Table, n: int, sync: Callable[[], None]) -> None:
    """The GEMM's per-call host cost (GPU only): the public call against ``a @ b`` for bf16 (the Gluon
    kernel) and fp32 (the CUDA SIMT kernel; torch with TF32 off, as autopad's fp32 is full fp32), then the
    Gluon launch's parts."""
    import torch

    import autopad.ops

    mm = autopad.ops.matmul
    torch.backends.cuda.matmul.allow_tf32 = False
    for dt in (torch.bfloat16, torch.float32):
        sec = f"matmul {str(dt).replace('torch.', '')}"
        for m, nn, k in GEMM_SHAPES:
            shape = f"{m}x{nn}x{k}"
            a = torch.randn(m, k, device="cuda").to(dt)
            b = torch.randn(k, nn, device="cuda").to(dt)

            def check(a: Any = a, b: Any = b, shape: str = shape) -> None:
                for _ in range(3):  # the first call binds (the JIT); later ones take the compiled launcher
                    a.normal_()
                    b.normal_()
                    y = mm(a, b)
                    ref = a.double() @ b.double()
                    err = float((y.double() - ref).abs().max() / ref.abs().max().clamp_min(1e-9))
                    if not err < 2e-2:
                        raise AssertionError(f"matmul {shape}: relative error {err}")

            t.add(
                sec,
                "check against fp64 (3 calls, fresh inputs)",
                shape,
                lambda check=check: (check(), None)[1],
            )
            t.add(
                sec,
                "autopad.ops.matmul(a, b): the public call",
                shape,
                lambda a=a, b=b: per_call(lambda: mm(a, b), n, sync),
            )
            t.add(sec, "torch a @ b", shape, lambda a=a, b=b: per_call(lambda: a @ b, n, sync))
            if dt == torch.bfloat16:
                t.add(sec, "  TensorDescriptor.from_tensor (one)", shape, lambda a=a: _descriptor_cost(a, n))
                t.add(
                    sec,
                    "  fill_tma_descriptor (one host tensor map)",
                    shape,
                    lambda a=a: _tensor_map_cost(a, n),
                )


def histogram_rows(t: Table, n: int, sync: Callable[[], None]) -> None:
    """A small histogram's per-call host cost (GPU only): the public call against ``torch.bincount``, after
    a check that the counts are equal."""
    import torch

    import autopad.ops

    sec = "histogram int32, 256 bins"
    for size in HIST_SIZES:
        x = torch.randint(0, 256, (size,), device="cuda", dtype=torch.int32)

        def check(x: Any = x) -> None:
            for _ in range(3):
                x.random_(0, 256)
                got = autopad.ops.histogram(x, 256)
                if not torch.equal(got.long(), torch.bincount(x, minlength=256)):
                    raise AssertionError(f"histogram of {x.numel()} values: counts differ from bincount")

        t.add(
            sec, "check against torch.bincount (3 calls)", str(size), lambda check=check: (check(), None)[1]
        )
        t.add(
            sec,
            "autopad.ops.histogram(x, 256): the public call",
            str(size),
            lambda x=x: per_call(lambda: autopad.ops.histogram(x, 256), n, sync),
        )
        t.add(
            sec,
            "torch.bincount(x, minlength=256)",
            str(size),
            lambda x=x: per_call(lambda: torch.bincount(x, minlength=256), n, sync),
        )


def _descriptor_cost(a: Any, n: int) -> float:
    """Gluon's host-side TensorDescriptor for A (what the launcher makes three of per call)."""
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    lay = gl.NVMMASharedLayout.get_default_for([128, 64], gl.bfloat16)
    return per_call(lambda: TensorDescriptor.from_tensor(a, [128, 64], lay), n)


def _tensor_map_cost(a: Any, n: int) -> float:
    """Triton's launcher encodes a CUtensorMap per descriptor argument per call (fill_tma_descriptor)."""
    import triton

    fill = triton.runtime.driver.active.utils.fill_tma_descriptor
    ptr, (m, k) = a.data_ptr(), a.shape
    # CU_TENSOR_MAP_SWIZZLE_128B = 3, 2-byte elements, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9, no NaN padding
    return per_call(lambda: fill(ptr, 3, 2, 9, [128, 64], [m, k], [k, 1], 0), n)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("."))
    ap.add_argument("--mock", action="store_true", help="mock CUDA even where a GPU is present")
    ap.add_argument("--calls", type=int, default=2000, help="back-to-back calls per timing run")
    ap.add_argument("--repeats", type=int, default=0, help="timing runs per row (default 5, mocked 15)")
    args = ap.parse_args(argv)
    os.environ.setdefault("AUTOPAD_TUNE", "never")
    warnings.simplefilter("ignore")
    import torch

    real = torch.cuda.is_available() and not args.mock
    REPEATS[0] = args.repeats or (5 if real else 15)
    CLOCK[0] = time.perf_counter if real else time.process_time
    t = Table()
    with tempfile.TemporaryDirectory(prefix="autopad-profile-") as tmp:
        if not real:
            install_mocks(build_stub(Path(tmp)))
        dev = "cuda" if real else "cpu"
        sync = torch.cuda.synchronize if real else None
        for m, n in SHAPES:
            x = torch.randn(m, n, device=dev)
            t.add(
                "transpose", "all rows", f"{m}x{n}", lambda x=x: transpose_rows(t, x, args.calls, sync, real)
            )
        if real:
            gemm_rows(t, max(200, args.calls // 4), sync)
            histogram_rows(t, max(200, args.calls // 4), sync)
    t.rows = [r for r in t.rows if r["row"] != "all rows" or r["error"]]
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "profile_ops_host.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["section", "row", "shape", "us_per_call", "error"])
        w.writeheader()
        w.writerows(t.rows)
    mode = "GPU: " + torch.cuda.get_device_name() if real else "mocked CUDA (CPU tensors)"
    clock = "wall time" if real else "process CPU time"
    launch = os.environ.get("AUTOPAD_LAUNCH", "driver")
    print(f"autopad.ops host path, {mode}; launch path {launch}; us per call ({clock}, best of {REPEATS[0]})")
    shapes = list(dict.fromkeys(r["shape"] for r in t.rows))
    for sec in dict.fromkeys(r["section"] for r in t.rows):
        names = list(dict.fromkeys(r["row"] for r in t.rows if r["section"] == sec))
        print(
            f"\n{sec:56}"
            + "".join(
                f"{s:>12}" for s in shapes if any(r["shape"] == s and r["section"] == sec for r in t.rows)
            )
        )
        for name in names:
            cells = []
            for s in shapes:
                got = [r for r in t.rows if r["section"] == sec and r["row"] == name and r["shape"] == s]
                if not any(r["shape"] == s and r["section"] == sec for r in t.rows):
                    continue
                us = got[0]["us_per_call"] if got else None
                word = "-" if not got else ("FAILED" if got[0]["error"] else "ok")  # a check has no time
                cells.append(f"{us:12.2f}" if us is not None else f"{word:>12}")
            print(f"{name[:56]:56}" + "".join(cells))
    for r in t.rows:
        if r["error"]:
            print(f"FAILED {r['section']} / {r['row']} {r['shape']}: {r['error']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
