"""cp.async.ca under Nsight Compute from sources spread over several global lines: which copies clash.

Why: the ``.ca`` rule before 2026-12-06 (autopad/model_cp_async.py then: lanes grouped by 128-byte global
line, each line its most lanes in one bank, summed) is exact wherever each store phase copies from a global
line of its own (293 of 293 such probes on the H100, runs 181-182), but not from sources permuted across
lines into scattered shared words: 16 of 79 there, measured 1-3 wavefronts over the rule mostly, and under
it where one line's lanes conflict in two phases (``gperm-halves-mod7``, 8 bytes: 6 measured, 8 predicted).
An offline search over the random probes (benchmarks/results/h200/validate_matrix/CP_ASYNC_REPLAY.md)
found no exact rule: they mix every effect. As for ``.cg`` (benchmarks/probe_cp_async_cg.py, whose targeted
probes gave its exact rule), these ask one question at a time (``.ca``, 4, 8 and 16 bytes; one warp, one
instruction a launch; a slot is a ``width``-byte slot of a 128-byte global line, a unit one of a 128-byte
shared row):

- ``x2``: two lanes of one store phase (lanes 0 and 1) from two global lines: lane 0 copies line 0's slot 0
  to unit 0 of row 0, lane 1 line 1's slot ``gb`` to unit ``ub`` of row 0 (no bank shared unless ``ub`` is
  0) or of row 1 (the same banks as row 0's unit: a bank conflict); does the same slot of two lines clash
  (the L1 reads slot k of every line from the same banks)?
- ``s2``: the same two lanes from one line (the plain rule's case, for reference);
- ``q2``: lanes 0 and ``128 / width`` (two store phases; 8 and 16 bytes) from two lines: do phases keep
  lines apart?
- ``kline``: ``k`` lanes (2-8) of one phase from ``k`` lines, each at slot 0 (``kline0``) or at its own slot
  (``klinek``), into distinct units of one row (no bank conflict), or all into unit ``j`` of ``k`` rows
  (``klinec``: a ``k``-way conflict);
- ``mod7``: ``gperm-halves-mod7``'s pattern taken apart (one line, its lanes in one phase or both).

Each CSV row: the probe, its width, its copies (``lane:line.slot>row.unit``), the measured wavefronts and
conflicts (``.ca``'s own counter, ``..._op_ldgsts_cache_access``) and the model's prediction when it ran.
H100 run 187 (benchmarks/results/h100/2026-12-06/run187/ca): the rule of then agreed with 567 of 971; the
rule read off it and run 188 (model_cp_async.py) with all 971.

``--set phases`` measures instead ``autopad validate``'s random probes of H100 run 181 that copy from
sources permuted across lines, each store phase of several lines alone and in two other lane orders
(``phase_probes``), to say which phases a rule misses and whether lane order matters (H200 run 188: it
never does; the rule read off both runs agrees with all 705).

Run on a GPU machine: ``python3 benchmarks/probe_cp_async_ca.py --out DIR [--set phases]``; ``--dry-run``
writes the probe list only (no GPU).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from probe_cp_async_cg import write_and_measure  # noqa: E402

LINE = 128
WIDTHS = (4, 8, 16)


def _probe(name: str, w: int, copies: dict[int, tuple[int, int]]) -> dict:
    """A ``.ca`` probe of width ``w`` from {lane: (global byte offset, shared byte offset)}; the other lanes
    are inactive (their global offset is any valid one: the kernel predicates the copy off)."""
    addr: list[int | None] = [None] * 32
    glob = [lane * w for lane in range(32)]
    for lane, (g, s) in copies.items():
        addr[lane], glob[lane] = s, g
    return {"op": "cp.async", "access_bytes": w, "name": name, "addresses": addr, "global": glob,
            "form": "cp.async.ca"}  # fmt: skip


def _slots(w: int) -> list[int]:
    """The slots (and units) a pair probe varies over: all of a line's at 16 and 8 bytes; at 4 bytes a
    spread of eight (every bank would be 32 x 33 probes)."""
    n = LINE // w
    return list(range(n)) if n <= 16 else [0, 1, 2, 3, 5, 8, 16, 31]


def probes() -> list[dict]:
    """The probe list (no random draws: the same list every time)."""
    out = []
    for w in WIDTHS:
        n = LINE // w  # slots a line, units a row, lanes a store phase
        tag = f"w{w}"
        for gb in _slots(w):
            for ub in _slots(w):
                for row, rname in ((0, "r0"), (1, "r1")):
                    if row == 1 and ub not in (0, 1, n // 2):
                        continue
                    if row == 0 and ub == 0:
                        continue  # both lanes on one shared word: another question (``dup`` of .cg)
                    dst = row * LINE + ub * w
                    out.append(
                        _probe(f"{tag}-x2-gb{gb}-{rname}u{ub}", w, {0: (0, 0), 1: (LINE + gb * w, dst)})
                    )
                    if gb != 0:  # the same two slots of one line
                        out.append(_probe(f"{tag}-s2-gb{gb}-{rname}u{ub}", w, {0: (0, 0), 1: (gb * w, dst)}))
        for gb in (0, 1, n // 2) if n < 32 else ():  # (at 4 bytes one store phase is the whole warp)
            for ub, row in ((0, 1), (1, 0), (n // 2, 0), (1, 1)):
                dst = row * LINE + ub * w
                out.append(_probe(f"{tag}-q2-gb{gb}-r{row}u{ub}", w, {0: (0, 0), n: (LINE + gb * w, dst)}))
        for k in range(2, 9):
            ks = range(k)
            # k lines, each at slot 0, into units 0..k-1 of row 0 (no bank shared)
            out.append(_probe(f"{tag}-kline0-k{k}", w, {i: (i * LINE, i * w) for i in ks}))
            # k lines, line i at slot i, into units 0..k-1 of row 0
            out.append(_probe(f"{tag}-klinek-k{k}", w, {i: (i * LINE + i * w, i * w) for i in ks}))
            # k lines, each at slot 0, into unit 0 of rows 0..k-1 (a k-way bank conflict)
            out.append(_probe(f"{tag}-klinec-k{k}", w, {i: (i * LINE, i * LINE) for i in ks}))
            # one line, slots 0..k-1, into unit 0 of rows 0..k-1 (the plain rule's k-way conflict)
            out.append(_probe(f"{tag}-kslotc-k{k}", w, {i: (i * w, i * LINE) for i in ks}))
    # gperm-halves-mod7 (8 bytes, H100 run 181: 6 measured where the rule says 8; autopad validate's
    # pattern: lane n writes (7 n mod 32) // 2 * 16, and copies the lower half of line sector 2 n (lanes 0-15,
    # lines 0 and 1) or the upper half (lanes 16-31)) taken apart, by store phase and by line
    w = 8
    full = {n: (16 * n if n < 16 else 8 + 16 * (n - 16), (n * 7 % 32) // 2 * 2 * w) for n in range(32)}
    parts = {
        "full": lambda n, g: True,
        "phase0": lambda n, g: n < 16,
        "line0": lambda n, g: g < LINE,
        "line0-phase0": lambda n, g: g < LINE and n < 16,
        "line1": lambda n, g: g >= LINE,
    }
    for name, keep in parts.items():
        out.append(_probe(f"w8-mod7-{name}", w, {n: c for n, c in full.items() if keep(n, c[0])}))
    return out


RUN181 = ROOT / "benchmarks/results/h100/2026-12-05/run181/validate_seed2/validate_ncu.json"


def phase_probes() -> list[dict]:
    """Run 181's random ``.ca`` probes from sources permuted across lines (``autopad validate`` seed 2; 79),
    taken apart: each store phase that copies from several lines measured alone (the other lanes
    inactive), then with its copies handed to its lanes in reverse order, then with its lines' order of
    first lanes reversed (each line's copies keeping their order). The line packing of the twenty-sixth
    session missed 56 of the 79 (mostly 1-4 wavefronts under), and a whole instruction's count cannot say
    which phase, or whether the order of lanes matters."""
    from autopad.model_cp_async import line_ordered

    rows = json.loads(RUN181.read_text())["rows"]
    out = []
    for idx, r in enumerate(rows):
        if r.get("form") != "cp.async.ca" or line_ordered(r["addresses"], r["global"], r["access_bytes"]):
            continue
        w = r["access_bytes"]
        per = LINE // w
        for ph in range(32 // per):
            lanes = [ln for ln in range(ph * per, (ph + 1) * per) if r["addresses"][ln] is not None]
            copies = [(r["global"][ln], r["addresses"][ln]) for ln in lanes]
            lines = list(dict.fromkeys(g // LINE for g, _ in copies))
            if len(lines) < 2:
                continue
            tag = f"r181-{idx}-{r['name']}-w{w}-p{ph}"
            out.append(_probe(f"{tag}-alone", w, dict(zip(lanes, copies))))
            out.append(_probe(f"{tag}-rev", w, dict(zip(lanes, copies[::-1]))))
            swapped = [c for ln in lines[::-1] for c in copies if c[0] // LINE == ln]
            out.append(_probe(f"{tag}-swap", w, dict(zip(lanes, swapped))))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="probe_cp_async_ca", help="folder for the CSV (and ncu's raw output)")
    ap.add_argument("--budget", type=float, default=240.0, help="seconds ncu may take")
    ap.add_argument("--dry-run", action="store_true", help="write the probe list only (no GPU)")
    ap.add_argument(
        "--set", choices=("targeted", "phases"), default="targeted",
        help="targeted: the one-question probes (run 187); phases: run 181's permuted probes taken apart",
    )  # fmt: skip
    args = ap.parse_args(argv)
    ps = probes() if args.set == "targeted" else phase_probes()
    return write_and_measure(ps, Path(args.out), args, "cp.async", "ca_probes.csv")


if __name__ == "__main__":
    sys.exit(main())
