"""The held-out rounds of new shapes ``gpu_new_shapes.py`` measures: each round's shapes, why it was drawn
(the comment above it: which model term it is held out from), the picks some samples add, and the file its
committed sample lives in.

Why a module of its own: these are the record of what was drawn when, kept apart from the code that
samples and times them (gpu_new_shapes.py), which reads them; a round is added here, with its comment,
before its sample is drawn and committed.
"""

from __future__ import annotations

from pathlib import Path

# (kernel, backend, dtype, dist, shape): sizes no study recorded, odd and batched among them
SHAPES: list[tuple[str, str, str, str | None, tuple[int, ...]]] = [
    ("transpose", "cuda", "float32", None, (6144, 3072)),
    ("transpose", "cuda", "bfloat16", None, (4, 2048, 3000)),
    ("histogram", "cuda", "int32", "uniform", (1 << 20, 1000)),
    ("matmul", "cuda", "float32", None, (768, 1536, 1024)),
]
# round 2: drawn after the histogram's flush and launch terms were fitted on round 1's histogram rows (H200
# run 8), so that the histogram is held out again; small inputs and many bins, where the flush decides
ROUND2: list[tuple[str, str, str, str | None, tuple[int, ...]]] = [
    ("histogram", "cuda", "int32", "uniform", ((1 << 21) + 17, 2500)),
    ("histogram", "cuda", "int32", "uniform", (300_000, 300)),
    ("histogram", "cuda", "uint8", "uniform", (3_000_017, 200)),
    ("histogram", "cuda", "int32", "uniform", (1 << 24, 1500)),
    ("transpose", "cuda", "float16", None, (3000, 5000)),
    ("matmul", "cuda", "float32", None, (1000, 1000, 1000)),
]
# round 3: the CUDA transpose's misaligned build after the halo rework (H200 runs 26-31), on the shape
# whose behaviour changed; the sample also holds the picks autopad.tune and ops.transpose made there
ROUND3: list[tuple[str, str, str, str | None, tuple[int, ...]]] = [
    ("transpose", "cuda", "float16", None, (4097, 8191)),
    ("transpose", "cuda", "int8", None, (4097, 8191)),
]
# round 4: the 1-byte window read-out (transpose.cu's ap_rt_window, landed d16f1dc after H200 runs 145-148)
# on output rows off the 16-byte grid: M % 16 = 1 (the matrix's cell), 4 (the widest window) and a larger
# odd shape; the sample holds the picks ops.transpose made there on that kernel
ROUND4: list[tuple[str, str, str, str | None, tuple[int, ...]]] = [
    ("transpose", "cuda", "int8", None, (4097, 8191)),
    ("transpose", "cuda", "int8", None, (4100, 8192)),
    ("transpose", "cuda", "int8", None, (8193, 16383)),
]

_RT = {"GROUP": 64, "PAD": 0, "READOUT": 1, "SCALAR_EDGE": 0, "SW_MAX_PHASE": 8, "SW_PER_PHASE": 8}
# (kernel, dtype, shape) -> [(constants, why)]: picks made on the GPU that the sample must hold
PICKS: dict[tuple[str, str, tuple[int, ...]], list[tuple[dict[str, int], str]]] = {
    ("transpose", "float16", (4097, 8191)): [
        ({**_RT, "SW_VEC": 8, "THREADS": 128, "TILE_M": 64, "TILE_N": 64, "VEC": 8}, "tune_run29"),
        ({**_RT, "SW_MAX_PHASE": 16, "SW_VEC": 8, "THREADS": 256, "TILE_M": 64, "TILE_N": 128, "VEC": 8},
         "ops_run31"),
    ],
    ("transpose", "int8", (4097, 8191)): [
        ({**_RT, "SW_VEC": 16, "THREADS": 128, "TILE_M": 64, "TILE_N": 128, "VEC": 16}, "tune_run29"),
        ({**_RT, "SW_PER_PHASE": 16, "SW_VEC": 16, "THREADS": 256, "TILE_M": 128, "TILE_N": 128, "VEC": 16},
         "ops_run146"),
    ],
    ("transpose", "int8", (4100, 8192)): [
        ({**_RT, "SW_PER_PHASE": 16, "SW_VEC": 16, "THREADS": 256, "TILE_M": 128, "TILE_N": 128, "VEC": 16},
         "ops_run148"),
    ],
    ("transpose", "int8", (8193, 16383)): [
        ({**_RT, "GROUP": 4096, "SW_PER_PHASE": 16, "SW_VEC": 16, "THREADS": 128, "TILE_M": 128,
          "TILE_N": 128, "VEC": 16}, "ops_run148"),
    ],
}  # fmt: skip
# round 5: held out from the single-resident-block register term (chosen on round 4's 8193 x 16383); the
# sample also holds the top 10 of the model before that term (OLD_TOP: what it would have picked)
ROUND5: list[tuple[str, str, str, str | None, tuple[int, ...]]] = [
    ("transpose", "cuda", "int8", None, (6145, 20479)),
    ("transpose", "cuda", "uint8", None, (12289, 12287)),
    ("transpose", "cuda", "float16", None, (8193, 16383)),
]
_VEC_PATH = ("GROUP", "PAD", "READOUT", "SW_MAX_PHASE", "SW_PER_PHASE", "SW_VEC", "THREADS", "TILE_M",
             "TILE_N", "VEC")  # fmt: skip
