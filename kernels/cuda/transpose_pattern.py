"""The CUDA transpose's shared-memory pattern: the exact instructions one block issues for one tile, as the
bank model scores them.

``_pattern`` derives them from the same constants as transpose.cu's index arithmetic, with numpy over
warps, passes and lanes at once: the store phase (one VEC-wide st.shared per loaded vector), then the
read-out (READOUT 0: one element per ld.shared down a tile column; 1: 4-byte words of 4 / ELEM_BYTES
columns; 2: ldmatrix.x4.trans per 32 x 8 block). ``SmemPattern`` keeps them stacked per (op, width) for
the tuner's batched scorer and makes ``autopad.access.Instruction`` objects only when asked.

Why a module of its own: this is the model's view of what the kernel does to shared memory, apart from the
space it is asked over (transpose_space.py) and the time the predictor adds for what the bank model does not
see (transpose_cost.py).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np

from autopad.access import Instruction

from .transpose_tile import _phases

__all__ = ["SmemPattern", "gather_shifts", "shifted_gather"]

_LANES = np.arange(32, dtype=np.int64)
_Names = Callable[[], tuple[str, ...]]  # a phase's loop names, made only when its instructions are asked for
# READOUT 2: lane 8i + j points ldmatrix's matrix i, row j at this row of a 32 x 8 block (transpose.cu)
_LDSM_ROW = 8 * ((_LANES % 8) >> 1) + 2 * (((_LANES >> 3) + ((_LANES % 8) >> 1)) & 3) + (_LANES & 1)
_LANES32, _LDSM_ROW32 = _LANES.astype(np.int32), _LDSM_ROW.astype(np.int32)  # (the patterns' lanes: int32)


class SmemPattern:
    """One block's shared-memory instructions for one tile, kept stacked per (op, width).

    ``groups`` is what the tuner's batched scorer reads: (op, width, rows [n, 32], cols [n, 32], counts),
    built with numpy over warps, passes and lanes at once. Iterating gives ``autopad.access.Instruction``
    objects in the kernel's order (warp by warp: its stores, then its loads), named as the kernel's loops
    are; they are made only when asked for (``autopad.access.score``, ``explain``, reports).
    """

    def __init__(self, phases: list[tuple[str, str, int, np.ndarray, np.ndarray, _Names]]) -> None:
        # each phase: (tag, op, width, rows [warps, n, 32], cols [warps, n, 32], a call that gives the loop
        # names of the n: made with the instructions, as a ranking reads only ``groups``)
        self._phases = phases
        self.groups = tuple(
            (
                op,
                w,
                rows.reshape(-1, rows.shape[-1]),
                cols.reshape(-1, cols.shape[-1]),
                np.ones(rows.shape[0] * rows.shape[1], dtype=np.int64),
            )
            for _, op, w, rows, cols, _ in phases
        )
        self._ins: tuple[Instruction, ...] | None = None

    def instructions(self) -> tuple[Instruction, ...]:
        if self._ins is None:
            warps = self._phases[0][3].shape[0]
            self._ins = tuple(
                Instruction(f"{tag} w{w} {name}", op, width, rows[w, i], cols[w, i])
                for w in range(warps)
                for tag, op, width, rows, cols, names in self._phases
                for i, name in enumerate(names())
            )
        return self._ins

    def __iter__(self) -> Any:
        return iter(self.instructions())

    def __len__(self) -> int:
        return sum(p[3].shape[0] * p[3].shape[1] for p in self._phases)

    def __getitem__(self, i: int) -> Instruction:
        return self.instructions()[i]


@lru_cache(maxsize=1024)
def _pattern(tm: int, tn: int, threads: int, vec: int, readout: int, e: int) -> SmemPattern:
    # lanes as int32 arrays [warp, instruction, lane], each one made whole by the arithmetic itself (no
    # broadcast views to copy later): a ranking builds some hundred patterns and stacks them all
    c = {"TILE_M": tm, "TILE_N": tn, "THREADS": threads, "VEC": vec}
    lx, ly, lpass, sx, sy, spass = _phases(c)
    warps = threads // 32
    w = np.arange(warps, dtype=np.int32)[:, None, None]
    t = w * 32 + _LANES32  # [warp, 1, lane]: threadIdx.x
    # store phase, pass p: lane writes VEC elements at (ly + p*LY, lx*VEC) in one VEC*elem st.shared
    rows = t // lx + np.arange(0, lpass * ly, ly, dtype=np.int32)[:, None]
    cols = np.repeat((t % lx) * vec, lpass, axis=1)
    phases = [("st", "store", vec * e, rows, cols, lambda: tuple(f"p{i}" for i in range(lpass)))]
    if readout == 2:  # ldmatrix.x4.trans: unit u = w + p*WARPS is rows 32a.., columns 8cb..8cb+7
        n = tm * tn // 256 // warps
        u = w + warps * np.arange(n, dtype=np.int32)[:, None]
        a, cb = u % (tm // 32), u // (tm // 32)
        rows, cols = 32 * a + _LDSM_ROW32, np.repeat(8 * cb, 32, axis=2)
        phases.append(("ldsm", "ldmatrix.x4.trans", 16, rows, cols, lambda: tuple(f"p{i}" for i in range(n))))
    else:  # READOUT 0: VEC element loads per pass; 1: VEC 4-byte words of G columns per pass
        g = 4 // e if readout == 1 else 1
        npass = tn // (sy * g)
        p = np.repeat(np.arange(0, npass * sy, sy, dtype=np.int32), vec)[:, None]  # (pass p: p * SY)
        v = np.tile(np.arange(vec, dtype=np.int32), npass)[:, None]
        rows, cols = (t % sx) * vec + v, (t // sx + p) * g

        def names() -> tuple[str, ...]:
            return tuple(f"p{i} v{j}" for i in range(npass) for j in range(vec))

        phases.append(("ld4" if readout == 1 else "ld", "load", 4 if readout == 1 else e, rows, cols, names))
    return SmemPattern(phases)


def gather_shifts(tn: int, vec: int, m: int) -> np.ndarray:
    """The row shift u of each tile column nn in the halo build's shifted gather (transpose.cu,
    ap_gather_shifted): output row n0 + nn starts sh = (n0 + nn) M mod VEC elements past a vector boundary
    (n0 a multiple of TILE_N, so of VEC: only nn M mod VEC counts; the output pointer taken aligned), and
    its first aligned vector u = VEC - sh elements into the tile's segment (0 where sh is 0)."""
    sh = (np.arange(tn, dtype=np.int64) * m) % vec
    return np.where(sh > 0, vec - sh, 0)


