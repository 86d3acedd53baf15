"""The batched scorer (autopad.score) against scoring every instruction of every candidate one by one."""

from __future__ import annotations

import random

import numpy as np
import pytest
from test_search import _small_transpose

from autopad.arch import get_arch
from autopad.kernels_registry import builtin_spec
from autopad.layouts import Legality, Padded
from autopad.model import analyze_batch
from autopad.score import score_candidates
from autopad.search import enumerate_candidates

A = get_arch("sm_90")


def _reference(spec, consts, dtype, dist=None):
    """Wavefronts and ideal per tile: every instruction's addresses through the layout's own offsets, one
    model call per (op, width) of each candidate, counts multiplied in."""
    wave, ideal = [], []
    for c in consts:
        lay = spec.layout(dict(c), dtype)
        pat = spec.smem_pattern(dict(c), dtype, dist=dist) if dist else spec.smem_pattern(dict(c), dtype)
        forms = {}
        for ins in pat:
            addr = np.asarray(lay.offsets(np.asarray(ins.rows), np.asarray(ins.cols)), dtype=np.int64)
            forms.setdefault((ins.op, ins.access_bytes), []).append((addr, ins.count))
        w = d = 0
        for (op, width), got in forms.items():
            ws, ds = analyze_batch(np.stack([a for a, _ in got]), width, op, A)
            counts = np.array([k for _, k in got])
            w, d = w + int((ws * counts).sum()), d + int((ds * counts).sum())
        wave.append(w)
        ideal.append(d)
    return wave, ideal


@pytest.mark.parametrize(
    "kernel,dtype,shape,dist,sample",
    [
        ("small-transpose", "float16", (4096, 4096), None, None),  # tile layouts, every candidate
        ("small-transpose", "int8", (4097, 8191), None, None),
        ("matmul", "float32", (2048, 2048, 2048), None, 60),  # two operand tiles: the layout's own offsets
        ("histogram", "int32", (1 << 24, 4096), "skewed", 40),  # atomics on replicated sub-histograms
        ("transpose/triton", "float16", (8192, 8192), None, 80),  # Gluon moves: one pattern object shared
    ],
)
def test_batched_scores_equal_instruction_by_instruction(kernel, dtype, shape, dist, sample):
    name, _, backend = kernel.partition("/")
    spec = _small_transpose() if kernel == "small-transpose" else builtin_spec(name, backend or "cuda")
    consts = enumerate_candidates(spec, shape, dtype)
    if sample:
        consts = random.Random(7).sample(consts, sample)
    lays = [spec.layout(dict(c), dtype) for c in consts]
    wave, ideal = score_candidates(spec, consts, lays, dtype, dist, A)
    want_w, want_d = _reference(spec, consts, dtype, dist)
    assert wave.tolist() == want_w and ideal.tolist() == want_d
    assert len(set(want_w)) > 1


def test_tiles_of_one_formula_are_scored_as_one_layout():
    """Tile layouts that differ only in their row count (TILE_M 32 and 64 of one width, pad and swizzle)
    address every lane alike, so the scorer computes a content's addresses once for all of them; each
    candidate still gets its own pattern's score, as instruction by instruction."""
    from autopad.tile_addresses import _tile_params

    spec = _small_transpose()
    consts = enumerate_candidates(spec, (4096, 4096), "float32")
    lays = [spec.layout(dict(c), "float32") for c in consts]
    by_formula = {}
    for lay in lays:
        by_formula.setdefault(_tile_params(lay), set()).add(lay.rows)
    assert any(len(heights) > 1 for heights in by_formula.values())
    wave, ideal = score_candidates(spec, consts, lays, "float32", None, A)
    assert (wave.tolist(), ideal.tolist()) == _reference(spec, consts, "float32")


