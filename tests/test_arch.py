"""Tests for the architecture profiles (autopad.arch): what exists, how honest each is, and its phase rules.

The expected costs for the wave64 profiles are derived here from the rules arch.py documents (phases of
``banks`` lanes for accesses up to a bank wide, ``banks * bank_bytes / width`` lanes for wider ones, no pair
merging), not read off the model's output.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from autopad import ARCHS, Arch, analyze, get_arch
from autopad.arch import arch_names


def test_profiles_exist_with_their_status():
    assert {"sm_90", "sm_75", "sm_80", "sm_89", "cdna3", "banks64"} <= set(ARCHS)
    assert ARCHS["sm_90"].status == "measured"
    for name in ("sm_75", "sm_80", "sm_89"):
        assert "assumed" in ARCHS[name].status, name
    for name in ("cdna3", "banks64"):
        assert ARCHS[name].status == "unvalidated", name
    for name, a in ARCHS.items():
        assert a.name == name
        assert a.description


def test_the_h100_profile_is_sm_90_with_that_card_s_measured_rates():
    import json

    h, ref = ARCHS["h100"], ARCHS["sm_90"]
    assert h.status.startswith("measured")
    # H100 run 232: a 1 GiB device-to-device copy, bytes read + written, as the H200's 4,224 GB/s was taken
    assert h.dram_bytes_per_s == pytest.approx(2.982e12)
    assert h.dram_bytes_per_s < ref.dram_bytes_per_s
    # H100 run 234: cuBLAS 8192^3 as the H200's were taken; the profile states what that run measured
    run234 = Path(__file__).resolve().parents[1] / "benchmarks/results/h100/2026-12-08/run234/ceilings.json"
    got = json.loads(run234.read_text())
    assert "H100" in got["gpu"]
    assert h.fp32_flops == pytest.approx(got["fp32"]["TFLOPs"] * 1e12, rel=0.01)
    assert h.mma_rate(2) == pytest.approx(got["bf16"]["TFLOPs"] * 1e12, rel=0.01)
    assert h.mma_rate(4) == pytest.approx(got["tf32"]["TFLOPs"] * 1e12, rel=0.01)
    assert h.mma_rate(1) == 2 * h.mma_rate(2)  # fp8: the datasheet ratio, unmeasured
    from dataclasses import fields

    own = {"name", "description", "status", "dram_bytes_per_s", "fp32_flops", "mma_flops"}
    same = {f.name for f in fields(Arch)} - own
    assert all(getattr(h, k) == getattr(ref, k) for k in same)


@pytest.mark.parametrize(
    "cc,name,want",
    [
        ("90", "NVIDIA H100 80GB HBM3", "h100"),
        ("90", "NVIDIA H100 PCIe", "sm_90"),  # 114 SMs and ~2 TB/s: not the profile's card
        ("90", "NVIDIA H100 NVL", "sm_90"),
        ("90", "NVIDIA H200", "sm_90"),
        ("90", "", "sm_90"),
        ("80", "NVIDIA A100-SXM4-80GB", "sm_80"),
        ("100", "NVIDIA B200", "sm_90"),  # no profile of its own: the measured one
        ("", "", "sm_90"),
    ],
)
def test_the_profile_of_a_device(cc, name, want):
    from autopad.arch import arch_for_device

    assert arch_for_device(cc, name) == want


def test_nvidia_profiles_share_sm_90_bank_geometry():
    """'Assumed equal to sm_90 until measured' must mean the same banks, phases and merging."""
    ref = ARCHS["sm_90"]
    for name in ("sm_75", "sm_80", "sm_89"):
        a = ARCHS[name]
        assert (a.warp_size, a.banks, a.bank_bytes, a.merge_paired_loads) == (32, 32, 4, True)
        for width in (1, 2, 4, 8, 16):
            assert a.phase_lanes(width) == ref.phase_lanes(width)


def test_amd_profiles_are_wave64():
    assert (ARCHS["cdna3"].warp_size, ARCHS["cdna3"].banks) == (64, 32)
    assert (ARCHS["banks64"].warp_size, ARCHS["banks64"].banks) == (64, 64)
    assert not ARCHS["cdna3"].merge_paired_loads


def test_get_arch_by_name_and_passthrough():
    assert get_arch("sm_90") is ARCHS["sm_90"]
    custom = Arch(name="toy", description="toy", status="unvalidated", warp_size=16, banks=16)
    assert get_arch(custom) is custom
    assert arch_names() == sorted(ARCHS)


@pytest.mark.parametrize("bad", ["sm_100", "SM_100", "sm90", "", None, 90])
def test_get_arch_error_names_the_choices(bad):
    with pytest.raises(ValueError) as err:
        get_arch(bad)
    msg = str(err.value)
    assert msg.startswith("arch:")
    for name in ARCHS:
        assert name in msg


@pytest.mark.parametrize(
    "arch,width,lanes",
    [
        ("sm_90", 1, 32),
        ("sm_90", 4, 32),
        ("sm_90", 8, 16),  # 16 lanes x 8 bytes = 128 bytes = one pass over the 32 banks
        ("sm_90", 16, 8),
        ("cdna3", 4, 32),  # half a 64-lane wave
        ("cdna3", 8, 16),  # a quarter wave
        ("cdna3", 16, 8),  # an eighth
        ("banks64", 4, 64),  # 64 banks serve the whole wave
        ("banks64", 8, 32),
        ("banks64", 16, 16),
    ],
)
def test_phase_lanes(arch, width, lanes):
    a = ARCHS[arch]
    assert a.phase_lanes(width) == lanes
    assert lanes * max(width, a.bank_bytes) <= a.phase_bytes or width < a.bank_bytes


def test_phase_bytes():
    assert ARCHS["sm_90"].phase_bytes == 128
    assert ARCHS["cdna3"].phase_bytes == 128
    assert ARCHS["banks64"].phase_bytes == 256


def test_smem_wavefronts_per_s():
    a = ARCHS["sm_90"]
    assert a.smem_wavefronts_per_s == pytest.approx(a.sm_count * a.clock_hz)


# ---- the wave64 CDNA3 profile, by the rules arch.py documents -----------------------------------------


def test_cdna3_stride_one_words_two_half_wave_phases():
    """64 lanes reading words 0..63: two phases of 32 lanes, each covering banks 0..31 once -> 2 / 2."""
    a = analyze([4 * lane for lane in range(64)], 4, "load", "cdna3")
    assert (a.wavefronts, a.ideal, a.conflicts) == (2, 2, 0)
    assert a.phase_costs == (1, 1)


def test_cdna3_stride_32_words_serialises_each_half():
    """Words 32*lane all sit in bank 0: each half-wave phase holds 32 distinct words of bank 0 -> 32 + 32."""
    a = analyze([4 * 32 * lane for lane in range(64)], 4, "load", "cdna3")
    assert (a.wavefronts, a.ideal, a.conflicts) == (64, 2, 62)
    assert a.phase_costs == (32, 32)


def test_cdna3_stride_33_words_conflict_free():
    """The [32][33] padding works on wave64 because each half-wave is analysed on its own."""
    a = analyze([4 * 33 * lane for lane in range(64)], 4, "load", "cdna3")
    assert (a.wavefronts, a.conflicts) == (2, 0)


def test_cdna3_stride_16_words():
    """Words 16*lane: banks 0 and 16 alternate, 16 distinct words each, per half -> 16 per phase."""
    a = analyze([4 * 16 * lane for lane in range(64)], 4, "load", "cdna3")
    assert a.phase_costs == (16, 16)


def test_cdna3_doubles_four_quarter_wave_phases():
    """double d[tid] over 64 lanes: 4 phases of 16 lanes, each 128 contiguous bytes -> 4, no conflict."""
    a = analyze([8 * lane for lane in range(64)], 8, "load", "cdna3")
    assert (a.wavefronts, a.ideal, a.conflicts) == (4, 4, 0)


def test_cdna3_does_not_merge_paired_wide_loads():
    """d[tid / 2]: lanes pair on one address.

    sm_90 merges the two 16-lane phases of a 32-lane warp into one (16 distinct doubles = 128 bytes, one
    wavefront); cdna3 assumes no merging, so 64 lanes stay in four 16-lane phases of one wavefront each.
    """
    paired64 = [8 * (lane // 2) for lane in range(64)]
    assert analyze(paired64, 8, "load", "cdna3").wavefronts == 4
    paired32 = [8 * (lane // 2) for lane in range(32)]
    sm90 = analyze(paired32, 8, "load", "sm_90")
    assert (sm90.wavefronts, len(sm90.phase_costs)) == (1, 1)


def test_cdna3_needs_64_lanes():
    with pytest.raises(ValueError, match=r"^addresses:.*64"):
        analyze([4 * lane for lane in range(32)], 4, "load", "cdna3")


def test_cdna3_histogram_atomics_one_bin():
    """Atomics never broadcast: 32 lanes of each half on one counter -> 32 + 32."""
    a = analyze([20] * 64, 4, "atomic", "cdna3")
    assert a.phase_costs == (32, 32)


# ---- the 64-bank profile ----------------------------------------------------------------------------------


def test_banks64_stride_one_is_one_phase():
    a = analyze([4 * lane for lane in range(64)], 4, "load", "banks64")
    assert (a.wavefronts, a.ideal) == (1, 1)


def test_banks64_stride_32_hits_two_banks():
    """Words 32*lane mod 64 alternate between banks 0 and 32: 32 distinct words in each -> 32."""
    a = analyze([4 * 32 * lane for lane in range(64)], 4, "load", "banks64")
    assert (a.wavefronts, a.ideal) == (32, 1)


def test_banks64_column_walk_and_padding():
    """Odd word strides (33, 65) permute the 64 banks -> 1; a 64-wide tile's column walk is 64-way."""
    assert analyze([4 * 33 * lane for lane in range(64)], 4, "load", "banks64").wavefronts == 1
    assert analyze([4 * 65 * lane for lane in range(64)], 4, "load", "banks64").wavefronts == 1
    assert analyze([4 * 64 * lane for lane in range(64)], 4, "load", "banks64").wavefronts == 64


