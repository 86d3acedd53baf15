"""The transpose's contract with the measuring side, shared by the CUDA and the Gluon spec.

Both backends compute the same thing, ``x.transpose(-1, -2).contiguous()`` of a [..., M, N] tensor, so
what the tuner and ``autopad.ops`` do around a kernel is the same too: the inputs are ``(x,)``, the output is
allocated in x's dtype with the last two dimensions swapped, and the check is bit for bit. Only the
kernels and their ``arguments`` (the random values) differ, and those stay in each spec.
"""

from __future__ import annotations

from typing import Any

from autopad.bases import Inputs, Out

__all__ = ["TransposeIO", "input_tensor"]


def input_tensor(inputs: Any) -> Any:
    """The input tensor, from a tensor, ``(x,)``, or an argument list holding ``Out`` placeholders."""
    if isinstance(inputs, (tuple, list)):
        return next(a for a in inputs if not isinstance(a, Out))
    return inputs


class TransposeIO:
    """Mixin ahead of ``CudaKernel`` / ``TritonKernel``: a transpose's inputs, output, reference, check."""

    def make_inputs(
        self, shape: tuple[int, ...], dtype: str, device: Any = "cuda", seed: int = 0, dist: str = "uniform"
    ) -> Inputs:
        """``(x,)`` with the shape: fresh random values under ``seed`` (the output comes from
        ``alloc_output``)."""
        ins = super().make_inputs(shape, dtype, device, seed, dist)  # type: ignore[misc]
        return Inputs([a for a in ins if not isinstance(a, Out)], ins.shape)

    def inputs_from(self, x: Any) -> Inputs:
        """``autopad.ops.transpose(x)``'s arguments as the kernel's inputs: x itself, no copy."""
        return Inputs((x,), tuple(x.shape))

    def alloc_output(self, inputs: Any, constants: dict[str, int] | None = None) -> Any:
        import torch

        x = input_tensor(inputs)
        return torch.empty((*x.shape[:-2], x.shape[-1], x.shape[-2]), dtype=x.dtype, device=x.device)

    def reference(self, x: Any) -> Any:
        return input_tensor(x).transpose(-1, -2).contiguous()

    def expected(self, inputs: Any) -> tuple:
        return (self.reference(inputs),)

    def check(self, out: Any, ref: Any) -> tuple[bool, str]:
        """Exact: a transpose moves bits (compared as raw bytes, so NaN payloads and -0.0 count too)."""
        import torch

        out = out[0] if isinstance(out, (tuple, list)) else out
        ref = ref[0] if isinstance(ref, (tuple, list)) else ref
        if out.shape != ref.shape:
            return False, f"shape {tuple(out.shape)} != {tuple(ref.shape)}"
        # flatten first: a contiguous [N, 1] tensor may keep a stride != 1 on its size-1 dim (view rejects it)
        a = out.contiguous().flatten().view(torch.uint8)
        b = ref.contiguous().flatten().view(torch.uint8)
        bad = int((a != b).sum().item())
        return (bad == 0), ("exact" if bad == 0 else f"{bad} bytes differ")
