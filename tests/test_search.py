"""Enumeration, prediction and shortlisting, on the fake transpose spec (no GPU)."""

from __future__ import annotations

import fake_kernel
import pytest

from autopad.search import baselines, enumerate_candidates, predict, rank, shortlist
from autopad.spec import KernelSpec

SPEC = KernelSpec(fake_kernel)
SHAPE = (4096, 4096)


def test_enumerates_only_legal_candidates():
    cands = enumerate_candidates(SPEC, SHAPE, "float32")
    assert cands, "the fake space has legal points"
    for c in cands:
        assert fake_kernel.legal(c, SHAPE, "float32")
    # PAD=1 with VEC=2 misaligns 8-byte accesses: never generated
    assert {"TILE": 32, "PAD": 1, "VEC": 2} not in cands
    assert {"TILE": 32, "PAD": 2, "VEC": 2} in cands


def test_prediction_sees_the_column_walk_conflict():
    unpadded = predict(SPEC, {"TILE": 32, "PAD": 0, "VEC": 1}, SHAPE, "float32")
    padded = predict(SPEC, {"TILE": 32, "PAD": 1, "VEC": 1}, SHAPE, "float32")
    # a 32x8 block is 8 warps, each taking 4 j-steps over the 32 rows: 32 row-writes at 1 wavefront,
    # then 32 column read-outs at 32 wavefronts each unpadded, 1 padded
    assert padded.wavefronts_per_tile == 32 + 32
    assert unpadded.wavefronts_per_tile == 32 + 32 * 32
    assert padded.conflict_degree == 1.0
    assert unpadded.seconds > padded.seconds


def test_rank_is_sorted_and_deterministic():
    a = rank(SPEC, SHAPE, "float32")
    b = rank(SPEC, SHAPE, "float32")
    assert [c.key for c in a] == [c.key for c in b]
    secs = [c.prediction.seconds for c in a]
    assert secs == sorted(secs)


def test_shortlist_always_keeps_the_baselines():
    ranked = rank(SPEC, SHAPE, "float32", extra=baselines(SPEC, SHAPE, "float32"))
    short = shortlist(ranked, 1)
    roles = {r for c in short for r in c.roles}
    assert {"unpadded", "textbook"} <= roles
    assert short[0] is ranked[0]
    with pytest.raises(ValueError, match="top_k"):
        shortlist(ranked, 0)


def test_the_shortlist_gives_each_family_its_best_predicted_candidate_after_the_baselines(monkeypatch):
    from autopad.search_shortlist import family
    from autopad.spec import SpecError

    ranked = rank(SPEC, SHAPE, "float32", extra=baselines(SPEC, SHAPE, "float32"))
    plain = shortlist(ranked, 1, SPEC)
    assert family(SPEC, ranked[0]) == ()  # no FAMILY_KEYS: one family, nothing added
    monkeypatch.setattr(fake_kernel, "FAMILY_KEYS", ("VEC",), raising=False)
    spec = KernelSpec(fake_kernel)
    short = shortlist(ranked, 1, spec)
    tops = {}
    for c in ranked:
        tops.setdefault(c.params["VEC"], c)
    assert set(tops) == {1, 2} and family(spec, tops[2]) == (2,)
    # every family's first-ranked candidate is measured; they come after what was there before (so a budget
    # cuts them first), and nothing else is added
    assert short[: len(plain)] == plain
    assert {c.key for c in short} == {c.key for c in plain} | {c.key for c in tops.values()}
    assert len(short) > len(plain), "VEC 2's best is not among the top 1 and the baselines"
    monkeypatch.setattr(fake_kernel, "FAMILY_KEYS", ("WIDTH",))
    with pytest.raises(SpecError, match="FAMILY_KEYS.*not in SPACE"):
        KernelSpec(fake_kernel)


def test_the_transpose_searches_its_vector_widths_one_by_one():
    from autopad.kernels_registry import builtin_spec

    assert builtin_spec("transpose", "cuda").FAMILY_KEYS == ("VEC",)


