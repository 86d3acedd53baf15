"""``autopad validate``: check the bank-conflict model against the hardware, probe by probe.

Why: the model (model.py) is a fit to 558 probes. Its claim to pick what the hardware rewards holds only as
far as it has been checked, so this module generates fresh probes (strides, offsets, broadcast groups, lane
pairs sharing an address, inactive lanes, random addresses; 1 to 16 bytes; loads, stores, atomics), runs each
as a one-instruction kernel (validate_cuda.py) and:

* with Nsight Compute (``ncu``): reads the wavefronts and bank conflicts of every launch and compares them
  with ``analyze_batch``; every disagreement is listed with its addresses. Exit status 0 = all agree.
* without it: times the seeds' stride micro-benchmark and reports how the measured slowdowns rank against
  the model's predicted degrees (Spearman), next to the seeds' table.

``--ops ldmatrix,stmatrix,cp.async`` probes the model's derived rules instead (model_rules.py: ldmatrix and
stmatrix x1/x2/x4 with and without .trans, cp.async.ca of 4, 8, 16 bytes and cp.async.cg of 16): per form
a structured set (conflict-free, 2-, 4-, 8-way, broadcast rows, repeated rows, lanes the instruction
ignores; for cp.async also the global side permuted under a conflict-free shared side) and ``--random``
random ones. ``--ops all`` does both. Their report says which ncu counter each number came from.

Importing this module needs numpy only; torch, cuda.core and ncu are reached inside functions.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .model import analyze_batch
from .validate_cuda import (
    GLOBAL_BYTES,
    METRICS,
    NEW_FORMS,
    SMEM_BYTES,
    counted_by,
    extra_metrics,
    find_ncu,
    probe_kernel_name,
    query_metrics,
    run_ncu,
)

__all__ = [
    "COMBOS",
    "FAMILIES",
    "METRICS",
    "SEED_STRIDES",
    "add_validate_parser",
    "compare",
    "find_ncu",
    "generate_new_probes",
    "generate_probes",
    "predict",
    "run_validate",
    "spearman",
    "stride_table",
    "validate",
]

COMBOS = (
    ("load", 1),
    ("load", 2),
    ("load", 4),
    ("load", 8),
    ("load", 16),
    ("store", 1),
    ("store", 2),
    ("store", 4),
    ("store", 8),
    ("store", 16),
    ("atomic", 4),
)
STRIDES = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 16, 17, 24, 31, 32, 33, 48, 63, 64, 65)
# The seeds' stride table: slowdown over stride 1 measured on the H200 (../shared/hardware/README.md)
SEED_STRIDES = {
    0: 1.00,
    1: 1.00,
    2: 1.36,
    4: 2.64,
    8: 5.31,
    16: 10.35,
    32: 20.74,
    33: 1.00,
    64: 20.62,
    65: 0.98,
}


# ------------------------------------------------------------------------------------------- probes
def _structured(op: str, w: int, rng: np.random.Generator) -> list[tuple[str, list[int | None]]]:
    lanes = range(32)
    out: list[tuple[str, list[int | None]]] = []
    for s in STRIDES:
        out.append((f"stride{s}+0", [n * s * w for n in lanes]))
    for s in (1, 2, 32, 33):  # offsets: a shift changes the banks, not the degree (for aligned widths)
        out.append((f"stride{s}+{3 * w}", [3 * w + n * s * w for n in lanes]))
        out.append((f"stride{s}+{100 * w}", [100 * w + n * s * w for n in lanes]))
    for g in (2, 4, 8, 16, 32):  # broadcast groups of g lanes: neighbouring words, or all in one bank
        out.append((f"groups{g}-step{w}", [(n // g) * w for n in lanes]))
        out.append((f"groups{g}-step128", [(n // g) * 128 for n in lanes]))
    for s in (1, 2, 8):  # lane n and n^1 share an address; lane n and n^2 share one
        out.append((f"pair1-s{s}", [(n >> 1) * s * w for n in lanes]))
        out.append((f"pair2-s{s}", [((n >> 2) * 2 + (n & 1)) * s * w for n in lanes]))
    pair = [(n >> 1) * w for n in lanes]
    out.append(("pair1-broken31", pair[:31] + [40 * w]))
    out.append(("pair1-pairoff23", [None if n in (2, 3) else a for n, a in enumerate(pair)]))
    out.append(("pair1-laneoff3", [None if n == 3 else a for n, a in enumerate(pair)]))
    out.append(("pair1-upperoff", [None if n >= 16 else a for n, a in enumerate(pair)]))
    # inactive lanes
    out.append(("stride1-oddoff", [None if n % 2 else n * w for n in lanes]))
    out.append(("stride32-upperoff", [None if n >= 16 else n * 32 * w for n in lanes]))
    out.append(("stride32-lanes0to7", [n * 32 * w if n < 8 else None for n in lanes]))
    out.append(("stride32-lanes8to15", [n * 32 * w if 8 <= n < 16 else None for n in lanes]))
    out.append(("stride33-evenoff", [None if n % 2 == 0 else n * 33 * w for n in lanes]))
    out.append(("only-lane0", [0] + [None] * 31))
    out.append(("only-lane31", [None] * 31 + [31 * 128]))
    out.append(("none-active", [None] * 32))
    mask = rng.random(32) < 0.5
    out.append(("stride2-randoff", [None if mask[n] else n * 2 * w for n in lanes]))
    out.append(("stride0-randoff", [None if mask[n] else 4 * w for n in lanes]))
    return out


def _random(w: int, rng: np.random.Generator, k: int) -> tuple[str, list[int | None]]:
    span = int(rng.choice((128, 512, 2048, 8192, SMEM_BYTES)))
    slots = span // w
    if k % 2:  # draw from a small pool: broadcasts mixed with conflicts
        pool = rng.integers(0, slots, size=int(rng.integers(2, 17))) * w
        addr = rng.choice(pool, size=32)
        name = f"rand{k}-span{span}-pool{len(pool)}"
    else:
        addr = rng.integers(0, slots, size=32) * w
        name = f"rand{k}-span{span}"
    off = rng.random(32) < (0.25 if k % 3 == 0 else 0.0)
    return name, [None if off[n] else int(addr[n]) for n in range(32)]


def generate_probes(seed: int = 0, n_random: int = 110) -> list[dict]:
    """Shared-memory probes: for each (op, width) of ``COMBOS``, the structured set, then ``n_random``
    random ones spread round-robin over the combinations.

    Each probe is ``{"op", "access_bytes", "name", "addresses"}`` (per-lane byte offsets into a 48 KB
    static shared array, aligned to the width; ``None`` = inactive lane), like the fixture's probes.
    The same seed gives the same list.
    """
    rng = np.random.default_rng(seed)
    probes = []
    for op, w in COMBOS:
        for name, addr in _structured(op, w, rng):
            probes.append({"op": op, "access_bytes": w, "name": name, "addresses": addr})
    for k in range(n_random):
        op, w = COMBOS[k % len(COMBOS)]
        name, addr = _random(w, rng, k)
        probes.append({"op": op, "access_bytes": w, "name": name, "addresses": addr})
    for p in probes:
        assert all(
            a is None or (0 <= a <= SMEM_BYTES - p["access_bytes"] and a % p["access_bytes"] == 0)
            for a in p["addresses"]
        ), p
    return probes


# ------------------------------------------------------------------------------- ldmatrix, stmatrix, cp.async
FAMILIES = {"load": "basic", "store": "basic", "atomic": "basic", "ldmatrix": "new", "stmatrix": "new"}
FAMILIES["cp.async"] = "new"


def _matrix_cases(op: str, rng: np.random.Generator, n_random: int) -> list[tuple[str, list[int]]]:
    """Row addresses (lane l -> start of a 16-byte row) for one ldmatrix/stmatrix form.

    Lanes 8i..8i+7 give matrix i's rows; lanes past the form's matrices get the address of lane l % used
    (valid, and ignored by the instruction: a probe that counts them shows it)."""
    used = 8 * int(op.split(".")[1][1])
    lanes = range(32)

    def full(rows: list[int]) -> list[int]:
        return [rows[lane % used] for lane in lanes]

    out = [
        ("rows16", full([16 * n for n in lanes])),  # each matrix 128 contiguous bytes: conflict-free
        ("pitch128", full([128 * (n % 8) + 16 * (n // 8) for n in lanes])),  # 8 rows in banks 0-3: 8-way
        ("pitch256", full([256 * (n % 8) + 16 * (n // 8) for n in lanes])),  # 8-way
        ("pitch64", full([64 * (n % 8) + 16 * (n // 8) for n in lanes])),  # 4-way
        ("pitch32", full([32 * (n % 8) + 512 * (n // 8) for n in lanes])),  # 2-way
        ("pitch144", full([144 * (n % 8) + 16 * (n // 8) for n in lanes])),  # padded rows: conflict-free
        ("pitch80", full([80 * (n % 8) + 640 * (n // 8) for n in lanes])),  # odd 16-byte pitch: free
        ("swizzle", full([128 * (n % 8) + 16 * ((n // 8) ^ (n % 8)) for n in lanes])),  # XOR: free
        ("pitch128+48", full([48 + 128 * (n % 8) + 16 * (n // 8) for n in lanes])),
        ("bcast-matrix", full([512 * (n // 8) for n in lanes])),  # 8 rows of a matrix at one address
        ("bcast-all", [0] * 32),  # every row of every matrix at one address
        ("bcast-pairs", full([16 * (n // 2) for n in lanes])),  # rows repeated in lane pairs n, n^1
        ("same-matrices", full([16 * (n % 8) for n in lanes])),  # all matrices read the same 128 bytes
        ("bcast-half", full([16 * (n % 4) + 64 * (n // 8) for n in lanes])),  # 4 distinct rows a matrix
    ]
    if used < 32:  # conflicting addresses in the lanes the form ignores
        out.append(("ignored-conflict", [16 * n if n < used else 128 * (n - used) for n in lanes]))
    for k in range(n_random):
        span = int(rng.choice((128, 512, 2048, 8192, SMEM_BYTES)))
        if k % 2:
            pool = rng.integers(0, span // 16, size=int(rng.integers(2, 9))) * 16
            rows = rng.choice(pool, size=used)
            name = f"rand{k}-span{span}-pool{len(pool)}"
        else:
            rows = rng.integers(0, span // 16, size=used) * 16
            name = f"rand{k}-span{span}"
        out.append((name, full([int(r) for r in rows])))
    return out


def _cp_async_cases(w: int, rng: np.random.Generator, n_random: int) -> list[tuple[str, list, list[int]]]:
    """(name, shared addresses with None = inactive, global offsets) for cp.async of ``w`` bytes."""
    lanes = range(32)
    contiguous = [n * w for n in lanes]
    out: list[tuple[str, list, list[int]]] = []
    for s in (0, 1, 2, 4, 8, 32, 33):
        out.append((f"stride{s}", [n * s * w for n in lanes], contiguous))
    for g in (2, 8, 32):
        out.append((f"groups{g}-step128", [(n // g) * 128 for n in lanes], contiguous))
    out.append(("pair1-s1", [(n >> 1) * w for n in lanes], contiguous))
    out.append(("stride1-oddoff", [None if n % 2 else n * w for n in lanes], contiguous))
    out.append(("stride32-upperoff", [None if n >= 16 else n * 32 * w for n in lanes], contiguous))
    # the global side moved, the shared side conflict-free: does LDGSTS follow the shared addresses only?
    out.append(("gperm-reverse", contiguous, [(31 - n) * w for n in lanes]))
    out.append(("gperm-halves", contiguous, [((n & 15) * 2 + (n >> 4)) * w for n in lanes]))
    out.append(("gperm-stride128", contiguous, [n * 128 for n in lanes]))
    out.append(("gperm-random", contiguous, [int(g) * w for g in rng.permutation(32)]))
    out.append(("stride32-gperm-reverse", [n * 32 * w for n in lanes], [(31 - n) * w for n in lanes]))
    for k in range(n_random):
        span = int(rng.choice((128, 512, 2048, 8192, SMEM_BYTES)))
        addr = rng.integers(0, span // w, size=32) * w
        off = rng.random(32) < (0.25 if k % 3 == 0 else 0.0)
        glob = contiguous if k % 3 != 1 else [int(g) * w for g in rng.permutation(32)]
        tag = "-gperm" if k % 3 == 1 else ""
        out.append((f"rand{k}-span{span}{tag}", [None if off[n] else int(addr[n]) for n in lanes], glob))
    return out


def generate_new_probes(
    seed: int = 0, n_random: int = 30, families: Sequence[str] = ("ldmatrix", "stmatrix", "cp.async")
) -> list[dict]:
    """Probes of ldmatrix/stmatrix/cp.async for every form in ``NEW_FORMS`` of the chosen families: the
    structured set, then ``n_random`` random ones per form. Each is ``{"op", "access_bytes", "name",
    "addresses", "form"}``, plus ``"global"`` (per-lane byte offsets into the global source) for cp.async;
    ``op`` is the model's op. The same seed gives the same list."""
    rng = np.random.default_rng(seed)
    probes = []
    for op, w, form in NEW_FORMS:
        if op.split(".x")[0] not in families:
            continue
        if op == "cp.async":
            for name, addr, glob in _cp_async_cases(w, rng, n_random):
                probes.append(
                    {
                        "op": op,
                        "access_bytes": w,
                        "name": name,
                        "addresses": addr,
                        "form": form,
                        "global": glob,
                    }
                )
        else:
            for name, addr in _matrix_cases(op, rng, n_random):
                probes.append({"op": op, "access_bytes": w, "name": name, "addresses": addr, "form": form})
    for p in probes:
        w = p["access_bytes"]
        assert all(a is None or (0 <= a <= SMEM_BYTES - w and a % w == 0) for a in p["addresses"]), p
        assert all(0 <= g <= GLOBAL_BYTES - w and g % w == 0 for g in p.get("global", [])), p
    return probes


