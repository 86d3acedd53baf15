"""Sweep ptxas register use of the CUDA transpose's vector path against ``__launch_bounds__`` min blocks.

What: ``kernels/cuda/transpose.py``'s ``min_blocks`` picks MIN_BLOCKS (``__launch_bounds__(THREADS,
MIN_BLOCKS)``) for the vector path (SCALAR_EDGE 0) from the occupancy that threads and shared memory allow
(``fit``), lowered where an estimate of the registers a build needs would not fit:
``words * (1 + misaligned) + lpass * misaligned + _REG_OVERHEAD[misaligned] (+ VEC for READOUT 1)``,
rounded up to 8. This script enumerates every distinct build geometry of the tuned space with the spec's own
functions (``autopad.search.enumerate_candidates`` over the shapes 4097 x 8191 and 4096 x 8191 for the
misaligned build, 4096 x 4096 for the aligned one; per element size; geometry = TILE_M, TILE_N, THREADS, VEC,
READOUT; the layout that allows the largest ``fit`` stands for the geometry) and compiles each with
``nvcc -arch=sm_90 --cubin -Xptxas -v`` (the defines ``spec.defines`` gives, MIN_BLOCKS overridden) at
MIN_BLOCKS 1 (no cap below 255 / 65536 / THREADS: the compiler's natural need) and at every MIN_BLOCKS up to
``fit`` whose register cap is below that need, recording registers, stack frame and spill bytes. A sample of
geometries is compiled again with other layouts (padding / swizzle) to check that the layout does not move
registers much.

Why: ``_REG_OVERHEAD[1] = 40`` dates from a heavier misaligned build; on the H200 the fp16 128 x 64 /
256-thread tile got MIN_BLOCKS 2, took 69 registers (3 blocks per SM) and ran at 0.715 of copy bandwidth
against 0.771 with 64 registers (4 blocks). The CSV says, per geometry, the largest spill-free MIN_BLOCKS;
``--analyze`` proposes the smallest overhead for which the formula never asks for a MIN_BLOCKS that spills.

Shortcuts (marked in the CSV's ``how`` column): a MIN_BLOCKS whose register cap is at least the natural
need is not compiled (``inferred``: the cap does not bind, so the build is the MIN_BLOCKS 1 one); MIN_BLOCKS
whose caps equal an already compiled one's are copied (``same_cap``); once a cap spills, the lower caps are
not compiled (``skipped``; spills only grow as the cap falls). ``--full`` compiles every MIN_BLOCKS.
1- and 2-byte element types share builds (the defines depend on the element size only), so float16 stands
for bfloat16 and int8 for uint8 / float8_e4m3fn.

    python benchmarks/fit_register_overhead.py            # full sweep -> results/cpu/register_overhead.csv
    python benchmarks/fit_register_overhead.py --quick    # a few geometries per element size
    python benchmarks/fit_register_overhead.py --analyze  # the proposal from an existing CSV
"""

from __future__ import annotations

import argparse
import csv
import random
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy
from autopad.kernels.cuda import transpose as T  # noqa: E402

from autopad import cuda_runtime as rt  # noqa: E402
from autopad.arch import get_arch  # noqa: E402
from autopad.kernels_registry import builtin_spec  # noqa: E402
from autopad.search import enumerate_candidates  # noqa: E402

ARCH = get_arch("sm_90")
OUT = Path(__file__).parent / "results" / "cpu" / "register_overhead.csv"
# one dtype per element size: the others of that size give the same defines (checked in ``geometries``)
DTYPES = {"float64": (), "float32": (), "float16": ("bfloat16",), "int8": ("uint8", "float8_e4m3fn")}
SHAPES = {"misaligned": ((4097, 8191), (4096, 8191)), "aligned": ((4096, 4096),)}
GEOM = ("TILE_M", "TILE_N", "THREADS", "VEC", "READOUT")
LAYOUT = ("PAD", "SW_VEC", "SW_PER_PHASE", "SW_MAX_PHASE")
FIELDS = (
    "build dtype elem_bytes TILE_M TILE_N THREADS VEC READOUT PAD SW_VEC SW_PER_PHASE SW_MAX_PHASE role "
    "shapes n_layouts fit fit_min formula_mb min_blocks cap how regs stack spill_st spill_ld seconds"
).split()
_PTXAS_FN = re.compile(
    r"Function properties for (\S+)\s+(?:ptxas\s+\.\s+)?(\d+) bytes stack frame, (\d+) bytes spill stores, "
    r"(\d+) bytes spill loads"
)
COMPILER = {"name": "nvcc"}  # or "nvrtc" (--compiler): what autopad.cuda_runtime uses where it is installed


