"""autopad.cuda_launch: the prepared launch's CPU-side path through cuda.core (mocked: cuda_fakes), and
(GPU) ad hoc and prepared launches on torch's streams, in a CUDA graph, with large dynamic shared memory."""

from __future__ import annotations

import time

import numpy as np
import pytest
from cuda_fakes import fake_cuda_env

from autopad import cuda_launch


@pytest.fixture
def fake_cuda(monkeypatch):
    yield from fake_cuda_env(monkeypatch)


@pytest.mark.gpu
def test_nvrtc_launch_on_torch_stream():
    import numpy as np
    import torch

    src = 'extern "C" __global__ void fill(int* o, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x;'
    src += " if (i < n) o[i] = i * VALUE; }\n"
    k = cuda_launch.load_kernel(src, "fill", {"VALUE": 3})
    out = torch.full((1000,), -1, dtype=torch.int32, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        cuda_launch.launch(k, 4, 256, (out, np.int32(1000)))
    s.synchronize()
    assert torch.equal(out, torch.arange(1000, device="cuda", dtype=torch.int32) * 3)


@pytest.mark.gpu
def test_large_dynamic_shared_memory():
    import numpy as np
    import torch

    src = (
        'extern "C" __global__ void big(int* o, int n) { extern __shared__ int s[];'
        " for (int i = threadIdx.x; i < n; i += blockDim.x) s[i] = i;"
        " __syncthreads(); if (threadIdx.x == 0) o[0] = s[n - 1]; }\n"
    )
    k = cuda_launch.load_kernel(src, "big", {})
    n = 150 * 1024 // 4
    out = torch.zeros(1, dtype=torch.int32, device="cuda")
    cuda_launch.launch(k, 1, 256, (out, np.int32(n)), shmem_bytes=n * 4)
    torch.cuda.synchronize()
    assert out.item() == n - 1


def test_prepare_launch_does_the_fixed_work_once(fake_cuda):
    cc, state, torch = fake_cuda
    fire = cuda_launch.prepare_launch("K", (3, 2, 1), 128, 1024)
    assert cc.configs == [((3, 2, 1), 128, 1024)] and cc.current == [0]
    a, b = torch.zeros(4), torch.zeros(8)
    fire(a, b, np.int32(5))
    fire((a, b, np.int32(6)))  # one sequence argument is the argument list
    assert len(cc.configs) == 1 and cc.current == [0]  # nothing re-done per call
    (s1, cfg, k, args1), (_, _, _, args2) = cc.launches
    assert s1 == ("s", 1234) and cfg == ((3, 2, 1), 128, 1024) and k == "K"
    assert args1 == (a.data_ptr(), b.data_ptr(), np.int32(5)) and args2[2] == np.int32(6)
    state["stream"] = 99  # torch's current stream changed (torch.cuda.stream(s), graph capture)
    fire(a)
    assert cc.launches[-1][0] == ("s", 99)


def test_prepare_launch_switches_device_when_another_is_current(fake_cuda, monkeypatch):
    cc, state, torch = fake_cuda
    fire = cuda_launch.prepare_launch("K", 1, 32, device=0)
    entered = []

    class Guard:
        def __init__(self, d):
            entered.append(d)

        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

    monkeypatch.setattr(torch.cuda, "device", Guard)
    state["dev"] = 1  # the caller made device 1 current
    fire(torch.zeros(2))
    assert entered == [0] and len(cc.launches) == 1 and cc.current[-1] == 0


def test_prepared_launch_cpu_side_cost(fake_cuda):
    """The Python path up to the launch (launch mocked): what a call adds on the host."""
    cc, state, torch = fake_cuda
    fire = cuda_launch.prepare_launch("K", (64, 64, 1), 256)
    x, y = torch.zeros(64, 64), torch.zeros(64, 64)
    args = (y, x, np.int32(64), np.int32(64), np.int32(1), np.int32(1))
    cc.launch = lambda *a: None
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(2000):
            fire(*args)
        best = min(best, (time.perf_counter() - t) / 2000 * 1e6)
    print(f"prepared launch, CPU side: {best:.2f} us per call")
    assert best < 20  # ~1-3 us on an idle core; generous for a loaded CI machine


FILL = (
    'extern "C" __global__ void fill(int* o, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x;'
    " if (i < n) o[i] = i * VALUE; }\n"
)


@pytest.mark.gpu
def test_prepared_launch_on_a_side_stream_and_in_a_cuda_graph():
    import torch

    k = cuda_launch.load_kernel(FILL, "fill", {"VALUE": 5})
    fire = cuda_launch.prepare_launch(k, 4, 256)
    want = torch.arange(1000, device="cuda", dtype=torch.int32) * 5
    out = torch.full((1000,), -1, dtype=torch.int32, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fire(out, np.int32(1000))
    s.synchronize()
    assert torch.equal(out, want)
    g = torch.cuda.CUDAGraph()
    out.fill_(-1)
    torch.cuda.synchronize()
    with torch.cuda.graph(g):
        fire((out, np.int32(1000)))
    torch.cuda.synchronize()
    out.fill_(-1)
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, want)


@pytest.mark.gpu
def test_prepared_launch_with_large_dynamic_shared_memory_and_its_host_cost():
    import torch

    src = (
        'extern "C" __global__ void big(int* o, int n) { extern __shared__ int s[];'
        " for (int i = threadIdx.x; i < n; i += blockDim.x) s[i] = i;"
        " __syncthreads(); if (threadIdx.x == 0) o[0] = s[n - 1]; }\n"
    )
    n = 150 * 1024 // 4
    fire = cuda_launch.prepare_launch(cuda_launch.load_kernel(src, "big", {}), 1, 256, n * 4)
    out = torch.zeros(1, dtype=torch.int32, device="cuda")
    fire(out, np.int32(n))
    torch.cuda.synchronize()
    assert out.item() == n - 1
    tiny = cuda_launch.prepare_launch(cuda_launch.load_kernel(FILL, "fill", {"VALUE": 1}), 1, 32)
    o = torch.zeros(32, dtype=torch.int32, device="cuda")
    for _ in range(100):
        tiny(o, np.int32(32))
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(2000):
        tiny(o, np.int32(32))
    torch.cuda.synchronize()
    us = (time.perf_counter() - t) / 2000 * 1e6
    print(f"prepared launch of a 1-block kernel, back to back: {us:.2f} us per call")
    assert us < 20