@lru_cache(maxsize=4096)
def shifted_gather(tm: int, tn: int, threads: int, vec: int, m_mod: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows and columns [n, 32] of the shifted gather's loads in one tile (one element each): READOUT 0's
    column walk, pass p and element v of lane (sx, sy) at tile row sx VEC + u(nn) + v of column nn = sy +
    p SY, where output rows are off the vector grid (``m_mod`` = M mod VEC; 0 gives READOUT 0's walk at u =
    0, the read-out ``_pattern`` lists). The shift moves each
    column's lanes by rows of their own, so the banks the lanes of one instruction meet depend on M: READOUT
    0's pattern (u = 0) is what ``_pattern`` lists, this is what the kernel issues."""
    c = {"TILE_M": tm, "TILE_N": tn, "THREADS": threads, "VEC": vec}
    _, _, _, sx, sy, spass = _phases(c)
    t = np.arange(threads // 32, dtype=np.int64)[:, None, None] * 32 + _LANES  # [warp, 1, lane]
    p = np.repeat(np.arange(0, spass * sy, sy, dtype=np.int64), vec)[:, None]
    v = np.tile(np.arange(vec, dtype=np.int64), spass)[:, None]
    cols = t // sx + p
    rows = (t % sx) * vec + gather_shifts(tn, vec, m_mod)[cols] + v
    return rows.reshape(-1, 32), cols.reshape(-1, 32)
