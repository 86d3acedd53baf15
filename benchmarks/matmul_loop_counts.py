"""Instructions the CUDA SIMT GEMM's k-loop issues besides its FFMAs, compiled: the table
``kernels/cuda/matmul_loop_sm90.json`` holds, read again after a kernel change.

Every build of the space (each launch configuration, BM BN BK TM TN THREAD_MAP MIN_BLOCKS, under each of the
layouts of A and B legal with it; SPLIT_K 1, whose k-loop every split runs) is compiled for sm_90 through
``autopad.cuda_compile.compile_cubin`` (NVRTC where cuda-python has it, as the tuner builds; the builds land
in the cubin cache) and its SASS read with ``cuobjdump -sass``. The k-loop is the backward branch whose body
holds the most FFMAs, and of the two such loops (matmul.cu's unchecked loop and its checked twin, which
holds the scalar fallback too) the shorter, the unchecked one: the one a shape on the kernel's grid runs.
Its instructions other than FFMA, per thread per k-step (a loop the compiler unrolled twice counts half),
are the table's entry: the shared loads and stores, the global loads of the next step, their address and
swizzle arithmetic, the loop's counters and its barrier. No GPU needed; about 0.5 s a build on two cores
(10,032 builds), much less from the cubin cache::

    python benchmarks/matmul_loop_counts.py [--jobs 2] [--out kernels/cuda/matmul_loop_sm90.json]
    python benchmarks/matmul_loop_counts.py --check 20    # compile 20 drawn builds, compare with the table

Against the hardware: ``--launch N`` (GPU) launches N builds drawn from the space once each at NCU_SHAPE,
printing each launch's key; run under ``ncu --csv --metrics smsp__inst_executed.sum --kernel-name
matmul_kernel``, then ``--compare NCU_CSV LAUNCHES`` (no GPU) sets each launch's executed warp instructions
beside blocks x warps x k-steps x (FFMAs + the table's count)::

    ncu --csv --kernel-name matmul_kernel --metrics smsp__inst_executed.sum \
        python benchmarks/matmul_loop_counts.py --launch 24 > ncu.csv 2> launches.txt
    python benchmarks/matmul_loop_counts.py --compare ncu.csv launches.txt
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy
sys.path.insert(0, str(ROOT / "benchmarks"))

TABLE = ROOT / "kernels" / "cuda" / "matmul_loop_sm90.json"
SHAPE = (2048, 2048, 2048)  # every build of the space is legal here
_LINE = re.compile(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
_BRANCH = re.compile(r"\bBRA\b[^;]*?0x([0-9a-f]+)")


def builds() -> list[dict[str, int]]:
    """Every (launch configuration, layout) of the SIMT GEMM's space at SHAPE, SPLIT_K 1."""
    from autopad.kernels_registry import builtin_spec
    from autopad.search import enumerate_candidates

    spec = builtin_spec("matmul", "cuda")
    return [dict(c) for c in enumerate_candidates(spec, SHAPE, "float32") if c["SPLIT_K"] == 1]


def loop_ops(sass: str) -> tuple[int, collections.Counter]:
    """(FFMAs, opcode counts) of the unchecked k-loop in ``sass``: of the loops (backward branches) whose
    body holds the most FFMAs, the one with the fewest instructions."""
    code = [(int(m[1], 16), m[2]) for m in map(_LINE.match, sass.splitlines()) if m]
    loops = []
    for at, text in code:
        b = _BRANCH.search(text)
        if b and int(b[1], 16) < at:
            body = [t for a, t in code if int(b[1], 16) <= a <= at]
            ops: collections.Counter = collections.Counter()
            for t in body:
                words = t.split()
                op = words[1] if words[0].startswith("@") else words[0]  # a predicate guards it
                ops[op.split(".")[0]] += 1
            loops.append((ops["FFMA"], -len(body), ops))
    if not loops:
        raise ValueError("no loop in the SASS")
    ffma, _, ops = max(loops, key=lambda x: (x[0], x[1]))
    return ffma, ops


def count(c: dict[str, int]) -> int:
    """Instructions other than FFMA in ``c``'s unchecked k-loop, per thread per k-step (rounded)."""
    from autopad.kernels.cuda import matmul as G
    from matmul_registers import cuobjdump

    from autopad import cuda_compile

    blob = cuda_compile.compile_cubin(G.source(), G.defines(c), "sm_90", "matmul_kernel")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(blob[blob.index(b"\x7fELF") :])
        f.flush()
        run = subprocess.run([cuobjdump(), "-sass", f.name], capture_output=True, text=True, check=True)
    sass = run.stdout
    ffma, ops = loop_ops(sass)
    per_step = c["TM"] * c["TN"] * c["BK"]
    steps = ffma / per_step  # k-steps one pass of the loop runs
    if steps < 1 or steps != int(steps):
        raise ValueError(f"{c}: the loop holds {ffma} FFMAs, not whole k-steps of {per_step}")
    return round((sum(ops.values()) - ffma) / steps)


