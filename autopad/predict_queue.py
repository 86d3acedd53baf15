"""The time of a kernel whose blocks run their phases in turn (``serial_phases``: load a tile, barrier, read
it out): ``_queued``, exact mean value analysis of a closed queue of an SM's resident blocks.

With few blocks an SM, a block's shared-memory time adds to its DRAM time rather than hiding under other
blocks' loads; the overlap of independent streams (predict.py) cannot see that, so ``predict.predict_arrays``
combines those specs' streams by this queue instead.

Why a module of its own: it is a second rule for combining the streams (a queueing network, with its own
loop over customers) that only specs stating ``serial_phases`` or ``latency_phases`` use (the latter with
the DRAM and L2 stations empty), apart from the streams' times
(predict.py).
"""

from __future__ import annotations

import numpy as np

from .arch import Arch

__all__: list[str] = []  # autopad.predict imports ``_queued``


def _queued(
    streams: np.ndarray,
    knee_x: np.ndarray,
    wave_factor: np.ndarray,
    resident: np.ndarray,
    tiles_per_sm: np.ndarray,
    a: Arch,
    delay: np.ndarray | float | None = None,
) -> np.ndarray:
    """Seconds of a kernel whose blocks run their phases in turn, by exact mean value analysis of a closed
    queueing network: an SM's ``resident`` blocks circulate through the DRAM latency (a delay: every block
    waits it out at once) and, per tile, queue for the SM's share of DRAM bandwidth, its shared-memory
    wavefronts and its issue slots (the streams' time per tile, the DRAM and L2 ones at the streaming rate:
    the latency is the delay here, not the knee of bytes in flight). One block pays the sum of its phases;
    many approach the slowest stream. A staged transpose whose registers leave one 512-thread block an SM
    took 2.3x its conflict-free time at 8.5 wavefronts per ideal one, where the streams said 1.25x (H200
    run 1, fp32 8192^2, 64 x 128 tiles swizzled: transpose_model_gaps.md, fifth pass).

    The queue's stations are the first five streams: DRAM and L2 (both scaled back to their streaming rate by
    the DRAM knee ``knee_x``; an asynchronous L2 stream's own knee, ``l2_async``, is not applied), shared
    memory, arithmetic and issue. The per-tile overhead stream (``tiles_s``) is left out. Two specs state
    the keys today: the CUDA transpose (``serial_phases`` on its original path, ``latency_phases`` on its
    vector path where a block is alone on its SM), one tile a block; and the Triton GEMM's PATH 1 where an
    operand is loaded element by element (``latency_phases``, a tile per k-step, many a block, beside
    asynchronous copies of the other operand). For ``latency_phases`` the DRAM and L2 stations are empty
    (but for the plain L2 bytes where the loads hit L2: ``delay`` below), so an asynchronous stream's knee
    does not arise; the per-tile overhead, tried in the issue station on
    PATH 1's fifteen H100 studies (runs 192-200), moved no pick and Spearman by at most 0.01: left out.

    ``delay``: each row's round trip in seconds (default the DRAM latency, ``a.dram_latency_s``); PATH 1's
    element-wise loads hit L2 and wait ``a.l2_latency_s`` (predict.py, ``latency_from_l2``), with their
    plain L2 bytes in the L2 station."""
    per_tile = np.maximum(tiles_per_sm, 1e-30) * wave_factor  # the streams were scaled by the waves
    demand = (
        np.stack([streams[0] * knee_x, streams[1] * knee_x, streams[2], streams[3], streams[4]]) / per_tile
    )
    customers = np.maximum(resident, 1).astype(np.int64)
    queue = np.zeros_like(demand)
    rate = np.zeros(demand.shape[1])
    trip = a.dram_latency_s if delay is None else delay
    for n in range(1, int(customers.max()) + 1):  # MVA: add one customer at a time
        wait = demand * (1.0 + queue)
        x = n / (trip + wait.sum(axis=0))
        on = customers >= n
        rate = np.where(on, x, rate)
        queue = np.where(on, x * wait, queue)
    return tiles_per_sm / rate * wave_factor
