"""autopad/sweep_ray_cluster.py without a cluster: the GPUs and accelerator types of a node table, and how
a sweep joins or starts a cluster (a recording stand-in for ``ray``)."""

from __future__ import annotations

import sys
import types

import pytest

from autopad.sweep_ray_cluster import _connect, _ray, capacity, gpu_types_of


def test_capacity_and_gpu_types_from_the_node_table():
    nodes = [
        {"Alive": True, "Resources": {"CPU": 16, "GPU": 8, "accelerator_type:H100": 1}},
        {"Alive": True, "Resources": {"CPU": 8, "GPU": 2, "accelerator_type:A100": 1}},
        {"Alive": False, "Resources": {"CPU": 8, "GPU": 4, "accelerator_type:L4": 1}},  # dead: not counted
        {"Alive": True, "Resources": {"CPU": 4}},
    ]
    assert capacity(nodes, None, 1.0) == 10 and capacity(nodes, "A100", 1.0) == 2
    assert capacity(nodes, "H100", 2.0) == 4 and capacity(nodes, "L4", 1.0) == 0
    assert capacity(nodes, None, 0.0) == 28  # no GPU asked for: one task per CPU
    assert gpu_types_of(nodes) == ["A100", "H100"]


class _FakeRay:
    def __init__(self, initialized=False):
        self.initialized, self.calls = initialized, []

    def is_initialized(self):
        return self.initialized

    def init(self, address, **kw):
        self.calls.append((address, kw))


def test_connect_starts_a_quiet_local_cluster_with_the_drivers_gpus(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv("AUTOPAD_NO_BENCH", "1")  # the driver shows no GPU: a cluster of none
    ray = _FakeRay()
    assert _connect(ray, None, {"num_cpus": 2}) is True
    ((address, kw),) = ray.calls
    assert address == "local" and kw["num_gpus"] == 0 and kw["num_cpus"] == 2
    assert kw["include_dashboard"] is False and kw["log_to_driver"] is False


def test_connect_joins_the_address_given_or_in_the_environment_and_not_twice(monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", "head:6379")
    ray = _FakeRay()
    assert _connect(ray, None, None) is True and ray.calls == [("head:6379", {"log_to_driver": False})]
    ray = _FakeRay()
    _connect(ray, "ray://other:10001", {"log_to_driver": True})
    assert ray.calls == [("ray://other:10001", {"log_to_driver": True})]
    ray = _FakeRay(initialized=True)
    assert _connect(ray, "auto", None) is False and ray.calls == []


def test_without_ray_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ImportError, match=r"pip install 'autopad\[ray\]'"):
        _ray()
    fake = types.ModuleType("ray")
    monkeypatch.setitem(sys.modules, "ray", fake)
    assert _ray() is fake
