"""Nsight Compute for ``autopad validate``: which counters to ask for, running ncu, reading its CSV.

What: ``METRICS`` (wavefronts and bank conflicts of ld/st/atom), ``extra_metrics`` / ``query_metrics`` (the
ldmatrix, stmatrix and cp.async counters this GPU's ncu lists, the shared-memory totals last),
``find_ncu``, ``run_ncu`` (every probe in ONE profiled process: ``python -m autopad.validate --launch``),
``parse_ncu_csv`` (the long and the raw layouts, in launch order) and ``counted_by`` / ``measured_counts``
(one launch's numbers for a probe's op, and the counter they came from).

Why apart: talking to ncu is a concern of its own (a subprocess and its text), apart from writing the
probe kernels (validate_kernels.py) and launching them (validate_cuda.py). Moved from
autopad/validate_cuda.py unchanged; ``autopad.validate_cuda`` re-exports every name.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from .validate_kernels import _SHORT, _family

__all__ = [
    "METRICS",
    "TOTALS",
    "counted_by",
    "extra_metrics",
    "find_ncu",
    "measured_counts",
    "parse_ncu_csv",
    "query_metrics",
    "run_ncu",
]

METRICS = tuple(
    f"l1tex__data_{kind}_mem_shared_op_{o}.sum"
    for o in ("ld", "st", "atom")
    for kind in ("pipe_lsu_wavefronts", "bank_conflicts_pipe_lsu")
)
# Candidate counters for the new probes, in order of preference (wavefronts, bank conflicts); the
# shared-memory totals come last. ``extra_metrics`` keeps those this GPU's ncu lists.
_CANDIDATES = {
    "ldsm": [
        (
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldsm",
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm",
        ),
        (
            "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm",
            "sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm",
        ),
    ],
    "stsm": [
        (
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_stsm",
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_stsm",
        ),
        (
            "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_stsm",
            "sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_stsm",
        ),
    ],
    "ldgsts": [
        (
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldgsts",
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts",
        ),
        (
            "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts_cache_access",
            "sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts_cache_access",
        ),
        (
            "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts_cache_bypass",
            "sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts_cache_bypass",
        ),
    ],
}
TOTALS = (
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
)


def query_metrics(ncu: str | None = None) -> set[str] | None:
    """Base names of the metrics ncu lists for this machine's GPU (``ncu --query-metrics``), or None."""
    ncu = ncu or find_ncu()
    if ncu is None:
        return None
    try:
        proc = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return None
    names = set(re.findall(r"^\s*\"?([a-z][a-z0-9_]*__[a-z0-9_]+)", proc.stdout, flags=re.MULTILINE))
    return names or None


def extra_metrics(families: set[str], available: set[str] | None) -> list[str]:
    """The counters to request for the new probes' families ("ldsm", "stsm", "ldgsts"): every candidate
    this GPU has, plus the shared-memory totals. With no list from ncu (``available`` None) only the
    totals, which every ncu since 2020 has, so one unknown name cannot fail the whole run."""
    out = [m for fam in sorted(families) for pair in _CANDIDATES[fam] for m in pair]
    out = [m + ".sum" for m in out if available is not None and m in available]
    return out + list(TOTALS)


def find_ncu() -> str | None:
    """Path of Nsight Compute's ``ncu``: on PATH, else /usr/local/cuda/bin/ncu, else None."""
    found = shutil.which("ncu")
    if found:
        return found
    candidates = [Path("/usr/local/cuda/bin/ncu"), *sorted(Path("/opt/nvidia").glob("nsight-compute/*/ncu"))]
    return next((str(c) for c in candidates if c.is_file() and os.access(c, os.X_OK)), None)


def _number(text: str) -> float | None:
    text = text.strip().replace(",", "")
    try:
        return float(text)
    except ValueError:
        return None  # "n/a" and the like