@dataclass
class Geometry:
    """One distinct build: a geometry, the candidates (layouts) that share it, and its representative."""

    build: str
    dtype: str
    geom: tuple[int, ...]
    cands: list[dict[str, int]] = field(default_factory=list)
    shapes: set[str] = field(default_factory=set)

    @property
    def misaligned(self) -> bool:
        return self.build == "misaligned"

    def fit(self, c: dict[str, int]) -> int:
        """``min_blocks``'s occupancy bound (threads, shared memory with the halo, blocks per SM)."""
        return min(
            ARCH.max_threads_per_sm // c["THREADS"],
            ARCH.smem_per_sm // (T.SPEC.smem_bytes(c, self.dtype, self.misaligned) + 1024),
            ARCH.max_blocks_per_sm,
        )

    @property
    def rep(self) -> dict[str, int]:
        """The layout that allows the most blocks (ties: the first enumerated)."""
        return max(self.cands, key=self.fit)


def geometries(builds: tuple[str, ...]) -> list[Geometry]:
    """Every distinct vector-path build of the tuned space, per element size (spec's own enumeration)."""
    spec = builtin_spec("transpose", "cuda")
    out: dict[tuple, Geometry] = {}
    for build in builds:
        mis = build == "misaligned"
        for dtype, same in DTYPES.items():
            for shape in SHAPES[build]:
                for c in enumerate_candidates(spec, shape, dtype):
                    if c["SCALAR_EDGE"] or (mis and c["VEC"] == 1):  # no misaligned build at VEC 1
                        continue
                    g = tuple(c[k] for k in GEOM)
                    geo = out.setdefault((build, dtype, g), Geometry(build, dtype, g))
                    if c not in geo.cands:
                        geo.cands.append(c)
                    geo.shapes.add(f"{shape[0]}x{shape[1]}")
            for alias in same:  # the aliases compile to the same source
                for geo in [v for k, v in out.items() if k[:2] == (build, dtype)][:3]:
                    assert T.SPEC.defines(geo.rep, alias, mis) == T.SPEC.defines(geo.rep, dtype, mis)
    return list(out.values())


