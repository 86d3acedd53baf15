"""Shared test set-up: the `gpu` marker skips cleanly where torch sees no CUDA device."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

SHARED = Path(os.environ.get("AUTOPAD_SHARED", Path(__file__).resolve().parents[2] / "shared"))
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _has_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config, items):
    if _has_gpu():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU (torch.cuda.is_available() is False)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def probes() -> list[dict]:
    """The 558 Nsight Compute probes measured on an H200 (copied into tests/fixtures)."""
    return json.loads((FIXTURES / "h200_shared_probes.json").read_text())["probes"]


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    """Every test gets its own autopad cache directory, so no test touches a user's cache."""
    monkeypatch.setenv("AUTOPAD_CACHE_DIR", str(tmp_path / "autopad-cache"))
