"""Registers per thread of the CUDA SIMT GEMM (kernels/cuda/matmul.cu), compiled: the two tables
``kernels/cuda/matmul_regs.py`` holds, read again after a kernel change.

``REGS_SM90``: every tile of REGS_SM90 (every legal (BM, BN, BK, TM, TN)), unpadded, THREAD_MAP 0, SPLIT_K 1,
MIN_BLOCKS 1 (no register cap). ``REGS_SWIZZLE_SM90``: per tile, the median over the 9 swizzles of A (SW_VEC
4, SW_PER_PHASE 1/2/4, SW_MAX_PHASE 2/4/8, B unpadded) less the unpadded count, and the same for B: what
tests/test_cuda_matmul.py compiles and compares. NVRTC (the tuner's compiler, through
``autopad.cuda_compile.compile_cubin``, so the builds land in the cubin cache) at sm_90, read with
``cuobjdump --dump-resource-usage`` (Triton's copy, else $CUOBJDUMP or PATH). No GPU needed: 361 builds,
about 1 s each. Prints the two tables as Python, to paste into matmul_regs.py:

    AUTOPAD_CUDA_COMPILER=nvrtc python benchmarks/matmul_registers.py [--jobs 2]

``--spills FILE``: instead, every build whose ``__launch_bounds__`` cap (MIN_BLOCKS 2) is below its need
(``matmul_cost.register_need``), plain and with each of the 9 swizzles of A and of B, at both thread maps,
compiled with the cap: its registers, stack bytes and the local-memory loads and stores (LDL / STL) in its
SASS, as CSV. What ``REG_CAP_SLACK`` was read off: which capped builds spill at all.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy
from autopad.kernels.cuda import matmul as G  # noqa: E402

from autopad import cuda_compile  # noqa: E402

SWIZZLES = [(pp, mp) for pp in (1, 2, 4) for mp in (2, 4, 8)]


def cuobjdump() -> str:
    """Triton's bundled cuobjdump, else $CUOBJDUMP, else one on PATH."""
    bundled = Path(__import__("triton").__file__).parent / "backends/nvidia/bin/cuobjdump"
    tool = os.environ.get("CUOBJDUMP") or (str(bundled) if bundled.exists() else shutil.which("cuobjdump"))
    if not tool:
        raise SystemExit("matmul_registers: no cuobjdump (install triton or set CUOBJDUMP)")
    return tool


def _cubin(constants: dict[str, int], tmp: Path) -> Path:
    blob = cuda_compile.compile_cubin(G.source(), G.defines(constants), "sm_90", "matmul_kernel")
    path = tmp / ("_".join(f"{k}{v}" for k, v in sorted(constants.items())) + ".cubin")
    path.write_bytes(blob[blob.index(b"\x7fELF") :])
    return path


def _usage(path: Path, tool: str) -> tuple[int, int]:
    """(registers, stack bytes) of matmul_kernel in a cubin, read with ``cuobjdump --dump-resource-usage``."""
    out = subprocess.run([tool, "--dump-resource-usage", str(path)], capture_output=True, text=True).stdout
    m = re.search(r"Function matmul_kernel:\s*REG:(\d+)\s*STACK:(\d+)", out)
    return int(m.group(1)), int(m.group(2))


def registers(constants: dict[str, int], tool: str, tmp: Path) -> int:
    """Registers per thread of matmul_kernel built with ``constants``."""
    return _usage(_cubin(constants, tmp), tool)[0]


def spills(constants: dict[str, int], tool: str, tmp: Path) -> tuple[int, int, int, int]:
    """(registers, stack bytes, LDL, STL) of matmul_kernel built with ``constants``: the local-memory
    instructions in its SASS are the spills."""
    path = _cubin(constants, tmp)
    sass = subprocess.run([tool, "-sass", str(path)], capture_output=True, text=True).stdout
    return (*_usage(path, tool), len(re.findall(r"\bLDL", sass)), len(re.findall(r"\bSTL", sass)))


def layouts(base: dict[str, int]) -> list[tuple[str, dict[str, int]]]:
    """``base`` unswizzled ("-") and under each of the 9 swizzles of A and of B ("A12" = A, SW_PER_PHASE 1,
    SW_MAX_PHASE 2; SW_VEC 4), the other operand unpadded."""
    return [("-", base)] + [
        (f"{x}{pp}{mp}", dict(base, **{f"SW_VEC_{x}": 4, f"SW_PER_PHASE_{x}": pp, f"SW_MAX_PHASE_{x}": mp}))
        for x in "AB"
        for pp, mp in SWIZZLES
    ]


def spill_table(jobs: int, path: Path) -> None:
    """``--spills``: the capped builds (MIN_BLOCKS 2, need over the cap) and their spills, as CSV."""
    tool = cuobjdump()
    builds = []
    for tile in sorted(G.REGS_SM90):
        for tmap in (0, 1):
            base = dict(
                G.DEFAULTS, **dict(zip(("BM", "BN", "BK", "TM", "TN"), tile)), SPLIT_K=1, MIN_BLOCKS=2
            )
            base["THREAD_MAP"] = tmap
            for name, c in layouts(base):
                need, cap = int(G.register_need(c)), G.register_cap(c)
                if need > cap and G.legal(c, (1024, 1024, 1024)):
                    builds.append((tile, tmap, name, need, cap, c))
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(jobs) as pool:
        got = list(pool.map(lambda b: spills(b[5], tool, Path(tmp)), builds))
    with open(path, "w") as f:
        f.write("BM,BN,BK,TM,TN,THREAD_MAP,swizzle,need,cap,over,regs,stack,ldl,stl\n")
        for (tile, tmap, name, need, cap, _), (regs, stack, ldl, stl) in zip(builds, got):
            f.write(
                ",".join(
                    map(str, (*tile, tmap, name, need, cap, round(need / cap - 1, 3), regs, stack, ldl, stl))
                )
            )
            f.write("\n")
    spilled = sum(1 for g in got if g[2] or g[3])
    print(f"{len(builds)} capped builds, {spilled} spill; {path}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--spills", help="write the capped builds' spills here (CSV) instead of the tables")
    a = ap.parse_args()
    jobs = a.jobs
    if a.spills:
        spill_table(jobs, Path(a.spills))
        return
    tool = cuobjdump()
    tiles = sorted(G.REGS_SM90)
    builds: list[tuple[tuple[int, ...], str, dict[str, int]]] = []
    for tile in tiles:
        base = dict(G.DEFAULTS, **dict(zip(("BM", "BN", "BK", "TM", "TN"), tile)), MIN_BLOCKS=1, SPLIT_K=1)
        base["THREAD_MAP"] = 0
        builds += [(tile, name[0], c) for name, c in layouts(base)]  # "-", or the swizzled operand
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(jobs) as pool:
        got = list(pool.map(lambda b: registers(b[2], tool, Path(tmp)), builds))
    plain = {t: r for (t, op, _), r in zip(builds, got) if op == "-"}
    swz = {}
    for tile in tiles:
        add = []
        for x in "AB":
            rs = [r for (t, op, _), r in zip(builds, got) if t == tile and op == x]
            add.append(int(statistics.median(rs)) - plain[tile])
        swz[tile] = tuple(add)
    print("REGS_SM90 = {")
    for t in tiles:
        print(f"    {t}: {plain[t]},")
    print("}\nREGS_SWIZZLE_SM90 = {")
    for t in tiles:
        print(f"    {t}: {swz[t]},")
    print("}")


if __name__ == "__main__":
    main()
