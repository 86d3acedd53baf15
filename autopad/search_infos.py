"""The launch info and traffic of many candidates, checked, for ``autopad.search``'s predictions.

``_info_columns`` gives the predictor (``predict.predict_arrays``) one array per launch-info key: from the
spec's ``launch_info_batch`` over the kept space's columns where it has one, else ``launch_info`` candidate
by candidate (``_launch_infos``), the baselines outside the enumeration always one by one. Every value is
checked (numbers, finite, >= 0; ``blocks`` and ``threads`` at least 1) and a bad one is reported as a
``SpecError`` naming the candidate's constants; a missing ``smem_bytes`` defaults to the layout's footprint.
``_traffic`` checks the spec's ``traffic`` the same way.

Why a module of its own: this is where a spec's answers are validated before the model reads them, apart
from the ranking itself (search.py) and the shortlist drawn from it (search_shortlist.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .predict import LaunchInfoError, check_launch_info, check_traffic, info_columns
from .predict_info import out_of_range
from .score import _PerLayout
from .space import Space
from .spec import KernelSpec, SpecError

__all__: list[str] = []  # autopad.search imports the underscored names below


def _launch_infos(
    spec: KernelSpec, consts: Sequence[Mapping[str, int]], layouts: Sequence[Any], shape: tuple, dtype: str
) -> list[dict[str, float]]:
    """Every candidate's ``launch_info``, checked: the first one key by key, then all of them at once (each
    key's values as one array: numbers, finite, >= 0); a bad one is reported with its constants."""
    out: list[dict[str, float]] = []
    for c, lay in zip(consts, layouts):
        info = spec.launch_info(dict(c), shape, dtype)
        if not out or not isinstance(info, dict) or "blocks" not in info or "threads" not in info:
            try:
                info = check_launch_info(info, "launch_info")
            except LaunchInfoError as e:
                raise SpecError(f"{e} (for {dict(c)})") from None
        else:
            info = dict(info)
        info.setdefault("smem_bytes", float(getattr(lay, "footprint", 0)))
        out.append(info)
    for k in set().union(*out) if out else ():
        vals = [i.get(k, 0.0) for i in out]
        try:
            arr = np.asarray(vals, dtype=np.float64)
            bad = ~np.isfinite(arr) | (arr < 0)
            given = np.array([k in i for i in out])  # (a candidate may leave a key out: its default)
            bad |= out_of_range(k, np.where(bad, 0.0, arr)) & ~bad & given  # the key's own range
            if any(isinstance(v, bool) for v in vals):
                bad |= np.array([isinstance(v, bool) for v in vals])
        except (TypeError, ValueError):
            bad = np.array([not isinstance(v, (int, float, np.integer, np.floating)) for v in vals])
        if bad.any():
            i = int(np.argmax(bad))
            try:
                check_launch_info(out[i], "launch_info")
            except LaunchInfoError as e:
                raise SpecError(f"{e} (for {dict(consts[i])})") from None
            raise SpecError(f"launch_info: {k!r} is {vals[i]!r} for {dict(consts[i])}")
    return out


def _info_columns(
    spec: KernelSpec,
    kept: Space,
    rows: np.ndarray,
    extras: Sequence[Mapping[str, int]],
    layouts: Sequence[Any],
    shape: tuple,
    dtype: str,
) -> dict[str, np.ndarray]:
    """The launch info of the rows then the extras, as ``predict.info_columns``: ``launch_info_batch``
    over the rows' columns where the spec has it (checked as ``_launch_infos`` checks), else
    ``launch_info`` one candidate at a time."""
    batch = getattr(spec, "launch_info_batch", None)
    if not callable(batch) or not len(rows):
        consts = [kept.constants(i) for i in rows.tolist()] + [dict(c) for c in extras]
        return info_columns(_launch_infos(spec, consts, layouts, shape, dtype))
    got = batch({k: v[rows] for k, v in kept.cols.items()}, shape, dtype)
    if not isinstance(got, Mapping):
        raise SpecError(f"launch_info_batch: returned {type(got).__name__}; return a dict of arrays")
    first = {k: np.asarray(v)[0].item() for k, v in got.items()}
    try:
        check_launch_info(first, "launch_info_batch")
    except LaunchInfoError as e:
        raise SpecError(f"{e} (for {kept.constants(int(rows[0]))})") from None
    cols = {}
    for k, v in got.items():
        arr = np.asarray(v)
        if arr.shape != rows.shape or arr.dtype.kind not in "iuf":
            raise SpecError(
                f"launch_info_batch: {k!r} is {arr.dtype} of shape {arr.shape}; want {len(rows)} numbers"
            )
        arr = arr.astype(np.float64)
        bad = ~np.isfinite(arr) | (arr < 0)
        bad |= out_of_range(k, np.where(bad, 0.0, arr)) & ~bad  # the key's own range, every candidate's
        if bad.any():
            j = int(np.argmax(bad))
            try:  # worded as check_launch_info words it, where the value breaks a key's own range
                check_launch_info({**first, k: float(arr[j])}, "launch_info_batch")
            except LaunchInfoError as e:
                raise SpecError(f"{e} (for {kept.constants(int(rows[j]))})") from None
            raise SpecError(f"launch_info_batch: {k!r} is {arr[j]!r} for {kept.constants(int(rows[j]))}")
        cols[k] = arr
    if "smem_bytes" not in cols:  # the layout's footprint, as ``_launch_infos`` defaults it
        foot = _PerLayout(lambda lay: float(getattr(lay, "footprint", 0)))
        cols["smem_bytes"] = np.array([foot.of(lay) for lay in layouts[: len(rows)]], dtype=np.float64)
    out = info_columns(cols)
    if extras:
        rest = info_columns(
            _launch_infos(spec, [dict(c) for c in extras], layouts[len(rows) :], shape, dtype)
        )
        out = {k: np.concatenate([out[k], rest[k]]) for k in out}
    return out


def _traffic(spec: KernelSpec, shape: tuple, dtype: str) -> dict[str, float]:
    try:
        return check_traffic(spec.traffic(shape, dtype), "traffic")
    except LaunchInfoError as e:
        raise SpecError(str(e)) from None
