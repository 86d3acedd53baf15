"""The tune report of the command line: which backend and why, the candidates with the predictor's terms,
the pick, how far a model-only answer can be trusted; as text or as a JSON-ready dict.

Why a module of its own: ``TuneResult.table`` is the library's one-screen summary; the CLI also has to say
why ``auto`` chose its backend, show each candidate's predicted time term by term (``--verbose``), list
only what a cache hit stored (so that printing a hit never re-ranks thousands of candidates), and give
``--json`` the same content as the text.

The predicted time of a candidate is the largest of its six stream terms plus ``overlap`` (0.195, fitted
in predict.py) times the sum of the others, each term the time one stream would take alone: DRAM bytes,
L2 bytes, shared-memory wavefronts (bank conflicts multiply these), arithmetic, issue slots, per-tile
overheads; plus ``serial``, what overlaps none of them (a block's final flush, launches after the
first); ``mem_efficiency``, ``wave_factor`` and ``resident_blocks`` are what scaled them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

__all__ = [
    "TERMS",
    "backend_line",
    "shown",
    "format_terms",
    "report_text",
    "report_dict",
    "safe_text",
    "trust_statement",
]

# seconds, in Prediction.terms
TERMS = ("dram_s", "l2_s", "smem_s", "flops_s", "issue_s", "tiles_s", "serial_s")


def backend_line(kernel: str, asked: str, chosen: str, dtype: str, source: str | None = None) -> str:
    """The report's first line: the kernel, the backend it runs on, and why that one."""
    if source is not None:
        return f"kernel: {kernel} [{chosen}] from {source}"
    if asked != "auto":
        return f"backend: {chosen} (asked for with --backend {asked})"
    from .kernels_registry import auto_backend

    _, why = auto_backend(kernel, dtype)
    why = re.sub(r"backend='(\w+)'", r"--backend \1", why)
    return f"backend: {chosen} (--backend auto: {why})"


def shown(candidates: Sequence[Any], best: dict[str, int], limit: int | None) -> tuple[list[Any], int]:
    """The candidates a report lists: every measured one, every baseline and the pick, and the ``limit``
    best-predicted others (``None``: all); returns them in ranking order and how many were left out."""
    out, others, hidden = [], 0, 0
    for c in candidates:
        if c.measurement is not None or c.roles or c.constants == best:
            out.append(c)
        elif limit is None or others < limit:
            out.append(c)
            others += 1
        else:
            hidden += 1
    return out, hidden


def format_terms(prediction: Any) -> str:
    """One line of a candidate's predicted terms in microseconds and what scaled them."""
    t = dict(prediction.terms)
    if not t:
        return "(no terms recorded)"
    parts = [f"{k[:-2]} {t[k] * 1e6:.3g}" for k in TERMS if k in t]
    bound = getattr(prediction, "bound", "")
    extra = []
    if "mem_efficiency" in t:
        extra.append(f"mem eff {t['mem_efficiency']:.2f}")
    if "wave_factor" in t:
        extra.append(f"waves x{t['wave_factor']:.2f}")
    if "resident_blocks" in t:
        extra.append(f"{t['resident_blocks']:g} blocks/SM")
    extra.append(f"occupancy {prediction.occupancy:.2f}")
    if _queued(prediction.seconds, t):
        extra.append("queued: its blocks run their phases in turn, so the streams do not add as above")
    return f"us: {'  '.join(parts)}  (bound: {bound}; {', '.join(extra)})"


def _queued(seconds: float, t: dict[str, float]) -> bool:
    """Did the predictor combine these streams as a queue of resident blocks (a spec's ``serial_phases``, or
    ``latency_phases`` where the queue outweighed the streams)?
    The terms do not record it; the sum rule's answer from them differs from the prediction where it did."""
    streams = [t[k] for k in TERMS if k in t and k != "serial_s"]
    if not streams:
        return False
    top = max(streams)
    summed = top + _overlap() * (sum(streams) - top) + t.get("serial_s", 0.0)
    return abs(seconds - summed) > 1e-6 * max(seconds, 1e-12)


def _overlap() -> float:
    from .predict import CONSTANTS

    return CONSTANTS.overlap


