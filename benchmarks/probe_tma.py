"""TMA under Nsight Compute: what one bulk tensor copy costs in shared-memory wavefronts (discovery run).

Why: the Gluon GEMM (kernels/triton/matmul_model.py) charges TMA's writes of each k-step's A and B tiles,
and the TMA store's reads of the C tile, one wavefront per ``SWIZZLE``-byte row of the box
(``extra_wavefronts``). That figure is an assumption; no probe has measured it. Issue 14 asks that the
model cover TMA "exact against Nsight Compute probes like the existing 1,328". This script takes the
measurements that such a rule would be fitted to, without assuming which counter holds them.

What: one warp, one ``cp.async.bulk.tensor.2d`` per launch, issued by lane 0:
- ``load``: global -> shared, completing on an mbarrier that every lane waits on;
- ``store``: shared -> global (bulk group, waited on with ``wait_group.read``); the shared tile is not
  written first, so the only shared-memory traffic is the copy's own.
The box varies over element size (1, 2, 4 bytes), swizzle (none, 32, 64, 128 bytes), inner extent (16 to
256 bytes), rows (1 to 64) and the global row pitch (aligned or not to 128 bytes). The tensor map is
encoded on the host (``cuTensorMapEncodeTiled`` through ctypes) and passed in global memory.

Counters: ncu is asked which metrics this GPU has (``--query-metrics``); every one whose name says shared
memory, TMA or bulk copies is collected, summed per launch. The CSV has one row per probe and one column
per counter, beside the box and the current assumption (``assumed_wavefronts``: box bytes / swizzle
span, 128 for no swizzle). Which counter is the right one is read off the result, not assumed.

Run on a GPU machine: ``python3 benchmarks/probe_tma.py --out DIR`` (about a minute; ncu needed).
Without a GPU, ``--dry-run`` writes the probe list and the CUDA source.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SMEM_BYTES = 32 * 1024  # the static tile; every box fits (64 rows x 256 bytes = 16 KiB)
GLOBAL_ROWS = 256
_DTYPE = {1: 0, 2: 1, 4: 2}  # CU_TENSOR_MAP_DATA_TYPE_UINT8 / UINT16 / UINT32 (cuda.h)
_SWIZZLE = {0: 0, 32: 1, 64: 2, 128: 3}  # CU_TENSOR_MAP_SWIZZLE_NONE / 32B / 64B / 128B
METRIC_WORDS = re.compile(r"shared|tma|bulk|ldgsts|utma|dsmem", re.IGNORECASE)

SOURCE = r"""
// autopad TMA probe: one warp, one cp.async.bulk.tensor.2d issued by lane 0
extern "C" __global__ void probe_tma_load(const unsigned long long* __restrict__ tmap,
                                          unsigned* __restrict__ out, int flag, int x, int y, int bytes)
{
    __shared__ __align__(1024) unsigned char smem[SMEM_BYTES];
    __shared__ __align__(8) unsigned long long bar;
    const unsigned lane = threadIdx.x;
    const unsigned sb = (unsigned)__cvta_generic_to_shared(&bar);
    const unsigned ss = (unsigned)__cvta_generic_to_shared(smem);
    if (lane == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(sb) : "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncwarp();
    if (lane == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                     :: "r"(sb), "r"(bytes) : "memory");
        asm volatile(
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
            " [%0], [%1, {%2, %3}], [%4];"
            :: "r"(ss), "l"(tmap), "r"(x), "r"(y), "r"(sb) : "memory");
    }
    asm volatile(
        "{\n\t.reg .pred done;\n\tWAIT_%=:\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n\t"
        "@!done bra WAIT_%=;\n\t}" :: "r"(sb) : "memory");
    if (flag) {
        out[lane] = smem[lane];
    }
}

