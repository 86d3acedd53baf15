"""autopad's model inside ``@triton.autotune``: keep your decorator, prune with the bank-conflict model.

Triton's autotuner takes ``prune_configs_by={"early_config_prune": f, "perf_model": g, "top_k": k}``: it
drops the configs ``f`` rejects, ranks the rest by ``g``'s estimate, and benchmarks only the best ``k``.
``prune_configs_by(...)`` returns that dict with autopad's legality check as ``f`` and its predicted time
(``autopad.predict``: bank conflicts of the kernel's shared-memory accesses under the config's layout,
occupancy, bytes in flight, waves) as ``g``:

    @triton.autotune(configs=[triton.Config({"BM": bm, "BN": bn, "PAD": p}, num_warps=w) ...],
                     key=["M", "N"],
                     prune_configs_by=autopad.triton_hook.prune_configs_by(
                         layout=autopad.tile("BM", "BN", pad="PAD", vec="VEC"),
                         pattern=my_pattern,                      # autopad.pattern.Pattern, or a function
                         grid=lambda m: (triton.cdiv(m["M"], m["BM"]), triton.cdiv(m["N"], m["BN"])),
                         top_k=4))
    @triton.jit
    def kernel(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, PAD: tl.constexpr): ...

What the model sees of a config: its integer keyword arguments and ``num_warps`` (as ``WARPS`` and
``num_warps``) and the launch's integer arguments (``M``, ``N``, ...): the layout, the pattern and the
grid are expressed in those names. The estimate is in milliseconds; the autotuner only compares them.

Which GPU profile the model plans with: ``arch=`` if given, else the profile of the card the launch's
tensors live on, as ``tune()`` chooses it (``arch.arch_for_device``: ``h100`` on an H100 SXM, ``sm_90`` on
an H200), read when the autotuner first asks (not when the decorator runs, so importing your module does
not touch CUDA); ``sm_90`` where no CUDA device is seen (or with AUTOPAD_NO_BENCH=1, as for ``tune()``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .arch import Arch, arch_for_device, get_arch
from .bases import TileLayout
from .predict import check_traffic, predict_batch
from .spec import DTYPE_BYTES

__all__ = ["prune_configs_by", "ConfigModel"]


def _ints(meta: Mapping[str, Any]) -> dict[str, int]:
    out = {}
    for k, v in meta.items():
        if isinstance(v, (bool, np.bool_)):
            continue
        if isinstance(v, (int, np.integer)):
            out[str(k)] = int(v)
    if "num_warps" in out:
        out.setdefault("WARPS", out["num_warps"])
    return out


def _dtype_name(meta: Mapping[str, Any], dtype: str | None) -> str:
    if dtype is not None:
        return dtype
    for v in meta.values():
        dt = getattr(v, "dtype", None)
        if dt is not None and hasattr(v, "data_ptr"):
            name = str(dt).replace("torch.", "")
            if name in DTYPE_BYTES:
                return name
    return "float32"


def _launch_device(meta: Mapping[str, Any]) -> int:
    """The CUDA device index of the launch's first CUDA tensor (0 if it has none). Only tensors are asked
    (``data_ptr``), and an argument whose device cannot be read is passed over, never raised from."""
    for v in meta.values():
        if not hasattr(v, "data_ptr"):
            continue
        try:
            dev = v.device
            if getattr(dev, "type", None) == "cuda":
                return int(dev.index or 0)
        except Exception:  # a tensor-like whose device property fails: not a CUDA tensor we can place
            continue
    return 0


def _device_arch(index: int) -> str:
    """The profile tune() would plan with on CUDA device ``index`` (sm_90 where none is seen)."""
    from .device import device_info

    info = device_info(index)  # {} without one: arch_for_device then says sm_90
    return arch_for_device(info.get("cc", ""), info.get("name", ""))


def _tensor_bytes(meta: Mapping[str, Any]) -> int:
    total = 0
    for v in meta.values():
        if hasattr(v, "data_ptr") and hasattr(v, "element_size"):
            total += int(v.numel()) * int(v.element_size())
    return total


class _AtLeastOne(float):
    """A fractional ``top_k`` as Triton reads it: it benchmarks ``int(len(configs) * top_k)`` configs, and
    that product is made at least 1 here, so that a fraction of a few configs (the default 0.25 of 3) keeps
    the best-predicted one; it kept none, and the autotuner failed on an empty ``min()`` at the launch."""

    def __rmul__(self, n: Any) -> float:
        return max(float(self) * n, 1.0)

    __mul__ = __rmul__  # (top_k * len(configs), should Triton write it that way round)


class ConfigModel:
    """Legality and predicted time of one Triton config from its meta-parameters (see the module doc)."""

    def __init__(
        self,
        layout: TileLayout | Callable[[dict], Any],
        pattern: Any,
        grid: Callable[[dict], Any],
        traffic: Callable[[dict], Mapping[str, float]] | None = None,
        dtype: str | None = None,
        arch: str | Arch | None = None,
    ) -> None:
        # what is wrong with an argument is said now, when the decorator runs, not from inside Triton's
        # autotuner at the first launch (a KeyError for dtype="fp16", "'str' object is not callable")
        if not callable(grid):
            raise ValueError("grid: give the launch grid as a function of the meta-parameters")
        if not (isinstance(layout, TileLayout) or callable(layout)):
            raise ValueError(
                f"layout: give an autopad.tile(...) or a function of the config's integers returning a "
                f"layout, got {layout!r}"
            )
        if not (pattern is None or hasattr(pattern, "instructions") or callable(pattern)):
            raise ValueError(
                f"pattern: give an autopad.pattern.Pattern, a function (constants, elem_bytes, layout) -> "
                f"instructions, or None, got {pattern!r}"
            )
        if traffic is not None and not callable(traffic):
            raise ValueError(
                f"traffic: give a function of the meta-parameters returning {{'bytes': ...}}, got {traffic!r}"
            )
        if dtype is not None and not isinstance(dtype, str):  # a torch.dtype: by its name
            dtype = str(dtype).replace("torch.", "")
        if dtype is not None and dtype not in DTYPE_BYTES:
            raise ValueError(
                f"dtype: {dtype!r} is not one of {', '.join(DTYPE_BYTES)} (or None: the tensors')"
            )
        self.layout, self.pattern, self.grid = layout, pattern, grid
        self.traffic, self.dtype = traffic, dtype
        # a named profile is checked now (a typo fails at decoration); None is read off the device later
        self._fixed = get_arch(arch) if arch is not None else None
        self._by_device: dict[int, Arch] = {}
        self._memo: dict[tuple, float] = {}

    @property
    def arch(self) -> Arch | None:
        """The profile given as ``arch=`` (None: each launch's device's, ``arch_for``)."""
        return self._fixed

    def arch_for(self, meta: Mapping[str, Any]) -> Arch:
        """The profile this launch is planned with: the fixed one, else its device's (asked once each)."""
        if self._fixed is not None:
            return self._fixed
        index = _launch_device(meta)
        if index not in self._by_device:
            self._by_device[index] = get_arch(_device_arch(index))
        return self._by_device[index]

    def _layout(self, consts: dict[str, int], e: int) -> Any:
        if isinstance(self.layout, TileLayout):
            return self.layout.make(consts, e), self.layout.vec_of(consts, e)
        lay = self.layout(consts)
        if not callable(getattr(lay, "check", None)):
            raise ValueError(f"layout: returned {lay!r} for {consts}; return an autopad.layouts layout")
        return lay, 1

    def legal(self, meta: Mapping[str, Any]) -> tuple[bool, str]:
        consts = _ints(meta)
        e = DTYPE_BYTES[_dtype_name(meta, self.dtype)]
        try:
            lay, vec = self._layout(consts, e)
        except (ValueError, KeyError) as exc:
            return False, str(exc)
        ok = lay.check(vec, self.arch_for(meta).smem_per_block)
        if not ok:
            return False, ok.reason
        if 32 * consts.get("num_warps", 4) > 1024:
            return False, "more than 1024 threads"
        return True, ""

    def predict_ms(self, meta: Mapping[str, Any]) -> float:
        from .access import score

        consts = _ints(meta)
        dt = _dtype_name(meta, self.dtype)
        arch = self.arch_for(meta)
        # the tensors' bytes are the default traffic, so they key the memo too (a launch on larger tensors
        # with the same integer arguments is another estimate)
        tensor_bytes = _tensor_bytes(meta) if self.traffic is None else None
        key = (tuple(sorted(consts.items())), dt, arch.name, tensor_bytes)
        if key in self._memo:
            return self._memo[key]
        e = DTYPE_BYTES[dt]
        lay, _ = self._layout(consts, e)
        if self.pattern is None:
            pat: Any = ()
        elif hasattr(self.pattern, "instructions"):
            pat = self.pattern.instructions(consts, e, layout=lay)
        else:
            pat = self.pattern(consts, e, lay)
            if pat is None or isinstance(pat, (str, bytes)) or not hasattr(pat, "__len__"):
                raise ValueError(f"pattern: returned {pat!r} for {consts}; return a list of instructions")
        cost = score(tuple(pat), lay, arch) if len(pat) else None
        g = self.grid(dict(meta))
        if g is None or isinstance(g, (str, bytes)):
            raise ValueError(f"grid: returned {g!r}; return the launch grid, an int or a tuple of ints")
        g = (g,) if isinstance(g, (int, np.integer)) else tuple(g)
        info = {
            "blocks": float(max(1, int(np.prod([int(x) for x in g])))),
            "threads": float(32 * consts.get("num_warps", 4)),
            "smem_bytes": float(getattr(lay, "footprint", 0)),
        }
        traffic = self.traffic(dict(meta)) if self.traffic else {"bytes": tensor_bytes, "flops": 0}
        t = check_traffic(traffic, "traffic")
        wave = np.array([cost.wavefronts if cost else 0])
        ideal = np.array([cost.ideal if cost else 0])
        ms = predict_batch([info], t, wave, ideal, arch)[0].seconds * 1e3
        self._memo[key] = ms
        return ms


