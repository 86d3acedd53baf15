"""Registers and stack (spill) bytes per thread and shared bytes per block of the GEMM's PATH 1
(``matmul_tl``, plain ``tl.dot``) at sm_90, compiled without a GPU: the table
``kernels/triton/matmul_path1_regs.py`` holds.

Why: where Triton cannot prove an operand's rows 16-byte aligned (its row stride, K for A and N for B, not a
multiple of 16 elements), it loads that operand element by element into registers and stores them into
shared memory from there (``benchmarks/triton_path1_compiled.py``), and some tiles then run out of
registers and spill: H100 run 192 (bf16 2048 x 1536 x 2049, every one of PATH 1's 114 candidates timed)
measured its ten slowest builds all spilling, 153-454 us where the fastest ran 60 (the eleventh that
spills: 115), and the model's
pick (128 x 256 x 128, 8 warps: 416 stack bytes) at 153 us, 2.55x. What spills depends on the tile, the
warps, the stages, the element size and which operand is loaded element-wise, nothing the shape says
beyond that, so it is read once here for every PATH 1 build and looked up by the spec.

Cases: which of M, N and K are multiples of 16 (named by those that are: ``MNK`` ... ``""``; M is no row
stride, but its masks move the registers: 64 x 256 x 64 at 4 warps spills 128 bytes where M is not, none
where it is), for 2-byte elements (bf16; fp16 compiles alike), B as [K, N] (K off the grid: A element-wise;
N: B), and tf32 (4-byte), B as [N, K] as the spec passes it (K off the grid: both operands copied 4 bytes
at a time, still pipelined; N moves only C's stores). Every (BM, BN, BK, WARPS, STAGES) PATH 1 takes in
``kernels/triton/matmul.py``'s space. Each build with ``triton.compile`` at sm_90 (Triton 3.6.0), its cubin
read with ``cuobjdump --dump-resource-usage``, its shared bytes from ``metadata.shared``. About 1 s a build
(seconds when Triton's cache holds them), 1,536 builds: prints the table as Python, to paste into
matmul_path1_regs.py:

    python benchmarks/triton_path1_registers.py [--jobs 2] > /tmp/path1_regs.py
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy

ARGS = ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K")
CONSTS = ("BM", "BN", "BK", "GROUP_M", "TF32", "B_KN")
# which of M, N, K Triton is told are multiples of 16 (it specialises integer arguments so): the case's name
# lists them ("MNK": all three, "": none)
CASES = {"".join(x for x in "MNK" if (i >> "MNK".index(x)) & 1): () for i in range(7, -1, -1)}
CASES = {name: tuple(name) for name in CASES}
# (pointer type, TF32, B_KN): tf32 reads B as [N, K] (matmul_tiles.b_kn), so its B rows are K long too
DTYPES = {"bfloat16": ("bf16", False, True), "tf32": ("fp32", True, False)}


def builds(dtype: str) -> list[tuple[int, int, int, int, int]]:
    """Every (BM, BN, BK, WARPS, STAGES) of PATH 1 in the spec's space for ``dtype`` (the same at any
    shape: PATH 1's legality reads the tile and its shared memory, not the shape)."""
    from autopad.kernels_registry import builtin_spec
    from autopad.search import enumerate_candidates

    spec = builtin_spec("matmul", "triton")
    got = {
        (c["BM"], c["BN"], c["BK"], c["WARPS"], c["STAGES"])
        for c in enumerate_candidates(spec, (4096, 4096, 4096), dtype)
        if c["PATH"] == 1
    }
    return sorted(got)


def usage(job: tuple[str, str, tuple[int, int, int, int, int]]) -> tuple[int, int, int]:
    """(registers, stack bytes, shared bytes) of one build."""
    k = compiled(job)
    regs, stack = cubin_usage(k.asm["cubin"], job)
    return regs, stack, int(k.metadata.shared)


