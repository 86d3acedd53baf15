"""Tests for the model's backends (autopad/model_backend.py): numba and the numpy fallback agree exactly,
numba loads lazily, and ``AUTOPAD_MODEL_BACKEND`` is checked.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_model_addresses import GOOD

import autopad
from autopad import analyze, analyze_batch


def test_unknown_backend_setting_is_named(monkeypatch):
    monkeypatch.setenv("AUTOPAD_MODEL_BACKEND", "gpu")
    with pytest.raises(ValueError, match=r"^AUTOPAD_MODEL_BACKEND:.*numpy"):
        analyze(GOOD)


# ---------------------------------------------------------------------------------------------------------
# (g) Two backends, one answer: numba and the numpy fallback agree exactly
# ---------------------------------------------------------------------------------------------------------

ALL_FORMS = [(o, w) for o in ("load", "store") for w in autopad.model.WIDTHS]
ALL_FORMS += [("atomic", 4), ("atomic", 8), ("cp.async", 4), ("cp.async", 8), ("cp.async", 16)]
ALL_FORMS += [(f"{m}.x{k}", 16) for m in ("ldmatrix", "stmatrix") for k in (1, 2, 4)]


def _random_batch(rng: np.random.Generator, n: int, op: str, width: int) -> np.ndarray:
    """Aligned addresses over small and large spans, with lane pairs, broadcasts, strides, inactive lanes
    (none for ldmatrix/stmatrix among the lanes that take part) and a few rows of large addresses."""
    span = rng.choice([128, 512, 4096, 49152, 1 << 20], size=n)
    addr = (rng.integers(0, 1 << 40, size=(n, 32)) % (span[:, None] // width)) * width
    kind = rng.integers(0, 6, size=n)
    addr[kind == 1] = addr[kind == 1][:, np.arange(32) & ~1]  # lanes n, n^1 share an address
    addr[kind == 2] = addr[kind == 2][:, np.arange(32) & ~2]  # lanes n, n^2 share an address
    addr[kind == 3] = addr[kind == 3][:, :1]  # broadcast
    stride = rng.integers(0, 80, size=(n, 1)) * width
    addr[kind == 4] = (stride * np.arange(32))[kind == 4]
    if "matrix" in op:
        used = 8 * int(op[-1])
        addr[:, used:][rng.random((n, 32 - used)) < 0.3] = -1  # ignored lanes may hold anything valid
    else:
        off = rng.random((n, 32)) < rng.choice([0.0, 0.1, 0.5], size=(n, 1))
        addr[off] = -1
    return addr


def _with_backend(name: str, fn):
    import os

    old = os.environ.get("AUTOPAD_MODEL_BACKEND")
    os.environ["AUTOPAD_MODEL_BACKEND"] = name
    try:
        return fn()
    finally:
        if old is None:
            os.environ.pop("AUTOPAD_MODEL_BACKEND", None)
        else:
            os.environ["AUTOPAD_MODEL_BACKEND"] = old


@pytest.mark.parametrize("op,width", ALL_FORMS)
def test_backends_agree_in_bulk(op, width):
    """40,000 random instructions per form (several threaded parts), both backends, exactly equal."""
    pytest.importorskip("numba")
    rng = np.random.default_rng(hash((op, width)) % 2**32)
    addr = _random_batch(rng, 40_000, op, width)
    fast = _with_backend("numba", lambda: analyze_batch(addr, width, op))
    slow = _with_backend("numpy", lambda: analyze_batch(addr, width, op))
    assert _with_backend("numba", lambda: autopad.model.backend()) == "numba"
    np.testing.assert_array_equal(fast[0], slow[0])
    np.testing.assert_array_equal(fast[1], slow[1])
    unchecked = _with_backend("numba", lambda: analyze_batch(addr, width, op, validate=False))
    np.testing.assert_array_equal(unchecked[0], fast[0])


@given(st.sampled_from(ALL_FORMS), st.integers(0, 2**32 - 1), st.integers(1, 40))
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_backends_agree_on_random_input(form, seed, n):
    pytest.importorskip("numba")
    op, width = form
    addr = _random_batch(np.random.default_rng(seed), n, op, width)
    fast = _with_backend("numba", lambda: analyze_batch(addr, width, op))
    slow = _with_backend("numpy", lambda: analyze_batch(addr, width, op))
    assert fast[0].tolist() == slow[0].tolist() and fast[1].tolist() == slow[1].tolist()
    row = [None if a < 0 else int(a) for a in addr[0]]
    assert _with_backend("numba", lambda: analyze(row, width, op)) == _with_backend(
        "numpy", lambda: analyze(row, width, op)
    )


def test_addresses_beyond_2_29_take_the_numpy_path_with_the_same_answer():
    """The compiled kernel packs a lane into an int32 key; larger addresses (legal up to 2**32) are counted
    by numpy, with the same rules."""
    pytest.importorskip("numba")
    base = np.arange(32, dtype=np.int64) * 33 * 4
    addr = np.stack([base, base + (3 << 30), base * 8 + (1 << 31)])
    got = _with_backend("numba", lambda: analyze_batch(addr))
    assert got[0].tolist() == [1, 1, 8] and got[1].tolist() == [1, 1, 1]


def test_import_autopad_loads_no_numba_and_backend_does():
    """numba loads lazily: not at import, not for a first small batch (numpy scores it, see the next
    section), but as soon as ``backend()`` or a large batch asks for it."""
    pytest.importorskip("numba")
    code = (
        "import sys, autopad; assert 'numba' not in sys.modules, 'import autopad loaded numba'; "
        "autopad.analyze([4 * n for n in range(32)]); assert 'numba' not in sys.modules; "
        "print(autopad.model.backend(), 'numba' in sys.modules)"
    )
    assert _fresh_python(code).split() == ["numba", "True"]
    code = code.replace(
        "print(autopad.model.backend(), 'numba' in sys.modules)", "print('numba' in sys.modules)"
    )
    out = _fresh_python(code, AUTOPAD_MODEL_BACKEND="numpy")
    assert out.split() == ["False"], "AUTOPAD_MODEL_BACKEND=numpy never loads numba"


def _fresh_python(code: str, **env: str) -> str:
    """stdout of ``code`` in a new interpreter, AUTOPAD_MODEL_BACKEND unset unless given; it must exit 0."""
    import os
    import subprocess
    import sys

    full = {k: v for k, v in os.environ.items() if k != "AUTOPAD_MODEL_BACKEND"} | env
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(
    "geometry",
    [
        {"banks": 16},  # 16 banks of 4 bytes: 4-byte phases of 16 lanes, 16-byte phases of 4 (numpy)
        {"banks": 32, "bank_bytes": 8},  # 8-byte banks: 256-byte phases
        {"banks": 64},  # 64 banks, 32 lanes: more unit-banks than the kernel packs (numpy)
        {"merge_paired_loads": False},
    ],
)
def test_backends_agree_on_other_32_lane_geometries(geometry):
    """Custom profiles go through the compiled kernel where it serves them and numpy elsewhere; the numbers
    are the same either way."""
    pytest.importorskip("numba")
    arch = autopad.Arch(name="toy", description="toy", status="unvalidated", **geometry)
    rng = np.random.default_rng(5)
    for op, width in [("load", 4), ("load", 8), ("load", 16), ("store", 2), ("atomic", 4), ("cp.async", 16)]:
        if "bank_bytes" in geometry and width < 8 and op == "atomic":
            continue
        addr = _random_batch(rng, 3000, op, width)
        fast = _with_backend("numba", lambda: analyze_batch(addr, width, op, arch))  # noqa: B023
        slow = _with_backend("numpy", lambda: analyze_batch(addr, width, op, arch))  # noqa: B023
        assert fast[0].tolist() == slow[0].tolist() and fast[1].tolist() == slow[1].tolist(), (op, width)


def test_auto_scores_a_small_first_batch_with_numpy_and_loads_numba_for_more():
    """Loading numba costs more than numpy's first NUMPY_FIRST instructions: ``auto`` waits for them."""
    pytest.importorskip("numba")
    code = (
        "import sys, numpy as np, autopad; from autopad import model\n"
        "a = np.tile(np.arange(32) * 4, (1000, 1)); small = model.analyze_batch(a)\n"
        "print('numba' in sys.modules)\n"
        "big = model.analyze_batch(np.tile(a, (model.NUMPY_FIRST // 1000, 1)))\n"
        "print('numba' in sys.modules, (big[0][:1000] == small[0]).all())\n"
    )
    assert _fresh_python(code).split() == ["False", "True", "True"]