# ---- which profiles have ldmatrix, stmatrix, cp.async (model_rules.py: derived, not yet probed) ------------

ROWS = [16 * lane for lane in range(32)]


@pytest.mark.parametrize(
    "op,width,have",
    [
        ("ldmatrix.x4", 16, {"sm_75", "sm_80", "sm_89", "sm_90", "h100"}),  # PTX: ldmatrix needs sm_75
        ("cp.async", 16, {"sm_80", "sm_89", "sm_90", "h100"}),  # cp.async needs sm_80
        ("stmatrix.x4", 16, {"sm_90", "h100"}),  # stmatrix needs sm_90 (an H100 is sm_90)
    ],
)
def test_new_ops_exist_only_where_the_hardware_has_them(op, width, have):
    for name, arch in ARCHS.items():
        addresses = ROWS + ROWS if arch.warp_size == 64 else ROWS
        if name in have:
            a = analyze(addresses, width, op, name)
            assert (a.wavefronts, a.ideal) == (4, 4), name  # 4 phases of 8 lanes x 16 bytes, conflict-free
        else:
            with pytest.raises(ValueError, match=r"^op:.*" + name):
                analyze(addresses, width, op, name)


def test_matrix_rows_use_the_16_byte_phase_of_the_profile():
    """A matrix is costed like the 8-lane phase of a 16-byte access: 128 bytes = every bank once."""
    for name in ("sm_75", "sm_80", "sm_89", "sm_90"):
        assert ARCHS[name].phase_lanes(16) == 8
        assert (
            analyze([128 * (lane % 8) for lane in range(32)], 16, "ldmatrix.x4", name).phase_costs == (8,) * 4
        )


def test_a_profile_s_instructions_follow_its_compute_capability_not_its_name():
    # the h100 profile is sm_90 (stmatrix, cp.async); a profile named otherwise for an older part is not
    assert (ARCHS["h100"].sm, ARCHS["sm_90"].sm, ARCHS["sm_80"].sm, ARCHS["cdna3"].sm) == (90, 90, 80, 0)
    assert analyze(ROWS, 16, "stmatrix.x4", "h100").wavefronts == 4
    older = Arch(name="a100-like", description="toy", status="unvalidated", sm=80)
    with pytest.raises(ValueError, match="sm_90"):
        analyze(ROWS, 16, "stmatrix.x4", older)
    assert analyze(ROWS, 16, "cp.async", older).wavefronts == 4


def test_profile_names_are_read_in_any_case():
    """'H100' and 'SM_90' are the profiles h100 and sm_90 (the names are lower case); other names are still
    refused, naming the choices."""
    assert get_arch("H100") is get_arch("h100") and get_arch("SM_90") is get_arch("sm_90")
    with pytest.raises(ValueError, match="unknown architecture 'H200'; known:"):
        get_arch("H200")
