"""GPU check of the benchmark worker's fault isolation, in at most ~60 s on one H200.

What it runs (every step records its failure and the script goes on; nothing here is timed for speed):

1. Through the worker (``python -m autopad.worker``, ``bench.Worker``), ``tests/broken_kernel.py`` with its
   six candidates in one job, harmless ones first: MODE 0 copies (must be correct and timed), 4 writes one
   wrong value (``wrong result``), 5 does not compile (``compile``), 1 reads through a misaligned 8-byte
   pointer (``fault ... misaligned``: the context is lost, the worker replaced), 2 writes 1 GiB out of
   bounds (``fault``), 3 spins for minutes (``timeout`` after ``--hang-timeout-s``, the worker killed).
2. A worker that dies: a spec class defined in this script (so it reaches the worker by value, as a class
   in a user's unguarded script does) whose run writes the time and calls ``os._exit(3)`` mid-check; the
   parent must record ``worker crashed ... exit code 3`` and the delay from that exit to the record is
   printed (``noticed_ms``: the pipe's end of file, expected well under a second); a fresh worker then
   measures MODE 0 correctly.
3. This process's own CUDA context still works after all that (``torch.ones(4).mul(2).sum() == 8``).
4. The two memory faults, MODE 1 and MODE 2, each launched once in a child under
   ``compute-sanitizer --tool memcheck`` (both children at once, started first, the caching allocator off
   so that memcheck sees every allocation); what memcheck reported is printed (its ``=========`` lines) and
   judged: a misaligned read, an out-of-bounds write. On a runtime where compute-sanitizer refuses the
   device (gVisor: "Device not supported"), that is what the row says.

Output: ``OUT/gpu_check_faults.csv`` (case, expected, got, ok, seconds, detail) and a table printed last.

    python benchmarks/gpu_check_faults.py --out $OUT [--budget-s 58] [--hang-timeout-s 3]
"""

from __future__ import annotations

import argparse
import csv
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
sys.path.insert(0, str(TESTS))  # broken_kernel, the tests' faulty spec
sys.path.insert(0, str(ROOT))  # this checkout's autopad and kernels, before any installed copy

import broken_kernel  # noqa: E402 (after the path set-up)

N = 1 << 20  # elements of the broken copy in the worker cases
N_SANITIZER = 4096  # a small launch under memcheck
# mode -> (what the error must start with, a word it must contain, the case's name)
EXPECT = {
    0: ("", "", "correct copy"),
    4: ("wrong result", "", "wrong value"),
    5: ("compile", "", "does not compile"),
    1: ("fault", "misaligned", "misaligned read"),
    2: ("fault", "", "out-of-bounds write"),
    3: ("timeout", "", "hang"),
}
SANITIZER_EXPECT = {1: ("misaligned", "read"), 2: ("out of bounds", "write")}


class DyingCopy:
    """broken_kernel's copy, plus MODE 6, whose run kills the worker process (after noting the time)."""

    NAME = "dying_copy"
    BACKEND = "cuda"
    DTYPES = ("float32",)
    SPACE = {"MODE": (0, 6)}
    DEFAULTS = {"MODE": 0}
    layout = staticmethod(broken_kernel.layout)
    smem_pattern = staticmethod(broken_kernel.smem_pattern)
    launch_info = staticmethod(broken_kernel.launch_info)
    traffic = staticmethod(broken_kernel.traffic)
    make_inputs = staticmethod(broken_kernel.make_inputs)
    alloc_output = staticmethod(broken_kernel.alloc_output)
    reference = staticmethod(broken_kernel.reference)
    check = staticmethod(broken_kernel.check)

    @staticmethod
    def legal(c: dict[str, int], shape: tuple[int, ...], dtype: str) -> Any:
        from autopad.layouts import Legality

        return Legality(c["MODE"] in (0, 6), "MODE is 0 (copy) or 6 (die)")

    @staticmethod
    def build(c: dict[str, int], dtype: str) -> Any:
        return c["MODE"], broken_kernel.build({"MODE": 0}, dtype)

    @staticmethod
    def run(kernel: Any, inputs: Any, out: Any) -> None:
        mode, k = kernel
        if mode == 6:
            Path(os.environ["AUTOPAD_FAULTS_DEATH_FILE"]).write_text(repr(time.time()))
            os._exit(3)
        broken_kernel.run(k, inputs, out)


def _row(case: str, expected: str, got: str, ok: bool, seconds: float, detail: str = "") -> dict[str, Any]:
    return {"case": case, "expected": expected, "got": got, "ok": ok, "seconds": round(seconds, 2),
            "detail": detail}  # fmt: skip


