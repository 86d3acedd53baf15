"""The model's op rules: which ops and widths ``analyze`` accepts, and how each is costed (``_Rule``).

Split from model.py (one concern a module): both backends (model_numpy.py, _model_numba.py) read only the
``_Rule`` built here, so the vocabulary (``OPS``, ``WIDTHS``), each op's status (``OP_STATUS``) and the
checks of op, width and arch live in one place. The load/store/atomic rules are in model.py's docstring.

**ldmatrix, stmatrix, cp.async.ca: measured; cp.async.cg: its own rule** (``OP_STATUS``; ``autopad validate
--ops ldmatrix,stmatrix,cp.async`` measured 728 probes on the H200 on 2026-12-01: all 536 ldmatrix/stmatrix
ones agree with the rules below; the cp.async rule was fitted to the 144 ``.ca`` ones afterwards and read
off targeted probes since, model_cp_async.py, and agrees with all 3,395 recorded, 1,494 of them held out;
the run read the ``.ca``
counter for the 48 ``.cg`` ones, which is zero; ``.cg`` was measured from its own counter on 2026-12-05 and
has a rule of its own, op ``"cp.async.cg"``, model_cp_async_cg.py). What the rules rest on:

* ``ldmatrix.sync.aligned.m8n8.xK[.trans].shared.b16`` (op ``"ldmatrix.xK"``, ``"ldmatrix"`` = x4,
  ``access_bytes=16``): lanes 8i..8i+7 give the start addresses of the eight 16-byte rows of matrix i,
  for K = 1, 2, 4 matrices (lanes 0-7, 0-15, 0-31); the other lanes are ignored; every row is 16-byte
  aligned; ``.trans`` transposes inside the registers, not which shared bytes are read (PTX ISA,
  "Warp-level matrix load instruction: ldmatrix"; CCCL's cuda::ptx list: ldmatrix sm_75, stmatrix sm_90).
  Model: matrix i is phase i, 8 rows x 16 bytes = 128 bytes, costed like the 8-lane phase of a 16-byte
  load (the busiest of 8 four-bank groups; rows repeated inside a matrix broadcast). No pair merge: an
  .x4 writes 4 registers per lane, 512 bytes, and the return path moves 128 bytes a cycle (NVIDIA forum
  t/77228 ties the LDS.128 merge to packing registers), so the floor is K wavefronts. NVIDIA forum
  t/278716 ("Understanding the behavior of ldmatrix in terms of shared memory access") describes the same
  8-thread groups of at most 128 bytes, one per matrix; Nsight Compute counts them apart from plain loads
  ("Shared Load Matrix", metrics ``*_mem_shared_op_ldsm``).
* ``stmatrix`` (sm_90): the same addressing and phases, a store (``*_op_stsm``).
* ``cp.async.ca.shared.global`` of 4, 8 or 16 bytes (op ``"cp.async"``): the shared side is costed
  as a store of that width (phases of 32, 16, 8 lanes, inactive lanes allowed) **without broadcast**:
  every lane's write counts, so 32 lanes copying into one word cost 32 (measured, ``.ca``). The phases are
  the 128-byte global lines of a lane-ordered source; ``analyze(..., global_addresses=...)`` costs each
  phase by the real lines and slots its lanes read too (model_cp_async.py).
* ``cp.async.cg.shared.global`` (op ``"cp.async.cg"``, 16 bytes only): another rule, read off its own
  counter in 2026-12-05's probes (model_cp_async_cg.py): a word written twice counts once, and a wavefront
  carries 32-byte sector moves of one global line into one shared row that agree in half set, half swap
  and sector parity. It is costed on numpy (model_cp_async_cg.py), never by the store kernels.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .arch import Arch

__all__ = ["ADDRESS_LIMIT", "OPS", "OP_STATUS", "WIDTHS", "op_status"]

WIDTHS = (1, 2, 4, 8, 16)
_MATRIX = tuple(
    f"{b}{x}{t}" for b in ("ldmatrix", "stmatrix") for x in ("", ".x1", ".x2", ".x4") for t in ("", ".trans")
)
OPS = ("load", "store", "atomic", "cp.async", "cp.async.cg", *_MATRIX)  # every spelling analyze accepts
_OPS_TEXT = (
    "load, store, atomic, cp.async (.ca), cp.async.cg, ldmatrix[.x1|.x2|.x4][.trans], "
    "stmatrix[.x1|.x2|.x4][.trans]"
)
_OP_WIDTHS = {
    "atomic": (4, 8),
    "cp.async": (4, 8, 16),
    "cp.async.cg": (16,),
    "ldmatrix": (16,),
    "stmatrix": (16,),
}
_MIN_SM = {"ldmatrix": 75, "cp.async": 80, "cp.async.cg": 80, "stmatrix": 90}
OP_STATUS = {
    "load": "measured",
    "store": "measured",
    "atomic": "measured (4-byte adds; 8-byte assumed to follow the 8-byte store phases)",
    # H200, 2026-12-01 (benchmarks/results/h200/validate_matrix, tests/fixtures/h200_cp_async_probes.json),
    # H200 run 157 and H100 run 181 (random probes), H100 run 187 (971 targeted probes of several lines in a
    # store phase), H200 run 188 (run 181's phases apart) and H200 run 189 (seeds 3 and 4, held out):
    # model_cp_async.py has the rule and figures.
    "cp.async": (
        "measured (cp.async.ca, no broadcast, store phases apart; a phase from several global lines costed "
        "by the lanes each shared bank takes, the lines each slot is read from and the pairs a lane links): "
        "all 3,395 recorded probes agree, 971 targeted ones and the 235 phases of several lines of 79 random "
        "ones it was read off (H100 and H200, 2026-12-06), the 558 earlier H200 probes it was not "
        "(2026-12-01 and -05) and 1,494 H200 probes drawn after it was committed (2026-12-06, held out); "
        "cp.async.cg has its own op, 'cp.async.cg'"
    ),
    # H100 run 179 (252 targeted probes, the rule read off them), H200 run 157 (144 probes the rule was not
    # read off) and H100 runs 181-182 (379 probes drawn after the rule and its predictions were committed):
    # benchmarks/results/h100/2026-12-05/run179, run181, run182; tests/fixtures/cp_async_cg_probes.json
    "cp.async.cg": (
        "read off 252 targeted probes of its own counter (H100, 2026-12-05) and agrees with all of them, "
        "with all 144 earlier H200 probes it was not read off, and with all 379 drawn after it was "
        "committed (H100, 2026-12-05: 127 random, 252 targeted); Nsight Compute counts no bank conflicts "
        "for it, so ideal = wavefronts"
    ),
    "ldmatrix": "measured (H200, 2026-12-01: 268 of 268 probes agree)",
    "stmatrix": "measured (H200, 2026-12-01: 268 of 268 probes agree)",
}
ADDRESS_LIMIT = 1 << 32  # shared memory is addressed with 32 bits
_MATRIX_RE = re.compile(r"^(ldmatrix|stmatrix)(?:\.x([124]))?(?:\.trans)?$")


@dataclass(frozen=True)
class _Rule:
    """How one (op, width, arch) is costed; both backends read only this."""

    op: str
    width: int  # bytes per lane (a matrix row for ldmatrix/stmatrix)
    unit: int  # bytes counted as one unit: the width, or one bank for narrower accesses
    unit_banks: int  # banks * bank_bytes // unit: a 16-byte unit spans 4 banks, so 8 unit-banks
    lanes: int  # lanes per phase before any merge
    merge: bool  # 8/16-byte loads: lanes paired on one address merge two phases
    broadcast: bool  # lanes asking for one word share it (not atomics)
    used: int  # lanes that take part: 8 per matrix for ldmatrix/stmatrix, else the warp
    need_all: bool  # .sync.aligned matrix ops: every lane that takes part gives an address


def _family(op: str) -> tuple[str, int]:
    """("ldmatrix", 4) for "ldmatrix.x4.trans"; (op, 0) for the others."""
    m = _MATRIX_RE.match(op)
    return (m.group(1), int(m.group(2) or 4)) if m else (op, 0)


def op_status(op: str) -> str:
    """How far an op's rule is checked against the hardware, any spelling in ``OPS``: "measured" (with the
    probe count for ldmatrix/stmatrix), or for cp.async and cp.async.cg what they rest on and, for cp.async,
    where it falls short."""
    if isinstance(op, str) and op.startswith("cp.async.") and op != "cp.async.cg":
        raise ValueError(f"op: {op!r}: use 'cp.async' (the .ca rule) or 'cp.async.cg'")
    if not isinstance(op, str) or op not in OPS:
        raise ValueError(f"op: {op!r} is not one of {_OPS_TEXT}")
    return OP_STATUS[_family(op)[0]]


def _rule(op: object, access_bytes: object, arch: Arch) -> _Rule:
    """Check op and width (types first, so the cache never sees an unhashable key) and build the rule."""
    if not isinstance(op, str) or op not in OPS:
        raise ValueError(f"op: {op!r} is not one of {_OPS_TEXT}")
    if isinstance(access_bytes, bool) or not isinstance(access_bytes, (int, np.integer)):
        raise ValueError(f"access_bytes: expected an int, one of {WIDTHS}; got {access_bytes!r}")
    return _rule_cached(op, int(access_bytes), arch)


@lru_cache(maxsize=512)
def _rule_cached(op: str, width: int, arch: Arch) -> _Rule:
    family, matrices = _family(op)
    allowed = _OP_WIDTHS.get(family, WIDTHS)
    if width not in allowed:
        if family in ("load", "store"):
            raise ValueError(f"access_bytes: {width!r} is not one of {allowed}")
        what = {
            "atomic": "atomics are",
            "cp.async": "cp.async copies are",
            "cp.async.cg": "cp.async.cg copies are",
        }.get(family, f"{family} rows are")
        widths = ", ".join(map(str, allowed[:-1])) + (" or " if len(allowed) > 1 else "") + str(allowed[-1])
        raise ValueError(f"access_bytes: {what} {widths} bytes wide, got {width}")
    if family in _MIN_SM:
        named = re.fullmatch(r"sm_(\d+)", arch.name)  # a custom profile says it by its name
        sm = arch.sm or (int(named.group(1)) if named else 0)
        if arch.warp_size != 32 or (sm and sm < _MIN_SM[family]):
            raise ValueError(
                f"op: {op} is an NVIDIA sm_{_MIN_SM[family]}+ instruction; arch {arch.name} does not have it"
            )
    unit = max(width, arch.bank_bytes)
    return _Rule(
        op=op,
        width=width,
        unit=unit,
        unit_banks=arch.banks * arch.bank_bytes // unit,
        lanes=arch.phase_lanes(width),
        merge=op == "load" and arch.merge_paired_loads and width > arch.bank_bytes,
        # cp.async: every lane's write counts (measured); cp.async.cg is costed by its own rule, never here
        broadcast=op not in ("atomic", "cp.async", "cp.async.cg"),
        used=8 * matrices if matrices else arch.warp_size,
        need_all=bool(matrices),
    )
