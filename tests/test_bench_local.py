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


def test_keep_allocation_reuses_the_jobs_buffers_with_fresh_values():
    torch = pytest.importorskip("torch")
    import numpy as np

    from autopad.bench_local import keep_allocation
    from autopad.kernel_args import Inputs, Out

    held = (torch.zeros(4, 6), Out((6, 4), torch.float32), 7)
    fresh = (torch.randn(4, 6), Out((6, 4), torch.float32), 8)
    got = keep_allocation(held, fresh, refill=True)
    assert got[0] is held[0]  # the job's allocation ...
    assert torch.equal(got[0], fresh[0])  # ... with the new candidate's values
    assert got[1] is fresh[1] and got[2] == 8  # everything not a tensor is the new candidate's
    got = keep_allocation(Inputs([torch.zeros(3)], (3,)), Inputs([torch.ones(3)], (3,)), refill=True)
    assert isinstance(got, Inputs) and got.shape == (3,) and got[0].sum() == 3  # the container kept
    out = torch.zeros(6, 4)
    assert keep_allocation(out, torch.full((6, 4), 3.0), refill=False) is out
    assert not out.any()  # an output is only reused: the harness poisons it before each run
    # any tensor of another layout (shape, dtype, strides, storage size), one that cannot be refilled, or an
    # argument that cannot be compared: the new allocation, never an error
    grad = torch.zeros(4, 6, requires_grad=True)
    for old, other in (
        (held, (torch.randn(4, 7), Out((7, 4), torch.float32), 7)),
        (held, (torch.randn(4, 6, dtype=torch.float64), Out((6, 4), torch.float32), 7)),
        (held, (torch.randn(6, 4).t(), Out((6, 4), torch.float32), 7)),
        (held, (torch.randn(4, 6), Out((6, 4), torch.float32))),
        ((torch.zeros(8, 6)[:4],), (torch.randn(4, 6),)),
        ((torch.zeros(1, 6).expand(4, 6),), (torch.randn(6).expand(4, 6),)),
        ((grad,), (torch.randn(4, 6),)),
    ):
        assert keep_allocation(old, other, refill=True) is other
    for odd in (np.ones(3), [torch.ones(2)], float("nan")):  # compared by nothing: taken as they come
        old, other = (torch.zeros(4), odd), (torch.randn(4), odd)
        got = keep_allocation(old, other, refill=True)
        assert got[0] is old[0] and got[1] is odd
    assert not grad.any()
    assert keep_allocation(None, fresh, refill=True) is fresh


def test_every_candidate_of_a_job_runs_on_the_jobs_allocations_with_fresh_values(monkeypatch):
    torch = pytest.importorskip("torch")
    import cpu_copy_kernel as K

    from autopad import bench_local
    from autopad.bench_job import spec_ref
    from autopad.spec import KernelSpec

    monkeypatch.setattr(torch.cuda, "set_device", lambda d: None)  # the loop runs on CPU tensors here
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(bench_local, "_time", lambda run, reps, *a: [run(), 1.0][1:] * reps)
    K.SEEN.clear()
    modes = (0, 1, 0, 2, 0)
    job = BenchJob(
        spec_ref(KernelSpec(K)),
        tuple((f"m{i}", {"MODE": m}) for i, m in enumerate(modes)),
        (64,),
        "float32",
        reps=3,
    )
    got = [m for m, _ in bench_local.measure_local(job)]
    assert [m.correct for m in got] == [True, False, True, False, True]
    assert "differ" in got[1].error and "differ" in got[3].error  # poisoned: the last right answer is gone
    # each candidate's first run (the checked one; a new candidate brings new values) on a poisoned output
    firsts = [s for i, s in enumerate(K.SEEN) if i == 0 or s[2] != K.SEEN[i - 1][2]]
    assert len(firsts) == len(modes) and all(s[3] for s in firsts)
    # every run (checks and timed runs alike) on one input and one output allocation
    assert len({s[0] for s in K.SEEN}) == 1 and len({s[1] for s in K.SEEN}) == 1
    assert len({s[2] for s in K.SEEN}) == len(modes)  # but each candidate's values fresh (its own seed)


def test_placements_time_every_candidate_on_separate_allocations_and_count_the_slowest(monkeypatch):
    torch = pytest.importorskip("torch")
    import cpu_copy_kernel as K

    from autopad import bench_local
    from autopad.bench_job import spec_ref
    from autopad.spec import KernelSpec

    monkeypatch.setattr(torch.cuda, "set_device", lambda d: None)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: (1 << 30, 1 << 31))
    outs: list[int] = []  # the output allocation of each timed placement, in timing order

    def fake_time(run, reps, *a):
        run()
        outs.append(K.SEEN[-1][1])
        return [1.0 + len(set(outs)) * 0.1] * reps  # each new allocation slower than the last

    monkeypatch.setattr(bench_local, "_time", fake_time)
    K.SEEN.clear()
    job = BenchJob(
        spec_ref(KernelSpec(K)),
        (("a", {"MODE": 0}), ("b", {"MODE": 2}), ("c", {"MODE": 0})),
        (64,),
        "float32",
        reps=3,
        options={"placements": 3},
    )
    got = [m for m, _ in bench_local.measure_local(job)]
    assert [m.correct for m in got] == [True, False, True]
    # three output allocations, each timed for both correct candidates, all on the job's one input
    assert len(set(outs)) == 3 and outs[:3] == outs[3:]
    assert len({s[0] for s in K.SEEN}) == 1
    # each placement's first run checked on a poisoned output, the slowest placement counting
    assert got[0].ms == got[2].ms == pytest.approx(1.3) and got[0].runs == got[2].runs == 9
    assert "differ" in got[1].error
    firsts = [s for i, s in enumerate(K.SEEN) if i == 0 or s[1] != K.SEEN[i - 1][1]]
    assert all(s[3] for s in firsts[:3])


