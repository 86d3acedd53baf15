"""What the SIMT GEMM's checked k-loop costs: every launch configuration of the CUDA fp32 GEMM (unpadded, no
split-K) timed at K = 1000 and K = 1008 (M = N = 2048).

Why: ``kernels/cuda/matmul.cu`` runs one of two k-loops for the whole grid. Where K is a multiple of BK and
K and N of 4 (``full``), no global load checks its bounds; otherwise every 16-byte load of every k-step tests
its row and its k range first (``load_global<false>``). The model did not know: on the studies with K =
1000 (1000³ and 3072x3072x1000, H100 and H200, every sampled candidate timed), the BK 16 builds (K % 16 = 8:
checked) read 0.06 in log slower against the BK 8 builds (unchecked) than the model put them, where on the
other twenty shapes they read 0.03 faster. K = 1000 and 1008 give a BK 16 build the same 63 k-steps (the
last one partial at 1000, its missing elements loaded as zeros), so the ratio of its two times is what the
checked loop costs it; a BK 8 build runs unchecked at both (125 and 126 steps: the control).

Each configuration is timed as profile_simt_gemm.py times one (CUDA events around 10 back-to-back launches
through the launcher users' calls take, median of ``--reps``, the output checked against a float64
product), the two shapes alternated configuration by configuration::

    python benchmarks/profile_simt_checked.py --out times.csv
    python benchmarks/profile_simt_checked.py --dry-run
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy
sys.path.insert(0, str(ROOT / "benchmarks"))

from profile_transpose_tiles import planned_profile_args, timed, write_times  # noqa: E402

SHAPES: list[tuple[int, int, int]] = [(2048, 2048, 1000), (2048, 2048, 1008)]
BATCH = 10  # launches per timing


def configurations() -> list[dict[str, int]]:
    """Every launch configuration legal at both shapes, on the unpadded layout, SPLIT_K 1."""
    from autopad.kernels.cuda import matmul as G

    from autopad.kernels_registry import builtin_spec
    from autopad.search import enumerate_candidates

    spec = builtin_spec("matmul", "cuda")
    plain = {k: v for k, v in G.DEFAULTS.items() if k.startswith(("PAD_", "SW_"))}
    out = []
    for c in enumerate_candidates(spec, SHAPES[0], "float32"):
        if c["SPLIT_K"] == 1 and all(c[k] == v for k, v in plain.items()):
            if all(G.SPEC.legal(c, s, "float32") for s in SHAPES):
                out.append(dict(c))
    return sorted(out, key=key)


def key(c: dict[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(c.items()))


def main(argv: Sequence[str] | None = None) -> int:
    args = planned_profile_args(__doc__ or "", 30, argv)
    plan = configurations()
    if args.dry_run:
        for c in plan:
            print(key(c))
        print(f"{len(plan)} configurations x {len(SHAPES)} shapes")
        return 0

    import torch
    from autopad.kernels.cuda import matmul as G

    spec = G.SPEC
    data = {}
    for m, n, k in SHAPES:
        gen = torch.Generator(device="cuda").manual_seed(k)
        a = torch.randn(m, k, device="cuda", generator=gen)
        b = torch.randn(k, n, device="cuda", generator=gen)
        data[(m, n, k)] = (a, b, a.double() @ b.double(), torch.empty(m, n, device="cuda"))
    rows = []
    for c in plan:
        built = spec.build(c, "float32")
        for shape in SHAPES:
            a, b, ref, out = data[shape]
            name = "x".join(map(str, shape))
            if args.once:
                spec.run(built, (a, b), out)
                torch.cuda.synchronize()
                continue
            for _ in range(3):
                spec.run(built, (a, b), out)
            torch.cuda.synchronize()
            err = float(((out.double() - ref).abs().max() / ref.abs().max()).item())
            go = spec.launcher(built, shape, "float32")
            ms, spread = timed(go, ((a, b), out), args.reps, BATCH)
            rows.append({"shape": name, "key": key(c), "legal": 1, "correct": int(err < 1e-4), "ms": ms,
                         "spread_ms": spread})  # fmt: skip
            print(f"{name:16s} {ms} ok={err < 1e-4} {key(c)}", flush=True)
    if args.out and not args.once:
        write_times(args.out, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
