"""The same sweep through autopad's local pool and through a local Ray cluster on all GPUs of one host.

Answers the Ray-sweep issue's "done" line on a machine with N GPUs: do the Ray sweep's picks match the local
pool's, what does Ray cost in wall time, and does every result land in the caller's cache under its GPU's key.

Steps (a step that fails is recorded with why, and the rest still run):

0. checks (seconds): the kernels package imports in a fresh process (what Ray workers do); Ray starts a
   local cluster with the GPUs the CUDA driver shows; one task per GPU, all held at once, reports what it
   sees: each must see exactly one GPU (``CUDA_VISIBLE_DEVICES``), with a name, all different.
1. pool: ``sweep.run_sweep`` over all GPUs, with fresh autopad and Triton caches (cold compiles).
2. ray: ``sweep_ray.run_sweep_ray`` on that cluster, with fresh caches again; afterwards the caller's
   cache must hold every item's result under its GPU's key, with the row's pick.

Correctness comes first inside every tune: each candidate is checked against the spec's reference on fresh
inputs into a poisoned output before it is timed (``bench.py``; L2 flushed, CUDA events, median), and a
candidate that fails is never picked; the ``failed`` columns count such candidates. One item has odd
dimensions (4097x8191) to take the edge paths.

    python3 benchmarks/ray_sweep_compare.py --out DIR                 # GPU host, all GPUs (~3 min on 2 H200s)
    python3 benchmarks/ray_sweep_compare.py --out DIR --model-only --fake-gpus 2   # CPU: the plumbing only
    python3 benchmarks/ray_sweep_compare.py --make-wheels .whl        # here: ray for a host without it

Writes DIR/ray_compare.csv (per item), DIR/sweep_pool.csv, DIR/sweep_ray.csv, DIR/ray_compare.json and
prints the table last.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy

from autopad.sweep import SweepItem, items  # noqa: E402

WORK_GPU = (
    items(["transpose"], [(4096, 4096), (8192, 8192)], ["float32", "float16"], "cuda")
    + items(["transpose"], [(4097, 8191)], ["float32"], "cuda")
    + items(["histogram"], [(1 << 26, 256)], ["int32"], "cuda", "uniform")
    + items(["matmul"], [(2048, 2048, 2048)], ["float32"], "cuda")
)
WORK_MODEL = items(["histogram"], [(4096, 256), (12289, 256)], ["int32"], "triton", "uniform") + items(
    ["histogram"], [(8192, 256)], ["int32"], "cuda", "skewed"
)
RAY_DEPS = ("jsonschema", "jsonschema-specifications", "referencing", "rpds-py")  # not on the GPU image


def label(r: dict[str, Any]) -> str:
    return " ".join(str(r.get(k, "")) for k in ("kernel", "backend", "shape", "dtype", "dist")).strip()


def _ms(v: Any) -> float | None:
    try:
        return float(v) if v not in ("", None) else None
    except (TypeError, ValueError):
        return None


def compare(pool: Sequence[dict[str, Any]], ray: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per item (matched by kernel, backend, shape, dtype, dist): the two picks, times and attempts."""
    by = {label(r): r for r in ray}
    out = []
    for a in pool:
        b = by.get(label(a), {})
        pa, pb = _ms(a.get("best_ms")), _ms(b.get("best_ms"))
        out.append(
            {
                "item": label(a),
                "pick_pool": a.get("best", ""),
                "pick_ray": b.get("best", ""),
                "same_pick": bool(a.get("best")) and a.get("best") == b.get("best"),
                "best_ms_pool": pa,
                "best_ms_ray": pb,
                "ray_over_pool": (pb / pa) if pa and pb else None,
                "mode_pool": a.get("mode", ""),
                "mode_ray": b.get("mode", "missing"),
                "attempts_pool": a.get("attempts", ""),
                "attempts_ray": b.get("attempts", ""),
                "failed_candidates_ray": b.get("failed", ""),
                "device_pool": a.get("device", ""),
                "device_ray": b.get("device", ""),
                "node_ray": b.get("node", ""),
                "error": "; ".join(e for e in (a.get("error"), b.get("error")) if e),
            }
        )
    return out


def verdict(per_item: Sequence[dict[str, Any]], wall: dict[str, float | None]) -> dict[str, Any]:
    """The headline: every item once and correct in both runs, same picks, wall times and their ratio."""
    ok = [p for p in per_item if p["mode_pool"] != "failed" and p["mode_ray"] not in ("failed", "missing")]
    tp, tr = wall.get("pool"), wall.get("ray")
    return {
        "items": len(per_item),
        "ran_in_both": len(ok),
        "every_item_once": all(p["attempts_pool"] == 1 and p["attempts_ray"] == 1 for p in per_item),
        "same_picks": sum(1 for p in per_item if p["same_pick"]),
        "wall_s_pool": round(tp, 1) if tp else None,
        "wall_s_ray": round(tr, 1) if tr else None,
        "ray_wall_over_pool": round(tr / tp, 3) if tp and tr else None,
    }


