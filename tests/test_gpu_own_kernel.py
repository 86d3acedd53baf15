"""The user's own kernel end to end on a GPU: README's CUDA example, the Kernel Tuner entry, the Triton
hook, and a script with no ``if __name__ == "__main__":`` guard (the worker must never re-run it)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import autopad

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parent.parent


def test_readme_cuda_example_is_tuned_checked_and_faster_than_unpadded(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOPAD_CACHE_DIR", str(tmp_path))
    import own_kernel_example as ex

    res = autopad.tune(ex.Transpose, (4097, 8191), progress=False)
    assert res.mode == "measured" and res.best.measured is not None
    measured = [c for c in res.candidates if c.measurement is not None]
    assert all(c.correct for c in measured), [c.error for c in measured if not c.correct]
    unpadded = next(c for c in res.candidates if "unpadded" in c.roles)
    assert res.best.measured < unpadded.measured_ms


def test_kernel_tuner_entry_measures_and_checks_the_answer(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOPAD_CACHE_DIR", str(tmp_path))
    import test_kt

    m, n = 1000, 3001
    x = np.random.default_rng(1).standard_normal((m, n)).astype(np.float32)
    res = autopad.tune_kernel(
        "transpose",
        test_kt.SOURCE,
        (n, m),
        [np.zeros((n, m), np.float32), x, np.int32(m), np.int32(n)],
        test_kt.PARAMS,
        grid_div_x=["block_size_x"],
        grid_div_y=["block_size_x"],
        answer=[x.T.copy(), None, None, None],
        layout=autopad.tile("block_size_x", "block_size_x", pad="PAD"),
        pattern=test_kt._pattern,
        strategy="brute_force",
        progress=False,
    )
    assert res.mode == "measured"
    assert all(c.correct for c in res.candidates)  # brute force: every candidate ran and matched


def test_triton_autotune_runs_with_the_hook():
    import test_triton_hook as th
    import torch
    import triton
    import triton.language as tl

    @triton.autotune(configs=th.CONFIGS, key=["M", "N"], prune_configs_by=th._hook(top_k=2))
    @triton.jit
    def transpose(x, y, M, N, BM: tl.constexpr, BN: tl.constexpr, PAD: tl.constexpr):
        rm = tl.program_id(0) * BM + tl.arange(0, BM)
        rn = tl.program_id(1) * BN + tl.arange(0, BN)
        mask = (rm[:, None] < M) & (rn[None, :] < N)
        t = tl.load(x + rm[:, None] * N + rn[None, :], mask=mask)
        tl.store(y + rn[None, :] * M + rm[:, None], t, mask=mask)

    x = torch.randn(999, 1537, device="cuda")
    y = torch.empty(1537, 999, device="cuda")
    transpose[lambda meta: (triton.cdiv(999, meta["BM"]), triton.cdiv(1537, meta["BN"]))](x, y, 999, 1537)
    torch.cuda.synchronize()
    assert torch.equal(y, x.t())
    # the kernel ignores PAD, so the measured best is noise among the model's top 2, scored as Triton scores
    # them (the kernel's arguments, tensors included: their bytes set the DRAM time, which ties the padded
    # configs): it must score no worse than the second best, and never be an unpadded (conflicted) one
    hook = th._hook(top_k=2)
    meta = {"x": x, "y": y, "M": 999, "N": 1537}
    score = {id(c): hook["perf_model"](**meta, **c.all_kwargs()) for c in th.CONFIGS}
    second = sorted(score.values())[1]
    best = transpose.best_config
    assert best.kwargs["PAD"] != 0
    assert hook["perf_model"](**meta, **best.all_kwargs()) <= second * (1 + 1e-12)
    # the hook planned with this card's profile, the one tune() takes (h100 on an H100 SXM, sm_90 on an H200):
    # its estimates are those of a model given that profile by name
    from autopad.arch import arch_for_device
    from autopad.triton_hook import ConfigModel

    cc = "".join(map(str, torch.cuda.get_device_capability(x.device)))
    want = arch_for_device(cc, torch.cuda.get_device_name(x.device))
    named = ConfigModel(
        autopad.tile("BM", "BN", pad="PAD"),
        th._pattern,
        lambda m: (triton.cdiv(m["M"], m["BM"]), triton.cdiv(m["N"], m["BN"])),
        dtype="float32",
        arch=want,
    )
    assert all(
        hook["perf_model"](**meta, **c.all_kwargs()) == named.predict_ms({**meta, **c.all_kwargs()})
        for c in th.CONFIGS
    )


def test_an_unguarded_script_tunes_and_exits(tmp_path):
    """Most user scripts have no __main__ guard; the benchmark worker must not import (re-run) them."""
    script = tmp_path / "user_script.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys
            sys.path.insert(0, {str(ROOT / "tests")!r})
            import torch, autopad
            from own_kernel_example import Transpose

            class Mine(Transpose):      # defined in __main__: travels to the worker by value
                NAME = "mine"

            x = torch.randn(777, 1333, device="cuda")
            res = autopad.tune(Mine, (777, 1333), cache=False, budget=4, progress=False)
            print("PICK", res.mode, res.best.constants, flush=True)
            """
        )
    )
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=str(ROOT)
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.count("PICK measured") == 1  # ran once: the worker did not re-run the script


def test_readme_gluon_example_is_tuned_and_checked(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOPAD_CACHE_DIR", str(tmp_path))
    import own_kernel_gluon_example as ex

    res = autopad.tune(ex.GluonTranspose, (4097, 8191), progress=False)
    assert res.mode == "measured" and res.best.measured is not None
    measured = [c for c in res.candidates if c.measurement is not None]
    assert all(c.correct for c in measured), [c.error for c in measured if not c.correct]