def test_placements_are_cut_to_what_fits_in_half_the_free_memory(monkeypatch):
    torch = pytest.importorskip("torch")
    import cpu_copy_kernel as K

    from autopad import bench_local
    from autopad.bench_job import spec_ref
    from autopad.spec import KernelSpec

    monkeypatch.setattr(torch.cuda, "set_device", lambda d: None)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    # a 64-float output takes 256 bytes: 600 free bytes hold one more (half of them: 300), not two
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: (600, 1 << 31))
    monkeypatch.setattr(bench_local, "_time", lambda run, reps, *a: [run(), 1.0][1:] * reps)
    K.SEEN.clear()
    job = BenchJob(
        spec_ref(KernelSpec(K)), (("a", {"MODE": 0}),), (64,), "float32", reps=3, options={"placements": 3}
    )
    (m,) = [m for m, _ in bench_local.measure_local(job)]
    assert m.correct and m.runs == 6
    assert len({s[1] for s in K.SEEN}) == 2


def test_every_candidate_of_a_job_is_timed_on_as_many_placements(monkeypatch):
    """The count is fixed at the job's first correct candidate: a candidate counts as its slowest placement,
    so one timed on fewer would be favoured. Here free memory grows after the first candidate."""
    torch = pytest.importorskip("torch")
    import cpu_copy_kernel as K

    from autopad import bench_local
    from autopad.bench_job import spec_ref
    from autopad.spec import KernelSpec

    free = iter([100, 1 << 30, 1 << 30])  # too little for a second output at first, plenty afterwards
    monkeypatch.setattr(torch.cuda, "set_device", lambda d: None)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: (next(free), 1 << 31))
    monkeypatch.setattr(bench_local, "_time", lambda run, reps, *a: [run(), 1.0][1:] * reps)
    K.SEEN.clear()
    job = BenchJob(
        spec_ref(KernelSpec(K)),
        (("a", {"MODE": 0}), ("b", {"MODE": 0})),
        (64,),
        "float32",
        reps=3,
        options={"placements": 3},
    )
    got = [m for m, _ in bench_local.measure_local(job)]
    assert [m.runs for m in got] == [3, 3]  # one placement each, as the first candidate found


def test_a_candidate_wrong_on_a_later_placement_is_a_wrong_result(monkeypatch):
    torch = pytest.importorskip("torch")
    import cpu_copy_kernel as K

    from autopad import bench_local
    from autopad.bench_job import spec_ref
    from autopad.spec import KernelSpec

    monkeypatch.setattr(torch.cuda, "set_device", lambda d: None)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: (1 << 30, 1 << 31))
    monkeypatch.setattr(bench_local, "_time", lambda run, reps, *a: [run(), 1.0][1:] * reps)
    outs: list[int] = []
    real_run = K.run

    def run(mode, inputs, out):  # right into the first output it sees, wrong (nothing written) elsewhere
        outs.append(out.data_ptr())
        real_run(mode if out.data_ptr() == outs[0] else 1, inputs, out)

    monkeypatch.setattr(K, "run", run)
    job = BenchJob(spec_ref(KernelSpec(K)), (("a", {"MODE": 0}),), (64,), "float32", reps=3,
                   options={"placements": 3})  # fmt: skip
    (m,) = [m for m, _ in bench_local.measure_local(job)]
    assert not m.correct and m.error.startswith("wrong result") and "(on placement 2 of 3)" in m.error


def test_the_spread_is_the_noisiest_placements(monkeypatch):
    torch = pytest.importorskip("torch")
    import cpu_copy_kernel as K

    from autopad import bench_local
    from autopad.bench_job import spec_ref
    from autopad.spec import KernelSpec

    monkeypatch.setattr(torch.cuda, "set_device", lambda d: None)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: (1 << 30, 1 << 31))
    spreads = iter([[1.0, 1.0, 1.0, 1.0], [1.0, 1.2, 1.4, 1.6], [2.0, 2.0, 2.1, 2.1]])
    monkeypatch.setattr(bench_local, "_time", lambda run, reps, *a: [run(), *next(spreads)][1:])
    job = BenchJob(spec_ref(KernelSpec(K)), (("a", {"MODE": 0}),), (64,), "float32", reps=4,
                   options={"placements": 3})  # fmt: skip
    (m,) = [m for m, _ in bench_local.measure_local(job)]
    # medians 1.0 / 1.3 / 2.05: the slowest; interquartile ranges 0 / 0.3 / 0.075: the largest
    assert m.ms == pytest.approx(2.05) and m.spread_ms == pytest.approx(0.3) and m.runs == 12
