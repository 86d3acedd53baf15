"""cuda.core and torch's CUDA entry points mocked for the launch tests (test_cuda_launch, test_cuda_driver).

The patches go through ``autopad.cuda_runtime``: each name is bound in several of the modules its code was
split into (``cuda_compile``, ``cuda_context``, ``cuda_launch``, ``cuda_driver``), and setting it on the old
module sets it in every one of them (``autopad._facade``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from autopad import cuda_runtime as rt


class FakeCC:
    """Stands in for cuda.core: records LaunchConfigs, streams and launches."""

    def __init__(self):
        self.launches, self.configs, self.streams, self.current = [], [], [], []
        cc = self

        class Device:
            def __init__(self, d):
                self.d = d

            def set_current(self):
                cc.current.append(self.d)

            def create_stream(self, obj):
                cc.streams.append(obj)
                return ("stream", obj)

        class LaunchConfig:
            def __init__(self, grid, block, shmem_size):
                cc.configs.append((grid, block, shmem_size))
                self.args = (grid, block, shmem_size)

        self.Device, self.LaunchConfig = Device, LaunchConfig

    def launch(self, stream, cfg, kernel, *args):
        self.launches.append((stream, cfg.args, kernel, args))


def fake_cuda_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple]:
    """The body of the ``fake_cuda`` fixtures: yields (fake cuda.core, torch's mocked state, torch)."""
    torch = pytest.importorskip("torch")
    cc = FakeCC()
    state = {"dev": 0, "stream": 1234}
    monkeypatch.setattr(rt, "_cuda_core", lambda: cc)
    monkeypatch.setattr(
        rt, "_torch_hooks", lambda: (lambda: state["dev"], lambda d: state["stream"], torch.Tensor)
    )
    monkeypatch.setattr(
        rt, "_stream_for", lambda dev, ptr: rt._STREAMS.setdefault(dev, {}).setdefault(ptr, ("s", ptr))
    )
    monkeypatch.setattr(rt, "_STREAMS", {})
    rt._CURRENT.device = None
    yield cc, state, torch
    rt._CURRENT.device = None
