"""What the trust file holds and which sampled rows it may call held out: the per-family entries
``model_only_report.py --trust`` writes into autopad/trust_h200.json (``trust_json``), the rows a fit or a
term choice saw (``FITTED_ON``, ``CHOSEN_ON_EVERY``, ``INFORMED``), those a card's profile was chosen on
(``PROFILE_CHOSEN_BEFORE``), and the figures each entry carries (``summarise``).

Why a module of its own: the bookkeeping of what is held out from what is the part of the report a reader
checks first, and it changes with every term and profile chosen; the scoring (model_only_report.py) does
not. model_only_report.py re-exports these names.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Counts and spreads over shapes: within 2% / 10%, never slower than the default, Spearman."""
    r = [x["pick_over_best"] for x in rows]
    d = [x["pick_over_default"] for x in rows if "pick_over_default" in x]
    rho = [x["spearman"] for x in rows]
    return {
        "shapes": len(rows),
        "within_2pct": sum(v <= 1.02 for v in r),
        "within_10pct": sum(v <= 1.10 for v in r),
        "median_pick_over_best": float(np.median(r)),
        "worst_pick_over_best": float(max(r)),
        "with_default": len(d),
        "slower_than_default": sum(v > 1.0 for v in d),
        # slower by more than twice the two medians' combined standard error (from their IQRs)
        "slower_beyond_noise": sum(x.get("pick_vs_default_z", 0.0) > 2.0 for x in rows),
        "spearman_min": float(min(rho)),
        "spearman_median": float(np.median(rho)),
    }


# new-shape rows that a fit has seen or a term was chosen on: not held out, so not in the trust file's
# sampled figures (which it calls held-out); the file states them apart (``sampled_seen``, ``seen``), so
# that a family's misses among them still reach its sentence
FITTED_ON = {
    ("run8", "histogram [cuda] int32", "1048576x1000"),  # the histogram's flush term
    # 2026-12-04, nineteenth session: the transpose's one-block register term (chosen on 8193 x 16383)
    # and the aligned build's seam charge off the 16-byte grid (chosen on 4100 x 8192)
    ("run149", "transpose [cuda] int8", "8193x16383"),
    ("run149", "transpose [cuda] int8", "4100x8192"),
    # 2026-12-05, twenty-sixth session: run 8's histogram shape again on today's kernel (the flush term
    # was fitted on that shape; its later measurement replaces run 8's in the report)
    ("run165/round1", "histogram [cuda] int32", "1048576x1000"),
    # ... and ``phased_loads`` (the predictor's warp bound on phased loads) was read off H100 run 166's
    # profile of run 165's three fp32 transposes; their figures stay in the trust file, stated apart
    ("run165/round1", "transpose [cuda] float32", "6144x3072"),
    ("run165/round8", "transpose [cuda] float32", "6145x3073"),
    ("run165/round8", "transpose [cuda] float32", "3x2049x4095"),
    # 2026-12-05, twenty-seventh session: ``smem_issue`` (the SIMT GEMM's shared instructions' issue slots)
    # was read off H100 run 171's ncu counts of launches at two of run 100's shapes, chosen after run 100's
    # 2560x2560x1536 misses: run 100's three shapes are stated apart
    ("run100", "matmul [cuda] float32", "2304x2304x2048"),
    ("run100", "matmul [cuda] float32", "2560x2560x1536"),
    ("run100", "matmul [cuda] float32", "1792x1792x2048"),
    # ... and its rate (the FFMAs' measured one, kept over the issue peak) was chosen after both were scored
    # on run 165's SIMT GEMM samples: those are stated apart too (round 11, drawn after, is held out)
    ("run165/round9", "matmul [cuda] float32", "1000x1000x1000"),
    ("run165/round9", "matmul [cuda] float32", "3001x2047x1536"),
    ("run165/round9", "matmul [cuda] float32", "384x768x4096"),
    ("run165/round9", "matmul [cuda] float32", "1200x3000x800"),
    ("run165/round1", "matmul [cuda] float32", "768x1536x1024"),
    # 2026-12-07, forty-second session: the SIMT GEMM's checked k-loop (``CHECKED_LOAD_SLOTS``) was seen in
    # the residuals by BK at K 1000 (run 165's 1000^3, above, and run 186's 3072x3072x1000); its value is
    # H100 run 219's profile's
    ("run186/round12", "matmul [cuda] float32", "3072x3072x1000"),
    # 2026-12-07, forty-fifth session: the halo build's short output segments (``HALO_SEGMENT_BYTES``,
    # kernels/cuda/transpose_cost.py) were read off round 17's fp16 pick (and run 34's, which
    # CHOSEN_ON_EVERY already states apart)
    ("run227/round17", "transpose [cuda] float16", "4099x3001"),
    # 2026-12-07, forty-sixth session: PRIV 1's flush requests to one line of the global histogram
    # (``FLUSH_LINE_CYCLES``, kernels/cuda/histogram_cost.py) were looked for after round 19's uint8 pick at
    # 30,000,001 x 256 (H100 run 229), their cost read off the H200 studies
    ("run229/round19", "histogram [cuda] uint8", "30000001x256"),
}
# (an exhaustive study of those two shapes, given as --current, belongs in INFORMED under its own run name)
# a family's terms chosen after scoring every study of it recorded so far: family prefix -> the first device
# run drawn after the choice (held out). 2026-12-07, forty-fifth session: the CUDA transpose's partial memory
# round and its aligned build's registers were chosen on every CUDA transpose study of both cards up to run
# 225; round 17 (H100 run 227) was drawn after, and is the blind test; round 18 (H100 run 228) was drawn after
# the halo term too (``FITTED_ON`` above), held out from all three
CHOSEN_ON_EVERY = {"transpose [cuda]": 227}


