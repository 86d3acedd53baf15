"""What Triton 3.6 compiles for the GEMM's PATH 1 (``matmul_tl``, plain ``tl.dot``) at sm_90, without a GPU:
its shared-memory instructions (PTX) and its shared layouts (TTGIR), per BK and per row alignment.

Why: the spec scores PATH 1 as one k-step's 16-byte copies of A and B into 128-byte staging rows under the
128-byte swizzle (kernels/triton/matmul_model.py, ``smem_pattern``). Triton specialises the integer
arguments K and N (the row strides) on divisibility by 16, and PATH 1 runs exactly where TMA is refused, on
rows it cannot prove aligned; this prints what it then issues, so the pattern can be checked against it.
Cases: every pointer 16-byte aligned, and K, N both divisible by 16 ("aligned"), or one of them not ("K
odd": A's rows, "N odd": B's rows with B [K, N]). Compiles only (triton.compile with a GPUTarget); about
2 s a case on 2 cores:

    python benchmarks/triton_path1_compiled.py > benchmarks/results/cpu/path1_compiled_DATE.txt
"""

from __future__ import annotations

import collections
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy

ARGS = ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K")
CONSTS = ("BM", "BN", "BK", "GROUP_M", "TF32", "B_KN")
CASES = {"aligned": ("M", "N", "K"), "K odd": ("M", "N"), "N odd": ("M", "K")}  # divisible by 16
KEEP = ("shared", "ld.global", "cp.async", "ldmatrix", "stmatrix")


def compiled(
    bm: int, bn: int, bk: int, warps: int, stages: int, divisible: tuple[str, ...], dtype: str = "bf16"
):
    """(instruction counts of the shared-memory and global-load kinds in the PTX, each shared buffer's shape
    in the TTGIR with its layout)."""
    import triton
    from autopad.kernels.triton import matmul_kernels as mk
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    sig = {a: f"*{dtype}" for a in ARGS[:3]} | {a: "i32" for a in ARGS[3:]} | {c: "constexpr" for c in CONSTS}
    const = {"BM": bm, "BN": bn, "BK": bk, "GROUP_M": 8, "TF32": False, "B_KN": True}
    d16 = [["tt.divisibility", 16]]
    attrs = {(i,): d16 for i, a in enumerate(ARGS) if i < 3 or a in divisible}
    k = triton.compile(
        ASTSource(fn=mk.matmul_tl, signature=sig, constexprs=const, attrs=attrs),
        target=GPUTarget("cuda", 90, 32),
        options={"num_warps": warps, "num_stages": stages},
    )
    ops = collections.Counter(re.findall(r"^\s*(?:@%p\d+\s+)?([a-z]+\.[a-z0-9.]+)", k.asm["ptx"], re.M))
    kept = {o: n for o, n in sorted(ops.items()) if any(s in o for s in KEEP)}
    ttgir = k.asm["ttgir"]
    named = dict(re.findall(r"^(#shared\d*) = (.*)$", ttgir, re.M))
    buffers = sorted(set(re.findall(r"memdesc<([0-9x]+)x[a-z0-9]+, (#shared\d*)", ttgir)))
    return kept, [f"{shape}: {named.get(name, name)}" for shape, name in buffers]


def main() -> None:
    import triton

    print(
        f"# matmul_tl (PATH 1) compiled for sm_90 by triton {triton.__version__}, bf16, B [K, N], 8 warps, "
        "3 stages;"
    )
    print(
        "# PTX instructions that touch shared memory or load global memory (static counts), then the TTGIR's"
    )
    print("# shared buffers (shape, stages first where pipelined: A is BM x BK, B BK x BN, C's conversion")
    print("# BM x BN) with their layouts")
    for bm, bn, bk in ((128, 128, 32), (128, 128, 64), (64, 128, 32), (128, 64, 128)):
        for case, divisible in CASES.items():
            ops, layouts = compiled(bm, bn, bk, 8, 3, divisible)
            print(f"BM={bm} BN={bn} BK={bk} {case}: {ops}")
            for lay in layouts:
                print(f"    {lay}")


if __name__ == "__main__":
    main()
