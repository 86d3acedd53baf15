"""autopad/gluon_blocked.py: a Gluon register layout as Triton's linear layout (every register of every
thread holds one element, each exactly once over the tile, broadcast where the layout outgrows it), and
its symbolic form."""

from __future__ import annotations

import numpy as np
import pytest

from autopad.gluon_blocked import Blocked, lane_elements


def test_lane_elements_cover_the_tile_once():
    lay = Blocked((1, 4), (4, 8), (8, 1), (1, 0))
    r, c = lane_elements(lay, (64, 64))
    flat = (r * 64 + c).ravel()
    assert sorted(flat.tolist()) == list(range(64 * 64))
    assert (r[0, 0, :4] == 0).all() and (c[0, 0, :4] == np.arange(4)).all()  # lane 0: 4 elements of row 0
    assert c[0, 1, 0] == 4 and r[0, 8, 0] == 1  # lane 1 next vector, lane 8 next row


def test_symbolic_blocked_resolves_against_constants():
    sym = Blocked((1, "VEC"), ("32 // TN", "TN"), ("WARPS", 1), (1, 0))
    assert sym.symbolic and not Blocked((1, 4), (4, 8), (8, 1)).symbolic
    assert sym.resolve({"VEC": 4, "TN": 8, "WARPS": 8}) == Blocked((1, 4), (4, 8), (8, 1), (1, 0))
    with pytest.raises(ValueError, match="threads_per_warp"):
        sym.resolve({"VEC": 4, "TN": 3, "WARPS": 8})  # 10 x 3 threads
    with pytest.raises(ValueError, match="unknown name 'WARPS'"):
        sym.resolve({"VEC": 4, "TN": 8})
    with pytest.raises(ValueError, match="resolve"):
        lane_elements(sym, (64, 64))
    with pytest.raises(ValueError, match="two entries"):
        Blocked((1, 4, 1), (4, 8), (8, 1))


def test_a_layout_wider_than_the_tile_broadcasts_and_a_narrower_one_repeats():
    lay = Blocked((1, 4), (4, 8), (8, 1), (1, 0))  # a 32 x 32 CTA tile, 4 rows a warp
    r, c = lane_elements(lay, (16, 32))  # warp bit 2 (16 rows on) points past the tile: broadcast
    assert r.shape == (8, 32, 4) and (r[4] == r[0]).all() and (c[7] == c[3]).all()
    assert sorted((r[:4] * 32 + c[:4]).ravel().tolist()) == list(range(16 * 32))  # warps 0..3 cover it
    r, c = lane_elements(lay, (64, 64))  # 2 x 2 repeats of the CTA tile: 4 x as many registers
    assert r.shape == (8, 32, 16) and sorted((r * 64 + c).ravel().tolist()) == list(range(64 * 64))
    assert lay.num_warps == 8
    with pytest.raises(ValueError, match="powers of two"):
        Blocked((1, 3), (4, 8), (8, 1))
    with pytest.raises(ValueError, match="powers of two"):
        lane_elements(lay, (48, 64))
