"""The probes of ``autopad validate``: per-lane shared-memory addresses to check the model by, and what
the model predicts for them.

What: ``generate_probes`` (loads, stores, atomics of 1 to 16 bytes: strides, offsets, broadcast groups,
lane pairs sharing an address, inactive lanes, random addresses), ``generate_new_probes`` (ldmatrix,
stmatrix and cp.async in every form of ``NEW_FORMS``), ``FAMILIES`` (which op names which family) and
``predict`` (the model's wavefronts and conflicts per probe, batched per op and width).

Why apart: generating and predicting needs numpy and the model only; running the probes (validate_cuda.py),
reading ncu (validate_ncu.py) and reporting (validate_report.py) are other concerns. Moved from
autopad/validate.py unchanged; ``autopad.validate`` re-exports every name.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .model import analyze_batch
from .validate_kernels import GLOBAL_BYTES, NEW_FORMS, SMEM_BYTES

__all__ = ["COMBOS", "FAMILIES", "STRIDES", "generate_new_probes", "generate_probes", "predict"]

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
    # the rule's misses (model_cp_async.py) copy 8 or 16 bytes from a permuted source into scattered words:
    # does the order inside a line matter (same lines as lane order, reversed inside), or only which lanes
    # share a line? (Added after the 2026-12-01 run; no random draws, so a seed's random probes are
    # unchanged. Not at 4 bytes: there every lane is in one line, and the permuted 4-byte probes agree.)
    per = 128 // w
    inline = [((n // per) * per + per - 1 - n % per) * w for n in lanes]
    halves = [((n & 15) * 2 + (n >> 4)) * w for n in lanes]
    sources = (("inline-reverse", inline), ("gperm-halves", halves), ("gperm-reverse", contiguous[::-1]))
    for gname, glob in sources if w > 4 else ():
        out.append((f"{gname}-stride2", [n * 2 * w for n in lanes], glob))
        out.append((f"{gname}-pair", [(n >> 1) * w for n in lanes], glob))
        out.append((f"{gname}-mod7", [(n * 7 % 32) // 2 * 2 * w for n in lanes], glob))
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
        # a cp.async.cg probe is costed by its own rule (model_cp_async_cg.py), the other forms by their op's
        op = "cp.async.cg" if p.get("form") == "cp.async.cg" else p["op"]
        groups.setdefault((op, int(p["access_bytes"])), []).append(i)
    for (op, w), idx in groups.items():
        arr = np.array(
            [[-1 if a is None else a for a in probes[i]["addresses"]] for i in idx], dtype=np.int64
        )
        # cp.async: the lanes group by the global line they copy from (model_cp_async.py, _cg.py)
        glob = [probes[i]["global"] for i in idx] if all("global" in probes[i] for i in idx) else None
        wave, ideal = analyze_batch(arr, w, op, arch, global_addresses=glob)
        for i, wv, ide in zip(idx, wave.tolist(), ideal.tolist()):
            result[i] = (int(wv), int(wv - ide))
    return result