def predict(probes: Sequence[dict], arch: str = "sm_90") -> list[tuple[int, int]]:
    """(wavefronts, bank conflicts) the model predicts for each probe, batched per (op, width)."""
    result: list[tuple[int, int]] = [(0, 0)] * len(probes)
    groups: dict[tuple[str, int], list[int]] = {}
    for i, p in enumerate(probes):
        groups.setdefault((p["op"], int(p["access_bytes"])), []).append(i)
    for (op, w), idx in groups.items():
        arr = np.array(
            [[-1 if a is None else a for a in probes[i]["addresses"]] for i in idx], dtype=np.int64
        )
        wave, ideal = analyze_batch(arr, w, op, arch)
        for i, wv, ide in zip(idx, wave.tolist(), ideal.tolist()):
            result[i] = (int(wv), int(wv - ide))
    return result


# ------------------------------------------------------------------------------------------- report
def compare(
    probes: Sequence[dict], measured: Sequence[tuple[int | None, int | None] | None], arch: str = "sm_90"
) -> dict:
    """Probe-by-probe agreement of measured (wavefronts, conflicts) with the model.

    ``measured[i]`` is None where probe i was not measured. A probe agrees when both numbers equal the
    prediction. Returns ``{"summary", "groups", "disagreements", "rows"}``; ``summary["disagree"] > 0``
    is what makes the exit status 1.
    """
    pred = predict(probes, arch)
    rows, groups = [], {}
    measured = list(measured) + [None] * (len(probes) - len(measured))
    for p, m, (pw, pc) in zip(probes, measured, pred):
        src = p.get("source", "generated")
        form = p.get("form", p["op"])
        g = groups.setdefault((src, form, int(p["access_bytes"])), {"probes": 0, "agree": 0, "disagree": 0})
        mw, mc = (None, None) if m is None else m
        agree = None if mw is None else (mw == pw and mc == pc)
        g["probes"] += 1
        if agree is not None:
            g["agree" if agree else "disagree"] += 1
        row = {
            "source": src,
            "op": p["op"],
            "access_bytes": int(p["access_bytes"]),
            "name": p["name"],
            "active_lanes": sum(a is not None for a in p["addresses"]),
            "measured_wavefronts": mw,
            "measured_conflicts": mc,
            "predicted_wavefronts": pw,
            "predicted_conflicts": pc,
            "agree": agree,
            "addresses": list(p["addresses"]),
        }
        if "form" in p:  # ldmatrix/stmatrix/cp.async: the instruction, and where the numbers came from
            row["form"] = p["form"]
            row["metric"] = p.get("metric")
        if "global" in p:
            row["global"] = list(p["global"])
        if "wavefronts" in p:  # a fixture probe: is the new measurement the old one?
            row["fixture_wavefronts"] = p["wavefronts"]
            row["fixture_conflicts"] = p.get("bank_conflicts")
        rows.append(row)
    checked = sum(r["agree"] is not None for r in rows)
    agree = sum(r["agree"] is True for r in rows)
    summary = {
        "probes": len(rows),
        "measured": checked,
        "agree": agree,
        "disagree": checked - agree,
        "not_measured": len(rows) - checked,
        "fixture_changed": sum(
            1
            for r in rows
            if "fixture_wavefronts" in r
            and r["measured_wavefronts"] is not None
            and r["measured_wavefronts"] != r["fixture_wavefronts"]
        ),
    }
    return {
        "summary": summary,
        "groups": [{"source": s, "op": o, "access_bytes": w, **v} for (s, o, w), v in sorted(groups.items())],
        "disagreements": [r for r in rows if r["agree"] is False],
        "rows": rows,
    }