def chosen_on(run: str, family: str) -> bool:
    """Did a choice that scored every study of the family so far see this run's shape (``CHOSEN_ON_EVERY``;
    ``FITTED_ON`` and ``INFORMED`` list single shapes)? A run named otherwise than ``run<N>...`` is not
    taken as seen."""
    m = re.match(r"run(\d+)", run)
    if m is None:
        return False
    return any(family.startswith(p) and int(m.group(1)) < first for p, first in CHOSEN_ON_EVERY.items())


def _seen(x: dict[str, Any]) -> bool:
    """Did a fit or a term choice see this sampled row (``FITTED_ON`` or ``CHOSEN_ON_EVERY``)?"""
    return (x["run"], x["family"], x["shape"]) in FITTED_ON or chosen_on(x["run"], x["family"])


# another card's profile (``--other-arch``) -> the first run drawn after it was chosen: the h100 profile
# (that card's DRAM rate, measured) was adopted after scoring every H100 row to run 232 with it, so those
# rows are not held out from it (the trust file states them apart, as seen)
PROFILE_CHOSEN_BEFORE = {"h100": 233}


def profile_saw(run: str, arch: str) -> bool:
    """Was the profile ``arch`` chosen after scoring this run's rows (``PROFILE_CHOSEN_BEFORE``)?"""
    m = re.match(r"run(\d+)", run)
    return m is not None and int(m.group(1)) < PROFILE_CHOSEN_BEFORE.get(arch, 0)


