"""GPU detection without torch: the driver is asked once per boot and device set, then remembered."""

from __future__ import annotations

import json

import autopad.device as dev


def _fresh(monkeypatch, tmp_path):
    monkeypatch.setenv("AUTOPAD_CACHE_DIR", str(tmp_path))
    for f in (dev._devices, dev._known, dev._driver):
        f.cache_clear()


def test_no_bench_means_no_gpu(monkeypatch, tmp_path):
    _fresh(monkeypatch, tmp_path)
    monkeypatch.setenv("AUTOPAD_NO_BENCH", "1")
    assert dev.device_info(0) == {} and dev.device_count() == 0 and not dev.gpu_available()


def test_a_machine_without_the_nvidia_driver_answers_at_once(monkeypatch, tmp_path):
    _fresh(monkeypatch, tmp_path)
    monkeypatch.delenv("AUTOPAD_NO_BENCH", raising=False)
    monkeypatch.setattr(dev, "_no_driver", lambda: True)
    monkeypatch.setattr(dev, "_driver", lambda: (_ for _ in ()).throw(AssertionError("driver loaded")))
    monkeypatch.setattr(dev, "_fingerprint", lambda: None)
    assert dev.device_info(0) == {} and dev.device_count() == 0


def test_the_device_list_is_remembered_for_the_same_boot_and_devices(monkeypatch, tmp_path):
    _fresh(monkeypatch, tmp_path)
    monkeypatch.delenv("AUTOPAD_NO_BENCH", raising=False)
    fp = json.dumps(["boot-1", ["0000:19:00.0"], ["", ""]])
    monkeypatch.setattr(dev, "_fingerprint", lambda: fp)
    dev._remember([{"name": "NVIDIA H200", "cc": "90", "index": 0}])
    dev._known.cache_clear()
    monkeypatch.setattr(dev, "_driver", lambda: (_ for _ in ()).throw(AssertionError("driver asked")))
    assert dev.device_info(0) == {"name": "NVIDIA H200", "cc": "90", "index": 0}
    assert dev.device_info(1) == {} and dev.device_count() == 1
    # another boot (or CUDA_VISIBLE_DEVICES) is another fingerprint: the file no longer answers
    monkeypatch.setattr(dev, "_fingerprint", lambda: json.dumps(["boot-2", ["0000:19:00.0"], ["", ""]]))
    for f in (dev._devices, dev._known):
        f.cache_clear()
    assert dev._known() is None


def test_a_corrupt_memo_file_is_ignored(monkeypatch, tmp_path):
    _fresh(monkeypatch, tmp_path)
    monkeypatch.setattr(dev, "_fingerprint", lambda: "fp")
    (tmp_path / "devices.json").write_text("{not json")
    assert dev._known() is None
    (tmp_path / "devices.json").write_text(json.dumps({"fingerprint": "fp", "devices": [{"name": 3}]}))
    dev._known.cache_clear()
    assert dev._known() is None