def _key(mode: int) -> str:
    return f"MODE={mode}"


def worker_cases(hang_timeout_s: float, compile_timeout_s: float) -> list[dict[str, Any]]:
    from autopad.bench import BenchJob, Worker, spec_ref
    from autopad.spec import KernelSpec

    order = (0, 4, 5, 1, 2, 3)
    job = BenchJob(
        spec_ref(KernelSpec(broken_kernel)), tuple((_key(m), {"MODE": m}) for m in order), (N,), "float32",
        reps=5, warmup=1,
    )  # fmt: skip
    rows, t0 = [], time.perf_counter()
    seen = set()
    for m in Worker(job, timeout_s=hang_timeout_s, compile_timeout_s=compile_timeout_s).results():
        mode = int(m.key.split("=")[1])
        seen.add(mode)
        start, word, name = EXPECT[mode]
        if mode == 0:
            ok, want = m.correct and m.ms is not None, "correct, timed"
            got = f"correct, {m.ms:.4f} ms" if ok else f"{m.error}"
        else:
            err = m.error or ""
            ok = (not m.correct) and err.startswith(start) and word in err.lower()
            want, got = f"{start}..." + (f" ({word})" if word else ""), err
        rows.append(_row(f"worker: MODE {mode} {name}", want, got[:300], ok, time.perf_counter() - t0))
    for mode in order:
        if mode not in seen:
            rows.append(
                _row(f"worker: MODE {mode}", "an answer", "no answer", False, time.perf_counter() - t0)
            )
    return rows


def dying_worker_case(compile_timeout_s: float) -> list[dict[str, Any]]:
    from autopad.bench import BenchJob, Worker, spec_ref
    from autopad.spec import KernelSpec

    death = Path(tempfile.mkdtemp(prefix="autopad-faults-")) / "died"
    os.environ["AUTOPAD_FAULTS_DEATH_FILE"] = str(death)  # the worker inherits the environment
    job = BenchJob(spec_ref(KernelSpec(DyingCopy)), ((_key(6), {"MODE": 6}), (_key(0), {"MODE": 0})), (N,),
                   "float32", reps=5, warmup=1)  # fmt: skip
    rows, t0 = [], time.perf_counter()
    for m in Worker(job, timeout_s=30, compile_timeout_s=compile_timeout_s).results():
        now = time.time()
        if m.key == _key(6):
            noticed = (now - float(death.read_text())) * 1e3 if death.exists() else float("nan")
            err = m.error or ""
            ok = err.startswith("worker crashed") and "exit code 3" in err and noticed < 1000
            want = "worker crashed ... exit code 3, noticed < 1 s"
            took, note = time.perf_counter() - t0, f"noticed_ms={noticed:.0f}"
            rows.append(_row("worker dies (os._exit in run)", want, err[:300], ok, took, note))
        else:
            got = m.error or f"correct, {m.ms} ms"
            rows.append(
                _row("fresh worker after", "MODE 0 correct", got, bool(m.correct), time.perf_counter() - t0)
            )
    return rows


def own_context_case() -> list[dict[str, Any]]:
    import torch

    t0 = time.perf_counter()
    x = torch.ones(4, device="cuda")
    v = float((x * 2).sum())
    return [_row("this process's CUDA context", "8.0", str(v), v == 8.0, time.perf_counter() - t0)]


# ---- compute-sanitizer ----------------------------------------------------------------------------------


def find_sanitizer() -> str | None:
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    places = []
    nvcc = shutil.which("nvcc")
    if nvcc:
        places.append(str(Path(os.path.realpath(nvcc)).parent / "compute-sanitizer"))
    places += sorted(glob.glob("/usr/local/cuda*/bin/compute-sanitizer"), reverse=True)
    places += sorted(glob.glob("/usr/local/cuda*/compute-sanitizer/compute-sanitizer"), reverse=True)
    places += sorted(glob.glob("/opt/nvidia/*/compute-sanitizer*/compute-sanitizer"), reverse=True)
    return next((p for p in places if os.access(p, os.X_OK)), None)


def sanitizer_child(mode: int) -> int:
    """Runs inside compute-sanitizer: one launch of broken_kernel MODE ``mode`` on a small array."""
    import torch

    k = broken_kernel.build({"MODE": mode}, "float32")
    (x,) = broken_kernel.make_inputs((N_SANITIZER,), "float32", torch.device("cuda"), 0)
    out = broken_kernel.alloc_output((x,), {"MODE": mode})
    try:
        broken_kernel.run(k, (x,), out)
        torch.cuda.synchronize()
        print(f"child: MODE {mode} ran without a CUDA error", flush=True)
    except Exception as exc:  # the fault itself: what memcheck explains
        print(f"child: MODE {mode} raised {type(exc).__name__}: {str(exc)[:200]}", flush=True)
    return 0


