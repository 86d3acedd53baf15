"""Transpose: legality, model, sm_90 compile of the Gluon kernel, interpreter run of the tl.trans baseline,
and (marked gpu) the Gluon kernel against torch on odd shapes and every dtype."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

T = pytest.importorskip("autopad.kernels.triton.transpose")

SIG_TYPES = {
    "float64": "fp64",
    "float32": "fp32",
    "float16": "fp16",
    "bfloat16": "bf16",
    "float8_e4m3fn": "fp8e4nv",
    "int8": "i8",
}


def test_spec_shapes():
    info = T.launch_info(T.DEFAULTS, (3, 100, 70), "float32")
    assert info["blocks"] == 2 * 2 * 3 and info["threads"] == 256
    assert T.traffic((100, 70), "float16")["bytes"] == 2 * 100 * 70 * 2


CASES = [
    ("float32", {**T.DEFAULTS}),
    ("float32", {**T.DEFAULTS, "PAD": 4}),
    ("float32", {**T.DEFAULTS, "SW_VEC": 4, "MAX_PHASE": 8}),
    (
        "float32",
        {"BM": 32, "BN": 128, "VEC": 2, "WARPS": 4, "PAD": 2, "SW_VEC": 1, "PER_PHASE": 1, "MAX_PHASE": 1},
    ),
    ("float64", {**T.DEFAULTS, "VEC": 2, "SW_VEC": 2, "PER_PHASE": 1, "MAX_PHASE": 4}),
    ("float16", {**T.DEFAULTS, "VEC": 8, "PAD": 8}),
    (
        "bfloat16",
        {"BM": 128, "BN": 64, "VEC": 8, "WARPS": 8, "PAD": 0, "SW_VEC": 8, "PER_PHASE": 1, "MAX_PHASE": 8},
    ),
    (
        "int8",
        {"BM": 128, "BN": 128, "VEC": 16, "WARPS": 8, "PAD": 16, "SW_VEC": 1, "PER_PHASE": 1, "MAX_PHASE": 1},
    ),
    ("float8_e4m3fn", {**T.DEFAULTS, "BM": 128, "BN": 128, "VEC": 16, "SW_VEC": 16, "MAX_PHASE": 4}),
]


@pytest.mark.parametrize("dtype,c", CASES)
def test_gluon_compiles_for_sm90_with_the_layout_footprint(dtype, c):
    pytest.importorskip("triton")
    from autopad.gluon_model import compile_sm90

    assert T.legal(c, (4096, 4096), dtype), T.legal(c, (4096, 4096), dtype).reason
    b = T.build(c, dtype)
    t = SIG_TYPES[dtype]
    k = compile_sm90(
        b["kernel"],
        {"x_ptr": f"*{t}", "y_ptr": f"*{t}", "M": "i32", "N": "i32"},
        {"BM": c["BM"], "BN": c["BN"], "L_IN": b["L_IN"], "L_OUT": b["L_OUT"], "SMEM": b["SMEM"]},
        num_warps=c["WARPS"],
    )
    assert k.metadata.shared == T.smem_bytes(c, dtype)
    assert "st.shared" in k.asm["ptx"] and "ld.shared" in k.asm["ptx"]


_INTERP = r"""
import os
os.environ["TRITON_INTERPRET"] = "1"
import torch
from autopad.kernels.triton import transpose as T
for shape in [(1, 1), (31, 33), (33, 31), (2, 37, 45)]:
    for dtype in ("float32", "float16", "int8"):
        x = T.make_inputs(shape, dtype, "cpu", seed=len(shape))
        out = T.alloc_output(x)
        out.view(torch.uint8).fill_(0xA5)
        T.run_tl(x, out, bm=32, bn=32, warps=4)
        ok, why = T.check(out, T.reference(x))
        assert ok, (shape, dtype, why)
