"""autopad/sweep_ray_task.py without a cluster: what a task reads back from the node's cache after the sweep
task ran, and how the caller files it (its own cache under the node's key, one JSON per item and GPU)."""

from __future__ import annotations

from autopad.cache import Cache
from autopad.sweep import SweepItem, items, tune_item
from autopad.sweep_ray_task import _record, _slot, _stored


def test_slot_names_kernel_shape_dtype_backend_and_dist():
    (plain,) = items(["histogram"], [(4096, 256)], ["int32"], "triton")
    (skewed,) = items(["histogram"], [(4096, 256)], ["int32"], "triton", "skewed")
    assert _slot(plain) == "histogram_4096x256_int32_triton"
    assert _slot(skewed) == "histogram_4096x256_int32_triton_skewed"


def test_a_nodes_stored_result_lands_in_the_callers_cache_and_results_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOPAD_NO_BENCH", "1")
    (item,) = items(["histogram"], [(4096, 256)], ["int32"], "triton")
    row = tune_item(item, 0)  # what the task runs on the node: a model-only tune, stored in its cache
    got = {"stored": _stored(item, row, 0)}
    st = got["stored"]
    assert st["key"]["kernel"] == "histogram" and st["key"]["gpu"] == "" and st["params"]["top_k"] == 6
    caller = Cache(tmp_path / "caller")
    _record(got, caller, tmp_path / "results", _slot(item))
    (entry,) = [e for e in caller.entries() if e["has_result"]]
    assert entry["kernel"] == "histogram" and tuple(entry["shape"]) == (4096, 256)
    assert (tmp_path / "results" / _slot(item) / "no-gpu.json").is_file()
    _record({"row": row}, caller, tmp_path / "none", "x")  # a task that stored nothing: nothing filed
    assert not (tmp_path / "none").exists()


def test_an_item_autopad_does_not_know_stored_nothing():
    assert _stored(SweepItem("not_a_kernel", (8,), "int32"), {}, 0) is None