def table(jobs: int) -> dict:
    """Every build's count, as the JSON the spec reads (see kernels/cuda/matmul_loop.py)."""
    from autopad.kernels.cuda.matmul_loop import CONFIG_KEYS, LAYOUT_KEYS

    from autopad import cuda_compile

    todo = builds()
    with ProcessPoolExecutor(jobs) as pool:
        got = list(pool.map(count, todo, chunksize=8))
    layouts = sorted({tuple(c[k] for k in LAYOUT_KEYS) for c in todo})
    at = {lay: i for i, lay in enumerate(layouts)}
    other: dict[str, list[int | None]] = {}
    for c, n in zip(todo, got):
        row = other.setdefault(",".join(str(c[k]) for k in CONFIG_KEYS), [None] * len(layouts))
        row[at[tuple(c[k] for k in LAYOUT_KEYS)]] = n
    backend = cuda_compile._backend()
    return {
        "what": "instructions other than FFMA per thread per k-step in matmul.cu's unchecked k-loop "
        "(benchmarks/matmul_loop_counts.py)",
        "compiler": cuda_compile.compiler_version(backend),
        "arch": "sm_90",
        "config_keys": list(CONFIG_KEYS),
        "layout_keys": list(LAYOUT_KEYS),
        "layouts": [list(lay) for lay in layouts],
        "other": dict(sorted(other.items())),
    }


def write(path: Path, data: dict) -> None:
    """The table as JSON, a layout or a launch configuration's row a line."""
    head = [f" {json.dumps(k)}: {json.dumps(data[k])}" for k in ("what", "compiler", "arch", "config_keys")]
    head.append(f' "layout_keys": {json.dumps(data["layout_keys"])}')
    lays = ",\n".join(f"  {json.dumps(lay)}" for lay in data["layouts"])
    rows = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in data["other"].items())
    text = (
        "{\n" + ",\n".join(head) + ',\n "layouts": [\n' + lays + '\n ],\n "other": {\n' + rows + "\n }\n}\n"
    )
    path.write_text(text)


def check(n: int, seed: int = 0) -> int:
    """Compile ``n`` builds drawn at random and compare with the committed table; the mismatches."""
    from autopad.kernels.cuda.matmul_loop import loop_instructions

    drawn = random.Random(seed).sample(builds(), n)
    bad = 0
    for c in drawn:
        got, want = count(c), loop_instructions(c)
        if got != want:
            bad += 1
            print(f"differs: compiled {got}, table {want}: {c}")
    print(f"{n - bad} of {n} builds match the table")
    return bad


NCU_SHAPE = (2048, 2048, 1024)


def launch(n: int, seed: int = 1) -> None:
    """``--launch``: ``n`` builds drawn from the space, each launched once at NCU_SHAPE (keys to stderr)."""
    import torch
    from autopad.kernels.cuda import matmul as G

    m, nn, k = NCU_SHAPE
    a, b = torch.randn(m, k, device="cuda"), torch.randn(k, nn, device="cuda")
    out = torch.empty(m, nn, device="cuda")
    for i, c in enumerate(random.Random(seed).sample(builds(), n)):
        G.SPEC.run(G.SPEC.build(c, "float32"), (a, b), out)
        torch.cuda.synchronize()
        key = ",".join(f"{x}={v}" for x, v in sorted(c.items()))
        print(f"LAUNCH {i} {key}", file=sys.stderr, flush=True)


def compare(ncu_csv: str, launches: str) -> list[float]:
    """``--compare``: each launch's counted / executed warp instructions (printed, returned)."""
    import csv

    from autopad.kernels.cuda import matmul as G
    from autopad.kernels.cuda.matmul_loop import loop_instructions

    got = [
        float(r["Metric Value"].replace(",", ""))
        for r in csv.DictReader(line for line in open(ncu_csv) if not line.startswith("=="))
        if r["Metric Name"] == "smsp__inst_executed.sum"
    ]
    keys = [line.split()[2] for line in open(launches) if line.startswith("LAUNCH ")]
    ratios = []
    for key, executed in zip(keys, got):
        c = {x: int(v) for x, v in (kv.split("=") for kv in key.split(","))}
        info = G.launch_info(c, NCU_SHAPE)
        per_step = c["TM"] * c["TN"] * c["BK"] + loop_instructions(c)
        counted = info["blocks"] * info["threads"] // 32 * info["tiles_per_block"] * per_step
        ratios.append(counted / executed)
        print(f"{counted / executed:.4f}  counted {counted:.0f} executed {executed:.0f}  {key}")
    if ratios:
        print(f"{len(ratios)} launches: counted / executed {min(ratios):.4f}-{max(ratios):.4f}")
    return ratios


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default=str(TABLE))
    ap.add_argument("--check", type=int, metavar="N", help="compile N drawn builds, compare with the table")
    ap.add_argument("--launch", type=int, metavar="N", help="launch N drawn builds once each (GPU, for ncu)")
    ap.add_argument(
        "--compare", nargs=2, metavar=("NCU_CSV", "LAUNCHES"), help="ncu's counts against the table"
    )
    a = ap.parse_args()
    if a.launch:
        launch(a.launch)
        return 0
    if a.compare:
        return 0 if compare(*a.compare) else 1
    if a.check:
        return 1 if check(a.check) else 0
    data = table(a.jobs)
    write(Path(a.out), data)
    n = sum(1 for row in data["other"].values() for x in row if x is not None)
    print(f"{n} builds, {len(data['other'])} launch configurations x {len(data['layouts'])} layouts: {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
