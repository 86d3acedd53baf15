"""Tests for the record and replica layouts (autopad/layout_arrays.py): Structs (AoS vs SoA) and
Replicated (replica-major vs interleaved).
"""

from __future__ import annotations

import numpy as np
import pytest
from test_layouts import LANE

from autopad.access import field_read, histogram_updates, score
from autopad.layouts import (
    Replicated,
    Structs,
)

# ---- Structs: AoS vs SoA ----------------------------------------------------------------------------------


def test_struct_field_offsets_and_strides():
    assert Structs(32, (4, 4, 4, 4)).field_offsets == (0, 4, 8, 12)
    assert Structs(32, (4, 4, 4, 4)).stride == 16
    assert Structs(32, (4, 4, 4)).stride == 12
    assert Structs(32, (4, 8)).field_offsets == (0, 8)  # the double aligns to 8
    assert Structs(32, (4, 8)).stride == 16
    assert Structs(32, (1, 2, 4)).field_offsets == (0, 2, 4)
    assert Structs(32, (1, 2, 4)).stride == 8
    assert Structs(32, (1, 16)).stride == 32
    assert Structs(32, (4, 4, 4, 4), pad=4).stride == 20


def test_aos_and_soa_offsets_and_footprints():
    aos = Structs(32, (4, 4, 4, 4))
    soa = Structs(32, (4, 4, 4, 4), aos=False)
    i = np.arange(32)
    for f in range(4):
        assert (aos.offsets(i, np.full(32, f)) == 16 * i + 4 * f).all()
        assert (soa.offsets(i, np.full(32, f)) == 128 * f + 4 * i).all()
    assert aos.footprint == soa.footprint == 512
    mixed = Structs(10, (1, 4), aos=False)  # field arrays start 16-byte aligned: 10 bytes, then 16..56
    assert mixed.offsets(np.array([0, 9]), np.array([1, 1])).tolist() == [16, 52]
    assert mixed.footprint == 56
    assert aos.describe() == "AoS" and soa.describe() == "SoA"


@pytest.mark.parametrize("field", range(4))
def test_aos_16_byte_struct_4_way_soa_free(field):
    """The seed's P4 {a, b, c, d}: AoS stride 4 words -> 4-way; SoA stride 1 -> 1; padded to 5 words -> 1."""
    read = (field_read(32, field),)
    assert score(read, Structs(32, (4, 4, 4, 4))).wavefronts == 4
    assert score(read, Structs(32, (4, 4, 4, 4), aos=False)).wavefronts == 1
    assert score(read, Structs(32, (4, 4, 4, 4), pad=4)).wavefronts == 1


def test_aos_12_byte_struct_conflict_free():
    assert score((field_read(32, 2),), Structs(32, (4, 4, 4))).wavefronts == 1


def test_aos_double_field():
    """{float; double}: the double of record i at byte 16 i + 8, words 4i+2, 4i+3. A 16-lane phase covers
    banks (4i + 2) mod 32 for i < 16: 8 values twice -> 2 per phase -> 4; SoA doubles are contiguous -> 2."""
    read = (field_read(32, 1, field_bytes=8),)
    cost = score(read, Structs(32, (4, 8)))
    assert (cost.wavefronts, cost.ideal) == (4, 2)
    assert score(read, Structs(32, (4, 8), aos=False)).wavefronts == 2


def test_structs_reject_bad_parameters():
    with pytest.raises(ValueError, match="^fields:"):
        Structs(32, (3,))
    with pytest.raises(ValueError, match="^fields:"):
        Structs(32, ())
    with pytest.raises(ValueError, match="^count:"):
        Structs(0, (4,))
    with pytest.raises(ValueError, match="^pad:"):
        Structs(32, (8, 4), pad=4)


# ---- Replicated: replica-major vs interleaved -------------------------------------------------------------


def test_replicated_offsets_and_footprint():
    major = Replicated(256, 4, pad=1)
    inter = Replicated(256, 4, interleaved=True)
    r = np.array([0, 1, 3])
    b = np.array([5, 5, 255])
    assert major.offsets(r, b).tolist() == [4 * 5, 4 * (257 + 5), 4 * (3 * 257 + 255)]
    assert inter.offsets(r, b).tolist() == [4 * (5 * 4), 4 * (5 * 4 + 1), 4 * (255 * 4 + 3)]
    assert major.footprint == 4 * 257 * 4
    assert inter.footprint == 256 * 4 * 4
    assert Replicated(256, 4, interleaved=True, pad=1).footprint == 256 * 5 * 4
    assert major.offsets(np.array([-1]), np.array([0])).tolist() == [-1]
    assert "replica-major" in major.describe() and "interleaved" in inter.describe()
    assert major.cuda_defines() == {"BINS": 256, "REPLICAS": 4, "INTERLEAVED": 0, "PAD": 1}


def test_hot_bin_with_a_replica_per_lane():
    """32 lanes add to bin 5, lane i in replica i. Replica-major, 256 bins: word 256 i + 5, all bank 5 -> 32.
    Padded by one word: 257 i + 5 -> bank (i + 5) -> 1. Interleaved: word 5 * 32 + i -> bank i -> 1."""
    updates = histogram_updates([5] * 32, replica_of_lane=LANE)
    assert score(updates, Replicated(256, 32)).wavefronts == 32
    assert score(updates, Replicated(256, 32, pad=1)).wavefronts == 1
    assert score(updates, Replicated(256, 32, interleaved=True)).wavefronts == 1


def test_hot_bin_with_four_interleaved_replicas():
    """Lane i uses replica i % 4: four counters, eight lanes on each; atomics do not broadcast -> 8."""
    updates = histogram_updates([5] * 32, replica_of_lane=LANE % 4)
    assert score(updates, Replicated(256, 4, interleaved=True)).wavefronts == 8
    single = histogram_updates([5] * 32)
    assert score(single, Replicated(256, 1)).wavefronts == 32


def test_replicated_rejects_bad_parameters():
    with pytest.raises(ValueError, match="^bins:"):
        Replicated(0)
    with pytest.raises(ValueError, match="^replicas:"):
        Replicated(256, 0)
    with pytest.raises(ValueError, match="^pad:"):
        Replicated(256, 2, pad=-1)
    with pytest.raises(ValueError, match="^elem_bytes:"):
        Replicated(256, 2, elem_bytes=3)


def test_layouts_beyond_32_bit_shared_addresses_are_refused():
    """As a tile: int64 offsets of a layout spanning 2**64 bytes wrapped silently (replica 1 of a histogram
    padded by 2**62 - 32 words landed on replica 0's bytes), so one is refused when it is built."""
    for make, names in (
        (lambda: Replicated(32, 2, 4, pad=2**62 - 32), "bins, replicas, pad, elem_bytes"),
        (lambda: Replicated(2**20, 2**10, 8), "bins, replicas, pad, elem_bytes"),
        (lambda: Structs(2**30, (8, 8)), "count, fields, pad"),
        (lambda: Structs(32, (4, 4), aos=False, pad=2**32), "count, fields, pad"),  # field 1 past 2**32
    ):
        with pytest.raises(ValueError, match=rf"^{names}: .* below 2\*\*32"):
            make()
    assert Replicated(2**20, 2**10, 4).footprint == 2**32  # the last byte below 2**32 is still addressable
