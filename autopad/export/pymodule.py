"""The Python module of one result: constants that are ints on the host and ``tl.constexpr`` in
``@triton.jit`` code, ``CONSTANTS``, ``CONFIG`` (the kernel's own arguments), ``LAUNCH``,
``triton_config()``, ``gluon_layout()`` and what was tuned.
"""

from __future__ import annotations

import keyword
from typing import Any

from ..results import TuneResult
from .escaping import _comment, _py
from .facts import _cc, _constants, _describe, _device, _gluon, _gpu, _version
from .tile_spec import _cute, _extra, _int, _pow2, layout_spec

_META = (
    "KERNEL",
    "BACKEND",
    "DEVICE",
    "CC",
    "SHAPE",
    "DTYPE",
    "DIST",
    "ARCH",
    "MODE",
    "LAYOUT",
    "MEASURED_MS",
    "PREDICTED_S",
    "MESSAGE",
    "ENVIRONMENT",
)


PY_RESERVED = _META + (
    "CONSTANTS",
    "CONFIG",
    "NUM_WARPS",
    "NUM_STAGES",
    "LAUNCH",
    "LAYOUT_SPEC",
    "CUTE_SWIZZLE",
    "GLUON_LAYOUT",
)


_PY_CONSTANT = '''\
try:  # the constants are ints that @triton.jit code may also read as globals (tl.constexpr)
    import triton.language as _tl
except Exception:  # no (working) triton: plain ints
    _Constant = int
else:

    class _Constant(int, _tl.constexpr):
        """An int that Triton treats as a compile-time constant. Pass int(BM) as an ordinary (not
        constexpr) kernel argument; arithmetic with plain ints gives plain ints."""

        def __new__(cls, value):
            return int.__new__(cls, value)

        def __init__(self, value):
            _tl.constexpr.__init__(self, int(value))

        __repr__ = __str__ = int.__repr__
        __format__ = int.__format__
        __hash__ = int.__hash__

    def _op(name):
        as_int, as_constexpr = getattr(int, name), getattr(_tl.constexpr, name, None)

        def op(self, *other):
            if other and isinstance(other[0], _tl.constexpr) and not isinstance(other[0], int):
                return as_constexpr(self, *other)  # a literal inside a kernel: Triton's own rule
            out = as_int(self, *other)
            if type(out) is int and all(isinstance(o, _Constant) for o in other):
                return _Constant(out)  # made of tuned constants only: still one (BM * BN, -BM)
            return out  # mixed with a plain int (n // BM): a plain int, fit for a runtime argument

        return op

    for _name in (
        "add radd sub rsub mul rmul floordiv rfloordiv truediv rtruediv mod rmod pow lshift rlshift rshift "
        "rrshift and rand or ror xor rxor neg pos abs invert eq ne lt le gt ge"
    ).split():
        setattr(_Constant, f"__{_name}__", _op(f"__{_name}__"))
    del _name, _op
'''


def _kernel_args(result: TuneResult) -> dict[str, int]:
    """CONFIG: the kernel's own arguments (``extra['kernel_args']``), else every constant that is a name."""
    consts = result.best.constants
    extra = _extra(result)
    args = extra.get("kernel_args")
    if args is None:
        return {
            str(n): int(v)
            for n, v in sorted(consts.items(), key=lambda kv: str(kv[0]))
            if str(n).isidentifier() and str(n).isascii() and not keyword.iskeyword(str(n))
        }
    if not isinstance(args, (list, tuple)):
        raise ValueError(f"kernel_args: expected a list of constant names, got {type(args).__name__}")
    out: dict[str, int] = {}
    for a in args:
        if not (isinstance(a, str) and a.isidentifier() and a.isascii() and not keyword.iskeyword(a)):
            raise ValueError(
                f"kernel_args: {a!r} is not a Python identifier, so it cannot be a kernel argument"
            )
        if a not in consts:
            raise ValueError(f"kernel_args: {a!r} is not one of the constants {sorted(map(str, consts))}")
        out[a] = int(consts[a])
    return out


def _launch(result: TuneResult) -> dict[str, int]:
    launch = _extra(result).get("launch") or {}
    if not isinstance(launch, dict):
        raise ValueError(f"launch: expected a dict with num_warps / num_stages, got {type(launch).__name__}")
    out = {}
    for key in ("num_warps", "num_stages"):
        if launch.get(key) is not None:
            out[key] = _int(launch, key, 1, 1024)
    return out


