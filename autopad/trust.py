"""How far to trust a model-only answer: the recorded figures of the model-only pick, per kernel family.

Without a GPU, autopad's answer is the model's (``search_shortlist.model_pick``: its best-ranked candidate,
or that one's default-layout twin within 1%). How good that is was measured, not
guessed: ``benchmarks/model_only_report.py`` ranks every configuration-shape of the exhaustive H200
studies (benchmarks/results/h200/quality: every legal candidate timed) with the current model and writes,
per kernel family (name, backend, dtype), how often the model-only pick was within 10% of the measured
best, its median and worst distance, whether it was ever slower than the unpadded default, and Spearman's
rank correlation of predicted with measured time. Where a family was also measured on shapes no study
recorded (a ~120-candidate sample each, held out from every fit: ``benchmarks/gpu_new_shapes.py``), those
count apart, against the best of their sample, a weaker bar than an exhaustive best. The recorded studies of
runs 1-2 measured the kernels of 2026-11-29; the exhaustive studies of the kernels as they ship today
(``current`` in the file: every legal candidate of today's space timed) come first in the sentence where a
family has them. That file ships as ``trust_h200.json`` beside this module; ``statement`` turns it into
the sentence that model-only output prints.

A kernel the studies did not cover (a user's own spec, or a built-in one in another dtype) gets the
figures over every recorded family and the plain advice to measure: a model that ranks the built-in
kernels well has not been shown to rank a new one. A built-in family that only samples measured
(``sampled_only`` in the file: the bf16 and uint8 transposes; the fp64 and int8 ones have exhaustive studies
of today's kernel too) gets those figures first: the held-out ones, and apart, not as held out, those a fit
or a term choice saw (``sampled_seen``, ``seen``; since 2026-12-07 every H200 sample of a CUDA transpose).
Held-out shapes timed on another card (``other_gpus`` in the file, by card: an H100's rounds, scored with
the same H200-fitted model, so a user of that card reads how the answer held up there) close the sentence of
their family, whichever branch it takes; an answer ranked with that card's own profile (``arch="h100"``:
the H100's DRAM and cuBLAS rates) reads them ranked so (``other_gpus_by_arch``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = ["Trust", "lookup", "statement", "TRUST_FILE"]

TRUST_FILE = Path(__file__).with_name("trust_h200.json")


@dataclass(frozen=True)
class Trust:
    """The recorded model-only figures of one kernel family (or of all of them: ``family == "all"``)."""

    family: str  # "kernel/backend/dtype", or "all"
    shapes: int
    within_10pct: int
    within_2pct: int
    median: float  # model-only pick over the measured best, median over the shapes
    worst: float
    slower_than_default: int  # shapes where the pick measured slower than the unpadded default
    spearman_min: float
    spearman_median: float
    gpu: str = "NVIDIA H200"
    sampled_shapes: int = 0  # held-out new shapes, each timed on a sample of its space
    sampled_within_10pct: int = 0  # ... where the pick was within 10% of the sample's best
    sampled_worst: float = 0.0
    # exhaustive studies of today's kernel (its space as it ships): 0 shapes where none was run
    current_shapes: int = 0
    current_within_2pct: int = 0
    current_within_10pct: int = 0
    current_worst: float = 0.0
    current_slower_than_default: int = 0
    current_slower_beyond_noise: int = 0  # ... by more than twice the two medians' standard error
    current_spearman_min: float = 0.0
    current_informed: int = 0  # of those, shapes a model term was read off or chosen on (not held out)
    # sampled new shapes a fit or a term choice saw (not held out, so apart from ``sampled_*``)
    seen_shapes: int = 0
    seen_within_10pct: int = 0
    seen_worst: float = 0.0
    # held-out new shapes whose pick measured slower than the unpadded default (in the same sample) by more
    # than twice the two medians' standard error
    sampled_slower_beyond_noise: int = 0
    seen_slower_beyond_noise: int = 0  # ... and of the sampled shapes a fit or a term choice saw


@lru_cache(maxsize=4)
def _load(path: str) -> dict[str, Any]:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}


def _trust(family: str, d: dict[str, Any], gpu: str) -> Trust:
    smp = d.get("sampled") or {}
    cur = d.get("current") or {}
    seen = d.get("sampled_seen") or {}
    return Trust(
        family,
        int(d["shapes"]),
        int(d["within_10pct"]),
        int(d["within_2pct"]),
        float(d["median"]),
        float(d["worst"]),
        int(d["slower_than_default"]),
        float(d["spearman_min"]),
        float(d["spearman_median"]),
        gpu,
        int(smp.get("shapes", 0)),
        int(smp.get("within_10pct", 0)),
        float(smp.get("worst", 0.0)),
        int(cur.get("shapes", 0)),
        int(cur.get("within_2pct", 0)),
        int(cur.get("within_10pct", 0)),
        float(cur.get("worst", 0.0)),
        int(cur.get("slower_than_default", 0)),
        int(cur.get("slower_beyond_noise", 0)),
        float(cur.get("spearman_min", 0.0)),
        int(cur.get("informed", 0)),
        int(seen.get("shapes", 0)),
        int(seen.get("within_10pct", 0)),
        float(seen.get("worst", 0.0)),
        int(smp.get("slower_beyond_noise", 0)),
        int(seen.get("slower_beyond_noise", 0)),
    )


def _pooled(fams: dict[str, Any], gpu: str) -> Trust | None:
    """Every family together: counts add up; the median is the shape-weighted median of the families'
    medians (the per-shape figures are in the report's CSV), the worst the worst of all."""
    if not fams:
        return None
    rows = list(fams.values())
    medians = sorted((float(r["median"]), int(r["shapes"])) for r in rows)
    half, acc, med = sum(n for _, n in medians) / 2, 0, medians[-1][0]
    for m, n in medians:
        acc += n
        if acc >= half:
            med = m
            break
    return Trust(
        "all",
        sum(int(r["shapes"]) for r in rows),
        sum(int(r["within_10pct"]) for r in rows),
        sum(int(r["within_2pct"]) for r in rows),
        med,
        max(float(r["worst"]) for r in rows),
        sum(int(r["slower_than_default"]) for r in rows),
        min(float(r["spearman_min"]) for r in rows),
        sorted(float(r["spearman_median"]) for r in rows)[len(rows) // 2],
        gpu,
    )


def lookup(kernel: str, backend: str, dtype: str, path: str | Path = TRUST_FILE) -> Trust | None:
    """The recorded figures of ``kernel`` [``backend``] in ``dtype``, or None when no study covered it."""
    data = _load(str(path))
    d = data.get("families", {}).get(f"{kernel}/{backend}/{dtype}")
    return None if d is None else _trust(f"{kernel}/{backend}/{dtype}", d, data.get("gpu", "NVIDIA H200"))


# below this rank correlation a family's sentence says what it means for a user: the pick held up, the order
# of the rest is rough (the bar for every family; fp32 4097x8191 was under it until 2026-12-05, 0.797)
ROUGH_ORDER = 0.8


def _sampled(n: int, within: int, worst: float, seen: bool = False, gpu: str = "", slower: int = 0) -> str:
    """The clause of sampled new shapes: held out (timed on a sample of their space; on ``gpu`` where that is
    another card than the file's), or, with ``seen``, those a fit or a term choice saw (not held out, but
    not left unsaid: "more" beside held-out ones, or, with ``gpu``, on their own); ``slower``: how many
    answers measured slower than the unpadded default of their sample beyond the timing noise (said only
    where there are some); nothing where there are no shapes."""
    if not n:
        return ""
    s, their, card = "s" if n != 1 else "", "their" if n != 1 else "its", f"{gpu} " if gpu else ""
    what = (
        f"{n} {f'sampled {card}' if gpu else 'more sampled '}shape{s} that a fit or a term choice saw (not "
        "held out)"
        if seen
        else f"{n} held-out {card}shape{s} timed on a sample of {their} space"
    )
    return f"; on {what}, within 10% of the sample's best in {within} (worst {worst:.2f}x{_beyond(slower)})"


def _beyond(slower: int) -> str:
    """What a clause of sampled shapes adds where answers measured slower than their sample's unpadded
    default beyond the timing noise, or nothing."""
    return f"; slower than the unpadded default beyond the timing noise in {slower}" if slower else ""


def _sampled_entry(entry: dict[str, Any], seen: bool = False, gpu: str = "") -> str:
    """``_sampled`` of a file entry (``sampled_only``'s, its ``seen``, or another card's), or nothing where
    it has none."""
    n, within = int(entry.get("shapes", 0)), int(entry.get("within_10pct", 0))
    slower = int(entry.get("slower_beyond_noise", 0))
    return _sampled(n, within, float(entry.get("worst", 0)), seen, gpu, slower)


def _rough(rho: float) -> str:
    """The caution a rank correlation under ``ROUGH_ORDER`` adds to a sentence, or nothing."""
    if rho >= ROUGH_ORDER:
        return ""
    return (
        f"; a rank correlation under {ROUGH_ORDER:g} means the model's order past its first candidates is "
        "rough: to choose between particular candidates, measure them"
    )


def _other_gpus(kernel: str, backend: str, dtype: str, path: str | Path, arch: str = "sm_90") -> str:
    """The clause of held-out shapes timed on other cards (``other_gpus``: card -> family -> a sampled
    entry), one per card that measured this family, or nothing. Where the file ranked those shapes with
    the profile ``arch`` too (``other_gpus_by_arch``: the H100's rounds as ``h100``), those, saying so."""
    data = _load(str(path))
    by_arch = (data.get("other_gpus_by_arch") or {}).get(arch)
    cards = sorted((by_arch if by_arch is not None else data.get("other_gpus") or {}).items())
    label = f" (ranked as {arch})" if by_arch is not None else ""
    out = []
    for g, fams in cards:
        entry = (fams or {}).get(f"{kernel}/{backend}/{dtype}") or {}
        out.append(_sampled_entry(entry, gpu=g + label))
        # ... and those the profile's choice saw (scored when it was adopted): said, not as held out
        out.append(_sampled_entry(entry.get("seen") or {}, True, gpu=g + label))
    return "".join(out)


def statement(
    kernel: str, backend: str, dtype: str, path: str | Path = TRUST_FILE, arch: str = "sm_90"
) -> str:
    """One sentence for model-only output: how close the model-only pick came to the measured best for
    this kernel family (``_statement``), with the held-out shapes other cards measured last (ranked with
    the profile ``arch`` where the file has them so)."""
    arch = arch.lower() if isinstance(arch, str) else arch  # the profiles' names are lower case ('H100')
    return _statement(kernel, backend, dtype, path) + _other_gpus(kernel, backend, dtype, path, arch)


def _statement(kernel: str, backend: str, dtype: str, path: str | Path) -> str:
    """One sentence for model-only output: how close the model-only pick came to the measured best for
    this kernel family, on the exhaustive studies of today's kernel first (where the family has them), then
    on the recorded studies of runs 1-2 and on held-out samples; for a kernel no study covered, over all of
    them, with the advice to measure."""
    t = lookup(kernel, backend, dtype, path)
    if t is not None:
        worse = (
            f"; slower than the unpadded default in {t.slower_than_default} of them"
            if t.slower_than_default
            else "; never slower than the unpadded default"
        )
        held = _sampled(
            t.sampled_shapes, t.sampled_within_10pct, t.sampled_worst, slower=t.sampled_slower_beyond_noise
        )
        saw = _sampled(
            t.seen_shapes, t.seen_within_10pct, t.seen_worst, True, slower=t.seen_slower_beyond_noise
        )
        now = ""
        if t.current_shapes:  # today's kernel first: the answer printed is ranked in today's space
            n = t.current_shapes
            slower = ""
            if t.current_slower_than_default:
                k = t.current_slower_beyond_noise
                noise = "all within the timing noise" if not k else f"{k} beyond the timing noise"
                slower = f", slower than the unpadded default in {t.current_slower_than_default} ({noise})"
            informed = (
                f"; the model's terms were read off or chosen on {t.current_informed} of these shapes"
                if t.current_informed
                else "; none of these shapes was used to choose the model's terms"
            )
            now = (
                f"on today's kernel, model-only picks for {kernel} [{backend}] {dtype} were within 2% of "
                f"the measured best in {t.current_within_2pct} and within 10% in {t.current_within_10pct} "
                f"of {n} shape{'s' if n != 1 else ''} whose every candidate was timed on an {t.gpu} "
                f"(worst {t.current_worst:.2f}x{slower}; rank correlation min "
                f"{t.current_spearman_min:.2f}{informed}); on the older kernel's recorded studies, "
            )
        lead = now or f"model-only picks for {kernel} [{backend}] {dtype} were "
        # the caution follows today's kernel where it was studied (what ships), else the recorded studies
        rho = t.current_spearman_min if t.current_shapes else t.spearman_min
        return (
            f"{lead}within 10% of the measured best in "
            f"{t.within_10pct} of {t.shapes} recorded {t.gpu} shapes (median {t.median:.2f}x, worst "
            f"{t.worst:.2f}x{worse}; rank correlation of predicted with measured time: min "
            f"{t.spearman_min:.2f}, median {t.spearman_median:.2f}){held}"
            f"{saw}{_rough(rho)}"
        )
    data = _load(str(path))
    pooled = _pooled(data.get("families", {}), data.get("gpu", "NVIDIA H200"))
    if pooled is None:
        return "model-only pick: no recorded study to say how far to trust it; measure it on a GPU"
    cur = data.get("current_only", {}).get(f"{kernel}/{backend}/{dtype}")
    smp = data.get("sampled_only", {}).get(f"{kernel}/{backend}/{dtype}") or {}
    if cur:  # exhaustive studies of today's kernel only (no recorded study of runs 1-2 to stand beside)
        n = int(cur["shapes"])
        # as the sentence of a family with recorded studies says them: the picks slower than the unpadded
        # default and the rank correlation, where the file has them (files written before it had neither)
        slow, beyond = int(cur.get("slower_than_default", 0)), int(cur.get("slower_beyond_noise", 0))
        slower = ""
        if slow:
            noise = f"{beyond} beyond the timing noise" if beyond else "all within the timing noise"
            slower = f", slower than the unpadded default in {slow} ({noise})"
        low = float(cur["spearman_min"]) if "spearman_min" in cur else None
        rho = f"; rank correlation min {low:.2f}" if low is not None else ""
        # ... and the held-out shapes timed on a sample of their space, where the family has them too
        held = _sampled_entry(smp) + _sampled_entry(smp.get("seen") or {}, seen=True)
        return (
            f"on today's kernel, model-only picks for {kernel} [{backend}] {dtype} were within 2% of the "
            f"measured best in {cur['within_2pct']} and within 10% in {cur['within_10pct']} of {n} "
            f"shape{'s' if n != 1 else ''} whose every candidate was timed on an {pooled.gpu} (worst "
            f"{float(cur['worst']):.2f}x{slower}{rho}; the model's terms were read off or chosen on "
            f"{int(cur.get('informed', 0))} of these shapes){held}"
            f"{_rough(low) if low is not None else ''}"
        )
    seen = smp.get("seen") or {}
    if int(smp.get("shapes", 0)) or int(seen.get("shapes", 0)):
        # no exhaustive study, but shapes timed on a sample of theirs: held out, and those a term choice saw
        n, beyond = int(smp.get("shapes", 0)), _beyond(int(smp.get("slower_beyond_noise", 0)))
        held = (
            f"; on {n} held-out {pooled.gpu} shape{'s' if n != 1 else ''} timed on a sample of "
            f"{'their' if n != 1 else 'its'} space the pick was within 10% of the sample's best in "
            f"{smp['within_10pct']} (worst {float(smp['worst']):.2f}x{beyond})"
            if n
            else ""
        )
        # ("more" than none held out reads wrong: then the card is named instead)
        saw = _sampled_entry(seen, seen=True, gpu="" if n else pooled.gpu)
        return (
            f"model-only pick: no exhaustive study covers {kernel} [{backend}] {dtype}{held}{saw}"
            f"; on the built-in kernels' exhaustive studies, within 10% of the "
            f"measured best in {pooled.within_10pct} of {pooled.shapes} (worst {pooled.worst:.2f}x): measure "
            f"it on a GPU before relying on it"
        )
    return (
        f"model-only pick: no recorded study covers {kernel} [{backend}] {dtype}; on the built-in "
        f"kernels the model-only pick was within 10% of the measured best in {pooled.within_10pct} of "
        f"{pooled.shapes} recorded {pooled.gpu} shapes (worst {pooled.worst:.2f}x), which says little about "
        f"a new kernel: measure it on a GPU before relying on it"
    )
