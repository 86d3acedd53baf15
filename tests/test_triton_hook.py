"""The triton.autotune hook: Triton's own autotuner prunes and orders configs with autopad's model."""

from __future__ import annotations

import pytest

import autopad
from autopad.access import block_tile
from autopad.triton_hook import prune_configs_by

triton = pytest.importorskip("triton")


def _pattern(c, elem_bytes, layout):
    bm, bn = c["BM"], c["BN"]
    by = 32 * c["num_warps"] // bn
    return block_tile(bm, bn, bn, by, "store", elem_bytes) + block_tile(
        bm, bn, bm, 32 * c["num_warps"] // bm, "load", elem_bytes, transposed=True
    )


def _hook(**kw):
    return prune_configs_by(
        layout=autopad.tile("BM", "BN", pad="PAD"),
        pattern=_pattern,
        grid=lambda meta: (triton.cdiv(meta["M"], meta["BM"]), triton.cdiv(meta["N"], meta["BN"])),
        dtype="float32",
        **kw,
    )


CONFIGS = [triton.Config({"BM": 32, "BN": 32, "PAD": p}, num_warps=w) for p in (0, 1, 2) for w in (4, 8)]
ARGS = {"M": 4096, "N": 4096}


def test_the_model_orders_configs_and_padding_wins():
    hook = _hook(top_k=2)
    scores = {(c.kwargs["PAD"], c.num_warps): hook["perf_model"](**ARGS, **c.all_kwargs()) for c in CONFIGS}
    best = min(scores, key=scores.get)
    assert best[0] == 1  # one word of padding makes the 32-float column walk conflict-free
    assert scores[(0, 8)] > scores[(1, 8)]


def test_illegal_configs_are_pruned_and_all_illegal_is_an_error():
    hook = _hook()
    cfgs = CONFIGS + [triton.Config({"BM": 32, "BN": 30, "PAD": 0}, num_warps=4)]  # 30 % vec fine, but ...
    kept = hook["early_config_prune"](cfgs, ARGS)
    assert len(kept) >= len(CONFIGS)
    huge = [triton.Config({"BM": 512, "BN": 512, "PAD": 0}, num_warps=4)]  # 1 MB of fp32: over 227 KB
    with pytest.raises(ValueError, match="illegal"):
        hook["early_config_prune"](huge, ARGS)


def test_tritons_own_autotuner_uses_the_hook():
    """Build a real triton.autotune wrapper and ask it to prune, as it does before benchmarking."""
    import triton.language as tl

    @triton.jit
    def kernel(x, M, N, BM: tl.constexpr, BN: tl.constexpr, PAD: tl.constexpr):
        pass

    tuner = triton.autotune(configs=CONFIGS, key=["M", "N"], prune_configs_by=_hook(top_k=2))(kernel)
    tuner.nargs = {"x": None, **ARGS}
    pruned = tuner.prune_configs({})
    assert len(pruned) == 2 and all(c.kwargs["PAD"] == 1 for c in pruned)


def test_bad_top_k_and_grid():
    with pytest.raises(ValueError, match="top_k"):
        _hook(top_k=0)
    with pytest.raises(ValueError, match="grid"):
        prune_configs_by(layout=autopad.tile("BM", "BN"), pattern=None, grid=None)