def report_text(
    res: Any,
    candidates: Sequence[Any],
    *,
    first_line: str = "",
    hidden: int | None = 0,
    verbose: bool = False,
    trust: str | None = None,
) -> str:
    """The CLI's tune report: ``first_line``, the result's header, ``candidates`` (from ``shown``) and
    the pick; ``hidden`` is how many were left out (None: unknown, as on a cache hit)."""
    head = (
        f"{res.kernel} [{res.backend}] shape={'x'.join(map(str, res.shape))} dtype={res.dtype}"
        + (f" dist={res.dist}" if res.dist else "")
        + f" arch={res.arch} mode={res.mode}"
    )
    dev = f"device: {res.device.get('name', 'none')}" + (
        f" (sm_{res.device['cc']})" if res.device.get("cc") else ""
    )
    lines = [first_line] if first_line else []
    lines += [head, dev, res.message]
    if res.cache_hit:
        when = res.environment.get("date", "")
        ms = f" in {res.lookup_ms:.1f} ms" if res.lookup_ms is not None else ""
        lines.append(f"cache hit{ms}: the result of the tune of {when}")
    if verbose:
        lines.append(
            f"predicted = the largest stream + {_overlap():g} x the other streams + serial; terms are each "
            "stream's time alone (serial: a block's final flush, launches after the first); a candidate "
            "marked 'queued' combines them as a queue of the SM's resident blocks instead"
        )
    lines += ["", f"  {'layout':40} {'conf':>5} {'pred us':>9} {'meas us':>9} {'+-':>7}  constants / note"]
    for c in candidates:
        m = c.measurement
        meas = f"{m.ms * 1e3:9.1f}" if m is not None and m.ms is not None else f"{'-':>9}"
        spread = f"{m.spread_ms * 1e3:7.1f}" if m is not None and m.spread_ms is not None else f"{'':>7}"
        note = [f"[{'/'.join(c.roles)}]"] if c.roles else []
        note += ["[cached]"] if c.cached else []
        note += [f"FAILED {m.error}"] if m is not None and not m.correct else []
        star = "*" if c.constants == res.best.constants else " "
        p = c.prediction
        lines.append(
            f"{star} {c.layout[:40]:40} {p.conflict_degree:5.2f} {p.seconds * 1e6:9.1f} "
            f"{meas} {spread}  {c.key} {' '.join(note)}".rstrip()
        )
        if verbose:
            lines.append(f"      {format_terms(c.prediction)}")
    if hidden is None:
        lines.append("  ... the others, ranked lower by the model, are not cached (--all re-ranks them)")
    elif hidden:
        lines.append(
            f"  ... and {hidden} more legal candidates, ranked lower by the model (--all lists them)"
        )
    lines += ["", f"pick: {res.best.layout}  {_constants_text(res.best.constants)}"]
    if trust:
        lines.append(f"trust: {trust}")
    return "\n".join(safe_text(line) for line in lines)


def safe_text(text: str) -> str:
    """``text`` with every unprintable character escaped, so that a string read from a cache or result file
    (a layout, a device name, an error) can never move the cursor or recolour the terminal."""
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in str(text))


def _constants_text(constants: dict[str, int]) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(constants.items()))


def _candidate_dict(c: Any) -> dict[str, Any]:
    m = c.measurement
    p = c.prediction
    return {
        "layout": c.layout,
        "constants": dict(c.constants),
        "roles": list(c.roles),
        "predicted_s": p.seconds,
        "bound": p.bound,
        "conflict_degree": p.conflict_degree,
        "terms": {k: v for k, v in p.terms},
        "occupancy": p.occupancy,
        "footprint": p.footprint,
        "measured_ms": None if m is None else m.ms,
        "spread_ms": None if m is None else m.spread_ms,
        "correct": None if m is None else m.correct,
        "error": None if m is None else m.error,
        "cached": c.cached,
    }


def report_dict(
    res: Any,
    candidates: Sequence[Any],
    *,
    backend: dict[str, Any],
    hidden: int | None = 0,
    trust: str | None = None,
) -> dict[str, Any]:
    """The report as a JSON-ready dict: what was tuned, how the backend was chosen, the pick, the listed
    candidates with their terms, and the trust statement of a model-only answer."""
    b = res.best
    return {
        "kernel": res.kernel,
        "backend": res.backend,
        "backend_choice": backend,
        "shape": list(res.shape),
        "dtype": res.dtype,
        "dist": res.dist,
        "arch": res.arch,
        "mode": res.mode,
        "message": res.message,
        "cache_hit": bool(res.cache_hit),
        "lookup_ms": res.lookup_ms,
        "device": dict(res.device),
        "best": {
            "layout": b.layout,
            "constants": dict(b.constants),
            "predicted_s": b.predicted,
            "measured_ms": b.measured,
            "extra": dict(b.extra),
        },
        "trust": trust,
        "candidates": [_candidate_dict(c) for c in candidates],
        "candidates_left_out": hidden,
    }


def trust_statement(res: Any) -> str | None:
    """How far a model-only ranking of this kernel can be trusted, or None (a measured result needs none).

    From autopad/trust.py (another engineer's: the recorded model-only figures per kernel family),
    ``trust.statement(kernel, backend, dtype, arch=...) -> str``. A missing or failing trust module never
    breaks a report: the statement is then simply absent.
    """
    if getattr(res, "mode", "") != "model-only":
        return None
    try:
        from . import trust  # type: ignore[attr-defined]
    except ImportError:
        return None
    fn = getattr(trust, "statement", None)
    if not callable(fn):
        return None
    try:
        try:  # the profile the answer was ranked with (an h100 answer reads the H100 rows ranked so)
            text = fn(res.kernel, res.backend, res.dtype, arch=getattr(res, "arch", "sm_90"))
        except TypeError:  # a trust module that takes no profile
            text = fn(res.kernel, res.backend, res.dtype)
    except Exception:  # the statement is a courtesy: never fail a tune report over it
        return None
    note = _shape_note(res)
    text = f"{text}; {note}" if text and note else text
    return " ".join(str(text).split()) if text else None


def _shape_note(res: Any) -> str | None:
    """A built-in spec's caveat for this shape (``trust_note(shape, dtype)``: a case its family's figures do
    not cover, such as the Gluon GEMM where TMA is refused), or None."""
    try:
        from .kernels_registry import builtin_spec

        spec = builtin_spec(res.kernel, res.backend)
        fn = getattr(spec, "trust_note", None)
        return fn(tuple(res.shape), res.dtype) if callable(fn) else None
    except Exception:  # a courtesy, as the statement is
        return None
