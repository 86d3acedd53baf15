"""The CLI's report (autopad.report) and progress lines (autopad.cli_progress), without a terminal."""

from __future__ import annotations

import io
import sys
import time
import warnings

import pytest

from autopad import cli_progress, report
from autopad.predict import Prediction
from autopad.results import Best, CandidateResult, Measurement, TuneResult

SECONDS = (("dram_s", 2e-6), ("l2_s", 1e-7), ("smem_s", 4e-6), ("flops_s", 0.0), ("issue_s", 0.0))
TERMS = (
    *SECONDS,
    ("tiles_s", 0.0),
    ("mem_efficiency", 0.85),
    ("wave_factor", 1.03),
    ("resident_blocks", 8.0),
)


def cand(pad: int, roles=(), measurement=None, layout=None) -> CandidateResult:
    p = Prediction(4.4e-6, "smem", 32 if pad == 0 else 1, 1, 1.0, 4096, TERMS)
    return CandidateResult({"PAD": pad}, layout or f"pad {pad}", p, tuple(roles), measurement)


def result(cands, mode="model-only", **kw) -> TuneResult:
    best = Best({"PAD": 1}, "pad 1", 4.4e-6, None)
    return TuneResult(
        "transpose", "cuda", (64, 64), "float32", "sm_90", mode, "msg", best, tuple(cands), **kw
    )


def test_shown_keeps_measured_baselines_and_the_pick():
    cands = [
        cand(2),
        cand(1),
        cand(3),
        cand(4, measurement=Measurement("PAD=4", True, 0.1)),
        cand(0, ["unpadded"]),
    ]
    listed, hidden = report.shown(cands, {"PAD": 1}, limit=1)
    assert [c.constants["PAD"] for c in listed] == [2, 1, 4, 0] and hidden == 1
    assert report.shown(cands, {"PAD": 1}, limit=None) == (cands, 0)


def test_terms_in_microseconds_with_what_scaled_them():
    line = report.format_terms(cand(0).prediction)
    assert line.startswith("us: dram 2  l2 0.1  smem 4  flops 0")
    assert (
        "bound: smem" in line and "mem eff 0.85" in line and "waves x1.03" in line and "8 blocks/SM" in line
    )
    assert report.format_terms(Prediction(1e-6, "dram", 1, 1, 1.0, 0)) == "(no terms recorded)"


def test_report_text_escapes_what_files_carry():
    evil = "pad\x1b[31m red\n#define X"
    text = report.report_text(result([cand(1, layout=evil)]), [cand(1, layout=evil)], first_line="backend: x")
    assert "\x1b" not in text and "\\x1b[31m" in text
    assert text.splitlines()[0] == "backend: x" and "pick: pad 1  PAD=1" in text
    assert all(not ln.startswith("#define") for ln in text.splitlines())


def test_unknown_hidden_count_on_a_cache_hit():
    text = report.report_text(result([cand(1)]), [cand(1)], hidden=None)
    assert "not cached (--all re-ranks them)" in text


def test_report_dict_has_the_terms_and_the_choice():
    d = report.report_dict(result([cand(1)]), [cand(1)], backend={"asked": "auto"}, hidden=3, trust="t")
    assert d["candidates"][0]["terms"]["smem_s"] == 4e-6 and d["candidates_left_out"] == 3
    assert d["backend_choice"] == {"asked": "auto"} and d["trust"] == "t" and d["shape"] == [64, 64]


def test_trust_only_for_model_only_and_never_failing(monkeypatch):
    assert report.trust_statement(result([cand(1)], mode="measured")) is None
    fake = type(sys)("autopad.trust")
    fake.statement = lambda kernel, backend, dtype, arch="?": f"  {kernel} {backend}\n{dtype} as {arch} "
    monkeypatch.setitem(sys.modules, "autopad.trust", fake)
    import autopad

    monkeypatch.setattr(autopad, "trust", fake, raising=False)
    res = result([cand(1)])
    # the profile the answer was ranked with is passed on (an h100 answer reads the H100 rows ranked so)
    assert report.trust_statement(res) == f"transpose cuda float32 as {res.arch}"
    fake.statement = lambda kernel, backend, dtype: f"{kernel} alone"  # one taking no profile still speaks
    assert report.trust_statement(res) == "transpose alone"
    fake.statement = lambda *a: 1 / 0
    assert report.trust_statement(result([cand(1)])) is None


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_activity_spins_and_keeps_other_text_whole(monkeypatch):
    tty = FakeTTY()
    monkeypatch.setattr(sys, "stderr", tty)
    with cli_progress.activity("ranking", delay_s=0.0):
        time.sleep(0.35)
        print("autopad: a note", file=sys.stderr)
        warnings.warn("cache file is corrupt\nsecond line", stacklevel=1)
        time.sleep(0.25)
    out = tty.getvalue()
    assert sys.stderr is tty
    assert "autopad: ranking (0 s)" in out
    assert "\rautopad: a note\n" in out.replace(" " * len("| autopad: ranking (0 s)"), "")
    assert "autopad: warning: cache file is corrupt second line\n" in out
    assert out.endswith("\r")  # the line is cleared at the end


