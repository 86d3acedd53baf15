"""The Gluon transpose's model side (kernels/triton/transpose_model.py): legality, with the faults the
compiler makes that it refuses, the column read's ranking, the output stores' sectors and the launch info
the batch path gives, and the studies those terms answer to (H100 runs 201-203). No GPU, no triton."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from autopad.access import score

T = pytest.importorskip("autopad.kernels.triton.transpose")
from autopad.kernels.triton import transpose_model as TM  # noqa: E402


def test_legal_rejects_misaligned_padding():
    c = {**T.DEFAULTS, "VEC": 4, "PAD": 1}
    assert not T.legal(c, (128, 128), "float32")  # 1 fp32 of pad under 16-byte vectors: misaligned fault
    assert not T.legal({**T.DEFAULTS, "VEC": 4, "PAD": 2}, (128, 128), "float32")
    assert T.legal({**T.DEFAULTS, "VEC": 4, "PAD": 4}, (128, 128), "float32")
    assert T.legal({**T.DEFAULTS, "VEC": 1, "PAD": 1}, (128, 128), "float32")
    assert not T.legal({**T.DEFAULTS, "VEC": 8}, (128, 128), "float32")  # 32 bytes per access


def test_every_candidate_padding_is_a_multiple_of_the_vector():
    for dtype in ("float32", "float16", "int8", "float64"):
        for c in T.candidates((4096, 4096), dtype):
            assert c["PAD"] % c["VEC"] == 0
            assert c["PAD"] % T.pack(dtype) == 0
            assert not (c["PAD"] and c["MAX_PHASE"] > 1)


def test_legal_rejects_padding_the_packed_read_back_would_misalign():
    # the read-back loads pack(dtype) columns as one 4-byte word (ld.shared.v2.b16 / ld.shared.b32): a pad
    # off that grid faulted on the GPU (H100 run 192: fp16 PAD 1, every one of 12)
    one = {**T.DEFAULTS, "VEC": 1, "PAD": 1}
    for dtype, bad, good in (
        ("float16", (1,), (2, 4)),
        ("int8", (1, 2), (4, 8)),
        ("float8_e4m3fn", (2,), (4,)),
    ):
        for pad in bad:
            why = T.legal({**one, "BM": 128, "BN": 128, "PAD": pad}, (4096, 4096), dtype)
            assert not why and "4-byte word" in why.reason, (dtype, pad)
        for pad in good:
            assert T.legal({**one, "BM": 128, "BN": 128, "PAD": pad}, (4096, 4096), dtype), (dtype, pad)
    # the batched check says the same, row for row
    cols = {k: np.array([v] * 3) for k, v in {**one, "BM": 128, "BN": 128}.items()}
    cols["PAD"] = np.array([1, 2, 4])
    assert T.legal_batch(cols, (4096, 4096), "int8").tolist() == [False, False, True]
    # swizzled layouts stay legal: the compiler splits their read into 2-byte loads (ran correct there)
    assert T.legal({**one, "PAD": 0, "MAX_PHASE": 8}, (4096, 4096), "float16")


def test_model_ranks_the_column_read():
    base = {**T.DEFAULTS, "VEC": 4}
    plain = score(T.smem_pattern(base, "float32"), T.layout(base, "float32"))
    padded = {**base, "PAD": 4}
    swz = {**base, "SW_VEC": 4, "MAX_PHASE": 8}
    p = score(T.smem_pattern(padded, "float32"), T.layout(padded, "float32"))
    s = score(T.smem_pattern(swz, "float32"), T.layout(swz, "float32"))
    assert plain.conflicts > 0
    assert p.wavefronts < plain.wavefronts and s.wavefronts < plain.wavefronts


def test_store_sectors_count_what_a_warp_store_touches():
    """Sectors the output tile's warp stores touch per sector of data: 1 on rows Triton can prove aligned
    (M a multiple of 16: whole vectors, lanes contiguous); off that grid each element is its own store, so
    32 lanes of 2-byte elements contiguous along M (VEC 1, BM 128) write 64 bytes from a row start at any
    even offset (2 sectors on the grid, 3 off it: 47 / 32 over odd strides, 1.25 where rows start 0 or 16
    bytes on the grid); lanes VEC elements apart spread each store over many sectors."""
    wide = {**T.DEFAULTS, "BM": 128, "BN": 64, "VEC": 1, "WARPS": 4}
    assert T.store_sectors(wide, (4096, 4096), "float16") == 1.0
    assert T.store_sectors({**wide, "VEC": 8}, (4096, 4096), "float16") == 1.0
    assert T.store_sectors(wide, (4097, 4096), "float16") == pytest.approx(47 / 32)
    assert T.store_sectors(wide, (1000, 2000), "float16") == pytest.approx(1.25)
    narrow = {**T.DEFAULTS, "BM": 32, "BN": 128, "VEC": 8, "WARPS": 4}
    assert T.store_sectors(narrow, (1000, 2000), "float16") == pytest.approx(10.0)
    # the output's rows are M long: M off the grid scatters the stores, N (the input's rows) does not
    assert T.store_sectors(wide, (4096, 4095), "float16") == 1.0
    assert T.store_sectors({**wide, "VEC": 8}, (4095, 4096), "float16") > 4
    info = T.launch_info(narrow, (1000, 2000), "float16")
    # y's rows are 1000 fp16 long: every other one starts 16 bytes off the grid (shared_sectors: 0.5 of
    # the 32 segments a row, ceil(1000 / 32), share a sector with the block before)
    assert info["l2_bytes"] == pytest.approx(1000 * 2000 * 2 * (1 + 10.0 + 0.5 * 32 * 32 / 2000))


def _shared_by_listing(shape: tuple[int, ...], bm: int, bn: int, eb: int) -> float:
    """What ``shared_sectors`` counts, by listing every block's sectors: each block (a row block of BN
    output rows of one batch and a column block of BM elements) writes its part of each of its rows."""
    b, m, n = (1, *shape) if len(shape) == 2 else shape
    got = 0
    for bb in range(b):
        for r0 in range(0, n, bn):
            for c0 in range(0, m, bm):
                rows = range(bb * n + r0, bb * n + min(n, r0 + bn))
                ends = [((r * m + c0) * eb // 32, ((r * m + min(m, c0 + bm)) * eb - 1) // 32) for r in rows]
                got += len({s for lo, hi in ends for s in range(lo, hi + 1)})
    nbytes = b * n * m * eb
    return (got - -(-nbytes // 32)) / (nbytes / 32)


def test_shared_sectors_count_what_several_blocks_write():
    """A tile writes BM elements of each of BN output rows; a segment starting off the 32-byte grid shares
    its first sector with the block before it. Where a row fits in one tile a block's rows are contiguous,
    so only the run's ends can be shared. Exact against listing every block's sectors, odd and tiny rows,
    batches and partial tiles included (the model counts by the rows' residues on the sector grid)."""
    assert TM.shared_sectors((4096, 4096), 32, 64, 2) == 0.0  # every row on the grid
    # 4097 fp16: row r starts 2r mod 32 bytes in, on the grid for 1 row in 16; 129 segments of BM 32
    assert TM.shared_sectors((4097, 8191), 32, 64, 2) == pytest.approx(
        15 / 16 * 129 * 32 / (4097 * 2), rel=1e-3
    )
    # the share falls with BM: 4x longer segments, about a quarter of the shared sectors
    assert TM.shared_sectors((4097, 8191), 32, 64, 2) > 3.5 * TM.shared_sectors((4097, 8191), 128, 64, 2)
    # a row inside one tile: blocks of BN contiguous rows share only their ends
    assert TM.shared_sectors((100, 4096), 128, 64, 2) < 0.01
    for shape in [
        (4097, 50),
        (1001, 7),
        (3, 1000, 13),
        (2, 129, 31),
        (33, 20),
        (65, 9),
        (20, 40),
        (5, 3, 17),
    ]:
        for bm, bn, eb in [(32, 32, 1), (128, 64, 1), (64, 32, 2), (16, 32, 1), (32, 128, 4), (128, 32, 8)]:
            want = _shared_by_listing(shape, bm, bn, eb)
            assert TM.shared_sectors(shape, bm, bn, eb) == pytest.approx(want, abs=1e-12), (shape, bm, bn, eb)


def test_store_sectors_equal_ncus_store_sectors():
    """H100 run 205 counted the Gluon transpose's own launches under ncu (BN 64, 4 warps, BM 32/64/128 x
    VEC 1/2/4/8 on fp16 4097 x 8191, bf16 2047 x 3001 and fp16 8192²): the sectors its global stores touch
    at L1 (``l1tex__t_sectors_pipe_lsu_mem_global_op_st``), per sector of output, are ``store_sectors``'s,
    exactly, on all 36 launches."""
    import csv
    from pathlib import Path

    run = Path(__file__).parent.parent / "benchmarks/results/h100/2026-12-06/run205"
    launches = {}
    for line in (run / "ncu_launches.txt").read_text().splitlines():
        if line.startswith("LAUNCH "):
            _, i, name, key = line.split()
            launches[i] = (name, {k: int(v) for k, v in (kv.split("=") for kv in key.split(","))})
    got = {}
    for row in csv.DictReader(line for line in (run / "ncu.csv").open() if not line.startswith("==")):
        if row["Metric Name"] == "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum":
            got[row["ID"]] = float(row["Metric Value"].replace(",", ""))
    assert len(got) == len(launches) == 36
    for i, (name, c) in launches.items():
        dtype, dims = name.split("/")
        shape = tuple(int(d) for d in dims.split("x"))
        data_sectors = shape[0] * shape[1] * T.DTYPE_BYTES[dtype] / 32
        assert got[i] / data_sectors == pytest.approx(T.store_sectors(c, shape, dtype), abs=0.01), (name, c)


def test_batch_hooks_agree_with_legal_and_launch_info():
    """``launch_info_batch`` reads VEC too (the stores' sectors): every legal candidate's info matches."""
    sys.path.insert(0, os.path.dirname(__file__))
    from batch_hooks import hooks_agree

    hooks_agree(T.SPEC, T, "float16", [(4097, 8191), (3, 1000, 2000)], every=300)
    hooks_agree(T.SPEC, T, "int8", [(4100, 2050)], every=3000)  # all, the spilling builds among them


def test_store_sectors_against_runs_201_and_202():
    """H100 runs 201-202 timed the Gluon transpose's whole fp16 space (2,732 candidates) at 8192², 4097 x 8191
    and 3 x 1000 x 2000. Before the stores' sectors the model-only picks were 1.069 / 1.060 / 1.285x the
    best and Spearman 0.70 / -0.03 / 0.19; with them the two odd shapes rank at 0.69 / 0.83."""
    root = os.path.join(os.path.dirname(__file__), "..")
    sys.path.insert(0, os.path.join(root, "benchmarks"))
    from pathlib import Path

    import model_only_report as mo

    base = Path(root) / "benchmarks/results/h100/2026-12-06"
    paths = {r: base / r / "study/quality_rows.csv.gz" for r in ("run201", "run202")}
    got = {s.shape: mo.figures(s, mo.predicted(s)) for s in mo.load_shapes(paths)}
    assert got["4097x8191"]["spearman"] > 0.65 and got["3x1000x2000"]["spearman"] > 0.8
    assert got["4097x8191"]["pick_over_best"] < 1.05 and got["3x1000x2000"]["pick_over_best"] < 1.15


MISCOMPILED = {"BM": 128, "BN": 128, "VEC": 1, "WARPS": 4, "PAD": 0, "SW_VEC": 4, "PER_PHASE": 1}


@pytest.mark.parametrize("dtype", ["int8", "float8_e4m3fn"])
def test_legal_refuses_the_one_byte_tiles_triton_miscompiles(dtype):
    """H100 runs 203-204: 128 x 128 tiles of 1-byte elements at VEC 1 and 4 warps, swizzled SW_VEC 4,
    PER_PHASE 1, MAX_PHASE 8+, write shared memory past the tile; their neighbours run correct."""
    for mp in (8, 16, 32):
        c = {**T.DEFAULTS, **MISCOMPILED, "MAX_PHASE": mp}
        got = T.legal(c, (4100, 2050), dtype)
        assert not got and "past the tile's end" in got.reason
    for change in ({"MAX_PHASE": 4}, {"WARPS": 8}, {"VEC": 2}, {"BN": 64}, {"PER_PHASE": 2}, {"SW_VEC": 8}):
        assert T.legal({**T.DEFAULTS, **MISCOMPILED, "MAX_PHASE": 8, **change}, (4100, 2050), dtype)
    assert T.legal({**T.DEFAULTS, **MISCOMPILED, "MAX_PHASE": 8}, (4100, 2050), "float16")
    sys.path.insert(0, os.path.dirname(__file__))
    from batch_hooks import hooks_agree

    hooks_agree(T.SPEC, T, dtype, [(4100, 2050)], every=50)


def test_spilling_builds_write_and_read_back_their_stack_through_l2():
    """A build the table lists with stack (128 x 128 of 1-byte elements on 4 warps at VEC 1, plain layout)
    moves 2 x stack x threads x blocks more L2 bytes than the same tile and warps at VEC 2, which does not
    spill; the batch hook adds the same per build (its layout included: SW_VEC 16 does not spill)."""
    from kernels.triton import transpose_spills as S

    c = {"BM": 128, "BN": 128, "WARPS": 4, "VEC": 1, "PAD": 0, "SW_VEC": 1, "PER_PHASE": 1, "MAX_PHASE": 1}
    shape = (4100, 2050)
    stack = S.stack_bytes(c, 1, False)
    assert stack > 0 and S.stack_bytes({**c, "VEC": 2}, 1, False) == 0
    blocks = -(-4100 // 128) * -(-2050 // 128)
    base = TM._base_info(c, shape, "int8")["l2_bytes"]
    assert TM.launch_info(c, shape, "int8")["l2_bytes"] - base == 2 * stack * 128 * blocks
    assert (
        TM.launch_info({**c, "VEC": 2}, shape, "int8")["l2_bytes"]
        == TM._base_info({**c, "VEC": 2}, shape, "int8")["l2_bytes"]
    )
    sw = {**c, "SW_VEC": 16, "MAX_PHASE": 8}
    cols = {k: np.array([c[k], sw[k]]) for k in c}
    batch = TM.launch_info_batch(cols, shape, "int8")["l2_bytes"]
    assert list(batch) == [
        TM.launch_info(c, shape, "int8")["l2_bytes"],
        TM.launch_info(sw, shape, "int8")["l2_bytes"],
    ]
    assert S.stack_bytes(sw, 1, False) == 0 and batch[0] > batch[1]


def test_the_spill_table_is_what_the_compiler_builds():
    """Builds recompiled here for sm_90 without a GPU (Triton 3.6.0), read as
    benchmarks/triton_transpose_spills.py reads them: spilling and clean ones, off and on the 16-element grid
    (the masks move the stack), bf16 and fp8 against the fp16 and int8 rows they share, and fp64."""
    pytest.importorskip("triton")
    import shutil
    from pathlib import Path

    import triton

    if not (Path(triton.__file__).parent / "backends/nvidia/bin/cuobjdump").exists() and not shutil.which(
        "cuobjdump"
    ):
        pytest.skip("needs Triton's cuobjdump")
    root = os.path.join(os.path.dirname(__file__), "..")
    sys.path.insert(0, os.path.join(root, "benchmarks"))
    import triton_transpose_spills as B

    from kernels.triton import transpose_spills as S

    plain = (0, 1, 1, 1)
    cases = [
        ("int8", (128, 128, 4, 1, *plain), False),
        ("int8", (128, 128, 4, 1, *plain), True),
        ("int8", (128, 128, 4, 2, *plain), False),
        ("float8_e4m3fn", (128, 128, 4, 1, *plain), True),
        ("bfloat16", (128, 128, 4, 2, *plain), False),
        ("float16", (128, 128, 4, 1, *plain), True),
        ("float64", (128, 128, 4, 1, *plain), False),
    ]
    stacks = []
    for dtype, values, grid in cases:
        _regs, stack = B.usage((dtype, values, grid))
        assert stack == S.stack_bytes(dict(zip(S.KEYS, values)), T.DTYPE_BYTES[dtype], grid), (dtype, values)
        stacks.append(stack)
    assert stacks[0] != stacks[1] and stacks[2] == 0 and min(stacks[3:]) > 0


def test_every_dtype_the_transpose_takes_has_compiled_spills():
    """Each dtype of the spec maps to an element size the table was compiled for; any other size is refused
    rather than read as "no stack"."""
    from kernels.triton import transpose_spills as S

    assert {T.DTYPE_BYTES[d] for d in TM.DTYPES} <= set(S.COMPILED)
    with pytest.raises(ValueError, match="no build of 16-byte elements"):
        S.stack_bytes({"BM": 128, "BN": 128, "WARPS": 4, "VEC": 1}, 16, False)


def test_the_tiles_loads_are_its_reads_and_its_stores_are_posted():
    """``read_bytes``: the input, once (its stores' sectors, the shared ones and any spill are the rest of
    ``l2_bytes``, posted); the batch hook states the same as the scalar one."""
    c = {**T.DEFAULTS, "BM": 32, "BN": 32, "WARPS": 8, "VEC": 1}
    shape = (3, 1500, 2222)
    info = TM.launch_info(c, shape, "int8")
    assert info["read_bytes"] == 3 * 1500 * 2222 and info["l2_bytes"] > 1.8 * info["read_bytes"]
    cols = {k: np.array([v]) for k, v in c.items()}
    batch = TM.launch_info_batch(cols, shape, "int8")
    assert float(np.asarray(batch["read_bytes"]).ravel()[0]) == info["read_bytes"]
