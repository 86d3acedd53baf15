"""``autopad validate``: check the bank-conflict model against the hardware, probe by probe.

Why: the model (model.py) is a fit to 558 probes. Its claim to pick what the hardware rewards holds only as
far as it has been checked, so this module generates fresh probes (strides, offsets, broadcast groups, lane
pairs sharing an address, inactive lanes, random addresses; 1 to 16 bytes; loads, stores, atomics), runs each
as a one-instruction kernel (validate_cuda.py) and:

* with Nsight Compute (``ncu``): reads the wavefronts and bank conflicts of every launch and compares them
  with ``analyze_batch``; every disagreement is listed with its addresses. Exit status 0 = all agree.
* without it: times the seeds' stride micro-benchmark and reports how the measured slowdowns rank against
  the model's predicted degrees (Spearman), next to the seeds' table.

``--ops ldmatrix,stmatrix,cp.async`` probes the model's newer rules instead (model_rules.py: ldmatrix and
stmatrix x1/x2/x4 with and without .trans, cp.async.ca of 4, 8, 16 bytes and cp.async.cg of 16): per form
a structured set (conflict-free, 2-, 4-, 8-way, broadcast rows, repeated rows, lanes the instruction
ignores; for cp.async also the global side permuted, under conflict-free and scattered shared sides; the
prediction groups the lanes by global line, model_cp_async.py) and ``--random``
random ones. ``--ops all`` does both. Their report says which ncu counter each number came from.

Importing this module needs numpy only; torch, cuda.core and ncu are reached inside functions.

Where the code lives (this module keeps the entry points and re-exports every name it defined before the
split, so every import of ``autopad.validate`` keeps working): validate_probes.py (generating probes and
the model's predictions), validate_report.py (the agreement report), validate_stride.py (the timing mode,
``spearman``); the GPU side is validate_cuda.py, validate_kernels.py (probe sources) and validate_ncu.py.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

# besides what this module uses, the names validate.py defined or imported before the split, importable
# from here as before
from .validate_cuda import (  # noqa: F401
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
from .validate_probes import (  # noqa: F401
    COMBOS,
    FAMILIES,
    STRIDES,
    _cp_async_cases,
    _matrix_cases,
    _random,
    _structured,
    analyze_batch,
    generate_new_probes,
    generate_probes,
    predict,
)
from .validate_report import _addr_text, compare, print_report, write_report  # noqa: F401
from .validate_stride import (  # noqa: F401
    SEED_STRIDES,
    _print_stride,
    predicted_stride_degree,
    spearman,
    stride_table,
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
        wave, conf, metric = counted_by(ln, p["op"], p.get("form"))
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


def add_validate_parser(subparsers: Any) -> argparse.ArgumentParser:
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
