"""autopad.ops.peer (torch.mm as the floor of ops.matmul) without a GPU: the verdict from timings (margin,
the small-call cut, the kernel timed twice), the cases that time nothing, and the runner's use of a verdict
(torch.mm runs, the fp32 TF32 guard, decisions() reporting it), with the timings and the kernel mocked."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from autopad.ops import peer


def _timer(times):
    """A fake timer: each callable returns its name; the times are consumed per name in order."""
    calls = []

    def timer(fn):
        name = fn()
        calls.append(name)
        return times[name].pop(0)

    return timer, calls


@pytest.mark.parametrize(
    "kernel, torch_ms, use",
    [((0.070, 0.069), 0.055, True),  # bf16 3000x5000x1000 on the H200: kernel 0.79 of cuBLAS
     ((0.100, 0.100), 0.0985, False),  # 1.5% faster: inside the margin, the kernel stays
     ((0.100, 0.100), 0.097, True),  # 3% faster
     ((0.100, 0.096), 0.095, False),  # the kernel's better time counts: 1% apart
     ((0.180, 0.181), 0.181, False)],
)  # fmt: skip
def test_torch_mm_is_taken_only_when_it_measured_clearly_faster(kernel, torch_ms, use, monkeypatch):
    monkeypatch.delenv(peer.ENV, raising=False)
    timer, calls = _timer({"kernel": list(kernel), "torch": [torch_ms]})
    v = peer.judge(lambda: "kernel", lambda: "torch", "first-use", timer=timer)
    assert v.use_peer is use
    assert calls == ["kernel", "torch", "kernel"]  # the kernel first and last
    assert v.kernel_ms == min(kernel) and v.peer_ms == torch_ms
    assert ("torch.mm (cuBLAS):" if use else "autopad's kernel:") in v.text()


def test_small_calls_are_not_compared(monkeypatch):
    monkeypatch.delenv(peer.ENV, raising=False)
    timer, calls = _timer({"kernel": [0.012], "torch": [0.006]})
    v = peer.judge(lambda: "kernel", lambda: "torch", "first-use", timer=timer)
    assert not v.use_peer and calls == ["kernel"] and v.peer_ms is None
    assert "under 30 us" in v.text()


def test_peer_on_times_even_where_tuning_in_line_is_off(monkeypatch):
    monkeypatch.setenv(peer.ENV, "on")
    timer, calls = _timer({"kernel": [0.07, 0.07], "torch": [0.05]})
    assert peer.judge(lambda: "kernel", lambda: "torch", "offline", timer=timer).use_peer
    assert calls == ["kernel", "torch", "kernel"]


@pytest.mark.parametrize("env, mode, why", [("off", "first-use", "AUTOPAD_PEER=off"),
                                             ("auto", "never", "AUTOPAD_TUNE=never"),
                                             ("", "offline", "AUTOPAD_TUNE=offline")])  # fmt: skip
def test_nothing_is_timed_where_the_user_asked_for_no_inline_gpu_work(env, mode, why, monkeypatch):
    monkeypatch.setenv(peer.ENV, env)

    def timer(fn):
        raise AssertionError("timed")

    v = peer.judge(lambda: "kernel", lambda: "torch", mode, timer=timer)
    assert not v.use_peer and why in v.why and why in v.text()


def test_a_timing_that_fails_leaves_the_kernel_and_says_why(monkeypatch):
    monkeypatch.delenv(peer.ENV, raising=False)

    def timer(fn):
        raise RuntimeError("CUDA out of memory")

    v = peer.judge(lambda: "kernel", lambda: "torch", "first-use", timer=timer)
    assert not v.use_peer and "out of memory" in v.why


def test_a_bad_switch_value_is_an_error_naming_the_allowed_ones(monkeypatch):
    monkeypatch.setenv(peer.ENV, "sometimes")
    with pytest.raises(ValueError, match="AUTOPAD_PEER: 'sometimes' is not 'auto', 'on' or 'off'"):
        peer.setting()


# ---- the runner's side (torch on CPU; the kernel and the verdict mocked) ---------------------------------


@pytest.fixture
def fake_matmul(monkeypatch):
    torch = pytest.importorskip("torch")
    from autopad import ops
    from autopad.ops import policy, runner

    ops.reset()
    ran = []

    def mm_run(ins, out):
        ran.append(ins[0].dtype)
        out.copy_(ins[0] @ ins[1])

    spec = SimpleNamespace(
        NAME="matmul", BACKEND="cuda",
        impl=SimpleNamespace(alloc_output=lambda ins, c: torch.empty(ins[0].shape[0], ins[1].shape[1],
                                                                     dtype=ins[0].dtype)),
    )  # fmt: skip

    def bound(plan, device):
        b = runner.Bound(spec, plan.shape, plan.dtype, plan.dist, device, policy.Decision((), "tuned"),
                         None, mm_run)  # fmt: skip
        runner._BOUND[runner._bound_key(b)] = b  # what decisions() reports
        return b

    monkeypatch.setattr(runner, "bound", bound)
    yield SimpleNamespace(ran=ran, runner=runner, torch=torch)
    ops.reset()


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_the_runner_runs_torch_mm_where_the_verdict_says_so(fake_matmul, dtype, monkeypatch):
    torch, runner = fake_matmul.torch, fake_matmul.runner
    judged = []

    def judge(bd, fn, a, b):
        judged.append(bd.shape)
        return peer.Verdict(True, 0.0698, 0.0548, "timed")

    monkeypatch.setattr(runner, "_judge", judge)
    monkeypatch.setattr(peer, "tf32_allowed", lambda: False)
    dt = getattr(torch, dtype)
    a, b = torch.randn(6, 4).to(dt), torch.randn(4, 5).to(dt)
    for _ in range(2):
        assert torch.equal(runner.matmul_impl(a, b), torch.mm(a, b))
    assert fake_matmul.ran == [] and judged == [(6, 5, 4)]  # judged once; the kernel never ran
    (row,) = [d for d in runner.decisions() if d["kernel"] == "matmul"]
    assert row["runs"].startswith("torch.mm (cuBLAS): kernel 0.0698 ms, torch.mm (cuBLAS) 0.0548 ms")


def test_fp32_keeps_full_precision_when_tf32_is_allowed_after_the_verdict(fake_matmul, monkeypatch):
    torch, runner = fake_matmul.torch, fake_matmul.runner
    monkeypatch.setattr(runner, "_judge", lambda bd, fn, a, b: peer.Verdict(True, 0.2, 0.1, "timed"))
    allowed = [False]
    monkeypatch.setattr(peer, "tf32_allowed", lambda: allowed[0])
    a, b = torch.randn(6, 4), torch.randn(4, 5)
    runner.matmul_impl(a, b)
    assert fake_matmul.ran == []
    allowed[0] = True  # torch.mm would now round its inputs to TF32: autopad's fp32 kernel runs
    assert torch.allclose(runner.matmul_impl(a, b), a @ b, atol=1e-6) and fake_matmul.ran == [torch.float32]


def test_cpu_operands_and_tf32_are_judged_without_timing(fake_matmul, monkeypatch):
    torch, runner = fake_matmul.torch, fake_matmul.runner
    monkeypatch.setattr(peer, "judge", lambda *a, **k: pytest.fail("timed"))
    a, b = torch.randn(6, 4), torch.randn(4, 5)
    assert torch.allclose(runner.matmul_impl(a, b), a @ b, atol=1e-6)
    (row,) = [d for d in runner.decisions() if d["kernel"] == "matmul"]
    assert row["runs"] == "autopad's kernel (operands not on a CUDA device)"


def _cuda_like(torch, contiguous=True, dtype=None):
    return SimpleNamespace(is_cuda=True, dtype=dtype or torch.float32, is_contiguous=lambda: contiguous)


@pytest.mark.parametrize("case, why", [("pitched", "contiguous operands only"),
                                       ("deterministic", "deterministic algorithms"),
                                       ("tf32", "TF32 allowed")])  # fmt: skip
def test_no_timing_where_the_floor_would_change_what_the_caller_asked_for(
    fake_matmul, monkeypatch, case, why
):
    torch, runner = fake_matmul.torch, fake_matmul.runner
    monkeypatch.setattr(peer, "judge", lambda *a, **k: pytest.fail("timed"))
    monkeypatch.setattr(peer, "tf32_allowed", lambda: case == "tf32")
    monkeypatch.setattr(torch, "are_deterministic_algorithms_enabled", lambda: case == "deterministic")
    a, b = _cuda_like(torch, contiguous=case != "pitched"), _cuda_like(torch)
    v = runner._judge(None, None, a, b)
    assert not v.use_peer and why in v.why


def test_an_explicit_backend_gets_no_floor_and_forget_drops_the_verdicts(fake_matmul, monkeypatch):
    torch, runner = fake_matmul.torch, fake_matmul.runner
    monkeypatch.setattr(runner, "_judge", lambda bd, fn, a, b: peer.Verdict(True, 0.2, 0.1, "timed"))
    a, b = torch.randn(6, 4).bfloat16(), torch.randn(4, 5).bfloat16()
    runner.matmul_impl(a, b, "triton")
    assert fake_matmul.ran == [torch.bfloat16] and not runner.PEERS  # the kernel the caller named
    runner.matmul_impl(a, b)
    assert len(runner.PEERS) == 1 and fake_matmul.ran == [torch.bfloat16]  # auto: torch.mm
    runner.forget("transpose")
    assert len(runner.PEERS) == 1
    runner.forget("matmul")
    assert not runner.PEERS


def test_tf32_allowed_reads_either_of_torchs_switches():
    torch = pytest.importorskip("torch")
    m = torch.backends.cuda.matmul
    if not hasattr(m, "fp32_precision"):
        pytest.skip("this torch has the older switch only")
    before = m.fp32_precision
    try:
        m.fp32_precision = "tf32"  # the newer API: the older getter raises from here on
        assert peer.tf32_allowed()
        m.fp32_precision = "ieee"
        assert not peer.tf32_allowed()
        torch.set_float32_matmul_precision("high")
        assert peer.tf32_allowed()
        m.allow_tf32 = False  # the older API
        assert not peer.tf32_allowed()
    finally:
        torch.set_float32_matmul_precision("highest")
        m.fp32_precision = before


def test_a_floored_shape_hands_a_transposed_weight_to_torch_mm_without_a_copy(fake_matmul, monkeypatch):
    torch, runner = fake_matmul.torch, fake_matmul.runner
    monkeypatch.setattr(runner, "_judge", lambda bd, fn, a, b: peer.Verdict(True, 0.07, 0.05, "timed"))
    copies = []
    monkeypatch.setattr(
        runner, "transpose_impl", lambda x, backend: copies.append(x.shape) or x.t().contiguous()
    )
    gen = torch.Generator().manual_seed(0)
    a, w = torch.randn(6, 4, generator=gen).bfloat16(), torch.randn(5, 4, generator=gen).bfloat16()
    assert torch.equal(runner.matmul_impl(a, w.t()), torch.mm(a, w.t().contiguous()))
    assert copies == [(5, 4)]  # the first call makes B [K, N] (the kernel's contract) and judges
    for _ in range(2):
        assert torch.equal(runner.matmul_impl(a, w.t()), torch.mm(a, w.t()))
    assert copies == [(5, 4)] and fake_matmul.ran == []  # then torch.mm reads the view as it is