@pytest.mark.parametrize(
    "lay",
    [
        "Replicated(4096, 4, 4, False, 1)",
        "Replicated(1024, 32, 4, True, 1)",
        "Replicated(16384, 1, 2, False, 0)",
        "Swizzled(64, 128, 2, sw_vec=8, per_phase=2, max_phase=8)",
        "Padded(32, 32, 4, pad=1)",
        "Replicated(1 << 26, 8, 4, False, 3)",  # addresses beyond 2**31: computed in int64
    ],
)
def test_formula_addresses_equal_the_layouts_own_offsets(lay):
    """Tiles and replicated arrays are addressed by one batched formula (``_tile_addresses``, a column
    stride added for interleaved replicas); it gives each layout's own ``offsets``, inactive lanes -1."""
    from autopad.layouts import Padded, Replicated, Swizzled  # noqa: F401 (eval)
    from autopad.tile_addresses import _tile_addresses, _tile_params

    layout = eval(lay)
    params = _tile_params(layout)
    assert params is not None
    rng = np.random.default_rng(len(lay))
    n_rows = getattr(layout, "replicas", None) or layout.rows
    n_cols = getattr(layout, "bins", None) or layout.cols
    rows = rng.integers(0, n_rows, size=(50, 32))
    cols = rng.integers(0, n_cols, size=(50, 32))
    rows[rng.random(rows.shape) < 0.2] = -1
    got = _tile_addresses(np.repeat(np.array([params]), 50, axis=0), rows, cols, np.arange(50))
    np.testing.assert_array_equal(got, layout.offsets(rows, cols))
    assert got.dtype == (np.int64 if layout.footprint >= 2**31 else np.int32)


def test_stacked_tiles_are_addressed_part_by_part_as_their_own_offsets():
    """A layout of tiles stacked by rows (``tile_parts``: the SIMT GEMM's A and B operand tiles) is
    addressed with each part's tile formula where an instruction's active lanes all lie in one part
    (``_part_rows``); an instruction that straddles parts is left to the layout's own offsets."""
    from autopad.kernels.cuda.matmul import OperandTiles

    from autopad.layouts import Padded, Swizzled
    from autopad.tile_addresses import _extent, _part_rows, _parts, _tile_addresses

    lay = OperandTiles(Padded(8, 64, 4, pad=4), Swizzled(8, 128, 4, sw_vec=4, per_phase=1, max_phase=8))
    parts = _parts(lay)
    assert parts is not None and len(parts) == 2
    rng = np.random.default_rng(7)
    rows = np.concatenate([rng.integers(0, 8, (40, 32)), rng.integers(8, 16, (40, 32))])
    cols = np.concatenate([rng.integers(0, 64, (40, 32)), rng.integers(0, 128, (40, 32))])
    rows[rng.random(rows.shape) < 0.2] = -1
    rows[-1, :2] = (3, 12)  # one instruction in both parts
    params, pid, part, combo_of = _part_rows([parts], *_extent(rows, cols))
    part = part[:, combo_of[0]]  # the one layout's
    fits = part >= 0
    assert fits[:-1].all() and not fits[-1]
    assert (part[:40] == 0).all() and (part[40:-1] == 1).all()
    got = _tile_addresses(params[pid[part[fits]]], rows, cols, np.flatnonzero(fits))
    np.testing.assert_array_equal(got, lay.offsets(rows[fits], cols[fits]))


def _fp16_space_scored():
    """The small fp16 transpose's space at 4096^2: (spec, space, legal rows, layouts, constants, scores)."""
    from autopad import score as S
    from autopad.space import space

    spec = _small_transpose()
    kept = space(spec, "float16")
    rows = np.flatnonzero(kept.legal(spec, (4096, 4096), "float16"))
    lays = kept.layouts(spec, rows, "float16")
    consts = [kept.constants(i) for i in rows.tolist()]
    S._UNIT_SCORES.clear()
    return spec, kept, rows, lays, consts, score_candidates(spec, consts, lays, "float16", None, A)


def test_units_given_as_codes_score_as_units_found_by_memo_and_layout():
    """``Space.score`` hands ``score_candidates`` each candidate's unit as one int (its pattern constants and
    layout object) and its memos lazily; the scores are those the memo-and-layout dictionary gives."""
    from autopad import score as S

    spec, kept, rows, lays, consts, want = _fp16_space_scored()
    S._UNIT_SCORES.clear()
    kept.scores.clear()
    got = kept.score(spec, rows, lays, "float16", None, A)
    assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()