def check_views(views: Sequence[dict[str, Any]], n: int, named: bool = True) -> list[str]:
    """What the GPU tasks saw that is wrong: each must see one GPU (named by the driver), all ``n`` apart."""
    bad = []
    for v in views:
        vis = [x for x in str(v.get("cuda_visible_devices", "")).split(",") if x]
        if len(vis) != 1:
            bad.append(f"a task saw CUDA_VISIBLE_DEVICES={v.get('cuda_visible_devices')!r}, not one GPU")
        if named and not v.get("device", {}).get("name"):
            bad.append(f"a task on GPU {v.get('gpu_ids')} saw no device through the driver")
    seen = {(v.get("node"), *v.get("gpu_ids", ())) for v in views}
    if len(seen) != n:
        bad.append(f"{n} tasks held at once saw {len(seen)} distinct (node, GPU) pairs: {sorted(seen)}")
    return bad


def check_cached(rows: Sequence[dict[str, Any]], picks: dict[tuple, str]) -> list[str]:
    """Rows whose pick is not in the caller's cache (``picks``: ``cached_picks``) under the row's GPU."""
    bad = []
    for r in rows:
        if r.get("mode") == "failed":
            continue
        key = (r["kernel"], r["backend"], r["shape"], r["dtype"], r.get("dist") or None, r.get("gpu", ""))
        if key not in picks:
            bad.append(f"{label(r)}: no result in the caller's cache for GPU {r.get('gpu')!r}")
        elif picks[key] != r.get("best"):
            bad.append(f"{label(r)}: the cache holds {picks[key]}, the row says {r.get('best')}")
    return bad


def cached_picks(root: str | Path) -> dict[tuple, str]:
    """(kernel, backend, shape, dtype, dist, gpu) -> the stored pick as "K=V,...", from a cache folder."""
    from dataclasses import fields

    from autopad.cache import Cache, CacheKey

    cache, out = Cache(root), {}
    names = {f.name for f in fields(CacheKey)}
    for e in cache.entries():
        if not e["has_result"]:
            continue
        key = CacheKey.from_dict({k: v for k, v in e.items() if k in names})
        best = cache.load(key)["result"]["result"]["best"]["constants"]
        shape = "x".join(map(str, key.shape))
        out[(key.kernel, key.backend, shape, key.dtype, key.dist, key.gpu)] = ",".join(
            f"{k}={v}" for k, v in sorted(best.items())
        )
    return out


def table(per_item: Sequence[dict[str, Any]]) -> str:
    def f(v: Any) -> str:
        return f"{v:.4f}" if isinstance(v, float) else str(v if v is not None else "-")

    lines = [f"{'item':42} {'same':5} {'pool ms':>9} {'ray ms':>9} {'ratio':>7} {'tries':>5}  pick (pool)"]
    for p in per_item:
        lines.append(
            f"{p['item'][:42]:42} {('yes' if p['same_pick'] else 'NO'):5} {f(p['best_ms_pool']):>9} "
            f"{f(p['best_ms_ray']):>9} {f(p['ray_over_pool']):>7} "
            f"{p['attempts_pool']}/{p['attempts_ray']:<3} {p['pick_pool'] or p['mode_pool']}"
        )
    return "\n".join(lines)


def write_rows(rows: Sequence[dict[str, Any]], path: Path) -> None:
    if not rows:
        return
    names = list(rows[0])
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=names, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def _fresh_caches(tag: str) -> str:
    """New autopad and Triton cache folders (set before Ray starts, so its workers inherit them)."""
    root = tempfile.mkdtemp(prefix=f"autopad-raycmp-{tag}-")
    os.environ["AUTOPAD_CACHE_DIR"] = root
    os.environ["TRITON_CACHE_DIR"] = os.path.join(root, "triton")
    return root