OLD_TOP: dict[tuple[str, str, tuple[int, ...]], list[tuple[int, ...]]] = {
    ("transpose", "int8", (6145, 20479)): [
        (64, 0, 1, 16, 16, 16, 256, 128, 256, 16),
        (64, 0, 1, 8, 16, 16, 256, 128, 256, 16),
        (64, 0, 1, 16, 8, 16, 256, 128, 256, 16),
        (64, 0, 1, 4, 16, 16, 256, 128, 256, 16),
        (64, 0, 1, 8, 8, 16, 256, 128, 256, 16),
        (64, 0, 1, 16, 4, 16, 256, 128, 256, 16),
        (64, 0, 1, 2, 16, 16, 256, 128, 256, 16),
        (64, 0, 1, 4, 8, 16, 256, 128, 256, 16),
        (64, 0, 1, 8, 4, 16, 256, 128, 256, 16),
        (64, 0, 1, 8, 16, 16, 512, 256, 128, 16),
    ],
    ("transpose", "uint8", (12289, 12287)): [
        (64, 0, 1, 8, 16, 16, 256, 256, 128, 16),
        (64, 0, 1, 16, 16, 16, 512, 256, 256, 16),
        (64, 0, 1, 8, 16, 16, 512, 256, 256, 16),
        (64, 0, 1, 16, 16, 16, 256, 256, 256, 16),
        (64, 0, 1, 8, 16, 16, 256, 256, 256, 16),
        (4096, 0, 1, 8, 16, 16, 256, 128, 128, 16),
        (64, 0, 1, 8, 16, 16, 256, 128, 128, 16),
        (4096, 0, 1, 16, 16, 16, 256, 128, 256, 16),
        (4096, 0, 1, 8, 16, 16, 256, 128, 256, 16),
        (64, 0, 1, 16, 16, 16, 256, 128, 256, 16),
    ],
    ("transpose", "float16", (8193, 16383)): [
        (4096, 0, 1, 8, 8, 8, 128, 64, 64, 8),
        (64, 0, 1, 8, 8, 8, 128, 64, 64, 8),
        (4096, 0, 1, 16, 8, 8, 256, 64, 128, 8),
        (4096, 0, 1, 8, 8, 8, 256, 64, 128, 8),
        (64, 0, 1, 16, 8, 8, 256, 64, 128, 8),
        (64, 0, 1, 8, 8, 8, 256, 64, 128, 8),
        (4096, 0, 1, 16, 4, 8, 128, 32, 128, 8),
        (4096, 0, 1, 4, 8, 16, 128, 32, 128, 8),
        (4096, 0, 1, 8, 4, 8, 128, 32, 128, 8),
        (4096, 0, 1, 8, 8, 16, 128, 32, 128, 8),
    ],
}  # fmt: skip
# round 6: held out from the seam charge on the aligned build's rows off the 16-byte grid (chosen on
# round 4's 4100 x 8192); OLD_TOP6: the top 10 of the model before that charge
ROUND6: list[tuple[str, str, str, str | None, tuple[int, ...]]] = [
    ("transpose", "cuda", "float32", None, (4098, 8192)),
    ("transpose", "cuda", "int8", None, (4104, 8192)),
    ("transpose", "cuda", "float16", None, (4100, 6000)),
]
OLD_TOP6: dict[tuple[str, str, tuple[int, ...]], list[tuple[int, ...]]] = {
    ("transpose", "float32", (4098, 8192)): [
        (64, 1, 0, 1, 1, 1, 256, 128, 32, 1),
        (64, 1, 0, 1, 1, 1, 512, 128, 64, 1),
        (64, 2, 0, 1, 1, 1, 256, 128, 32, 1),
        (64, 2, 0, 1, 1, 1, 512, 128, 64, 1),
        (64, 1, 0, 1, 1, 1, 512, 128, 32, 1),
        (64, 1, 0, 1, 1, 1, 128, 128, 32, 1),
        (4096, 1, 0, 1, 1, 1, 128, 64, 32, 1),
        (64, 1, 0, 1, 1, 1, 128, 64, 32, 1),
        (4096, 1, 0, 1, 1, 1, 256, 64, 64, 1),
        (64, 1, 0, 1, 1, 1, 256, 64, 64, 1),
    ],
    ("transpose", "int8", (4104, 8192)): [
        (4096, 4, 0, 1, 1, 1, 128, 32, 128, 4),
        (64, 4, 0, 1, 1, 1, 128, 32, 128, 4),
        (64, 0, 0, 16, 8, 8, 256, 128, 128, 8),
        (64, 0, 0, 32, 4, 4, 256, 128, 128, 4),
        (64, 0, 0, 16, 8, 8, 512, 128, 128, 8),
        (64, 0, 0, 32, 4, 4, 512, 128, 128, 4),
        (4096, 0, 0, 16, 4, 4, 128, 64, 128, 4),
        (4096, 0, 0, 16, 4, 8, 128, 64, 128, 4),
        (4096, 0, 0, 16, 4, 8, 128, 64, 128, 8),
        (4096, 0, 0, 16, 8, 8, 128, 64, 128, 8),
    ],
    ("transpose", "float16", (4100, 6000)): [
        (4096, 2, 0, 1, 1, 1, 128, 32, 128, 2),
        (64, 2, 0, 1, 1, 1, 128, 32, 128, 2),
        (64, 0, 0, 32, 2, 2, 256, 128, 128, 2),
        (64, 0, 0, 32, 2, 2, 128, 128, 128, 2),
        (64, 0, 0, 32, 2, 2, 256, 128, 64, 2),
        (64, 0, 0, 32, 2, 2, 512, 128, 128, 2),
        (64, 2, 0, 1, 1, 1, 256, 128, 128, 2),
        (64, 2, 0, 1, 1, 1, 128, 128, 128, 2),
        (64, 2, 0, 1, 1, 1, 256, 128, 64, 2),
        (64, 2, 0, 1, 1, 1, 512, 128, 128, 2),
    ],
}  # fmt: skip
# round 7 (2026-12-05, twenty-third session): shapes with output rows off the vector grid, drawn after the
# shifted gather was scored at the shape's row shifts and the 1- and 2-byte VEC 1 tiles took the segment term
# off the 16-byte grid (both read off runs 46 and 155-156): held out from both; the model before them (git
# 476f3e0) gives OLD_TOP7
ROUND7: list[tuple[str, str, str, str | None, tuple[int, ...]]] = [
    ("transpose", "cuda", "int8", None, (4102, 8190)),
    ("transpose", "cuda", "uint8", None, (6150, 4097)),
    ("transpose", "cuda", "float16", None, (4100, 6002)),
    ("transpose", "cuda", "bfloat16", None, (2, 3074, 2050)),
]
OLD_TOP7: dict[tuple[str, str, tuple[int, ...]], list[tuple[int, ...]]] = {
    ("transpose", "int8", (4102, 8190)): [
        (64, 0, 1, 8, 16, 16, 256, 128, 128, 16),
        (64, 0, 1, 4, 16, 16, 128, 128, 64, 16),
        (64, 0, 1, 4, 16, 16, 256, 128, 128, 16),
        (64, 0, 1, 8, 8, 16, 256, 128, 128, 16),
        (64, 0, 1, 2, 16, 16, 128, 128, 64, 16),
        (64, 0, 1, 4, 8, 16, 128, 128, 64, 16),
        (64, 0, 1, 2, 16, 16, 256, 128, 128, 16),
        (64, 0, 1, 4, 8, 16, 256, 128, 128, 16),
        (64, 0, 1, 8, 4, 16, 256, 128, 128, 16),
        (4096, 0, 1, 8, 8, 16, 128, 64, 128, 16),
    ],
    ("transpose", "uint8", (6150, 4097)): [
        (64, 0, 1, 8, 16, 16, 128, 128, 128, 16),
        (64, 0, 1, 4, 16, 16, 128, 128, 128, 16),
        (64, 0, 1, 8, 8, 16, 128, 128, 128, 16),
        (4096, 0, 0, 4, 16, 16, 128, 64, 64, 16),
        (64, 0, 0, 4, 16, 16, 128, 64, 64, 16),
        (64, 4, 0, 1, 1, 1, 128, 128, 32, 1),
        (4096, 4, 0, 1, 1, 1, 128, 64, 64, 1),
        (64, 4, 0, 1, 1, 1, 128, 64, 64, 1),
        (64, 0, 1, 2, 16, 16, 128, 128, 128, 16),
        (64, 0, 1, 4, 8, 16, 128, 128, 128, 16),
    ],
    ("transpose", "float16", (4100, 6002)): [
        (64, 0, 0, 32, 2, 2, 256, 128, 128, 2),
        (64, 0, 0, 32, 2, 2, 128, 128, 128, 2),
        (64, 0, 0, 32, 2, 2, 256, 128, 64, 2),
        (64, 0, 0, 32, 2, 2, 512, 128, 128, 2),
        (64, 2, 0, 1, 1, 1, 256, 128, 128, 2),
        (64, 2, 0, 1, 1, 1, 128, 128, 128, 2),
        (64, 2, 0, 1, 1, 1, 256, 128, 64, 2),
        (64, 2, 0, 1, 1, 1, 512, 128, 128, 2),
        (64, 2, 0, 1, 1, 1, 128, 128, 32, 2),
        (64, 0, 0, 32, 2, 2, 512, 128, 64, 2),
    ],
    ("transpose", "bfloat16", (2, 3074, 2050)): [
        (64, 0, 1, 16, 8, 8, 128, 64, 128, 8),
        (64, 0, 1, 8, 8, 8, 128, 64, 128, 8),
        (64, 0, 0, 16, 8, 8, 128, 64, 128, 8),
        (64, 0, 0, 8, 8, 8, 128, 64, 128, 8),
        (64, 0, 0, 32, 2, 2, 128, 128, 64, 2),
        (64, 2, 0, 1, 1, 1, 128, 128, 64, 2),
        (64, 0, 1, 16, 16, 8, 128, 64, 128, 8),
        (64, 0, 1, 16, 4, 8, 128, 64, 128, 8),
        (64, 0, 1, 4, 16, 16, 128, 64, 128, 8),
        (64, 0, 1, 4, 16, 8, 128, 64, 128, 8),
    ],
}  # fmt: skip
# round 8 (2026-12-05, twenty-fourth session): misaligned 4- and 8-byte shapes (and one 2-byte), drawn after
# the vector path's one-block tiles took ``latency_phases`` (read off run 114's fp32 4097 x 8191): held out
# from it. The model before it (git 9a85c93) has the same top 10 on all four, so no OLD_TOP entry
ROUND8: list[tuple[str, str, str, str | None, tuple[int, ...]]] = [
    ("transpose", "cuda", "float32", None, (6145, 3073)),
    ("transpose", "cuda", "float32", None, (3, 2049, 4095)),
    ("transpose", "cuda", "float64", None, (4097, 3073)),
    ("transpose", "cuda", "float16", None, (6149, 4097)),
]
# round 9 (2026-12-05, twenty-fifth session): the fp32 SIMT GEMM under today's source. Its held-out samples so
# far are run 20's (1000^3 and 768x1536x1024, measured before the warp barrier and the uniform unchecked
# k-loop of 2026-12-02 changed the kernel) and run 100's three near-square shapes; 1000^3 again on today's
# kernel (a later run replaces run 20's rows in the report), an odd large shape, a small one with a long K
# (split-K ground) and a wide flat one, drawn before any change to the GEMM's model this session
ROUND9: list[tuple[str, str, str, str | None, tuple[int, ...]]] = [
    ("matmul", "cuda", "float32", None, (1000, 1000, 1000)),
    ("matmul", "cuda", "float32", None, (3001, 2047, 1536)),
    ("matmul", "cuda", "float32", None, (384, 768, 4096)),
    ("matmul", "cuda", "float32", None, (1200, 3000, 800)),
]
# round 10 (2026-12-05, twenty-sixth session): transposes drawn after ``phased_loads`` (the warp bound on a
# block's bytes in flight, read off H100 run 166's profile of run 165's fp32 shapes): held out from it, two
# fp32 (aligned and misaligned), fp64, a batched bf16 and an fp16 of odd row length
ROUND10: list[tuple[str, str, str, str | None, tuple[int, ...]]] = [
    ("transpose", "cuda", "float32", None, (5120, 2560)),
    ("transpose", "cuda", "float32", None, (3000, 7001)),
    ("transpose", "cuda", "float64", None, (6000, 2000)),
    ("transpose", "cuda", "bfloat16", None, (2, 3000, 4100)),
    ("transpose", "cuda", "float16", None, (10000, 3001)),
]
# round 11 (2026-12-05, twenty-seventh session): SIMT GEMM shapes drawn after ``smem_issue`` (the issue slots
# a shared instruction takes from the FFMAs, read off H100 run 171's counts at run 100's shapes): held out
# from it, a wide and a tall operand, an odd size and a short K
ROUND11: list[tuple[str, str, str, str | None, tuple[int, ...]]] = [
    ("matmul", "cuda", "float32", None, (2048, 1024, 3072)),
    ("matmul", "cuda", "float32", None, (1536, 2560, 1024)),
    ("matmul", "cuda", "float32", None, (5000, 600, 2000)),
    ("matmul", "cuda", "float32", None, (700, 1900, 2500)),
]
# round 12 (2026-12-06, twenty-ninth session): SIMT GEMM shapes drawn after ``REG_CAP_SLACK`` (the register
# cap's charge from 0.2 over the cap, kernels/cuda/matmul_cost.py): held out from it, grids of 128 x 128
# tiles from under one to several rounds of the SMs, where the cap's second block an SM does or does not pay
ROUND12: list[tuple[str, str, str, str | None, tuple[int, ...]]] = [
    ("matmul", "cuda", "float32", None, (4096, 2048, 1024)),
    ("matmul", "cuda", "float32", None, (3072, 3072, 1000)),
    ("matmul", "cuda", "float32", None, (1800, 5000, 1500)),
    ("matmul", "cuda", "float32", None, (2500, 1300, 4000)),
]
# round 13 (2026-12-07, forty-second session): SIMT GEMM shapes drawn for the checked k-loop's issue slots
# (``CHECKED_LOAD_SLOTS``, kernels/cuda/matmul_cost.py, measured by benchmarks/profile_simt_checked.py): three
# with K % 16 = 8 (BK 16 builds run the checked loop, BK 8 ones do not) and one with K % 8 = 4 (every build
# checked); the sample holds the top 30 of the model before the term and of the model with it
ROUND13: list[tuple[str, str, str, str | None, tuple[int, ...]]] = [
    ("matmul", "cuda", "float32", None, (2560, 1536, 1800)),
    ("matmul", "cuda", "float32", None, (1500, 3500, 1400)),
    ("matmul", "cuda", "float32", None, (4000, 1000, 2200)),
    ("matmul", "cuda", "float32", None, (2048, 1536, 1244)),
]
# round 14 (2026-12-07, forty-third session): SIMT GEMM shapes drawn for the checked loop's scalar loads
# (``SCALAR_LOAD_SLOTS``, measured by benchmarks/profile_simt_scalar.py): N off the 4-element grid (B's loads
# scalar), K off it (A's), and both; the sample holds the top 30 of the model before the term and of the
# model with its provisional value
ROUND14: list[tuple[str, str, str, str | None, tuple[int, ...]]] = [
    ("matmul", "cuda", "float32", None, (3000, 2001, 1500)),
    ("matmul", "cuda", "float32", None, (2000, 2500, 1999)),
    ("matmul", "cuda", "float32", None, (1777, 3333, 1234)),
    ("matmul", "cuda", "float32", None, (4001, 1203, 2047)),
]
# round 15 (2026-12-07, forty-third session): SIMT GEMM shapes drawn for the k-loop's compiled instruction
# counts (kernels/cuda/matmul_loop.py, in place of the shared instructions' ``smem_issue`` slots): three on
# the kernel's grid, one with K % 16 = 8 (BK 16 checked) and one with N off the 4-element grid; the sample
# holds the top 30 of the model before the counts and of the model with them
ROUND15: list[tuple[str, str, str, str | None, tuple[int, ...]]] = [
    ("matmul", "cuda", "float32", None, (2304, 1536, 3072)),
    ("matmul", "cuda", "float32", None, (1280, 4096, 1536)),
    ("matmul", "cuda", "float32", None, (3584, 1152, 2560)),
    ("matmul", "cuda", "float32", None, (1900, 2900, 1000)),
    ("matmul", "cuda", "float32", None, (2600, 1399, 2048)),
]
# round 16 (2026-12-07, forty-fourth session): every CUDA family on today's model, held out from all of it.
# The CUDA transposes and histograms were last held out on 2026-12-05 (rounds 7-10) and 2026-12-01 (round 2);
# the predictor has since gained the partial round, the k-loop counts and the spec keys of later sessions.
# Odd, batched and small shapes no study recorded; the sample was committed before the run
ROUND16: list[tuple[str, str, str, str | None, tuple[int, ...]]] = [
    ("transpose", "cuda", "float32", None, (3001, 5003)),
    ("transpose", "cuda", "float16", None, (2, 4096, 2500)),
    ("transpose", "cuda", "int8", None, (7000, 3001)),
    ("transpose", "cuda", "float64", None, (3000, 2049)),
    ("transpose", "cuda", "bfloat16", None, (5000, 1537)),
    ("histogram", "cuda", "int32", "uniform", (5_000_000, 700)),
    ("histogram", "cuda", "uint8", "uniform", (7_000_001, 128)),
    ("matmul", "cuda", "float32", None, (1664, 2816, 1792)),
]
# round 17 (2026-12-07, forty-fifth session): CUDA transposes held out from the partial memory round and the
# aligned vector build's registers (kernels/cuda/transpose_cost.py; drawn while they were
# ``model_only_report.PROPOSED``'s transpose entry, after they were scored on every recorded transpose
# study): aligned, odd, batched and small shapes no study recorded; the sample holds the top 30 of the model
# before the change (top_tuner) and with it (top_proposed), committed before the run (4bfa75e)
ROUND17: list[tuple[str, str, str, str | None, tuple[int, ...]]] = [
    ("transpose", "cuda", "float32", None, (6144, 4096)),
    ("transpose", "cuda", "float32", None, (2560, 1536)),
    ("transpose", "cuda", "float32", None, (5001, 2999)),
    ("transpose", "cuda", "float32", None, (4, 1500, 2049)),
    ("transpose", "cuda", "float16", None, (4099, 3001)),
    ("transpose", "cuda", "bfloat16", None, (3000, 4000)),
    ("transpose", "cuda", "int8", None, (5000, 5003)),
    ("transpose", "cuda", "float64", None, (2047, 4100)),
]
# round 18 (2026-12-07, forty-fifth session): CUDA transposes held out from the halo build's short-segment
# term (``HALO_SEGMENT_BYTES``) and from the partial round and registers: odd, batched and small shapes no
# study recorded, rows off the vector grid among them; the sample holds the model's top 30 as committed
ROUND18: list[tuple[str, str, str, str | None, tuple[int, ...]]] = [
    ("transpose", "cuda", "float16", None, (3001, 2049)),
    ("transpose", "cuda", "bfloat16", None, (2, 2047, 3000)),
    ("transpose", "cuda", "int8", None, (3003, 4001)),
    ("transpose", "cuda", "float16", None, (6001, 1999)),
    ("transpose", "cuda", "float32", None, (3333, 2222)),
    ("transpose", "cuda", "float32", None, (2, 2048, 3001)),
    ("transpose", "cuda", "float64", None, (1999, 3001)),
    ("transpose", "cuda", "bfloat16", None, (4100, 2050)),
]
# round 19 (2026-12-07, forty-sixth session): every CUDA family on today's model, held out from all of it;
# the histograms and SIMT GEMMs had one held-out shape each on the H100 (round 16), so most are theirs: odd,
# small and large inputs, bins off a power of two, K off the k-loop's grid; the sample holds the model's top
# 30 as committed, drawn and committed before the run
ROUND19: list[tuple[str, str, str, str | None, tuple[int, ...]]] = [
    ("histogram", "cuda", "int32", "uniform", (12_000_007, 2048)),
    ("histogram", "cuda", "int32", "uniform", (800_003, 256)),
    ("histogram", "cuda", "uint8", "uniform", (30_000_001, 256)),
    ("histogram", "cuda", "uint8", "uniform", (4_000_037, 200)),
    ("matmul", "cuda", "float32", None, (1500, 2500, 1200)),
    ("matmul", "cuda", "float32", None, (3000, 1000, 3000)),
    ("matmul", "cuda", "float32", None, (2048, 2048, 777)),
    ("transpose", "cuda", "float16", None, (3, 1500, 2500)),
]
# round 20 (2026-12-07, forty-sixth session): CUDA histograms held out from the flush's line term
# (``FLUSH_LINE_CYCLES``, read off round 19's uint8 30,000,001 x 256): inputs from 20 to 120 million values,
# where lane replicas (PRIV 1) and warp replicas (PRIV 0) trade the read against the flush; the sample holds
# the model's top 30 as committed, drawn and committed before the run
ROUND20: list[tuple[str, str, str, str | None, tuple[int, ...]]] = [
    ("histogram", "cuda", "uint8", "uniform", (60_000_001, 256)),
    ("histogram", "cuda", "uint8", "uniform", (120_000_007, 64)),
    ("histogram", "cuda", "uint8", "uniform", (20_000_003, 128)),
    ("histogram", "cuda", "uint8", "uniform", (100_000_007, 200)),
    ("histogram", "cuda", "int32", "uniform", (40_000_001, 256)),
]
# round 21 (2026-12-07, forty-seventh session): the lane replicas' (PRIV 1) crossover with the warp replicas
# (PRIV 0) on uint8 x 256, where the model answers PRIV 1 from about 60 million values: round 20's H100 run
# measured those answers 1.05-1.25x the best, the H200's run 41 measured PRIV 1 ahead at 2^28 values. On
# both cards, so that the two are told apart; each shape's sample adds the model's top 10 of every PRIV
# (BY_PRIV), so that the best of each is among the rows whatever the model puts first
ROUND21: list[tuple[str, str, str, str | None, tuple[int, ...]]] = [
    ("histogram", "cuda", "uint8", "uniform", (45_000_007, 256)),
    ("histogram", "cuda", "uint8", "uniform", (180_000_001, 256)),
    ("histogram", "cuda", "uint8", "uniform", (268_435_456, 256)),
]
# round 22 (2026-12-07, forty-seventh session): held out from the h100 profile (an H100's DRAM rate,
# autopad/arch.py, chosen after round 21): uint8 histograms from 75 to 140 million values, where that
# profile answers PRIV 0 and the sm_90 one PRIV 1 (75-90 million) or both PRIV 1 (110-140 million); the
# lane replicas measured ahead from about 66 million values on the H200 and about 140 million on the H100.
# Each sample adds the h100 profile's top 30 (ARCH_TOPS) and the first 10 of every PRIV
ROUND22: list[tuple[str, str, str, str | None, tuple[int, ...]]] = [
    ("histogram", "cuda", "uint8", "uniform", (75_000_007, 256)),
    ("histogram", "cuda", "uint8", "uniform", (90_000_001, 256)),
    ("histogram", "cuda", "uint8", "uniform", (75_000_007, 200)),
    ("histogram", "cuda", "uint8", "uniform", (110_000_003, 256)),
    ("histogram", "cuda", "uint8", "uniform", (140_000_001, 128)),
]
# round 23 (2026-12-08, forty-eighth session): held out from the h100 profile across the CUDA families, after
# it took the card's cuBLAS rates (H100 run 234): the profile was chosen on the H100's 172 recorded shapes
# and checked held out only on round 22's histograms. Transposes of four element sizes, two SIMT GEMMs and
# an int32 histogram that no study recorded; each sample adds the h100 profile's top 30 (ARCH_TOPS)
ROUND23: list[tuple[str, str, str, str | None, tuple[int, ...]]] = [
    ("transpose", "cuda", "float32", None, (4001, 6007)),
    ("transpose", "cuda", "float64", None, (2500, 3001)),
    ("transpose", "cuda", "float16", None, (3, 2000, 4001)),
    ("transpose", "cuda", "int8", None, (6007, 4003)),
    ("matmul", "cuda", "float32", None, (2200, 1400, 1800)),
    ("matmul", "cuda", "float32", None, (1000, 3500, 900)),
    ("histogram", "cuda", "int32", "uniform", (25_000_003, 512)),
]
BY_PRIV = {tuple(c[4]) for c in ROUND21 + ROUND22}
ARCH_TOPS = {tuple(c[4]): ("h100",) for c in ROUND22 + ROUND23}
# ... with 20 of each shape's one-block vector tiles drawn at random (seed 80 + the shape's place) on top of
# the sample
ALONE8: dict[tuple[str, str, tuple[int, ...]], list[tuple[int, ...]]] = {
    ("transpose", "float32", (6145, 3073)): [  # 1509 of 20999 vector-path candidates alone
        (16, 0, 0, 2, 8, 8, 256, 128, 128, 4),
        (16, 0, 0, 16, 1, 2, 512, 128, 64, 2),
        (64, 0, 0, 4, 4, 2, 512, 128, 128, 2),
        (4096, 0, 0, 4, 4, 8, 512, 64, 128, 2),
        (16, 0, 0, 16, 8, 8, 512, 64, 128, 2),
        (16, 0, 0, 8, 4, 8, 512, 128, 128, 2),
        (16, 0, 0, 8, 4, 4, 512, 64, 128, 2),
        (64, 0, 0, 4, 2, 4, 512, 128, 64, 2),
        (16, 0, 0, 16, 2, 2, 512, 128, 64, 2),
        (16, 0, 0, 8, 8, 4, 256, 128, 128, 4),
        (1, 0, 0, 2, 4, 2, 256, 128, 128, 2),
        (64, 0, 0, 4, 4, 16, 512, 128, 128, 2),
        (16, 0, 0, 8, 16, 2, 512, 128, 64, 2),
        (1, 0, 0, 32, 16, 4, 512, 128, 128, 4),
        (64, 0, 0, 8, 16, 4, 512, 128, 128, 4),
        (1, 0, 0, 2, 16, 16, 256, 128, 128, 4),
        (16, 0, 0, 8, 16, 8, 512, 128, 128, 2),
        (16, 0, 0, 2, 1, 8, 512, 128, 128, 4),
        (1, 0, 0, 16, 2, 2, 512, 64, 128, 2),
        (64, 0, 0, 4, 2, 2, 256, 128, 128, 2),
    ],
    ("transpose", "float32", (3, 2049, 4095)): [  # 1419 of 19004 vector-path candidates alone
        (64, 0, 0, 2, 8, 16, 512, 64, 128, 2),
        (16, 4, 0, 1, 1, 1, 256, 128, 128, 2),
        (16, 0, 0, 4, 16, 8, 512, 128, 128, 4),
        (64, 0, 0, 4, 8, 8, 512, 128, 128, 2),
        (64, 0, 0, 4, 2, 4, 256, 128, 128, 2),
        (16, 0, 0, 8, 16, 2, 512, 128, 128, 2),
        (64, 0, 0, 2, 2, 4, 512, 64, 128, 2),
        (1, 0, 0, 2, 2, 4, 512, 128, 64, 2),
        (1, 0, 0, 8, 16, 16, 256, 128, 128, 2),
        (1, 0, 0, 8, 8, 8, 512, 128, 128, 4),
        (16, 0, 0, 32, 16, 4, 512, 128, 128, 2),
        (64, 0, 0, 32, 4, 4, 512, 128, 128, 2),
        (64, 0, 0, 8, 8, 4, 512, 64, 128, 2),
        (1, 0, 0, 1, 1, 1, 512, 64, 128, 2),
        (16, 0, 0, 4, 4, 16, 256, 128, 128, 2),
        (16, 0, 0, 4, 1, 2, 512, 128, 64, 2),
        (16, 0, 0, 8, 2, 8, 512, 64, 128, 2),
        (1, 2, 0, 1, 1, 1, 512, 128, 64, 2),
        (16, 0, 0, 4, 2, 8, 512, 128, 64, 2),
        (64, 2, 0, 1, 1, 1, 256, 128, 128, 2),
    ],
    ("transpose", "float64", (4097, 3073)): [  # 1788 of 14506 vector-path candidates alone
        (1, 0, 0, 8, 2, 8, 512, 128, 128, 1),
        (64, 0, 0, 32, 16, 2, 512, 64, 128, 2),
        (16, 0, 0, 32, 2, 1, 512, 128, 128, 1),
        (16, 0, 0, 32, 8, 4, 512, 128, 128, 1),
        (16, 0, 0, 2, 4, 2, 512, 128, 128, 2),
        (4096, 0, 0, 4, 16, 16, 256, 64, 128, 2),
        (4096, 0, 0, 4, 2, 8, 256, 64, 128, 2),
        (1, 0, 0, 8, 16, 16, 256, 64, 128, 2),
        (4096, 0, 0, 2, 2, 2, 256, 64, 128, 2),
        (1, 0, 0, 8, 8, 8, 512, 128, 64, 2),
        (64, 0, 0, 8, 4, 8, 512, 128, 128, 2),
        (1, 16, 0, 1, 1, 1, 512, 128, 64, 2),
        (1, 0, 0, 8, 4, 8, 512, 128, 128, 2),
        (64, 0, 0, 32, 8, 2, 256, 64, 128, 2),
        (1, 0, 0, 2, 4, 4, 512, 128, 128, 2),
        (16, 0, 0, 8, 16, 2, 512, 64, 128, 2),
        (16, 0, 0, 16, 8, 4, 256, 64, 128, 2),
        (64, 0, 0, 2, 16, 8, 512, 64, 128, 2),
        (4096, 0, 0, 8, 8, 8, 512, 64, 128, 2),
        (1, 0, 0, 4, 4, 16, 512, 128, 64, 2),
    ],
    ("transpose", "float16", (6149, 4097)): [  # 732 of 26123 vector-path candidates alone
        (64, 0, 0, 2, 2, 8, 512, 128, 128, 2),
        (16, 0, 0, 32, 8, 4, 512, 128, 128, 2),
        (1, 0, 0, 4, 4, 16, 512, 128, 128, 4),
        (1, 0, 0, 8, 2, 8, 512, 128, 128, 4),
        (16, 0, 0, 8, 4, 16, 256, 128, 128, 2),
        (1, 0, 0, 2, 4, 16, 512, 128, 128, 4),
        (1, 0, 0, 2, 16, 4, 512, 128, 128, 2),
        (64, 0, 0, 16, 2, 2, 512, 128, 128, 2),
        (1, 0, 0, 32, 2, 4, 512, 128, 128, 4),
        (1, 0, 0, 16, 8, 2, 512, 128, 128, 2),
        (1, 0, 0, 16, 2, 4, 256, 128, 128, 2),
        (16, 0, 0, 4, 2, 4, 512, 128, 128, 2),
        (1, 0, 0, 4, 4, 4, 512, 128, 128, 4),
        (1, 0, 0, 2, 16, 16, 256, 128, 128, 2),
        (16, 0, 0, 16, 2, 2, 256, 128, 128, 2),
        (1, 0, 0, 8, 16, 2, 256, 128, 128, 2),
        (16, 0, 0, 8, 1, 4, 512, 128, 128, 4),
        (16, 0, 0, 4, 1, 8, 512, 128, 128, 2),
        (64, 0, 0, 4, 4, 8, 512, 128, 128, 2),
        (1, 0, 0, 16, 16, 8, 512, 128, 128, 4),
    ],
}  # fmt: skip
# the earlier models' top 10s (rounds 5, 6 and 7) and round 8's one-block tiles enter the samples as picks
for _why, _table in (("old_top", {**OLD_TOP, **OLD_TOP6, **OLD_TOP7}), ("alone", ALONE8)):
    for _k, _tops in _table.items():
        PICKS.setdefault(_k, []).extend(
            ({**dict(zip(_VEC_PATH, t)), "SCALAR_EDGE": 0}, f"{_why}{i}") for i, t in enumerate(_tops)
        )