def _addr_text(addresses: Sequence[int | None]) -> str:
    return " ".join("-" if a is None else str(a) for a in addresses)


def write_report(report: dict, out_dir: Path, stem: str) -> tuple[Path, Path]:
    """``<stem>.json`` (everything) and ``<stem>.csv`` (one row per probe) under ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    jpath, cpath = out_dir / f"{stem}.json", out_dir / f"{stem}.csv"
    jpath.write_text(json.dumps(report, indent=1) + "\n")
    rows = report.get("rows", [])
    fields: list[str] = []
    for r in rows:  # the union of the rows' keys (new-op rows carry form, metric, global), addresses last
        fields += [k for k in r if k not in fields and k != "addresses"]
    fields += ["addresses"] if rows else []
    with cpath.open("w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore", restval="")
        wr.writeheader()
        for r in rows:
            r = {**r, "addresses": _addr_text(r["addresses"])} if "addresses" in r else r
            wr.writerow({**r, "global": _addr_text(r["global"])} if "global" in r else r)
    return jpath, cpath


def print_report(report: dict, file=sys.stdout) -> None:
    s = report["summary"]
    print(
        f"probes {s['probes']}, measured {s['measured']}, agree {s['agree']}, disagree {s['disagree']}, "
        f"not measured {s['not_measured']}, fixture values changed {s['fixture_changed']}",
        file=file,
    )
    for g in report["groups"]:
        print(
            f"  {g['source']:9s} {g['op']:6s} {g['access_bytes']:2d} B: {g['agree']:4d} agree, "
            f"{g['disagree']:3d} disagree of {g['probes']}",
            file=file,
        )
    for r in report["disagreements"]:
        print(
            f"DISAGREE {r['source']} {r['op']} {r['access_bytes']} B {r['name']}: measured "
            f"{r['measured_wavefronts']} wavefronts / {r['measured_conflicts']} conflicts, predicted "
            f"{r['predicted_wavefronts']} / {r['predicted_conflicts']}; "
            f"addresses {_addr_text(r['addresses'])}",
            file=file,
        )


# ------------------------------------------------------------------------------------------- timing mode
def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rank correlation: ranks (ties get their average rank), then Pearson's r of the ranks."""

    def ranks(v: np.ndarray) -> np.ndarray:
        order = np.argsort(v, kind="mergesort")
        r = np.empty(len(v), dtype=float)
        sv = v[order]
        i = 0
        while i < len(v):
            j = i
            while j + 1 < len(v) and sv[j + 1] == sv[i]:
                j += 1
            r[order[i : j + 1]] = (i + j) / 2.0 + 1.0
            i = j + 1
        return r

    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.shape != b.shape or a.size < 2:
        raise ValueError("spearman: need two sequences of the same length, at least 2")
    ra, rb = ranks(a) - ranks(a).mean(), ranks(b) - ranks(b).mean()
    den = float(np.sqrt((ra * ra).sum() * (rb * rb).sum()))
    return float((ra * rb).sum() / den) if den else float("nan")