def test_a_grid_smaller_than_the_machine_is_charged_its_imbalance_not_empty_slots():
    from autopad.arch import get_arch
    from autopad.kernels_registry import builtin_spec

    a = get_arch("sm_90")
    mm = builtin_spec("matmul", "cuda")
    c = dict(mm.DEFAULTS)  # 128x128 tiles, 256 threads: 8 blocks would fit an SM
    p = predict(mm, c, (2048, 2048, 2048), "float32")
    # 256 blocks on 132 SMs run 2 per SM: occupancy 2 x 256 / 2048, and the partial wave costs 132/128,
    # not the 4x of a wave counted in 8-block slots
    assert p.occupancy == pytest.approx(2 * 256 / a.max_threads_per_sm)
    # the arithmetic at the fp32 rate, with the issue slots the rest of its k-loop takes (its compiled
    # instructions besides the FFMAs, counted: kernels/cuda/matmul_loop.py)
    info = mm.launch_info(c, (2048, 2048, 2048), "float32")
    assert "smem_instructions" not in info and info["loop_slots"] > 0
    slots = info["loop_slots"] * info["tiles_per_block"] * info["blocks"]
    ideal = (2 * 2048**3 + 64 * slots) / a.fp32_flops
    assert ideal < p.seconds < 1.3 * ideal


def test_fewer_warps_cannot_reach_the_arithmetic_peak():
    from autopad.kernels_registry import builtin_spec

    mm = builtin_spec("matmul", "cuda")
    shape = (1024, 1024, 1024)  # 128 blocks: one per SM
    four = predict(mm, {**mm.DEFAULTS, "BM": 64, "BN": 128, "BK": 16, "TM": 8, "TN": 8}, shape, "float32")
    eight = predict(mm, {**mm.DEFAULTS, "BM": 64, "BN": 128, "BK": 16, "TM": 8, "TN": 4}, shape, "float32")
    # measured: 4 warps 1.11x slower than 8 (quality study, H200); the fitted predictor says ~1.10
    assert four.bound == eight.bound == "flops" and four.seconds > 1.05 * eight.seconds


def test_a_spec_can_say_its_accesses_stream_worse_than_a_copy(monkeypatch):
    c = {"TILE": 32, "PAD": 1, "VEC": 1}
    base = predict(SPEC, c, SHAPE, "float32")
    info = fake_kernel.launch_info
    monkeypatch.setattr(fake_kernel, "launch_info", lambda *a: {**info(*a), "dram_efficiency": 0.5})
    slow = predict(KernelSpec(fake_kernel), c, SHAPE, "float32")
    assert base.bound == "dram" and slow.seconds == pytest.approx(2 * base.seconds, rel=0.05)


def test_misaligned_transpose_rows_make_wider_vectors_slower_in_the_model():
    from autopad.kernels_registry import builtin_spec

    tr = builtin_spec("transpose", "cuda")
    c = {**tr.DEFAULTS, "TILE_M": 64, "TILE_N": 64, "THREADS": 256}
    from autopad.kernels.cuda.transpose import COLUMN_GROUP, GROUP_GAIN, SEAM_SECTOR_BYTES, SEGMENT_BYTES

    # aligned rows: the cost of 256-byte segments each way, and the original path's block order (GROUP 1's)
    aligned = tr.launch_info({**c, "VEC": 4}, (4096, 4096), "float32")["dram_efficiency"]
    order1 = GROUP_GAIN[True][1] / max(v for g, v in GROUP_GAIN[True].items() if g != COLUMN_GROUP)
    assert aligned == pytest.approx(2 / (2 + 2 * SEGMENT_BYTES / 256) * order1)
    eff = [tr.launch_info({**c, "VEC": v}, (4097, 8191), "float32")["dram_efficiency"] for v in (1, 2, 4)]

    seam = 1 / (1 + 0.5 * SEAM_SECTOR_BYTES / (64 * 4))  # output rows of 4097 fp32: not whole sectors
    assert eff[0] == pytest.approx(seam) and eff[0] > eff[1] > eff[2]