def start_sanitizer(tool: str, mode: int) -> subprocess.Popen:
    env = {**os.environ, "PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}
    # API errors off: torch's driver-entry lookups (cuGetProcAddress with unknown names) otherwise fill the
    # print limit before the kernel's own fault is reported (seen on the H200, 2026-12-01)
    cmd = [tool, "--tool", "memcheck", "--report-api-errors", "no", "--print-limit", "8",
           "--show-backtrace", "no", sys.executable, str(Path(__file__).resolve()),
           "--sanitizer-child", str(mode)]  # fmt: skip
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def sanitizer_rows(procs: dict[int, Any], t0: float, deadline: float) -> list[dict[str, Any]]:
    rows = []
    for mode, proc in procs.items():
        what, access = SANITIZER_EXPECT[mode]
        case = f"memcheck: MODE {mode} {EXPECT[mode][2]}"
        want = f"an invalid {access} ({what})"
        if isinstance(proc, str):
            rows.append(_row(case, want, proc, False, 0.0))
            continue
        try:
            out, _ = proc.communicate(timeout=max(1.0, deadline - time.perf_counter()))
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
            out = (out or "") + "\n[killed: out of time]"
        lines = [
            ln.strip() for ln in out.splitlines() if ln.startswith("=========") or ln.startswith("child:")
        ]
        print(f"\n--- compute-sanitizer memcheck, MODE {mode} (exit {proc.returncode}) ---")
        print("\n".join(lines[:24]) or out[-2000:])
        text = "\n".join(lines).lower()
        ok = f"invalid __global__ {access}" in text and what in text
        if not ok and "device not supported" in out.lower():
            got = "compute-sanitizer: device not supported on this runtime"
        else:
            got = " | ".join(ln for ln in lines if "invalid" in ln.lower() or "address" in ln.lower())[:300]
            got = got or " | ".join(lines[-3:])[:300]
        summary = next((ln for ln in lines if "error summary" in ln.lower()), "")
        rows.append(_row(case, want, got, ok, time.perf_counter() - t0, summary))
    return rows


# ---- main -----------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("."))
    ap.add_argument("--budget-s", type=float, default=58.0)
    ap.add_argument("--hang-timeout-s", type=float, default=3.0)
    ap.add_argument("--sanitizer-child", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.sanitizer_child is not None:
        return sanitizer_child(args.sanitizer_child)
    t0 = time.perf_counter()
    deadline = t0 + args.budget_s
    rows: list[dict[str, Any]] = []

    tool = find_sanitizer()
    procs: dict[int, Any] = {}
    for mode in SANITIZER_EXPECT:  # started first: they run beside the worker cases
        try:
            procs[mode] = start_sanitizer(tool, mode) if tool else "compute-sanitizer not found"
        except Exception as exc:
            procs[mode] = f"could not start compute-sanitizer: {type(exc).__name__}: {exc}"
    print(f"compute-sanitizer: {tool or 'not found'}", flush=True)

    steps = [
        ("worker cases", lambda: worker_cases(args.hang_timeout_s, max(5.0, deadline - time.perf_counter()))),
        ("dying worker", lambda: dying_worker_case(max(5.0, deadline - time.perf_counter()))),
        ("own context", own_context_case),
    ]
    for name, step in steps:
        if time.perf_counter() > deadline - 3:
            rows.append(_row(name, "run", "skipped: out of time", False, 0.0))
            continue
        try:
            rows += step()
        except Exception as exc:
            rows.append(_row(name, "run", f"{type(exc).__name__}: {exc}"[:300], False, 0.0,
                             traceback.format_exc(limit=4)[-600:]))  # fmt: skip
        print(f"[{time.perf_counter() - t0:5.1f} s] {name} done", flush=True)
    rows += sanitizer_rows(procs, t0, deadline + 2)

    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "gpu_check_faults.csv"
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["case", "expected", "got", "ok", "seconds", "detail"])
        w.writeheader()
        w.writerows(rows)
    print(f"\n{'case':42} {'ok':5} {'s':>6}  got")
    for r in rows:
        note = f"  [{r['detail']}]" if r["detail"] and not r["detail"].startswith("Traceback") else ""
        got = " ".join(str(r["got"]).split())[:110]
        print(f"{r['case'][:42]:42} {'yes' if r['ok'] else 'NO':5} {r['seconds']:6.1f}  {got}{note}")
    print(
        f"\n{sum(r['ok'] for r in rows)}/{len(rows)} as expected in {time.perf_counter() - t0:.1f} s; {path}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
