"""benchmarks/arch_profile_compare.py: two profiles of the model scored on a card's rows (CPU only)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import arch_profile_compare as apc  # noqa: E402

ROUND22 = ROOT / "benchmarks" / "results" / "h100" / "2026-12-07" / "run233"


def test_round_22_held_out_from_the_h100_profile_reads_better_with_it():
    # H100 run 233: five uint8 histograms of 75-140 million values, drawn after the profile was chosen. With
    # the H200's ceilings the model answered lane replicas at all five (within 10% of the best in 2); with
    # the card's DRAM rate, warp replicas at 75-90 million (within 10% in 5)
    lines, out = apc.compare(ROUND22, "h100", "sm_90")
    assert len(out["h100"]) == len(out["sm_90"]) == 5 and len(lines) == 5
    within = {k: sum(f["pick_over_best"] <= 1.10 for f in v) for k, v in out.items()}
    assert within == {"sm_90": 2, "h100": 5}
    assert "within 10% 5," in apc.summary(out["h100"]) and "5 shapes" in apc.summary(out["h100"])


def test_an_unknown_profile_is_a_usage_error(capsys):
    import pytest

    with pytest.raises(SystemExit) as err:
        apc.main(["--profile", "h1000", "--rows", str(ROUND22)])
    assert err.value.code == 2 and "arch: unknown architecture 'h1000'" in capsys.readouterr().err


def test_round_23_held_out_across_the_cuda_families():
    # H100 run 235: four transposes, two SIMT GEMMs and an int32 histogram drawn after the h100 profile took
    # its cuBLAS rates: every answer within 10% of the best under either profile, none slower than the
    # unpadded default; the h100 profile's rank correlation at least 0.8 on every shape
    lines, out = apc.compare(ROOT / "benchmarks/results/h100/2026-12-08/run235", "h100", "sm_90")
    assert len(out["h100"]) == 7 and {f["family"].split(" ")[0] for f in out["h100"]} == {
        "transpose",
        "matmul",
        "histogram",
    }
    for figs in out.values():
        assert all(f["pick_over_best"] <= 1.10 and f["pick_over_default"] < 1.0 for f in figs)
    assert min(f["spearman"] for f in out["h100"]) >= 0.8
