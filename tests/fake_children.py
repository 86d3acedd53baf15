"""Fake benchmark children for the worker tests: they speak the worker protocol without a GPU.

Candidate keys say what to do: "ok*" answers correctly, "wrong*" answers wrong, "fault*" reports a
fatal fault (a lost CUDA context) and stops, "crash*" kills the process, "hang*" never answers, "die*"
prints a last word to stderr, writes the time of its death to ``$AUTOPAD_TEST_MARKER/died`` and exits,
"nan*" reports a NaN time, "orphan*" starts a grandchild process (its pid in
``$AUTOPAD_TEST_MARKER/grandchild``) and hangs. A first key "setupcrash*" or "setupdie*" fails the
worker before any candidate starts (each start counted in ``$AUTOPAD_TEST_MARKER/starts``).
``spec_child`` loads the job's spec as the real worker does and answers every candidate; it writes what
the worker process saw (its main module, environment) to ``$AUTOPAD_TEST_MARKER/worker``.
With ``AUTOPAD_TEST_DIE_ON_IMPORT`` set, importing this module kills the process (a worker that cannot
start).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from autopad.results import Measurement

if os.environ.get("AUTOPAD_TEST_DIE_ON_IMPORT"):
    sys.stderr.write("fake_children: dying on import as asked\n")
    sys.stderr.flush()
    os._exit(5)


def _marker(name: str) -> Path:
    return Path(os.environ["AUTOPAD_TEST_MARKER"]) / name


def child(job, out):
    first = job.candidates[0][0] if job.candidates else ""
    if first.startswith("setup"):  # fails before any candidate starts, as a worker without CUDA does
        with open(_marker("starts"), "a") as f:
            f.write("start\n")
        if first.startswith("setupcrash"):
            out.put(("crash", "RuntimeError: no CUDA device"))
            return
        os._exit(11)
    for key, _ in job.candidates:
        out.put(("start", key))
        if key.startswith("ok"):
            out.put(("result", Measurement(key, True, ms=1.0, spread_ms=0.01, runs=3).to_dict(), False))
        elif key.startswith("nan"):  # a timing bug: a correct result with a NaN time
            out.put(
                ("result", {**Measurement(key, True, ms=1.0, runs=3).to_dict(), "ms": float("nan")}, False)
            )
        elif key.startswith("pid"):  # which process ran it (ms = its pid), and whether torch was loaded
            loaded = "torch" in sys.modules
            out.put(
                (
                    "result",
                    Measurement(key, True, ms=float(os.getpid()), runs=int(loaded) + 1).to_dict(),
                    False,
                )
            )
        elif key.startswith("wrong"):
            out.put(("result", Measurement(key, False, error="wrong result: 3 differ").to_dict(), False))
        elif key.startswith("fault"):
            out.put(("result", Measurement(key, False, error="fault: misaligned address").to_dict(), True))
            return
        elif key.startswith("crash"):
            time.sleep(0.2)
            os._exit(7)
        elif key.startswith("die"):
            sys.stderr.write("fake child: CUDA error: an illegal memory access was encountered\n")
            sys.stderr.flush()
            time.sleep(0.2)
            _marker("died").write_text(repr(time.time()))
            os._exit(9)
        elif key.startswith("orphan"):
            p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
            _marker("grandchild").write_text(str(p.pid))
            time.sleep(3600)
        elif key.startswith("hang"):
            time.sleep(3600)
    out.put(("done",))


def spec_child(job, out):
    """Loads the spec (a class from the user's script arrives by value) and answers every candidate."""
    from autopad.bench import load_spec

    spec = load_spec(job.spec)
    main = sys.modules["__main__"]
    seen = {
        "main": getattr(getattr(main, "__spec__", None), "name", None),
        "main_file": getattr(main, "__file__", None),
        "spec": spec.NAME,
        "env": {k: v for k, v in os.environ.items() if k.startswith(("AUTOPAD_", "CUDA_VISIBLE"))},
    }
    with open(_marker("worker"), "a") as f:
        f.write(json.dumps(seen) + "\n")
    for i, (key, constants) in enumerate(job.candidates):
        out.put(("start", key))
        ok = spec.legal(constants, job.shape, job.dtype).ok
        m = Measurement(key, ok, ms=1.0 + i / 8 if ok else None, spread_ms=0.0 if ok else None, runs=3)
        out.put(("result", m.to_dict(), False))
    out.put(("done",))