# today's studies that a model term was read off or chosen on, so not held out (the trust file says how
# many): the transpose's misaligned-build instructions and ORIGINAL_PATH_EFFICIENCY (runs 46, 67, 69), the
# histogram's grid-stride tail (run 41's 10000019 x 100), the Gluon GEMM's async L2 rate with PATH 1's
# cp.async (runs 47 and 48; run 53 measured after, held out)
INFORMED = {
    ("run46/study", "transpose [cuda] float16", "4097x8191"),
    ("run67/study", "transpose [cuda] float16", "8192x8192"),
    ("run69/study", "transpose [cuda] float16", "16384x16384"),
    ("run41/study", "histogram [cuda] uint8", "10000019x100"),
    ("run47/gluon", "matmul [triton] bfloat16", "2048x2048x2048"),
    ("run48/gluon", "matmul [triton] bfloat16", "4096x4096x4096"),
    ("run48/gluon", "matmul [triton] bfloat16", "3000x1000x2000"),
    # 2026-12-04: the fp64 block order at 128 KiB rows; the Triton histogram's flush and reduce
    ("run87/study", "transpose [cuda] float64", "16384x16384"),
    ("run86/hist_triton", "histogram [triton] int32", "67108864x256"),
    ("run86/hist_triton", "histogram [triton] int32", "67108864x4096"),
    # 2026-12-04, twelfth session: the arithmetic's partial last round (predict._tail_rounds), chosen on it
    ("run55/study", "matmul [cuda] float32", "2048x2048x2048"),
    # 2026-12-04, fifteenth session: the original path's block order at 4 and 8 bytes (ORIGINAL_ORDER in
    # kernels/cuda/transpose_cost.py), read off the aligned shapes of the fp32 study on today's space
    ("run114/study", "transpose [cuda] float32", "8192x8192"),
    ("run115/study", "transpose [cuda] float32", "4096x4096"),
    # 2026-12-04, seventeenth session: the fp64 study of today's space completed (run 117's 7,500 rows and
    # runs 126-127's other 11,840, merged); the shape WIDE_PITCH_ORDER_TIME was read off (runs 87 and 110)
    ("run127/merged", "transpose [cuda] float64", "16384x16384"),
    # 2026-12-05: the int8 exhaustive study (run 155) at the shape the seam charge was chosen on (run 149's
    # sample of 4100 x 8192)
    ("run155/study", "transpose [cuda] int8", "4100x8192"),
    # 2026-12-05, twenty-third session: the shifted gather at its row shifts and the VEC 1 narrow tiles'
    # segment term off the 16-byte grid were read off all three int8 studies (and checked on run 46's)
    ("run155/study", "transpose [cuda] int8", "4097x8191"),
    ("run156/study", "transpose [cuda] int8", "4104x8192"),
    # 2026-12-05, twenty-fourth session: a vector-path block alone on its SM runs its phases in turn
    # (``latency_phases``), read off the fp32 study's misaligned shape
    ("run114/study", "transpose [cuda] float32", "4097x8191"),
    # 2026-12-07, forty-sixth session: the cost of PRIV 1's flush requests to one line of the global histogram
    # (``FLUSH_LINE_CYCLES``) is the median of what PRIV 1 took beyond PRIV 0 on the H200 studies timing both
    # (run 41's 10000019 x 100, listed above, among them)
    ("run23/study", "histogram [cuda] int32", "67108864x256"),
    ("run23/study", "histogram [cuda] uint8", "16777216x256"),
    ("run41/study", "histogram [cuda] int32", "67108864x4096"),
}


def trust_json(
    rows: Sequence[dict[str, Any]],
    source: str,
    sampled: Sequence[dict[str, Any]] = (),
    current: Sequence[dict[str, Any]] = (),
    other: dict[str, Sequence[dict[str, Any]]] | None = None,
    other_by_arch: dict[str, dict[str, Sequence[dict[str, Any]]]] | None = None,
) -> dict[str, Any]:
    """Per family: the exhaustive studies' figures ``autopad.trust`` turns into a sentence, under
    "sampled" those of held-out new shapes (pick over the best of a ~120-candidate sample, a weaker bar)
    and under "current" those of the exhaustive studies of today's kernels (``--current``); ``other``
    (card -> rows): held-out sampled shapes other cards measured, under "other_gpus" by card and family;
    ``other_by_arch`` (profile -> card -> rows): the same shapes ranked with another profile of the model
    (``--other-arch``: an H100's, ``h100``), under "other_gpus_by_arch"."""
    fam: dict[str, list] = defaultdict(list)
    for x in rows:
        fam[x["family"]].append(x)
    extra: dict[str, list] = defaultdict(list)
    seen: dict[str, list] = defaultdict(list)  # sampled rows a fit or a term choice saw: stated apart
    for x in sampled:
        (seen if _seen(x) else extra)[x["family"]].append(x)
    out: dict[str, Any] = {"arch": "sm_90", "gpu": "NVIDIA H200", "source": source, "families": {}}
    for name, xs in sorted(fam.items()):
        entry = out["families"][_family_key(name)] = _exhaustive_entry(xs, [x["shape"] for x in xs])
        if extra.get(name):
            entry["sampled"] = _sampled_entry(extra[name])
        if seen.get(name):
            entry["sampled_seen"] = _sampled_entry(seen[name])
    now: dict[str, list] = defaultdict(list)
    for x in current:
        now[x["family"]].append(x)
    for name, xs in sorted(now.items()):
        informed = [
            f"{x['shape']} ({x['run']})"
            for x in xs
            if (x["run"], x["family"], x["shape"]) in INFORMED or chosen_on(x["run"], x["family"])
        ]
        entry = _exhaustive_entry(xs, [f"{x['shape']} ({x['run']})" for x in xs], beyond_noise=True)
        entry["informed"] = len(informed)  # studies a model term was read off or chosen on (INFORMED)
        entry["informed_list"] = informed
        if name in fam:
            out["families"][_family_key(name)]["current"] = entry
        else:  # a family only today's studies measured has no recorded entry to stand beside: kept apart
            out.setdefault("current_only", {})[_family_key(name)] = entry
    # families only the held-out samples measured (bf16, int8 and uint8 transposes): their own figures, apart
    for name in sorted(set(extra) | set(seen)):
        if name not in fam:
            entry = _sampled_entry(extra[name]) if extra.get(name) else {"shapes": 0, "within_10pct": 0}
            if seen.get(name):
                entry["seen"] = _sampled_entry(seen[name])
            out.setdefault("sampled_only", {})[_family_key(name)] = entry
    for gpu, xs in sorted((other or {}).items()):
        out.setdefault("other_gpus", {})[gpu] = _other_families(xs)
    for arch, cards in sorted((other_by_arch or {}).items()):
        for gpu, xs in sorted(cards.items()):
            out.setdefault("other_gpus_by_arch", {}).setdefault(arch, {})[gpu] = _other_families(xs, arch)
    return out