def compiled(job: tuple[str, str, tuple[int, int, int, int, int]]):
    """One build, ``job`` = (dtype, case, (BM, BN, BK, WARPS, STAGES)), compiled by Triton for sm_90."""
    import triton
    from autopad.kernels.triton import matmul_kernels as mk
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    dtype, case, (bm, bn, bk, warps, stages) = job
    ptr, tf32, kn = DTYPES[dtype]
    sig = {a: f"*{ptr}" for a in ARGS[:3]} | {a: "i32" for a in ARGS[3:]} | {c: "constexpr" for c in CONSTS}
    const = {"BM": bm, "BN": bn, "BK": bk, "GROUP_M": 8, "TF32": tf32, "B_KN": kn}
    d16 = [["tt.divisibility", 16]]
    attrs = {(i,): d16 for i, a in enumerate(ARGS) if i < 3 or a in CASES[case]}
    return triton.compile(
        ASTSource(fn=mk.matmul_tl, signature=sig, constexprs=const, attrs=attrs),
        target=GPUTarget("cuda", 90, 32),
        options={"num_warps": warps, "num_stages": stages},
    )


def cuobjdump(cubin: bytes, flag: str) -> subprocess.CompletedProcess:
    """Triton's bundled ``cuobjdump flag`` run on ``cubin`` (written to a temporary file)."""
    import triton

    tool = Path(triton.__file__).parent / "backends/nvidia/bin/cuobjdump"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "k.cubin"
        path.write_bytes(cubin)
        return subprocess.run([str(tool), flag, str(path)], capture_output=True, text=True)


def cubin_usage(cubin: bytes, what: object) -> tuple[int, int]:
    """(registers, stack bytes) of the one kernel in ``cubin``, read with Triton's ``cuobjdump
    --dump-resource-usage``; ``what`` names the build in the error if nothing is read."""
    out = cuobjdump(cubin, "--dump-resource-usage")
    m = re.search(r"REG:(\d+) STACK:(\d+)", out.stdout)
    if not m:
        raise RuntimeError(f"no resource usage for {what}: {out.stdout[-500:]} {out.stderr[-500:]}")
    return int(m[1]), int(m[2])


def _wrapped(items: list[str], indent: str) -> list[str]:
    """``items`` joined by ", " into lines of at most 110 characters, each a trailing comma."""
    lines, line = [], ""
    for item in items:
        if line and len(indent) + len(line) + len(item) + 2 > 110:
            lines.append(indent + line.rstrip())
            line = ""
        line += item + ", "
    return lines + ([indent + line.rstrip()] if line else [])


def table(builds_of: dict[str, list[tuple]], got: dict[tuple, tuple[int, int, int]]) -> str:
    """The table's text, as ``kernels/triton/matmul_path1_regs.py`` holds it: each dtype's builds once
    (``BUILDS``), then each case's (registers, stack bytes, shared bytes) in that order (``_USAGE``)."""
    out = ["BUILDS: dict[str, tuple[tuple[int, int, int, int, int], ...]] = {"]
    for d, builds in builds_of.items():
        out += [f"    {d!r}: (", *_wrapped([str(b) for b in builds], " " * 8), "    ),"]
    out += [
        "}  # fmt: skip",
        "# (registers, stack bytes, shared bytes) of each of BUILDS[dtype], in its order, by (dtype, case)",
        "_USAGE: dict[tuple[str, str], tuple[tuple[int, int, int], ...]] = {",
    ]
    for d, builds in builds_of.items():
        for case in CASES:
            rows = [got[(d, case, b)] for b in builds]
            spilled = sum(1 for _r, s, _sh in rows if s)
            out += [f"    # {d}, {case or 'none'}: {len(rows)} builds, {spilled} with stack"]
            out += [f"    ({d!r}, {case!r}): (", *_wrapped([str(r) for r in rows], " " * 8), "    ),"]
    return "\n".join([*out, "}  # fmt: skip"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    builds_of = {d: builds(d) for d in DTYPES}
    jobs = [(d, case, b) for d in DTYPES for case in CASES for b in builds_of[d]]
    with ProcessPoolExecutor(args.jobs) as pool:
        got = dict(zip(jobs, pool.map(usage, jobs)))
    print(table(builds_of, got))


if __name__ == "__main__":
    main()
