"""Registers per thread of the CUDA transpose's original path (SCALAR_EDGE 1), compiled: the table
``kernels/cuda/transpose_regs.py`` holds.

The original path is built with ``__launch_bounds__(THREADS)`` and no MIN_BLOCKS, so its registers, not
threads or shared memory, often set how many blocks an SM holds (a swizzled tile keeps one address
register per store pass and per read-out element load; transpose_model_gaps.md, second pass). The count
depends on the element size, the tile, the threads, the vector width, the read-out and whether the layout
is swizzled; a pad changes it by at most 2 and the swizzle's parameters by a few. So each legal
(ELEM_BYTES, TILE_M, TILE_N, THREADS, VEC, READOUT) is compiled unpadded, and swizzled with up to three of
its legal swizzles (the first, middle and last in sorted order), the median taken. nvrtc (the tuner's
compiler, ``autopad.cuda_compile.compile_cubin``) at sm_90, read with ``cuobjdump -res-usage`` (a path
given by $CUOBJDUMP, else found on PATH). No GPU is needed: about 0.3 s a build, 1,476 builds (~15 minutes
on two cores). Writes the module's text to stdout:

    python benchmarks/transpose_registers.py [--jobs 2] > kernels/cuda/transpose_regs.py
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from multiprocessing import Pool
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy

DTYPE_OF = {1: "int8", 2: "float16", 4: "float32", 8: "float64"}
SHAPE = (4096, 4096)  # legal() asks the grid for a shape; every tile of SPACE is legal here


def configs() -> list[tuple[int, ...]]:
    """(ELEM_BYTES, TILE_M, TILE_N, THREADS, VEC, READOUT, swizzled, SW_VEC, SW_PER_PHASE, SW_MAX_PHASE)
    of every build to compile."""
    from kernels.cuda import transpose as t

    sp, out = t.SPACE, []
    for e, dtype in DTYPE_OF.items():
        for tm, tn, th, vec, ro in itertools.product(
            sp["TILE_M"], sp["TILE_N"], sp["THREADS"], sp["VEC"], sp["READOUT"]
        ):
            base = dict(t.DEFAULTS, TILE_M=tm, TILE_N=tn, THREADS=th, VEC=vec, READOUT=ro, SCALAR_EDGE=1)
            if t.legal(base, SHAPE, dtype):
                out.append((e, tm, tn, th, vec, ro, 0, 1, 1, 1))
            sw = [
                (sv, pp, mp)
                for sv, pp, mp in itertools.product(sp["SW_VEC"], sp["SW_PER_PHASE"], sp["SW_MAX_PHASE"])
                if mp > 1 and t.legal(dict(base, SW_VEC=sv, SW_PER_PHASE=pp, SW_MAX_PHASE=mp), SHAPE, dtype)
            ]
            for s in sorted({sw[0], sw[len(sw) // 2], sw[-1]}) if sw else ():
                out.append((e, tm, tn, th, vec, ro, 1, *s))
    return out


def registers(cfg: tuple[int, ...]) -> tuple[tuple[int, ...], int]:
    """The build's registers per thread (cuobjdump's REG)."""
    from autopad.cuda_compile import compile_cubin
    from kernels.cuda import transpose as t

    e, tm, tn, th, vec, ro, _, sv, pp, mp = cfg
    c = dict(t.DEFAULTS, TILE_M=tm, TILE_N=tn, THREADS=th, VEC=vec, READOUT=ro, SCALAR_EDGE=1)
    c.update(SW_VEC=sv, SW_PER_PHASE=pp, SW_MAX_PHASE=mp)
    cubin = compile_cubin(t.source(), t.defines(c, DTYPE_OF[e]), "sm_90")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        tool = os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump") or "cuobjdump"
        text = subprocess.run([tool, "-res-usage", f.name], capture_output=True, text=True, check=True).stdout
    m = re.search(r"REG:(\d+)", text)
    if m is None:
        raise RuntimeError(f"no register count for {cfg}: {text[:200]}")
    return cfg, int(m.group(1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    os.environ["AUTOPAD_CUDA_COMPILER"] = "nvrtc"  # the tuner's compiler (nvcc differs by a few registers)
    todo = configs()
    print(f"{len(todo)} builds", file=sys.stderr)
    got: dict[tuple[int, ...], list[int]] = {}
    with Pool(args.jobs) as pool:
        for n, (cfg, r) in enumerate(pool.imap_unordered(registers, todo, chunksize=4)):
            got.setdefault(cfg[:7], []).append(r)
            if n % 100 == 0:
                print(n, file=sys.stderr, flush=True)
    table = {key: sorted(v)[len(v) // 2] for key, v in got.items()}  # the median (of three, or the one)
    print(module_text(table), end="")


def module_text(table: dict[tuple[int, ...], int]) -> str:
    """kernels/cuda/transpose_regs.py: its docstring (the one committed) and the table, 110 columns."""
    from kernels.cuda import transpose_regs

    lines = ['"""' + transpose_regs.__doc__ + '"""', "", "from __future__ import annotations", ""]
    lines.append("REGS_ORIGINAL_SM90: dict[tuple[int, int, int, int, int, int, int], int] = {")
    line = "   "
    for key in sorted(table):
        item = f" ({', '.join(map(str, key))}): {table[key]},"
        if len(line) + len(item) > 110:
            lines.append(line)
            line = "   "
        line += item
    lines += [line, "}  # fmt: skip"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
