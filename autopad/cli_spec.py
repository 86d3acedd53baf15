"""The KERNEL argument of ``autopad tune`` / ``export``: a built-in name, or a user's spec file.

How a spec is found in ``my_kernel.py`` (the rule, in order):

1. ``my_kernel.py:Name``: the attribute ``Name`` of the file (a class is instantiated, as ``autopad.tune``
   does; a module-level object is taken as it is);
2. else the one class defined in the file that derives from ``autopad.CudaKernel`` or
   ``autopad.TritonKernel`` (several: an error listing them, choose with ``:Name``);
3. else the file itself, when it defines a spec's module-level names (``NAME``, ``BACKEND``, ``DTYPES``,
   ``SPACE``, ``legal``, ``layout``, ``smem_pattern``, ``launch_info``, ``traffic``: autopad/spec.py).

Anything else is one line naming the file and what is missing (exit 2), as is a file that does not exist or
fails to import. The file is imported under a private module name, registered with cloudpickle (when
installed) so that a spec class travels to the benchmark worker by value.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from .cli import UsageError

__all__ = ["load_kernel", "find_spec"]


def _split(text: str) -> tuple[Path, str | None]:
    """'dir/k.py:Name' -> (Path('dir/k.py'), 'Name'); 'dir/k.py' -> (path, None)."""
    head, sep, name = text.rpartition(":")
    if sep and head.endswith(".py") and name.isidentifier():
        return Path(head), name
    return Path(text), None


def _import(path: Path, cmd: str) -> ModuleType:
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:10]
    name = f"_autopad_user_{''.join(ch if ch.isalnum() else '_' for ch in path.stem)}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"autopad {cmd}: error: KERNEL: cannot import {path} as Python")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses and pickling look a class's module up by name
    try:
        spec.loader.exec_module(mod)
    except BaseException as err:  # a user's file: any failure (a sys.exit at import too) is one line
        sys.modules.pop(name, None)
        if isinstance(err, KeyboardInterrupt):
            raise
        raise UsageError(
            f"autopad {cmd}: error: KERNEL: importing {path} failed: {type(err).__name__}: {err}"
        ) from None
    try:
        import cloudpickle

        cloudpickle.register_pickle_by_value(mod)
    except (ImportError, ValueError):
        pass
    return mod


def find_spec(mod: ModuleType, name: str | None, where: str) -> Any:
    """The spec in the imported file ``mod`` by the module docstring's rule; a ValueError says why not."""
    from .bases import CudaKernel, TritonKernel
    from .spec import REQUIRED

    if name is not None:
        if not hasattr(mod, name):
            raise ValueError(f"{where} has no attribute {name!r}")
        return getattr(mod, name)
    bases = (CudaKernel, TritonKernel)
    own = [
        obj
        for _, obj in inspect.getmembers(mod, inspect.isclass)
        if issubclass(obj, bases) and obj not in bases and obj.__module__ == mod.__name__
    ]
    if len(own) == 1:
        return own[0]
    if len(own) > 1:
        names = ", ".join(sorted(c.__name__ for c in own))
        raise ValueError(f"{where} defines several kernel specs ({names}); choose one: {where}:NAME")
    missing = [n for n in REQUIRED if not hasattr(mod, n)]
    if not missing:
        return mod
    raise ValueError(
        f"{where} holds no kernel spec: define a subclass of autopad.CudaKernel or autopad.TritonKernel, "
        f"or the module-level names of autopad/spec.py (missing: {', '.join(missing)})"
    )


def load_kernel(text: str, cmd: str) -> tuple[Any, str | None]:
    """(kernel, source): a built-in name as it is (source None), or the spec found in a user's file and
    'file[:Name]' as its source. Errors are UsageError lines."""
    from .kernels_registry import kernel_names

    if text in kernel_names():
        return text, None
    path, name = _split(text)
    if path.suffix != ".py":
        raise UsageError(
            f"autopad {cmd}: error: KERNEL: unknown kernel {text!r}; built-in: {', '.join(kernel_names())}, "
            "or your spec file: my_kernel.py or my_kernel.py:Name"
        )
    if not path.is_file():
        raise UsageError(f"autopad {cmd}: error: KERNEL: no such file: {path}")
    mod = _import(path, cmd)
    try:
        spec = find_spec(mod, name, str(path))
    except ValueError as err:
        raise UsageError(f"autopad {cmd}: error: KERNEL: {err}") from None
    label = f"{path}:{name}" if name else f"{path}" + (f":{spec.__name__}" if inspect.isclass(spec) else "")
    return spec, label
