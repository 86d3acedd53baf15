"""Tests for autopad/bases.py, the spec bases' public home after its split (kernel_args, tile_spec,
kernel_base, cuda_kernel, triton_kernel): every name it defined is still importable from it, as the very
object of its new home, and ``import autopad`` still loads none of it until a base is asked for.

What the bases do is tested through the specs built on them (test_kt, test_cli_spec, test_own_kernel_examples,
the kernels' tests); this file guards the move."""

from __future__ import annotations

import subprocess
import sys

from split_checks import assert_reexported

from autopad import bases, cuda_kernel, kernel_args, kernel_base, tile_spec, triton_kernel


def test_every_name_bases_defined_is_the_object_of_its_new_home():
    homes = {
        kernel_args: "Inputs Out _torch_dtype _meta_bytes_cached _meta_bytes _shape_of",
        tile_spec: "_env _eval TileLayout tile",
        kernel_base: "TOLERANCE _NO_LAYOUT KernelBase",
        cuda_kernel: "_KERNEL_RE _BuiltCuda CudaKernel",
        triton_kernel: "TritonKernel",
    }
    assert_reexported(bases, homes)
    assert sorted(bases.__all__) == sorted(
        ["Out", "Inputs", "TileLayout", "tile", "KernelBase", "CudaKernel", "TritonKernel", "TOLERANCE"]
    )
    assert issubclass(bases.CudaKernel, bases.KernelBase) and issubclass(bases.TritonKernel, bases.KernelBase)


def test_import_autopad_loads_the_bases_only_when_asked():
    code = (
        "import sys, autopad\n"
        "homes = ('bases', 'kernel_args', 'tile_spec', 'kernel_base', 'cuda_kernel', 'triton_kernel')\n"
        "assert not [h for h in homes if 'autopad.' + h in sys.modules]\n"
        "from autopad.cuda_kernel import CudaKernel\n"
        "from autopad.kernel_args import Out\n"
        "from autopad.tile_spec import tile\n"
        "assert autopad.CudaKernel is CudaKernel and autopad.Out is Out and autopad.tile is tile\n"
        "assert 'torch' not in sys.modules, 'the bases load torch only inside their functions'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
