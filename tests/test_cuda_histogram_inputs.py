"""kernels/cuda/histogram_inputs.py: the input classes' names, the model's seeded draws (a prefix of the
largest draw is a draw of its own size; sorted input is runs of SORTED_RUN equal values) and the measuring
side's torch values of the same classes."""

from __future__ import annotations

import numpy as np
import pytest
from autopad.kernels.cuda import histogram_inputs as HI


def test_every_alias_has_its_own_name_and_others_are_refused():
    assert [HI.canonical_dist(d) for d in HI.DISTS] == ["uniform", "zipf", "equal", "sorted"]
    assert HI.canonical_dist("zipf") == "zipf" and HI.canonical_dist("equal") == "equal"
    with pytest.raises(ValueError, match="dist: 'normal' is not one of uniform, skewed, single, sorted"):
        HI.canonical_dist("normal")


def test_a_prefix_of_the_largest_draw_is_a_draw_of_its_own_size():
    for dist in ("uniform", "skewed"):
        small = HI.sample(dist, 256, 1000)
        assert (small == HI.sample(dist, 256, HI._MAX_DRAW)[:1000]).all()
        big = HI.sample(dist, 256, HI._MAX_DRAW + 5)  # past the cached draw: drawn afresh, same stream
        assert (big[:1000] == small).all() and big.min() >= 0 and big.max() < 256
    assert (HI.sample("single", 3, 10) == 2).all()  # min(5, bins - 1)
    with pytest.raises(ValueError, match="sorted input depends on positions"):
        HI.sample("sorted", 256, 10)


def test_sorted_blocks_are_runs_of_equal_values():
    v = HI.block_values("sorted", 4096, 256, 2, 4)  # 8 warps x 2 items x 4 values per 16 bytes, by lane
    assert v.shape == (8 * 2 * 4, 32)
    assert len(np.unique(v)) <= 1 + 256 * 2 * 4 // HI.SORTED_RUN + 1  # a few runs cover the block
    assert (
        HI.block_values("uniform", 256, 256, 2, 4) == HI.sample("uniform", 256, 2048).reshape(-1, 32)
    ).all()


def test_the_torch_values_of_each_class():
    pytest.importorskip("torch")
    assert (HI.draw_values(100, 3, "single") == 2).all()
    s = HI.draw_values(5000, 64, "sorted")
    assert (s[1:] >= s[:-1]).all() and int(s.max()) < 64
    z = HI.draw_values(20000, 64, "skewed")
    counts = np.bincount(z.numpy(), minlength=64)
    assert counts[0] > counts[1] > counts[10] and counts.sum() == 20000
