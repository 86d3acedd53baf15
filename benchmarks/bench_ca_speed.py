"""How fast ``autopad.analyze_batch`` costs cp.async.ca copies with ``global_addresses`` (op "cp.async"),
apart from bench_model_speed.py, which times the ops without a global side.

Random width-aligned shared addresses in 48 KiB, every lane active; the global side lane-ordered (lane ``l``
copies ``base + l * width``: a line a store phase), each instruction's lanes permuted over those lines, or
every lane from a random line. One warm-up batch a width first (under ``auto`` it loads numba and the
cached kernel of each width). Writes lines of text to stdout:

    python benchmarks/bench_ca_speed.py > benchmarks/results/cpu/cp_async_ca_speed_DATE.txt

``--against DIR`` compares this checkout's compiled kernel (_model_numba_ca.py's ``ca_rows``) with another
checkout's (DIR, e.g. a ``git worktree`` of the previous commit) in one process: each case's batch in the
parts and on the threads ``analyze_batch`` runs it in, the two kernels alternated (order swapped every
round) for ``--rounds`` rounds after one warm-up, the median and range of each. Separate processes run one
after another read the machine's drift as much as the kernels (cp_async_ca_speed_2026-12-06d.txt).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's autopad, before any installed copy
from autopad.model import analyze_batch  # noqa: E402


def _sources(rng: np.random.Generator, n: int, w: int) -> dict[str, np.ndarray]:
    base = rng.integers(0, 1 << 20, (n, 1)) << 7
    return {
        "line-ordered": np.arange(32) * w + base,
        "permuted lines": rng.permuted(np.tile(np.arange(32), (n, 1)), axis=1) * w + base,
        "random lines": rng.integers(0, 1 << 20, (n, 32)) * w,
    }


def _as_analyze_batch(fn, shared: np.ndarray, glob: np.ndarray, w: int) -> float:
    """Seconds for ``fn`` (a ``ca_rows``) over the batch in the parts, and on the threads, that
    ``analyze_batch`` runs it in (model_backend's ``_in_parts``)."""
    from autopad.model_backend import _in_parts

    n = shared.shape[0]
    wave, ideal = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    t = time.perf_counter()
    _in_parts(n, lambda i, lo, hi: fn(shared[lo:hi], glob[lo:hi], wave[lo:hi], ideal[lo:hi], 1 << 40, w))
    return time.perf_counter() - t


def _other_rows(other: Path, cache: str) -> Any:
    """``ca_rows`` of the checkout ``other``, its kernels compiled into the cache folder ``cache``. A module
    loaded by path has no importable name, so numba would write its cached kernels as ``<dynamic>`` ones
    into the source's own ``__pycache__`` beside autopad's, where the next process to load autopad's
    kernel would fail to import them (``other`` may be this very checkout)."""
    import numba

    path = other / "autopad" / "_model_numba_ca.py"
    spec = importlib.util.spec_from_file_location("_other_ca", path)
    if spec is None or not path.is_file():
        raise SystemExit(f"--against {other}: no autopad/_model_numba_ca.py there")
    mod = importlib.util.module_from_spec(spec)
    saved, numba.config.CACHE_DIR = numba.config.CACHE_DIR, cache  # read when the kernels are decorated
    try:
        spec.loader.exec_module(mod)
    finally:
        numba.config.CACHE_DIR = saved
    return mod.ca_rows


def against(other: Path, rounds: int, n: int = 1_000_000) -> None:
    """This checkout's ``ca_rows`` beside ``other``'s, alternated in one process (see the docstring)."""
    from autopad._model_numba_ca import ca_rows

    with tempfile.TemporaryDirectory() as cache:
        kernels = [("this", ca_rows), ("other", _other_rows(other, cache))]
        print(f"# ca_rows of this checkout vs {other}, {n} instructions a case in analyze_batch's parts,")
        when = time.strftime("%Y-%m-%d %H:%M")
        print(
            f"# {rounds} rounds alternated; nproc={os.cpu_count()} loadavg {os.getloadavg()[0]:.2f}, {when}"
        )
        rng = np.random.default_rng(0)
        for w in (4, 8, 16):
            shared = rng.integers(0, 48 * 1024 // w, (n, 32)) * w
            for name, glob in _sources(rng, n, w).items():
                print(f"width={w} global={name} " + _alternated(kernels, shared, glob, w, rounds))


def _alternated(kernels: list[tuple[str, Any]], shared: np.ndarray, glob: Any, w: int, rounds: int) -> str:
    """Each kernel's median and range in M/s over ``rounds`` alternated rounds (order swapped every round),
    after a round that compiles or loads each."""
    glob = np.ascontiguousarray(glob, dtype=np.int64)
    n = shared.shape[0]
    rates: dict[str, list[float]] = {label: [] for label, _ in kernels}
    for r in range(rounds + 1):
        for label, fn in kernels if r % 2 else kernels[::-1]:
            dt = _as_analyze_batch(fn, shared, glob, w)
            if r:
                rates[label].append(n / dt / 1e6)
    return " ".join(
        f"{k}: median {np.median(v):.2f} M/s range {min(v):.2f}-{max(v):.2f}" for k, v in rates.items()
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", type=Path, help="another checkout: its compiled kernel beside this one's")
    ap.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args()
    if args.against is not None:
        if args.rounds < 1:
            ap.error(f"--rounds {args.rounds}: at least 1")
        against(args.against, args.rounds)
        return
    rng = np.random.default_rng(0)
    backend = os.environ.get("AUTOPAD_MODEL_BACKEND", "auto")
    print("# autopad.analyze_batch(op='cp.async', global_addresses=...), random shared addresses in 48 KiB, "
          "every lane active;")  # fmt: skip
    print(f"# nproc={os.cpu_count()} python={sys.version.split()[0]} loadavg {os.getloadavg()[0]:.2f}, "
          f"{time.strftime('%Y-%m-%d')}, AUTOPAD_MODEL_BACKEND={backend}")  # fmt: skip
    warm = rng.integers(0, 1000, (30000, 32))
    for w in (4, 8, 16):  # each width's kernel compiled or loaded before any timing
        analyze_batch(warm * w, w, "cp.async", global_addresses=warm * w)
    n = 1_000_000
    for w in (4, 8, 16):
        shared = rng.integers(0, 48 * 1024 // w, (n, 32)) * w
        for name, glob in _sources(rng, n, w).items():
            t = time.perf_counter()
            analyze_batch(shared, w, "cp.async", global_addresses=glob)
            dt = time.perf_counter() - t
            print(f"width={w} instructions={n} global={name} seconds={dt:.3f} rate={n / dt / 1e6:.3f} M/s")


if __name__ == "__main__":
    main()
