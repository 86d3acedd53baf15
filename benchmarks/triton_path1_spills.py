"""Local-memory (spill) instructions inside the k-loop of the GEMM's PATH 1 builds that spill, compiled
without a GPU: the table ``kernels/triton/matmul_path1_spills.py`` holds.

Why: ``matmul_path1_regs.py`` says how many stack bytes a build keeps, not where it reads them. In tf32 with K
off the 16-element grid (4-byte copies, ``matmul_model.path1_narrow_copies``) the builds at the register cap
spill the copies' addresses, and those whose k-loop reloads them ran 1.5-3.7x slower than the model said
(every PATH 1 build of eight shapes timed on an H100 and an H200: residuals +0.4..+1.3 in log), while
builds that spill as many bytes outside the loop (64 x 64 x 128 on 4 warps: 536-744 bytes, none reloaded in
the loop) ran faster than it said. Which instructions sit in the loop is a fact of the build, so it is read
once here and looked up by the spec.

What is read: every build ``matmul_path1_regs.PATH1_REGS`` lists with stack bytes (both dtypes, every case),
compiled as that table's script compiles it (``triton_path1_registers.compiled``), its SASS dumped with
Triton's ``cuobjdump -sass``: the k-loop is the code between a backward branch and its target, and each
``LDL`` / ``STL`` there counts once, with its width (4 bytes, ``.64`` 8, ``.128`` 16). About 2 s a build,
178 builds; prints the table as Python, to paste into matmul_path1_spills.py:

    python benchmarks/triton_path1_spills.py [--jobs 2] > /tmp/path1_spills.py
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy
sys.path.insert(0, str(ROOT / "benchmarks"))

_LINE = re.compile(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?);")  # SASS: /*offset*/ [predicate] OPCODE operands ;
_BRANCH = re.compile(r"\bBRA\b[^;]*?0x([0-9a-f]+)")
_LOCAL = re.compile(r"\b(LDL|STL)(\.[A-Z0-9.]+)?\s")


def loop_locals(sass: str) -> tuple[int, int]:
    """(local loads and stores, their bytes a thread) inside the loops of one kernel's SASS: every
    instruction between a backward branch's target and the branch."""
    code = [(int(m[1], 16), m[2]) for m in map(_LINE.match, sass.splitlines()) if m]
    loops = [(int(b[1], 16), at) for at, text in code if (b := _BRANCH.search(text)) and int(b[1], 16) < at]
    count = size = 0
    for at, text in code:
        local = _LOCAL.search(text)
        if local and any(lo <= at <= hi for lo, hi in loops):
            mods = local[2] or ""
            count += 1
            size += 16 if ".128" in mods else 8 if ".64" in mods else 4
    return count, size


def job_locals(job: tuple[str, str, tuple[int, int, int, int, int]]) -> tuple[int, int]:
    """``loop_locals`` of one build (``triton_path1_registers.compiled``'s job)."""
    from triton_path1_registers import compiled, cuobjdump

    out = cuobjdump(compiled(job).asm["cubin"], "-sass")
    out.check_returncode()
    return loop_locals(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    from kernels.triton.matmul_path1_regs import PATH1_REGS

    jobs = [(d, case, b) for (d, case), t in PATH1_REGS.items() for b, (_r, stack, _s) in t.items() if stack]
    with ProcessPoolExecutor(args.jobs) as pool:
        got = list(pool.map(job_locals, jobs))
    print(f"# {len(jobs)} builds with stack: (dtype, case, (BM, BN, BK, WARPS, STAGES)) -> (local loads and")
    print("# stores in the k-loop, their bytes a thread)")
    print("LOOP_LOCALS: dict[tuple[str, str, tuple[int, int, int, int, int]], tuple[int, int]] = {")
    for (d, case, b), (n, size) in zip(jobs, got):
        print(f"    ({d!r}, {case!r}, {b}): ({n}, {size}),")
    print("}  # fmt: skip")


if __name__ == "__main__":
    main()
