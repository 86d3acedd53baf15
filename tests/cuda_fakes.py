"""cuda.core and torch's CUDA entry points mocked for the launch tests (test_cuda_launch, test_cuda_driver,
test_histogram_weighted).

Each name is patched in the one module that defines it, which is where every reader looks it up:
``cuda_compile._cuda_core`` (read there, by ``cuda_context`` and by ``cuda_launch``),
``cuda_context._torch_hooks`` (by ``cuda_launch`` and ``cuda_driver``), ``cuda_context._stream_for`` and
``cuda_context._STREAMS`` (by ``cuda_launch``). ``autopad.cuda_runtime`` only re-exports these names: a patch
there would reach none of that code.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from autopad import cuda_compile, cuda_context


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
    monkeypatch.setattr(cuda_compile, "_cuda_core", lambda: cc)
    monkeypatch.setattr(
        cuda_context, "_torch_hooks", lambda: (lambda: state["dev"], lambda d: state["stream"], torch.Tensor)
    )
    streams: dict = {}
    monkeypatch.setattr(
        cuda_context, "_stream_for", lambda dev, ptr: streams.setdefault(dev, {}).setdefault(ptr, ("s", ptr))
    )
    monkeypatch.setattr(cuda_context, "_STREAMS", streams)
    cuda_context._CURRENT.device = None
    yield cc, state, torch
    cuda_context._CURRENT.device = None