print("OK")
"""


def test_tl_trans_baseline_under_interpreter():
    pytest.importorskip("triton")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    r = subprocess.run([sys.executable, "-c", _INTERP], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr[-3000:]


GPU_SHAPES = [(1, 1), (31, 33), (33, 31), (1000, 37), (4097, 8191), (3, 129, 65)]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", T.DTYPES)
def test_gluon_matches_torch_on_gpu(dtype):
    import torch

    vec = max(1, 16 // {"float64": 8, "float32": 4}.get(dtype, 2 if "16" in dtype else 1))
    first = T.textbook((64, 64), dtype)
    configs = [first, {**first, "PAD": 0, "SW_VEC": vec, "MAX_PHASE": 4}]
    for c in configs:
        assert T.legal(c, (64, 64), dtype), (c, T.legal(c, (64, 64), dtype).reason)
        built = T.build(c, dtype)
        for i, shape in enumerate(GPU_SHAPES):
            for dist in ("uniform", "skewed"):
                x = T.make_inputs(shape, dtype, "cuda", seed=100 + i, dist=dist)
                out = T.alloc_output(x)
                out.view(torch.uint8).fill_(0xFF)  # poison: NaN / -1 in every dtype
                T.run(built, x, out)
                torch.cuda.synchronize()
                ok, why = T.check(out, T.reference(x))
                assert ok, (c, shape, dist, why)
                out.view(torch.uint8).fill_(0xFF)
                T.run_tl(x, out)
                ok, why = T.check(out, T.reference(x))
                assert ok, ("tl.trans", shape, dist, why)


# the smallest pads the packed read-back allows, with narrow vectors, on the odd shapes
SMALL_PADS = [
    ("float16", {"BM": 64, "BN": 64, "VEC": 1, "WARPS": 4, "PAD": 2}),
    ("bfloat16", {"BM": 128, "BN": 32, "VEC": 2, "WARPS": 4, "PAD": 2}),
    ("int8", {"BM": 128, "BN": 128, "VEC": 1, "WARPS": 4, "PAD": 4}),
    ("int8", {"BM": 128, "BN": 128, "VEC": 4, "WARPS": 8, "PAD": 4}),
    ("float8_e4m3fn", {"BM": 128, "BN": 64, "VEC": 2, "WARPS": 4, "PAD": 4}),
]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,c", SMALL_PADS)
def test_smallest_legal_pads_match_torch_on_gpu(dtype, c):
    import torch

    c = {**T.DEFAULTS, **c}
    assert T.legal(c, (4097, 8191), dtype), T.legal(c, (4097, 8191), dtype).reason
    built = T.build(c, dtype)
    for i, shape in enumerate(GPU_SHAPES):
        x = T.make_inputs(shape, dtype, "cuda", seed=300 + i)
        out = T.alloc_output(x)
        out.view(torch.uint8).fill_(0xFF)
        T.run(built, x, out)
        torch.cuda.synchronize()
        ok, why = T.check(out, T.reference(x))
        assert ok, (c, shape, why)


_FAULT = r"""
import sys
import torch
from autopad.kernels.triton import transpose as T
dtype, pad = sys.argv[1], int(sys.argv[2])
c = {**T.DEFAULTS, "BM": 64, "BN": 64, "VEC": 1, "WARPS": 4, "PAD": pad}
assert not T.legal(c, (256, 256), dtype)
x = T.make_inputs((256, 256), dtype, "cuda", seed=1)
out = T.alloc_output(x)
T.run(T.build(c, dtype), x, out)  # legal() refuses it; built anyway, to show why
torch.cuda.synchronize()
print("RAN")
"""


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,pad", [("float16", 1), ("int8", 1), ("int8", 2)])
def test_the_refused_pads_do_fault_on_gpu(dtype, pad):
    """Why ``legal`` refuses a pad off the read-back's 4-byte grid: built anyway (in a child process, whose
    CUDA context the fault poisons), it faults with a misaligned address."""
    r = subprocess.run(
        [sys.executable, "-c", _FAULT, dtype, str(pad)], capture_output=True, text=True, timeout=300
    )
    assert r.returncode != 0 and "RAN" not in r.stdout, r.stdout[-2000:]
    assert "misaligned address" in r.stderr, r.stderr[-3000:]


@pytest.mark.parametrize("dtype,load", [("bfloat16", "ld.shared.v2.b16"), ("int8", "ld.shared.b32")])
def test_narrow_types_read_back_whole_words(dtype, load):
    """The column read of 1- and 2-byte tiles fetches 4-byte words (pack(dtype) columns per thread)."""
    pytest.importorskip("triton")
    from autopad.gluon_model import compile_sm90, vector_width

    c = {**T.textbook((64, 64), dtype), "PAD": 0, "SW_VEC": 16 // T.DTYPE_BYTES[dtype], "MAX_PHASE": 4}
    lin, lout = T.register_layouts(c, dtype)
    assert vector_width(lout, (c["BM"], c["BN"]), T.layout(c, dtype)) * T.DTYPE_BYTES[dtype] == 4
    b = T.build(c, dtype)
    t = SIG_TYPES[dtype]
    k = compile_sm90(
        b["kernel"],
        {"x_ptr": f"*{t}", "y_ptr": f"*{t}", "M": "i32", "N": "i32"},
        {"BM": c["BM"], "BN": c["BN"], "L_IN": b["L_IN"], "L_OUT": b["L_OUT"], "SMEM": b["SMEM"]},
        num_warps=c["WARPS"],
    )
    assert load in k.asm["ptx"]


def test_spec_on_the_triton_base():
    """The port onto autopad.TritonKernel: inputs, output, reference and the exact check come from SPEC."""
    torch = pytest.importorskip("torch")
    from autopad.bases import TritonKernel
    from autopad.kernels_registry import builtin_spec

    assert isinstance(T.SPEC, TritonKernel) and builtin_spec("transpose", "triton").DEFAULTS == T.DEFAULTS
    (x,) = T.make_inputs((3, 5, 7), "bfloat16", "cpu", seed=1)
    assert x.shape == (3, 5, 7) and x.dtype == torch.bfloat16
    ins = T.inputs_from(x)
    assert ins.shape == (3, 5, 7) and ins[0] is x
    out = T.alloc_output(ins)
    assert out.shape == (3, 7, 5)
    (ref,) = T.expected(ins)
    assert T.check(ref.clone(), ref)[0] and not T.check(torch.zeros_like(ref), ref)[0]
    T.check_shape((4, 5))
    for bad in [(5,), (0, 3), (70000, 2, 2)]:
        with pytest.raises(ValueError, match="shape"):
            T.check_shape(bad)


@pytest.mark.gpu
def test_launcher_matches_torch_through_the_jit_once_then_the_compiled_launcher(monkeypatch):
    """Fresh inputs every call: the first goes through Triton's JIT, the next ones through the compiled
    kernel's own launcher (FastLaunch), and an input off the 16-byte grid through the JIT again (which
    specialises the pointer on it); every output equal to torch's."""
    import torch

    from autopad.triton_launch import FastLaunch

    jit_calls = []
    real_first = FastLaunch.first

    def first(self: FastLaunch, *varying: object) -> None:
        jit_calls.append(len(varying))
        real_first(self, *varying)

    monkeypatch.setattr(FastLaunch, "first", first)
    c = T.textbook((64, 64), "float16")
    go = T.launcher(T.build(c, "float16"), (3, 129, 65), "float16")
    for _ in range(3):
        x = torch.randn(3, 129, 65, device="cuda").half()
        out = torch.full((3, 65, 129), float("nan"), device="cuda", dtype=torch.half)
        go(T.inputs_from(x), out)
        torch.cuda.synchronize()
        assert torch.equal(out, x.transpose(-1, -2))
    assert go.fast.ready and len(jit_calls) == 1
    x = torch.randn(3 * 129 * 65 + 1, device="cuda").half()[1:].view(3, 129, 65)  # 2 bytes off the grid
    out = torch.full((3, 65, 129), float("nan"), device="cuda", dtype=torch.half)
    go(T.inputs_from(x), out)
    torch.cuda.synchronize()
    assert torch.equal(out, x.transpose(-1, -2)) and len(jit_calls) == 2


