"""What the predictor reads off the candidates' layouts: the share of a candidate's tiles that are
XOR-swizzled (``_swizzled``: their index arithmetic costs issue slots) and the bytes a tile holds
(``_data_bytes``: padding takes shared memory but carries no data in flight).

Each question is asked once per distinct layout object (``_Distinct``, ``_per_layout``): a ranked space
holds tens of thousands of candidates but a few hundred layout objects.

Why a module of its own: these are questions to the layout objects, answered per distinct object, apart
from the per-candidate array arithmetic of the model (predict.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__: list[str] = []  # autopad.predict imports the underscored names below


def _swizzled(layouts: Sequence[Any] | None, n: int) -> np.ndarray:
    """The share of a candidate's tiles that are XOR-swizzled: their index arithmetic costs a shift, mask
    and XOR per access more than a padded tile's multiply-add. A layout of several operand tiles (the SIMT
    GEMM's A and B, attributes ``a`` and ``b``) counts each tile as a share."""
    if layouts is None:
        return np.zeros(n)

    out = np.zeros(n)
    out[: len(layouts)] = _per_layout(layouts, _swizzled_share)
    return out


def _swizzled_share(lay: Any) -> float:
    """``_swizzled``'s share for one layout."""
    parts = [getattr(lay, x) for x in ("a", "b") if hasattr(lay, x)] or [lay]
    return sum(int(getattr(p, "max_phase", 1) or 1) > 1 for p in parts) / len(parts)


class _Distinct(list):
    """A list of layouts with its distinct objects (``objs``) and each entry's index into them (``at``),
    found once (``_distinct``): ``predict_arrays`` asks two questions of every layout, and a ranked space
    holds tens of thousands of candidates but a few hundred layout objects."""

    objs: list[Any]
    at: np.ndarray


def _per_layout(layouts: Sequence[Any], fn: Any) -> np.ndarray:
    """``fn(layout)`` for each of ``layouts`` as a float array, computed once per distinct layout object
    (``layouts`` may be a ``_Distinct``, which finds them once for every question asked)."""
    if not isinstance(layouts, _Distinct):
        layouts = _distinct(layouts)
    return np.array([fn(lay) for lay in layouts.objs], dtype=np.float64)[layouts.at]


def _distinct(layouts: Sequence[Any]) -> _Distinct:
    """``layouts`` as a ``_Distinct``: its distinct objects (by identity) in order of first appearance."""
    out = _Distinct(layouts)
    ids = list(map(id, layouts))
    objs = dict(zip(ids, layouts))  # (each id's object, in order of first appearance)
    number = dict(zip(objs, range(len(objs))))
    out.objs = list(objs.values())
    out.at = np.fromiter(map(number.__getitem__, ids), dtype=np.int64, count=len(ids))
    return out


def _data_bytes(lay: Any) -> float:
    """The bytes a tile layout holds (rows x cols x element), nan for any other layout."""
    if all(isinstance(getattr(lay, f, None), int) for f in ("rows", "cols", "elem_bytes")):
        return float(lay.rows * lay.cols * lay.elem_bytes)
    return np.nan
