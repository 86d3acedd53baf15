"""Bank geometry and phase rules per GPU family, in one place.

Every other module asks this one how many banks there are, how wide a bank is, how a warp's lanes are
split into phases for an access width, and which machine ceilings (bandwidth, shared memory per block) to
plan with. Only ``sm_90`` is measured (558 Nsight Compute probes on an H200, ../shared/hardware), and
``h100``: the same chip with an H100's measured DRAM and cuBLAS rates. The other profiles say plainly
whether they are assumed or unvalidated, so nobody mistakes a guess for a measurement.

Phase rule (sm_90, measured): a warp instruction is served in *phases* of consecutive lanes. One phase
moves at most ``banks * bank_bytes`` = 128 bytes, so 1-, 2- and 4-byte accesses use one phase of 32 lanes,
8-byte accesses two phases of 16 and 16-byte accesses four phases of 8. Loads of 8 and 16 bytes merge two
neighbouring phases into one when the lanes pair up on the same address (lane n reads what lane n^1 or
n^2 reads), because the pair needs only half the data.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["Arch", "ARCHS", "get_arch", "arch_names", "arch_for_device"]


@dataclass(frozen=True)
class Arch:
    """One GPU family's shared-memory geometry and the ceilings the score plans with."""

    name: str
    description: str
    # "measured", "measured (...)" (saying what was), "assumed equal to sm_90 until measured" or "unvalidated"
    status: str
    # the NVIDIA compute capability (x10) the profile stands for, which says which instructions it has
    # (model_rules: ldmatrix from 75, cp.async from 80, stmatrix from 90); 0 where it is none (AMD, what-if)
    sm: int = 0
    warp_size: int = 32
    banks: int = 32
    bank_bytes: int = 4
    merge_paired_loads: bool = True  # 8/16-byte loads merge two phases when lanes pair on one address
    smem_per_block: int = 227 * 1024  # bytes one block may opt into
    smem_per_sm: int = 228 * 1024
    max_threads_per_sm: int = 2048
    max_blocks_per_sm: int = 32
    regs_per_sm: int = 65536  # 32-bit registers per SM
    reg_alloc_unit: int = 256  # registers are allocated per warp in steps of this many
    sm_count: int = 132
    dram_bytes_per_s: float = 4.224e12  # device-to-device copy, bytes read + written (measured on H200)
    dram_latency_s: float = 1.0e-6  # loaded DRAM latency the bytes in flight must cover (fitted, see search)
    # round trip of a load that hits L2, as the delay of a queue whose loads hit it (predict.py's
    # ``latency_from_l2``: the Triton GEMM's element-wise operand, a k-step at a time). Chosen on the bf16
    # PATH 1 studies (H100 runs 192-200, H200 run 212), flat from 0.2 to 0.4 us (quality/NOTES.md,
    # thirty-ninth session); it covers the L2 hit itself, the shared stores after it and wgmma's wait
    l2_latency_s: float = 0.3e-6
    smem_bytes_per_clk_per_sm: int = 128  # one wavefront per clock per SM
    clock_hz: float = 1.98e9
    fp32_flops: float = 51e12  # cuBLAS fp32 8192^3 (measured on H200)
    # tensor-core rate by operand bytes: 2 (bf16/fp16) is cuBLAS bf16 8192^3 measured on the H200; 4 (tf32)
    # and 1 (fp8) are that figure times the datasheet ratios (1/2, 2): assumed until measured
    mma_flops: tuple[tuple[int, float], ...] = ((1, 1374e12), (2, 687e12), (4, 343e12))
    # L2 -> SM rate of a tiled kernel's operand re-reads: fitted on the quality study's GEMMs
    # (benchmarks/model_only_report.py), not a microbenchmark: an effective figure, ~1.2x the copy rate
    l2_bytes_per_s: float = 5e12
    # ... and of re-reads that asynchronous bulk copies move (TMA: a whole box per instruction; Triton's
    # pipelined cp.async: 16-byte copies that bypass registers and L1): the Gluon GEMM's operand re-reads
    # at bf16 4096^3 streamed 13.3 TB/s (H200 run 2, quality/gluon_gemm_model_notes.md)
    l2_async_bytes_per_s: float = 12e12

    @property
    def phase_bytes(self) -> int:
        """Bytes one conflict-free phase moves: every bank once."""
        return self.banks * self.bank_bytes

    def phase_lanes(self, access_bytes: int) -> int:
        """Lanes in one phase before any merge, for an access of ``access_bytes`` per lane.

        Accesses no wider than a bank use one phase for as many lanes as there are banks (a 64-lane AMD
        wave is served in two halves of 32); wider ones are cut so that a phase moves ``phase_bytes``.
        """
        if access_bytes <= self.bank_bytes:
            return min(self.warp_size, self.banks)
        return min(self.warp_size, self.phase_bytes // access_bytes)

    def mma_rate(self, operand_bytes: int) -> float:
        """Tensor-core flops per second for operands of ``operand_bytes`` (the fp32 rate if none)."""
        return dict(self.mma_flops).get(int(operand_bytes), self.fp32_flops)

    @property
    def smem_wavefronts_per_s(self) -> float:
        """Shared-memory wavefronts the whole chip retires per second (one per SM per clock)."""
        return self.sm_count * self.clock_hz


_SM90 = Arch(
    name="sm_90",
    description="NVIDIA Hopper, H200 ceilings (an H100: h100); rules fitted to 558 ncu probes on an H200",
    status="measured",
    sm=90,
)

# An H100 SXM is the H200's sm_90 chip (132 SMs, the same clocks, shared memory and bank rules: the H100
# probes of runs 179-188 agree with them) on slower memory: a device-to-device copy of 1 GiB moved 2,982 GB/s
# read + written on H100 run 232 (benchmarks/results/h100/2026-12-07/run232/bandwidth.json), the H200's
# 4,224 measured the same way. Everything else is the H200's. Scored on the 172 configuration-shapes the
# H100 timed (2026-12-05..07, every family; quality/NOTES.md, forty-seventh session): model-only picks within
# 10% of the best 157 -> 163, worst 1.254 -> 1.178, Spearman mean 0.880 -> 0.882 (min 0.64 -> 0.70; five
# shapes moved under 0.8, by up to 0.07): the lane-replica histograms, which read at the DRAM
# rate where the warp replicas count at the SMs', overtake them at about twice the input on this card.
# Held out from it (round 22, H100 run 233: uint8 histograms of 75-140 million values drawn after it was
# chosen): picks within 10% of the best 2 of 5 with sm_90, 5 of 5 with h100.
# Its arithmetic rates are its own too, measured as the H200's were (cuBLAS 8192^3, median of 20, H100 run
# 234, benchmarks/results/h100/2026-12-08/run234/ceilings.json): fp32 (TF32 off) 51.3 TFLOP/s (the H200
# 51), bf16 749 (the H200 687; fp16 741), tf32 388 (the sm_90 profile's 343 was half its bf16, assumed);
# fp8 is the bf16 figure doubled, assumed. Against the same profile with the H200's rates, on the H100's
# rows (benchmarks/results/cpu/arch_h100_rates_2026-12-08.txt): picks within 10% and Spearman unchanged, the
# tf32 1000^3 picks 1.088 / 1.073 -> 1.015 / 1.027, two bf16 picks 1.019 -> 1.023 (8192x1002x512) and 1.017
# (1800x4096x999). Held out from the profile with them (round 23, H100 run 235: four transposes, two SIMT
# GEMMs and an int32 histogram drawn after it): within 10% of the best in 7 of 7 with h100 and sm_90 alike
# (the same picks, worst 1.089), Spearman min 0.811 (sm_90 0.777). On all 184 H100 shapes against sm_90:
# within 10% 166 -> 175 (benchmarks/results/cpu/arch_h100_compare_2026-12-08.txt; quality/NOTES.md,
# forty-eighth session)
_H100 = replace(
    _SM90,
    name="h100",
    description="NVIDIA H100 SXM (sm_90): the H200's rules, its own DRAM and arithmetic rates",
    status="measured (its DRAM and cuBLAS rates; the other ceilings are the H200's)",
    dram_bytes_per_s=2.982e12,
    fp32_flops=51.3e12,
    mma_flops=((1, 1498e12), (2, 749e12), (4, 388e12)),
)

ARCHS: dict[str, Arch] = {
    "sm_90": _SM90,
    "h100": _H100,
    "sm_75": Arch(
        name="sm_75",
        description="NVIDIA Turing",
        status="assumed equal to sm_90 until measured",
        sm=75,
        smem_per_block=64 * 1024,
        smem_per_sm=64 * 1024,
        max_threads_per_sm=1024,
        max_blocks_per_sm=16,
        sm_count=40,
        dram_bytes_per_s=0.3e12,
        clock_hz=1.59e9,
        fp32_flops=8.1e12,
    ),
    "sm_80": Arch(
        name="sm_80",
        description="NVIDIA Ampere A100",
        status="assumed equal to sm_90 until measured",
        sm=80,
        smem_per_block=163 * 1024,
        smem_per_sm=164 * 1024,
        sm_count=108,
        dram_bytes_per_s=1.7e12,
        clock_hz=1.41e9,
        fp32_flops=19.5e12,
    ),
    "sm_89": Arch(
        name="sm_89",
        description="NVIDIA Ada",
        status="assumed equal to sm_90 until measured",
        sm=89,
        smem_per_block=99 * 1024,
        smem_per_sm=100 * 1024,
        max_threads_per_sm=1536,
        max_blocks_per_sm=24,
        sm_count=128,
        dram_bytes_per_s=0.9e12,
        clock_hz=2.5e9,
        fp32_flops=82e12,
    ),
    # AMD CDNA3 (MI300): 64-lane waves, 32 banks of 4 bytes; a 4-byte access is served half a wave at a
    # time, 8- and 16-byte accesses in quarter and eighth waves. No pair merging is assumed.
    "cdna3": Arch(
        name="cdna3",
        description="AMD CDNA3 (MI300), wave64, 32 LDS banks",
        status="unvalidated",
        warp_size=64,
        banks=32,
        merge_paired_loads=False,
        smem_per_block=64 * 1024,
        smem_per_sm=64 * 1024,
        sm_count=304,
        dram_bytes_per_s=4.0e12,
        clock_hz=2.1e9,
        fp32_flops=80e12,
    ),
    # A generic 64-bank LDS with 64-lane waves (the geometry of newer AMD parts), for what-if questions.
    "banks64": Arch(
        name="banks64",
        description="generic wave64 with 64 banks of 4 bytes",
        status="unvalidated",
        warp_size=64,
        banks=64,
        merge_paired_loads=False,
        smem_per_block=160 * 1024,
        smem_per_sm=160 * 1024,
        sm_count=256,
        dram_bytes_per_s=8.0e12,
        clock_hz=2.4e9,
        fp32_flops=150e12,
    ),
}


def arch_names() -> list[str]:
    """Names ``get_arch`` accepts."""
    return sorted(ARCHS)


def arch_for_device(cc: str, name: str = "") -> str:
    """The profile to plan with on a CUDA device of compute capability ``cc`` ("90") named ``name``: ``h100``
    for an H100 SXM, the ``sm_<cc>`` profile where there is one, else sm_90 (what tune() and autopad.ops
    use)."""
    up = name.upper()
    # the profile's DRAM rate is an H100 SXM's (80GB HBM3): a PCIe card (114 SMs, ~2 TB/s) or an NVL one
    # (~3.9 TB/s) is not it, and keeps the measured sm_90 until it is measured
    if cc == "90" and "H100" in up and "PCIE" not in up and "NVL" not in up:
        return "h100"
    return f"sm_{cc}" if cc and f"sm_{cc}" in ARCHS else "sm_90"


def get_arch(arch: str | Arch) -> Arch:
    """The profile for ``arch`` (a name such as "sm_90", or an ``Arch``); a ValueError names the choices."""
    if isinstance(arch, Arch):
        return arch
    if isinstance(arch, str) and arch not in ARCHS and arch.lower() in ARCHS:
        arch = arch.lower()  # 'H100', 'SM_90': the names are lower case
    if not isinstance(arch, str) or arch not in ARCHS:
        raise ValueError(f"arch: unknown architecture {arch!r}; known: {', '.join(arch_names())}")
    return ARCHS[arch]
