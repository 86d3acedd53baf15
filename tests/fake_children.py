"""Fake benchmark children for the worker tests: they speak the worker protocol without a GPU.

Candidate keys say what to do: "ok*" answers correctly, "wrong*" answers wrong, "fault*" reports a
fatal fault (a lost CUDA context) and stops, "crash*" kills the process, "hang*" never answers.
"""

from __future__ import annotations

import os
import time

from autopad.results import Measurement


def child(job, out):
    for key, _ in job.candidates:
        out.put(("start", key))
        if key.startswith("ok"):
            out.put(("result", Measurement(key, True, ms=1.0, spread_ms=0.01, runs=3).to_dict(), False))
        elif key.startswith("wrong"):
            out.put(("result", Measurement(key, False, error="wrong result: 3 differ").to_dict(), False))
        elif key.startswith("fault"):
            out.put(("result", Measurement(key, False, error="fault: misaligned address").to_dict(), True))
            return
        elif key.startswith("crash"):
            time.sleep(0.2)  # let the "start" message leave the queue's feeder thread
            os._exit(7)
        elif key.startswith("hang"):
            time.sleep(3600)
    out.put(("done",))
