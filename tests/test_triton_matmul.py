"""Gluon GEMM (kernels/triton/matmul.py and its kernels): the split's re-exports and the cache key's files,
the tile schedules (numpy), sm_90 compiles of every variant (B read as [K, N], split-K, persistent: no
wgmma serialised by ptxas), the tl.dot path (its launcher and the split-K reduction run under the
interpreter), and (marked gpu) every variant against an fp64 reference on odd shapes. Legality, the
patterns and launch_info are tested in test_triton_matmul_model.py, the tile arithmetic in
test_triton_matmul_tiles.py, the launcher's arguments in test_triton_matmul_launch.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

G = pytest.importorskip("autopad.kernels.triton.matmul")

TY = {"bfloat16": "bf16", "float16": "fp16", "tf32": "fp32"}
D = G.DEFAULTS
DECODE = (128, 8192, 8192)


def test_every_name_matmul_defined_is_the_object_of_its_new_home():
    from autopad.kernels.triton import matmul_launch, matmul_tiles
    from split_checks import assert_reexported

    homes = {
        matmul_tiles: "_ARCH _EB b_kn c_bytes _cdiv tma_ok _wgmma_warps _WS_CAPTURES _ws_bytes c_bufs "
        "ws_maxnreg wgmma_read_bytes tma_wgmma_rows epilogue_rows smem_bytes",
        matmul_launch: "HAS_TRITON nvmma _REDUCE_BLOCK _aligned b_kn_tensor _SMS _sm_count run_tl",
    }
    if G.HAS_TRITON:
        homes[matmul_launch] += " matmul_gluon matmul_gluon_persistent matmul_gluon_ws matmul_gluon_pingpong"
        homes[matmul_launch] += " matmul_tl splitk_reduce"
    assert_reexported(G, homes)
    # the module-level names are SPEC's, as before (legal, launcher, ... are its bound methods)
    assert G.legal == G.SPEC.legal and G.launcher == G.SPEC.launcher and G.build == G.SPEC.build


def test_the_cache_key_hashes_every_module_of_the_spec_and_the_kernels():
    """source_hash keys the cache by SOURCE_FILES: every matmul*.py beside this spec (the modules it was split
    into and the kernels) must be listed, or a change to one would reuse timings of the old code."""
    from autopad.kernels_registry import builtin_spec, source_hash

    here = Path(G.__file__).resolve().parent
    listed = {Path(f).resolve() for f in G.SOURCE_FILES}
    assert listed == set(here.glob("matmul*.py")) and len(listed) == 7
    assert G.SPEC.SOURCE_FILES == G.SOURCE_FILES
    text = G.SPEC.cache_source()
    assert all(Path(f).read_text() in text for f in G.SOURCE_FILES)
    assert len(source_hash(builtin_spec("matmul", "triton"))) == 16


def test_check_shape_rejects_other_ranks_at_once():
    G.check_shape((4, 5, 6))
    for bad in ((4096, 4096), (2, 3, 4, 5)):
        with pytest.raises(ValueError, match=r"shape: matmul takes \(M, N, K\)"):
            G.check_shape(bad)


def _tile_offsets(tile, n_m, n_n, bm, bn, group_m):
    """Numpy copy of the kernel's ``_tile_offsets`` (grouped program order)."""
    per_group = group_m * n_n
    first_m = (tile // per_group) * group_m
    gsize = np.minimum(n_m - first_m, group_m)
    return (first_m + (tile % per_group) % gsize) * bm, ((tile % per_group) // gsize) * bn


@pytest.mark.parametrize("m,n,bm,bn", [(3000, 5000, 128, 256), (128, 8192, 128, 64), (1000, 1032, 64, 128)])
def test_grouped_order_covers_every_tile_once(m, n, bm, bn):
    n_m, n_n = -(-m // bm), -(-n // bn)
    om, on = _tile_offsets(np.arange(n_m * n_n), n_m, n_n, bm, bn, 8)
    assert len(set(zip(om.tolist(), on.tolist()))) == n_m * n_n
    assert om.max() < m and on.max() < n and om.min() == 0 and on.min() == 0


@pytest.mark.parametrize(
    "k,bk,stages,nprog,tiles",
    [(1000, 64, 3, 132, 480), (64, 64, 4, 5, 7), (8192, 128, 2, 3, 3), (100, 64, 5, 3, 8)],
)
def test_persistent_schedule_loads_each_step_once_and_in_order(k, bk, stages, nprog, tiles):
    """The persistent kernel's loops replayed (outer: tiles pid, pid + nprog, ...; inner: K steps; consumed
    step g in buffer g % STAGES; loads run over the program's steps p = g + STAGES - 1 as one sequence):
    every step is loaded once, into a buffer whose previous step has been consumed, and consumed in order,
    also when K has fewer steps than the ring (a tile's refills then reach several tiles ahead); nothing
    is left loaded at the end."""
    k_tiles = -(-k // bk)
    for pid in range(nprog):
        my = -(-(tiles - pid) // nprog)
        total = my * k_tiles

        def step(p: int, pid: int = pid) -> tuple[int, int]:
            return pid + (p // k_tiles) * nprog, p % k_tiles

        slot = {i: step(i) for i in range(stages - 1) if i < total}  # the prologue
        g, done = 0, []
        lt, lk = (stages - 1) // k_tiles, (stages - 1) % k_tiles  # the kernel's refill counters
        for t in range(my):
            for kt in range(k_tiles):
                assert slot.pop(g % stages) == (pid + t * nprog, kt)
                p = g + stages - 1
                assert (pid + lt * nprog, lk) == step(p)  # the counters are p's tile and K step
                if p < total:
                    assert p % stages not in slot  # its previous step has been consumed
                    slot[p % stages] = step(p)
                lk += 1
                if lk == k_tiles:
                    lk, lt = 0, lt + 1
                g += 1
            done.append(pid + t * nprog)
        assert not slot and done == list(range(pid, tiles, nprog))


@pytest.mark.parametrize("k,bk,s", [(8192, 64, 4), (1000, 64, 3), (4104, 128, 2)])
def test_split_k_ranges_partition_k(k, bk, s):
    k_all = -(-k // bk)
    per = -(-k_all // s)
    steps = [
        kt for split in range(s) for kt in range(split * per, split * per + min(per, k_all - split * per))
    ]
    assert steps == list(range(k_all))


def test_inputs_from_copies_nothing_for_16_bit():
    torch = pytest.importorskip("torch")
    a, b = torch.randn(5, 24).half(), torch.randn(24, 16).half()
    x = G.inputs_from(a, b)
    assert x[0] is a and x[1] is b and x.shape == (5, 16, 24) and G.alloc_output(x).shape == (5, 16)
    xf = G.inputs_from(a.float(), b.float())  # tf32 reads B as [N, K]: one transposing copy
    assert tuple(xf[1].shape) == (16, 24) and torch.equal(xf[1], b.float().t())
    ok, _ = G.check(a.double() @ b.double(), G.expected(x)[0])
    assert ok


def _compile(c, dt):
    from autopad.gluon_model import compile_sm90

    split = c["SPLIT_K"] > 1
    lay, clay = G.nvmma(c["SWIZZLE"], dt), G.nvmma(c["SWIZZLE"], "tf32" if split else dt)
    t, ct = TY[dt], "fp32" if split else TY[dt]
    b_block = f"[{c['BK']}, {c['BN']}]" if G.b_kn(dt) else f"[{c['BN']}, {c['BK']}]"
    sig = {
        "a_desc": f"tensordesc<{t}[{c['BM']}, {c['BK']}],{lay!r}>",
        "b_desc": f"tensordesc<{t}{b_block},{lay!r}>",
        "c_desc": f"tensordesc<{ct}[{c['BM']}, {c['BN']}],{clay!r}>",
        "M": "i32",
        "N": "i32",
        "K": "i32",
    }
    cx = {"STAGES": c["STAGES"], "GROUP_M": c["GROUP_M"], "B_KN": G.b_kn(dt), "num_warps": c["WARPS"]}
    if c["PERSIST"] >= 2:
        return _compile_ws(c, dt, sig, cx)
    if c["PERSIST"]:
        return compile_sm90(G.matmul_gluon_persistent, sig, cx, num_warps=c["WARPS"])
    return compile_sm90(G.matmul_gluon, sig, {**cx, "SPLIT_K": c["SPLIT_K"]}, num_warps=c["WARPS"])


@pytest.mark.parametrize(
    "dt,c,shape",
    [
        ("bfloat16", D, (4096, 4096, 4096)),
        ("bfloat16", {**D, "SWIZZLE": 64}, (4096, 4096, 4096)),
        ("float16", {**D, "BN": 128, "STAGES": 4, "SWIZZLE": 32}, (4096, 4096, 4096)),
        ("bfloat16", {**D, "BM": 64, "BN": 128, "WARPS": 4, "STAGES": 4}, (4096, 4096, 4096)),
        ("tf32", {**D, "BN": 128, "BK": 32, "STAGES": 4}, (4096, 4096, 4096)),
        ("float16", {**D, "PERSIST": 1}, (3000, 5000, 1000)),
        ("bfloat16", {**D, "BN": 128, "WARPS": 4, "STAGES": 4, "PERSIST": 1}, (8192, 8192, 8192)),
        ("bfloat16", {**D, "PERSIST": 1}, (8192, 8192, 8192)),
        ("tf32", {**D, "BN": 128, "BK": 32, "STAGES": 3, "PERSIST": 1}, (3000, 5000, 1000)),
        ("bfloat16", {**D, "SPLIT_K": 4}, DECODE),
        ("float16", {**D, "BN": 128, "WARPS": 4, "STAGES": 4, "SPLIT_K": 2}, DECODE),
        ("tf32", {**D, "BN": 128, "BK": 32, "STAGES": 4, "SPLIT_K": 2}, DECODE),
        ("bfloat16", {**D, "BK": 32, "SWIZZLE": 64, "STAGES": 4, "SPLIT_K": 2}, DECODE),  # C tile > ring
    ],
)
def test_gluon_gemm_compiles_for_sm90(dt, c, shape):
    pytest.importorskip("triton")
    assert G.legal(c, shape, dt)
    k = _compile(c, dt)
    ptx = k.asm["ptx"]
    mma = re.search(r"wgmma\.mma_async[^;]*;", ptx, re.S)
    assert mma
    # B [K, N] (16-bit) is N-major in shared memory: wgmma's last immediate (trans-b) is set. tf32 has no
    # transpose immediates (it needs K-major B): the operands end at imm-scale-b
    tail = [x.strip() for x in mma.group(0).rstrip(";").split(",")[-5:]]
    assert tail[-2:] == (["0", "1"] if G.b_kn(dt) else ["1", "1"]) and tail[-3 if G.b_kn(dt) else -1] == "1"
    assert k.metadata.shared == G.smem_bytes(c, dt)
    assert not re.search(r"\bld\.shared", ptx)  # operands reach wgmma by descriptor, not through registers
    # ptxas (Triton's own) must not serialise wgmma: the previous persistent kernel read the accumulator in
    # a branch of its K loop and got "(C7517) warpgroup.wait is injected ..." (0.64-0.75 of the plain
    # kernel on the H200)
    log = _ptxas_log(ptx)
    assert "C7517" not in log and "C7510" not in log, log


def _compile_ws(c, dt, sig, cx):
    """The warp-specialized kernels for sm_90 with the launcher's register cap (``maxnreg``, which
    autopad.gluon_model.compile_sm90 does not pass)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    fn = G.matmul_gluon_ws if c["PERSIST"] == 2 else G.matmul_gluon_pingpong
    if c["PERSIST"] == 2:
        cx = {**cx, "C_BUFS": G.c_bufs(c, dt)}
    src = GluonASTSource(fn, {**sig, **dict.fromkeys(cx, "constexpr")}, constexprs=cx)
    opts = {"num_warps": c["WARPS"], "num_stages": 3, "maxnreg": G.ws_maxnreg(c)}
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options=opts)


WS = {**D, "PERSIST": 2}
PP = {**D, "BN": 128, "WARPS": 4, "STAGES": 4, "PERSIST": 3}


@pytest.mark.parametrize(
    "dt,c,shape",
    [
        ("bfloat16", WS, (3000, 5000, 1000)),  # one C tile beside 3 stages
        ("float16", {**WS, "STAGES": 2}, (3000, 5000, 1000)),  # two C tiles beside 2 stages
        ("bfloat16", {**WS, "BN": 128, "WARPS": 4, "STAGES": 4}, (3000, 5000, 1000)),
        ("tf32", {**WS, "BN": 128, "BK": 32, "STAGES": 3}, (3000, 5000, 1000)),
        ("float16", PP, (3000, 5000, 1000)),
        ("bfloat16", {**PP, "BM": 64, "BN": 256}, (4096, 4096, 4096)),
    ],
)
def test_warp_specialized_gemm_compiles_for_sm90(dt, c, shape):
    """PERSIST 2 and 3 on sm_90: legal, shared memory as smem_bytes() charges it (ring, C tiles, barriers,
    warp_specialize's captures), the partitions' register split (setmaxnreg: 24 for the loader, the rest
    for the consumers, within the 64K file), wgmma not serialised by ptxas, no spills."""
    pytest.importorskip("triton")
    assert G.legal(c, shape, dt)
    k = _compile(c, dt)
    ptx = k.asm["ptx"]
    assert k.metadata.shared == G.smem_bytes(c, dt) <= 232448
    # operands reach wgmma by descriptor; the only shared loads are the workers' reads of their captured
    # arguments (scalar, from the region after the barriers)
    assert "wgmma.mma_async" in ptx and not re.search(r"\bld\.shared\.v", ptx)
    assert len(re.findall(r"\bld\.shared", ptx)) < 40
    cap = G.ws_maxnreg(c)
    assert f".maxnreg {cap}" in ptx
    regs = {int(r) for r in re.findall(r"setmaxnreg\.(?:inc|dec)\.sync\.aligned\.u32\s+(\d+)", ptx)}
    assert 24 in regs
    consumers = c["WARPS"] * (2 if c["PERSIST"] == 3 else 1)
    top = max(regs - {256}) if c["PERSIST"] == 3 else max(regs)
    assert top * 32 * consumers + 24 * 128 <= 65536 and top >= 200  # the accumulator's 128 and room
    log = _ptxas_log(ptx)
    assert "C7517" not in log and "C7510" not in log, log
    assert " 0 bytes spill stores" in log, log


def test_warp_specialized_legality():
    big = (3000, 5000, 1000)
    assert G.c_bufs(WS, "bfloat16") == 1 and G.c_bufs({**WS, "STAGES": 2}, "bfloat16") == 2
    assert G.smem_bytes(WS, "bfloat16") == 3 * (128 + 256) * 64 * 2 + 128 * 256 * 2 + 32 + 24 + 116
    assert not G.legal({**WS, "STAGES": 4}, big, "bfloat16")  # 4 stages + one C tile > 227 KB
    assert not G.legal(WS, (1024, 1024, 1024), "bfloat16")  # 32 tiles: fewer than SMs
    assert not G.legal({**WS, "SPLIT_K": 2}, big, "bfloat16")
    assert not G.legal({**WS, "PATH": 1}, big, "bfloat16")
    assert not G.legal(WS, (3000, 5001, 1000), "bfloat16")  # TMA stride alignment
    assert not G.legal({**PP, "WARPS": 8}, big, "bfloat16")  # ping-pong consumers are one warpgroup
    assert not G.legal({**PP, "BN": 256}, big, "bfloat16")  # 128 x 256 in one warpgroup: 256 registers
    assert G.legal(PP, big, "float16") and G.legal({**PP, "BM": 64, "BN": 256}, big, "float16")
    assert G.c_bufs(PP, "float16") == 2 and G.ws_maxnreg(PP) == G.ws_maxnreg(WS) == 168
    assert G.ws_maxnreg({**WS, "WARPS": 4}) == 256  # 4 + 1 warps: two warpgroups
    # the model sees one program per SM walking its tiles, as for PERSIST 1: 480 tiles on 132 programs,
    # 4 rounds, the last one 84 programs busy (the tensor cores' 480 / 528); the rest is the plain kernel's
    for c in (WS, PP, {**WS, "PERSIST": 1}):
        base = G.launch_info({**c, "PERSIST": 0}, big, "bfloat16")
        info = G.launch_info(c, big, "bfloat16")
        tiles = 24 * (5000 // c["BN"] + 1)
        per = -(-tiles // 132)
        assert info["blocks"] == 132 and base["blocks"] == tiles and info["tiles_per_block"] == per
        assert info["extra_wavefronts"] == per * base["extra_wavefronts"]
        assert info["flops_efficiency"] == pytest.approx(tiles / (per * 132))
        moved = ("blocks", "tiles_per_block", "extra_wavefronts", "flops_efficiency", "smem_bytes")
        assert {k: v for k, v in info.items() if k not in moved} == {
            k: v for k, v in base.items() if k not in moved
        }


def _ws_replay(tiles, nprog, k_tiles, stages, consumers):
    """Replays the warp-specialized ring (PERSIST 2: one consumer; 3: two taking alternate tiles and
    turns) as an interleaving of the partitions, each step of each partition allowed only when its mbarrier
    wait would pass by parity (a wait for parity p passes when completions % 2 != p), and checks that
    every such pass is a real one (the completion awaited has happened, not one two phases back)."""
    rng = np.random.default_rng(tiles * 31 + nprog)
    for pid in range(min(nprog, 3)):
        my = -(-(tiles - pid) // nprog)
        ready, empty, turn = [0] * stages, [0] * stages, [0, 0]
        loaded = {}  # slot -> step
        lg = 0  # loader's next step
        cons = [{"t": c, "kt": 0, "state": "turn", "pending": None} for c in range(consumers)]
        stored = []
        for _ in range(10**6):
            moves = []
            if lg < my * k_tiles:
                moves.append("L")
            moves += [c for c in range(consumers) if cons[c]["t"] < my]
            if not moves:
                break
            m = moves[rng.integers(len(moves))]
            if m == "L":
                s, i = lg % stages, lg // stages
                if empty[s] % 2 != (i & 1) ^ 1:  # the loader's wait passes
                    assert empty[s] >= i  # real: step lg - stages has been released
                    assert s not in loaded
                    loaded[s] = lg
                    ready[s] += 1
                    lg += 1
                continue
            c = cons[m]
            t = c["t"]
            if c["state"] == "turn":
                if consumers == 1:
                    c["state"] = "mma"
                else:
                    p = ((t // 2) & 1) ^ (1 - m)
                    if turn[m] % 2 != p:
                        assert turn[m] == t // 2 + m  # the other consumer finished tile t - 1's loop
                        c["state"] = "mma"
                continue
            if c["state"] == "mma":
                g = t * k_tiles + c["kt"]
                s, i = g % stages, g // stages
                if ready[s] % 2 != i & 1:
                    assert ready[s] == i + 1 and loaded[s] == g  # real: step g itself is in slot s
                    if c["pending"] is not None:  # wgmma of the previous step retires: its slot freed
                        ps = c["pending"] % stages
                        del loaded[ps]
                        empty[ps] += 1
                    c["pending"] = g
                    c["kt"] += 1
                    if c["kt"] == k_tiles:
                        if consumers == 2:
                            turn[1 - m] += 1
                        ps = c["pending"] % stages  # wait(0): the last step retires
                        del loaded[ps]
                        empty[ps] += 1
                        c["pending"] = None
                        stored.append(pid + t * nprog)
                        c["t"], c["kt"], c["state"] = t + consumers, 0, "turn"
        assert lg == my * k_tiles and not loaded
        assert sorted(stored) == list(range(pid, tiles, nprog))


@pytest.mark.parametrize("consumers", [1, 2])
@pytest.mark.parametrize(
    "tiles,nprog,k_tiles,stages", [(480, 132, 16, 3), (7, 2, 1, 4), (9, 2, 2, 3), (11, 3, 5, 2), (5, 1, 3, 5)]
)
def test_warp_specialized_ring_replayed(tiles, nprog, k_tiles, stages, consumers):
    _ws_replay(tiles, nprog, k_tiles, stages, consumers)


def _ptxas_log(ptx: str) -> str:
    from triton.backends.nvidia.compiler import get_ptxas

    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "k.ptx"
        src.write_text(ptx)
        r = subprocess.run([get_ptxas(90).path, "-v", "--gpu-name=sm_90a", str(src), "-o", str(src) + ".o"],
                           capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stderr + r.stdout


def _compile_tl(c, dt, aligned=True):
    """PATH 1 for sm_90; ``aligned``: the ints and pointers carry Triton's divisibility-by-16 hints, as a
    launch with 16-byte-aligned rows gets them."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    t = TY[dt]
    sig = {"a_ptr": f"*{t}", "b_ptr": f"*{t}", "c_ptr": f"*{t}", "M": "i32", "N": "i32", "K": "i32"}
    cx = {"BM": c["BM"], "BN": c["BN"], "BK": c["BK"], "GROUP_M": c["GROUP_M"], "TF32": dt == "tf32",
          "B_KN": G.b_kn(dt)}  # fmt: skip
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(6)} if aligned else {}
    src = ASTSource(G.matmul_tl, {**sig, **dict.fromkeys(cx, "constexpr")}, constexprs=cx, attrs=attrs)
    opts = {"num_warps": c["WARPS"], "num_stages": c["STAGES"]}
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options=opts)


P1 = {**D, "PATH": 1}


@pytest.mark.parametrize(
    "dt,c", [("bfloat16", P1), ("float16", {**P1, "BN": 128, "STAGES": 4, "WARPS": 4}),
             ("tf32", {**P1, "BN": 128, "BK": 32}),
             ("bfloat16", {**P1, "BM": 64, "BN": 64, "BK": 128, "STAGES": 2})]
)  # fmt: skip
def test_tl_dot_path_compiles_for_sm90_with_the_modelled_ring(dt, c):
    """PATH 1 on sm_90: wgmma fed by cp.async (16-byte rows), shared memory = the STAGES-deep ring that
    smem_bytes() charges; with unaligned rows it still compiles (unpipelined: one stage, no cp.async)."""
    pytest.importorskip("triton")
    k = _compile_tl(c, dt)
    ptx = k.asm["ptx"]
    assert "wgmma.mma_async" in ptx and "cp.async.cg.shared.global" in ptx
    assert k.metadata.shared == G.smem_bytes(c, dt)
    assert "C7517" not in _ptxas_log(ptx)
    if dt != "tf32":
        ku = _compile_tl(c, dt, aligned=False)
        assert "cp.async" not in ku.asm["ptx"] and ku.metadata.shared < G.smem_bytes(c, dt)


_INTERP = r"""
import os
os.environ["TRITON_INTERPRET"] = "1"
import torch
import triton.runtime.interpreter as interp

# Triton 3.6's interpreter turns a scalar argument into a 1-element array and int() of that fails under
# numpy >= 2.3 ("only 0-dimensional arrays ..."), so a loop bounded by a run-time K cannot be interpreted;
# the compiled kernel is unaffected. Index through the element instead.
_patch = interp._patch_lang_tensor


def _patch_index(tensor, scope):
    _patch(tensor, scope)
    scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))


interp._patch_lang_tensor = _patch_index
from autopad.kernels.triton import matmul as G
for dt in ("float16", "tf32"):
    for (m, n, k) in [(1, 8, 16), (33, 40, 24), (17, 24, 40)]:
        x = G.make_inputs((m, n, k), dt, "cpu", seed=m)
        out = G.alloc_output(x).fill_(float("nan"))
        G.run_tl(x, out, bm=16, bn=16, bk=16, warps=4)
        ok, why = G.check(out, G.expected(x))
        assert ok, ((m, n, k), dt, why)
# PATH 1 through the spec's own build and launcher, on shapes TMA refuses (N, K not multiples of 8)
c = dict(G.DEFAULTS, PATH=1, BM=64, BN=64, BK=32, STAGES=2, WARPS=4)
for dt in ("float16", "tf32"):
    for (m, n, k) in [(1, 1, 1), (37, 13, 77), (70, 65, 33)]:
        assert G.legal(c, (m, n, k), dt), (dt, m, n, k)
        tdt = torch.float16 if dt == "float16" else torch.float32
        x = G.inputs_from(torch.randn(m, k).to(tdt), torch.randn(k, n).to(tdt))  # tf32: B made [N, K]
        out = G.alloc_output(x).fill_(float("nan"))
        G.launcher(G.build(c, dt), (m, n, k), dt)(x, out)
        ok, why = G.check(out, G.expected(x))
        assert ok, ("PATH 1", (m, n, k), dt, why)
m, n, s, bm = 37, 24, 3, 16
mp = -(-m // bm) * bm
ws = torch.randn(s * mp, n)
out = torch.full((m, n), float("nan"))
G.splitk_reduce[(-(-m * n // 1024),)](ws, out, m * n, mp * n, s, 1024)
assert torch.allclose(out, ws.view(s, mp, n)[:, :m].sum(0), atol=1e-5)
print("OK")
"""


def test_tl_dot_path_baseline_and_split_k_reduce_under_interpreter():
    pytest.importorskip("triton")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    r = subprocess.run([sys.executable, "-c", _INTERP], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr[-3000:]


GPU_SHAPES = [(1, 8, 16), (33, 40, 24), (1000, 1032, 520), (257, 384, 4104), (1000, 40, 512), (37, 13, 77),
              (999, 1001, 515)]  # fmt: skip


def _variants(dt):
    if dt == "tf32":
        base = {**D, "BN": 128, "BK": 32, "STAGES": 4}
        return [base, {**base, "SPLIT_K": 2}, {**base, "BM": 64, "WARPS": 4, "PERSIST": 1},
                {**base, "PATH": 1}]  # fmt: skip
    small = {**D, "BM": 64, "BN": 64, "WARPS": 4, "STAGES": 4}
    return [D, {**D, "SWIZZLE": 64}, {**D, "SPLIT_K": 4}, {**D, "BN": 128, "SPLIT_K": 2},
            {**D, "PERSIST": 1}, {**small, "PERSIST": 1}, P1,
            {**small, "PATH": 1, "BK": 32, "STAGES": 3}]  # fmt: skip


@pytest.mark.gpu
@pytest.mark.parametrize("dt", G.DTYPES)
def test_gluon_gemm_matches_fp64_on_gpu(dt):
    """Every variant on odd shapes (legal() relaxed for split-K and persistence, which refuse small
    problems as not worth it, so that their index arithmetic is exercised on ragged edges; PATH 1 also on
    the shapes TMA refuses)."""
    import torch

    for c in _variants(dt):
        built = G.build(c, dt)
        for i, shape in enumerate(GPU_SHAPES):
            base = {**c, "SPLIT_K": 1, "PERSIST": 0}
            if not G.legal(base, shape, dt):
                continue
            for dist in ("uniform", "skewed"):
                x = G.make_inputs(shape, dt, "cuda", seed=7 + i, dist=dist)
                out = G.alloc_output(x).fill_(float("nan"))
                G.run(built, x, out)
                torch.cuda.synchronize()
                ok, why = G.check(out, G.expected(x))
                assert ok, (dt, c, shape, dist, why)
                out.fill_(float("nan"))
                G.run_tl(x, out, bm=64, bn=64, bk=32, stages=3, warps=4)
                ok, why = G.check(out, G.expected(x))
                assert ok, ("tl.dot", dt, shape, dist, why)


WS_GPU_SHAPES = [(1000, 1032, 520), (2056, 4104, 72), (3000, 5000, 1000), (257, 384, 4104)]
WS_VARIANTS = [WS, {**WS, "STAGES": 2}, {**WS, "BN": 128, "WARPS": 4, "STAGES": 4}, PP,
               {**PP, "BM": 64, "BN": 256}]  # fmt: skip


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ["bfloat16", "float16"])
def test_warp_specialized_gemm_matches_torch_on_gpu(dt):
    """PERSIST 2 and 3 through the spec's launcher (the JIT's first call, then the fast launcher) against
    the fp64 product and torch, on shapes with M not a multiple of BM, few K steps (72: 2 per tile, fewer
    than the ring) and 3000x5000x1000 (480 tiles of 128x256 over the SMs); legal() is relaxed on the
    smaller ones (persistence refuses fewer tiles than SMs as not worth it)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs an NVIDIA GPU")
    for c in WS_VARIANTS:
        built = G.build(c, dt)
        for i, shape in enumerate(WS_GPU_SHAPES):
            assert G.legal({**c, "PERSIST": 0}, shape, dt), (c, shape)
            x = G.make_inputs(shape, dt, "cuda", seed=11 + i, dist="skewed" if i % 2 else "uniform")
            go = G.launcher(built, shape, dt)
            for _ in range(2):  # the JIT's call, then the compiled kernel's own launcher
                out = G.alloc_output(x).fill_(float("nan"))
                go(x, out)
                torch.cuda.synchronize()
                ok, why = G.check(out, G.expected(x))
                assert ok, (dt, c, shape, why)
            ref = (x[0].float() @ x[1].float()).to(out.dtype)
            torch.testing.assert_close(out, ref, rtol=2e-2, atol=2e-2 * float(ref.abs().max()))
