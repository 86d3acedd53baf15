"""Tests for benchmarks/probe_tma.py: the TMA probes' boxes, the tensor-map call, the counters it asks for,
the CSV rows, and that its CUDA source builds for sm_90 (nothing runs here: the probes need an H200)."""

from __future__ import annotations

import ctypes
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import probe_tma as pt  # noqa: E402


def test_the_probes_are_boxes_the_driver_accepts():
    full, quick = pt.probes(), pt.probes(quick=True)
    assert len(full) == 224 and len(quick) == 28
    assert {p["direction"] for p in full} == {"load", "store"}
    for p in full:
        inner = p["box_inner"] * p["elem_bytes"]
        assert inner % 16 == 0 and (p["swizzle"] == 0 or inner <= p["swizzle"])
    assert all(p["elem_bytes"] == 2 and p["box_rows"] == 8 and p["pitch"] == 1024 for p in quick)
    assert len({json.dumps(p, sort_keys=True) for p in full}) == len(full), "no probe twice"
    with pytest.raises(AssertionError):
        pt.check({"elem_bytes": 2, "swizzle": 32, "box_inner": 32, "box_rows": 8, "pitch": 1024})  # 64 B > 32


def test_the_assumption_is_one_wavefront_per_swizzle_row():
    p = {"elem_bytes": 2, "swizzle": 128, "box_inner": 64, "box_rows": 64, "pitch": 1024}
    assert pt.box_bytes(p) == 8192 and pt.assumed_wavefronts(p) == 64
    assert pt.assumed_wavefronts({**p, "swizzle": 32, "box_inner": 16}) == 64  # 32-byte rows: 2048 / 32
    assert pt.assumed_wavefronts({**p, "swizzle": 0, "box_inner": 8, "box_rows": 1}) == 1  # 16 bytes


def test_encode_passes_the_box_to_the_driver_and_reports_a_refusal():
    seen = {}

    def fake(tmap, dtype, rank, addr, dims, strides, box, elem, inter, swz, l2, oob):
        seen.update(
            dtype=dtype.value, rank=rank.value, addr=addr.value, dims=list(dims), strides=list(strides)
        )
        seen.update(box=list(box), elem=list(elem), swz=swz.value, rest=(inter.value, l2.value, oob.value))
        ctypes.cast(tmap, ctypes.POINTER(ctypes.c_uint64))[0] = 7
        return seen.get("rc", 0)

    class Lib:
        cuTensorMapEncodeTiled = staticmethod(fake)

    p = {"elem_bytes": 2, "swizzle": 64, "box_inner": 32, "box_rows": 8, "pitch": 1040}
    raw = pt.encode(Lib, 4096, p)
    assert len(raw) == 128 and raw[:8] == (7).to_bytes(8, "little")
    assert seen["dtype"] == 1 and seen["rank"] == 2 and seen["addr"] == 4096  # UINT16
    assert seen["dims"] == [520, pt.GLOBAL_ROWS] and seen["strides"] == [1040]
    assert (
        seen["box"] == [32, 8] and seen["elem"] == [1, 1] and seen["swz"] == 2 and seen["rest"] == (0, 0, 0)
    )
    seen["rc"] = 1
    with pytest.raises(RuntimeError, match="returned 1"):
        pt.encode(Lib, 4096, p)


def test_counters_asked_for_are_the_listed_shared_tma_and_bulk_ones():
    listed = {
        "l1tex__data_pipe_lsu_wavefronts_mem_shared",
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st",
        "smsp__inst_executed_op_tma",
        "l1tex__m_xbar2l1tex_read_bytes",
    }
    got = pt.metrics_to_collect(listed)
    assert got == sorted(m + ".sum" for m in listed if m != "l1tex__m_xbar2l1tex_read_bytes")
    assert pt.metrics_to_collect(None) == []


def test_rows_join_each_probe_with_its_launch():
    ps = pt.probes(quick=True)[:2]
    launches = [
        {"id": i, "kernel": f"probe_tma_{p['direction']}", "metrics": {"x.sum": 3.0 + i}}
        for i, p in enumerate(ps)
    ]
    rows = pt.rows(ps, launches)
    assert [r["x.sum"] for r in rows] == [3.0, 4.0]
    assert rows[0]["box_bytes"] == pt.box_bytes(ps[0]) and rows[0][
        "assumed_wavefronts"
    ] == pt.assumed_wavefronts(ps[0])


def test_dry_run_writes_the_probes_and_the_source(tmp_path):
    assert pt.main(["--dry-run", "--quick", "--out", str(tmp_path)]) == 0
    assert len(json.loads((tmp_path / "probes.json").read_text())) == 28
    assert "cp.async.bulk.tensor.2d" in (tmp_path / "probe_tma.cu").read_text()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_the_source_builds_for_sm_90(tmp_path):
    src = tmp_path / "probe_tma.cu"
    src.write_text(pt.SOURCE)
    proc = subprocess.run(
        ["nvcc", "-arch=sm_90", "-cubin", "-o", str(tmp_path / "p.cubin"), str(src)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert pt.SOURCE.count('"cp.async.bulk.tensor.2d') == 2, "one copy in each kernel"