def predicted_stride_degree(stride: int, arch: str = "sm_90") -> float:
    """Mean wavefronts per warp load of ``tile[(lane * stride + i) & 2047]`` (fp32) over i = 0..63."""
    addr = np.array([[((n * stride + i) & 2047) * 4 for n in range(32)] for i in range(64)], dtype=np.int64)
    wave, ideal = analyze_batch(addr, 4, "load", arch)
    return float((wave / ideal).mean())


def stride_table(
    strides: Sequence[int] = tuple(SEED_STRIDES), times_ms: Sequence[float] | None = None
) -> dict:
    """The seeds' stride table measured here: time, slowdown over stride 1, predicted degree, the seeds'
    figure, and the Spearman correlations. ``times_ms`` (for tests) skips the GPU."""
    strides = list(strides)
    if times_ms is None:
        from .validate_cuda import time_strides

        times_ms = time_strides(strides)
    base = times_ms[strides.index(1)] if 1 in strides else min(times_ms)
    rows = [
        {
            "stride": s,
            "time_ms": t,
            "slowdown": t / base,
            "predicted_degree": predicted_stride_degree(s),
            "seed_slowdown": SEED_STRIDES.get(s),
        }
        for s, t in zip(strides, times_ms)
    ]
    seeded = [r for r in rows if r["seed_slowdown"] is not None]
    return {
        "rows": rows,
        "spearman_measured_vs_predicted": spearman(
            [r["slowdown"] for r in rows], [r["predicted_degree"] for r in rows]
        ),
        "spearman_seed_vs_predicted": spearman(
            [r["seed_slowdown"] for r in seeded], [r["predicted_degree"] for r in seeded]
        )
        if len(seeded) > 1
        else None,
        "spearman_measured_vs_seed": spearman(
            [r["slowdown"] for r in seeded], [r["seed_slowdown"] for r in seeded]
        )
        if len(seeded) > 1
        else None,
    }