def cap(threads: int, blocks: int) -> int:
    """Registers a thread may use for ``blocks`` blocks of ``threads`` (8-register granularity, 255 max)."""
    return min(255, 65536 // (threads * blocks) // 8 * 8)


def ptxas(src: Path, defines: dict[str, int]) -> dict[str, int]:
    """The -Xptxas -v report for one build (nvcc, or NVRTC with --ptxas-options=-v): registers, the largest
    stack frame, spill bytes (all functions: the kernel and its non-inlined helper)."""
    flags = ["-arch=sm_90", "-std=c++17"] + [f"-D{k}={v}" for k, v in defines.items()]
    if COMPILER["name"] == "nvrtc":
        from cuda.bindings import nvrtc

        _, prog = nvrtc.nvrtcCreateProgram(src.read_bytes(), b"transpose.cu", 0, [], [])
        opts = [o.encode() for o in [*flags, "--ptxas-options=-v"]]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        _, n = nvrtc.nvrtcGetProgramLogSize(prog)
        buf = b" " * n
        nvrtc.nvrtcGetProgramLog(prog, buf)
        nvrtc.nvrtcDestroyProgram(prog)
        log, rc = buf.decode(errors="replace"), int(err)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            cmd = ["nvcc", *flags, "--cubin", "-Xptxas", "-v", "-o", f"{tmp}/t.cubin", str(src)]
            r = subprocess.run(cmd, capture_output=True, text=True)
        log, rc = r.stderr, r.returncode
    if rc:
        raise RuntimeError(f"{COMPILER['name']} failed for {defines}: {log[-1500:]}")
    fns = _PTXAS_FN.findall(log)
    return {
        "regs": int(re.search(r"Used (\d+) registers", log).group(1)),
        "stack": max(int(f[1]) for f in fns),
        "spill_st": sum(int(f[2]) for f in fns),
        "spill_ld": sum(int(f[3]) for f in fns),
    }


def _row(geo: Geometry, c: dict[str, int], role: str, fit: int, fit_min: int) -> dict:
    return {
        "build": geo.build,
        "dtype": geo.dtype,
        "elem_bytes": T.SPEC._e(geo.dtype),
        **{k: c[k] for k in GEOM + LAYOUT},
        "role": role,
        "shapes": "+".join(sorted(geo.shapes)),
        "n_layouts": len(geo.cands),
        "fit": fit,
        "fit_min": fit_min,
        "formula_mb": T.SPEC.min_blocks(c, geo.dtype, geo.misaligned),
    }


def sweep_one(src: Path, geo: Geometry, full: bool, alt_layouts: int, rng: random.Random) -> list[dict]:
    """Rows for one geometry: its representative at MIN_BLOCKS 1 .. fit, and ``alt_layouts`` other layouts
    at MIN_BLOCKS 1 and at the representative's largest spill-free one."""
    c = geo.rep
    fit = geo.fit(c)
    base = _row(geo, c, "rep", fit, min(geo.fit(x) for x in geo.cands))
    rows: list[dict] = []
    by_cap: dict[int, dict] = {}
    natural: int | None = None
    spilled = False
    for b in range(1, fit + 1):
        k = cap(c["THREADS"], b)
        row = dict(base, min_blocks=b, cap=k)
        if k in by_cap:
            row.update(by_cap[k], how="same_cap")
        elif not full and natural is not None and k >= natural:
            row.update(by_cap[cap(c["THREADS"], 1)], how="inferred")
        elif not full and spilled:
            row.update(how="skipped", regs="", stack="", spill_st="", spill_ld="", seconds="")
        else:
            t = time.perf_counter()
            d = T.SPEC.defines(c, geo.dtype, geo.misaligned)
            d["MIN_BLOCKS"] = b
            res = ptxas(src, d)
            by_cap[k] = dict(res, seconds=round(time.perf_counter() - t, 2))
            row.update(by_cap[k], how="compiled")
            natural = res["regs"] if b == 1 else natural
            spilled = spilled or bool(res["spill_st"] or res["stack"])
        rows.append(row)
    ok = [r["min_blocks"] for r in rows if r["how"] != "skipped" and not (r["spill_st"] or r["stack"])]
    best = max(ok, default=1)
    others = [x for x in geo.cands if x is not c]
    for alt in rng.sample(others, min(alt_layouts, len(others))):
        for b in sorted({1, min(best, geo.fit(alt))}):
            d = T.SPEC.defines(alt, geo.dtype, geo.misaligned)
            d["MIN_BLOCKS"] = b
            t = time.perf_counter()
            res = ptxas(src, d)
            row = _row(geo, alt, "alt_layout", geo.fit(alt), base["fit_min"])
            row.update(res, min_blocks=b, cap=cap(c["THREADS"], b), how="compiled")
            rows.append(dict(row, seconds=round(time.perf_counter() - t, 2)))
    return rows


def _use(compiler: str) -> None:
    COMPILER["name"] = compiler


def sweep(args: argparse.Namespace) -> None:
    builds = ("misaligned", "aligned") if args.build == "both" else (args.build,)
    geos = geometries(builds)
    rng = random.Random(args.seed)
    if args.quick:
        pick: list[Geometry] = []
        for key in sorted({(g.build, g.dtype) for g in geos}):
            pool = [g for g in geos if (g.build, g.dtype) == key]
            pick += rng.sample(pool, min(args.quick, len(pool)))
        geos = pick
    print(f"{len(geos)} geometries", file=sys.stderr)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "transpose.cu"  # includes inlined once (what the runtime compiles)
        src.write_text(rt.expand_includes(T.source()))
        alt = [args.alt_layouts if rng.random() < args.alt_fraction else 0 for _ in geos]
        seeds = [rng.randrange(1 << 30) for _ in geos]
        t0 = time.perf_counter()
        with (
            ProcessPoolExecutor(args.jobs, initializer=_use, initargs=(args.compiler,)) as pool,
            out.open("w", newline="") as f,
        ):
            w = csv.DictWriter(f, FIELDS)
            w.writeheader()
            jobs = [
                pool.submit(sweep_one, src, g, args.full, a, random.Random(s))
                for g, a, s in zip(geos, alt, seeds)
            ]
            for i, job in enumerate(jobs):
                w.writerows(job.result())
                f.flush()
                if i % 20 == 19:
                    print(f"{i + 1}/{len(geos)} {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    analyze(out)


# ---- the proposal ---------------------------------------------------------------------------------------


@contextmanager
def overhead(misaligned: bool, value: int) -> Iterator[None]:
    """``T._REG_OVERHEAD[misaligned]`` set to ``value`` within the block (the spec's own formula runs)."""
    old = T._REG_OVERHEAD[int(misaligned)]
    T._REG_OVERHEAD[int(misaligned)] = value
    try:
        yield
    finally:
        T._REG_OVERHEAD[int(misaligned)] = old


# the proposed misaligned estimate: the loaded words once (the next lane's vector is a shuffle result, not
# held across passes) plus PER_PASS registers a pass (its row pointer, segment end, shift, predicates) plus
# OVERHEAD; the aligned build's estimate unchanged (words + 16)
PER_PASS, OVERHEAD = 5, 4


def proposed_min_blocks(c: dict[str, int], dtype: str, misaligned: bool) -> int:
    """``min_blocks`` with the proposed estimate for the misaligned build (the spec's own for the aligned)."""
    if not misaligned:
        return T.SPEC.min_blocks(c, dtype, False)
    e = T.SPEC._e(dtype)
    fit = min(
        ARCH.max_threads_per_sm // c["THREADS"],
        ARCH.smem_per_sm // (T.SPEC.smem_bytes(c, dtype, True) + 1024),
        ARCH.max_blocks_per_sm,
    )
    _, ly, lpass = T._phases(c)[:3]
    lpass += T._hpass(c["VEC"], ly, c.get("READOUT", 0), e) if T._halo(c, True, e) else 0
    words = lpass * max(1, c["VEC"] * e // 4)
    need = words + PER_PASS * lpass + OVERHEAD + (c["VEC"] if c.get("READOUT", 0) == 1 else 0)
    need = min(255, -(-need // 8) * 8)
    return max(1, min(fit, 65536 // (c["THREADS"] * need)))


def _constants(r: dict) -> dict[str, int]:
    return dict(T.DEFAULTS, SCALAR_EDGE=0, **{k: int(r[k]) for k in GEOM + LAYOUT})


def analyze(path: Path) -> None:
    """Per build: the smallest overhead whose MIN_BLOCKS never exceeds a geometry's largest spill-free one,
    and the geometries whose MIN_BLOCKS it changes (registers at the old and the new MIN_BLOCKS)."""
    rows = [r for r in csv.DictReader(Path(path).open()) if r["role"] == "rep"]
    by: dict[tuple, list[dict]] = {}
    for r in rows:
        by.setdefault((r["build"], r["dtype"], *(r[k] for k in GEOM)), []).append(r)
    for build in ("misaligned", "aligned"):
        mis = build == "misaligned"
        geos = {k: v for k, v in by.items() if k[0] == build}
        if not geos:
            continue
        table = {}  # key -> (constants, dtype, best spill-free, {b: row})
        for k, rs in geos.items():
            at = {int(r["min_blocks"]): r for r in rs}
            ok = [
                b
                for b, r in at.items()
                if r["how"] != "skipped" and r["spill_st"] == "0" and r["stack"] == "0"
            ]
            table[k] = (_constants(rs[0]), k[1], max(ok, default=0), at)
        now = T._REG_OVERHEAD[int(mis)]
        bad_now = []
        for k, (c, dt, best, _at) in table.items():
            if T.SPEC.min_blocks(c, dt, mis) > best:
                bad_now.append(k)

        def mbs(v: int, mis: bool = mis, table: dict = table) -> dict:
            with overhead(mis, v):
                return {k: T.SPEC.min_blocks(c, dt, mis) for k, (c, dt, _b, _a) in table.items()}

        safe = [v for v in range(0, 129) if all(mb <= table[k][2] for k, mb in mbs(v).items())]
        prop = min(safe) if safe else None
        print(f"\n== {build} build: {len(table)} geometries, overhead now {now}")
        print(f"spilling at today's MIN_BLOCKS: {len(bad_now)}")
        for k in bad_now:
            c, dt, best, at = table[k]
            mb = T.SPEC.min_blocks(c, dt, mis)
            print(f"  {_name(k)}: MIN_BLOCKS {mb} spills ({_regs(at, mb)}); largest spill-free {best}")
        if prop is None:
            print("no overhead keeps every geometry spill-free")
            continue
        old, new = mbs(now), mbs(prop)
        print(f"smallest spill-free overhead: {prop} (safe range {prop}..{max(safe)})")
        short = [k for k in table if new[k] < table[k][2]]
        print(
            f"geometries below their largest spill-free MIN_BLOCKS with {prop}: {len(short)} (was "
            f"{sum(old[k] < table[k][2] for k in table)} with {now})"
        )
        for k in short:
            print(
                f"  {_name(k)}: formula {new[k]} ({_regs(table[k][3], new[k])}), spill-free up to "
                f"{table[k][2]} ({_regs(table[k][3], table[k][2])})"
            )
        if mis:
            new2 = {k: proposed_min_blocks(c, dt, mis) for k, (c, dt, _b, _a) in table.items()}
            spill = [k for k in table if new2[k] > table[k][2]]
            print(
                f"\nproposed: words + {PER_PASS} * lpass + {OVERHEAD}: spills {len(spill)}, at the largest "
                f"spill-free MIN_BLOCKS {sum(new2[k] == table[k][2] for k in table)} of {len(table)}, "
                f"changes {sum(new2[k] != old[k] for k in table)} (up {sum(new2[k] > old[k] for k in table)})"
            )
            _print_changes(table, old, new2)
        print(f"\nconstant only, MIN_BLOCKS changes {now} -> {prop}:")
        _print_changes(table, old, new)


def _print_changes(table: dict, old: dict, new: dict) -> None:
    """One line per geometry whose MIN_BLOCKS changes: old -> new, the registers at each, the natural need."""
    for k in sorted(table, key=lambda k: (k[1], k[2:])):
        if old[k] != new[k]:
            at = table[k][3]
            print(
                f"  {_name(k)}: {old[k]} -> {new[k]}  regs {_regs(at, old[k])} -> {_regs(at, new[k])}"
                f"  (natural {at[1]['regs']}, spill-free up to {table[k][2]})"
            )


def _name(k: tuple) -> str:
    build, dtype, tm, tn, t, vec, ro = k
    return f"{dtype} {tm}x{tn} T{t} VEC{vec} RO{ro}"


def _regs(at: dict[int, dict], b: int) -> str:
    r = at.get(b)
    if r is None or r["how"] == "skipped":
        return "not compiled"
    spill = f", spill {r['spill_st']}/{r['spill_ld']} B, stack {r['stack']}" if r["spill_st"] != "0" else ""
    return f"{r['regs']} regs{spill}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--quick", type=int, nargs="?", const=3, default=0, help="N geometries per build and dtype"
    )
    ap.add_argument("--full", action="store_true", help="compile every MIN_BLOCKS (no inferred / skipped)")
    ap.add_argument("--build", choices=("both", "misaligned", "aligned"), default="both")
    ap.add_argument(
        "--alt-layouts", type=int, default=2, help="other layouts compiled for sampled geometries"
    )
    ap.add_argument("--alt-fraction", type=float, default=0.1, help="share of geometries given other layouts")
    ap.add_argument("--jobs", type=int, default=2, help="parallel nvcc processes")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--compiler", choices=("nvcc", "nvrtc"), default="nvcc", help="nvrtc: in-process, faster")
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--analyze", action="store_true", help="only print the proposal from --out")
    args = ap.parse_args()
    if args.analyze:
        analyze(Path(args.out))
    else:
        sweep(args)


if __name__ == "__main__":
    main()
