"""The tuner with the predictor's constants as committed against a variant, on the same GPU in one job.

Why: a model term changes the order the tuner measures in, and so possibly its pick. Replays on recorded
studies answer that only where the study measured what the tuner asks for; this script answers it on the
GPU. For each shape it runs ``autopad.tune`` twice without a cache (``cache=False``), once with
``autopad.predict.CONSTANTS`` as committed ("head") and once with the fields given by ``--set`` changed
("variant"; e.g. ``--set smem_issue=0``: the SIMT GEMM ranked without the shared instructions' issue slots),
in alternating order by shape. ``--spec-set NAME=value`` changes a spec module's constant on the variant's
side instead (or as well), e.g. ``--spec-set REG_CAP_SLACK=0.2,REG_CAP_COST=0.75``: every loaded module of
the built-in kernels that defines NAME gets the value while the variant tunes (the specs read their
constants at every call); so does a tuner constant (``autopad.search_shortlist``,
``autopad.strategies.model``), e.g. ``--spec-set TWIN_SWEEP_MARGIN=0``: the tune without the first round's
twin sweep. Then it re-times both picks and the spec's unpadded default with ``autopad.bench.measure`` in
``--rounds`` rounds of alternating order, beside ``torch.mm`` for a GEMM.

    python benchmarks/ab_tune_constants.py --kernel matmul --backend cuda --dtype float32 \
        --shapes 4096x4096x4096,8192x8192x8192 --set smem_issue=0 --out DIR

Writes ``ab_tune.csv`` (one row per shape and side: the pick, what the tuner measured, its tuning time, the
re-timed medians) and ``ab_tune_measured.csv`` (every candidate each side's tune measured, with its time and
prediction: what a replay of either search needs), and prints the pick over the faster side's pick.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy


def parse_pairs(text: str, flag: str) -> dict[str, str]:
    """'a=1,b=2.5' -> {'a': '1', 'b': '2.5'}; ValueError, naming ``flag``, for a part that is not
    NAME=number."""
    out = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, eq, value = part.partition("=")
        try:
            float(value)
        except ValueError:
            eq = ""
        if not eq:
            raise ValueError(f"{flag}: {part!r} is not NAME=number (e.g. REG_CAP_SLACK=0.2)")
        out[name.strip()] = value.strip()
    return out


def parse_set(text: str) -> dict[str, float]:
    """'a=1,b=2.5' -> {'a': 1.0, 'b': 2.5}, each a field of ``autopad.predict.Constants``."""
    from autopad.predict import Constants

    names = {f.name for f in dataclasses.fields(Constants)}
    out = {}
    try:
        pairs = parse_pairs(text, "--set")
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    for name, value in pairs.items():
        if name not in names:
            raise SystemExit(f"--set: {name!r} is not a field of Constants ({', '.join(sorted(names))})")
        out[name] = float(value)
    return out


def parse_spec_set(text: str) -> dict[str, int | float]:
    """'A=1,B=0.2' -> {'A': 1, 'B': 0.2}: a spec module's constants, ints where written as ints
    (ValueError for a part that is not NAME=number)."""
    pairs = parse_pairs(text, "--spec-set")
    return {n: int(v) if v.lstrip("+-").isdigit() else float(v) for n, v in pairs.items()}


# the tuner's modules whose constants --spec-set may change too (strategies/model.py imports
# search_shortlist's margins by name, so both are patched where both define one)
TUNER_MODULES = ("autopad.search_shortlist", "autopad.strategies.model")


def spec_modules(names: list[str]) -> list[tuple[object, str, object]]:
    """(module, NAME, committed value) for every loaded module of the built-in kernels (``kernels.*``,
    ``autopad.kernels.*``: one file may be loaded under both) or of the tuner (``TUNER_MODULES``) that
    defines NAME."""
    import importlib

    for name in TUNER_MODULES:
        importlib.import_module(name)
    hits = [(m, n, getattr(m, n)) for key, m in list(sys.modules.items())
            if m is not None and (key.startswith("kernels.") or key.startswith("autopad.kernels.")
                                  or key in TUNER_MODULES)
            for n in names if n in vars(m)]  # fmt: skip
    missing = set(names) - {n for _, n, _ in hits}
    if missing:
        raise SystemExit(f"--spec-set: no loaded kernel or tuner module defines {', '.join(sorted(missing))}")
    return hits


def short(constants: dict[str, int]) -> str:
    """The constants, without the swizzle knobs at 1 (no swizzle)."""
    return ",".join(f"{k}={v}" for k, v in sorted(constants.items()) if not (k.startswith("SW_") and v == 1))


def torch_mm_ms(shape: tuple[int, ...]) -> float:
    """torch.mm in fp32 (TF32 off) on random [M, K] x [K, N], timed as the tuner times a candidate
    (``autopad.bench_timing.benchmark``: L2 flush, CUDA events, median), so the ratio is like for like."""
    import torch

    from autopad.bench_timing import benchmark

    torch.backends.cuda.matmul.allow_tf32 = False
    m, n, k = shape
    a, b = torch.randn(m, k, device="cuda"), torch.randn(k, n, device="cuda")
    return benchmark(lambda: torch.mm(a, b)).ms


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernel", default="matmul")
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--shapes", required=True, help="comma-separated, e.g. 4096x4096x4096,8192x8192x8192")
    ap.add_argument("--set", default="", help="the variant's Constants fields, e.g. smem_issue=0")
    ap.add_argument(
        "--spec-set", default="", help="the variant's spec module constants, e.g. REG_CAP_SLACK=0.2"
    )
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    if not a.set and not a.spec_set:
        ap.error("give --set, --spec-set or both: what the variant changes")
    try:
        spec_values = parse_spec_set(a.spec_set)
    except ValueError as exc:
        ap.error(str(exc))
    import autopad
    import autopad.predict as P
    from autopad.bench import gpu_available, measure
    from autopad.tune import resolve

    if not gpu_available():  # without one both tunes would answer the model's pick and nothing could be timed
        ap.error("needs a GPU: it tunes and times on one (autopad.tune ranks by the model alone without)")

    head = P.CONSTANTS
    variant = dataclasses.replace(head, **parse_set(a.set))
    spec = resolve(a.kernel, a.backend)
    patched = spec_modules(list(spec_values))
    label = ";".join(x for x in (a.set, a.spec_set) if x)
    default = dict(getattr(spec, "DEFAULTS", {}))
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    measured: list[dict] = []  # every candidate each tune measured, in the tuner's order: a replay's data
    for i, text in enumerate(a.shapes.split(",")):
        shape = tuple(int(x) for x in text.split("x"))
        picks = {}
        sides = [("head", head), ("variant", variant)]
        for side, k in sides if i % 2 == 0 else sides[::-1]:  # who tunes first alternates by shape
            P.CONSTANTS = k  # the predictor reads the module's constants at every call
            if side == "variant":
                for m, n, _ in patched:
                    setattr(m, n, spec_values[n])
            t0 = time.time()
            try:
                res = autopad.tune(a.kernel, shape, a.dtype, backend=a.backend, cache=False, progress=False)
            finally:
                P.CONSTANTS = head
                for m, n, v in patched:
                    setattr(m, n, v)
            picks[side] = (dict(res.best.constants), res, time.time() - t0)
            measured += [{"shape": text, "side": side, "key": c.key, "ms": c.measured_ms,
                          "correct": c.correct, "predicted_s": c.prediction.seconds}
                         for c in res.candidates if c.measurement is not None]  # fmt: skip
            n = sum(c.measurement is not None for c in res.candidates)
            print(f"{text} {side}: pick {short(res.best.constants)} ({n} measured, "
                  f"{time.time() - t0:.0f} s)", flush=True)  # fmt: skip
        cands = [picks["head"][0], picks["variant"][0], default]
        timed: list[list[float | None]] = [[] for _ in cands]
        for rnd in range(a.rounds):
            order = list(range(len(cands))) if rnd % 2 == 0 else list(range(len(cands)))[::-1]
            ms = measure(spec, [cands[j] for j in order], shape, a.dtype, seed=rnd, isolated=False)
            for j, m in zip(order, ms):
                timed[j].append(m.ms if m.correct else None)
        med = [statistics.median(ok) if (ok := [t for t in ts if t is not None]) else None for ts in timed]
        ref = torch_mm_ms(shape) if a.kernel == "matmul" else None
        timed_ok = [x for x in med[:2] if x is not None]
        if not timed_ok:
            print(f"{text}: neither pick re-timed correctly; skipped", flush=True)
            continue
        best = min(timed_ok)
        for j, side in enumerate(("head", "variant", "default")):
            c = cands[j]
            res = picks[side][1] if side in picks else None
            n = sum(x.measurement is not None for x in res.candidates) if res else ""
            rows.append({"shape": text, "side": side, "pick": short(c), "retimed_ms": med[j],
                         "over_best_pick": med[j] / best if med[j] else None, "measured": n,
                         "tune_s": round(picks[side][2], 1) if side in picks else "", "torch_mm_ms": ref,
                         "of_torch_mm": ref / med[j] if ref and med[j] else None, "set": label})  # fmt: skip
            print(
                f"  {side}: {med[j]} ms, {rows[-1]['over_best_pick']}, of torch.mm {rows[-1]['of_torch_mm']}"
            )
    if measured:
        with open(out / "ab_tune_measured.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(measured[0]))
            w.writeheader()
            w.writerows(measured)
    if not rows:
        return 2
    with open(out / "ab_tune.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