extern "C" __global__ void probe_tma_store(const unsigned long long* __restrict__ tmap,
                                           unsigned* __restrict__ out, int flag, int x, int y, int bytes)
{
    __shared__ __align__(1024) unsigned char smem[SMEM_BYTES];
    const unsigned lane = threadIdx.x;
    const unsigned ss = (unsigned)__cvta_generic_to_shared(smem);
    if (lane == 0) {
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];"
                     :: "l"(tmap), "r"(x), "r"(y), "r"(ss) : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
    __syncwarp();
    if (flag) {
        out[lane] = (unsigned)bytes;
    }
}
""".replace("SMEM_BYTES", str(SMEM_BYTES))


def probes(quick: bool = False) -> list[dict]:
    """Every probe: direction, element bytes, swizzle span, box (inner elements, rows), global pitch.

    2-byte elements (the GEMM's) over every box; 1- and 4-byte ones at 8 rows and an aligned pitch (TMA
    moves bytes, and its swizzle permutes 16-byte chunks, so the element size should not matter: these
    check that). ``quick``: 8-row boxes of 2-byte elements on an aligned pitch only, for a first run that
    collects every counter."""
    out = []
    for direction in ("load", "store"):
        for eb in (2, 1, 4):
            for swz in (0, 32, 64, 128):
                inners = (
                    (16, 32, 64, 128, 256) if swz == 0 else tuple(b for b in (16, 32, 64, 128) if b <= swz)
                )
                for inner_bytes in inners:
                    for rows in (1, 8, 64):
                        for pitch in (1024, 1040):
                            full = eb == 2 and not quick
                            if not full and (rows != 8 or pitch != 1024 or (quick and eb != 2)):
                                continue
                            out.append(
                                {
                                    "direction": direction,
                                    "elem_bytes": eb,
                                    "swizzle": swz,
                                    "box_inner": inner_bytes // eb,
                                    "box_rows": rows,
                                    "pitch": pitch,
                                }
                            )
    for p in out:
        check(p)
    return out


def check(p: dict) -> None:
    """cuTensorMapEncodeTiled's rules (cuda.h) for the probes' boxes, so a bad probe fails here, not on
    the GPU: inner bytes a multiple of 16 and at most the swizzle span; box extents 1..256; pitch a
    multiple of 16; the box inside the global tensor."""
    inner_bytes = p["box_inner"] * p["elem_bytes"]
    assert inner_bytes % 16 == 0 and 1 <= p["box_inner"] <= 256 and 1 <= p["box_rows"] <= 256, p
    assert p["swizzle"] == 0 or inner_bytes <= p["swizzle"], p
    assert p["pitch"] % 16 == 0 and inner_bytes <= p["pitch"] and p["box_rows"] <= GLOBAL_ROWS, p
    assert inner_bytes * p["box_rows"] <= SMEM_BYTES, p


def box_bytes(p: dict) -> int:
    return p["box_inner"] * p["elem_bytes"] * p["box_rows"]


def assumed_wavefronts(p: dict) -> int:
    """The Gluon GEMM's charge (matmul_model.launch_info): one wavefront per swizzle-span row of the box
    (128 bytes where there is no swizzle), at least one."""
    return max(1, -(-box_bytes(p) // (p["swizzle"] or 128)))


def encode(lib, buf_ptr: int, p: dict) -> bytes:
    """The 128-byte CUtensorMap for probe ``p`` over the global buffer at ``buf_ptr`` (ctypes; ``lib`` is
    libcuda). Raises with the driver's error code if the driver refuses the box."""
    import ctypes

    u64, u32 = ctypes.c_uint64, ctypes.c_uint32
    tmap = (u64 * 16)()
    dims = (u64 * 2)(p["pitch"] // p["elem_bytes"], GLOBAL_ROWS)
    strides = (u64 * 1)(p["pitch"])
    box = (u32 * 2)(p["box_inner"], p["box_rows"])
    elem = (u32 * 2)(1, 1)
    fn = lib.cuTensorMapEncodeTiled
    fn.restype = ctypes.c_int
    rc = fn(
        ctypes.byref(tmap),
        ctypes.c_int(_DTYPE[p["elem_bytes"]]),
        u32(2),
        ctypes.c_void_p(buf_ptr),
        dims,
        strides,
        box,
        elem,
        ctypes.c_int(0),  # interleave none
        ctypes.c_int(_SWIZZLE[p["swizzle"]]),
        ctypes.c_int(0),  # no L2 promotion
        ctypes.c_int(0),  # no out-of-bounds fill
    )
    if rc != 0:
        raise RuntimeError(f"cuTensorMapEncodeTiled returned {rc} for {p}")
    return bytes(tmap)


def launch_all(probes_path: str, launched_path: str) -> int:
    """Launch every probe once, in order (this is the process ncu profiles)."""
    import ctypes

    import numpy as np
    import torch

    from autopad import cuda_runtime

    ps = json.loads(Path(probes_path).read_text())
    dev = torch.cuda.current_device()
    kernels = {d: cuda_runtime.load_kernel(SOURCE, f"probe_tma_{d}", {}, dev) for d in ("load", "store")}
    lib = ctypes.CDLL("libcuda.so.1")
    buf = torch.zeros(GLOBAL_ROWS * 2048, dtype=torch.uint8, device=f"cuda:{dev}")
    maps = torch.zeros((len(ps), 16), dtype=torch.int64)
    for i, p in enumerate(ps):
        maps[i] = torch.frombuffer(bytearray(encode(lib, buf.data_ptr(), p)), dtype=torch.int64)
    maps = maps.to(f"cuda:{dev}")
    out = torch.zeros(32, dtype=torch.int32, device=f"cuda:{dev}")
    torch.cuda.synchronize()
    n = 0
    for i, p in enumerate(ps):
        ptr = maps.data_ptr() + i * 128
        args = [ptr, out, np.int32(0), np.int32(0), np.int32(0), np.int32(box_bytes(p))]
        cuda_runtime.launch(kernels[p["direction"]], 1, 32, args)
        n += 1
    torch.cuda.synchronize()
    Path(launched_path).write_text(str(n))
    return n


def metrics_to_collect(available: set[str] | None) -> list[str]:
    """Every counter the GPU lists whose name speaks of shared memory, TMA or bulk copies, as ``.sum``."""
    return sorted(m + ".sum" for m in (available or ()) if METRIC_WORDS.search(m))


def rows(ps: list[dict], launches: list[dict]) -> list[dict]:
    """One CSV row per probe: the box, the assumption, and every collected counter."""
    out = []
    for p, ln in zip(ps, launches):
        out.append(
            {
                **p,
                "box_bytes": box_bytes(p),
                "assumed_wavefronts": assumed_wavefronts(p),
                "kernel": ln["kernel"],
                **ln["metrics"],
            }
        )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="probe_tma")
    ap.add_argument("--dry-run", action="store_true", help="write the probes and the source only")
    ap.add_argument("--quick", action="store_true", help="28 probes (8-row boxes, 2-byte elements)")
    ap.add_argument("--metrics", default="", help="a regex: collect only the listed counters it matches")
    ap.add_argument("--timeout", type=float, default=500.0, help="seconds for the profiled run at most")
    ap.add_argument("--launch", help=argparse.SUPPRESS)
    ap.add_argument("--launched", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.launch:
        launch_all(a.launch, a.launched)
        return 0
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    ps = probes(a.quick)
    (out / "probes.json").write_text(json.dumps(ps))
    (out / "probe_tma.cu").write_text(SOURCE)
    if a.dry_run:
        print(f"{len(ps)} probes written to {out}")
        return 0
    from autopad.validate_ncu import find_ncu, parse_ncu_csv, query_metrics

    ncu = find_ncu()
    if ncu is None:
        print("probe_tma: ncu not found", file=sys.stderr)
        return 2
    available = query_metrics(ncu)
    (out / "metrics_listed.txt").write_text("\n".join(sorted(available or ())))
    metrics = metrics_to_collect(available)
    if a.metrics:
        metrics = [m for m in metrics if re.search(a.metrics, m)]
    print(f"probe_tma: {len(ps)} probes, {len(metrics)} counters", file=sys.stderr)
    launched = out / "launched.txt"
    cmd = [
        ncu,
        "--target-processes",
        "all",
        "--clock-control",
        "none",
        "--cache-control",
        "none",
        "--print-units",
        "base",
        "-k",
        "regex:^probe_tma",
        "--metrics",
        ",".join(metrics),
        "--csv",
        sys.executable,
        str(Path(__file__).resolve()),
        "--launch",
        str(out / "probes.json"),
        "--launched",
        str(launched),
    ]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=a.timeout)
    except subprocess.TimeoutExpired as e:  # keep what ncu printed: the launches it finished are in it
        out_text = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        proc = subprocess.CompletedProcess(cmd, 124, out_text, "timed out")
    (out / "ncu_raw.csv").write_text(proc.stdout)
    (out / "ncu_stderr.txt").write_text(proc.stderr[-20000:])
    launches = parse_ncu_csv(proc.stdout, "probe_tma")
    print(
        f"probe_tma: ncu exit {proc.returncode}, {len(launches)} launches parsed in "
        f"{time.monotonic() - t0:.0f} s",
        file=sys.stderr,
    )
    table = rows(ps, launches)
    if table:
        keys = list(dict.fromkeys(k for r in table for k in r))
        with open(out / "probe_tma.csv", "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=keys)
            w.writeheader()
            w.writerows(table)
    return 0 if len(launches) == len(ps) else 1


if __name__ == "__main__":
    sys.exit(main())
