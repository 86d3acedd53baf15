"""The model's backend choice and drivers: numba once loaded, numpy before that (or when asked).

Split from model.py (one concern a module): ``_run`` takes a converted batch and a rule and returns
wavefronts, ideal and (for ``analyze``) per-phase costs, on the fastest backend that serves the rule;
``_run_numpy`` and ``_run_numba`` cut the batch into parts that run on every core (``_in_parts``); the
cp.async rules' compiled kernels run theirs the same way, all on plain threads (``_on_every_core``, moved
here from model_cp_async_cg.py on 2026-12-06; the thread pool ``_in_parts`` made per call went with it).

Backends: a numba kernel (_model_numba.py: one pass per instruction, all cores) when numba imports, else
model_numpy.py's numpy code (each phase a row, one sort per row, running sums count distinct words per bank;
atomics, which never broadcast, one bincount of lanes per bank).
Both give identical numbers; ``AUTOPAD_MODEL_BACKEND=numpy`` forces numpy, ``=numba`` requires numba.
numba loads lazily, never at ``import autopad``: under the default ``auto`` a process scores its first
``NUMPY_FIRST`` instructions with numpy and loads numba only when it needs more. Loading numba and its cached
kernel takes 0.6-0.8 s on this project's 2-core machine, in which numpy scores about 500,000 instructions,
so a process that ranks one space (a few tens of thousands of distinct instructions) never pays for it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import lru_cache

import numpy as np

from .arch import Arch, get_arch
from .model_addresses import _address_error, _check_numpy
from .model_numpy import _numpy_costs
from .model_rules import ADDRESS_LIMIT, _Rule, _rule

__all__ = ["NUMPY_FIRST", "backend"]

_CHUNK = 1 << 15  # numpy: instructions per vectorised block (bounds memory at a few tens of MB)
_NUMBA_CHUNK = 1 << 14  # numba: fewest instructions worth a thread of their own

_NUMBA: list = []  # [module or None, why not]: filled when numba is first needed
# instructions the ``auto`` backend scores with numpy before it loads numba: about what numpy does in the
# time numba takes to load (see the module docstring); both backends give identical numbers
NUMPY_FIRST = 300_000
_NUMPY_DONE = [0]  # instructions numpy has scored under ``auto`` while numba was not loaded


def _choice() -> str:
    """AUTOPAD_MODEL_BACKEND, checked: "auto" (unset or empty), "numba" or "numpy"."""
    choice = os.environ.get("AUTOPAD_MODEL_BACKEND", "auto").strip().lower() or "auto"
    if choice not in ("auto", "numba", "numpy"):
        raise ValueError(f"AUTOPAD_MODEL_BACKEND: {choice!r} is not one of auto, numba, numpy")
    return choice


# batches this large or larger go to a cp.async rule's own compiled kernel (_model_numba_cg.py,
# _model_numba_ca.py) where numba loads: importing numba and loading the cached kernel took 0.2-0.25 s on the
# 2-core machine, what those rules' numpy paths spend on about 50,000 instructions
RULE_NUMPY_BELOW = 20_000


def compiled_wanted(n: int, numpy_below: int = RULE_NUMPY_BELOW) -> bool:
    """Whether a batch of ``n`` should take a rule's own compiled kernel: ``AUTOPAD_MODEL_BACKEND=numba``
    (numba must load: an error if it does not), or ``auto`` with ``n >= numpy_below`` and numba loading."""
    if _choice() == "auto" and n < numpy_below:
        return False
    return _numba_module() is not None


def _numba_module():
    """_model_numba, or None (numba missing, or AUTOPAD_MODEL_BACKEND=numpy)."""
    choice = _choice()
    if choice == "numpy":
        return None
    if not _NUMBA:
        try:
            from . import _model_numba
        except Exception as exc:  # numba missing, or too old/new for this numpy
            _NUMBA[:] = [None, f"{type(exc).__name__}: {exc}"]
        else:
            _NUMBA[:] = [_model_numba, ""]
    if _NUMBA[0] is None and choice == "numba":
        raise RuntimeError(f"AUTOPAD_MODEL_BACKEND=numba, but numba does not load ({_NUMBA[1]})")
    return _NUMBA[0]


def backend(arch: str | Arch = "sm_90") -> str:
    """Which backend analyze_batch uses now for ``arch``: "numba" or "numpy" (loads numba if needed)."""
    a = get_arch(arch)
    mod = _numba_module()
    return "numba" if mod is not None and _compiled_fits(_rule("load", 16, a), a, mod) else "numpy"


def _compiled_fits(rule: _Rule, arch: Arch, mod) -> bool:
    """The kernel serves 32-lane warps, phases of 8/16/32 lanes, at most 32 power-of-two unit-banks."""
    lanes = {rule.lanes, rule.lanes * 2} if rule.merge else {rule.lanes}
    pow2 = rule.unit_banks & (rule.unit_banks - 1) == 0 and rule.unit & (rule.unit - 1) == 0
    return arch.warp_size == 32 and lanes <= set(mod.SUPPORTED_LANES) and pow2 and rule.unit_banks <= 32


@lru_cache(maxsize=1)
def _threads() -> int:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(8, cores))


def _run(arr: np.ndarray, rule: _Rule, arch: Arch, check: bool, phases: bool):
    """(wavefronts, ideal, per-phase costs or None) of a converted batch, on the fastest backend: numba
    once loaded; before that, numpy while this process's numpy work stays under ``NUMPY_FIRST`` (atomics,
    counted without a sort, do not draw on it)."""
    if not _NUMBA and os.environ.get("AUTOPAD_MODEL_BACKEND", "auto").strip().lower() in ("", "auto"):
        if not rule.broadcast and not rule.merge:  # counted without a sort (_count_costs): no budget
            return _run_numpy(arr, rule, check, phases)
        if _NUMPY_DONE[0] + arr.shape[0] <= NUMPY_FIRST:
            _NUMPY_DONE[0] += arr.shape[0]
            return _run_numpy(arr, rule, check, phases)
    mod = _numba_module()
    if mod is not None and _compiled_fits(rule, arch, mod):
        return _run_numba(mod, arr, rule, arch, check, phases)
    return _run_numpy(arr, rule, check, phases)


def _run_numpy(arr: np.ndarray, rule: _Rule, check: bool, phases: bool):
    n = arr.shape[0]
    if check:
        _check_numpy(arr, rule)
    wave, ideal = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    costs = np.zeros((n, max(1, rule.used // rule.lanes)), dtype=np.int64) if phases else None

    def run(start: int) -> None:
        sl = slice(start, start + _CHUNK)
        cost = _numpy_costs(arr[sl], rule)
        wave[sl], ideal[sl] = cost.sum(axis=1), (cost > 0).sum(axis=1)
        if costs is not None:
            costs[sl] = cost

    starts = range(0, n, _CHUNK)
    if len(starts) < 4 or not rule.broadcast:  # atomics are counted, not sorted: no thread pays for itself
        for s in starts:
            run(s)
    else:  # numpy's sorts and ufuncs release the GIL, so chunks run in parallel on every core
        _on_every_core(len(starts), lambda i: run(starts[i]))
    return wave, ideal, costs


def _run_numba(mod, arr: np.ndarray, rule: _Rule, arch: Arch, check: bool, phases: bool):
    arr = np.ascontiguousarray(arr, dtype=np.int64)  # the kernel's type (analyze_distinct's may be int32)
    n = arr.shape[0]
    params = np.array(
        [
            rule.unit.bit_length() - 1,  # log2(unit): address >> this = unit number
            rule.unit_banks.bit_length() - 1,  # log2(unit-banks): unit & (unit_banks - 1) = its unit-bank
            rule.lanes,
            rule.used,
            rule.merge,
            not rule.broadcast,
            rule.need_all,
            rule.width - 1,  # alignment mask
            ADDRESS_LIMIT,
            check,
        ],
        dtype=np.int64,
    )
    net = mod.network(rule.lanes * 2 if rule.merge else rule.lanes)  # a merged phase sorts as one
    wave, ideal = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    costs = np.zeros((n, 32 // rule.lanes) if phases else (0, 0), dtype=np.int64)
    errs = np.zeros((_parts(n), 3), dtype=np.int64)

    def run(i: int, lo: int, hi: int) -> int:
        c = costs[lo:hi] if phases else costs
        got = mod.analyze_rows(arr[lo:hi], net, params, wave[lo:hi], ideal[lo:hi], c, errs[i])
        if got >= 0:
            errs[i, 0] += lo
        return int(got)

    answers = _in_parts(n, run)
    if mod.NEED_NUMPY in answers:  # an address of 2**29 or more: numpy counts it (and checks everything)
        return _run_numpy(arr, rule, check, phases)
    for i, got in enumerate(answers):  # parts are in order: the first failing part has the first bad row
        if got >= 0:
            row, lane, code = (int(v) for v in errs[i])
            raise ValueError(_address_error(row, lane, int(arr[row, lane]), code, rule, n))
    return wave, ideal, (costs[:, : max(1, rule.used // rule.lanes)] if phases else None)


def _parts(n: int) -> int:
    """How many contiguous parts a compiled kernel's batch of ``n`` runs in: a few per core (they balance a
    busy machine), none under ``_NUMBA_CHUNK`` instructions."""
    return max(1, min(4 * _threads(), n // _NUMBA_CHUNK))


def _in_parts(n: int, run) -> list:
    """``run(i, lo, hi)`` over the ``_parts(n)`` contiguous parts of ``range(n)``, on every core where there
    are several (the compiled kernels release the GIL); the answers in part order."""
    parts = _parts(n)
    answers: list = [None] * parts

    def one(i: int) -> None:
        answers[i] = run(i, n * i // parts, n * (i + 1) // parts)

    _on_every_core(parts, one)  # (plain threads: a pool made per call cost 0.7-0.9 ms)
    return answers


def _on_every_core(parts: int, run: Callable[[int], None]) -> None:
    """``run(p)`` for every part ``p`` below ``parts``, taken in turn by ``min(_threads(), parts)`` threads
    in all, this one included. Plain threads, not a ThreadPoolExecutor: making and closing such a pool took
    0.7-0.9 ms a call on the 2-core machine, a tenth of a 100,000-instruction batch at 10 million a second;
    a thread takes about 0.2 ms. An exception in any part is raised here, after every thread has stopped.
    ``_in_parts`` (the plain rule's compiled and numpy drivers) and the cp.async rules' wrappers
    (model_cp_async.py, model_cp_async_cg.py) run on it."""
    helpers = min(_threads(), parts) - 1
    if helpers <= 0:
        for p in range(parts):
            run(p)
        return
    import threading  # here: most processes never need threads

    lock = threading.Lock()
    todo = list(range(parts - 1, -1, -1))  # popped from the end: parts in order, each taken once
    errors: list[BaseException] = []

    def work() -> None:
        while True:
            with lock:
                if not todo or errors:
                    return
                p = todo.pop()
            try:
                run(p)
            except BaseException as exc:  # raised by the caller's thread below
                errors.append(exc)
                return

    threads = [threading.Thread(target=work, daemon=True) for _ in range(helpers)]
    for t in threads:
        t.start()
    work()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
