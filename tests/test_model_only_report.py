"""The model-only report's noise ceiling (benchmarks/noise_ceiling.py, model_only_report.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import noise_ceiling as noise  # noqa: E402

from autopad.validate import spearman  # noqa: E402


def _card_row(run: str, family: str, shape: str, pick: float) -> dict:
    """A scored row of a sample, as model_only_report.evaluate writes it."""
    return {"run": run, "family": family, "shape": shape, "pick_over_best": pick, "spearman": 0.9}


def test_median_se_matches_simulated_medians():
    # the standard error the IQR predicts for a median of 10 normal timings is what simulation shows
    rng = np.random.default_rng(1)
    x = rng.normal(100.0, 2.0, size=(20000, noise.REPS))
    iqr = np.subtract(*np.percentile(x, [75, 25], axis=1))
    predicted = float(np.median(noise.median_se(iqr)))
    observed = float(np.median(x, axis=1).std())
    assert predicted == pytest.approx(observed, rel=0.15)


def test_pairs_within_noise_agrees_with_brute_force():
    rng = np.random.default_rng(2)
    ms = rng.uniform(1.0, 2.0, 301)
    se = rng.uniform(0.0, 0.05, 301)
    ms[7] = np.nan
    ok = ~np.isnan(ms)
    m, s = ms[ok], se[ok]
    n = len(m)
    close = sum(abs(m[i] - m[j]) < 2 * np.hypot(s[i], s[j]) for i in range(n) for j in range(n) if i != j)
    assert noise.pairs_within_noise(ms, se, chunk=64) == pytest.approx(close / (n * (n - 1)))


def test_ceiling_is_one_without_noise_and_falls_with_it():
    ms = np.linspace(1.0, 2.0, 200)
    assert noise.ceiling(ms, np.zeros(200), spearman, draws=5) == pytest.approx(1.0)
    small = noise.ceiling(ms, np.full(200, 0.01), spearman, draws=20)
    large = noise.ceiling(ms, np.full(200, 0.3), spearman, draws=20)
    assert 1.0 > small > large > 0.0


def test_retest_reports_the_spread_of_two_measurements():
    rng = np.random.default_rng(3)
    true = rng.uniform(1.0, 3.0, 500)
    a = true * np.exp(rng.normal(0, 0.01, 500))
    b = true * np.exp(rng.normal(0, 0.01, 500))
    iqr = np.full(500, 0.0)  # the IQRs predict no spread: inflation reads the whole observed spread
    r = noise.retest(a, iqr, b, iqr, noise.REPS, spearman)
    assert r["n"] == 500
    assert r["log_ratio_sd"] == pytest.approx(0.01 * np.sqrt(2), rel=0.15)
    assert r["spearman"] > 0.99
    assert noise.inflation([r]) == 1.0  # a zero prediction is left out, and inflation is at least 1
    assert noise.inflation([{"log_ratio_sd": 0.03, "iqr_predicted_sd": 0.01}]) == pytest.approx(3.0)


def test_a_later_extra_replaces_the_same_configuration_shape_and_names_come_from_run_folders(tmp_path):
    import model_only_report as mor

    def shape(run, kernel, dtype, s):
        return mor.Shape(run, kernel, "cuda", dtype, s, [], [], [], None, None, [], {}, np.array([]), None)

    shapes = [
        shape("run1", "matmul", "float32", "2048x2048x2048"),
        shape("run8", "matmul", "float32", "768x1536x1024"),
        shape("run8", "histogram", "int32", "1048576x1000"),
        shape("run20/round1", "matmul", "float32", "768x1536x1024"),
        shape("run20/round1", "matmul", "float32", "2048x2048x2048"),  # never replaces a recorded study
    ]
    kept, gone = mor.supersede(shapes)
    assert mor.supersede(shapes[::-1])[1] == gone  # by run number, not by the order of the files
    assert [(s.run, s.shape) for s in kept] == [
        ("run1", "2048x2048x2048"),
        ("run8", "1048576x1000"),
        ("run20/round1", "768x1536x1024"),
        ("run20/round1", "2048x2048x2048"),
    ]
    assert gone == [("run8", "matmul", "float32", "768x1536x1024")]
    for rel, name in (("run8/rows.csv.gz", "run8"), ("run20/round1/rows.csv.gz", "run20/round1")):
        p = tmp_path / rel
        p.parent.mkdir(parents=True)
        assert mor.extra_name(p) == name


def test_todays_studies_replace_only_each_other_and_stand_apart_in_the_trust_file():
    import model_only_report as mor

    def shape(run, s):
        return mor.Shape(
            run, "transpose", "cuda", "float16", s, [], [], [], None, None, [], {}, np.array([]), None
        )

    shapes = [
        shape("run34", "4097x8191"),
        shape("run46/study", "4097x8191"),
        shape("run67/study", "8192x8192"),
    ]
    # a sample (run 34) and today's exhaustive study of the same shape (run 46): both kept, each in its place
    kept, gone = mor.supersede(shapes, frozenset({"run46/study", "run67/study"}))
    assert len(kept) == 3 and gone == []
    assert len(mor.supersede(shapes)[0]) == 2  # as plain extras the later run replaced the earlier

    def row(run, shape, pick, rho, default=None):
        r = {"run": run, "family": "transpose [cuda] float16", "shape": shape, "pick_over_best": pick,
             "spearman": rho}  # fmt: skip
        if default is not None:
            r.update(pick_over_default=default, pick_vs_default_z=10.0 if default > 1 else -10.0)
        return r

    recorded = [row("run2", "16384x16384", 1.041, 0.94, 0.37), row("run2", "8192x8192", 1.025, 0.94, 0.38)]
    current = [
        row("run67/study", "8192x8192", 1.019, 0.95, 0.35),
        row("run46/study", "4097x8191", 1.09, 0.85, 1.02),
    ]
    out = mor.trust_json(recorded, "src", (), current)
    fam = out["families"]["transpose/cuda/float16"]
    assert fam["shapes"] == 2 and fam["worst"] == 1.041  # the recorded figures are not mixed with today's
    cur = fam["current"]
    assert (cur["shapes"], cur["within_2pct"], cur["within_10pct"], cur["worst"]) == (2, 1, 2, 1.09)
    assert cur["slower_than_default"] == cur["slower_beyond_noise"] == 1 and cur["spearman_min"] == 0.85
    assert cur["informed"] == 2 and set(cur["informed_list"]) == {
        "8192x8192 (run67/study)",
        "4097x8191 (run46/study)",
    }
    # the minimum rank correlation is rounded down, so that one under the 0.8 bar stays under it
    low = mor.trust_json(recorded, "src", (), [dict(current[0], spearman=0.797)])
    assert low["families"]["transpose/cuda/float16"]["current"]["spearman_min"] == 0.79
    # a family only today's studies measured: kept apart, not mixed into a recorded family's figures
    other = mor.trust_json(recorded, "src", (), [dict(current[0], family="histogram [cuda] int64")])
    assert "histogram/cuda/int64" not in other["families"]
    assert other["current_only"]["histogram/cuda/int64"]["shapes"] == 1


def test_a_sample_and_todays_study_of_one_shape_are_not_paired_as_a_retest(tmp_path):
    import model_only_report as mor

    keys = ["A=1", "A=2", "A=3"]

    def shape(run, ms):
        iqr = np.array([0.01, 0.01, 0.01])
        return mor.Shape(run, "transpose", "cuda", "float16", "4097x8191", keys, [], [], None, None, [], {},
                         np.array(ms), None, iqr)  # fmt: skip

    pair = [shape("run34", [1.0, 2.0, 3.0]), shape("run46/study", [1.1, 2.1, 3.2])]
    assert len(mor.repeats(pair, tmp_path)) == 1  # two samples of one shape: a retest
    assert mor.repeats(pair, tmp_path, frozenset({"run46/study"})) == []  # a sample beside today's study
    assert len(mor.repeats(pair, tmp_path, frozenset({"run34", "run46/study"}))) == 1


def test_two_files_of_one_run_name_are_refused_with_the_flag_that_named_them(tmp_path, capsys):
    import model_only_report as mor

    a, b = tmp_path / "x" / "run8" / "rows.csv.gz", tmp_path / "y" / "run8" / "rows.csv.gz"
    for p in (a, b):
        p.parent.mkdir(parents=True)
        p.write_bytes(b"")
    with pytest.raises(SystemExit):
        mor.main(["--extra", str(a), "--current", str(b)])
    assert "--current: two files named 'run8'" in capsys.readouterr().err


def test_repeats_leave_out_two_runs_of_one_shape_that_share_no_candidate(tmp_path):
    # the Gluon GEMM's space gained constants after the recorded study: the same shape measured again has
    # other keys, and a retest of zero candidates would print a row of NaNs
    import model_only_report as mor

    def shape(run, keys, ms):
        a = np.array(ms, dtype=float)
        return mor.Shape(run, "matmul", "triton", "bfloat16", "4096x4096x4096", keys, [], [], None, None, [],
                         {}, a, None, iqr=a * 0.01)  # fmt: skip

    old = shape("run2", ["BM=128", "BM=64", "BM=256"], [1.0, 2.0, 3.0])
    assert mor.repeats([old, shape("run48", ["PATH=0", "PATH=1"], [1.0, 2.0])], tmp_path) == []
    same = mor.repeats([old, shape("run48", ["BM=256", "BM=128", "BM=64"], [3.1, 1.0, 2.1])], tmp_path)
    assert [r["what"] for r in same] == [
        "matmul [triton] bfloat16 4096x4096x4096: run2 against run48 (every candidate)"
    ]
    assert same[0]["spearman"] > 0.99


def test_the_reports_answer_is_the_one_tune_gives():
    """The report scores what ``autopad.tune`` answers without a GPU (``search_shortlist.model_pick``): on the
    SIMT GEMM at 2048^3 the unpadded twin of the first-ranked PAD 4 / 4 layout, not the first."""
    import model_only_report as mor

    from autopad.kernels_registry import builtin_spec
    from autopad.search import baselines, model_pick, rank

    mm, shape = builtin_spec("matmul", "cuda"), (2048, 2048, 2048)
    ranked = rank(mm, shape, "float32", extra=baselines(mm, shape, "float32"))
    consts = [dict(c.params) for c in ranked]
    default = next(i for i, c in enumerate(ranked) if "unpadded" in c.roles)
    keys = [c.key for c in ranked]
    s = mor.Shape("runX", "matmul", "cuda", "float32", "2048x2048x2048", keys, consts, [], None, None, [], {},
                  np.ones(len(ranked)), default)  # fmt: skip
    seconds = np.array([c.prediction.seconds for c in ranked])
    got = mor.answer(s, seconds, list(range(len(ranked))))
    assert keys[got] == model_pick(mm, ranked).key != keys[0]


def test_rows_a_fit_or_a_term_choice_saw_are_not_counted_as_held_out():
    import model_only_report as mor

    row = _card_row

    seen = sorted(mor.FITTED_ON)
    assert ("run149", "transpose [cuda] int8", "4100x8192") in mor.FITTED_ON  # the seam charge's shape
    # the flush term's shape, measured again on today's kernel, is still the shape it was fitted on
    assert ("run165/round1", "histogram [cuda] int32", "1048576x1000") in mor.FITTED_ON
    sampled = [row(*key, 1.5) for key in seen] + [
        row("run227/round17", "transpose [cuda] int8", "5000x5003", 1.04),
        row("run10", "histogram [cuda] int32", "300000x300", 1.06),
        # every CUDA transpose before run 227 was scored when its partial round was chosen
        row("run152", "transpose [cuda] int8", "6145x20479", 1.03),
    ]
    recorded = [row("run1", "histogram [cuda] int32", "67108864x256", 1.01)]
    out = mor.trust_json(recorded, "src", sampled)
    # a family with a recorded study: its held-out sample figures leave out run 8's fitted histogram
    hist = out["families"]["histogram/cuda/int32"]["sampled"]
    assert hist["shapes_list"] == ["300000x300"] and hist["worst"] == 1.06
    # a family only samples measured: the shapes a term was chosen on are not in its held-out figures
    int8 = out["sampled_only"]["transpose/cuda/int8"]
    assert int8["shapes_list"] == ["5000x5003"] and int8["worst"] == 1.04
    # ... and they are stated apart, not dropped: a family's misses among them still reach its sentence
    assert "1048576x1000" in out["families"]["histogram/cuda/int32"]["sampled_seen"]["shapes_list"]
    assert out["families"]["histogram/cuda/int32"]["sampled_seen"]["worst"] == 1.5
    assert {"4100x8192", "8193x16383", "6145x20479"} <= set(int8["seen"]["shapes_list"])
    f32 = out.get("sampled_only", {}).get("transpose/cuda/float32", {})
    assert f32.get("shapes") == 0 and f32["seen"]["shapes"] == 3  # only term-choice rows: no held-out ones


def test_the_shipped_trust_file_counts_no_row_a_fit_saw_as_held_out():
    import json

    import model_only_report as mor

    from autopad import trust

    data = json.loads(trust.TRUST_FILE.read_text())
    for _, family, shape in mor.FITTED_ON:
        key = mor._family_key(family)
        held = data.get("families", {}).get(key, {}).get("sampled") or data.get("sampled_only", {}).get(key)
        assert held is None or shape not in held.get("shapes_list", []), (family, shape)
    # every H200 sample of a CUDA transpose predates round 17, so none is held out from the partial round
    for key in [k for k in data.get("families", {}) if k.startswith("transpose/cuda/")]:
        assert "sampled" not in data["families"][key], key
    for key in [k for k in data.get("sampled_only", {}) if k.startswith("transpose/cuda/")]:
        assert data["sampled_only"][key]["shapes"] == 0, key
    # nor on the other card: round 17's fp16 shape the halo term was read off is out, round 18's are in
    h100 = data["other_gpus"]["NVIDIA H100"]
    for run, family, shape in mor.FITTED_ON:
        held = h100.get(mor._family_key(family), {}).get("shapes_list", [])
        assert shape not in held, (run, family, shape)
    assert {"3001x2049", "6001x1999"} <= set(h100["transpose/cuda/float16"]["shapes_list"])
    assert mor.chosen_on("run175/round10", "transpose [cuda] float32")
    assert not mor.chosen_on("run227/round17", "transpose [cuda] float32")
    assert not mor.chosen_on("run175/round11", "matmul [cuda] float32")


def test_held_out_rows_of_another_card_are_kept_by_card_and_family_apart_from_the_h200_figures():
    import model_only_report as mor

    row = _card_row

    recorded = [row("run1", "histogram [cuda] int32", "67108864x256", 1.01)]
    other = [
        row("run227/round17", "transpose [cuda] float32", "5001x2999", 1.11),
        row("run225/round16", "histogram [cuda] int32", "5000000x700", 1.04),
        # scored when the transpose's partial round was chosen: left out of the held-out figures
        row("run225/round16", "transpose [cuda] float32", "3001x5003", 1.22),
    ]
    out = mor.trust_json(recorded, "src", (), (), {"NVIDIA H100": other})
    h100 = out["other_gpus"]["NVIDIA H100"]
    assert h100["transpose/cuda/float32"] == {"shapes": 1, "within_10pct": 0, "worst": 1.11,
                                              "shapes_list": ["5001x2999"]}  # fmt: skip
    assert h100["histogram/cuda/int32"]["within_10pct"] == 1
    # the H200's entries do not take them in
    assert "sampled" not in out["families"]["histogram/cuda/int32"] and "sampled_only" not in out
    assert "other_gpus" not in mor.trust_json(recorded, "src")


def test_a_sampled_entry_counts_picks_slower_than_the_default_beyond_noise_only_where_there_are_some():
    import model_only_report as mor

    def row(shape, pick, z):
        return {"shape": shape, "pick_over_best": pick, "spearman": 0.9, "pick_over_default": 1.0 + z / 20,
                "pick_vs_default_z": z}  # fmt: skip

    slow = mor._sampled_entry([row("7000001x128", 1.14, 9.0), row("5000000x700", 1.04, 1.5)])
    assert slow["slower_beyond_noise"] == 1 and slow["shapes"] == 2  # 1.5 standard errors is noise
    assert "slower_beyond_noise" not in mor._sampled_entry([row("5000000x700", 1.04, 1.5)])


def test_rows_ranked_with_a_card_s_profile_are_kept_apart_and_those_its_choice_saw_said_as_seen():
    import model_only_report as mor

    row = _card_row

    recorded = [row("run1", "histogram [cuda] int32", "67108864x256", 1.01)]
    other = [
        row("run230/round20", "histogram [cuda] uint8", "60000001x256", 1.25),
        row("run232/round21", "histogram [cuda] uint8", "45000007x256", 1.02),
        row("run240/round30", "histogram [cuda] uint8", "70000001x256", 1.03),  # drawn after the choice
    ]
    ranked = [dict(r, pick_over_best=min(r["pick_over_best"], 1.03)) for r in other]
    out = mor.trust_json(recorded, "src", (), (), {"NVIDIA H100": other}, {"h100": {"NVIDIA H100": ranked}})
    # the plain figures are as before: every row held out from the sm_90 model
    assert out["other_gpus"]["NVIDIA H100"]["histogram/cuda/uint8"]["shapes"] == 3
    by = out["other_gpus_by_arch"]["h100"]["NVIDIA H100"]["histogram/cuda/uint8"]
    # the h100 profile was chosen after scoring runs up to 232: those are seen, a later run is held out
    assert (by["shapes"], by["within_10pct"], by["shapes_list"]) == (1, 1, ["70000001x256"])
    assert by["seen"]["shapes"] == 2 and by["seen"]["worst"] == 1.03
    assert mor.profile_saw("run232/round21", "h100") and not mor.profile_saw("run233/round22", "h100")
    assert not mor.profile_saw("run1", "sm_90")