def _print_stride(table: dict, file=sys.stdout) -> None:
    print("stride  time_ms  slowdown  predicted  seeds", file=file)
    for r in table["rows"]:
        seed = "" if r["seed_slowdown"] is None else f"{r['seed_slowdown']:.2f}"
        print(
            f"{r['stride']:6d} {r['time_ms']:8.3f} {r['slowdown']:9.2f} "
            f"{r['predicted_degree']:10.2f}  {seed}",
            file=file,
        )
    print(f"Spearman(measured, predicted) = {table['spearman_measured_vs_predicted']:.3f}", file=file)


# ------------------------------------------------------------------------------------------- entry points
def _load_fixture(path: str | Path) -> list[dict]:
    probes = json.loads(Path(path).read_text())["probes"]
    return [{**p, "source": "fixture"} for p in probes]


def validate(
    out_dir: str | Path = "autopad-validate",
    n_random: int = 110,
    seed: int = 0,
    use_ncu: bool | None = None,
    fixture: str | Path | None = None,
    budget_s: float = 150.0,
    ops: Sequence[str] = ("load", "store", "atomic"),
    n_random_new: int = 30,
) -> int:
    """Run the validation; returns the exit status (0 all agree, 1 any disagree, 2 nothing measured).

    With ncu (``use_ncu`` None = when found): probes of ``ops`` (load/store/atomic: the generated set and
    ``fixture``'s, re-checked; ldmatrix/stmatrix/cp.async: ``generate_new_probes`` with ``n_random_new``
    random ones per form) under ncu, written to ``validate_ncu.json/.csv``. Without: the stride timing
    table, ``validate_stride.json/.csv``.
    """
    bad = [o for o in ops if o not in FAMILIES]
    if bad or not ops:
        raise ValueError(f"ops: {bad or list(ops)} not among {', '.join(FAMILIES)}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if use_ncu is None:
        use_ncu = find_ncu() is not None
    if not use_ncu:
        table = stride_table()
        write_report(table, out, "validate_stride")
        _print_stride(table)
        return 0
    probes = [{**p, "source": "generated"} for p in generate_probes(seed, n_random) if p["op"] in ops]
    if fixture:
        probes += [p for p in _load_fixture(fixture) if p["op"] in ops]
    new = [f for f in ops if FAMILIES[f] == "new"]
    metrics: list[str] = list(METRICS)
    if new:
        probes += [{**p, "source": "generated"} for p in generate_new_probes(seed, n_random_new, new)]
        wanted = {{"ldmatrix": "ldsm", "stmatrix": "stsm", "cp.async": "ldgsts"}[f] for f in new}
        metrics += extra_metrics(wanted, query_metrics())
    # one shuffled launch order: if the time budget cuts the run short, what ran is a uniform sample
    order = np.random.default_rng(seed).permutation(len(probes)).tolist()
    launches = run_ncu([probes[i] for i in order], out, budget_s, metrics)
    if not launches and len(metrics) > len(METRICS) + 2:  # ncu refused a counter: only the sure ones
        print("validate: no launch measured; retrying with the shared-memory totals only", file=sys.stderr)
        metrics = list(METRICS) + extra_metrics(set(), None)
        launches = run_ncu([probes[i] for i in order], out, budget_s, metrics)
    measured: list[tuple[int | None, int | None] | None] = [None] * len(probes)
    misaligned = None
    for i, ln in zip(order, launches):
        p = probes[i]
        name = probe_kernel_name(p)
        if ln["kernel"] != name and not ln["kernel"].startswith(name + "("):
            misaligned = f"launch {ln['id']} ran {ln['kernel']}, expected {name}"
            print(f"validate: {misaligned}; the launches after it are left unmeasured", file=sys.stderr)
            break  # ncu's rows no longer line up with the launch order: trust none of the rest
        wave, conf, metric = counted_by(ln, p["op"])
        measured[i] = (wave, conf)
        if "form" in p:
            p["metric"] = metric
    report = compare(probes, measured)
    report["meta"] = {
        "date": time.strftime("%Y-%m-%d"),
        "seed": seed,
        "ops": list(ops),
        "n_random": n_random,
        "n_random_new": n_random_new,
        "metrics": metrics,
        "ncu": find_ncu(),
        "fixture": str(fixture) if fixture else None,
        "launched": len(launches),
        "misaligned": misaligned,
    }
    write_report(report, out, "validate_ncu")
    print_report(report)
    if report["summary"]["measured"] == 0:
        return 2
    return 1 if report["summary"]["disagree"] else 0


def add_validate_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``validate`` to an ``argparse`` subparsers object; the handler is ``args.func(args) -> int``."""
    p = subparsers.add_parser(
        "validate", help="check the bank-conflict model against the GPU (ncu or timing)"
    )
    _add_args(p)
    p.set_defaults(func=run_validate)
    return p


def _add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="autopad-validate", help="directory for the JSON and CSV reports")
    p.add_argument("--random", type=int, default=110, help="random probes on top of the structured ones")
    p.add_argument("--seed", type=int, default=0, help="seed for the random probes")
    p.add_argument("--no-ncu", action="store_true", help="time the stride table even where ncu exists")
    p.add_argument("--fixture", default=None, help="also re-check the probes of this fixture JSON")
    p.add_argument("--budget", type=float, default=150.0, help="seconds of profiled launches at most")
    p.add_argument(
        "--ops",
        default="load,store,atomic",
        help="comma-separated families to probe: load, store, atomic, ldmatrix, stmatrix, cp.async; or all",
    )
    p.add_argument(
        "--random-per-form", type=int, default=30, help="random probes per ldmatrix/stmatrix/cp.async form"
    )


def run_validate(args: argparse.Namespace) -> int:
    """Handler for ``autopad validate``: returns the exit status."""
    ops = [o.strip() for o in args.ops.split(",") if o.strip()]
    ops = list(FAMILIES) if ops == ["all"] else ops
    return validate(
        args.out,
        args.random,
        args.seed,
        False if args.no_ncu else None,
        args.fixture,
        args.budget,
        ops,
        args.random_per_form,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autopad.validate", description=__doc__.splitlines()[0])
    _add_args(parser)
    parser.add_argument("--launch", help=argparse.SUPPRESS)  # internal: the process that ncu profiles
    parser.add_argument("--launched", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.launch:
        from .validate_cuda import launch_probes

        launch_probes(args.launch, args.launched, args.budget)
        return 0
    return run_validate(args)


if __name__ == "__main__":
    sys.exit(main())