def parse_ncu_csv(text: str, kernel_prefix: str = "probe") -> list[dict]:
    """Per-launch metrics from ``ncu --csv`` output, in launch order (the "ID" column).

    Accepts the default long format (one row per metric: "Metric Name", "Metric Unit", "Metric Value") and
    the wide ``--page raw`` format (one column per metric, a units row under the header). ``==PROF==``
    lines and the program's own output around the table are skipped; thousands separators are removed.
    Returns ``[{"id", "kernel", "metrics": {name: value}}]`` for kernels whose name starts with the prefix.
    """
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID",')), None)
    if start is None:
        return []
    body = [ln for ln in lines[start:] if ln.startswith('"')]
    rows = list(csv.reader(io.StringIO("\n".join(body))))
    header = rows[0]
    col = {name: i for i, name in enumerate(header)}
    launches: dict[int, dict] = {}
    long_form = "Metric Name" in col
    for row in rows[1:]:
        if len(row) < len(header) or row[0] == "ID" or not row[0].strip().isdigit():
            continue  # a repeated header, or the units row of the raw page
        kernel = row[col["Kernel Name"]]
        if not kernel.startswith(kernel_prefix):
            continue
        entry = launches.setdefault(int(row[0]), {"id": int(row[0]), "kernel": kernel, "metrics": {}})
        if long_form:
            entry["metrics"][row[col["Metric Name"]]] = _number(row[col["Metric Value"]])
        else:
            for name, i in col.items():
                if "__" in name:  # a metric column
                    entry["metrics"][name] = _number(row[i])
    return [launches[k] for k in sorted(launches)]


def measured_counts(launch: dict, op: str, form: str | None = None) -> tuple[int | None, int | None]:
    """(wavefronts, bank conflicts) of one parsed launch for the probe's op (and cp.async form)."""
    return counted_by(launch, op, form)[:2]


def counted_by(launch: dict, op: str, form: str | None = None) -> tuple[int | None, int | None, str | None]:
    """(wavefronts, bank conflicts, the wavefront metric they came from) of one parsed launch.

    ld/st/atom: their own pair. ldmatrix/stmatrix/cp.async: the first candidate pair with both values,
    else the shared-memory totals (the probe issues no other shared-memory instruction). A cp.async form
    skips the other form's pair: the ``.cg`` probes read 0 in the ``_cache_access`` pair (H200,
    2026-12-01), so presumably ``.cg`` is counted in ``_cache_bypass`` (not yet seen: that run kept no
    bypass values) and ``.ca`` in ``_cache_access``."""
    fam = _family(op)
    if fam is None:
        o = _SHORT[op]
        pairs = [
            (
                f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{o}.sum",
                f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{o}.sum",
            )
        ]
    else:
        pairs = [(w + ".sum", c + ".sum") for w, c in _CANDIDATES[fam]] + [TOTALS]
        other = {"cp.async.ca": "_cache_bypass", "cp.async.cg": "_cache_access"}.get(form or "")
        if other:
            pairs = [(w, c) for w, c in pairs if not w.endswith(other + ".sum")]
    got = launch["metrics"]
    for w, c in pairs:
        if got.get(w) is not None and got.get(c) is not None:
            return int(got[w]), int(got[c]), w
    w, c = pairs[0]
    wave, conf = got.get(w), got.get(c)
    return (None if wave is None else int(wave)), (None if conf is None else int(conf)), None


def run_ncu(
    probes: list[dict], out_dir: Path, budget_s: float = 150.0, metrics: Sequence[str] = METRICS
) -> list[dict]:
    """Profile every probe under ncu in ONE process; returns the parsed launches, in launch order."""
    ncu = find_ncu()
    if ncu is None:
        raise RuntimeError("validate: ncu (Nsight Compute) not found on PATH or in /usr/local/cuda/bin")
    with tempfile.TemporaryDirectory(prefix="autopad-validate-") as tmp:
        ppath, lpath = Path(tmp) / "probes.json", Path(tmp) / "launched.txt"
        keep = ("op", "access_bytes", "addresses", "form", "global")
        ppath.write_text(json.dumps([{k: p[k] for k in keep if k in p} for p in probes]))
        cmd = [
            ncu,
            "--target-processes",
            "all",
            "--clock-control",
            "none",
            "--cache-control",
            "none",
            "--print-units",
            "base",
            "-k",
            "regex:^probe_",
            "--metrics",
            ",".join(metrics),
            "--csv",
            sys.executable,
            "-m",
            "autopad.validate",
            "--launch",
            str(ppath),
            "--launched",
            str(lpath),
            "--budget",
            str(budget_s),
        ]
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        t0 = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=budget_s + 600)
        (out_dir / "ncu_raw.csv").write_text(proc.stdout)
        n = int(lpath.read_text()) if lpath.is_file() else 0
        print(
            f"validate: ncu ran {n} of {len(probes)} launches in {time.monotonic() - t0:.1f} s "
            f"(exit {proc.returncode})",
            file=sys.stderr,
        )
        print(proc.stderr[-(4000 if proc.returncode else 1500) :], file=sys.stderr)
    launches = parse_ncu_csv(proc.stdout)
    if len(launches) != n:
        print(
            f"validate: ncu reported {len(launches)} probe launches, the launcher made {n}", file=sys.stderr
        )
    return launches[:n]