def _gluon_code(spec: dict[str, Any] | None) -> str | None:
    """The expression building the Gluon shared layout of a tile spec, or None where Gluon has none."""
    if not spec or spec["kind"] != "tile":
        return None
    if spec["pad"] == 0:
        return (
            f"gl.SwizzledSharedLayout(vec={spec['sw_vec']}, per_phase={spec['per_phase']}, "
            f"max_phase={spec['max_phase']}, order=[1, 0])"
        )
    rows, cols, pad = spec["rows"], spec["cols"], spec["pad"]
    if spec["max_phase"] == 1 and rows and all(_pow2(x) for x in (rows, cols, pad)):
        return f"gl.PaddedSharedLayout.with_identity_for([[{cols}, {pad}]], [{rows}, {cols}], [1, 0])"
    return None


def render_python(result: TuneResult) -> str:
    """The text of ``result``'s Python module of constants (see the module docstring it carries)."""
    consts = _constants(result)
    for name in consts:
        if name in PY_RESERVED or keyword.iskeyword(name) or not name.isidentifier():
            raise ValueError(f"constants: {name!r} cannot be a module constant (it clashes or is not a name)")
    spec = layout_spec(result)
    config, launch, cute = _kernel_args(result), _launch(result), _cute(result)
    gluon_code = _gluon_code(spec)
    public_spec = None if spec is None else {key: v for key, v in spec.items() if not key.startswith("_")}
    lines = [
        f'"""Generated by autopad {_version()}: the tuned constants of one kernel. Do not edit.',
        "",
        "The constants are module globals that are ints on the host and tl.constexpr inside @triton.jit code",
        "(``from this_module import BM`` works in a kernel). CONFIG holds only the kernel's own arguments,",
        "LAUNCH its num_warps / num_stages: ``kernel[grid](x, y, **CONFIG, **LAUNCH)``, or",
        "``triton_config()`` for ``@triton.autotune``; ``gluon_layout()`` is the shared layout as a Gluon",
        "object (None where Gluon has no such layout). What was tuned: KERNEL, DEVICE, SHAPE, DTYPE, LAYOUT",
        "and the comments below.",
        '"""',
        "",
    ]
    lines += [f"# {_comment(line)}" for line in _describe(result)]
    lines += ["", _PY_CONSTANT]
    b = result.best
    env = result.environment if isinstance(result.environment, dict) else {}
    meta: dict[str, Any] = {
        "KERNEL": result.kernel,
        "BACKEND": result.backend,
        "DEVICE": _gpu(result),
        "CC": _cc(_device(result)),
        "SHAPE": tuple(result.shape) if isinstance(result.shape, (list, tuple)) else result.shape,
        "DTYPE": result.dtype,
        "DIST": result.dist,
        "ARCH": result.arch,
        "MODE": result.mode,
        "LAYOUT": b.layout,
        "MEASURED_MS": b.measured,
        "PREDICTED_S": b.predicted,
        "MESSAGE": result.message,
        "ENVIRONMENT": env,
    }
    lines += [f"{key} = {_py(v)}" for key, v in meta.items()]
    lines.append("")
    lines += [f"{key} = _Constant({v})" for key, v in consts.items()]
    lines += [
        "",
        f"CONSTANTS = {_py(consts)}",
        f"CONFIG = {_py(config)}  # the kernel's own arguments",
        f"NUM_WARPS = {_py(launch.get('num_warps'))}",
        f"NUM_STAGES = {_py(launch.get('num_stages'))}",
        f"LAUNCH = {_py(launch)}",
        f"LAYOUT_SPEC = {_py(public_spec)}",
        f"CUTE_SWIZZLE = {_py(cute)}  # cute::Swizzle<B, M, S> on the element offset, or None",
        f"GLUON_LAYOUT = {_py(_gluon(_extra(result)) or gluon_code)}",
        "",
        "",
        "def triton_config():",
        '    """``triton.Config(CONFIG, num_warps=NUM_WARPS, num_stages=NUM_STAGES)`` (imports triton)."""',
        "    import triton",
        "",
        "    return triton.Config(dict(CONFIG), **LAUNCH)",
        "",
        "",
        "def gluon_layout():",
        '    """The shared-memory layout as a ``gl.*SharedLayout`` (imports triton), or None."""',
    ]
    if gluon_code is None:
        lines.append("    return None")
    else:
        lines += ["    from triton.experimental.gluon import language as gl", "", f"    return {gluon_code}"]
    return "\n".join(lines) + "\n"
