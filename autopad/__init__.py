"""autopad: chooses shared-memory layouts for GPU kernels.

The public API is importable with numpy alone: torch, triton and the CUDA bindings load only when a GPU
path needs them (``tune`` with a GPU, ``ops``, a base spec's build/run).

- the model: ``analyze``, ``analyze_batch``, ``Arch``/``get_arch``, ``layouts``;
- tuning: ``tune(kernel, shape, dtype)`` for "transpose", "matmul", "histogram" or your own spec;
- your own kernel: ``CudaKernel`` / ``TritonKernel`` base specs with ``Out``, ``tile`` (a layout in terms
  of your constants), ``tune_kernel`` (Kernel Tuner's entry point), ``prune_configs_by`` (a
  ``triton.autotune`` hook), ``Pattern`` with ``load``/``store``/``atomic``/``gluon_load``/``gluon_store``
  (how a block's threads touch the tile, declared);
- PyTorch: ``autopad.ops``.
"""

from __future__ import annotations

import importlib
import os as _os
import sys as _sys
import types as _types
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"  # before the imports below: tune and cache read it


class _Package(_types.ModuleType):
    """autopad's own module type: the function ``autopad.tune`` keeps its name when the submodule
    ``autopad.tune`` loads (the import system then sets the package's attribute to the submodule), so the
    function can load lazily (the tuner's imports: 0.01 s of a model-only process on the 2-core machine)."""

    def __setattr__(self, name: str, value: Any) -> None:
        # only the import system's assignment of the submodule itself is dropped: any other value (a mock,
        # a module a test patches in) is set as given
        if name == "tune" and value is _sys.modules.get(f"{self.__name__}.tune"):
            return
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package


class _CheckoutKernels:
    """``autopad.kernels`` of a source checkout: kernels/ sits beside the package there (an installed autopad
    ships it inside, as pyproject maps it). Without this finder a checkout on ``sys.path`` (PYTHONPATH, a
    benchmark script) took ``autopad`` from the checkout but ``autopad.kernels`` from whatever else was
    installed (another clone's editable install), or failed where nothing was. It answers only for the
    autopad of its own checkout (the parent's ``__path__``), so a finder left by an earlier import of
    another copy never lends that copy's kernels."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.package = _os.path.normcase(_os.path.join(_os.path.dirname(where), "autopad"))

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "autopad.kernels" or not path:
            return None
        if self.package not in {_os.path.normcase(_os.path.abspath(p)) for p in path}:
            return None  # another copy's autopad is importing its kernels
        from importlib.util import spec_from_file_location

        init = _os.path.join(self.where, "__init__.py")
        return spec_from_file_location(name, init, submodule_search_locations=[self.where])


def _checkout_kernels() -> None:
    here = _os.path.dirname(_os.path.abspath(__file__))
    beside = _os.path.join(_os.path.dirname(here), "kernels")
    inside = _os.path.isfile(_os.path.join(here, "kernels", "__init__.py"))  # installed: shipped inside
    if inside or not _os.path.isfile(_os.path.join(beside, "__init__.py")):
        return  # installed, or no checkout around the package
    # one finder a checkout, also across a reload of the package (which makes a new class)
    if not any(type(f).__name__ == "_CheckoutKernels" and getattr(f, "where", None) == beside
               for f in _sys.meta_path):  # fmt: skip
        _sys.meta_path.insert(0, _CheckoutKernels(beside))


_checkout_kernels()

from . import layouts  # noqa: E402
from .arch import ARCHS, Arch, get_arch  # noqa: E402
from .model import Analysis, analyze, analyze_batch  # noqa: E402

if "torch" in _sys.modules:  # torch is loaded already: autopad.ops defines torch.ops.autopad.* at import
    from . import ops  # noqa: E402

# The rest of the public names load when first used (PEP 562): a process that only ranks with the model
# (``autopad.search``, the ops' shape policy) does not import the tuner (``tune``), the ops layer, the
# pattern DSL and the hooks (``import autopad`` without numpy: 0.15 s -> 0.1 s on the 2-core machine).
_LAZY = {
    "tune": (".tune", "tune"),
    "ops": (".ops", None),
    "tune_kernel": (".kt", "tune_kernel"),
    "prune_configs_by": (".triton_hook", "prune_configs_by"),
    "CudaKernel": (".bases", "CudaKernel"),
    "TritonKernel": (".bases", "TritonKernel"),
    "Out": (".bases", "Out"),
    "tile": (".bases", "tile"),
    **{k: (".pattern", k) for k in ("Pattern", "load", "store", "atomic", "gluon_load", "gluon_store")},
}

if TYPE_CHECKING:  # what the lazy names are, for type checkers and editors
    from . import ops
    from .bases import CudaKernel, Out, TritonKernel, tile
    from .kt import tune_kernel
    from .pattern import Pattern, atomic, gluon_load, gluon_store, load, store
    from .triton_hook import prune_configs_by
    from .tune import tune


def __getattr__(name: str) -> Any:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module 'autopad' has no attribute {name!r}")
    module = importlib.import_module(where[0], __name__)
    value = module if where[1] is None else getattr(module, where[1])
    globals()[name] = value  # found directly from now on
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "__version__",
    "Analysis",
    "analyze",
    "analyze_batch",
    "Arch",
    "ARCHS",
    "get_arch",
    "tune",
    "tune_kernel",
    "CudaKernel",
    "TritonKernel",
    "Out",
    "tile",
    "prune_configs_by",
    "Pattern",
    "load",
    "store",
    "atomic",
    "gluon_load",
    "gluon_store",
    "layouts",
    "ops",
]
