"""autopad/bench_local.py, the worker's side, without a GPU: outputs are poisoned with a pattern no correct
kernel leaves, and a worker that cannot load its spec says so once, as fatal."""

from __future__ import annotations

import queue

import pytest

from autopad.bench_job import BenchJob
from autopad.bench_local import _child, _zero_, poison


def test_poison_fills_floats_with_nan_and_ints_with_a5_bytes():
    torch = pytest.importorskip("torch")
    f, i = torch.zeros(8), torch.zeros(4, dtype=torch.int32)
    poison((f, i))
    assert torch.isnan(f).all()
    assert (i == int.from_bytes(b"\xa5" * 4, "little", signed=True)).all()
    strided = torch.zeros(4, 4)[:, 1]  # not contiguous: filled element by element
    poison(strided)
    assert torch.isnan(strided).all()
    _zero_([f, i])
    assert not f.any() and not i.any()


def test_a_spec_the_worker_cannot_load_is_one_fatal_message():
    out: queue.Queue = queue.Queue()
    job = BenchJob(("module", "no_such_kernel_module_xyz", None), (("a", {}), ("b", {})), (16,), "float32")
    _child(job, out)
    kind, why = out.get_nowait()
    assert kind == "fatal" and why.startswith("worker could not load the kernel spec: ModuleNotFoundError")
    assert out.empty()