def test_instructions_matched_by_hash_are_checked_exactly(monkeypatch):
    """``_score_chunk`` works out each distinct instruction once, matched by a hash of its kind and lanes
    (``_distinct_instructions``); with every hash equal (all collide) the check finds the instructions
    unequal and each counts as its own: the scores are unchanged."""
    from autopad import distinct
    from autopad import score as S

    spec, kept, rows, lays, consts, want = _fp16_space_scored()
    kind = np.array([0, 0, 1])
    lanes = np.arange(3 * 32).reshape(3, 32)
    uniq, inst_of = S._distinct_instructions(kind, lanes % 32, lanes % 32)
    assert uniq.tolist() == [0, 2] and inst_of.tolist() == [0, 0, 1]  # equal lanes, kinds told apart
    monkeypatch.setattr(distinct, "_HASH", np.zeros_like(distinct._HASH))  # where row_hashes reads it
    uniq, inst_of = S._distinct_instructions(kind, lanes % 32, lanes % 32)
    assert inst_of.tolist() == [0, 1, 2]  # every hash equal: the check refuses the merge
    S._UNIT_SCORES.clear()
    got = score_candidates(spec, consts, lays, "float16", None, A)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


class _Staging:
    """fake_kernel with cp.async copies that give their global side: a 32 x 32 fp16 tile (64-byte rows)
    copied in, rows ``PITCH`` bytes apart in global memory, then read down its columns."""

    import fake_kernel as _fk

    NAME, BACKEND, DTYPES = "fake_staging", "cuda", ("float16",)
    SPACE = {"PITCH": (64, 4096, 4160), "CG": (0, 1), "SIDE": (0, 1), "PAD": (0, 8, 16)}
    DEFAULTS = {"PITCH": 64, "CG": 0, "SIDE": 0, "PAD": 0}
    PATTERN_KEYS = ("PITCH", "CG", "SIDE")
    legal = staticmethod(lambda c, shape, dtype: Legality(True, ""))
    launch_info, traffic, textbook = _fk.launch_info, _fk.traffic, _fk.textbook

    @staticmethod
    def layout(c, dtype):
        return Padded(32, 32, 2, pad=c["PAD"])

    @staticmethod
    def smem_pattern(c, dtype):
        from autopad.access import Instruction, block_tile

        op = "cp.async.cg" if c["CG"] else "cp.async"
        out = []
        for i in range(4):
            q = 32 * i + np.arange(32)
            r, k = q // 4, q % 4
            side = r * c["PITCH"] + k * 16 if c["SIDE"] or i < 2 else None  # two copies lane-ordered
            out.append(Instruction(f"cp{i}", op, 16, r, k * 8, global_offsets=side))
        return tuple(out) + block_tile(32, 32, 32, 4, "load", 2, transposed=True)


def test_copies_with_their_global_side_score_as_the_whole_pattern_does():
    """The tuner's scorer takes a pattern's copies that give their global side apart from its chunks
    (unit by unit) and adds them in: equal to ``access.score`` of the whole pattern, candidate by
    candidate, and kept like any unit (the second call scores nothing new)."""
    from autopad.access import score as score_one
    from autopad.spec import KernelSpec

    spec = KernelSpec(_Staging())
    consts = enumerate_candidates(spec, (1024, 1024), "float16")
    assert len(consts) == 36
    lays = [spec.layout(dict(c), "float16") for c in consts]
    for _ in range(2):
        wave, ideal = score_candidates(spec, consts, lays, "float16", None, A)
        want = [score_one(spec.smem_pattern(dict(c), "float16"), lay, A) for c, lay in zip(consts, lays)]
        assert wave.tolist() == [p.wavefronts for p in want] and ideal.tolist() == [p.ideal for p in want]
    by = {tuple(c[k] for k in ("PITCH", "CG", "SIDE", "PAD")): int(w) for c, w in zip(consts, wave)}
    assert by[4096, 0, 1, 0] > by[64, 0, 1, 0] == by[64, 0, 0, 0]  # two lines a staging row: more
    assert by[4160, 0, 1, 0] < by[4096, 0, 1, 0]  # .ca's two lines at other slots share a wavefront
