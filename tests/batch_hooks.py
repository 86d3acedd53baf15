"""What the spec tests hold a spec's batch hooks to: ``legal_batch`` and ``launch_info_batch`` (what
``search.rank`` calls over the whole space) give ``legal``'s and ``launch_info``'s answers for every candidate
the restrictions keep."""

from __future__ import annotations

import numpy as np


def hooks_agree(spec, module, dtype, shapes, every=500, shared_keys=True):
    """Checks every candidate's legality and about ``every`` candidates' launch info per shape; with
    ``shared_keys`` only the keys the batch hook returns are compared (a hook may drop keys the predictor
    does not read), else every key of ``launch_info``. Returns the restricted columns."""
    from autopad.space import restricted

    cols = restricted(spec, dtype)
    names = sorted(cols)
    rows = [dict(zip(names, v)) for v in zip(*(cols[k].tolist() for k in names))]
    for shape in shapes:
        fast = module.legal_batch(dict(cols), shape, dtype)
        slow = np.array([bool(module.legal(c, shape, dtype)) for c in rows])
        assert (fast == slow).all(), (shape, int((fast != slow).sum()))
        ok = np.flatnonzero(slow)
        got = module.launch_info_batch({k: v[ok] for k, v in cols.items()}, shape, dtype)
        for j in range(0, len(ok), max(1, len(ok) // every)):
            want = module.launch_info(rows[ok[j]], shape, dtype)
            if shared_keys:
                want = {k: v for k, v in want.items() if k in got}
            assert {k: got[k][j] for k in want} == want, (shape, rows[ok[j]])
    return cols
