"""Tests for autopad/validate_cuda.py: the launcher ncu profiles and the stride timing, with a fake torch
and a patched autopad.cuda_runtime (moved from tests/test_validate.py)."""

from __future__ import annotations

import json
import sys

import numpy as np

from autopad import validate_cuda as vc
from autopad import validate_probes as vp


# ------------------------------------------------------------------------------------------- launcher
class _FakeTensor:
    def __init__(self, arr):
        self.arr = arr

    def to(self, device):
        return self

    def data_ptr(self):
        return 1 << 20

    def stride(self, dim):
        return self.arr.strides[dim] // self.arr.itemsize

    def element_size(self):
        return self.arr.itemsize


class _FakeEvent:
    clock = 0.0

    def __init__(self, enable_timing=False):
        self.t = 0.0

    def record(self):
        _FakeEvent.clock += 1.0
        self.t = _FakeEvent.clock

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return other.t - self.t


def _fake_torch():
    import types

    cuda = types.SimpleNamespace(
        current_device=lambda: 0,
        synchronize=lambda: None,
        get_device_properties=lambda d: types.SimpleNamespace(multi_processor_count=132),
        Event=_FakeEvent,
    )
    return types.SimpleNamespace(
        cuda=cuda,
        from_numpy=_FakeTensor,
        zeros=lambda n, dtype=None, device=None: _FakeTensor(np.zeros(n, np.int32)),
        empty=lambda n, dtype=None, device=None: _FakeTensor(np.zeros(n, np.float32)),
        int32=np.int32,
        float32=np.float32,
    )


def test_launcher_launches_each_probe_once_in_order(tmp_path, monkeypatch):
    from autopad import cuda_runtime

    monkeypatch.setitem(sys.modules, "torch", _fake_torch())
    loaded, calls = [], []
    monkeypatch.setattr(
        cuda_runtime, "load_kernel", lambda src, name, defines, dev: loaded.append(name) or name
    )
    monkeypatch.setattr(
        cuda_runtime, "launch", lambda k, g, b, args, shmem_bytes=0: calls.append((k, g, b, args))
    )
    probes = vp.generate_probes(seed=0, n_random=0)[::37]
    ppath, lpath = tmp_path / "p.json", tmp_path / "n.txt"
    ppath.write_text(json.dumps(probes))
    assert vc.launch_probes(ppath, lpath, budget_s=60) == len(probes) == int(lpath.read_text())
    assert sorted(set(loaded)) == sorted({vc.kernel_name(p["op"], p["access_bytes"]) for p in probes})
    for i, (p, (k, grid, block, args)) in enumerate(zip(probes, calls)):
        assert (k, grid, block) == (vc.kernel_name(p["op"], p["access_bytes"]), 1, 32)
        assert int(args[0]) == (1 << 20) + i * 128 and args[2] == 0  # row i of the (n, 32) int32 matrix
    assert vc.launch_probes(ppath, lpath, budget_s=-1) == 0, "an exhausted budget launches nothing"


def test_time_strides_with_fake_events(monkeypatch):
    from autopad import cuda_runtime

    monkeypatch.setitem(sys.modules, "torch", _fake_torch())
    calls = []
    monkeypatch.setattr(cuda_runtime, "load_kernel", lambda src, name, defines, dev: name)
    monkeypatch.setattr(
        cuda_runtime, "launch", lambda k, g, b, args, shmem_bytes=0: calls.append((g, b, args))
    )
    times = vc.time_strides([1, 32], iters=64, reps=4)
    assert times == [1.0, 1.0]
    assert len(calls) == 2 * (3 + 4) and calls[0][:2] == (132 * 8, 256)
    assert [int(a) for a in calls[-1][2][1:]] == [32, 64]


def test_launcher_passes_global_offsets_and_source_to_new_probes(tmp_path, monkeypatch):
    from autopad import cuda_runtime

    monkeypatch.setitem(sys.modules, "torch", _fake_torch())
    sys.modules["torch"].uint8 = np.uint8
    loaded, calls = {}, []
    monkeypatch.setattr(
        cuda_runtime, "load_kernel", lambda src, name, defines, dev: loaded.setdefault(name, src) and name
    )
    monkeypatch.setattr(
        cuda_runtime, "launch", lambda k, g, b, args, shmem_bytes=0: calls.append((k, g, b, args))
    )
    probes = vp.generate_new_probes(seed=0, n_random=0)[::5] + vp.generate_probes(seed=0, n_random=0)[:2]
    ppath, lpath = tmp_path / "p.json", tmp_path / "n.txt"
    ppath.write_text(json.dumps(probes))
    assert vc.launch_probes(ppath, lpath, budget_s=60) == len(probes)
    assert vc._address_matrix(probes).shape == (len(probes), 64)
    for i, (p, (k, grid, block, args)) in enumerate(zip(probes, calls)):
        assert (k, grid, block) == (vc.probe_kernel_name(p), 1, 32)
        assert int(args[0]) == (1 << 20) + i * 256, "rows of 64 int32: 32 shared + 32 global offsets"
        assert len(args) == (4 if "form" in p else 3)
    for name, src in loaded.items():
        assert name in src and ("asm volatile" in src)
