"""The SIMT GEMM's compiled k-step schedule (kernels/cuda/matmul.cu): the next step's global loads stay
ahead of the step's FMAs in the machine code, padded layouts and 64x128 / 128x64 tiles included.

matmul.cu issues step k+1's 16-byte global loads at the top of step k so that their latency hides under
step k's FMAs. Without the warp barrier that follows them, ptxas (NVRTC 13.0, sm_90) sank them behind all
but two of the FMAs in 144 of 180 padded builds and in every 64x128 and 128x64 build: each k-step then waited
out a global load (H200 run 51: 1.05-1.49x slower than the same tile with the loads ahead). With it, H200
run 54 measured padded candidates a median 0.922x their earlier time at 2048^3 (0.980 at 1536x1000x2000)
and unpadded ones 0.997x. The model assumes the loads ahead; these tests keep the compiler to that. (128x128
tiles with B swizzled issue them after 25-77% of the loop's FFMAs, with or without the barrier: FFMAs placed
at the loop's top, which a barrier of memory operations does not order; simt_gemm_model_notes.md. The last
test records two of them, so that a compiler that moves them is noticed.)
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from autopad.kernels.cuda import matmul as G
from simt_gemm_checks import nvrtc_cuobjdump

from autopad import cuda_runtime as rt

PAIRED = dict(G.DEFAULTS, THREAD_MAP=1, MIN_BLOCKS=1)  # 128x128x8 8x8, paired lanes


def _ahead_in_sass(c: dict[str, int], tool: Path, tmp: Path, source: str | None = None) -> float:
    """The share of the full-tile main loop's FFMAs issued after its first LDG (cuobjdump -sass): the loop
    (a backward branch) with the fewest LDGs is the unguarded one (the guarded loop loads element by
    element)."""
    blob = rt.compile_cubin(source or G.source(), G.defines(c), "sm_90", "matmul_kernel")
    path = tmp / ("_".join(str(c[k]) for k in G.SPACE) + ".cubin")
    path.write_bytes(blob[blob.index(b"\x7fELF") :])
    sass = subprocess.run([str(tool), "-sass", str(path)], capture_output=True, text=True).stdout
    sass = sass[sass.index("Function : matmul_kernel") :]
    ins = [(int(a, 16), t.strip()) for a, t in re.findall(r"/\*([0-9a-f]{4,5})\*/\s+([^;]*);", sass)]
    loops = []
    for addr, text in ins:
        m = re.search(r"BRA\s+.*?0x([0-9a-f]+)", text)
        if m and int(m.group(1), 16) < addr:
            body = [t for a, t in ins if int(m.group(1), 16) <= a <= addr]
            ldg = [i for i, t in enumerate(body) if "LDG" in t]
            ffma = [i for i, t in enumerate(body) if t.startswith("FFMA")]
            if ldg and ffma:
                loops.append((len(ldg), sum(i > ldg[0] for i in ffma) / len(ffma)))
    return min(loops)[1]


# builds whose loads ptxas sank without the barrier (the padded paired tile, both MIN_BLOCKS; the 64x128 and
# 128x64 tiles, unpadded too) and one that kept them ahead anyway
SUNK_BEFORE = [
    dict(PAIRED, PAD_A=4),
    dict(PAIRED, PAD_B=4, MIN_BLOCKS=2),
    dict(PAIRED, PAD_A=8, PAD_B=4),
    dict(G.DEFAULTS, BM=64, BN=128, BK=16, MIN_BLOCKS=2, THREAD_MAP=1),
    dict(G.DEFAULTS, BM=128, BN=64, BK=16, MIN_BLOCKS=2, THREAD_MAP=1, PAD_A=4),
]


@pytest.mark.parametrize("c", SUNK_BEFORE + [PAIRED], ids=lambda c: "_".join(str(v) for v in c.values()))
def test_next_steps_loads_stay_ahead_of_the_fmas(c, monkeypatch, tmp_path):
    tool = nvrtc_cuobjdump(monkeypatch)
    assert _ahead_in_sass(c, tool, tmp_path) == 1.0


def test_without_the_warp_barrier_the_compiler_sinks_them(monkeypatch, tmp_path):
    """The barrier is what keeps them: the same source without it sinks the padded paired tile's loads (so
    the test above checks the barrier, not a compiler that happens to schedule them well)."""
    tool = nvrtc_cuobjdump(monkeypatch)
    src = G.source()
    assert src.count("__syncwarp();") == 1
    assert _ahead_in_sass(dict(PAIRED, PAD_A=4), tool, tmp_path, src.replace("__syncwarp();", "")) < 0.1


# B swizzled on 128x128 tiles: the compiler leaves FFMAs at the loop's top, ahead of the loads, with or
# without the barrier (the share of FFMAs after the first LDG, NVRTC 13.0 sm_90)
B_SWIZZLED = [
    (dict(PAIRED, SW_VEC_B=4, SW_PER_PHASE_B=1, SW_MAX_PHASE_B=8), 0.62),
    (dict(G.DEFAULTS, BK=16, TM=4, MIN_BLOCKS=2, THREAD_MAP=1, SW_VEC_B=4, SW_MAX_PHASE_B=8), 0.31),
]


@pytest.mark.parametrize("c, share", B_SWIZZLED, ids=("paired_8x8", "bk16_4x8"))
def test_b_swizzled_128_tiles_keep_their_partial_share(c, share, monkeypatch, tmp_path):
    tool = nvrtc_cuobjdump(monkeypatch)
    assert abs(_ahead_in_sass(c, tool, tmp_path) - share) < 0.03
