"""The Triton side of the Gluon model: autopad layouts as ``gl.*SharedLayout`` objects, a compile for sm_90
without a GPU, and Triton's own bank-conflict counter, compared with autopad's.

``to_gluon`` turns a ``Swizzled`` or ``Padded`` tile into the Gluon layout a kernel takes; ``compile_sm90``
compiles a ``@gluon.jit`` or ``@triton.jit`` function for sm_90 (``.metadata.shared`` is the shared memory
it allocates, ``.asm["ptx"]`` what it emits); ``bank_conflicts_gluon`` runs only Gluon's front end to read
``gl.bank_conflicts`` for a register and a shared layout, and ``bank_conflict_sweep`` tabulates it against
autopad's count (``model_conflicts_per_wavefront``) over register layouts x swizzles x element sizes.

Why a module of its own: everything here imports triton (lazily, inside the functions), while the model
(gluon_blocked.py, gluon_moves.py) is numpy only; the tests and benchmarks that check the model against
the compiler use these.
"""

from __future__ import annotations

from collections.abc import Sequence

from .gluon_blocked import Blocked
from .gluon_moves import score_layouts, vector_width
from .layouts import Swizzled, Tile

__all__ = ["to_gluon", "compile_sm90", "bank_conflicts_gluon", "bank_conflict_sweep"]


def to_gluon(smem: Tile) -> object:
    """autopad layout -> ``gl.SwizzledSharedLayout`` or ``gl.PaddedSharedLayout`` (row-major).

    A padded *and* swizzled tile has no Gluon form in Triton 3.6 (``Tile.gluon_spec`` says why): ValueError,
    raised before Triton sees it (its verifier would abort the process).
    """
    spec = smem.gluon_spec()
    if spec["kind"] == "unsupported":
        raise ValueError(f"to_gluon: {spec['reason']}")
    from triton.experimental.gluon import language as gl

    if spec["kind"] == "swizzled":
        return gl.SwizzledSharedLayout(spec["vec"], spec["per_phase"], spec["max_phase"], spec["order"])
    if not spec["interval_padding"]:
        return gl.SwizzledSharedLayout(1, 1, 1, spec["order"])
    return gl.PaddedSharedLayout.with_identity_for(spec["interval_padding"], spec["shape"], spec["order"])


def compile_sm90(
    fn: object, signature: dict, constexprs: dict, num_warps: int = 4, num_stages: int = 3, arch: int = 90
) -> object:
    """Compile a ``@gluon.jit`` or ``@triton.jit`` function for sm_``arch`` without a GPU.

    ``signature`` maps every non-constexpr argument name to its type string ("*fp32", "i32",
    "tensordesc<bf16[128, 64],NVMMASharedLayout(...)>"); ``constexprs`` maps the rest to values.
    Returns the compiled kernel (``.metadata.shared`` is the shared memory it allocates, ``.asm["ptx"]``).
    """
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    sig = dict(signature)
    for k in constexprs:
        sig[k] = "constexpr"
    is_gluon = getattr(fn, "is_gluon", lambda: False)()
    if is_gluon:
        from triton.experimental.gluon._runtime import GluonASTSource

        src = GluonASTSource(fn, sig, constexprs=dict(constexprs))
    else:
        src = ASTSource(fn, sig, constexprs=dict(constexprs))
    return triton.compile(
        src, target=GPUTarget("cuda", arch, 32), options={"num_warps": num_warps, "num_stages": num_stages}
    )


_PROBE: dict[str, object] = {}


def _probe_kernel() -> object:
    """A Gluon kernel whose only job is to print ``gl.bank_conflicts`` for its constexpr layouts."""
    if "k" not in _PROBE:
        from triton.experimental import gluon
        from triton.experimental.gluon import language as gl

        @gluon.jit
        def bank_probe(
            BM: gl.constexpr, BN: gl.constexpr, DT: gl.constexpr, L: gl.constexpr, S: gl.constexpr
        ):
            x = gl.full([BM, BN], 0, DT, L)
            smem = gl.allocate_shared_memory(DT, [BM, BN], S)
            n: gl.constexpr = gl.bank_conflicts(x.type, smem.type)
            gl.static_print("AUTOPAD_BANK_CONFLICTS", n)

        _PROBE["k"] = bank_probe
    return _PROBE["k"]


_GL_DTYPES = {1: "int8", 2: "float16", 4: "float32", 8: "float64"}


