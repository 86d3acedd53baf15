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


class _FakeCuda:
    """Enough of a CUDA tensor for the hook: a device, a pointer, a size."""

    def __init__(self, index, n=1 << 26):
        self.device = type("D", (), {"type": "cuda", "index": index})()
        self.dtype, self._n = "torch.float32", n

    def data_ptr(self):
        return 0

    def numel(self):
        return self._n

    def element_size(self):
        return 4


def _devices(monkeypatch, names):
    import autopad.device

    asked = []

    def info(index=0):
        asked.append(index)
        return {"name": names[index], "cc": "90", "index": index} if index < len(names) else {}

    monkeypatch.setattr(autopad.device, "device_info", info)
    return asked


def test_the_default_profile_is_the_launch_devices(monkeypatch):
    from autopad.triton_hook import ConfigModel

    asked = _devices(monkeypatch, ["NVIDIA H200", "NVIDIA H100 80GB HBM3"])
    model = ConfigModel(autopad.tile("BM", "BN", pad="PAD"), _pattern, lambda m: (64, 64), dtype="float32")
    cfg = {"BM": 32, "BN": 32, "PAD": 1, "num_warps": 4}
    on_h200 = {"x": _FakeCuda(0), **ARGS, **cfg}
    on_h100 = {"x": _FakeCuda(1), **ARGS, **cfg}
    assert model.arch_for(on_h200).name == "sm_90" and model.arch_for(on_h100).name == "h100"
    # a 256 MB read is DRAM-bound: the H100's slower memory makes the same config slower, memoised apart
    t200, t100 = model.predict_ms(on_h200), model.predict_ms(on_h100)
    assert t100 > 1.2 * t200
    model.predict_ms(on_h100)
    assert sorted(set(asked)) == [0, 1] and len(asked) == 2  # each device is asked once


def test_a_named_profile_wins_and_no_device_means_sm_90(monkeypatch):
    from autopad.triton_hook import ConfigModel

    asked = _devices(monkeypatch, [])
    lay = autopad.tile("BM", "BN", pad="PAD")
    meta = {"x": _FakeCuda(0), **ARGS, "BM": 32, "BN": 32, "PAD": 1, "num_warps": 4}
    assert ConfigModel(lay, _pattern, lambda m: (1,)).arch_for(meta).name == "sm_90"
    assert ConfigModel(lay, _pattern, lambda m: (1,), arch="h100").arch_for(meta).name == "h100"
    assert asked == [0]  # the named profile never asks the driver
    # a profile object (your own, say) is taken as it is
    from dataclasses import replace

    mine = replace(autopad.get_arch("sm_90"), name="mine", dram_bytes_per_s=1e12)
    model = ConfigModel(lay, _pattern, lambda m: (64, 64), arch=mine)
    assert model.arch is mine and model.arch_for(meta) is mine
    assert model.predict_ms(meta) > ConfigModel(lay, _pattern, lambda m: (64, 64)).predict_ms(meta)


def test_odd_arguments_never_break_the_device_lookup(monkeypatch):
    from autopad.triton_hook import ConfigModel

    asked = _devices(monkeypatch, ["NVIDIA H200"])

    class Broken(_FakeCuda):  # a tensor-like whose device cannot be read
        def __init__(self, index):
            self.dtype, self._n = "torch.float32", 1 << 20

        @property
        def device(self):
            raise RuntimeError("no device")

    class NotATensor:  # has a .device but no data: not asked
        device = type("D", (), {"type": "cuda", "index": "x"})()

    meta = {"a": Broken(0), "b": NotATensor(), **ARGS, "BM": 32, "BN": 32, "PAD": 1, "num_warps": 4}
    model = ConfigModel(autopad.tile("BM", "BN", pad="PAD"), _pattern, lambda m: (1,))
    assert model.arch_for(meta).name == "sm_90" and asked == [0]
    assert model.arch is None
    with pytest.raises(ValueError, match="unknown architecture"):
        _hook(arch="sm_99")  # a typo fails when the decorator runs, not at the first launch


