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

ldmatrix, stmatrix and cp.async (the model's derived rules, model_rules.py) have probes of their own, one
instruction each: ``ldmatrix/stmatrix.sync.aligned.m8n8.xK[.trans].shared.b16`` (no predicate: the
instruction is warp-wide, every lane gives a row address) and a predicated ``cp.async.{ca,cg}.shared.global``
of 4, 8 or 16 bytes from a global buffer at per-lane offsets, then ``cp.async.wait_all``. Nsight Compute
counts them apart from plain loads and stores (``*_mem_shared_op_ldsm``, ``_op_stsm``, ``_op_ldgsts``;
public profiling scripts use both ``l1tex__`` and ``sm__sass_l1tex_`` spellings), so ``extra_metrics``
asks ncu which of the candidates this GPU has and ``measured_counts`` takes the first pair present, the
shared-memory totals last (a probe issues no other shared-memory instruction).

Nothing here is imported by ``import autopad``; torch and cuda.core load inside the functions.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

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

SMEM_BYTES = 48 * 1024  # the static shared array every probe addresses into
_OPS = _SHORT = {"load": "ld", "store": "st", "atomic": "atom"}
# cuda.core's NVRTC options reject an empty macro list, so every compile carries this one define
_DEFINES = {"AUTOPAD_VALIDATE": 1}
METRICS = tuple(
    f"l1tex__data_{kind}_mem_shared_op_{o}.sum"
    for o in ("ld", "st", "atom")
    for kind in ("pipe_lsu_wavefronts", "bank_conflicts_pipe_lsu")
)
_TYPES = {1: "u8", 2: "u16", 4: "u32", 8: "v2.u32", 16: "v4.u32"}
GLOBAL_BYTES = 64 * 1024  # the global buffer cp.async probes copy from
# (model op, bytes, instruction form): every ldmatrix/stmatrix/cp.async form the probes cover
_MATRIX_OPS = [f"{m}.x{k}{t}" for m in ("ldmatrix", "stmatrix") for k in (1, 2, 4) for t in ("", ".trans")]
NEW_FORMS = tuple((op, 16, op) for op in _MATRIX_OPS) + tuple(
    ("cp.async", w, f)
    for w, f in ((4, "cp.async.ca"), (8, "cp.async.ca"), (16, "cp.async.ca"), (16, "cp.async.cg"))
)
_MATRIX = re.compile(r"^(ldmatrix|stmatrix)\.x([124])(\.trans)?$")
_FAMILY = {"ldmatrix": "ldsm", "stmatrix": "stsm", "cp.async": "ldgsts"}


def _family(op: str) -> str | None:
    m = _MATRIX.match(op)
    return _FAMILY[m.group(1)] if m else ("ldgsts" if op == "cp.async" else None)


def kernel_name(op: str, access_bytes: int, form: str | None = None) -> str:
    """``probe_ld_u32``, ``probe_st_v4_u32``, ``probe_atom_u32``, ``probe_ldsm_x4_trans``,
    ``probe_stsm_x1``, ``probe_ldgsts_cg_16``: what ncu's "Kernel Name" column shows."""
    m = _MATRIX.match(op) if isinstance(op, str) else None
    if m and access_bytes == 16:
        return f"probe_{_FAMILY[m.group(1)]}_x{m.group(2)}{'_trans' if m.group(3) else ''}"
    if op == "cp.async" and (form or "cp.async.ca", access_bytes) in (
        ("cp.async.ca", 4),
        ("cp.async.ca", 8),
        ("cp.async.ca", 16),
        ("cp.async.cg", 16),
    ):
        return f"probe_ldgsts_{(form or 'cp.async.ca')[-2:]}_{access_bytes}"
    if op not in _OPS or access_bytes not in _TYPES or (op == "atomic" and access_bytes != 4):
        raise ValueError(f"no probe kernel for op={op!r}, access_bytes={access_bytes!r}, form={form!r}")
    return f"probe_{_OPS[op]}_{_TYPES[access_bytes].replace('.', '_')}"


def probe_kernel_name(p: dict) -> str:
    """The kernel that runs probe ``p``."""
    return kernel_name(p["op"], int(p["access_bytes"]), p.get("form"))


def _ptx(op: str, access_bytes: int) -> tuple[str, str, str]:
    """(PTX body, output operands, input operands) for the single predicated instruction."""
    t = _TYPES[access_bytes]
    nv = max(1, access_bytes // 4)
    regs = ", ".join(f"%{i}" for i in range(nv))
    vec = "{" + regs + "}" if nv > 1 else "%0"
    outs = ", ".join(f'"+r"(v{i})' for i in range(nv))
    a, sa = f"%{nv}", f"%{nv + 1}"
    pred = f"{{\\n\\t.reg .pred p;\\n\\tsetp.ge.s32 p, {a}, 0;\\n\\t"
    if op == "load":
        return pred + f"@p ld.shared.{t} {vec}, [{sa}];\\n\\t}}", outs, '"r"(a), "r"(sa)'
    if op == "atomic":
        return pred + f"@p atom.shared.add.u32 %0, [{sa}], 1;\\n\\t}}", outs, '"r"(a), "r"(sa)'
    # store: the values are inputs; operand numbering starts at the address
    pred = "{\\n\\t.reg .pred p;\\n\\tsetp.ge.s32 p, %0, 0;\\n\\t"
    vals = ", ".join(f"%{i + 2}" for i in range(nv))
    vec = "{" + vals + "}" if nv > 1 else "%2"
    ins = '"r"(a), "r"(sa), ' + ", ".join(f'"r"(v{i})' for i in range(nv))
    return pred + f"@p st.shared.{t} [%1], {vec};\\n\\t}}", "", ins


def probe_source(op: str, access_bytes: int) -> str:
    """CUDA source of one kernel: one warp, ONE shared-memory instruction at per-lane byte offsets.

    ``probe_x(const int* addr, unsigned* out, int flag)``: lane ``l`` accesses byte ``addr[l]`` of a 48 KB
    static shared array, or sits the instruction out when ``addr[l] < 0``. ``out`` (4 words per lane) is
    written only when ``flag`` is non-zero, which keeps a loaded value alive without touching shared memory.
    """
    name = kernel_name(op, access_bytes)
    nv = max(1, access_bytes // 4)
    body, outs, ins = _ptx(op, access_bytes)
    init = " ".join(f"unsigned v{i} = lane * 4u + {i}u;" for i in range(nv))
    keep = " ^ ".join(f"v{i}" for i in range(nv))
    return f"""// autopad validate: one {op} of {access_bytes} byte(s) per active lane, one instruction
extern "C" __global__ void {name}(const int* __restrict__ addr, unsigned* __restrict__ out, int flag)
{{
    __shared__ __align__(16) unsigned char smem[{SMEM_BYTES}];
    const unsigned lane = threadIdx.x;
    const int a = addr[lane];
    const unsigned sa = (unsigned)__cvta_generic_to_shared(smem) + (unsigned)(a < 0 ? 0 : a);
    {init}
    asm volatile("{body}" : {outs} : {ins} : "memory");
    if (flag) {{
        out[lane] = {keep};
    }}
}}
"""


def new_probe_source(op: str, access_bytes: int, form: str | None = None) -> str:
    """CUDA source of one ldmatrix/stmatrix/cp.async probe: one warp, ONE such instruction.

    ``probe_x(const int* addr, unsigned* out, int flag, const unsigned char* gsrc)``: lane ``l`` gives
    byte ``addr[l]`` of the 48 KB static shared array (ldmatrix/stmatrix: the start of its 16-byte row;
    every lane gives one, lanes past 8 x matrices included, as the instruction is warp-wide); cp.async
    copies ``access_bytes`` from ``gsrc + addr[32 + l]`` to it, or sits out when ``addr[l] < 0``.
    """
    name = kernel_name(op, access_bytes, form)
    head = f"""// autopad validate: one {form or op} of {access_bytes} byte(s) per lane, one instruction
extern "C" __global__ void {name}(const int* __restrict__ addr, unsigned* __restrict__ out, int flag,
                                  const unsigned char* __restrict__ gsrc)
{{
    __shared__ __align__(128) unsigned char smem[{SMEM_BYTES}];
    const unsigned lane = threadIdx.x;
    const int a = addr[lane];
    const unsigned sa = (unsigned)__cvta_generic_to_shared(smem) + (unsigned)(a < 0 ? 0 : a);
"""
    m = _MATRIX.match(op)
    if m:
        k, trans = int(m.group(2)), ".trans" if m.group(3) else ""
        regs = ", ".join(f"%{i}" for i in range(k))
        if m.group(1) == "ldmatrix":
            outs = ", ".join(f'"=r"(v{i})' for i in range(k))
            decl = " ".join(f"unsigned v{i} = 0u;" for i in range(k))
            asm = (
                f'asm volatile("ldmatrix.sync.aligned.m8n8.x{k}{trans}.shared.b16 {{{regs}}}, [%{k}];" '
                f': {outs} : "r"(sa) : "memory");'
            )
        else:
            vals = ", ".join(f"%{i + 1}" for i in range(k))
            ins = ", ".join(f'"r"(v{i})' for i in range(k))
            decl = " ".join(f"unsigned v{i} = lane * 4u + {i}u;" for i in range(k))
            asm = (
                f'asm volatile("stmatrix.sync.aligned.m8n8.x{k}{trans}.shared.b16 [%0], {{{vals}}};" '
                f':: "r"(sa), {ins} : "memory");'
            )
        keep = " ^ ".join(f"v{i}" for i in range(k))
        return (
            head
            + f"""    {decl}
    {asm}
    if (flag) {{
        out[lane] = {keep};
    }}
}}
"""
        )
    form = form or "cp.async.ca"
    body = (
        "{\\n\\t.reg .pred p;\\n\\tsetp.ge.s32 p, %0, 0;\\n\\t"
        f"@p {form}.shared.global [%1], [%2], {access_bytes};\\n\\t}}"
    )
    return (
        head
        + f"""    const int g = addr[32 + lane];
    const unsigned char* gp = gsrc + (g < 0 ? 0 : g);
    asm volatile("{body}" :: "r"(a), "r"(sa), "l"(gp) : "memory");
    asm volatile("cp.async.wait_all;" ::: "memory");
    if (flag) {{
        out[lane] = (unsigned)(size_t)gp;
    }}
}}
"""
    )


def any_probe_source(p: dict) -> str:
    """The CUDA source of the kernel that runs probe ``p``."""
    if _family(p["op"]):
        return new_probe_source(p["op"], int(p["access_bytes"]), p.get("form"))
    return probe_source(p["op"], int(p["access_bytes"]))


def stride_source() -> str:
    """The seeds' stride micro-benchmark: lanes read ``tile[(lane * stride + i) & 2047]``, ``iters`` times."""
    return """// autopad validate: shared-memory stride micro-benchmark (seeds' stride table)
extern "C" __global__ void stride_read(float* __restrict__ out, int stride, int iters)
{
    __shared__ float tile[2048];
    for (int i = threadIdx.x; i < 2048; i += blockDim.x) tile[i] = (float)i;
    __syncthreads();
    const int base = (int)(threadIdx.x & 31) * stride;
    float acc = 0.0f;
#pragma unroll 8
    for (int i = 0; i < iters; ++i) acc += tile[(base + i) & 2047];
    if (acc == -1.0f) out[blockIdx.x * blockDim.x + threadIdx.x] = acc;  // never true; keeps the loads
}
"""


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


# ------------------------------------------------------------------------------------------- ncu
# Candidate counters for the new probes, in order of preference (wavefronts, bank conflicts); the
# shared-memory totals come last. ``extra_metrics`` keeps those this GPU's ncu lists.
_CANDIDATES = {
    "ldsm": [
        (
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldsm",
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm",
        ),
        (
            "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm",
            "sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm",
        ),
    ],
    "stsm": [
        (
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_stsm",
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_stsm",
        ),
        (
            "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_stsm",
            "sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_stsm",
        ),
    ],
    "ldgsts": [
        (
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldgsts",
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts",
        ),
        (
            "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts_cache_access",
            "sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts_cache_access",
        ),
        (
            "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts_cache_bypass",
            "sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts_cache_bypass",
        ),
    ],
}
TOTALS = (
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
)


def query_metrics(ncu: str | None = None) -> set[str] | None:
    """Base names of the metrics ncu lists for this machine's GPU (``ncu --query-metrics``), or None."""
    ncu = ncu or find_ncu()
    if ncu is None:
        return None
    try:
        proc = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return None
    names = set(re.findall(r"^\s*\"?([a-z][a-z0-9_]*__[a-z0-9_]+)", proc.stdout, flags=re.MULTILINE))
    return names or None


def extra_metrics(families: set[str], available: set[str] | None) -> list[str]:
    """The counters to request for the new probes' families ("ldsm", "stsm", "ldgsts"): every candidate
    this GPU has, plus the shared-memory totals. With no list from ncu (``available`` None) only the
    totals, which every ncu since 2020 has, so one unknown name cannot fail the whole run."""
    out = [m for fam in sorted(families) for pair in _CANDIDATES[fam] for m in pair]
    out = [m + ".sum" for m in out if available is not None and m in available]
    return out + list(TOTALS)


def find_ncu() -> str | None:
    """Path of Nsight Compute's ``ncu``: on PATH, else /usr/local/cuda/bin/ncu, else None."""
    found = shutil.which("ncu")
    if found:
        return found
    candidates = [Path("/usr/local/cuda/bin/ncu"), *sorted(Path("/opt/nvidia").glob("nsight-compute/*/ncu"))]
    return next((str(c) for c in candidates if c.is_file() and os.access(c, os.X_OK)), None)


def _number(text: str) -> float | None:
    text = text.strip().replace(",", "")
    try:
        return float(text)
    except ValueError:
        return None  # "n/a" and the like


def parse_ncu_csv(text: str, kernel_prefix: str = "probe") -> list[dict]:
    """Per-launch metrics from ``ncu --csv`` output, in launch order (the "ID" column).

    Accepts the default long format (one row per metric: "Metric Name", "Metric Unit", "Metric Value") and
    the wide ``--page raw`` format (one column per metric, a units row under the header). ``==PROF==``
    lines and the program's own output around the table are skipped; thousands separators are removed.
    Returns ``[{"id", "kernel", "metrics": {name: value}}]`` for kernels whose name starts with the prefix.
    """
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID",')), None)
    if start is None:
        return []
    body = [ln for ln in lines[start:] if ln.startswith('"')]
    rows = list(csv.reader(io.StringIO("\n".join(body))))
    header = rows[0]
    col = {name: i for i, name in enumerate(header)}
    launches: dict[int, dict] = {}
    long_form = "Metric Name" in col
    for row in rows[1:]:
        if len(row) < len(header) or row[0] == "ID" or not row[0].strip().isdigit():
            continue  # a repeated header, or the units row of the raw page
        kernel = row[col["Kernel Name"]]
        if not kernel.startswith(kernel_prefix):
            continue
        entry = launches.setdefault(int(row[0]), {"id": int(row[0]), "kernel": kernel, "metrics": {}})
        if long_form:
            entry["metrics"][row[col["Metric Name"]]] = _number(row[col["Metric Value"]])
        else:
            for name, i in col.items():
                if "__" in name:  # a metric column
                    entry["metrics"][name] = _number(row[i])
    return [launches[k] for k in sorted(launches)]


def measured_counts(launch: dict, op: str) -> tuple[int | None, int | None]:
    """(wavefronts, bank conflicts) of one parsed launch for the probe's op."""
    return counted_by(launch, op)[:2]


def counted_by(launch: dict, op: str) -> tuple[int | None, int | None, str | None]:
    """(wavefronts, bank conflicts, the wavefront metric they came from) of one parsed launch.

    ld/st/atom: their own pair. ldmatrix/stmatrix/cp.async: the first candidate pair with both values,
    else the shared-memory totals (the probe issues no other shared-memory instruction)."""
    fam = _family(op)
    if fam is None:
        o = _SHORT[op]
        pairs = [
            (
                f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{o}.sum",
                f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{o}.sum",
            )
        ]
    else:
        pairs = [(w + ".sum", c + ".sum") for w, c in _CANDIDATES[fam]] + [TOTALS]
    got = launch["metrics"]
    for w, c in pairs:
        if got.get(w) is not None and got.get(c) is not None:
            return int(got[w]), int(got[c]), w
    w, c = pairs[0]
    wave, conf = got.get(w), got.get(c)
    return (None if wave is None else int(wave)), (None if conf is None else int(conf)), None


def run_ncu(
    probes: list[dict], out_dir: Path, budget_s: float = 150.0, metrics: Sequence[str] = METRICS
) -> list[dict]:
    """Profile every probe under ncu in ONE process; returns the parsed launches, in launch order."""
    ncu = find_ncu()
    if ncu is None:
        raise RuntimeError("validate: ncu (Nsight Compute) not found on PATH or in /usr/local/cuda/bin")
    with tempfile.TemporaryDirectory(prefix="autopad-validate-") as tmp:
        ppath, lpath = Path(tmp) / "probes.json", Path(tmp) / "launched.txt"
        keep = ("op", "access_bytes", "addresses", "form", "global")
        ppath.write_text(json.dumps([{k: p[k] for k in keep if k in p} for p in probes]))
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
            "regex:^probe_",
            "--metrics",
            ",".join(metrics),
            "--csv",
            sys.executable,
            "-m",
            "autopad.validate",
            "--launch",
            str(ppath),
            "--launched",
            str(lpath),
            "--budget",
            str(budget_s),
        ]
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        t0 = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=budget_s + 600)
        (out_dir / "ncu_raw.csv").write_text(proc.stdout)
        n = int(lpath.read_text()) if lpath.is_file() else 0
        print(
            f"validate: ncu ran {n} of {len(probes)} launches in {time.monotonic() - t0:.1f} s "
            f"(exit {proc.returncode})",
            file=sys.stderr,
        )
        print(proc.stderr[-(4000 if proc.returncode else 1500) :], file=sys.stderr)
    launches = parse_ncu_csv(proc.stdout)
    if len(launches) != n:
        print(
            f"validate: ncu reported {len(launches)} probe launches, the launcher made {n}", file=sys.stderr
        )
    return launches[:n]
