"""Tests for the declarative access patterns (autopad.pattern).

The main claim: a kernel's pattern written in a few declarative lines gives exactly the instructions of the
hand-written ``smem_pattern`` it replaces (rows, cols, op and width of every lane of every instruction)
and so the same model score under any layout. Checked against the CUDA transpose (READOUT 0 and 1, every
legal tile x threads x vector for 8-, 4-, 2- and 1-byte elements), the fake kernel of the tuner tests, and
the Gluon transpose (whose instructions follow from its register layouts through gluon_model).
"""

from __future__ import annotations

import itertools
import re
import time

import fake_kernel
import numpy as np
import pytest

from autopad import gluon_model
from autopad.access import Instruction, Stacked, score
from autopad.expr import names_in
from autopad.layouts import Padded, Swizzle, Swizzled, Tile
from autopad.pattern import Blocked, Pattern, atomic, evaluate, gluon_load, gluon_store, load, store
from kernels.cuda import transpose as cuda_transpose
from kernels.triton import transpose as gluon_transpose

# ---- the kernels' patterns, declared ----------------------------------------------------------------------

CUDA_TRANSPOSE = Pattern(
    block="THREADS",  # 1-D: the store phase sees rows of LX threads, the read phase columns of SX
    let={"LX": "TILE_N // VEC", "LY": "THREADS // LX", "SX": "TILE_M // VEC", "SY": "THREADS // SX"},
    tile=("TILE_M", "TILE_N"),
    accesses=[
        store(row="tid // LX + p * LY", col="tid % LX * VEC", vec="VEC", loops={"p": "TILE_M // LY"}),
        load(
            row="tid % SX * VEC + v",
            col="tid // SX + p * SY",
            loops={"p": "TILE_N // SY", "v": "VEC"},
            enabled="READOUT == 0",
        ),
        load(  # READOUT 1: 4-byte words of 4 // E columns, transposed in registers
            row="tid % SX * VEC + v",
            col="(tid // SX + p * SY) * (4 // E)",
            width=4,
            loops={"p": "TILE_N // (SY * (4 // E))", "v": "VEC"},
            enabled="READOUT == 1",
        ),
    ],
)

FAKE = Pattern(
    block=("TILE // VEC", 8),
    accesses=[
        store(row="ty + j", col="tx * VEC", vec="VEC", loops={"j": (0, "TILE", 8)}),
        load(row="tx * VEC + v", col="ty + j", loops={"j": (0, "TILE", 8), "v": "VEC"}),
    ],
)

GLUON_TRANSPOSE = Pattern(
    let={"TN": "max(1, min(32, BN // VEC))", "TM": "max(1, min(32, BM // VEC))"},
    accesses=[
        gluon_store(Blocked((1, "VEC"), ("32 // TN", "TN"), ("WARPS", 1), (1, 0)), shape=("BM", "BN")),
        gluon_load(
            Blocked(("VEC", "max(1, 4 // E)"), ("TM", "32 // TM"), (1, "WARPS"), (0, 1)), ("BM", "BN")
        ),
    ],
)


def same(a: tuple[Instruction, ...], b: tuple[Instruction, ...], ordered: bool = True) -> bool:
    """Equal instructions: op, width, count and every lane's (row, col); in order, or as multisets."""

    def key(i: Instruction) -> tuple:
        return i.op, i.access_bytes, i.count, i.rows.tobytes(), i.cols.tobytes()

    ka, kb = [key(i) for i in a], [key(i) for i in b]
    return ka == kb if ordered else sorted(ka) == sorted(kb)


def cuda_configs() -> list[tuple[dict, str]]:
    out = []
    for dtype in ("float64", "float32", "float16", "int8"):
        for vals in itertools.product(*(cuda_transpose.SPACE[k] for k in cuda_transpose.PATTERN_KEYS)):
            c = dict(cuda_transpose.DEFAULTS, **dict(zip(cuda_transpose.PATTERN_KEYS, vals, strict=True)))
            if c["READOUT"] in (0, 1) and cuda_transpose.legal(c, (4096, 4096), dtype):
                out.append((c, dtype))
    return out


# ---- equivalence ------------------------------------------------------------------------------------------