def bank_conflicts_gluon(layout: Blocked, shape: Sequence[int], smem: Tile) -> int:
    """Triton's own counter, ``gl.bank_conflicts(register layout, shared layout)``, read at compile time.

    Runs only Gluon's front end for sm_90 (no GPU, no ptxas). Unpadded tiles only: in Triton 3.6 the
    counter aborts the whole process on a padded layout, so this refuses one.
    """
    if smem.pad:
        raise TypeError("gl.bank_conflicts aborts the process on padded layouts in Triton 3.6: refusing")
    import contextlib
    import io

    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon._runtime import GluonASTSource

    target = GPUTarget("cuda", 90, 32)
    backend = make_backend(target)
    options = backend.parse_options({"num_warps": layout.num_warps})
    ctx = ir.context()
    ir.load_dialects(ctx)
    backend.load_dialects(ctx)
    consts = {
        "BM": int(shape[0]),
        "BN": int(shape[1]),
        "DT": getattr(gl, _GL_DTYPES[smem.elem_bytes]),
        "L": layout.gluon(),
        "S": to_gluon(smem),
    }
    src = GluonASTSource(_probe_kernel(), {k: "constexpr" for k in consts}, constexprs=consts)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        src.make_ir(
            target, options, backend.get_codegen_implementation(options), backend.get_module_map(), ctx
        )
    for line in buf.getvalue().splitlines():
        if line.startswith("AUTOPAD_BANK_CONFLICTS"):
            return int(line.split()[-1])
    raise RuntimeError(f"gl.bank_conflicts printed nothing: {buf.getvalue()!r}")


SWEEP_SPT = ((1, 1), (1, 2), (1, 4), (1, 8), (1, 16), (2, 1), (4, 1), (8, 1), (2, 2))
SWEEP_TPW = ((1, 32), (4, 8), (8, 4), (32, 1), (16, 2))
SWEEP_WARPS = (((4, 1), (1, 0)), ((1, 4), (0, 1)), ((2, 2), (1, 0)))
SWEEP_SWIZZLES = ((1, 1, 1), (1, 1, 8), (4, 1, 8), (8, 1, 8), (2, 2, 4), (1, 1, 32), (8, 2, 4), (16, 1, 4))


def model_conflicts_per_wavefront(layout: Blocked, shape: Sequence[int], smem: Swizzled) -> int:
    """autopad's count in ``gl.bank_conflicts``' unit: the worst instruction's extra wavefronts per ideal one.

    Triton's counter reports, for the layout's ``ld.shared``, how many extra accesses each wavefront needs
    (an instruction of ``w`` wavefronts that ideally needs ``d`` reports ``w / d - 1``).
    """
    pc = score_layouts(layout, shape, smem, "load")
    return int(max(w // d - 1 for _, _, w, d in pc.per_instruction))


_SUBWORD = "sub-word access: Triton counts one-element banks; sm_90 banks are 4-byte words (H200 probes)"


def bank_conflict_sweep(
    shape: Sequence[int] = (64, 64), elem_bytes: Sequence[int] = (4, 8, 2, 1), limit: int | None = None
) -> list[dict]:
    """Rows comparing autopad with ``gl.bank_conflicts`` over register layouts x swizzles x dtypes."""
    out = []
    for eb in elem_bytes:
        for spt in SWEEP_SPT:
            for tpw in SWEEP_TPW:
                for wpc, order in SWEEP_WARPS:
                    lay = Blocked(spt, tpw, wpc, order)
                    for sv, pp, mp in SWEEP_SWIZZLES:
                        try:
                            smem = Swizzled(
                                int(shape[0]), int(shape[1]), eb, sw_vec=sv, per_phase=pp, max_phase=mp
                            )
                        except ValueError:
                            continue
                        v = vector_width(lay, shape, smem)
                        ours = model_conflicts_per_wavefront(lay, shape, smem)
                        theirs = bank_conflicts_gluon(lay, shape, smem)
                        why = ""
                        if ours != theirs:
                            why = _SUBWORD if v * eb < 4 else "unexplained"
                        out.append(
                            {
                                "elem_bytes": eb,
                                "shape": f"{shape[0]}x{shape[1]}",
                                "size_per_thread": f"{spt[0]}x{spt[1]}",
                                "threads_per_warp": f"{tpw[0]}x{tpw[1]}",
                                "warps_per_cta": f"{wpc[0]}x{wpc[1]}",
                                "order": f"{order[0]}{order[1]}",
                                "sw_vec": sv,
                                "per_phase": pp,
                                "max_phase": mp,
                                "access_bytes": v * eb,
                                "autopad": ours,
                                "gl_bank_conflicts": theirs,
                                "agree": int(ours == theirs),
                                "why": why,
                            }
                        )
                        if limit and len(out) >= limit:
                            return out
    return out