def test_the_estimate_follows_the_tensors_bytes(monkeypatch):
    from autopad.triton_hook import ConfigModel

    _devices(monkeypatch, ["NVIDIA H200"])
    model = ConfigModel(autopad.tile("BM", "BN", pad="PAD"), _pattern, lambda m: (64, 64), dtype="float32")
    cfg = {**ARGS, "BM": 32, "BN": 32, "PAD": 1, "num_warps": 4}
    small, large = (
        model.predict_ms({"x": _FakeCuda(0, 1 << 20), **cfg}),
        model.predict_ms({"x": _FakeCuda(0, 1 << 28), **cfg}),
    )
    assert large > 10 * small  # the same integer arguments, 256x the bytes: not the memoised estimate


def _with(**kw):
    """``_hook`` with any of its arguments replaced."""
    args = {
        "layout": autopad.tile("BM", "BN", pad="PAD"),
        "pattern": _pattern,
        "grid": lambda meta: (triton.cdiv(meta["M"], meta["BM"]), triton.cdiv(meta["N"], meta["BN"])),
        "dtype": "float32",
    }
    return prune_configs_by(**{**args, **kw})


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"dtype": "fp16"}, "dtype: 'fp16' is not one of"),  # was a KeyError at the first launch
        ({"layout": None}, "layout: give an autopad.tile"),
        ({"layout": "BM"}, "layout: give an autopad.tile"),
        ({"pattern": "rows"}, "pattern: give an autopad.pattern.Pattern"),
        ({"traffic": {"bytes": 1}}, "traffic: give a function"),
    ],
)
def test_bad_hook_arguments_are_named_when_the_decorator_runs(kw, match):
    """Each was an error from inside Triton's autotuner at the first launch (KeyError 'fp16', "'NoneType'
    object is not callable", ...)."""
    with pytest.raises(ValueError, match=match):
        _with(**kw)


def test_a_top_k_triton_cannot_take_is_named_when_the_decorator_runs():
    for top_k in (2.5, float("nan")):  # Triton takes a float only as a fraction <= 1: a TypeError at launch
        with pytest.raises(ValueError, match="top_k"):
            _with(top_k=top_k)


def test_a_torch_dtype_is_taken_by_its_name():
    torch = pytest.importorskip("torch")
    cfg = {**ARGS, **CONFIGS[0].all_kwargs()}
    assert _with(dtype=torch.float32)["perf_model"](**cfg) == _with()["perf_model"](**cfg)


def test_a_fraction_of_a_few_configs_benchmarks_the_best_predicted_one():
    """Triton benchmarks int(len(configs) * top_k) configs: none for 0.25 (the default) of 3, and its
    autotuner then failed on an empty min() at the launch."""
    import triton.language as tl

    @triton.jit
    def kernel(x, M, N, BM: tl.constexpr, BN: tl.constexpr, PAD: tl.constexpr):
        pass

    three = [triton.Config({"BM": 32, "BN": 32, "PAD": p}, num_warps=4) for p in (0, 1, 2)]
    for configs, top_k, kept in ((three, 0.25, 1), (CONFIGS, 0.1, 1), (CONFIGS, 0.5, 3), (CONFIGS, 1.0, 6)):
        tuner = triton.autotune(configs=configs, key=["M", "N"], prune_configs_by=_with(top_k=top_k))(kernel)
        tuner.nargs = {"x": None, **ARGS}
        pruned = tuner.prune_configs({})
        assert len(pruned) == kept, (top_k, pruned)
        assert kept == len(configs) or pruned[0].kwargs["PAD"] == 1  # the best predicted first
    assert _with(top_k=0.25)["top_k"] == 0.25


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"pattern": lambda c, e, lay: None}, "pattern: returned None"),
        ({"layout": lambda c: None}, "layout: returned None"),
        ({"grid": lambda m: None}, "grid: returned None"),
    ],
)
def test_user_functions_returning_nothing_are_named(kw, match):
    """Was a TypeError or AttributeError from inside the model ("object of type 'NoneType' has no len()")."""
    hook = _with(**kw)
    with pytest.raises(ValueError, match=match):
        hook["early_config_prune"](CONFIGS, ARGS)
        hook["perf_model"](**ARGS, **CONFIGS[0].all_kwargs())