def _other_families(xs: Sequence[dict[str, Any]], arch: str = "") -> dict[str, Any]:
    """Another card's held-out rows as the trust file keeps them: a sampled entry per family (rows a term
    choice saw are left out); ranked with a profile (``arch``), those its choice saw under "seen"."""
    by: dict[str, list] = defaultdict(list)
    saw: dict[str, list] = defaultdict(list)
    for x in xs:
        if not _seen(x):
            (saw if arch and profile_saw(x["run"], arch) else by)[x["family"]].append(x)
    out = {}
    for n in sorted(set(by) | set(saw)):
        entry = _sampled_entry(by[n]) if by.get(n) else {"shapes": 0, "within_10pct": 0}
        if saw.get(n):
            entry["seen"] = _sampled_entry(saw[n])
        out[_family_key(n)] = entry
    return out


def _family_key(name: str) -> str:
    """``"transpose [cuda] float32"`` as the trust file keys it: ``"transpose/cuda/float32"``."""
    return "/".join(name.replace("[", "").replace("]", "").split())


def _exhaustive_entry(
    xs: Sequence[dict[str, Any]], shapes_list: list[str], beyond_noise: bool = False
) -> dict[str, Any]:
    """The trust file's figures of exhaustive studies (the recorded ones, or today's with ``beyond_noise``:
    how many picks were slower than the default by more than the timing noise)."""
    s = summarise(xs)
    e = {
        "shapes": s["shapes"],
        "within_10pct": s["within_10pct"],
        "within_2pct": s["within_2pct"],
        "median": round(s["median_pick_over_best"], 3),
        "worst": round(s["worst_pick_over_best"], 3),
        "slower_than_default": s["slower_than_default"],
    }
    if beyond_noise:
        e["slower_beyond_noise"] = s["slower_beyond_noise"]
    # rounded down: the trust sentence compares it with the 0.8 bar (autopad.trust.ROUGH_ORDER), and 0.797
    # is under it
    e["spearman_min"] = math.floor(s["spearman_min"] * 100 + 1e-9) / 100
    e["spearman_median"] = round(s["spearman_median"], 2)
    e["shapes_list"] = shapes_list
    return e


def _sampled_entry(xs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The trust file's figures of held-out sampled shapes (pick over the best of each sample; the picks
    slower than the sample's unpadded default by more than the timing noise, where there are some)."""
    e = summarise(xs)
    out = {
        "shapes": e["shapes"],
        "within_10pct": e["within_10pct"],
        "worst": round(e["worst_pick_over_best"], 3),
        "shapes_list": [x["shape"] for x in xs],
    }
    if e["slower_beyond_noise"]:
        out["slower_beyond_noise"] = e["slower_beyond_noise"]
    return out