def test_cuda_transpose_pattern_is_the_hand_written_one():
    """Every legal (TILE_M, TILE_N, THREADS, VEC, READOUT 0 or 1) for 8/4/2/1-byte elements: the same
    instructions (the hand-written one orders them warp-major across phases, the declared one phase by
    phase, so they are compared as multisets) and the same wavefronts under the candidate's own layout,
    unpadded, +1 pad and a padded + swizzled tile."""
    configs = cuda_configs()
    assert len(configs) > 300 and {c["READOUT"] for c, _ in configs} == {0, 1}  # 367 when written
    for c, dtype in configs:
        e = cuda_transpose.DTYPE_BYTES[dtype]
        hand = cuda_transpose.smem_pattern(c, dtype)
        ours = CUDA_TRANSPOSE.instructions(c, e)
        assert same(hand, ours, ordered=False), (c, dtype)
        stacked = CUDA_TRANSPOSE.stacked(c, e)
        tm, tn = c["TILE_M"], c["TILE_N"]
        layouts = [
            cuda_transpose.layout(c, dtype),
            Padded(tm, tn, e),
            Padded(tm, tn, e, pad=1),
            Tile(tm, tn, e, pad=16 // e, swizzle=Swizzle(min(16 // e, tn // 8), 1, 8)),
        ]
        for lay in layouts:
            try:
                want = score(hand, lay)
            except ValueError:  # a vector misaligned by the padding: the model refuses both alike
                for form in (ours, stacked):
                    with pytest.raises(ValueError, match="aligned"):
                        score(form, lay)
                continue
            for got in (score(ours, lay), score(stacked, lay)):
                assert (got.wavefronts, got.ideal) == (want.wavefronts, want.ideal), (c, dtype, lay)
        CUDA_TRANSPOSE.check(c, e)


@pytest.mark.parametrize(
    "tile,vec,dtype", [(32, 1, "float32"), (32, 2, "float32"), (64, 1, "float16"), (64, 2, "float16")]
)
def test_fake_kernel_pattern_is_the_hand_written_one(tile, vec, dtype):
    """block_tile's order is access, warp, then j (then v): the declared pattern matches it in order."""
    c = {"TILE": tile, "PAD": 0, "VEC": vec}
    e = fake_kernel.DTYPE_BYTES[dtype]
    hand = fake_kernel.smem_pattern(c, dtype)
    ours = FAKE.instructions(c, e)
    assert same(hand, ours)
    for pad in (0, 1, 2, 4):
        lay = Padded(tile, tile, e, pad=pad)
        if not lay.check(vec):
            continue
        assert score(hand, lay).wavefronts == score(FAKE.stacked(c, e), lay).wavefronts


def test_gluon_transpose_pattern_is_the_kernels_own():
    """Every 25th legal candidate of the Gluon transpose for 4-, 2- and 1-byte elements (the instructions
    depend on the shared layout through the vector width): identical instructions in the same order."""
    checked = 0
    for dtype in ("float32", "float16", "int8"):
        e = gluon_transpose.DTYPE_BYTES[dtype]
        for c in gluon_transpose.candidates((4096, 4096), dtype)[::25]:
            lay = gluon_transpose.layout(c, dtype)
            hand = gluon_transpose.smem_pattern(c, dtype)
            assert same(hand, GLUON_TRANSPOSE.instructions(c, e, lay)), c
            assert score(GLUON_TRANSPOSE.stacked(c, e, lay), lay).wavefronts == score(hand, lay).wavefronts
            checked += 1
    assert checked > 300


def test_memo_key_is_sound():
    """Candidates with equal memo keys get identical instructions (so the tuner may evaluate one of them)."""
    seen: dict[tuple, tuple] = {}
    for c in gluon_transpose.candidates((4096, 4096), "float16")[::3]:
        lay = gluon_transpose.layout(c, "float16")
        st = GLUON_TRANSPOSE.stacked(c, 2, lay)
        arrays = tuple((g.op, g.access_bytes, g.rows.tobytes(), g.cols.tobytes()) for g in st.groups)
        assert seen.setdefault(GLUON_TRANSPOSE.memo_key(c, 2, lay), arrays) == arrays, c
    assert len(seen) < 200  # far fewer patterns than candidates


def test_gluon_access_is_gluon_model_instructions():
    reg = Blocked((1, 4), (4, 8), (8, 1), (1, 0))
    for smem in (Swizzled(64, 64, 4), Swizzled(64, 64, 4, sw_vec=2, max_phase=8), Padded(64, 64, 4, pad=4)):
        p = Pattern(
            accesses=[
                gluon_store(reg, (64, 64)),
                gluon_load(Blocked((4, 1), (16, 2), (1, 8), (0, 1)), (64, 64)),
            ]
        )
        want = gluon_model.instructions(reg, (64, 64), smem, "store") + gluon_model.instructions(
            Blocked((4, 1), (16, 2), (1, 8), (0, 1)), (64, 64), smem, "load"
        )
        assert same(p.instructions({}, 4, smem), want)
    composed = Tile(64, 64, 4, pad=2, swizzle=Swizzle(4, 1, 8))  # the padding caps vectors at 2 elements
    st = Pattern(accesses=[gluon_store(reg, (64, 64))]).stacked({}, 4, composed)
    assert [g.access_bytes for g in st.groups] == [8]


# ---- the form itself --------------------------------------------------------------------------------------


def test_thread_numbering_loops_and_order():
    """A 16x4x2 block (128 threads, 4 warps): tid = tx + 16 (ty + 4 tz); instructions warp-major, then the
    loops outer to inner."""
    p = Pattern(
        block=(16, 4, 2),
        accesses=[load(row="tz * 4 + ty", col="tx + 16 * j + v", loops={"j": 2, "v": (0, 3, 2)}, name="x")],
    )
    ins = p.instructions({}, 4)
    assert len(ins) == 4 * 2 * 2
    assert ins[0].name == "load 'x' w0 j=0 v=0" and ins[3].name == "load 'x' w0 j=1 v=2"
    assert (
        ins[3].rows.tolist() == [0] * 16 + [1] * 16
        and ins[3].cols.tolist() == [16 + 2 + t for t in range(16)] * 2
    )
    assert ins[4].rows.tolist() == [2] * 16 + [3] * 16  # warp 1: ty 2, 3
    assert ins[-1].rows.tolist() == [6] * 16 + [7] * 16  # warp 3: tz 1, ty 2..3
    lanes = Pattern(block=64, accesses=[store(row="warp", col="lane")]).instructions({}, 4)
    assert [i.rows[0] for i in lanes] == [0, 1] and (lanes[1].cols == np.arange(32)).all()


def test_triangular_loops_see_their_enclosing_loop():
    p = Pattern(block=32, accesses=[load(row="i", col="k", loops={"i": 4, "k": ("i", 4)})])
    ins = p.instructions({}, 4)
    assert [(int(x.rows[0]), int(x.cols[0])) for x in ins] == [(i, k) for i in range(4) for k in range(i, 4)]


def test_vec_width_count_when_enabled():
    p = Pattern(
        block=("BX", 2),
        accesses=[
            store(row="ty", col="tx * VEC", vec="VEC", count="REPS", when="tx < 8 and ty == 0"),
            atomic(row=0, col="tid", width=8, enabled="USE_ATOMIC"),
        ],
    )
    ins = p.instructions({"BX": 16, "VEC": 2, "REPS": 3, "USE_ATOMIC": 0}, 4)
    assert len(ins) == 1 and (ins[0].op, ins[0].access_bytes, ins[0].count) == ("store", 8, 3)
    assert ins[0].rows.tolist() == [0] * 8 + [-1] * 24  # inactive: row -1, col 0
    assert ins[0].cols.tolist() == [2 * t for t in range(8)] + [0] * 24
    both = p.instructions({"BX": 16, "VEC": 2, "REPS": 3, "USE_ATOMIC": 1}, 4)
    assert [i.op for i in both] == ["store", "atomic"] and both[1].access_bytes == 8


def test_keys_and_memo_key():
    assert CUDA_TRANSPOSE.keys == frozenset(cuda_transpose.PATTERN_KEYS)
    assert FAKE.keys == {"TILE", "VEC"}
    assert GLUON_TRANSPOSE.keys == {"BM", "BN", "VEC", "WARPS"} and GLUON_TRANSPOSE.needs_layout
    c = dict(cuda_transpose.DEFAULTS)
    assert CUDA_TRANSPOSE.memo_key(c, 4) == CUDA_TRANSPOSE.memo_key({**c, "PAD": 1, "SW_VEC": 4}, 4)
    assert CUDA_TRANSPOSE.memo_key(c, 4) != CUDA_TRANSPOSE.memo_key(c, 2)
    g = {"BM": 64, "BN": 64, "VEC": 4, "WARPS": 8}
    k1 = GLUON_TRANSPOSE.memo_key(g, 4, Padded(64, 64, 4, pad=4))
    assert k1 == GLUON_TRANSPOSE.memo_key(g, 4, Swizzled(64, 64, 4))  # both allow 4-element vectors
    assert k1 != GLUON_TRANSPOSE.memo_key(g, 4, Padded(64, 64, 4, pad=2))


def test_expressions():
    env = {"A": 7, "B": 2, "x": np.arange(4)}
    cases = {
        "A // B + A % B * 10": 13,
        "2 ** B << 1 | 1": 9,
        "A >> 1 & 6 ^ 1": 3,
        "-A + +B": -5,
        "~B": -3,
        "min(A, B, 5) * max(A, 3)": 14,
        "A if B > 1 else 0": 7,
        "1 < B <= 2 and not A == 3 or 0": True,
    }
    for text, want in cases.items():
        assert evaluate(text, env) == want, text
    assert evaluate("x * B + min(x, 2)", env).tolist() == [0, 3, 6, 8]
    assert evaluate("(x < 2) or (x == 3)", env).tolist() == [True, True, False, True]
    assert evaluate("x if x % 2 else -x", env).tolist() == [0, 1, -2, 3]
    assert evaluate(12, env) == 12 and names_in("min(A, tx) + j") == {"A", "tx", "j"}


@pytest.mark.parametrize(
    "text,match",
    [
        ("A / 2", "'/' is not integer arithmetic"),
        ("foo(A)", "call of 'foo'"),
        ("A.real", "Attribute"),
        ("A[0]", "Subscript"),
        ("1.5 * A", "not an integer literal"),
        ("__import__('os')", "call of '__import__'"),
        ("lambda: 1", "Lambda"),
        ("A +", "not valid syntax"),
        ("A @ B", "MatMult"),
        ("A is B", "Is"),
    ],
)
def test_expressions_outside_the_whitelist(text, match):
    """The arithmetic is autopad.expr's: an ast whitelist, errors naming the expression and the part."""
    with pytest.raises(ValueError, match=match):
        evaluate(text, {"A": 1, "B": 2})
    with pytest.raises(ValueError, match=match):  # when the access is defined, not when it is evaluated
        load(row=text, col=0)


@pytest.mark.parametrize(
    "text,match,arrays",
    [
        ("A // (B - 2)", "division or modulo by zero", True),
        ("A % 0", "division or modulo by zero", True),
        ("A ** -1", "not an integer|negative integer powers", True),
        ("A << -1", "negative shift count", False),  # numpy shifts by a negative count silently
        ("C + 1", "unknown name 'C'; known: A, B", True),
    ],
)
def test_expression_runtime_errors(text, match, arrays):
    """What numpy would let pass silently (a zero divisor, a float) is an error naming the expression."""
    with pytest.raises(ValueError, match=re.escape(f"expression {text!r}: ") + f".*{match}"):
        evaluate(text, {"A": 1, "B": 2})
    if arrays:
        with pytest.raises(ValueError, match=match):
            evaluate(text, {"A": np.arange(3), "B": 2})


def test_errors_name_the_access_and_the_problem():
    p = Pattern(
        block=("TILE // VEC", 8),
        tile=("TILE", "TILE"),
        accesses=[load(row="tx * VEC + v", col="ty + j", loops={"j": (0, "TILE", 8), "v": "VEC"})],
    )
    c = {"TILE": 32, "VEC": 1}
    p.check(c)
    with pytest.raises(
        ValueError,
        match=r"^load 'tile\[tx\*VEC\+v\]\[ty\+j\]': row 32 is outside the 32-row tile \(w1 j=0 v=0, "
        r"lane 0\)",
    ):
        Pattern(block=(64, 8), tile=(32, 32), accesses=p.accesses).check({"TILE": 64, "VEC": 1})
    with pytest.raises(
        ValueError, match="^block: expression 'TILE // VEC': unknown name 'TILE'; known: E, VEC$"
    ):
        p.check({"VEC": 1})
    with pytest.raises(
        ValueError, match=r"^load 'tile\[tx\*VEC\+v\]\[ty\+j\]': loop 'j'.*unknown name 'TILE'"
    ):
        Pattern(block=(32, 8), accesses=p.accesses).check({"VEC": 1})
    with pytest.raises(
        ValueError,
        match=r"^load 'x': expression 'ty \+ BY': unknown name 'BY'; known: E, VEC, .*j, lane, .*tx",
    ):
        Pattern(block=(32, 8), accesses=[load("tx", "ty + BY", loops={"j": 2}, name="x")]).check({"VEC": 1})
    with pytest.raises(ValueError, match="^block: 12x4 = 48 threads is not a whole number of 32-lane warps"):
        Pattern(block=(12, 4), accesses=p.accesses).instructions({"TILE": 32, "VEC": 1}, 4)
    with pytest.raises(ValueError, match="over 1024"):
        Pattern(block=(64, 32), accesses=p.accesses).check(c)
    with pytest.raises(ValueError, match=r"columns 32..35 are outside the 32-column tile \(w0, lane 1\)"):
        Pattern(block=32, tile=(32, 32), accesses=[store(row=0, col="28 + tid * 4", vec=4)]).check({})
    with pytest.raises(ValueError, match="column 2 is not a multiple of the 4-element access"):
        Pattern(block=32, tile=(32, 128), accesses=[store(row=0, col="tid * 2", vec=4)]).check({})
    with pytest.raises(ValueError, match="12 bytes per lane is not one of"):
        Pattern(block=32, accesses=[store(row=0, col="tid", vec=3)]).instructions({}, 4)
    with pytest.raises(ValueError, match="step '0' = 0 must be positive"):
        Pattern(block=32, accesses=[store(row=0, col="j", loops={"j": (0, 4, 0)})]).instructions({}, 4)
    with pytest.raises(ValueError, match="is negative"):
        Pattern(block=32, accesses=[store(row="tid - 1", col=0)]).instructions({}, 4)
    with pytest.raises(ValueError, match="reserved"):
        p.instructions({"TILE": 32, "VEC": 1, "tx": 3}, 4)
    with pytest.raises(ValueError, match="constants: VEC = 1.5 is not an int"):
        p.instructions({"TILE": 32, "VEC": 1.5}, 4)


@pytest.mark.parametrize(
    "make,match",
    [
        (lambda: load(row="tx", col=0, loops={"j": ("tx", 4)}), "bounds may use constants"),
        (lambda: load(row=0, col=0, loops={"j": "k", "k": 4}), "bounds may use constants"),
        (lambda: load(row=0, col=0, vec="tx"), "vec 'tx' reads \\['tx'\\]"),
        (lambda: load(row=0, col=0, loops={"tx": 4}), "loop variable 'tx'"),
        (lambda: load(row=0, col=0, loops={"j": (1, 2, 3, 4)}), "needs \\(start, stop\\)"),
        (lambda: load(row="tx / 2", col=0), "'/'"),
        (lambda: load(row=1.5, col=0), "row: expected an int or text"),
        (lambda: Pattern(accesses=[load(row=0, col=0)]), "block: required"),
        (lambda: Pattern(block=(1, 2, 3, 4)), "block: need"),
        (lambda: Pattern(block=32, let={"tx": 1}), "let"),
        (lambda: Pattern(block=32, let={"A": "tid"}), "thread indices"),
        (lambda: Pattern(block=32, accesses=[object()]), "accesses:"),
        (lambda: gluon_store(Blocked((1, 4), (4, 8), (8, 1)), (64,)), "shape"),
    ],
)
def test_definition_errors(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_gluon_access_errors():
    p = Pattern(block=128, accesses=[gluon_store(Blocked((1, "V"), (4, 8), ("W", 1)), ("64", 64))])
    with pytest.raises(ValueError, match="pass layout="):
        p.instructions({"V": 4, "W": 4}, 4)
    with pytest.raises(ValueError, match="8 warps in the register layout, but the block has 128 threads"):
        p.instructions({"V": 4, "W": 8}, 4, Swizzled(64, 64, 4))
    with pytest.raises(ValueError, match="threads_per_warp"):
        Pattern(accesses=[gluon_store(Blocked((1, 1), ("T", 8), (4, 1)), (64, 64))]).instructions(
            {"T": 8}, 4, Swizzled(64, 64, 4)
        )
    with pytest.raises(ValueError, match="resolve"):
        _ = Blocked((1, "V"), (4, 8), (4, 1)).num_warps


def test_stacked_form_scores_like_the_tuple_and_round_trips():
    c = dict(cuda_transpose.DEFAULTS, TILE_M=64, TILE_N=64, THREADS=256, VEC=4)
    st = CUDA_TRANSPOSE.stacked(c, 4)
    ins = CUDA_TRANSPOSE.instructions(c, 4)
    assert isinstance(st, Stacked) and st.size == len(ins)
    assert [(op, w) for (op, w), _ in st.items()] == [("store", 16), ("load", 4)]
    g = st["load", 4]
    assert g.rows.shape == (st.size - len(st["store", 16].rows), 32) and g.counts.shape == (len(g.rows),)
    op, width, rows, cols, counts = st.groups[0]  # a group unpacks as (op, width, rows, cols, counts)
    assert (op, width) == ("store", 16) and rows.dtype == np.int64
    lay = Swizzled(64, 64, 4, sw_vec=4, per_phase=1, max_phase=8)
    a, b = score(st, lay), score(ins, lay)
    assert a.per_instruction == b.per_instruction
    assert same(st.instructions(), ins)
    assert Stacked.from_instructions(ins).size == len(ins)


def test_evaluation_is_fast():
    """One 128x128 tile, 512 threads, VEC 4 (640 instructions): a few milliseconds in the stacked form."""
    c = dict(cuda_transpose.DEFAULTS, TILE_M=128, TILE_N=128, THREADS=512, VEC=4)
    CUDA_TRANSPOSE.stacked(c, 4)
    t0 = time.perf_counter()
    for _ in range(10):
        st = CUDA_TRANSPOSE.stacked(c, 4)
    assert st.size == 640
    assert (time.perf_counter() - t0) / 10 < 0.05  # measured ~0.6 ms on a 2-core machine; generous bound


# ---- copies into shared memory with their global source (cp_async(src=...)) ------------------------------


def _copy_pattern(cg: bool = False, src: str | None = "(ty + j) * PITCH + tx * 16"):
    """A 32 x 32 fp16 tile (64-byte rows) copied in 16 bytes a lane by a 4 x 8 block, rows ``PITCH`` bytes
    apart in global memory."""
    from autopad.pattern import cp_async

    return Pattern(
        block=(4, 8),
        accesses=[cp_async(row="ty + j", col="tx * 8", src=src, cg=cg, vec=8, loops={"j": (0, 32, 8)})],
    )


def test_a_declared_copy_scores_as_its_instructions_with_their_global_side():
    from autopad.access import Instruction, score

    lay = Padded(32, 32, 2)
    for cg in (False, True):
        for pitch in (64, 4096, 4160):
            c = {"PITCH": pitch}
            pat = _copy_pattern(cg)
            stacked = pat.stacked(c, 2)
            ins = pat.instructions(c, 2)
            assert all(i.global_offsets is not None for i in ins)
            q = np.arange(32)
            want = [
                Instruction("x", "cp.async.cg" if cg else "cp.async", 16, j + q // 4, (q % 4) * 8,
                            global_offsets=(j + q // 4) * pitch + (q % 4) * 16)
                for j in range(0, 32, 8)
            ]  # fmt: skip
            assert score(stacked, lay).wavefronts == score(want, lay).wavefronts
        assert "PITCH" in _copy_pattern(cg).keys
    # the same copies without a source: lane-ordered, what the 64-byte pitch reads
    bare = _copy_pattern(src=None)
    assert bare.stacked({}, 2).globs == ()
    assert (
        score(bare.stacked({}, 2), lay).wavefronts
        == score(_copy_pattern().stacked({"PITCH": 64}, 2), lay).wavefronts
    )
    assert score(_copy_pattern().stacked({"PITCH": 4096}, 2), lay).wavefronts == 32


def test_a_declared_copys_source_is_checked():
    from autopad.pattern import cp_async

    with pytest.raises(
        ValueError, match=r"src '\(ty \+ j\) \* PITCH \+ tx \* 16 - 8' = -8 is not a non-negative"
    ):
        _copy_pattern(src="(ty + j) * PITCH + tx * 16 - 8").stacked({"PITCH": 64}, 2)
    with pytest.raises(ValueError, match="= 8 is not a non-negative multiple of the 16-byte copy"):
        _copy_pattern(src="tx * 16 + 8").stacked({}, 2)
    with pytest.raises(ValueError, match="cg must be True or False"):
        cp_async(row="ty", col="tx", cg="yes")
    # inactive lanes' sources are never read
    p = Pattern(
        block=(4, 8), accesses=[cp_async(row="ty", col="tx * 8", vec=8, when="tx < 2", src="tx * 16 - 32")]
    )
    with pytest.raises(ValueError, match="is not a non-negative"):
        p.stacked({}, 2)
    p = Pattern(
        block=(4, 8), accesses=[cp_async(row="ty", col="tx * 8", vec=8, when="tx >= 2", src="tx * 16 - 32")]
    )
    assert p.stacked({}, 2).globs[0].min() == 0
