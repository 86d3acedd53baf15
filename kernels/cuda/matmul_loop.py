"""What the CUDA SIMT GEMM's k-loop issues besides its FFMAs, compiled: one count per build.

``matmul_loop_sm90.json`` holds, for every build of the space (launch configuration ``CONFIG_KEYS`` under
each layout ``LAYOUT_KEYS``), the instructions other than FFMA that matmul.cu's unchecked k-loop issues per
thread per k-step, read from the SASS of the sm_90 cubin the tuner's compiler builds (NVRTC 13.0;
benchmarks/matmul_loop_counts.py writes it and ``--check`` compares drawn builds with it). Those are the
shared loads and stores, the next step's global loads, their address and swizzle arithmetic, the loop's
counters and its barrier: every one takes an issue slot a warp's FFMA needed, and the kernel is issue-bound
(H100 run 171: issue slots busy 66-82% of cycles). The compiler decides them per build, which no count
of the pattern's accesses reproduces: with A swizzled the loop is 90-150 instructions shorter than unpadded
at 128x128x16 8x8, and a swizzle of B with 8 phases in a k-step adds ~44 XORs where one with 2 adds ~8.

Nothing fitted. Why a module of its own: the table is the compiler's, re-read after a kernel change, apart
from the cost model that charges it (matmul_cost.py ``launch_info``).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

CONFIG_KEYS = ("BM", "BN", "BK", "TM", "TN", "THREAD_MAP", "MIN_BLOCKS")
LAYOUT_KEYS = (
    "PAD_A", "PAD_B", "SW_MAX_PHASE_A", "SW_MAX_PHASE_B", "SW_PER_PHASE_A", "SW_PER_PHASE_B", "SW_VEC_A",
    "SW_VEC_B",
)  # fmt: skip
TABLE = Path(__file__).resolve().parent / "matmul_loop_sm90.json"


@lru_cache(maxsize=1)
def _table() -> tuple[dict[tuple[int, ...], int], dict[tuple[int, ...], tuple[int | None, ...]]]:
    """(layout -> column, configuration -> counts by column), read once; empty where the file is absent."""
    if not TABLE.is_file():
        return {}, {}
    data = json.loads(TABLE.read_text())
    if tuple(data["config_keys"]) != CONFIG_KEYS or tuple(data["layout_keys"]) != LAYOUT_KEYS:
        raise ValueError(f"{TABLE}: its keys are not {CONFIG_KEYS} and {LAYOUT_KEYS}; write it again")
    column = {tuple(lay): i for i, lay in enumerate(data["layouts"])}
    rows = {tuple(int(x) for x in k.split(",")): tuple(v) for k, v in data["other"].items()}
    return column, rows


def loop_instructions(c: dict[str, int]) -> int | None:
    """Instructions other than FFMA per thread per k-step in ``c``'s unchecked k-loop (None: a build the
    table does not hold)."""
    column, rows = _table()
    row = rows.get(tuple(int(c[k]) for k in CONFIG_KEYS))
    at = column.get(tuple(int(c[k]) for k in LAYOUT_KEYS))
    return None if row is None or at is None else row[at]


def loop_instructions_batch(columns: dict[str, Any]) -> np.ndarray:
    """``loop_instructions`` of many candidates (int arrays by key) as a float array, NaN where absent."""
    keys = (*CONFIG_KEYS, *LAYOUT_KEYS)
    cols = np.stack([np.asarray(columns[k], dtype=np.int64) for k in keys], axis=1)
    distinct, at = np.unique(cols, axis=0, return_inverse=True)
    got = [loop_instructions(dict(zip(keys, row.tolist()))) for row in distinct]
    return np.array([np.nan if g is None else float(g) for g in got])[at.ravel()]
