"""The kept space (autopad.space): the restricted product in product order, and what is kept between
rankings following the spec."""

from __future__ import annotations

import fake_kernel
from test_search import SHAPE, SPEC, _Hookless

from autopad.search import predict, rank
from autopad.spec import KernelSpec


def test_restricted_space_is_the_filtered_product_in_product_order():
    import itertools

    from autopad.expr import evaluate
    from autopad.space import restricted

    class S(_Hookless):
        SPACE = {"A": (3, 1, 2), "B": (0, 5, 7, 9), "C": (4, 8), "D": (1, 0)}
        DEFAULTS = None
        # the callable comes first at D's step (it sees the step's grid flattened), the text after it
        RESTRICTIONS = (
            "A + B > 2",
            lambda env: env["B"] != 5 * env["D"],
            "C % (A + 1) == 0 or D == 1",
            "E > 1",
        )

    spec = KernelSpec(S())
    names = sorted(S.SPACE)

    def kept(p: tuple) -> bool:
        env = {**dict(zip(names, p)), "E": 4}
        return all(bool(evaluate(r, env) if isinstance(r, str) else r(env)) for r in S.RESTRICTIONS)

    want = [p for p in itertools.product(*(S.SPACE[k] for k in names)) if kept(p)]
    assert 0 < len(want) < 48
    cols = restricted(spec, "float32")
    assert list(zip(*(cols[k].tolist() for k in names))) == want
    assert len(restricted(spec, "int8")["A"]) == 0  # E > 1 fails for 1-byte elements


def test_restricted_space_built_in_another_order_is_the_product_order():
    """Text restrictions only: the product is built with the most-read constants first (``_build_order``)
    and put back in product order; a restriction that divides by a value another restriction rules out
    sees those rows too, silently (no numpy warning), and the rows equal the filtered product's."""
    import itertools
    import warnings

    from autopad.space import _build_order, restricted

    class S(_Hookless):
        SPACE = {"A": (3, 1, 2, 0), "B": (0, 5, 7, 9), "C": (4, 8, 0), "D": (1, 0), "Z": (2, 1, 3)}
        DEFAULTS = None
        RESTRICTIONS = ("Z > 1 or D == 0", "D == 0 or C > 0", "C == 0 or B % C == 1", "A > 0 and B % A == 1")

    spec = KernelSpec(S())
    names = sorted(S.SPACE)
    needs = [{"Z", "D"}, {"D", "C"}, {"C", "B"}, {"A", "B"}]
    assert _build_order(names, needs, list(S.RESTRICTIONS), S.SPACE) != names

    def kept(p: tuple) -> bool:  # the restrictions, guarded: numpy's x % 0 is 0
        a, b, c, d, z = p
        return (z > 1 or d == 0) and (d == 0 or c > 0) and (c == 0 or b % c == 1) and (a > 0 and b % a == 1)

    want = [p for p in itertools.product(*(S.SPACE[k] for k in names)) if kept(p)]
    assert 0 < len(want)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cols = restricted(spec, "float32")
    assert list(zip(*(cols[k].tolist() for k in names))) == want


def test_kept_space_follows_a_changed_spec_function(monkeypatch):
    """What rank keeps between calls (layouts, scores) is keyed by the spec's functions: patching one is
    seen at once."""
    first = rank(SPEC, SHAPE, "float32")
    whole = fake_kernel.smem_pattern
    monkeypatch.setattr(fake_kernel, "smem_pattern", lambda c, d: whole(c, d)[:1])
    second = rank(KernelSpec(fake_kernel), SHAPE, "float32")
    assert [c.prediction for c in second] == [predict(SPEC, c.params, SHAPE, "float32") for c in second]
    assert sorted(c.prediction.wavefronts_per_tile for c in second) < sorted(
        c.prediction.wavefronts_per_tile for c in first
    )


def test_layouts_asked_once_per_combination_of_layout_reads():
    """A spec that names what its ``layout`` reads (``LAYOUT_READS``) is asked once per distinct
    combination of those constants; every row gets the layout its own constants give."""
    import numpy as np

    from autopad.kernels_registry import builtin_spec
    from autopad.space import Space, restricted

    for kernel, backend, dtype in [("transpose", "cuda", "float16"), ("transpose", "triton", "float32")]:
        spec = builtin_spec(kernel, backend)
        assert spec.LAYOUT_READS
        kept = Space(restricted(spec, dtype))
        rows = np.flatnonzero(kept.legal(spec, (4096, 4096), dtype))
        got = kept.layouts(spec, rows[::2], dtype) and kept.layouts(spec, rows, dtype)  # kept, then the rest
        assert got == [spec.layout(kept.constants(i), dtype) for i in rows.tolist()]

    asked = []

    class S(_Hookless):
        LAYOUT_READS = ("TILE", "PAD")

        @staticmethod
        def layout(c, dtype):
            asked.append(dict(c))
            return fake_kernel.layout(c, dtype)

    spec = KernelSpec(S())
    kept = Space(restricted(spec, "float32"))
    lays = kept.layouts(spec, np.arange(kept.n), "float32")
    pairs = {(c["TILE"], c["PAD"]) for c in map(kept.constants, range(kept.n))}
    assert len(asked) == len(pairs) < kept.n
    assert lays == [fake_kernel.layout(kept.constants(i), "float32") for i in range(kept.n)]


def test_column_values_without_a_sort_equal_np_unique():
    """``Space`` reads each column's values and every row's value index by marks over the column's range
    (``_values``), as ``np.unique(..., return_inverse=True)`` gives them, wide ranges by np.unique itself."""
    import numpy as np

    from autopad.space import _values

    rng = np.random.default_rng(3)
    for col in (rng.integers(-5, 100, 1000), np.full(5, 7), rng.integers(0, 1 << 40, 100), np.zeros(0, int)):
        got, want = _values(col), np.unique(col, return_inverse=True)
        assert got[0].tolist() == want[0].tolist() and got[1].ravel().tolist() == want[1].ravel().tolist()


def test_distinct_combinations_equal_np_unique_of_the_row_codes():
    """The batch hooks' distinct rows (``spec.distinct_combinations``): by a table of the columns' value
    ranks where their combinations are few, else ``np.unique`` of the row codes; the same first rows,
    order and index either way, bool and wide-ranged columns included."""
    import numpy as np

    from autopad.spec import distinct_combinations, row_codes

    rng = np.random.default_rng(4)
    n = 5000
    few = [rng.choice([32, 64, 128], n), rng.choice([1, 2, 4, 8, 16], n), rng.random(n) < 0.3]
    wide = [*few, rng.integers(0, 1 << 40, n) // (1 << 35) * (1 << 35)]  # 32 values 2**35 apart
    many = [rng.integers(0, 1000, n), rng.integers(0, 1000, n)]  # a million combinations: np.unique
    for cols in (few, wide, many, few[:1]):
        _, want_first, want_index = np.unique(row_codes(cols, n), return_index=True, return_inverse=True)
        first, index = distinct_combinations(cols, n)
        assert first.tolist() == want_first.tolist() and index.tolist() == want_index.ravel().tolist()
    assert len(distinct_combinations(few, n)[0]) == 30
