"""Tests for autopad/validate_ncu.py: ncu's CSV (long and raw layouts, as ncu prints them; a real run's
output verbatim) and the counters chosen per probe (moved from tests/test_validate.py)."""

from __future__ import annotations

from validate_fixtures import NCU_HEAD as _HEAD

from autopad import validate_ncu as vn


# ------------------------------------------------------------------------------------------- ncu CSV
def _long_rows(launch_id: int, kernel: str, values: dict[str, str]) -> list[str]:
    pre = (
        f'"{launch_id}","4242","python3","127.0.0.1","{kernel}","1","7","(32, 1, 1)","(1, 1, 1)","0","9.0",'
        '"Command line profiler metrics"'
    )
    return [f'{pre},"{name}","","{val}"' for name, val in values.items()]


def _metrics(op: str, wave: int | str, conf: int | str) -> dict[str, str]:
    out = {}
    for o in ("ld", "st", "atom"):
        mine = o == vn._SHORT[op]
        out[f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{o}.sum"] = str(conf if mine else 0)
        out[f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{o}.sum"] = str(wave if mine else 0)
    return out


def test_parse_ncu_csv_long_format():
    text = "\n".join(
        [
            "==PROF== Connected to process 4242 (/usr/bin/python3.12)",
            "some output of the program",
            '==PROF== Profiling "probe_ld_u32" - 0: 0%....50%....100% - 1 pass',
            _HEAD,
            *_long_rows(0, "probe_ld_u32", _metrics("load", 1, 0)),
            *_long_rows(1, "probe_st_v4_u32", _metrics("store", "1,032", 1028)),
            *_long_rows(2, "probe_atom_u32", _metrics("atomic", 32, 31)),
            *_long_rows(3, "other_kernel", _metrics("load", 5, 4)),
            "==PROF== Disconnected from process 4242",
        ]
    )
    launches = vn.parse_ncu_csv(text)
    assert [ln["id"] for ln in launches] == [0, 1, 2]
    assert [ln["kernel"] for ln in launches] == ["probe_ld_u32", "probe_st_v4_u32", "probe_atom_u32"]
    assert vn.measured_counts(launches[0], "load") == (1, 0)
    assert vn.measured_counts(launches[1], "store") == (1032, 1028), "thousands separators removed"
    assert vn.measured_counts(launches[2], "atomic") == (32, 31)
    assert vn.measured_counts(launches[2], "load") == (0, 0)


def test_parse_ncu_csv_launch_order_and_na():
    rows = _long_rows(10, "probe_ld_u8", {**_metrics("load", 2, 1)}) + _long_rows(
        9, "probe_ld_u8", {**_metrics("load", 1, 0), vn.METRICS[0]: "n/a"}
    )
    launches = vn.parse_ncu_csv("\n".join([_HEAD, *rows]))
    assert [ln["id"] for ln in launches] == [9, 10], "sorted by ncu's ID: launch order"
    assert launches[0]["metrics"][vn.METRICS[0]] is None


def test_parse_ncu_csv_raw_page_and_empty():
    header = '"ID","Process ID","Process Name","Host Name","Kernel Name",' + ",".join(
        f'"{m}"' for m in vn.METRICS
    )
    units = '"","","","","",' + ",".join('""' for _ in vn.METRICS)
    vals = dict(zip(vn.METRICS, ["3", "2", "0", "0", "0", "0"]))
    row = '"0","1","python3","h","probe_ld_u16",' + ",".join(f'"{vals[m]}"' for m in vn.METRICS)
    launches = vn.parse_ncu_csv("\n".join([header, units, row]))
    assert len(launches) == 1
    ld_wave = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"
    assert launches[0]["metrics"][ld_wave] == float(vals[ld_wave])
    assert vn.parse_ncu_csv("==ERROR== nothing profiled\n") == []


# The first lines of ncu 2025.3.1's real output on the H200 (2026-11-29 validation run), verbatim.
_REAL_NCU = "\n".join(
    [
        ("==WARNING== Note: Running with uncontrolled GPU caches. Profiling results may be inconsistent."),
        (
            "==WARNING== Note: Running with unmodified GPU clocks. If not controlled otherwise, profi"
            "ling results may be inconsistent."
        ),
        "==PROF== Connected to process 599 (/usr/bin/python3.12)",
        "==PROF== Disconnected from process 599",
        (
            '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Siz'
            'e","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"'
        ),
        (
            '"0","599","python3.12","127.0.0.1","probe_st_v4_u32","1","7","(32, 1, 1)","(1, 1, 1)","0'
            '","9.0","Command line profiler metrics","l1tex__data_bank_conflicts_pipe_lsu_mem_shared_'
            'op_atom.sum","","0"'
        ),
        (
            '"0","599","python3.12","127.0.0.1","probe_st_v4_u32","1","7","(32, 1, 1)","(1, 1, 1)","0'
            '","9.0","Command line profiler metrics","l1tex__data_bank_conflicts_pipe_lsu_mem_shared_'
            'op_ld.sum","","0"'
        ),
        (
            '"0","599","python3.12","127.0.0.1","probe_st_v4_u32","1","7","(32, 1, 1)","(1, 1, 1)","0'
            '","9.0","Command line profiler metrics","l1tex__data_bank_conflicts_pipe_lsu_mem_shared_'
            'op_st.sum","","0"'
        ),
        (
            '"0","599","python3.12","127.0.0.1","probe_st_v4_u32","1","7","(32, 1, 1)","(1, 1, 1)","0'
            '","9.0","Command line profiler metrics","l1tex__data_pipe_lsu_wavefronts_mem_shared_op_a'
            'tom.sum","","0"'
        ),
        (
            '"0","599","python3.12","127.0.0.1","probe_st_v4_u32","1","7","(32, 1, 1)","(1, 1, 1)","0'
            '","9.0","Command line profiler metrics","l1tex__data_pipe_lsu_wavefronts_mem_shared_op_l'
            'd.sum","","0"'
        ),
        (
            '"0","599","python3.12","127.0.0.1","probe_st_v4_u32","1","7","(32, 1, 1)","(1, 1, 1)","0'
            '","9.0","Command line profiler metrics","l1tex__data_pipe_lsu_wavefronts_mem_shared_op_s'
            't.sum","","4"'
        ),
        (
            '"1","599","python3.12","127.0.0.1","probe_st_u16","1","7","(32, 1, 1)","(1, 1, 1)","0","'
            '9.0","Command line profiler metrics","l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_'
            'atom.sum","","0"'
        ),
        (
            '"1","599","python3.12","127.0.0.1","probe_st_u16","1","7","(32, 1, 1)","(1, 1, 1)","0","'
            '9.0","Command line profiler metrics","l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_'
            'ld.sum","","0"'
        ),
        (
            '"1","599","python3.12","127.0.0.1","probe_st_u16","1","7","(32, 1, 1)","(1, 1, 1)","0","'
            '9.0","Command line profiler metrics","l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_'
            'st.sum","","0"'
        ),
        (
            '"1","599","python3.12","127.0.0.1","probe_st_u16","1","7","(32, 1, 1)","(1, 1, 1)","0","'
            '9.0","Command line profiler metrics","l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom'
            '.sum","","0"'
        ),
        (
            '"1","599","python3.12","127.0.0.1","probe_st_u16","1","7","(32, 1, 1)","(1, 1, 1)","0","'
            '9.0","Command line profiler metrics","l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.s'
            'um","","0"'
        ),
        (
            '"1","599","python3.12","127.0.0.1","probe_st_u16","1","7","(32, 1, 1)","(1, 1, 1)","0","'
            '9.0","Command line profiler metrics","l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.s'
            'um","","1"'
        ),
    ]
)


def test_parse_real_ncu_output():
    launches = vn.parse_ncu_csv(_REAL_NCU)
    assert [ln["kernel"] for ln in launches] == ["probe_st_v4_u32", "probe_st_u16"]
    assert vn.measured_counts(launches[0], "store") == (4, 0)
    assert vn.measured_counts(launches[1], "store") == (1, 0)
    assert all(len(ln["metrics"]) == 6 for ln in launches)
    assert vn.measured_counts(launches[0], "load") == (0, 0)


def test_counted_by_prefers_the_instructions_own_counter_then_the_totals():
    own = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum"
    own_c = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum"
    sass = "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum"
    sass_c = "sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum"
    total, total_c = vn.TOTALS
    launch = {"metrics": {total: 9.0, total_c: 5.0}}
    assert vn.counted_by(launch, "ldmatrix.x4") == (9, 5, total)
    launch["metrics"].update({sass: 8.0, sass_c: 4.0})
    assert vn.counted_by(launch, "ldmatrix.x4.trans") == (8, 4, sass)
    launch["metrics"].update({own: 4.0, own_c: 0.0})
    assert vn.counted_by(launch, "ldmatrix.x1") == (4, 0, own)
    assert vn.counted_by({"metrics": {}}, "cp.async") == (None, None, None)
    assert vn.measured_counts({"metrics": {total: 3.0, total_c: 1.0}}, "stmatrix.x2") == (3, 1)


def test_extra_metrics_asks_only_for_counters_the_gpu_lists():
    assert vn.extra_metrics({"ldsm", "ldgsts"}, None) == list(vn.TOTALS), "no list: the sure totals only"
    avail = {
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldgsts",
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts",
    }
    avail |= {"sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm", "unrelated__metric"}
    got = vn.extra_metrics({"ldsm", "ldgsts"}, avail)
    assert got == [
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum",
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum",
        "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum",
        *vn.TOTALS,
    ]


def test_counted_by_reads_each_cp_async_form_from_its_own_counter():
    """H200, 2026-12-01: the .cg probes were read from the ``_cache_access`` pair, which counts only .ca and
    read 0; a form now skips the other form's pair (and with neither pair falls back on the totals)."""
    pre = "sm__sass_l1tex_data_{}_mem_shared_op_ldgsts_cache_{}.sum"
    access = (pre.format("pipe_lsu_wavefronts", "access"), pre.format("bank_conflicts_pipe_lsu", "access"))
    bypass = (pre.format("pipe_lsu_wavefronts", "bypass"), pre.format("bank_conflicts_pipe_lsu", "bypass"))
    total, total_c = vn.TOTALS
    launch = {
        "metrics": {access[0]: 0.0, access[1]: 0.0, bypass[0]: 8.0, bypass[1]: 4.0, total: 8.0, total_c: 4.0}
    }
    assert vn.counted_by(launch, "cp.async", "cp.async.cg") == (8, 4, bypass[0])
    assert vn.counted_by(launch, "cp.async") == (0, 0, access[0]), "no form: the first pair, as before"
    launch = {"metrics": {access[0]: 5.0, access[1]: 1.0, bypass[0]: 0.0, bypass[1]: 0.0}}
    assert vn.counted_by(launch, "cp.async", "cp.async.ca") == (5, 1, access[0])
    assert vn.measured_counts(
        {"metrics": {access[0]: 0.0, access[1]: 0.0, total: 3.0, total_c: 1.0}}, "cp.async", "cp.async.cg"
    ) == (3, 1)
