"""kernels/cuda/histogram_launch.py: the launcher's launches in order and which overlap the kernel before
them (recorded, no GPU), an input view off 16 bytes copied, the workspace made once per device and size."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from autopad.kernels.cuda import histogram as H
from autopad.kernels.cuda import histogram_launch as HL

S = H.SPEC


def test_launcher_zeroes_then_overlaps_each_pass_and_not_the_reduce(monkeypatch):
    """The order of the launches a call makes, and which carry the overlap attribute: hist_zero first
    (plain), every pass overlapping the kernel before it (it waits before adding to out), the 16-bit
    path's reduce in plain order (it reads the workspace the pass wrote)."""
    made, fired = {}, []

    def fake_launch_fn(kernel, grid, block, smem, overlap=False):
        made[kernel] = overlap
        return lambda args: fired.append((kernel, args[1] if kernel == "zero" else args[-2]))

    # the launcher reads these in histogram_launch.py
    monkeypatch.setattr(HL, "launch_fn", fake_launch_fn)
    monkeypatch.setattr(HL, "_sm_count", lambda: 4)
    monkeypatch.setattr(HL, "_sm90", lambda: True)
    monkeypatch.setattr(HL, "_aligned", lambda x: x)
    c = dict(H.DEFAULTS, BINS_PER_PASS=1024)
    built = H.Built(("main", "zero"), c, "int32")
    S.launcher(built, (1000, 2500), "int32")(("x",), "out")
    assert made == {"zero": False, "main": True}
    assert [(k, int(a)) for k, a in fired] == [("zero", 2500), ("main", 0), ("main", 1024), ("main", 2048)]
    fired.clear()
    c16 = H.presets("int32", 65536)["c16"]
    built16 = H.Built(("main16", "reduce", "zero"), c16, "int32")
    monkeypatch.setattr(HL.Built, "workspace", lambda self, dev, words: "ws")
    S.launcher(built16, (1000, 65536), "int32")((SimpleNamespace(device="cpu"),), "out")
    assert made["main16"] is True and made["reduce"] is False
    assert [k for k, _ in fired] == ["zero", "main16", "reduce"]
    monkeypatch.setattr(HL, "_sm90", lambda: False)  # before sm_90 the wait is no wait: no overlap
    made.clear()
    S.launcher(H.Built(("main", "zero"), c, "int32"), (1000, 2500), "int32")
    assert made == {"zero": False, "main": False}


def test_a_view_off_16_bytes_is_copied_and_the_workspace_is_made_once():
    torch = pytest.importorskip("torch")
    x = torch.arange(64, dtype=torch.int32)
    assert HL._aligned(x) is x
    off = x[1:]  # 4 bytes on: copied into a fresh (aligned) block, same values
    got = HL._aligned(off)
    assert got is not off and got.data_ptr() % 16 == 0 and torch.equal(got, off)
    built = HL.Built(("main", "zero"), dict(H.DEFAULTS), "int32")
    ws = built.workspace("cpu", 100)
    assert ws.dtype == torch.int32 and ws.numel() == 100 and built.workspace("cpu", 100) is ws
    assert built.workspace("cpu", 101) is not ws