def test_the_spec_loads_triton_only_when_a_kernel_is_asked_for():
    """Ranking the Gluon transpose needs numpy only: importing the spec leaves triton unloaded (0.2-0.3 s of
    a first model-only ranking), and the kernels come when first asked for, under their own names."""
    pytest.importorskip("triton")
    code = (
        "import sys\n"
        "from autopad.kernels.triton import transpose as T\n"
        "from autopad.search import rank\n"
        "assert T.HAS_TRITON\n"
        "assert len(rank(T.SPEC, (256, 256), 'float16')) > 100\n"
        "assert 'triton' not in sys.modules, 'the spec or the ranking loaded triton'\n"
        "k = T.transpose_gluon\n"
        "assert type(k).__name__ == 'GluonJITFunction' and k.__name__ == 'transpose_gluon'\n"
        "assert T.SPEC.KERNEL() is k and T.build(T.DEFAULTS, 'float32')['kernel'] is k\n"
        "tl = T.transpose_tl\n"
        "assert type(tl).__name__ == 'JITFunction' and tl.__name__ == 'transpose_tl'\n"
        "assert k.src.startswith('def transpose_gluon(') and tl.src.startswith('def transpose_tl(')\n"
        "print('OK')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr[-3000:]


MISCOMPILED = {"BM": 128, "BN": 128, "VEC": 1, "WARPS": 4, "PAD": 0, "SW_VEC": 4, "PER_PHASE": 1}

_MISCOMPILED_RUN = r"""
import json, sys
import torch
from autopad.kernels.triton import transpose as T
c = {**T.DEFAULTS, **json.loads(sys.argv[2])}
assert not T.legal(c, (4100, 2050), sys.argv[1])
x = T.make_inputs((4100, 2050), sys.argv[1], "cuda", seed=1)
out = T.alloc_output(x)
T.run(T.build(c, sys.argv[1]), x, out)  # legal() refuses it; built anyway, to show why
torch.cuda.synchronize()
print("RAN")
"""


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["int8", "float8_e4m3fn"])
def test_the_refused_one_byte_tiles_do_fault_on_gpu(dtype):
    """Built anyway (in a child process, whose CUDA context the fault poisons), the refused tile faults."""
    import json

    c = {**MISCOMPILED, "MAX_PHASE": 8}
    r = subprocess.run(
        [sys.executable, "-c", _MISCOMPILED_RUN, dtype, json.dumps(c)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode != 0 and "RAN" not in r.stdout, r.stdout[-2000:]
    assert "illegal memory access" in r.stderr, r.stderr[-3000:]


def test_trust_note_states_runs_201_to_218():
    """The Gluon transpose's trust caveat quotes the H100 studies (every candidate timed, eleven shapes in
    four dtypes), the H200's of the same shapes and run 215's four more, all scored while the model's last
    term was chosen, and run 217's six new shapes, timed after it (and again by run 218); its ranges, counts
    and rank correlations are recomputed here from the rows."""
    root = os.path.join(os.path.dirname(__file__), "..")
    sys.path.insert(0, os.path.join(root, "benchmarks"))
    from pathlib import Path

    import model_only_report as mo

    def figures(paths: dict) -> tuple[list[float], list[float]]:
        shapes = [s for s in mo.load_shapes(paths) if s.kernel == "transpose"]
        figs = [mo.figures(s, mo.predicted(s)) for s in shapes]
        return [f["pick_over_best"] for f in figs], [f["spearman"] for f in figs]

    def stated(text: str, picks: list[float], rho: list[float]) -> None:
        text = " ".join(text.split()).replace("the measured best, ", "")
        within = sum(p < 1.10 for p in picks)
        assert f"{min(picks):.2f}-{max(picks):.2f}x" in text
        assert f"within 10% in {within}, rank correlation {min(rho):.2f}-{max(rho):.2f}" in text

    base = Path(root) / "benchmarks/results/h100/2026-12-06"
    paths = {r: base / r / "study/quality_rows.csv.gz" for r in ("run201", "run202", "run203", "run206")}
    picks, rho = figures(paths)
    note = T.SPEC.trust_note((4097, 8191), "float16")
    assert len(picks) == 11 and "on 11 shapes" in note
    stated(note[: note.index("on an H200")], picks, rho)
    h200 = Path(root) / "benchmarks/results/h200/2026-12-06/run212"
    picks, rho = figures(
        {"run212": h200 / "gt/quality_rows.csv.gz", "run212b": h200 / "gt2/quality_rows.csv.gz"}
    )
    assert len(picks) == 11  # the same eleven shapes, on the H200
    tail = note[note.index("on an H200") : note.index("4 more shapes")]
    assert "the same 11 shapes" in tail
    stated(tail, picks, rho)
    # H100 run 215: four more shapes, every candidate timed
    run215 = Path(root) / "benchmarks/results/h100/2026-12-07/run215/gt/quality_rows.csv.gz"
    picks, rho = figures({"run215": run215})
    assert len(picks) == 4
    stated(note[note.index("4 more shapes") : note.index("6 new shapes")], picks, rho)
    # H100 run 217: six new shapes, every candidate timed after the partial round's last change
    run217 = Path(root) / "benchmarks/results/h100/2026-12-07/run217/gt/quality_rows.csv.gz"
    picks, rho = figures({"run217": run217})
    assert len(picks) == 6
    stated(note[note.index("6 new shapes") : note.index("timed again")], picks, rho)
    # H100 run 218: the same six, timed again on another H100
    run218 = Path(root) / "benchmarks/results/h100/2026-12-07/run218/gt/quality_rows.csv.gz"
    picks, rho = figures({"run218": run218})
    assert len(picks) == 6
    stated(note[note.index("timed again") :], picks, rho)