ROUNDS = {
    1: SHAPES, 2: ROUND2, 3: ROUND3, 4: ROUND4, 5: ROUND5, 6: ROUND6, 7: ROUND7, 8: ROUND8, 9: ROUND9,
    10: ROUND10, 11: ROUND11, 12: ROUND12, 13: ROUND13, 14: ROUND14, 15: ROUND15, 16: ROUND16,
    17: ROUND17, 18: ROUND18, 19: ROUND19, 20: ROUND20, 21: ROUND21, 22: ROUND22,
    23: ROUND23,
}  # fmt: skip
_QUALITY = Path(__file__).resolve().parent / "results" / "h200" / "quality"
SAMPLE = _QUALITY / "model_only_new_shapes_sample.json"
SAMPLES = {
    1: SAMPLE,
    2: _QUALITY / "model_only_new_shapes2_sample.json",
    3: _QUALITY / "model_only_new_shapes3_sample.json",
    4: _QUALITY / "model_only_new_shapes4_sample.json",
    5: _QUALITY / "model_only_new_shapes5_sample.json",
    6: _QUALITY / "model_only_new_shapes6_sample.json",
    7: _QUALITY / "model_only_new_shapes7_sample.json",
    8: _QUALITY / "model_only_new_shapes8_sample.json",
    9: _QUALITY / "model_only_new_shapes9_sample.json",
    10: _QUALITY / "model_only_new_shapes10_sample.json",
    11: _QUALITY / "model_only_new_shapes11_sample.json",
    12: _QUALITY / "model_only_new_shapes12_sample.json",
    13: _QUALITY / "model_only_new_shapes13_sample.json",
    14: _QUALITY / "model_only_new_shapes14_sample.json",
    15: _QUALITY / "model_only_new_shapes15_sample.json",
    16: _QUALITY / "model_only_new_shapes16_sample.json",
    17: _QUALITY / "model_only_new_shapes17_sample.json",
    18: _QUALITY / "model_only_new_shapes18_sample.json",
    19: _QUALITY / "model_only_new_shapes19_sample.json",
    20: _QUALITY / "model_only_new_shapes20_sample.json",
    21: _QUALITY / "model_only_new_shapes21_sample.json",
    22: _QUALITY / "model_only_new_shapes22_sample.json",
    23: _QUALITY / "model_only_new_shapes23_sample.json",
}
