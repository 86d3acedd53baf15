"""One header for several devices' results of one kernel, in which host and device code never disagree.

Device code (``__CUDA_ARCH__``) gets the block of the highest tuned compute capability at or below its
architecture; host code gets a macro only where every block agrees, and ``config_for_cc`` for the rest; a
macro that differs is a compile error in host code, and in C++14 the header checks itself. Errors name the
result files (``sources``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..files import write_file
from ..results import TuneResult
from .escaping import _INT32, _comment, device_macro, header_prefix
from .facts import _cc, _constants, _describe, _device, _gpu, _version
from .header import _FN, _block, _cute_typedef, _define, _fields, _guard, _Macro, _table


def _label(i: int, r: TuneResult, sources: Sequence[str] | None) -> str:
    where = f"{sources[i]}" if sources is not None and i < len(sources) else f"result {i + 1}"
    cc = _cc(_device(r))
    return f"{where} ({_gpu(r) or 'no GPU'}" + (f", sm_{cc})" if cc else ")")


def _identity(r: TuneResult) -> str:
    gpu, cc = _gpu(r), _cc(_device(r))
    if gpu:
        return f"device {device_macro(gpu)}"
    return f"compute capability {cc}" if cc else "no GPU"


def _check_merge(results: list[TuneResult], sources: Sequence[str] | None) -> None:
    def lab(i: int) -> str:
        return _comment(_label(i, results[i], sources), 120)  # printable: no control characters in errors

    for what, get in (
        ("kernel", lambda r: r.kernel),
        ("backend", lambda r: r.backend),
        ("dtype", lambda r: r.dtype),
    ):
        values = [str(get(r)) for r in results]
        if len(set(values)) > 1:
            listing = "; ".join(f"{lab(i)}: {_comment(v, 60)}" for i, v in enumerate(values))
            raise ValueError(
                f"results: a merged header holds one {what}'s results for several devices, got {listing}"
            )
    names = [set(_constants(r)) for r in results]
    for i, n in enumerate(names[1:], 1):
        if n != names[0]:
            raise ValueError(
                f"results: every block of a merged header must define the same constants; {lab(0)} has "
                f"{sorted(names[0] - n) or 'nothing'} that {lab(i)} lacks, and {lab(i)} has "
                f"{sorted(n - names[0]) or 'nothing'} that {lab(0)} lacks"
            )
    seen: dict[str, int] = {}
    for i, r in enumerate(results):
        try:
            ident = _identity(r)
        except ValueError as err:
            raise ValueError(f"results: {lab(i)}: {err}") from None
        if ident in seen:
            raise ValueError(
                f"results: {lab(seen[ident])} and {lab(i)} are both for {ident}; a merged header takes one "
                "result per device (name, else compute capability) and at most one without a GPU (the "
                "fallback for architectures no device covers); export them separately or drop one"
            )
        seen[ident] = i


def _poison(prefix: str, k: str, m: _Macro) -> tuple[list[str], str, str]:
    """For a macro whose value differs per architecture, in host code: (nvcc declarations, nvcc body,
    plain C/C++ body). Device code parsed in nvcc's host pass still compiles (a constexpr __device__
    function); host code using it does not ("calling a constexpr __device__ function from a __host__
    function is not allowed"), nor does an #if on it."""
    if m.kind == "type":
        body = f"cute::Swizzle<{prefix}_CUTE_SWIZZLE_B, {prefix}_CUTE_SWIZZLE_M, {prefix}_CUTE_SWIZZLE_S>"
        return [], body, body
    fn = f"autopad_{k}_device_only_{m.suffix}"
    plain = f"(autopad_{k}_{m.suffix}_differs_per_arch_use_autopad_{k}_config_for_cc / 0)"
    if m.kind == "int":
        ctype = "int" if -_INT32 <= m.value < _INT32 else "long long"
        decl = f"__device__ constexpr {ctype} {fn}() {{ return {m.body}; }}"
        return [decl], f"({fn}())", plain
    if m.kind == "str":
        return [f"__device__ constexpr const char *{fn}() {{ return {m.body}; }}"], f"({fn}())", plain
    params = ", ".join(f"int {p}" for p in m.params)
    decl = f"__device__ constexpr int {fn}({params}) {{ return {m.body}; }}"
    return [decl], f"({fn}(" + ", ".join(f"({p})" for p in m.params) + "))", plain


@dataclass(frozen=True)
class _Plan:
    """Which block each build sees: pinned devices, architectures (highest cc first), the fallback."""

    blocks: list[list[_Macro]]  # the same macro names in the same order in every block
    dropped: list[str]  # names not every block defines alike
    ccs: list[int]  # per result, 0 if unknown
    pins: list[tuple[str, int]]  # (AUTOPAD_DEVICE_<GPU>, block)
    arch: list[tuple[int, int]]  # (cc, block): the block of the highest cc <= the architecture
    default: int | None  # the result without a GPU: below every tuned architecture
    reachable: list[int]  # the blocks host code may stand for (by arch or default)


def _plan(results: list[TuneResult], prefix: str) -> _Plan:
    raw = [{m.suffix: m for m in _block(r, prefix)} for r in results]
    order = [
        s for s, m in raw[0].items()
        if all(s in b and (b[s].kind, b[s].params) == (m.kind, m.params) for b in raw[1:])
    ]  # fmt: skip
    if "CUTE_SWIZZLE" in order and not all(f"CUTE_SWIZZLE_{p}" in order for p in "BMS"):
        order.remove("CUTE_SWIZZLE")
    ccs = [int(_cc(_device(r)) or 0) for r in results]
    by_cc: dict[int, int] = {}
    for i, cc in enumerate(ccs):
        if cc:
            by_cc.setdefault(cc, i)  # two devices of one cc: the first given serves the architecture
    default = next((i for i, r in enumerate(results) if not _gpu(r) and not ccs[i]), None)
    return _Plan(
        blocks=[[b[s] for s in order] for b in raw],
        dropped=sorted({s for b in raw for s in b} - set(order)),
        ccs=ccs,
        pins=[(device_macro(_gpu(r)), i) for i, r in enumerate(results) if _gpu(r)],
        arch=sorted(by_cc.items(), reverse=True),
        default=default,
        reachable=sorted(set(by_cc.values()) | ({default} if default is not None else set())),
    )


def _merged_comments(results: list[TuneResult], plan: _Plan, k: str, lab: Any) -> list[str]:
    lines = [
        f"// Generated by autopad {_version()}: shared-memory layout constants of {len(results)} tuning "
        "results, selected per device. Do not edit.",
    ]
    for i, r in enumerate(results):
        lines.append(f"// block {i}: {lab(i)}")
        lines += [f"//   {_comment(line)}" for line in _describe(r)]
    lines += ["//", "// Which block applies (host and device code never see different values):"]
    if plan.pins:
        lines += [
            "// - -D" + " / -D".join(p for p, _ in plan.pins) + " pins that device's block for host and",
            "//   device code alike (for builds that target one device);",
        ]
    below = f"block {plan.default} (no GPU)" if plan.default is not None else "a compile error"
    lines += [
        "// - otherwise device code (__CUDA_ARCH__) gets the block of the highest tuned compute capability",
        "//   at or below its architecture: "
        + "; ".join([f"sm_{cc} and up: block {i}" for cc, i in plan.arch] + [f"below: {below}"])
        + ";",
        "// - host code gets a macro only where every such block agrees; one that differs per architecture",
        "//   is a compile error in host code. Launch with the values of the architecture the kernel was",
        "//   compiled for (ptxVersion is the __CUDA_ARCH__ / 10 it saw, also when the driver JIT-compiles",
        "//   PTX for a newer GPU):",
        "//     cudaFuncAttributes fa;",
        "//     cudaFuncGetAttributes(&fa, my_kernel);",
        f"//     autopad_{k}_config cfg = autopad_{k}_config_for_cc(fa.ptxVersion);",
        "//     if (!cfg.found) { /* no tuned block for this architecture */ }",
        "//     my_kernel<<<grid_from(cfg), cfg.THREADS, cfg.SMEM_BYTES>>>(...);",
        "//   In device code, test these macros with #if only inside #ifdef __CUDA_ARCH__.",
    ]
    if plan.dropped:
        lines.append(f"// Left out (not defined alike by every block): {_comment(', '.join(plan.dropped))}.")
    return lines


def _selector(plan: _Plan, k: str) -> list[str]:
    """``config_for_cc``: the rule the macro branches follow, as a function of the compute capability."""
    lines = [f"AUTOPAD_FN_ autopad_{k}_config autopad_{k}_config_for_cc(int cc) {{", "  (void)cc;"]
    for j, (macro, i) in enumerate(plan.pins):
        lines += [f"#{'if' if j == 0 else 'elif'} defined({macro})", f"  return autopad_{k}_block_{i}();"]
    if plan.pins:
        lines.append("#else")
    lines += [f"  if (cc >= {cc}) return autopad_{k}_block_{i}();" for cc, i in plan.arch]
    fallback = f"block_{plan.default}" if plan.default is not None else "none"
    lines.append(f"  return autopad_{k}_{fallback}();")
    if plan.pins:
        lines.append("#endif")
    return lines + ["}", ""]


def _branches(plan: _Plan, prefix: str, k: str, guard: str, lab: Any) -> tuple[list[str], list[str]]:
    """The #if chain of macro blocks (pinned, per architecture, host code); also the names host code has."""
    lines: list[str] = []
    for j, (macro, i) in enumerate(plan.pins):
        lines.append(f"#{'if' if j == 0 else 'elif'} defined({macro})  // pinned: {lab(i)}")
        lines += [_define(prefix, m, "  ") for m in plan.blocks[i]]
    lines.append(f"#{'elif' if plan.pins else 'if'} defined(__CUDA_ARCH__)  // device code")
    for j, (cc, i) in enumerate(plan.arch):
        lines.append(f"#  {'if' if j == 0 else 'elif'} __CUDA_ARCH__ >= {cc * 10}  // {lab(i)}")
        lines += [_define(prefix, m, "    ") for m in plan.blocks[i]]
    lines.append("#  else" if plan.arch else "#  if 1")
    if plan.default is not None:
        lines += [_define(prefix, m, "    ") for m in plan.blocks[plan.default]]
    else:
        lines.append(
            f'#    error "autopad {guard}: no tuned block for this __CUDA_ARCH__; compile for a tuned '
            'architecture or pin a device with -DAUTOPAD_DEVICE_<NAME>"'
        )
    lines += ["#  endif", "#else  // host code"]
    if not plan.reachable:
        lines.append(
            f'#  error "autopad {guard}: nothing for host code; pin one with -DAUTOPAD_DEVICE_<NAME>"'
        )
        return lines + ["#endif"], []
    agreed, decls, cuda, plain = [], [], [], []
    first = plan.blocks[plan.reachable[0]]
    for pos, m in enumerate(first):
        if all(plan.blocks[i][pos].body == m.body for i in plan.reachable):
            lines.append(_define(prefix, m, "  "))
            agreed.append(m.suffix)
            continue
        d, on_nvcc, elsewhere = _poison(prefix, k, m)
        decls += d
        cuda.append(_define(prefix, m, "    ", on_nvcc))
        plain.append(_define(prefix, m, "    ", elsewhere))
    if cuda:
        lines += [
            "#  if defined(__CUDACC__)",
            "#    if defined(__CUDACC_RELAXED_CONSTEXPR__) && !defined(AUTOPAD_ALLOW_RELAXED_CONSTEXPR)",
            f"#      error \"autopad {guard}: with --expt-relaxed-constexpr host code could read a device's "
            "constants; use autopad_<kernel>_config_for_cc, pin a device (-DAUTOPAD_DEVICE_<NAME>), or "
            'define AUTOPAD_ALLOW_RELAXED_CONSTEXPR"',
            "#    endif",
            *decls,
            *cuda,
            "#  else",
            *plain,
            "#  endif",
        ]
    return lines + ["#endif"], agreed


def _self_checks(plan: _Plan, prefix: str, k: str, agreed: list[str]) -> list[str]:
    """C++14 static_asserts: each device pass's macros are its host-table row; host macros are every
    reachable row's. A header edited (or generated) so that they differ does not compile."""
    fields = [name for _, name in _fields(plan.blocks)]
    row = f"autopad_{k}_config_for_cc(__CUDA_ARCH__ / 10)"
    lines = [
        "",
        "// self-check: the macros this compilation sees are the host table's row for it",
        "#if AUTOPAD_CXX14_ && defined(__CUDA_ARCH__)",
        f'static_assert({row}.found, "autopad: no host table row for this __CUDA_ARCH__");',
    ]
    lines += [
        f'static_assert({row}.{f} == {prefix}_{f}, "autopad: {prefix}_{f} differs between host and device");'
        for f in fields
    ]
    lines.append("#elif AUTOPAD_CXX14_")
    lines += [
        f"static_assert(autopad_{k}_config_for_cc({plan.ccs[i]}).{f} == {prefix}_{f}, "
        f'"autopad: host {prefix}_{f} differs from block {i}");'
        for i in plan.reachable
        for f in fields
        if f in agreed
    ]
    return lines + ["#endif"]


def render_merged_header(
    results: Sequence[TuneResult],
    path: str | Path = "autopad.h",
    sources: Sequence[str] | None = None,
    name: str | None = None,
) -> str:
    """The text of ``merge_header``'s header (``sources`` names the results in errors and comments; ``name``
    the macros' prefix, as ``render_header``'s)."""
    results = list(results)
    if not results:
        raise ValueError("results: need at least one TuneResult to merge")
    _check_merge(results, sources)
    prefix = header_prefix(results[0].kernel, name)
    k = prefix[len("AUTOPAD_") :].lower()
    plan = _plan(results, prefix)
    guard = _guard(Path(path), name)

    def lab(i: int) -> str:
        return _comment(_label(i, results[i], sources))

    lines = _merged_comments(results, plan, k, lab)
    lines += [f"#ifndef {guard}", f"#define {guard}", "", _FN, ""]
    lines += _table(k, plan.blocks, plan.ccs) + _selector(plan, k)
    branches, agreed = _branches(plan, prefix, k, guard, lab)
    lines += branches + _self_checks(plan, prefix, k, agreed)
    swizzles = {m.value for b in plan.blocks for m in b if m.suffix == "CUTE_SWIZZLE"}
    if len(swizzles) == 1:
        lines += _cute_typedef(prefix, k)  # a type cannot be kept from host code: only when all agree
    lines += ["", f"#endif  // {guard}", ""]
    return "\n".join(lines)


def merge_header(
    results: Sequence[TuneResult],
    path: str | Path,
    overwrite: bool = False,
    sources: Sequence[str] | None = None,
    name: str | None = None,
) -> Path:
    """One header for several devices' results of one kernel; host and device code always agree.

    Selection, in order: ``-DAUTOPAD_DEVICE_<GPU>`` pins one device's block for host and device code;
    otherwise device code (``__CUDA_ARCH__``) gets the block of the highest tuned compute capability at or
    below its architecture (else the result without a GPU, else a compile error); host code gets a macro
    only where all those blocks agree, and ``autopad_<kernel>_config_for_cc(cc)`` (the same rule as a
    function: pass the kernel's ``cudaFuncAttributes.ptxVersion``) for the rest. A macro that differs is a
    compile error in host code. In C++14 and later the header checks itself with ``static_assert``.

    Errors (``ValueError``, naming ``sources`` when given): results of different kernels, backends,
    dtypes or constant names; two results for one device, or two without a GPU.
    """
    return write_file(path, render_merged_header(results, path, sources, name), overwrite)
