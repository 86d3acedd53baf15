"""cp.async.cg under Nsight Compute: which of one instruction's 16-byte copies share a wavefront.

Why: Triton's pipelined ``tl.dot`` (kernels/triton/matmul.py, PATH 1) stages its operands with
``cp.async.cg``, and issue 14 asks that the model cover the instructions the kernels issue, exact against
Nsight Compute. H200 run 157 (2026-12-05) measured 144 ``.cg`` probes from their own counter
(``..._op_ldgsts_cache_bypass``): a rule unlike ``.ca``'s. No broadcast limit (32 lanes into one word cost
1), a contiguous copy costs one wavefront per 128-byte line, but copies that move a line's 16-byte chunks to
other positions of shared memory mostly cost one wavefront each, with a few merged. Read off those probes
(twenty-eighth session): grouping the copies by (global line, shared 128-byte row, source chunk XOR
destination chunk) predicts 116 of the 144, but not which of two lanes writing one word counts, and not
every merge. The random probes mix all of that; this script asks the questions one at a time.

What (all 16-byte ``cp.async.cg``, one warp, one instruction a launch; chunk = 16-byte slot of a 128-byte
global line or shared row, 0-7):
- ``pair``: two lanes (0 and 1, one store phase), one global line, one shared row: lane 0 copies chunk 0 to
  chunk ``sa`` (0 or 3), lane 1 chunk ``gb`` to ``sb``, every ``gb`` 1-7 and ``sb`` != ``sa``;
- ``pairq``: the same with lanes 0 and 8 (two store phases), ``sa`` 0;
- ``pairx``: lanes 0 and 1 from two global lines into one row; ``pairr``: one line into two rows;
- ``perm``: one phase (lanes 0-7) copying one whole line into one row, every XOR and rotation of the
  chunks and 20 random permutations;
- ``dup``: two lanes writing one shared chunk and a third lane elsewhere (which writer counts);
- ``sub``: 2-8 lanes of one phase, one line into one row, random subsets and maps.
Each row of the CSV: the probe, its active lanes' copies (``lane:line.chunk>row.chunk``), the measured
wavefronts and conflicts (``cp.async.cg``'s own counter, as ``autopad validate`` reads it) and what the rule
read off the first run (``autopad/model_cp_async_cg.py``, op "cp.async.cg") predicts.

Run on a GPU machine: ``python3 benchmarks/probe_cp_async_cg.py --out DIR``; ``--dry-run`` writes the probe
list only (no GPU).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

W = 16  # bytes a lane: .cg copies 16 bytes only
LINE = 128


def _probe(name: str, copies: dict[int, tuple[int, int]]) -> dict:
    """A probe from {lane: (global byte offset, shared byte offset)}; other lanes inactive (their global
    offset is any valid one: the kernel predicates the copy off)."""
    addr: list[int | None] = [None] * 32
    glob = [lane * W for lane in range(32)]
    for lane, (g, s) in copies.items():
        addr[lane], glob[lane] = s, g
    return {"op": "cp.async", "access_bytes": W, "name": name, "addresses": addr, "global": glob,
            "form": "cp.async.cg"}  # fmt: skip


def probes(seed: int = 0) -> list[dict]:
    """The probe list (the same seed gives the same list)."""
    rng = np.random.default_rng(seed)
    out = []
    c = W  # one chunk
    for sa in (0, 3):
        for gb in range(1, 8):
            for sb in range(8):
                if sb != sa:
                    out.append(_probe(f"pair-sa{sa}-gb{gb}-sb{sb}", {0: (0, sa * c), 1: (gb * c, sb * c)}))
    for gb in range(1, 8):
        for sb in range(1, 8):
            out.append(_probe(f"pairq-gb{gb}-sb{sb}", {0: (0, 0), 8: (gb * c, sb * c)}))
    for ga, sa, gb, sb in ((0, 0, 1, 1), (0, 0, 0, 1), (0, 1, 0, 0), (2, 2, 5, 5), (0, 0, 3, 1), (1, 0, 5, 4),
                           (0, 7, 7, 0), (3, 0, 4, 7), (0, 2, 1, 3), (6, 1, 2, 5)):  # fmt: skip
        out.append(_probe(f"pairx-{ga}{sa}{gb}{sb}", {0: (ga * c, sa * c), 1: (LINE + gb * c, sb * c)}))
        out.append(_probe(f"pairr-{ga}{sa}{gb}{sb}", {0: (ga * c, sa * c), 1: (gb * c, LINE + sb * c)}))
    for k in range(8):
        out.append(_probe(f"perm-xor{k}", {n: (n * c, (n ^ k) * c) for n in range(8)}))
    for r in range(1, 8):
        out.append(_probe(f"perm-rot{r}", {n: (n * c, (n + r) % 8 * c) for n in range(8)}))
    for k in range(20):
        p = rng.permutation(8)
        name = f"perm-rand{k}-" + "".join(map(str, p))
        out.append(_probe(name, {n: (n * c, int(p[n]) * c) for n in range(8)}))
    for k in range(20):
        src = rng.choice(8, size=3, replace=False)
        d, e = rng.choice(8, size=2, replace=False)
        lanes = sorted(rng.choice(8, size=3, replace=False).tolist())
        m = {lanes[0]: (int(src[0]) * c, int(d) * c), lanes[1]: (int(src[1]) * c, int(d) * c),
             lanes[2]: (int(src[2]) * c, int(e) * c)}  # fmt: skip
        out.append(_probe(f"dup{k}", m))
    for k in range(30):
        n = int(rng.integers(2, 9))
        lanes = sorted(rng.choice(8, size=n, replace=False).tolist())
        src = rng.choice(8, size=n, replace=False)
        dst = rng.choice(8, size=n, replace=False)
        out.append(_probe(f"sub{k}", {ln: (int(g) * c, int(s) * c) for ln, g, s in zip(lanes, src, dst)}))
    return out


def copies_text(p: dict) -> str:
    """'lane:g.chunk>r.chunk' for each active lane (g = global line, r = shared row; a chunk is the probe's
    width)."""
    w = p.get("access_bytes", W)
    parts = []
    for lane, (s, g) in enumerate(zip(p["addresses"], p["global"])):
        if s is not None:
            parts.append(f"{lane}:{g // LINE}.{g % LINE // w}>{s // LINE}.{s % LINE // w}")
    return " ".join(parts)


def measure_probes(ps: list[dict], out: Path, budget: float, model_op: str) -> list[dict]:
    """Run ``ps`` under ncu (one launch each, ``budget`` seconds at most) and return a row per measured
    probe: its name, width, active lanes, copies, the measured wavefronts and conflicts (the form's own
    counter, as ``autopad validate`` reads it) and the model's prediction under ``model_op`` ("cp.async.cg",
    or "cp.async" for ``.ca``, with each probe's global addresses). Stops at a launch that ran another
    kernel than its probe's."""
    from autopad.validate_kernels import probe_kernel_name
    from autopad.validate_ncu import METRICS, counted_by, extra_metrics, query_metrics, run_ncu

    metrics = list(METRICS) + extra_metrics({"ldgsts"}, query_metrics())
    launches = run_ncu(ps, out, budget, metrics)
    rows = []
    for p, ln in zip(ps, launches):
        want = probe_kernel_name(p)
        if ln["kernel"] != want and not ln["kernel"].startswith(want + "("):
            print(f"launch {ln['id']} ran {ln['kernel']}, not {want}: stopping", file=sys.stderr)
            break
        wave, conf, metric = counted_by(ln, p["op"], p["form"])
        rows.append({"name": p["name"], "access_bytes": p["access_bytes"],
                     "active": sum(a is not None for a in p["addresses"]), "copies": copies_text(p),
                     "measured_wavefronts": wave, "measured_conflicts": conf, "metric": metric})  # fmt: skip
    if rows:  # the model's rule beside each measurement, batched per width
        from autopad.model import analyze_batch

        done = ps[: len(rows)]
        for w in sorted({p["access_bytes"] for p in done}):
            idx = [i for i, p in enumerate(done) if p["access_bytes"] == w]
            shared = np.array(
                [[-1 if a is None else a for a in done[i]["addresses"]] for i in idx], dtype=np.int64
            )
            glob = np.array([done[i]["global"] for i in idx], dtype=np.int64)
            pred, _ = analyze_batch(shared, w, model_op, global_addresses=glob)
            for i, v in zip(idx, pred.tolist()):
                rows[i]["predicted_wavefronts"] = v
        agree = sum(r["measured_wavefronts"] == r["predicted_wavefronts"] for r in rows)
        print(f"the model's {model_op} rule agrees with {agree} of {len(rows)}")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="probe_cp_async_cg", help="folder for the CSV (and ncu's raw output)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--budget", type=float, default=240.0, help="seconds ncu may take")
    ap.add_argument("--dry-run", action="store_true", help="write the probe list only (no GPU)")
    args = ap.parse_args(argv)
    return write_and_measure(probes(args.seed), Path(args.out), args, "cp.async.cg", "cg_probes.csv")


def write_and_measure(
    ps: list[dict], out: Path, args: argparse.Namespace, model_op: str, csv_name: str
) -> int:
    """Write ``ps`` to ``out/probes.json``; unless ``args.dry_run``, measure them (``measure_probes``, within
    ``args.budget`` seconds) into ``out/csv_name``. 0, or 2 where nothing was measured."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "probes.json").write_text(json.dumps(ps))
    print(f"{len(ps)} probes -> {out / 'probes.json'}")
    if args.dry_run:
        return 0
    rows = measure_probes(ps, out, args.budget, model_op)
    with open(out / csv_name, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["name"])
        w.writeheader()
        w.writerows(rows)
    print(f"{len(rows)} of {len(ps)} probes measured -> {out / csv_name}")
    return 0 if rows else 2


if __name__ == "__main__":
    sys.exit(main())
