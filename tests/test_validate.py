"""Tests for ``autopad validate``'s entry points (autopad/validate.py): the whole ncu path with a fake ``ncu``
that answers from the model (or from the model off by one), for load/store/atomic and for ldmatrix/stmatrix/
cp.async; the ``validate`` parser; importing needs numpy only. GPU: a handful of probes end to end (timing
mode where ncu is absent).

The parts have their own tests: test_validate_probes.py, test_validate_kernels.py, test_validate_ncu.py,
test_validate_stride.py, test_validate_report.py, test_validate_cuda.py (the launcher).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from split_checks import assert_reexported
from validate_fixtures import FIXTURE
from validate_fixtures import NCU_HEAD as _HEAD

from autopad import validate as v
from autopad import validate_cuda as vc

# ------------------------------------------------------------------------------------------- fake ncu
_FAKE_NCU = textwrap.dedent(
    """\
    #!{python}
    # A stand-in for ncu: reads the launcher's arguments, answers every probe from the model (+ OFFSET
    # on the first), prints ncu's CSV layout, and writes the launched count as the launcher would.
    import json, sys
    sys.path.insert(0, {root!r})
    from autopad import validate as v
    from autopad import validate_cuda as vc
    args = sys.argv[1:]
    probes = json.load(open(args[args.index("--launch") + 1]))
    for p in probes:
        p["name"] = "x"
    pred = v.predict(probes)
    print("==PROF== Connected to process 1")
    print({head!r})
    for i, (p, (w, c)) in enumerate(zip(probes, pred)):
        if i == 0:
            w, c = w + {offset}, c + {offset}
        pre = '"%d","1","python3","h","%s","1","7","(32, 1, 1)","(1, 1, 1)","0","9.0","s"' % (
            i, vc.kernel_name(p["op"], p["access_bytes"]))
        o = vc._SHORT[p["op"]]
        for m in vc.METRICS:
            val = (w if "wavefronts" in m else c) if "_op_%s." % o in m else 0
            print('%s,"%s","","%d"' % (pre, m, val))
    open(args[args.index("--launched") + 1], "w").write(str(len(probes)))
    """
)


@pytest.mark.parametrize("offset,status", [(0, 0), (1, 1)])
def test_validate_with_fake_ncu(tmp_path, monkeypatch, offset, status):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    ncu = bindir / "ncu"
    root = str(Path(v.__file__).resolve().parent.parent)
    ncu.write_text(_FAKE_NCU.format(python=sys.executable, root=root, head=_HEAD, offset=offset))
    ncu.chmod(ncu.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    fixture = tmp_path / "fx.json"
    fixture.write_text(json.dumps({"probes": json.loads(FIXTURE.read_text())["probes"][:20]}))
    out = tmp_path / "out"
    rc = v.main(["--out", str(out), "--random", "11", "--fixture", str(fixture), "--seed", "5"])
    assert rc == status
    rep = json.loads((out / "validate_ncu.json").read_text())
    assert rep["summary"]["measured"] == rep["summary"]["probes"] == len(v.generate_probes(5, 11)) + 20
    assert rep["summary"]["disagree"] == offset
    assert (out / "validate_ncu.csv").is_file() and (out / "ncu_raw.csv").is_file()


def test_add_validate_parser_wires_a_handler():
    import argparse

    parser = argparse.ArgumentParser(prog="autopad")
    sub = parser.add_subparsers(dest="command")
    v.add_validate_parser(sub)
    args = parser.parse_args(["validate", "--out", "x", "--random", "3", "--seed", "2", "--no-ncu"])
    assert args.func is v.run_validate
    assert (args.out, args.random, args.seed, args.no_ncu) == ("x", 3, 2, True)


def test_import_needs_numpy_only():
    code = (
        "import sys, autopad.validate, autopad.validate_cuda; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('torch', 'triton', 'cupy', 'cuda')]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ------------------------------------------------------------------------------------------- GPU
@pytest.mark.gpu
def test_gpu_end_to_end(tmp_path):
    """A handful of probes under ncu where it exists; else a short stride table (stride 1 vs 32)."""
    if vc.find_ncu() is not None:
        probes = [
            p for p in v.generate_probes(seed=0, n_random=0) if p["name"] in ("stride1+0", "stride32+0")
        ]
        probes = [{**p, "source": "generated"} for p in probes]
        launches = vc.run_ncu(probes, tmp_path, budget_s=120)
        assert len(launches) == len(probes)
        measured = [vc.measured_counts(ln, p["op"]) for p, ln in zip(probes, launches)]
        rep = v.compare(probes, measured)
        assert rep["summary"]["disagree"] == 0, rep["disagreements"]
    else:
        t = v.stride_table([1, 2, 32, 33], vc.time_strides([1, 2, 32, 33], iters=1024, reps=5))
        slow = {r["stride"]: r["slowdown"] for r in t["rows"]}
        assert slow[32] > 4 * slow[33] and slow[32] > slow[2]


_FAKE_NCU_NEW = textwrap.dedent(
    """\
    #!{python}
    # A stand-in for ncu with ldmatrix/stmatrix/cp.async: --query-metrics lists a few counters (ldsm only
    # in its sm__sass_ spelling, stsm not at all); a profiling run answers every probe from the model
    # (+ OFFSET on the first) in the counter validate_cuda would pick, and the totals.
    import json, sys
    sys.path.insert(0, {root!r})
    from autopad import validate as v
    from autopad import validate_cuda as vc
    args = sys.argv[1:]
    if "--query-metrics" in args:
        print("Device NVIDIA H200 (GH100)")
        print("Metric Name                                                   Metric Description")
        for m in ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld",
                  "l1tex__data_pipe_lsu_wavefronts_mem_shared",
                  "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm",
                  "sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm",
                  "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldgsts",
                  "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts"):
            print(m + "    # of wavefronts")
        sys.exit(0)
    requested = args[args.index("--metrics") + 1].split(",")
    open({log!r}, "a").write(",".join(requested) + "\\n")
    probes = json.load(open(args[args.index("--launch") + 1]))
    for p in probes:
        p["name"] = "x"
    pred = v.predict(probes)
    print({head!r})
    for i, (p, (w, c)) in enumerate(zip(probes, pred)):
        if i == 0:
            w, c = w + {offset}, c + {offset}
        pre = '"%d","1","python3","h","%s","1","7","(32, 1, 1)","(1, 1, 1)","0","9.0","s"' % (
            i, vc.probe_kernel_name(p))
        fam = vc._family(p["op"])
        own = [m for m in requested if fam and "_op_" + fam in m]
        for m in requested:
            hit = m in own or (not own and m in vc.TOTALS)
            hit = hit or (fam is None and "_op_%s." % vc._SHORT[p["op"]] in m)
            val = (w if "wavefronts" in m else c) if hit else 0
            print('%s,"%s","","%d"' % (pre, m, val))
    open(args[args.index("--launched") + 1], "w").write(str(len(probes)))
    """
)


@pytest.mark.parametrize("offset,status", [(0, 0), (1, 1)])
def test_validate_new_ops_with_fake_ncu(tmp_path, monkeypatch, offset, status):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    ncu = bindir / "ncu"
    root = str(Path(v.__file__).resolve().parent.parent)
    log = tmp_path / "metrics.log"
    ncu.write_text(
        _FAKE_NCU_NEW.format(python=sys.executable, root=root, head=_HEAD, offset=offset, log=str(log))
    )
    ncu.chmod(ncu.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    out = tmp_path / "out"
    rc = v.main(
        ["--out", str(out), "--ops", "ldmatrix,stmatrix,cp.async", "--random-per-form", "2", "--seed", "3"]
    )
    assert rc == status
    rep = json.loads((out / "validate_ncu.json").read_text())
    n = len(v.generate_new_probes(3, 2))
    assert rep["summary"]["measured"] == rep["summary"]["probes"] == n
    assert rep["summary"]["disagree"] == offset
    groups = {g["op"] for g in rep["groups"]}
    # one group per instruction form; cp.async's split by its source's order (model_cp_async.line_ordered)
    assert {g.split(" ")[0] for g in groups} == {f for _, _, f in vc.NEW_FORMS}
    assert {g.split(" ", 1)[1] for g in groups if " " in g} == {"line-ordered", "permuted"}
    assert all(" " in g for g in groups if g.startswith("cp.async"))
    used = {r["form"]: r["metric"] for r in rep["rows"]}
    assert used["ldmatrix.x4"] == "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum"
    assert used["stmatrix.x1"] == vc.TOTALS[0], "no stsm counter listed: the totals"
    assert used["cp.async.cg"] == "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum"
    requested = log.read_text().splitlines()[0].split(",")
    assert "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_stsm.sum" not in requested, (
        "never an unlisted counter"
    )
    assert set(vc.METRICS) | set(vc.TOTALS) <= set(requested)
    header = (out / "validate_ncu.csv").read_text().splitlines()[0].split(",")
    assert {"form", "metric", "global"} <= set(header) and header[-1] == "addresses"


def test_validate_rejects_unknown_ops(tmp_path):
    with pytest.raises(ValueError, match=r"^ops:"):
        v.validate(tmp_path, ops=["ldmatrix", "wgmma"], use_ncu=False)


# ------------------------------------------------------------------------------------------- the split
def test_every_name_validate_and_validate_cuda_defined_is_the_object_of_its_new_home():
    from autopad import validate_kernels, validate_ncu, validate_probes, validate_report, validate_stride

    homes = {
        validate_probes: "COMBOS STRIDES _structured _random generate_probes FAMILIES _matrix_cases "
        "_cp_async_cases generate_new_probes predict analyze_batch",
        validate_report: "compare _addr_text write_report print_report",
        validate_stride: "SEED_STRIDES spearman predicted_stride_degree stride_table _print_stride",
        validate_ncu: "METRICS find_ncu extra_metrics query_metrics counted_by run_ncu",
        validate_kernels: "GLOBAL_BYTES NEW_FORMS SMEM_BYTES probe_kernel_name",
    }
    assert_reexported(v, homes)
    homes = {
        validate_kernels: "SMEM_BYTES _OPS _SHORT _TYPES GLOBAL_BYTES _MATRIX_OPS NEW_FORMS _MATRIX _FAMILY "
        "_family kernel_name probe_kernel_name _ptx probe_source new_probe_source any_probe_source "
        "stride_source",
        validate_ncu: "METRICS _CANDIDATES TOTALS query_metrics extra_metrics find_ncu _number parse_ncu_csv "
        "measured_counts counted_by run_ncu",
    }
    assert_reexported(vc, homes)
    for name in ("validate", "add_validate_parser", "run_validate", "main", "_load_fixture", "_add_args"):
        assert getattr(v, name).__module__ == "autopad.validate"
    for name in ("launch_probes", "time_strides", "_address_matrix"):
        assert getattr(vc, name).__module__ == "autopad.validate_cuda"
    assert vc._DEFINES == {"AUTOPAD_VALIDATE": 1}
