"""TMA under Nsight Compute: what one bulk tensor copy costs in shared-memory wavefronts (discovery run).

Why: the Gluon GEMM (kernels/triton/matmul_model.py) charges TMA's writes of each k-step's A and B tiles,
and the TMA store's reads of the C tile, one wavefront per ``SWIZZLE``-byte row of the box
(``extra_wavefronts``; its boxes are always exactly one swizzle span wide). That figure is an assumption;
no probe has measured it. Issue 14 asks that the model cover TMA "exact against Nsight Compute probes like
the existing 1,328". This script takes the measurements such a rule would be fitted to, without assuming
which counter holds them.

What: one warp, one ``cp.async.bulk.tensor.2d`` per launch, issued by lane 0:
- ``load``: global -> shared, completing on an mbarrier that lane 0 waits on;
- ``store``: shared -> global (bulk group, waited on with ``wait_group.read``); the shared tile is not
  written first, so the only shared-memory traffic is the copy's own;
- one control launch per direction that skips the copy (``copy`` 0; the load's barrier still completes on a
  plain arrive), so the barrier's own traffic can be subtracted.
The box varies over element size (1, 2, 4 bytes), swizzle (none, 32, 64, 128 bytes), inner extent (16 to
256 bytes), rows (1 to 128) and the global row pitch (aligned or not to 128 bytes). The tensor map is
encoded on the host (``cuTensorMapEncodeTiled`` through ctypes, into a 128-byte-aligned buffer), copied to
global memory, and acquired by the kernel (``fence.proxy.tensormap::generic.acquire``) before use.

Counters: ncu is asked which metrics this GPU has (``--query-metrics``); every one whose name says shared
memory, TMA or bulk copies (ratios left out) is collected, summed per launch. A one-launch pre-run drops
names ncu refuses, so one bad name cannot cost the run. The probes run under ncu in chunks, each with its
own time limit, so a timeout loses one chunk. The CSV has one row per launched probe, joined by probe index,
with every counter beside the box and the model's assumption (``assumed_wavefronts``: box bytes / swizzle
span, 128 for no swizzle; the model's own case is ``model_case``, box inner bytes = swizzle span, where it
is one per box row). Which counter is the right one is read off the result, not assumed.

Run on a GPU machine: ``python3 benchmarks/probe_tma.py --out DIR`` (``--quick`` first: 30 launches).
Without a GPU, ``--dry-run`` writes the probe list and the CUDA source.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SMEM_BYTES = 32 * 1024  # the static tile; every box fits (128 rows x 256 bytes = 32 KiB)
GLOBAL_ROWS = 256
_DTYPE = {1: 0, 2: 1, 4: 2}  # CU_TENSOR_MAP_DATA_TYPE_UINT8 / UINT16 / UINT32 (cuda.h)
_SWIZZLE = {0: 0, 32: 1, 64: 2, 128: 3}  # CU_TENSOR_MAP_SWIZZLE_NONE / 32B / 64B / 128B
METRIC_WORDS = re.compile(r"shared|tma|bulk|ldgsts|utma|dsmem", re.IGNORECASE)
NOT_SUMMABLE = re.compile(r"average|_per_|pct|ratio|_rate|throughput", re.IGNORECASE)  # no .sum rollup
# what every ncu since 2020 has: the fallback if the GPU's list cannot be used
SAFE_METRICS = (
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
)
CHUNK = 64  # probes per ncu process

SOURCE = r"""
// autopad TMA probe: one warp, one cp.async.bulk.tensor.2d issued by lane 0 (none when bytes == 0)
extern "C" __global__ void probe_tma_load(const unsigned long long* __restrict__ tmap,
                                          unsigned* __restrict__ out, int flag, int x, int y, int bytes)
{
    __shared__ __align__(1024) unsigned char smem[SMEM_BYTES];
    __shared__ __align__(8) unsigned long long bar;
    const unsigned lane = threadIdx.x;
    const unsigned sb = (unsigned)__cvta_generic_to_shared(&bar);
    const unsigned ss = (unsigned)__cvta_generic_to_shared(smem);
    if (lane == 0) {
        // the map was written by a host copy: acquire it for the tensormap proxy (PTX ISA, tensormap proxy)
        asm volatile("fence.proxy.tensormap::generic.acquire.sys [%0], 128;" :: "l"(tmap) : "memory");
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(sb) : "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        if (bytes > 0) {
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                         :: "r"(sb), "r"(bytes) : "memory");
            asm volatile(
                "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                " [%0], [%1, {%2, %3}], [%4];"
                :: "r"(ss), "l"(tmap), "r"(x), "r"(y), "r"(sb) : "memory");
        } else {
            asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(sb) : "memory");
        }
        asm volatile(
            "{\n\t.reg .pred done;\n\tWAIT_%=:\n\t"
            "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n\t"
            "@!done bra WAIT_%=;\n\t}" :: "r"(sb) : "memory");
    }
    __syncwarp();
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
    if (lane == 0 && bytes > 0) {
        asm volatile("fence.proxy.tensormap::generic.acquire.sys [%0], 128;" :: "l"(tmap) : "memory");
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
    """Every probe: direction, element bytes, swizzle span, box (inner elements, rows), global pitch, and
    whether it copies (``copy`` 0: the control launch, first of each direction).

    2-byte elements (the GEMM's) over every box; 1- and 4-byte ones at 8 rows and an aligned pitch (TMA
    moves bytes, and its swizzle permutes 16-byte chunks, so the element size should not matter: these
    check that). A 1-row box has no pitch to vary. ``quick``: the controls and 8-row boxes of 2-byte
    elements on an aligned pitch, for a first run that collects every counter."""
    out = []
    for direction in ("load", "store"):
        control = {"direction": direction, "copy": 0, "elem_bytes": 2, "swizzle": 0, "box_inner": 8}
        out.append({**control, "box_rows": 1, "pitch": 1024})
        for eb in (2, 1, 4):
            for swz in (0, 32, 64, 128):
                inners = (
                    (16, 32, 64, 128, 256) if swz == 0 else tuple(b for b in (16, 32, 64, 128) if b <= swz)
                )
                for inner_bytes in inners:
                    for rows in (1, 8, 64, 128):
                        for pitch in (1024, 1040):
                            if eb == 2 and not quick:
                                if (rows == 1 and pitch != 1024) or inner_bytes * rows > SMEM_BYTES:
                                    continue
                            elif rows != 8 or pitch != 1024 or (quick and eb != 2):
                                continue
                            out.append(
                                {
                                    "direction": direction,
                                    "copy": 1,
                                    "elem_bytes": eb,
                                    "swizzle": swz,
                                    "box_inner": inner_bytes // eb,
                                    "box_rows": rows,
                                    "pitch": pitch,
                                }
                            )
    for i, p in enumerate(out):
        p["index"] = i
        check(p)
    return out


def check(p: dict) -> None:
    """cuTensorMapEncodeTiled's rules (cuda.h) for the probes' boxes, so a bad probe fails here, not on
    the GPU: inner bytes a multiple of 16 and at most the swizzle span; box extents 1..256; pitch a
    multiple of 16; the box inside the global tensor and the shared tile."""
    inner_bytes = p["box_inner"] * p["elem_bytes"]
    assert inner_bytes % 16 == 0 and 1 <= p["box_inner"] <= 256 and 1 <= p["box_rows"] <= 256, p
    assert p["swizzle"] == 0 or inner_bytes <= p["swizzle"], p
    assert p["pitch"] % 16 == 0 and inner_bytes <= p["pitch"] and p["box_rows"] <= GLOBAL_ROWS, p
    assert inner_bytes * p["box_rows"] <= SMEM_BYTES, p


def box_bytes(p: dict) -> int:
    return p["box_inner"] * p["elem_bytes"] * p["box_rows"] if p.get("copy", 1) else 0


def assumed_wavefronts(p: dict) -> int:
    """The Gluon GEMM's charge (matmul_model.launch_info): one wavefront per swizzle-span row of the box
    (128 bytes where there is no swizzle), at least one for a copy. It counts dense span-wide rows: for a
    box narrower than the span that is fewer than its rows (``model_case`` marks the model's own boxes)."""
    return max(1, -(-box_bytes(p) // (p["swizzle"] or 128))) if p.get("copy", 1) else 0


def encode(lib, buf_ptr: int, p: dict) -> bytes:
    """The 128-byte CUtensorMap for probe ``p`` over the global buffer at ``buf_ptr`` (ctypes; ``lib`` is
    libcuda). The map is built in a 128-byte-aligned buffer (the driver requires 64; cuda.h declares
    ``alignas(128)``; a ctypes array is only 16-aligned). Raises with the driver's code if it refuses."""
    import ctypes

    u64, u32 = ctypes.c_uint64, ctypes.c_uint32
    raw = ctypes.create_string_buffer(256)
    addr = (ctypes.addressof(raw) + 127) & ~127
    dims = (u64 * 2)(p["pitch"] // p["elem_bytes"], GLOBAL_ROWS)
    strides = (u64 * 1)(p["pitch"])
    box = (u32 * 2)(p["box_inner"], p["box_rows"])
    elem = (u32 * 2)(1, 1)
    fn = lib.cuTensorMapEncodeTiled
    fn.restype = ctypes.c_int
    rc = fn(
        ctypes.c_void_p(addr),
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
    return ctypes.string_at(addr, 128)


def launch_all(probes_path: str, launched_path: str) -> int:
    """Launch every probe of the file once, in order (this is the process ncu profiles). A box the driver
    refuses is skipped and noted; ``launched_path`` gets the indices launched, as JSON, after each one."""
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
    refused = {}
    for i, p in enumerate(ps):
        try:
            maps[i] = torch.frombuffer(bytearray(encode(lib, buf.data_ptr(), p)), dtype=torch.int64)
        except RuntimeError as e:
            refused[p["index"]] = str(e)
    maps = maps.to(f"cuda:{dev}")  # each map 128-byte aligned: rows of 128 bytes in an aligned allocation
    out = torch.zeros(32, dtype=torch.int32, device=f"cuda:{dev}")
    torch.cuda.synchronize()
    done: list[int] = []
    for i, p in enumerate(ps):
        if p["index"] in refused:
            continue
        ptr = maps.data_ptr() + i * 128
        args = [ptr, out, np.int32(0), np.int32(0), np.int32(0), np.int32(box_bytes(p))]
        cuda_runtime.launch(kernels[p["direction"]], 1, 32, args)
        torch.cuda.synchronize()
        done.append(p["index"])
        Path(launched_path).write_text(json.dumps({"launched": done, "refused": refused}))
    Path(launched_path).write_text(json.dumps({"launched": done, "refused": refused}))
    return len(done)


def metrics_to_collect(available: set[str] | None) -> list[str]:
    """Every counter the GPU lists whose name speaks of shared memory, TMA or bulk copies and that has a
    ``.sum`` (ratios and rates do not), as ``name.sum``."""
    return sorted(
        m + ".sum" for m in (available or ()) if METRIC_WORDS.search(m) and not NOT_SUMMABLE.search(m)
    )


REFUSED = re.compile(r"[Ff]ailed to find metric[^\w]*(?:regex:)?([a-z][a-z0-9_]*__[a-z0-9_.]+)")


def vet_metrics(run, metrics: list[str], tries: int = 6) -> list[str]:
    """The names ncu accepts: ``run(metrics)`` profiles one launch and returns (exit code, its output);
    names it reports as not found are dropped and the run repeated. If it still fails, the safe few."""
    for _ in range(tries):
        if not metrics:
            break
        rc, text = run(metrics)
        bad = {b if b.endswith(".sum") else b + ".sum" for b in REFUSED.findall(text)}
        if rc == 0 and not bad:
            return metrics
        if not bad & set(metrics):
            break  # failing for another reason: keep to what surely works
        metrics = [m for m in metrics if m not in bad]
    return list(SAFE_METRICS)


def _run_killable(cmd: list[str], env: dict, timeout: float) -> tuple[int, str, str]:
    """Run ``cmd`` in its own process group; on timeout kill the whole group (ncu and the profiled
    python), so the GPU is freed. Returns (exit code, stdout, stderr); 124 on timeout."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)  # fmt: skip
    try:
        out, err = proc.communicate(timeout=max(1.0, timeout))
        return proc.returncode, out, err
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return 124, out or "", (err or "") + "\nprobe_tma: timed out, process group killed"


def rows(ps: list[dict], launches: list[dict], launched: list[int]) -> list[dict]:
    """One CSV row per launched probe, ncu's launches joined to the probe indices launched, in order;
    raises if ncu's kernel names do not line up with the probes' directions."""
    by_index = {p["index"]: p for p in ps}
    out = []
    for idx, ln in zip(launched, launches):
        p = by_index[idx]
        want = f"probe_tma_{p['direction']}"
        if ln["kernel"] != want and not ln["kernel"].startswith(want + "("):
            raise RuntimeError(f"probe {idx}: ncu's launch ran {ln['kernel']}, expected {want}")
        model_case = int(p.get("copy", 1) and p["box_inner"] * p["elem_bytes"] == p["swizzle"])
        out.append(
            {
                **p,
                "box_bytes": box_bytes(p),
                "assumed_wavefronts": assumed_wavefronts(p),
                "model_case": model_case,
            }
            | {"kernel": ln["kernel"], **ln["metrics"]}
        )
    return out


def _ncu_cmd(ncu: str, metrics: list[str], probes_file: Path, launched: Path, count: int | None) -> list[str]:
    cmd = [ncu, "--target-processes", "all", "--clock-control", "none", "--cache-control", "none"]
    cmd += ["--print-units", "base", "-k", "regex:^probe_tma", "--metrics", ",".join(metrics), "--csv"]
    cmd += ["-c", str(count)] if count else []
    return cmd + [
        sys.executable,
        str(Path(__file__).resolve()),
        "--launch",
        str(probes_file),
        "--launched",
        str(launched),
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="probe_tma")
    ap.add_argument("--dry-run", action="store_true", help="write the probes and the source only")
    ap.add_argument("--quick", action="store_true", help="30 launches (controls, 8-row 2-byte boxes)")
    ap.add_argument("--metrics", default="", help="a regex: collect only the listed counters it matches")
    ap.add_argument("--timeout", type=float, default=480.0, help="seconds for all profiled chunks at most")
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
    t_end = time.monotonic() + a.timeout
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    available = query_metrics(ncu)
    (out / "metrics_listed.txt").write_text("\n".join(sorted(available or ())))
    metrics = metrics_to_collect(available) or list(SAFE_METRICS)
    if a.metrics:
        metrics = [m for m in metrics if re.search(a.metrics, m)] or list(SAFE_METRICS)
    first = out / "vet_probe.json"
    first.write_text(json.dumps(ps[:1]))

    def one_launch(ms: list[str]) -> tuple[int, str]:
        rc, so, se = _run_killable(_ncu_cmd(ncu, ms, first, out / "vet_launched.json", 1), env, 120)
        (out / "vet_output.txt").write_text(f"exit {rc}\n{se[-20000:]}\n{so[-20000:]}")
        return rc, so + se

    metrics = vet_metrics(one_launch, metrics)
    (out / "metrics_used.txt").write_text("\n".join(metrics))
    print(f"probe_tma: {len(ps)} probes, {len(metrics)} counters", file=sys.stderr)
    table: list[dict] = []
    for c in range(0, len(ps), CHUNK):
        part, name = ps[c : c + CHUNK], f"chunk{c // CHUNK:02d}"
        (out / f"{name}_probes.json").write_text(json.dumps(part))
        launched = out / f"{name}_launched.json"
        t0 = time.monotonic()
        rc, so, se = _run_killable(_ncu_cmd(ncu, metrics, out / f"{name}_probes.json", launched, None), env,
                                   t_end - t0)  # fmt: skip
        (out / f"{name}_ncu_raw.csv").write_text(so)
        (out / f"{name}_stderr.txt").write_text(se[-20000:])
        got = json.loads(launched.read_text()) if launched.is_file() else {"launched": [], "refused": {}}
        launches = parse_ncu_csv(so, "probe_tma")
        print(f"probe_tma: {name} exit {rc}, {len(got['launched'])} launched, {len(got['refused'])} refused, "
              f"{len(launches)} parsed, {time.monotonic() - t0:.0f} s", file=sys.stderr)  # fmt: skip
        table += rows(part, launches, got["launched"])
        if rc == 124:
            break
    complete = len(table) == len(ps)
    if table:
        keys = list(dict.fromkeys(k for r in table for k in r))
        with open(out / ("probe_tma.csv" if complete else "probe_tma_partial.csv"), "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=keys)
            w.writeheader()
            w.writerows(table)
    return 0 if complete else 1


if __name__ == "__main__":
    sys.exit(main())