def test_first_round_spans_launch_configurations_and_the_search_steps_from_the_fastest():
    from autopad.kernels_registry import builtin_spec
    from autopad.search import launch_config, neighbours

    tr = builtin_spec("transpose", "cuda")
    shape = (2048, 2048)
    ranked = rank(tr, shape, "float32")
    plain = shortlist(ranked, 3)
    wide = shortlist(ranked, 3, tr)
    configs = {launch_config(tr, c) for c in wide}
    assert {c.key for c in plain} <= {c.key for c in wide} and len(configs) >= 3
    here = ranked[0]
    steps = neighbours(tr, ranked, here, layouts=2)
    cfg = dict(launch_config(tr, here))
    for c in steps:
        other = dict(launch_config(tr, c))
        changed = [k for k in cfg if cfg[k] != other[k]]
        assert len(changed) <= 1  # one launch constant one step away, or a layout of the same config
        if changed:
            (k,) = changed
            values = tr.SPACE[k]
            assert abs(values.index(cfg[k]) - values.index(other[k])) == 1
    own = [c for c in steps if launch_config(tr, c) == launch_config(tr, here)]
    # the next 2 best-predicted layouts of its own configuration, and its unpadded twin where that is not one
    assert len(own) == 2 or (len(own) == 3 and "unpadded" not in here.roles)


# ---- the batched ranking against a straightforward one ---------------------------------------------------
#
# ``rank`` keeps the restricted space as columns, scores each distinct (instruction content, layout) pair
# once, takes legality and launch info from the spec's batch hooks and sorts with np.lexsort. The
# reference below does none of that: itertools.product, the scalar legal/layout/launch_info of every
# candidate, every instruction of its pattern through the model, one Prediction at a time and Python's
# sort of the text keys. The two must agree exactly.


def _reference_rank(spec, shape, dtype, extra=()):
    import itertools

    import numpy as np

    from autopad.expr import evaluate
    from autopad.model import analyze_batch
    from autopad.predict import predict_batch
    from autopad.search import _freeze
    from autopad.spec import DTYPE_BYTES

    names = sorted(spec.SPACE)
    rules = [r for r in getattr(spec, "RESTRICTIONS", ()) or ()]
    env_e = {"E": DTYPE_BYTES[dtype]}
    seen = {}
    for vals in itertools.product(*(spec.SPACE[k] for k in names)):
        c = dict(zip(names, vals))
        if all(bool(evaluate(r, {**c, **env_e}) if isinstance(r, str) else r({**c, **env_e})) for r in rules):
            if spec.legal(dict(c), shape, dtype):
                seen[_freeze(c)] = c
    for c in extra:
        if _freeze(c) not in seen and spec.legal(dict(c), shape, dtype):
            seen[_freeze(c)] = dict(c)
    traffic = {k: float(v) for k, v in spec.traffic(shape, dtype).items()}
    traffic.setdefault("flops", 0.0)
    roles = {}
    if getattr(spec, "DEFAULTS", None) is not None:
        roles.setdefault(_freeze(spec.DEFAULTS), []).append("unpadded")
    tb = spec.textbook(shape, dtype) if hasattr(spec, "textbook") else None
    if tb is not None:
        roles.setdefault(_freeze(tb), []).append("textbook")
    out = []
    for f, c in seen.items():
        lay = spec.layout(dict(c), dtype)
        wave = ideal = 0
        by_form = {}  # every instruction's addresses, one model call per (op, width)
        for ins in spec.smem_pattern(dict(c), dtype):
            addr = np.asarray(lay.offsets(np.asarray(ins.rows), np.asarray(ins.cols)), dtype=np.int64)
            by_form.setdefault((ins.op, ins.access_bytes), []).append((addr, ins.count))
        for (op, width), got in by_form.items():
            w, d = analyze_batch(np.stack([a for a, _ in got]), width, op, "sm_90")
            counts = np.array([k for _, k in got])
            wave, ideal = wave + int((w * counts).sum()), ideal + int((d * counts).sum())
        info = dict(spec.launch_info(dict(c), shape, dtype))
        info.setdefault("smem_bytes", lay.footprint)
        pred = predict_batch([info], traffic, np.array([wave]), np.array([ideal]), "sm_90", layouts=[lay])[0]
        out.append((f, pred, tuple(roles.get(f, ()))))
    out.sort(
        key=lambda t: (
            t[1].seconds,
            t[1].wavefronts_per_tile,
            t[1].footprint,
            ",".join(f"{k}={v}" for k, v in t[0]),
        )
    )
    return out


