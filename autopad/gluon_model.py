"""Gluon layouts -> autopad's bank-conflict model (numpy only), plus a no-GPU sm_90 compile helper.

A Gluon kernel moves a register tensor to or from shared memory with ``smem.store(x)`` / ``smem.load(L)``.
Which lane touches which element in each ``st.shared`` / ``ld.shared`` follows from two things: the
register layout (a ``gl.BlockedLayout``: size_per_thread, threads_per_warp, warps_per_cta, order) and the
shared layout (``gl.SwizzledSharedLayout`` / ``gl.PaddedSharedLayout``, here an autopad ``Tile``: ``Swizzled``
or ``Padded``). This module rebuilds what Triton's lowering does, vectorised with numpy:

1. The blocked layout as a *linear layout*: each bit of the register, lane and warp index contributes one
   basis vector (a power of two along one tensor dimension); register bits first cover ``size_per_thread``
   (fastest dimension first, as ``order`` says), lane bits ``threads_per_warp``, warp bits
   ``warps_per_cta``; further register bits repeat the CTA tile until it covers the tensor. A lane or warp
   basis that points past the tensor becomes zero (those threads hold copies: broadcast).
2. The vector width: the longest run of leading register bits that step one element at a time along the
   shared layout's contiguous dimension (row-major, ``order=[1, 0]``), capped at 16 bytes and, for an XOR
   swizzle, at ``sw_vec`` (chunks are permuted independently, so a vector may not straddle two).
3. One instruction per warp per vector of registers: lane ``l`` accesses the element its registers
   ``[j*v, (j+1)*v)`` hold, ``v * elem_bytes`` bytes wide. The layout turns (row, col) into byte addresses
   and the model (``autopad.access.score``) counts wavefronts: 32 banks of 4 bytes, bank ``(addr // 4) % 32``.

Why it matters: with an fp32 ``[1, 4]`` register layout writing a ``[64, 64]`` tile row-major, eight lanes
cover one 128-byte row (all 32 banks) and each 16-byte store phase serves 8 lanes, so no conflict; reading
the same tile down its columns (``order=[0, 1]``) puts lanes 0..31 in rows 0..31 of one column: a row is
256 bytes = two full turns of the banks, so all 32 lanes hit one bank (32 wavefronts). Padding each row
by one word, or XOR-swizzling its 16-byte chunks by row, spreads them over 32 banks (1 wavefront).

``compile_sm90`` compiles a (Gluon or plain Triton) kernel for sm_90 without a GPU (its ``.metadata.shared``
is the allocation size); ``bank_conflicts_gluon`` reads Triton's own conflict counter.

Where each part lives (gluon_model.py was split, one concern a module; every name it defined is still
importable from here, the names other modules and the Gluon specs use: ``Blocked``, ``moves``, ``Moves``,
``to_gluon``, ``compile_sm90``, ...): gluon_blocked.py (``Blocked`` and step 1, ``lane_elements``),
gluon_moves.py (steps 2 and 3: ``vector_cap``, ``vector_width``, ``instructions``, ``Moves``, ``moves``,
``score_layouts``), gluon_triton.py (everything that imports triton: ``to_gluon``, ``compile_sm90``,
``bank_conflicts_gluon``, the comparison sweep).
"""

from __future__ import annotations

from .gluon_blocked import _FIELDS, Blocked, _apply, _bases, lane_elements  # noqa: F401
from .gluon_moves import (  # noqa: F401
    Moves,
    _arrays,
    _capped_bits,
    _lanes,
    _moves,
    _vector_bits,
    instruction_arrays,
    instructions,
    moves,
    score_layouts,
    vector_cap,
    vector_width,
)
from .gluon_triton import (  # noqa: F401
    _GL_DTYPES,
    _PROBE,
    _SUBWORD,
    SWEEP_SPT,
    SWEEP_SWIZZLES,
    SWEEP_TPW,
    SWEEP_WARPS,
    _probe_kernel,
    bank_conflict_sweep,
    bank_conflicts_gluon,
    compile_sm90,
    model_conflicts_per_wavefront,
    to_gluon,
)

__all__ = [
    "Blocked",
    "lane_elements",
    "vector_cap",
    "vector_width",
    "instructions",
    "instruction_arrays",
    "moves",
    "Moves",
    "score_layouts",
    "to_gluon",
    "compile_sm90",
]
