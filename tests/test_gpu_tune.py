"""The real thing on a GPU: tune() end to end, the ops, and fault isolation (skipped without a GPU)."""

from __future__ import annotations

import broken_kernel
import pytest

import autopad
from autopad.bench import WorkerBenchmarker

pytestmark = pytest.mark.gpu


def test_tune_transpose_measures_and_picks_a_correct_fast_layout():
    res = autopad.tune("transpose", (4096, 4096), "float32", backend="cuda", top_k=3, progress=False)
    assert res.mode == "measured" and res.device.get("name")
    assert res.best.measured is not None
    measured = [c for c in res.candidates if c.measurement is not None]
    assert all(c.correct for c in measured), [c.error for c in measured if not c.correct]
    unpadded = next(c for c in measured if "unpadded" in c.roles)
    assert res.best.measured <= unpadded.measured_ms * 1.02
    again = autopad.tune("transpose", (4096, 4096), "float32", backend="cuda", top_k=3, progress=False)
    assert again.cache_hit and again.mode == res.mode and again.best.constants == res.best.constants
    # planned with this card's profile: h100 on an H100 SXM, sm_90 on an H200 (autopad.arch.arch_for_device)
    from autopad.arch import arch_for_device

    assert res.arch == arch_for_device(res.device["cc"], res.device["name"]), (res.arch, res.device)


def test_faulting_hanging_and_wrong_candidates_never_win_and_tuning_goes_on():
    bench = WorkerBenchmarker(timeout_s=20, compile_timeout_s=300)
    res = autopad.tune(
        broken_kernel, (1 << 20,), "float32", top_k=6, benchmarker=bench, progress=False, cache=False
    )
    by_mode = {c.constants["MODE"]: c for c in res.candidates}
    assert res.best.constants == {"MODE": 0} and by_mode[0].correct
    assert by_mode[1].error.startswith("fault") and "misaligned" in by_mode[1].error.lower()
    assert by_mode[2].error.startswith("fault")
    assert by_mode[3].error.startswith("timeout")
    assert by_mode[4].error.startswith("wrong result")
    assert by_mode[5].error.startswith("compile")
    # and this process's own CUDA context is untouched
    import torch

    x = torch.ones(4, device="cuda")
    assert float((x * 2).sum()) == 8.0


@pytest.mark.parametrize("shape", [(1, 1), (31, 33), (1000, 37), (3, 257, 129)])
def test_ops_transpose_matches_torch(shape, monkeypatch):
    import torch

    monkeypatch.setenv("AUTOPAD_TUNE", "never")  # the model's pick: no tuning inside a unit test
    x = torch.randn(shape, device="cuda")
    assert torch.equal(autopad.ops.transpose(x), x.transpose(-1, -2).contiguous())


def test_ops_histogram_and_matmul_match_torch(monkeypatch):
    import torch

    monkeypatch.setenv("AUTOPAD_TUNE", "never")
    x = torch.randint(0, 256, (100_003,), device="cuda", dtype=torch.int32)
    assert torch.equal(autopad.ops.histogram(x, 256).long(), torch.bincount(x, minlength=256))
    a = torch.randn(257, 129, device="cuda")
    b = torch.randn(129, 65, device="cuda")
    ref = a.double() @ b.double()
    err = ((autopad.ops.matmul(a, b).double() - ref).norm() / ref.norm()).item()
    assert err < 1e-5


def test_ops_reject_bad_tensors():
    import torch

    with pytest.raises(ValueError, match="x: autopad.ops runs on CUDA tensors"):
        autopad.ops.transpose(torch.ones(4, 4))
    y = torch.randn(4, 6, device="cuda")
    assert torch.equal(autopad.ops.transpose(y.t()), y)  # any strides: a non-contiguous input is copied
    with pytest.raises(ValueError, match="bins"):
        autopad.ops.histogram(torch.ones(4, device="cuda", dtype=torch.int32), 0)


@pytest.mark.parametrize("shape", [(256, 128, 64), (1000, 136, 200)])
def test_ops_matmul_bf16_through_the_triton_gemm_matches_torch(shape, monkeypatch):
    import torch

    monkeypatch.setenv("AUTOPAD_TUNE", "never")
    m, k, n = shape
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    got = autopad.ops.matmul(a, b)
    ref = a.float() @ b.float()
    assert got.shape == (m, n) and got.dtype == torch.bfloat16
    err = ((got.float() - ref).norm() / ref.norm()).item()
    assert err < 1e-2, err


def test_time_budget_caps_the_repeats_of_a_slow_candidate():
    from autopad.bench import BenchJob, measure_local, spec_ref
    from autopad.kernels_registry import builtin_spec

    spec = builtin_spec("transpose", "cuda")
    c = dict(spec.DEFAULTS)
    job = BenchJob(
        spec_ref(spec), (("a", c),), (4096, 4096), "float32", reps=30, options={"time_budget_ms": 0.01}
    )
    ((m, fatal),) = list(measure_local(job))
    assert m.correct and not fatal and m.runs == 3
    job = BenchJob(spec_ref(spec), (("a", c),), (4096, 4096), "float32", reps=30)
    ((m, _),) = list(measure_local(job))
    assert m.runs == 30