def preflight() -> str | None:
    """Why Ray workers could not import autopad's kernels from this checkout, or None."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    code = "import autopad.kernels.cuda, autopad.kernels.triton, ray"
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=ROOT)
    if res.returncode == 0:
        return None
    last = (res.stderr.strip().splitlines() or ["?"])[-1]
    return (
        f"a fresh process cannot import autopad's kernels or ray ({last}): run it from a checkout or an "
        "install of autopad and carry ray's wheels (--make-wheels)"
    )


def slim_wheel(whl: Path) -> None:
    """Rewrite a ray wheel without ``ray/jars/`` (Java workers only) and without their lines in RECORD."""
    import zipfile

    slim = whl.with_suffix(".slim")
    with zipfile.ZipFile(whl) as src, zipfile.ZipFile(slim, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            if info.filename.startswith("ray/jars/"):
                continue
            data = src.read(info)
            if info.filename.endswith(".dist-info/RECORD"):
                keep = [ln for ln in data.decode().splitlines() if not ln.startswith("ray/jars/")]
                data = ("\n".join(keep) + "\n").encode()
            dst.writestr(info, data)
    os.replace(slim, whl)


def make_wheels(dest: str) -> None:
    """Download ray (this machine's version) and the dependencies the GPU image lacks as cp312 wheels into
    ``dest``, and drop ray's Java jar (32 MB, for Java workers only) so they travel under 64 MiB."""
    import ray

    plat = ["manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"]
    args = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "-q",
        "--no-deps",
        "--only-binary=:all:",
        "--python-version",
    ]
    args += ["3.12", "--implementation", "cp", "-d", dest] + [x for p in plat for x in ("--platform", p)]
    subprocess.run([*args, f"ray=={ray.__version__}", *RAY_DEPS], check=True)
    for whl in Path(dest).glob("ray-*.whl"):
        slim_wheel(whl)
    total = sum(p.stat().st_size for p in Path(dest).glob("*.whl"))
    print(f"wheels in {dest}: {total / 2**20:.1f} MiB in all")


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="benchmarks/results/h200x2")
    ap.add_argument("--model-only", action="store_true", help="AUTOPAD_NO_BENCH=1 and small items (CPU)")
    ap.add_argument("--fake-gpus", type=int, default=0, help="declare this many GPUs to Ray (CPU runs)")
    ap.add_argument("--address", help="a running Ray cluster instead of a local one")
    ap.add_argument("--make-wheels", metavar="DIR", help="only download ray's wheels for the GPU host")
    args = ap.parse_args(argv)
    if args.make_wheels:
        make_wheels(args.make_wheels)
        return {}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # one host: loopback addresses only
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    if args.model_only:
        os.environ["AUTOPAD_NO_BENCH"] = "1"
    from autopad.device import device_count

    work: list[SweepItem] = list(WORK_MODEL if args.model_only else WORK_GPU)
    n = args.fake_gpus or device_count() or 1
    doc: dict[str, Any] = {"gpus": n, "items": [w.label for w in work], "steps": {}, "problems": []}
    rows: dict[str, list[dict[str, Any]]] = {"pool": [], "ray": []}
    wall: dict[str, float | None] = {"pool": None, "ray": None}

    def step(name: str, fn: Any) -> bool:
        """Run one step; its failure is recorded with why (and its traceback printed), the rest still run."""
        t0 = time.perf_counter()
        try:
            fn()
            ok, err = True, None
        except Exception as exc:
            traceback.print_exc()
            ok, err = False, f"{type(exc).__name__}: {exc}"[:500]
        doc["steps"][name] = {
            "ok": ok,
            "s": round(time.perf_counter() - t0, 1),
            **({"error": err} if err else {}),
        }
        return ok

    def check() -> None:
        why = preflight()
        if why:
            doc["problems"].append(why)
            raise RuntimeError(why)

    step("preflight", check)
    import ray

    from autopad import sweep, sweep_ray

    def pool() -> None:
        _fresh_caches("pool")
        t0 = time.perf_counter()
        rows["pool"] = sweep.run_sweep(work, list(range(n)), progress=False)
        wall["pool"] = time.perf_counter() - t0

    def start_ray() -> None:
        kw: dict[str, Any] = {"log_to_driver": False}
        if ray.is_initialized():  # a caller (a test) already joined a cluster
            return
        if args.address:
            ray.init(address=args.address, **kw)
        else:
            ray.init(address="local", num_gpus=n, include_dashboard=False, **kw)

    def views() -> None:
        got = sweep_ray.gpu_views(hold_s=2.0)
        doc["gpu_views"] = got
        doc["problems"] += check_views(got, n, named=not args.model_only)

    def ray_sweep() -> None:
        root = _fresh_caches("ray")  # the caller's cache; the tasks get one of their own beside it
        t0 = time.perf_counter()
        env = {
            "AUTOPAD_CACHE_DIR": os.path.join(root, "node"),
            "TRITON_CACHE_DIR": os.environ["TRITON_CACHE_DIR"],
        }
        rows["ray"] = sweep_ray.run_sweep_ray(work, env=env, progress=False)
        wall["ray"] = time.perf_counter() - t0
        doc["problems"] += check_cached(rows["ray"], cached_picks(root))

    step("pool", pool)
    if step("ray_start", start_ray):
        step("gpu_views", views)
        step("ray", ray_sweep)
    per_item = compare(rows["pool"], rows["ray"])
    doc["verdict"] = verdict(per_item, wall)
    doc["per_item"] = per_item
    for name in ("pool", "ray"):
        if rows[name]:
            sweep.write_csv(rows[name], out / f"sweep_{name}.csv")
    write_rows(per_item, out / "ray_compare.csv")
    (out / "ray_compare.json").write_text(json.dumps(doc, indent=1, default=str))
    print(
        json.dumps({"verdict": doc["verdict"], "steps": doc["steps"], "problems": doc["problems"]}, indent=1)
    )
    print(table(per_item))
    return doc


if __name__ == "__main__":
    main()
