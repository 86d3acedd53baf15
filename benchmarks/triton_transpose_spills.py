"""Stack (spill) bytes per thread of the Gluon transpose's builds at sm_90, compiled without a GPU: the table
``kernels/triton/transpose_spills.py`` holds.

Why: a 128 x 128 tile on 4 warps holds 128 elements a thread, and ptxas builds most such builds of 1-, 2-
and 8-byte elements with up to 400 bytes of stack a thread, written and read back once a tile through L1 to L2
(H200 run 212, fp16, bf16 and int8: such builds measured 0.4-0.95 in log slower than the model said,
where it left them out). Which builds spill depends on the element size, the tile, the warps, VEC, the
shared layout (PAD, SW_VEC, PER_PHASE, MAX_PHASE) and whether M and N are multiples of 16 (the masks),
nothing else of the shape, so it is read once here and looked up by the spec.

What is compiled: every candidate of the spec's space (at an off-grid shape), both off and on the
16-element grid, whose tile and warps are 128 x 128 on 4 warps, and those of 64 x 128 and 128 x 64 on 4
warps at VEC 8 in 2 bytes, each with its own layout; the rest at the plain layout only (PAD 0, no swizzle),
once per (element size, BM, BN, WARPS, VEC, grid). One dtype an element size (``COMPILED``): bf16 compiles
as fp16 and the fp8 types as int8 (checked on single builds). Each build with
``triton.compile`` (Triton 3.6.0), its cubin read with ``cuobjdump --dump-resource-usage``. About 1 s a build;
prints the table as Python, to paste into transpose_spills.py:

    python benchmarks/triton_transpose_spills.py [--jobs 2] > /tmp/transpose_spills.py
"""

from __future__ import annotations

import argparse
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy
sys.path.insert(0, str(ROOT / "benchmarks"))
from triton_path1_registers import cubin_usage  # noqa: E402  (the same cubin reading as PATH 1's table)

from kernels.triton.transpose_spills import COMPILED, KEYS, compiled_in_full  # noqa: E402

# (bf16 and fp8 are not compiled for the table, which holds them under fp16 and int8; the tests compile them)
POINTER = {"int8": "*i8", "float16": "*fp16", "float32": "*fp32", "float64": "*fp64", "bfloat16": "*bf16"}
POINTER["float8_e4m3fn"] = "*fp8e4nv"


def usage(job: tuple[str, tuple[int, ...], bool]) -> tuple[int, int]:
    """(registers, stack bytes) of one build: ``job`` is (dtype, the KEYS' values, M and N on the grid)."""
    import triton
    from autopad.kernels.triton import transpose as T
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    dtype, values, grid = job
    c = dict(zip(KEYS, values))
    lin, lout, smem = T.gluon_layouts(c, dtype)
    sig = {"x_ptr": POINTER[dtype], "y_ptr": POINTER[dtype], "M": "i32", "N": "i32"}
    sig |= {k: "constexpr" for k in ("BM", "BN", "L_IN", "L_OUT", "SMEM")}
    d16 = [["tt.divisibility", 16]]
    attrs = {(i,): d16 for i in ((0, 1, 2, 3) if grid else (0, 1))}  # the pointers are always aligned
    const = {"BM": c["BM"], "BN": c["BN"], "L_IN": lin, "L_OUT": lout, "SMEM": smem}
    k = triton.compile(
        GluonASTSource(T._kernels()[0], sig, constexprs=const, attrs=attrs),
        target=GPUTarget("cuda", 90, 32),
        options={"num_warps": c["WARPS"]},
    )
    return cubin_usage(k.asm["cubin"], job)


def jobs() -> list[tuple[str, tuple[int, ...], bool]]:
    """Every build to compile (module docstring)."""
    from autopad.kernels_registry import builtin_spec
    from autopad.search import enumerate_candidates

    out = []
    for eb, dtype in COMPILED.items():
        spec = builtin_spec("transpose", "triton", dtype)
        seen = set()
        for c in enumerate_candidates(spec, (4097, 8191), dtype):
            full = compiled_in_full(eb, c["BM"], c["BN"], c["WARPS"], c["VEC"])
            plain = dict(c, PAD=0, SW_VEC=1, PER_PHASE=1, MAX_PHASE=1)
            values = tuple(int((c if full else plain)[k]) for k in KEYS)
            for grid in (False, True):
                if (values, grid) not in seen:
                    seen.add((values, grid))
                    out.append((dtype, values, grid))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    todo = jobs()
    with ProcessPoolExecutor(args.jobs) as pool:
        got = list(pool.map(usage, todo, chunksize=8))
    eb_of = {d: e for e, d in COMPILED.items()}
    rows = sorted((eb_of[d], *v, int(g), s) for (d, v, g), (_r, s) in zip(todo, got) if s)
    print(f"# {len(todo)} builds compiled, {len(rows)} with stack: (element bytes, {', '.join(KEYS[:7])},")
    print(f"# {KEYS[7]}, on the 16-element grid) -> stack bytes a thread")
    print("STACK: dict[tuple[int, ...], int] = {")
    for *key, s in rows:
        print(f"    {tuple(key)}: {s},")
    print("}  # fmt: skip")


if __name__ == "__main__":
    main()
