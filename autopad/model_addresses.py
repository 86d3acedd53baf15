"""Address checking for the model: caller input -> an int64 (n, warp) array, and the errors that name a bad
(row, lane).

Split from model.py (one concern a module): ``analyze`` and ``analyze_batch`` convert with
``_as_address_array``; the numpy backend checks alignment and range with ``_check_numpy`` (the numba kernel
makes the same checks itself and reports a code that ``_address_error`` turns into the same message).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .model_rules import ADDRESS_LIMIT, _Rule

_SHAPE = "integer byte addresses of shape (n, {w}) or ({w},), -1 for an inactive lane"


def _as_address_array(addresses: object, warp: int) -> np.ndarray:
    """Convert to an int64 array (n, warp), -1 = inactive; type, shape and range checked, not alignment."""
    if isinstance(addresses, np.ndarray):
        arr = addresses
    elif addresses is None or isinstance(addresses, (str, bytes, int, float)):
        raise ValueError(f"addresses: expected {_SHAPE.format(w=warp)}; got {addresses!r}")
    elif isinstance(addresses, (Mapping, set, frozenset)):  # a dict was read as its keys, a set unordered
        kind = type(addresses).__name__
        raise ValueError(f"addresses: a {kind} has no lane order; expected {_SHAPE.format(w=warp)}")
    else:
        try:
            rows = list(addresses)  # type: ignore[call-overload]
        except TypeError:
            raise ValueError(f"addresses: expected {_SHAPE.format(w=warp)}; got {addresses!r}") from None
        if not rows:
            arr = np.zeros((0, warp), dtype=np.int64)
        elif not any(isinstance(a, (list, tuple, np.ndarray)) for a in rows):
            return _lanes_to_array(rows, warp)  # one instruction, None = inactive (analyze's form)
        else:
            arr = np.asarray(rows)
    if arr.dtype.kind not in "iu" or arr.ndim not in (1, 2):
        hint = "; use -1, not None, for an inactive lane" if arr.dtype.kind == "O" else ""
        raise ValueError(
            f"addresses: expected {_SHAPE.format(w=warp)}; got dtype {arr.dtype} and shape {arr.shape}{hint}"
        )
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.shape[1] != warp:
        raise ValueError(f"addresses: need one entry per lane ({warp} for this arch), got {arr.shape[1]}")
    if arr.dtype.kind == "u" and arr.size and arr.max() >= ADDRESS_LIMIT:  # before the cast wraps it
        r, lane = np.unravel_index(int(np.argmax(arr >= ADDRESS_LIMIT)), arr.shape)
        raise ValueError(_address_error(int(r), int(lane), int(arr[r, lane]), 2, None, arr.shape[0]))
    return np.ascontiguousarray(arr, dtype=np.int64)


def _lanes_to_array(rows: list, warp: int) -> np.ndarray:
    out = np.full((1, len(rows)), -1, dtype=np.int64)
    for lane, a in enumerate(rows):
        if a is None:
            continue
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)):
            raise ValueError(f"addresses: lane {lane} is {a!r}; each lane is an int byte address or None")
        if a < 0:
            raise ValueError(f"addresses: lane {lane} has negative address {a}; None marks an inactive lane")
        if a >= ADDRESS_LIMIT:
            raise ValueError(_address_error(0, lane, int(a), 2, None, 1))
        out[0, lane] = a
    if len(rows) != warp:
        raise ValueError(f"addresses: need one entry per lane ({warp} for this arch), got {len(rows)}")
    return out


def _address_error(r: int, lane: int, a: int, code: int, rule: _Rule | None, n: int) -> str:
    """The ValueError text for a bad address (codes as in _model_numba: 1 negative, 2 range, 3 align, 4
    missing), with the row named when the batch has more than one."""
    where = f"row {r} lane {lane}" if n > 1 else f"lane {lane}"
    if code == 1:
        return (
            f"addresses: {where} has negative address {a}; -1 (array) or None (list) marks an inactive lane"
        )
    if code == 2:
        return f"addresses: {where} address {a} is out of range: shared memory addresses are below 2**32"
    assert rule is not None
    if code == 3:
        return (
            f"addresses: {where} address {a} is not aligned to the {rule.width}-byte access width; "
            "shared-memory accesses must be aligned to their width"
        )
    return (
        f"addresses: {where} has no address; every lane 0-{rule.used - 1} of {rule.op} gives the start of a "
        "16-byte matrix row (.sync.aligned: no inactive lanes)"
    )


def _plain_batch(arr: np.ndarray, rule: _Rule) -> bool:
    """Whether a 2-D integer batch passes ``_check_numpy`` by its quick test (entries -1 or aligned
    addresses below ``ADDRESS_LIMIT``; no lane that must be active), in any integer type."""
    if rule.need_all or not arr.size or arr.min() < -1 or arr.max() >= ADDRESS_LIMIT:
        return False
    mask = rule.width - 1
    return not mask or np.count_nonzero(arr & mask) == np.count_nonzero(arr == -1)


def _check_numpy(arr: np.ndarray, rule: _Rule) -> None:
    """The checks the numba kernel makes, vectorised: raises on the first bad (row, lane)."""
    if not rule.need_all and arr.size and arr.min() >= -1 and arr.max() < ADDRESS_LIMIT:
        # every entry is -1 or an address: -1 has every bit of the alignment mask set, an aligned address
        # none, so the batch is aligned exactly when the set masks are the -1 entries
        mask = rule.width - 1
        if not mask or np.count_nonzero(arr & mask) == np.count_nonzero(arr == -1):
            return
    bad = (arr < -1) | (arr >= ADDRESS_LIMIT) | ((arr >= 0) & ((arr & (rule.width - 1)) != 0))
    if rule.need_all:
        bad[:, : rule.used] |= arr[:, : rule.used] < 0
    if not bad.any():
        return
    r, lane = np.unravel_index(int(np.argmax(bad)), bad.shape)
    a = int(arr[r, lane])
    code = 1 if a < -1 else 2 if a >= ADDRESS_LIMIT else 3 if a >= 0 else 4
    raise ValueError(_address_error(int(r), int(lane), a, code, rule, arr.shape[0]))