def prune_configs_by(
    layout: TileLayout | Callable[[dict], Any],
    pattern: Any,
    grid: Callable[[dict], Any],
    top_k: int | float = 0.25,
    traffic: Callable[[dict], Mapping[str, float]] | None = None,
    dtype: str | None = None,
    arch: str | Arch | None = None,
) -> dict[str, Any]:
    """The ``prune_configs_by`` dict for ``triton.autotune``: legality (early prune) and autopad's estimate
    (perf model), keeping ``top_k`` configs (an int, or a fraction <= 1 of the configs) for benchmarking.
    ``arch``: the profile to plan with; None (the default) takes the launch device's, as ``tune()`` does."""
    # Triton takes an int, or a float <= 1 as a fraction of the configs (a TypeError at launch otherwise)
    bad = isinstance(top_k, bool) or not isinstance(top_k, (int, float)) or not top_k > 0
    if bad or (isinstance(top_k, float) and not top_k <= 1):
        raise ValueError(f"top_k: an int >= 1 or a fraction in (0, 1], got {top_k!r}")
    model = ConfigModel(layout, pattern, grid, traffic, dtype, arch)

    def early_config_prune(configs: list, named_args: dict, **kwargs: Any) -> list:
        kept, why = [], []
        for cfg in configs:
            ok, reason = model.legal({**named_args, **kwargs, **cfg.all_kwargs()})
            if ok:
                kept.append(cfg)
            else:
                why.append(f"{cfg}: {reason}")
        if not kept:
            raise ValueError("prune_configs_by: every config is illegal here: " + "; ".join(why[:5]))
        return kept

    def perf_model(**meta: Any) -> float:
        return model.predict_ms(meta)

    keep = _AtLeastOne(top_k) if isinstance(top_k, float) else top_k
    return {"early_config_prune": early_config_prune, "perf_model": perf_model, "top_k": keep}