def _small_transpose():
    """The CUDA transpose on a space small enough for the reference, with its batch hooks."""
    from autopad.kernels.cuda.transpose import TransposeCuda

    class Small(TransposeCuda):
        SPACE = {
            "TILE_M": (32, 64),
            "TILE_N": (64, 32),
            "THREADS": (128, 256),
            "VEC": (1, 8),
            "PAD": (0, 1, 16),
            "SW_VEC": (1, 8, 16),  # ties: "16" sorts before "8" as text
            "SW_PER_PHASE": (1, 2),
            "SW_MAX_PHASE": (1, 2, 8),
            "READOUT": (0, 1, 2),
            "SCALAR_EDGE": (0, 1),
            "GROUP": (1, 16),
        }

    return KernelSpec(Small())


@pytest.mark.parametrize("dtype,shape", [("float32", (4097, 8191)), ("float16", (2, 96, 80))])
def test_rank_equals_a_straightforward_ranking(dtype, shape):
    spec = _small_transpose()
    assert callable(spec.legal_batch) and callable(spec.launch_info_batch)
    extra = baselines(spec, shape, dtype)
    for _ in range(2):  # the second time from what the first kept
        fast = rank(spec, shape, dtype, extra=extra)
        ref = _reference_rank(spec, shape, dtype, extra)
        assert [c.constants for c in fast] == [f for f, _, _ in ref]
        assert [c.prediction for c in fast] == [p for _, p, _ in ref]
        assert [c.roles for c in fast] == [r for _, _, r in ref]
        assert any(c.roles for c in fast)


