"""benchmarks/probe_cp_async_cg.py, probe_cp_async_ca.py and ab_tune_constants.py, the parts that run without
a GPU: the probe lists (deterministic, valid for the probe kernel, what the rule was read off), the copies'
text, the variant's constants and the refusal without a GPU."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import ab_tune_constants as ab  # noqa: E402
import probe_cp_async_ca as pca  # noqa: E402
import probe_cp_async_cg as pc  # noqa: E402

from autopad.model import analyze_batch  # noqa: E402
from autopad.validate_kernels import GLOBAL_BYTES, SMEM_BYTES  # noqa: E402


def test_the_probe_list_is_deterministic_and_fits_the_probe_kernel():
    ps = pc.probes(0)
    assert len(ps) == 252 and ps == pc.probes(0) and ps != pc.probes(1)
    assert len({p["name"] for p in ps}) == 252
    for p in ps:
        assert p["op"] == "cp.async" and p["form"] == "cp.async.cg" and p["access_bytes"] == 16
        assert all(a is None or (0 <= a <= SMEM_BYTES - 16 and a % 16 == 0) for a in p["addresses"])
        assert all(0 <= g <= GLOBAL_BYTES - 16 and g % 16 == 0 for g in p["global"])
    pair = next(p for p in ps if p["name"] == "pair-sa0-gb2-sb6")
    assert pc.copies_text(pair) == "0:0.0>0.0 1:0.2>0.6"
    # the rule costs the committed seed-0 list as H100 run 179 measured it (the fixture's rows of that run)
    shared = np.array([[-1 if a is None else a for a in p["addresses"]] for p in ps], dtype=np.int64)
    wave, _ = analyze_batch(shared, 16, "cp.async.cg", global_addresses=np.array([p["global"] for p in ps]))
    assert wave[[p["name"] for p in ps].index("pair-sa0-gb2-sb6")] == 1
    assert wave[[p["name"] for p in ps].index("perm-rot1")] == 2


def test_the_variant_names_fields_of_the_constants_and_no_gpu_is_refused(monkeypatch, tmp_path):
    assert ab.parse_set("smem_issue=0, overlap=0.25") == {"smem_issue": 0.0, "overlap": 0.25}
    with pytest.raises(SystemExit, match="not a field of Constants"):
        ab.parse_set("no_such=1")
    monkeypatch.setenv("AUTOPAD_NO_BENCH", "1")
    with pytest.raises(SystemExit):
        ab.main(["--shapes", "64x64x64", "--set", "smem_issue=0", "--out", str(tmp_path)])
    assert not (tmp_path / "ab_tune.csv").exists()


def test_the_ca_probe_list_fits_the_probe_kernel_and_takes_the_recorded_miss_apart():
    ps = pca.probes()
    assert ps == pca.probes() and len({p["name"] for p in ps}) == len(ps)
    for p in ps:
        w = p["access_bytes"]
        assert p["op"] == "cp.async" and p["form"] == "cp.async.ca" and w in (4, 8, 16)
        assert all(a is None or (0 <= a <= SMEM_BYTES - w and a % w == 0) for a in p["addresses"])
        assert all(0 <= g <= GLOBAL_BYTES - w and g % w == 0 for g in p["global"])
    by = {p["name"]: p for p in ps}
    assert pc.copies_text(by["w8-x2-gb3-r1u1"]) == "0:0.0>0.0 1:1.3>1.1"
    assert pc.copies_text(by["w16-q2-gb1-r0u1"]) == "0:0.0>0.0 8:1.1>0.1"

    def wave(p):
        shared = np.array([[-1 if a is None else a for a in p["addresses"]]], dtype=np.int64)
        glob = np.array([p["global"]], dtype=np.int64)
        return int(analyze_batch(shared, p["access_bytes"], "cp.async", global_addresses=glob)[0][0])

    # autopad validate's gperm-halves-mod7 (8 bytes), rebuilt lane for lane (H100 run 181 measured 6; the
    # lines-summed rule said 8, today's says 6)
    import json

    run181 = Path(__file__).resolve().parents[1] / "benchmarks/results/h100/2026-12-05/run181"
    rows = json.loads((run181 / "validate_seed2/validate_ncu.json").read_text())["rows"]
    rec = next(r for r in rows if r["name"] == "gperm-halves-mod7" and r["access_bytes"] == 8
               and r["form"] == "cp.async.ca")  # fmt: skip
    assert (
        by["w8-mod7-full"]["addresses"] == rec["addresses"] and by["w8-mod7-full"]["global"] == rec["global"]
    )
    assert wave(by["w8-mod7-full"]) == rec["measured_wavefronts"] == 6 and wave(by["w8-mod7-line0"]) == 4
    assert (
        wave(by["w16-klinec-k5"]) == 5 and wave(by["w16-kline0-k5"]) == 5 and wave(by["w16-klinek-k5"]) == 1
    )


def test_the_variant_can_change_a_spec_modules_constant(capsys, tmp_path):
    import autopad.kernels.cuda.matmul_cost as C

    from autopad.request import resolve

    resolve("matmul", "cuda", "float32")  # loads the spec's modules
    hits = ab.spec_modules(["REG_CAP_SLACK", "REG_CAP_COST"])
    assert (C, "REG_CAP_SLACK", C.REG_CAP_SLACK) in hits and (C, "REG_CAP_COST", C.REG_CAP_COST) in hits
    import autopad.search_shortlist as S
    import autopad.strategies.model as M

    hits = ab.spec_modules(["TWIN_SWEEP_MARGIN"])  # a tuner constant: both modules that bind it
    assert {m for m, _, _ in hits} == {S, M} and all(v == S.TWIN_SWEEP_MARGIN for _, _, v in hits)
    with pytest.raises(SystemExit, match="no loaded kernel or tuner module defines NO_SUCH"):
        ab.spec_modules(["NO_SUCH"])
    with pytest.raises(SystemExit):  # neither --set nor --spec-set: nothing to compare
        ab.main(["--shapes", "64x64x64", "--out", str(tmp_path)])
    assert "give --set, --spec-set or both" in capsys.readouterr().err


def test_a_spec_set_without_a_number_is_refused_plainly(capsys, tmp_path):
    for bad in ("REG_CAP_SLACK", "REG_CAP_SLACK=", "REG_CAP_SLACK=abc"):
        with pytest.raises(SystemExit):
            ab.main(["--shapes", "64x64x64", "--spec-set", bad, "--out", str(tmp_path)])
        assert "is not NAME=number" in capsys.readouterr().err


def test_the_phase_probes_take_run_181s_permuted_probes_apart_phase_by_phase():
    ps = pca.phase_probes()
    assert ps == pca.phase_probes() and len(ps) == 705 and len({p["name"] for p in ps}) == 705
    for p in ps:
        w = p["access_bytes"]
        per = 128 // w
        active = [lane for lane, a in enumerate(p["addresses"]) if a is not None]
        assert len({lane // per for lane in active}) == 1  # one store phase alone
        assert len({p["global"][lane] // 128 for lane in active}) >= 2  # from several lines
        assert all(0 <= g <= GLOBAL_BYTES - w and g % w == 0 for g in p["global"])
    # the three variants of a phase move the same copies between its lanes
    for i in range(0, len(ps), 3):
        copies = [sorted((p["global"][ln], a) for ln, a in enumerate(p["addresses"]) if a is not None)
                  for p in ps[i : i + 3]]  # fmt: skip
        assert copies[0] == copies[1] == copies[2]
        assert [p["name"].rsplit("-", 1)[1] for p in ps[i : i + 3]] == ["alone", "rev", "swap"]


def test_the_ca_speed_comparison_times_both_kernels_and_refuses_a_checkout_without_one(capsys, tmp_path):
    """bench_ca_speed.py --against: both checkouts' compiled kernels on every width and source (here this
    checkout against itself, on a small batch), and autopad's own cached kernels still load in a fresh
    process afterwards (the other checkout's compile apart: loaded by path, it once left cache entries there
    that no process could import); a folder without the kernel is refused by name."""
    pytest.importorskip("numba")
    import bench_ca_speed as bcs

    root = Path(__file__).resolve().parents[1]
    bcs.against(root, rounds=1, n=4000)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("width=")]
    assert len(lines) == 9 and all("this: median" in line and "other: median" in line for line in lines)
    code = (
        "import numpy as np; from autopad.model import analyze_batch\n"
        "a = np.arange(30000 * 32).reshape(30000, 32) % 1000\n"
        "for w in (4, 8, 16): analyze_batch(a * w, w, 'cp.async', global_addresses=a * w)\n"
    )
    env = {**os.environ, "AUTOPAD_MODEL_BACKEND": "numba", "PYTHONPATH": str(root)}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    with pytest.raises(SystemExit, match="no autopad/_model_numba_ca.py"):
        bcs.against(tmp_path, rounds=1, n=10)
