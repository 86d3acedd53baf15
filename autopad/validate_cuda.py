"""The GPU side of ``autopad validate``: probe kernels, the launcher that ncu profiles, ncu's CSV, timing.

Why a kernel per (op, width) written in inline PTX: Nsight Compute counts the wavefronts of *one*
shared-memory instruction only if the compiler emits exactly one, of exactly the asked width, at exactly
the asked addresses. C++ loads could be merged, split, hoisted or dropped; a predicated ``ld.shared`` /
``st.shared`` / ``atom.shared.add`` in an ``asm volatile`` block cannot. An inactive lane is one whose
address is negative: its predicate is false, so it sits that one instruction out (ptxas keeps the predicate
on LDS/STS and turns it into a branch around the ATOMS; either way one instruction runs, for the active
lanes only). A load's value is kept alive by a global store behind a run-time flag that is always 0.

The launcher (``launch_probes``) runs in the one process that ``ncu`` profiles, launching every probe
once; ``parse_ncu_csv`` reads ncu's CSV back into per-launch counters, in launch order.

The stride timing mode (for machines without ncu) is the seeds' micro-benchmark: every lane of every warp
reads ``tile[(lane * stride + i) & 2047]`` in a loop, timed with CUDA events, relative to stride 1.

ldmatrix, stmatrix and cp.async (the model's newer rules, model_rules.py) have probes of their own, one
instruction each: ``ldmatrix/stmatrix.sync.aligned.m8n8.xK[.trans].shared.b16`` (no predicate: the
instruction is warp-wide, every lane gives a row address) and a predicated ``cp.async.{ca,cg}.shared.global``
of 4, 8 or 16 bytes from a global buffer at per-lane offsets, then ``cp.async.wait_all``. Nsight Compute
counts them apart from plain loads and stores (``*_mem_shared_op_ldsm``, ``_op_stsm``, ``_op_ldgsts``;
public profiling scripts use both ``l1tex__`` and ``sm__sass_l1tex_`` spellings), so ``extra_metrics``
asks ncu which of the candidates this GPU has and ``measured_counts`` takes the first pair present, the
shared-memory totals last (a probe issues no other shared-memory instruction); a cp.async form skips the
other form's ``_cache_access`` / ``_cache_bypass`` pair (the ``.ca`` pair reads 0 for ``.cg``; ``.cg``
lands in the bypass pair: H200 run 157, H100 run 179, 2026-12-05).

Nothing here is imported by ``import autopad``; torch and cuda.core load inside the functions.

Where the code lives (this module keeps the launcher and the stride timing, and re-exports every name it
defined before the split, so every import of ``autopad.validate_cuda`` keeps working): validate_kernels.py
(the probe kernels' source and names), validate_ncu.py (ncu's counters, running it, its CSV).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

# besides what this module uses, the names validate_cuda.py defined before the split, importable from
# here as before
from .validate_kernels import (  # noqa: F401
    _FAMILY,
    _MATRIX,
    _MATRIX_OPS,
    _OPS,
    _SHORT,
    _TYPES,
    GLOBAL_BYTES,
    NEW_FORMS,
    SMEM_BYTES,
    _family,
    _ptx,
    any_probe_source,
    kernel_name,
    new_probe_source,
    probe_kernel_name,
    probe_source,
    stride_source,
)
from .validate_ncu import (  # noqa: F401
    _CANDIDATES,
    METRICS,
    TOTALS,
    _number,
    counted_by,
    extra_metrics,
    find_ncu,
    measured_counts,
    parse_ncu_csv,
    query_metrics,
    run_ncu,
)

__all__ = [
    "METRICS",
    "NEW_FORMS",
    "SMEM_BYTES",
    "GLOBAL_BYTES",
    "extra_metrics",
    "find_ncu",
    "kernel_name",
    "launch_probes",
    "measured_counts",
    "parse_ncu_csv",
    "probe_source",
    "run_ncu",
    "stride_source",
    "time_strides",
]

# cuda.core's NVRTC options reject an empty macro list, so every compile carries this one define
_DEFINES = {"AUTOPAD_VALIDATE": 1}


def _address_matrix(probes: list[dict]) -> np.ndarray:
    """(n, 32) int32 shared offsets, -1 = inactive; (n, 64) when cp.async probes need global offsets too."""
    wide = any("global" in p for p in probes)
    arr = np.full((len(probes), 64 if wide else 32), -1, dtype=np.int32)
    for i, p in enumerate(probes):
        arr[i, :32] = [-1 if a is None else int(a) for a in p["addresses"]]
        if "global" in p:
            arr[i, 32:] = p["global"]
    return arr


def launch_probes(probes_path: str | Path, launched_path: str | Path, budget_s: float) -> int:
    """Launch every probe once, in order, one warp each (this process is the one ncu profiles).

    Stops early once ``budget_s`` seconds have passed since the first launch (ncu profiles each launch
    inside the launch call, so the wall clock measures the profiling). Writes the number launched to
    ``launched_path`` as it goes, and returns it.
    """
    import torch

    from . import cuda_runtime

    probes = json.loads(Path(probes_path).read_text())
    device = torch.cuda.current_device()
    kernels = {}
    for p in probes:  # compile and load everything before the first launch
        key = probe_kernel_name(p)
        if key not in kernels:
            kernels[key] = cuda_runtime.load_kernel(any_probe_source(p), key, _DEFINES, device)
    addr = torch.from_numpy(_address_matrix(probes)).to(f"cuda:{device}")
    out = torch.zeros(32 * 4, dtype=torch.int32, device=f"cuda:{device}")
    gsrc = None  # the global source of cp.async, allocated only for new probes
    if any(_family(p["op"]) for p in probes):
        gsrc = torch.zeros(GLOBAL_BYTES, dtype=torch.uint8, device=f"cuda:{device}")
    torch.cuda.synchronize()
    base, row = addr.data_ptr(), addr.stride(0) * addr.element_size()
    launched = Path(launched_path)
    t0 = time.monotonic()
    n = 0
    for i, p in enumerate(probes):
        if time.monotonic() - t0 > budget_s:
            break
        args = [np.uint64(base + i * row), out, np.int32(0)]
        if _family(p["op"]):
            args.append(gsrc)
        cuda_runtime.launch(kernels[probe_kernel_name(p)], 1, 32, args)
        n += 1
        if n % 50 == 0:
            launched.write_text(str(n))
    torch.cuda.synchronize()
    launched.write_text(str(n))
    return n


def time_strides(strides: list[int], iters: int = 4096, reps: int = 20) -> list[float]:
    """Median milliseconds of the stride kernel (132 x 8 blocks of 256 threads) for each stride."""
    import torch

    from . import cuda_runtime

    device = torch.cuda.current_device()
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    k = cuda_runtime.load_kernel(stride_source(), "stride_read", _DEFINES, device)
    blocks, threads = sms * 8, 256
    out = torch.empty(blocks * threads, dtype=torch.float32, device=f"cuda:{device}")
    times = []
    for s in strides:
        args = [out, np.int32(s), np.int32(iters)]
        for _ in range(3):  # warm-up
            cuda_runtime.launch(k, blocks, threads, args)
        samples = []
        for _ in range(reps):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            cuda_runtime.launch(k, blocks, threads, args)
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end))
        times.append(float(np.median(samples)))
    return times
