"""benchmarks/ab_matmul_source.py's sample: which recorded rows an A/B of two kernel sources times."""

from __future__ import annotations

import csv
import gzip
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import ab_matmul_source as ab  # noqa: E402


def _rows(path: Path) -> None:
    keys = [f"BK={bk},TM={tm},TN=8,PAD_A={p}" for bk in (8, 16) for tm in (4, 8) for p in (0, 4)]
    with gzip.open(path, "wt", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["shape", "key", "correct", "ms", "model_rank"])
        w.writeheader()
        for i, k in enumerate(keys):
            w.writerow(
                {"shape": "8x8x8", "key": k, "correct": "1", "ms": str(1.0 + i), "model_rank": len(keys) - i}
            )
        w.writerow(
            {"shape": "8x8x8", "key": "BK=16,TM=8,TN=8,PAD_A=8", "correct": "0", "ms": "", "model_rank": 0}
        )
        w.writerow(
            {"shape": "4x4x4", "key": "BK=16,TM=8,TN=8,PAD_A=0", "correct": "1", "ms": "0.5", "model_rank": 1}
        )


def test_sample_keeps_only_correct_rows_of_the_shape_that_hold_every_given_constant(tmp_path):
    path = tmp_path / "rows.csv.gz"
    _rows(path)
    got = ab.sample(path, "8x8x8", top=1, model_top=1, extra=10, seed=0, only=ab.constants("BK=16,TM=8"))
    keys = [r["key"] for r in got]
    assert sorted(keys) == ["BK=16,TM=8,TN=8,PAD_A=0", "BK=16,TM=8,TN=8,PAD_A=4"]
    assert keys[0] == "BK=16,TM=8,TN=8,PAD_A=0"  # the fastest first, then the model's first, no repeats
    everything = ab.sample(path, "8x8x8", top=2, model_top=2, extra=10, seed=0)
    assert len(everything) == 8 and len({r["key"] for r in everything}) == 8


def test_constants_reads_a_study_key():
    assert ab.constants("BK=16,BM=128,PAD_A=4") == {"BK": 16, "BM": 128, "PAD_A": 4}
