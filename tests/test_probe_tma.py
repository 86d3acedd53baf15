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
    assert len(full) == 254 and len(quick) == 30
    assert [p["index"] for p in full] == list(range(len(full)))
    assert {p["direction"] for p in full} == {"load", "store"}
    for p in full:
        inner = p["box_inner"] * p["elem_bytes"]
        assert inner % 16 == 0 and (p["swizzle"] == 0 or inner <= p["swizzle"])
        assert p["box_rows"] > 1 or p["pitch"] == 1024, "a 1-row box has no pitch to vary"
    controls = [p for p in full if not p["copy"]]
    assert [c["direction"] for c in controls] == ["load", "store"] and pt.box_bytes(controls[0]) == 0
    assert all(p["elem_bytes"] == 2 and p["box_rows"] == 8 and p["pitch"] == 1024 for p in quick if p["copy"])
    strip = [{k: v for k, v in p.items() if k != "index"} for p in full]
    assert len({json.dumps(p, sort_keys=True) for p in strip}) == len(full), "no probe twice"
    with pytest.raises(AssertionError):
        pt.check({"elem_bytes": 2, "swizzle": 32, "box_inner": 32, "box_rows": 8, "pitch": 1024})  # 64 B > 32


def test_the_assumption_is_one_wavefront_per_swizzle_row():
    p = {"elem_bytes": 2, "swizzle": 128, "box_inner": 64, "box_rows": 64, "pitch": 1024}
    assert pt.box_bytes(p) == 8192 and pt.assumed_wavefronts(p) == 64
    assert pt.assumed_wavefronts({**p, "swizzle": 32, "box_inner": 16}) == 64  # 32-byte rows: 2048 / 32
    assert pt.assumed_wavefronts({**p, "swizzle": 0, "box_inner": 8, "box_rows": 1}) == 1  # 16 bytes


def test_encode_passes_the_box_to_the_driver_in_an_aligned_map_and_reports_a_refusal():
    seen = {}

    def fake(tmap, dtype, rank, addr, dims, strides, box, elem, inter, swz, l2, oob):
        seen.update(map=tmap.value, dtype=dtype.value, rank=rank.value, addr=addr.value)
        seen.update(dims=list(dims), strides=list(strides), box=list(box), elem=list(elem), swz=swz.value)
        seen.update(rest=(inter.value, l2.value, oob.value))
        ctypes.cast(tmap, ctypes.POINTER(ctypes.c_uint64))[0] = 7
        return seen.get("rc", 0)

    class Lib:
        cuTensorMapEncodeTiled = staticmethod(fake)

    p = {"elem_bytes": 2, "swizzle": 64, "box_inner": 32, "box_rows": 8, "pitch": 1040}
    raw = pt.encode(Lib, 4096, p)
    assert len(raw) == 128 and raw[:8] == (7).to_bytes(8, "little")
    assert seen["map"] % 128 == 0, "the driver wants the CUtensorMap 64-byte aligned (cuda.h: alignas(128))"
    assert seen["dtype"] == 1 and seen["rank"] == 2 and seen["addr"] == 4096  # UINT16
    assert seen["dims"] == [520, pt.GLOBAL_ROWS] and seen["strides"] == [1040]
    assert (
        seen["box"] == [32, 8] and seen["elem"] == [1, 1] and seen["swz"] == 2 and seen["rest"] == (0, 0, 0)
    )
    seen["rc"] = 1
    with pytest.raises(RuntimeError, match="returned 1"):
        pt.encode(Lib, 4096, p)


def test_counters_asked_for_are_the_listed_shared_tma_and_bulk_sums():
    listed = {
        "l1tex__data_pipe_lsu_wavefronts_mem_shared",
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st",
        "smsp__inst_executed_op_tma",
        "l1tex__m_xbar2l1tex_read_bytes",  # not about shared memory or TMA
        "smsp__sass_average_data_bytes_per_wavefront_mem_shared",  # a ratio: no .sum
    }
    got = pt.metrics_to_collect(listed)
    wanted = sorted(
        listed - {"l1tex__m_xbar2l1tex_read_bytes", "smsp__sass_average_data_bytes_per_wavefront_mem_shared"}
    )
    assert got == [m + ".sum" for m in wanted]
    assert pt.metrics_to_collect(None) == []


def test_vet_drops_the_names_ncu_refuses_and_falls_back_on_the_safe_few():
    calls = []

    def run(ms):
        calls.append(list(ms))
        bad = [m for m in ms if "bogus" in m]
        return (1, "".join(f"==ERROR== Failed to find metric {b}\n" for b in bad)) if bad else (0, "ok")

    names = ["a__x.sum", "b__bogus_one.sum", "c__y.sum", "d__bogus_two.sum"]
    assert pt.vet_metrics(run, names) == ["a__x.sum", "c__y.sum"] and len(calls) == 2
    assert pt.vet_metrics(lambda ms: (1, "the program crashed"), names) == list(pt.SAFE_METRICS)
    assert pt.vet_metrics(run, []) == list(pt.SAFE_METRICS)


def test_a_timed_out_chunk_kills_its_process_group():
    t0 = __import__("time").monotonic()
    rc, out, err = pt._run_killable(["bash", "-c", "sleep 30 & sleep 30; echo never"], {}, 1.0)
    assert rc == 124 and "never" not in out and "timed out" in err
    assert __import__("time").monotonic() - t0 < 10, "the background sleep must be killed too"
    assert pt._run_killable([sys.executable, "-c", "print(3)"], dict(__import__("os").environ), 30)[:2] == (
        0,
        "3\n",
    )


def test_ncu_command_profiles_only_the_probes_and_one_launch_when_vetting():
    cmd = pt._ncu_cmd("ncu", ["a__x.sum", "b__y.sum"], Path("p.json"), Path("l.json"), 1)
    assert (
        cmd[cmd.index("-k") + 1] == "regex:^probe_tma"
        and cmd[cmd.index("--metrics") + 1] == "a__x.sum,b__y.sum"
    )
    assert cmd[cmd.index("-c") + 1] == "1" and "-c" not in pt._ncu_cmd(
        "ncu", ["a"], Path("p"), Path("l"), None
    )


def test_rows_join_launches_to_the_probes_launched_and_check_the_kernel():
    ps = pt.probes(quick=True)[:4]  # the load control, then three load boxes
    launched = [0, 2, 3]  # probe 1 refused by the driver: not launched
    launches = [{"id": i, "kernel": "probe_tma_load", "metrics": {"x.sum": 3.0 + i}} for i in range(3)]
    table = pt.rows(ps, launches, launched)
    assert [r["index"] for r in table] == [0, 2, 3] and [r["x.sum"] for r in table] == [3.0, 4.0, 5.0]
    assert table[0]["box_bytes"] == 0 and table[0]["assumed_wavefronts"] == 0  # the control
    assert table[1]["assumed_wavefronts"] == pt.assumed_wavefronts(ps[2])
    assert [r["model_case"] for r in table] == [
        int(p["box_inner"] * 2 == p["swizzle"]) for p in (ps[0], ps[2], ps[3])
    ]
    launches[1]["kernel"] = "probe_tma_store"
    with pytest.raises(RuntimeError, match="probe 2: ncu's launch ran probe_tma_store"):
        pt.rows(ps, launches, launched)


def test_dry_run_writes_the_probes_and_the_source(tmp_path):
    assert pt.main(["--dry-run", "--quick", "--out", str(tmp_path)]) == 0
    assert len(json.loads((tmp_path / "probes.json").read_text())) == 30
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