def test_activity_stops_when_another_line_takes_over(monkeypatch):
    tty = FakeTTY()
    monkeypatch.setattr(sys, "stderr", tty)
    with cli_progress.activity("ranking", delay_s=0.0):
        time.sleep(0.25)
        sys.stderr.write("\rautopad: measuring [####] 1/4")
        mark = len(tty.getvalue())
        time.sleep(0.3)
    assert "ranking" not in tty.getvalue()[mark:]


def test_activity_off_is_silent(monkeypatch):
    tty = FakeTTY()
    monkeypatch.setattr(sys, "stderr", tty)
    with cli_progress.activity("ranking", enabled=False):
        time.sleep(0.05)
    assert tty.getvalue() == ""


@pytest.mark.parametrize("with_tqdm", [False, True])
def test_bar(monkeypatch, with_tqdm):
    if with_tqdm:
        pytest.importorskip("tqdm")
    else:
        monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm -> ImportError
    tty = FakeTTY()
    monkeypatch.setattr(sys, "stderr", tty)
    with cli_progress.Bar(3, "autopad pretune") as bar:
        bar.update(1, 3, "item one")
        warnings.warn("something odd", stacklevel=1)
        bar.update(3, 3, "")
    out = tty.getvalue()
    assert "autopad pretune" in out and "autopad: warning: something odd\n" in out
    assert ("/3" in out) if with_tqdm else ("[####################] 3/3" in out)  # tqdm draws at most 10/s
    quiet = io.StringIO()
    monkeypatch.setattr(sys, "stderr", quiet)
    with cli_progress.Bar(3, "x") as bar:  # not a terminal: nothing drawn
        bar.update(2)
    assert quiet.getvalue() == ""


def test_terms_say_when_the_streams_were_combined_as_a_queue():
    """The original transpose path states ``serial_phases``: its prediction is a queue of resident blocks,
    not the sum rule the verbose header states, and its line says so; the vector path's does not."""
    from autopad.kernels.cuda import transpose as T

    from autopad.arch import get_arch
    from autopad.predict import predict_arrays
    from autopad.predict_result import predictions
    from autopad.search import score_candidates
    from autopad.spec import KernelSpec

    shape, dt = (8192, 8192), "float32"
    cs = [dict(T.DEFAULTS, SCALAR_EDGE=s, TILE_M=64, TILE_N=64, THREADS=256, VEC=4) for s in (1, 0)]
    lays = [T.layout(c, dt) for c in cs]
    wave, ideal = score_candidates(KernelSpec(T), cs, lays, dt, None, get_arch("sm_90"))
    infos = [T.launch_info(c, shape, dt) for c in cs]
    assert [i["serial_phases"] for i in infos] == [1.0, 0.0]
    preds = predictions(predict_arrays(infos, T.traffic(shape, dt), wave, ideal, "sm_90", lays), wave, ideal)
    assert "queued" in report.format_terms(preds[0]) and "queued" not in report.format_terms(preds[1])


def test_trust_adds_the_specs_note_for_a_shape_its_figures_do_not_cover():
    """The Gluon GEMM where TMA is refused runs PATH 1 only, which the H200 studies did not measure: the
    model-only trust line says so, with the H100 figures; on a shape TMA takes it adds nothing."""
    import autopad.trust

    best = Best({"PATH": 1}, "path 1", 1e-4, None)
    odd = TuneResult("matmul", "triton", (2048, 1536, 2049), "bfloat16", "sm_90", "model-only", "m", best, ())
    even = TuneResult(
        "matmul", "triton", (2048, 1536, 2048), "bfloat16", "sm_90", "model-only", "m", best, ()
    )
    base = " ".join(autopad.trust.statement("matmul", "triton", "bfloat16").split())
    assert report.trust_statement(even) == base
    text = report.trust_statement(odd)
    assert text.startswith(base) and "PATH 1" in text and "the model-only pick was" in text


def test_the_gluon_transposes_trust_line_carries_its_h100_studies():
    """The Gluon transpose's caveat (``trust_note``, a module-level name as the registry's spec exposes it)
    reaches the model-only trust line: no H200 study covers the kernel, so its own H100 figures follow."""
    best = Best({"BM": 64}, "pad 4", 1e-5, None)
    res = TuneResult("transpose", "triton", (4100, 2050), "int8", "sm_90", "model-only", "m", best, ())
    text = report.trust_statement(res)
    assert "no recorded study covers transpose [triton] int8" in text
    from autopad.kernels.triton import transpose as T

    note = T.SPEC.trust_note((4100, 2050), "int8")
    assert "on an NVIDIA H100" in text and note in " ".join(text.split())