class _Hookless:
    """fake_kernel (no batch hooks) with a string and a callable restriction, as a class-based spec."""

    NAME, BACKEND, DTYPES, DEFAULTS = "fake_hookless", "cuda", fake_kernel.DTYPES, fake_kernel.DEFAULTS
    SPACE = {"TILE": (32, 64), "PAD": (0, 1, 2, 4), "VEC": (1, 2, 4)}
    RESTRICTIONS = ("PAD % VEC == 0 or PAD == 1", lambda env: (env["TILE"] // env["VEC"]) >= 8)
    legal = staticmethod(fake_kernel.legal)
    layout = staticmethod(fake_kernel.layout)
    smem_pattern = staticmethod(fake_kernel.smem_pattern)
    launch_info = staticmethod(fake_kernel.launch_info)
    traffic = staticmethod(fake_kernel.traffic)
    textbook = staticmethod(fake_kernel.textbook)


def test_rank_without_batch_hooks_equals_the_straightforward_ranking():
    spec = KernelSpec(_Hookless())
    for shape in [(4096, 4096), (100, 37)]:
        extra = [*baselines(spec, shape, "float32"), {"TILE": 32, "PAD": 3, "VEC": 1}]
        fast = rank(spec, shape, "float32", extra=extra)
        ref = _reference_rank(spec, shape, "float32", extra)
        assert [(c.constants, c.prediction, c.roles) for c in fast] == ref


# ---- every built-in kernel's whole space: the fast path against the scalar one ---------------------------


class _Scalar:
    """A spec seen without its batch hooks (``legal_batch``, ``launch_info_batch``) and without shared
    pattern objects: ``legal`` and ``launch_info`` are asked candidate by candidate, and each pattern is
    stacked from Instructions as its own (``smem_pattern`` returns a fresh tuple; test_score holds the
    stacked scores to instruction-by-instruction ones)."""

    def __init__(self, impl):
        self._impl = impl

    def __getattr__(self, name):
        if name in ("legal_batch", "launch_info_batch"):
            raise AttributeError(name)
        return getattr(self._impl, name)

    def smem_pattern(self, c, dtype, **kw):
        return tuple(self._impl.smem_pattern(c, dtype, **kw))


@pytest.mark.parametrize(
    "kernel,backend,dtype,shapes",
    [
        ("transpose", "cuda", "float32", [(8192, 8192), (4097, 8191)]),
        ("transpose", "cuda", "float16", [(2, 96, 80)]),
        ("histogram", "cuda", "int32", [(1 << 24, 4096), (1000003, 100000)]),
        ("matmul", "cuda", "float32", [(4096, 4096, 4096), (128, 4096, 4096)]),
        ("transpose", "triton", "float16", [(8192, 8192), (4096, 3000)]),
    ],
)
def test_rank_equals_the_scalar_path_on_built_in_spaces(kernel, backend, dtype, shapes):
    """What the first model-only ranking of a new process runs (vectorised legality and launch info,
    shared patterns and layouts, each distinct address row scored once) ranks the whole space exactly
    as the spec's scalar functions do: same candidates, order, predictions and roles."""
    from autopad.kernels_registry import builtin_spec

    fast_spec = builtin_spec(kernel, backend)
    slow_spec = KernelSpec(_Scalar(fast_spec.impl))
    for shape in shapes:
        extra = baselines(fast_spec, shape, dtype)
        fast = rank(fast_spec, shape, dtype, extra=extra)
        slow = rank(slow_spec, shape, dtype, extra=extra)
        assert len(fast) > 1000
        assert [(c.constants, c.prediction, c.roles) for c in fast] == [
            (c.constants, c.prediction, c.roles) for c in slow
        ]


def test_rank_pauses_the_garbage_collector_and_leaves_it_as_it_was(monkeypatch):
    """``rank`` turns Python's cyclic collector off while it runs (its objects form no cycles) and back on
    after, also when the spec raises; a caller that turned it off finds it off."""
    import gc

    seen = []
    real = fake_kernel.launch_info

    def spy(*a, **k):
        seen.append(gc.isenabled())
        return real(*a, **k)

    assert gc.isenabled()
    monkeypatch.setattr(fake_kernel, "launch_info", spy)
    want = rank(KernelSpec(fake_kernel), SHAPE, "float32")
    assert seen and not any(seen) and gc.isenabled()

    def boom(*a, **k):
        raise RuntimeError("spec bug")

    monkeypatch.setattr(fake_kernel, "launch_info", boom)
    with pytest.raises(RuntimeError, match="spec bug"):
        rank(KernelSpec(fake_kernel), (100, 37), "float32")
    assert gc.isenabled()
    monkeypatch.setattr(fake_kernel, "launch_info", real)
    gc.disable()
    try:
        assert rank(KernelSpec(fake_kernel), SHAPE, "float32") == want and not gc.isenabled()
    finally:
        gc.enable()


def test_candidate_keeps_its_dataclass_behaviour_without_an_instance_dict():
    import copy
    import dataclasses
    import pickle

    from autopad.search import Candidate, _candidates

    spec = KernelSpec(fake_kernel)
    ranked = rank(spec, (64, 64), "float32")
    c = ranked[0]
    assert not hasattr(c, "__dict__")  # slots: one object a candidate, not two
    assert [f.name for f in dataclasses.fields(Candidate)] == ["constants", "layout", "prediction", "roles"]
    assert dataclasses.fields(Candidate)[3].default == ()
    same = Candidate(c.constants, c.layout, c.prediction, c.roles)
    assert same == c and hash(same) == hash(c) and repr(same) == repr(c)
    assert Candidate(c.constants, c.layout, c.prediction).roles == ()
    assert c.key == ",".join(f"{k}={v}" for k, v in c.constants) and c.key is c.key  # made once
    assert c.params == dict(c.constants)
    for back in (pickle.loads(pickle.dumps(c)), copy.copy(c), copy.deepcopy(c)):
        assert back == c and back.key == c.key
    assert dataclasses.replace(c, roles=("x",)).roles == ("x",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.roles = ("x",)  # type: ignore[misc]
    made = _candidates([x.constants for x in ranked], [x.layout for x in ranked],
                       [x.prediction for x in ranked], [x.roles for x in ranked])  # fmt: skip
    assert made == ranked and all(type(x) is Candidate and x.roles == y.roles for x, y in zip(made, ranked))


def test_the_search_steps_onto_each_neighbouring_configuration_with_its_unpadded_twin_too():
    # the model cannot see a layout's index arithmetic, so beside each neighbouring configuration's
    # best-predicted layout the search measures the unpadded baseline's layout of it where the model
    # predicts that within TWIN_MARGIN (H200 run 51: the SIMT GEMM's paired-lane thread map, padded
    # 0.415-0.434 ms as the model preferred, unpadded 0.395), and not where the conflicts it counts make
    # the plain layout much slower
    from autopad.kernels_registry import builtin_spec
    from autopad.search import TWIN_MARGIN, launch_config, neighbours

    mm = builtin_spec("matmul", "cuda")
    ranked = rank(mm, (2048, 2048, 2048), "float32")
    keys = set(mm.LAYOUT_KEYS)
    plain = next(c for c in ranked if "unpadded" in c.roles)
    plain_layout = {k: v for k, v in plain.params.items() if k in keys}

    def layout(c):
        return {k: v for k, v in c.params.items() if k in keys}

    here = ranked[0]
    assert layout(here) != plain_layout  # the model prefers a padded or swizzled layout here
    steps = neighbours(mm, ranked, here)
    configs = {launch_config(mm, c) for c in steps}
    close = far = 0
    for cfg in configs:
        in_cfg = [c for c in ranked if launch_config(mm, c) == cfg]
        twin = next((c for c in in_cfg if layout(c) == plain_layout), None)
        if twin is None or twin is in_cfg[0] or twin is here:
            continue
        if twin.prediction.seconds <= TWIN_MARGIN * in_cfg[0].prediction.seconds:
            assert twin in steps  # measured beside the configuration's best-predicted layout
            close += 1
        else:
            assert twin not in steps
            far += 1
    assert close > 0


def test_the_twin_sweep_offers_each_measured_configurations_unpadded_twin_where_predicted_close():
    # H100 run 184, SIMT GEMM 6144x6144x2048: the first round measured the capped 128 x 128 tile padded, the
    # walk never stood on it, and its unpadded twin (predicted 0.7% behind) was never measured; ``twins``
    # offers it from any measured candidate of its configuration, and not where the conflicts the model
    # counts put the plain layout beyond TWIN_MARGIN
    from autopad.kernels_registry import builtin_spec
    from autopad.search_shortlist import TWIN_MARGIN, launch_config, twins

    mm = builtin_spec("matmul", "cuda")
    ranked = rank(mm, (6144, 6144, 2048), "float32")
    plain = next(c for c in ranked if "unpadded" in c.roles)

    def layout(c, spec=mm):
        return {k: v for k, v in c.params.items() if k in spec.LAYOUT_KEYS}

    first = ranked[0]  # the first round's candidate of the capped tile, padded
    assert (first.params["BM"], first.params["BN"], first.params["MIN_BLOCKS"]) == (128, 128, 2)
    assert layout(first) != layout(plain)
    got = twins(mm, ranked, [first])
    assert len(got) == 1 and launch_config(mm, got[0]) == launch_config(mm, first)
    assert layout(got[0]) == layout(plain)
    assert got[0].prediction.seconds <= TWIN_MARGIN * first.prediction.seconds
    assert twins(mm, ranked, [first, got[0]]) == []  # measured already: not offered again
    # over many configurations (the GEMM's, and a transpose's, where the conflicts the model counts put
    # most plain layouts far behind): a twin for each whose plain layout is close, none for the others
    close = far = 0
    for spec, shape in ((mm, (6144, 6144, 2048)), (builtin_spec("transpose", "cuda"), (4096, 4096))):
        ranked = rank(spec, shape, "float32")
        plain = layout(next(c for c in ranked if "unpadded" in c.roles), spec)
        measured = ranked[:300]
        got = twins(spec, ranked, measured)
        assert len({launch_config(spec, c) for c in got}) == len(got)
        for cfg in {launch_config(spec, c): None for c in measured}:
            in_cfg = [c for c in ranked if launch_config(spec, c) == cfg]
            twin = next((c for c in in_cfg if layout(c, spec) == plain), None)
            if twin is None or twin in measured:
                assert all(launch_config(spec, c) != cfg for c in got)
            elif twin.prediction.seconds <= TWIN_MARGIN * in_cfg[0].prediction.seconds:
                assert twin in got
                close += 1
            else:
                assert twin not in got
                far += 1
    assert close > 0 and far > 0
    assert twins(type("NoLayouts", (), {})(), ranked, measured) == []  # a spec without LAYOUT_KEYS


def test_the_search_keeps_the_class_of_layout_it_stands_on_where_the_model_orders_classes_the_other_way():
    # H200 run 63, fp32 4096^2: from a swizzled tile on the original path the model's best layout on the
    # vector path (SCALAR_EDGE 0) is padded, measured 1.079 of the best, where its best swizzled layout
    # there (predicted within TWIN_MARGIN of it) measured 1.020; the step offers that one too (its kin),
    # only where the best layout is of another class and the kin is predicted within TWIN_MARGIN. (Since the
    # CUDA transpose's partial memory round and aligned-build registers of 2026-12-07 the model puts a
    # swizzle first in that 64 x 64 configuration; the same swizzle on 32 x 32 tiles stands in for it)
    from autopad.kernels_registry import builtin_spec
    from autopad.search import TWIN_MARGIN, launch_config, neighbours

    tr = builtin_spec("transpose", "cuda")
    ranked = rank(tr, (4096, 4096), "float32")
    want = {"GROUP": 1, "PAD": 0, "READOUT": 0, "SCALAR_EDGE": 1, "SW_MAX_PHASE": 16, "SW_PER_PHASE": 2,
            "SW_VEC": 2, "THREADS": 128, "TILE_M": 32, "TILE_N": 32, "VEC": 2}  # fmt: skip
    here = next(c for c in ranked if c.params == want)
    steps = neighbours(tr, ranked, here)
    vector = launch_config(tr, {**want, "SCALAR_EDGE": 0})
    in_vector = [c for c in ranked if launch_config(tr, c) == vector]
    assert type(in_vector[0].layout) is not type(here.layout)  # the model puts a padded layout first
    kin = next(c for c in in_vector if type(c.layout) is type(here.layout))
    assert kin.params["SCALAR_EDGE"] == 0 and kin.params["SW_MAX_PHASE"] > 1
    assert in_vector[0] in steps and kin in steps
    offered = far = 0
    for cfg in {launch_config(tr, c) for c in steps} - {launch_config(tr, here)}:
        in_cfg = [c for c in ranked if launch_config(tr, c) == cfg]
        best = in_cfg[0]
        first = next((c for c in in_cfg if type(c.layout) is type(here.layout)), None)
        others = [c for c in in_cfg[1:] if type(c.layout) is type(here.layout) and c is not first]
        assert not any(c in steps for c in others)  # one layout of the class, its best-predicted
        if first is None or first is best or type(best.layout) is type(here.layout):
            continue
        if all(first.params[k] == tr.DEFAULTS[k] for k in tr.LAYOUT_KEYS):
            continue  # the unpadded twin: offered on its own terms
        if first.prediction.seconds <= TWIN_MARGIN * best.prediction.seconds:
            assert first in steps
            offered += 1
        else:
            assert first not in steps
            far += 1
    assert offered > 0 and far > 0


def test_prefer_plain_takes_the_twin_only_within_the_margin_and_in_the_same_configuration():
    from autopad.search_shortlist import PLAIN_MARGIN, prefer_plain

    # (configuration, layout, predicted seconds), best first
    rows = [("a", "pad4", 1.000), ("b", "plain", 1.002), ("a", "swz", 1.004), ("a", "plain", 1.006)]

    def pick(rows, plain="plain"):
        seconds = [r[2] for r in rows]
        return prefer_plain(range(len(rows)), seconds, lambda i: rows[i][0], lambda i: rows[i][1], plain)

    assert pick(rows) == 3  # a's unpadded layout, 0.6% behind: the answer
    assert pick(rows, plain=None) == 0  # no unpadded baseline: the first
    far = [("a", "pad4", 1.000), ("a", "plain", PLAIN_MARGIN + 0.001)]
    assert pick(far) == 0  # beyond the margin the model's preference stands
    other = [("a", "pad4", 1.000), ("b", "plain", 1.001)]
    assert pick(other) == 0  # another configuration's plain layout is not a twin
    first_plain = [("a", "plain", 1.000), ("a", "pad4", 1.000)]
    assert pick(first_plain) == 0


def test_model_only_answer_is_the_unpadded_twin_where_the_model_puts_a_pad_under_one_percent_ahead():
    # H200 run 55 (today's SIMT GEMM at 2048^3, every candidate timed): the model ranks PAD_A = PAD_B = 4
    # first, 0.56% ahead of the unpadded layout of the same configuration; measured 1.045 of the best against
    # the twin's 1.037 (and the unpadded default's 1.040). The model-only answer takes the twin.
    from autopad.kernels_registry import builtin_spec
    from autopad.search import launch_config, model_pick

    mm = builtin_spec("matmul", "cuda")
    ranked = rank(mm, (2048, 2048, 2048), "float32")
    keys = set(mm.LAYOUT_KEYS)
    first, answer = ranked[0], model_pick(mm, ranked)
    assert {k: first.params[k] for k in ("PAD_A", "PAD_B")} == {"PAD_A": 4, "PAD_B": 4}
    assert launch_config(mm, answer) == launch_config(mm, first)
    assert all(answer.params[k] == mm.DEFAULTS[k] for k in keys)
    assert answer.prediction.seconds <= 1.01 * first.prediction.seconds
    # where the model's first is far ahead of its twin (a conflicted transpose tile), it stands
    tr = builtin_spec("transpose", "cuda")
    ranked = rank(tr, (8192, 8192), "float32")
    assert model_pick(tr, ranked) is ranked[0]


def test_prefer_plain_keeps_the_first_where_a_prediction_is_missing():
    from autopad.search_shortlist import prefer_plain

    nan = float("nan")
    layouts = ["pad4", "plain"]  # one configuration: the first's twin is candidate 1
    for seconds in ([nan, 5.0], [1.0, nan]):
        assert prefer_plain(range(2), seconds, lambda i: "a", lambda i: layouts[i], "plain") == 0


def test_repairs_offer_the_moves_that_are_illegal_alone():
    """On the Gluon GEMM's plain tl.dot path at bf16 2048x1536x2049, from 128 x 256 x 64 at 8 warps: 4 warps
    alone is illegal (the accumulator alone would spill) and WARPS has no other step, so its move comes
    repaired by one step of another constant, the best-predicted such; constants that can move alone are
    left to ``neighbours``."""
    from autopad.kernels_registry import builtin_spec
    from autopad.search import check_legal
    from autopad.search_shortlist import launch_config, repairs

    mm = builtin_spec("matmul", "triton")
    shape = (2048, 1536, 2049)
    ranked = rank(mm, shape, "bfloat16")
    here = next(c for c in ranked if c.params["BM"] == 128 and c.params["BN"] == 256 and c.params["BK"] == 64
                and c.params["WARPS"] == 8 and c.params["STAGES"] == 3)  # fmt: skip
    got = repairs(mm, ranked, here)
    assert got and all(c.params["WARPS"] == 4 for c in got)
    base = dict(launch_config(mm, here))
    for c in got:  # two constants moved, one of them WARPS
        moved = {k for k, v in launch_config(mm, c) if base[k] != v}
        assert len(moved) == 2 and "WARPS" in moved
    assert any(c.params["BM"] == 64 and c.params["BN"] == 256 for c in got)
    assert check_legal(mm, {**here.params, "WARPS": 4}, shape, "bfloat16").ok is False
