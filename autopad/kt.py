"""``autopad.tune_kernel``: Kernel Tuner's entry point, spelt the same way, on autopad's tuner.

A Kernel Tuner user has a call like

    tune_kernel("transpose", source, (n, m), [out, x, np.int32(m), np.int32(n)],
                {"block_size_x": [32], "block_size_y": [4, 8], "PAD": [0, 1]},
                grid_div_x=["block_size_x"], grid_div_y=["block_size_x"],
                restrictions=["block_size_y <= block_size_x"], answer=[x.T, None, None, None])

and switches by importing this function instead. The same arguments mean the same things: the tunable
parameters become ``#define``s, the block size comes from ``block_size_x/y/z`` (``block_size_names``),
the grid is ``ceil(problem_size / product of grid_div)`` per axis, restriction strings prune the space
(evaluated vectorised), and ``answer`` lists the expected outputs (None for inputs), compared with
``atol``. autopad then adds its own: give ``layout=autopad.tile(...)`` and ``pattern=`` to let the bank
model rank the candidates, and it measures only a shortlist instead of the whole space. The result is a
``TuneResult`` (``.best.constants``, ``.candidates``, ``.export(...)``).

Differences worth knowing: the arguments are copied to the GPU once per candidate check from the arrays
you give (Kernel Tuner's semantics: fixed inputs, so ``answer`` can be checked); without ``answer`` nothing
is checked, as in Kernel Tuner, and the result says so.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .bases import CudaKernel, Out, TileLayout
from .layouts import Legality

__all__ = ["tune_kernel", "kernel_tuner_spec"]

_BLOCK_NAMES = ("block_size_x", "block_size_y", "block_size_z")
_DEFAULT_BLOCK = (256, 1, 1)  # Kernel Tuner's defaults when a block size is not tuned
_NP_DTYPES = {
    "float64": "float64",
    "float32": "float32",
    "float16": "float16",
    "int64": "int64",
    "int32": "int32",
    "int16": "int16",
    "int8": "int8",
    "uint8": "uint8",
}


def _axis_expr(problem: Any, div: Sequence[str] | str | None, default: str) -> str:
    if div is None:
        div = [default]
    if isinstance(div, str):
        div = [div]
    if not div:
        return str(problem)
    den = " * ".join(f"({d})" for d in div)
    return f"cdiv({problem}, {den})"


def _dtype_of(arguments: Sequence[Any]) -> str:
    for a in arguments:
        if isinstance(a, np.ndarray) and a.size:
            name = _NP_DTYPES.get(a.dtype.name)
            if name is None:
                raise ValueError(f"arguments: numpy dtype {a.dtype} is not one autopad knows")
            return name
    return "float32"


def kernel_tuner_spec(
    kernel_name: str,
    kernel_source: str | Path,
    problem_size: int | Sequence[int],
    arguments: Sequence[Any],
    tune_params: Mapping[str, Sequence[int]],
    grid_div_x: Sequence[str] | str | None = None,
    grid_div_y: Sequence[str] | str | None = None,
    grid_div_z: Sequence[str] | str | None = None,
    restrictions: Sequence[str | Callable[[dict], bool]] | Callable[[dict], bool] | None = None,
    answer: Sequence[Any] | None = None,
    atol: float = 1e-6,
    block_size_names: Sequence[str] | None = None,
    layout: TileLayout | Callable[..., Any] | None = None,
    pattern: Any = None,
    flops: str | int = 0,
) -> CudaKernel:
    """The autopad spec (a CudaKernel) for a Kernel Tuner-style description; see ``tune_kernel``."""
    if not isinstance(kernel_name, str) or not kernel_name.isidentifier():
        raise ValueError(f"kernel_name: {kernel_name!r} is not the name of an extern C __global__ function")
    source = Path(kernel_source).read_text() if isinstance(kernel_source, Path) else kernel_source
    if not isinstance(source, str) or "__global__" not in source:
        raise ValueError("kernel_source: give the CUDA source text (or a pathlib.Path to it)")
    size = (problem_size,) if isinstance(problem_size, (int, np.integer)) else tuple(problem_size)
    bad = any(isinstance(d, bool) or not isinstance(d, (int, np.integer)) for d in size)
    if not 1 <= len(size) <= 3 or bad:
        raise ValueError(f"problem_size: an int or a tuple of up to 3 ints, got {problem_size!r}")
    if not isinstance(tune_params, Mapping) or not tune_params:
        raise ValueError("tune_params: a dict of parameter name -> list of int values")
    space = {}
    for k, v in tune_params.items():
        vals = tuple(v)
        if not vals or any(isinstance(x, bool) or not isinstance(x, (int, np.integer)) for x in vals):
            raise ValueError(f"tune_params: {k!r} must list int values, got {v!r}")
        space[str(k)] = tuple(int(x) for x in vals)
    args = list(arguments)
    if answer is not None and len(answer) != len(args):
        raise ValueError(f"answer: has {len(answer)} entries for {len(args)} arguments (None for inputs)")
    names = tuple(block_size_names or _BLOCK_NAMES)
    block = tuple(n if n in space else _DEFAULT_BLOCK[i] for i, n in enumerate(names[:3]))
    shape_names = ("problem_size_x", "problem_size_y", "problem_size_z")[: len(size)]
    divs = (grid_div_x, grid_div_y, grid_div_z)
    grid = tuple(
        _axis_expr(shape_names[i], divs[i], names[i] if names[i] in space else str(_DEFAULT_BLOCK[i]))
        for i in range(len(size))
    )
    single = callable(restrictions) or isinstance(restrictions, str)
    rules = [restrictions] if single else list(restrictions or [])
    strings = tuple(r for r in rules if isinstance(r, str))
    calls = [r for r in rules if not isinstance(r, str)]
    dtype = _dtype_of(args)
    outputs = [i for i, a in enumerate(answer or []) if a is not None]
    expected = [np.asarray(answer[i]) for i in outputs] if answer is not None else []
    text = source

    class KernelTunerSpec(CudaKernel):
        NAME = kernel_name
        SOURCE = text
        KERNEL = kernel_name
        SPACE = space
        DTYPES = (dtype,)
        SHAPE = shape_names
        BLOCK = block
        GRID = grid
        RESTRICTIONS = strings
        LAYOUT = staticmethod(layout) if inspect.isfunction(layout) else layout
        PATTERN = staticmethod(pattern) if inspect.isfunction(pattern) else pattern
        FLOPS = flops
        TOLERANCE = None
        UNCHECKED = not outputs  # Kernel Tuner checks nothing without an answer; neither does this

        def legal(self, constants: Mapping[str, int], shape: tuple[int, ...], dtype: str) -> Legality:
            for fn in calls:
                if not fn(dict(constants)):
                    return Legality(False, f"restriction {getattr(fn, '__name__', fn)}")
            return super().legal(constants, shape, dtype)

        def arguments(self, shape: tuple[int, ...], dtype: str) -> list:
            import torch

            out = []
            for i, a in enumerate(args):
                if i in outputs:
                    out.append(Out(np.shape(a), _torch_dtype(np.asarray(a).dtype)))
                elif isinstance(a, np.ndarray):
                    out.append(torch.from_numpy(np.ascontiguousarray(a)))
                else:
                    out.append(a)
            return out

        def reference(self, *inputs: Any) -> Any:
            import torch

            refs = tuple(torch.from_numpy(np.ascontiguousarray(e)) for e in expected)
            return refs if len(refs) > 1 else refs[0]

        def check(self, out: Any, ref: Any) -> tuple[bool, str]:
            if not outputs:
                return True, "not checked: no answer given (as in Kernel Tuner)"
            outs = out if isinstance(out, tuple) else (out,)
            refs = ref if isinstance(ref, tuple) else (ref,)
            for i, (o, r) in enumerate(zip(outs, refs)):
                d = (o.double().cpu() - r.double().cpu()).abs()
                if not bool((d <= atol).all()):
                    n = int((d > atol).sum())
                    return False, f"output {i}: {n} elements differ by more than atol {atol}"
            return True, f"within atol {atol}"

        def cache_source(self) -> str:
            return f"{kernel_name}\n{text}\n{sorted(space.items())}\n{grid}\n{block}\n{strings}"

    KernelTunerSpec.__qualname__ = f"KernelTunerSpec[{kernel_name}]"
    return KernelTunerSpec()


def _torch_dtype(np_dtype: Any) -> Any:
    import torch

    return getattr(torch, np.dtype(np_dtype).name)


def tune_kernel(
    kernel_name: str,
    kernel_source: str | Path,
    problem_size: int | Sequence[int],
    arguments: Sequence[Any],
    tune_params: Mapping[str, Sequence[int]],
    grid_div_x: Sequence[str] | str | None = None,
    grid_div_y: Sequence[str] | str | None = None,
    grid_div_z: Sequence[str] | str | None = None,
    restrictions: Sequence[str | Callable[[dict], bool]] | Callable[[dict], bool] | None = None,
    answer: Sequence[Any] | None = None,
    atol: float = 1e-6,
    block_size_names: Sequence[str] | None = None,
    layout: TileLayout | Callable[..., Any] | None = None,
    pattern: Any = None,
    flops: str | int = 0,
    **tune_options: Any,
) -> Any:
    """Tune a CUDA kernel described as for Kernel Tuner's ``tune_kernel``; returns autopad's TuneResult.

    ``tune_options`` go to ``autopad.tune`` (``top_k``, ``refine``, ``budget``, ``strategy="brute_force"``
    to measure everything as Kernel Tuner's default does, ``cache``, ``device``, ``verbose``, ``export``).
    """
    from .tune import tune

    spec = kernel_tuner_spec(
        kernel_name,
        kernel_source,
        problem_size,
        arguments,
        tune_params,
        grid_div_x,
        grid_div_y,
        grid_div_z,
        restrictions,
        answer,
        atol,
        block_size_names,
        layout,
        pattern,
        flops,
    )
    size = (problem_size,) if isinstance(problem_size, (int, np.integer)) else tuple(problem_size)
    return tune(spec, tuple(int(d) for d in size), spec.DTYPES[0], **tune_options)
