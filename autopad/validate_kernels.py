"""The probe kernels of ``autopad validate``: their CUDA source and names, one shared-memory instruction each.

What: ``probe_source`` (a predicated ``ld.shared`` / ``st.shared`` / ``atom.shared.add`` in inline PTX, one
warp), ``new_probe_source`` (one ``ldmatrix`` / ``stmatrix`` / ``cp.async``), ``any_probe_source``,
``stride_source`` (the seeds' stride micro-benchmark), ``kernel_name`` / ``probe_kernel_name`` (what ncu's
"Kernel Name" column shows), and the constants they share with the probes (``SMEM_BYTES``,
``GLOBAL_BYTES``, ``NEW_FORMS``). Why inline PTX: see autopad/validate_cuda.py.

Why apart: writing the kernels is text only (no torch, no CUDA, no ncu); launching them is
validate_cuda.py, reading their counters validate_ncu.py. Moved from autopad/validate_cuda.py unchanged;
``autopad.validate_cuda`` re-exports every name.
"""

from __future__ import annotations

import re

__all__ = [
    "GLOBAL_BYTES",
    "NEW_FORMS",
    "SMEM_BYTES",
    "any_probe_source",
    "kernel_name",
    "new_probe_source",
    "probe_kernel_name",
    "probe_source",
    "stride_source",
]

SMEM_BYTES = 48 * 1024  # the static shared array every probe addresses into
_OPS = _SHORT = {"load": "ld", "store": "st", "atomic": "atom"}
_TYPES = {1: "u8", 2: "u16", 4: "u32", 8: "v2.u32", 16: "v4.u32"}
GLOBAL_BYTES = 64 * 1024  # the global buffer cp.async probes copy from
# (model op, bytes, instruction form): every ldmatrix/stmatrix/cp.async form the probes cover
_MATRIX_OPS = [f"{m}.x{k}{t}" for m in ("ldmatrix", "stmatrix") for k in (1, 2, 4) for t in ("", ".trans")]
NEW_FORMS = tuple((op, 16, op) for op in _MATRIX_OPS) + tuple(
    ("cp.async", w, f)
    for w, f in ((4, "cp.async.ca"), (8, "cp.async.ca"), (16, "cp.async.ca"), (16, "cp.async.cg"))
)
_MATRIX = re.compile(r"^(ldmatrix|stmatrix)\.x([124])(\.trans)?$")
_FAMILY = {"ldmatrix": "ldsm", "stmatrix": "stsm", "cp.async": "ldgsts"}


def _family(op: str) -> str | None:
    m = _MATRIX.match(op)
    return _FAMILY[m.group(1)] if m else ("ldgsts" if op == "cp.async" else None)


def kernel_name(op: str, access_bytes: int, form: str | None = None) -> str:
    """``probe_ld_u32``, ``probe_st_v4_u32``, ``probe_atom_u32``, ``probe_ldsm_x4_trans``,
    ``probe_stsm_x1``, ``probe_ldgsts_cg_16``: what ncu's "Kernel Name" column shows."""
    m = _MATRIX.match(op) if isinstance(op, str) else None
    if m and access_bytes == 16:
        return f"probe_{_FAMILY[m.group(1)]}_x{m.group(2)}{'_trans' if m.group(3) else ''}"
    if op == "cp.async" and (form or "cp.async.ca", access_bytes) in (
        ("cp.async.ca", 4),
        ("cp.async.ca", 8),
        ("cp.async.ca", 16),
        ("cp.async.cg", 16),
    ):
        return f"probe_ldgsts_{(form or 'cp.async.ca')[-2:]}_{access_bytes}"
    if op not in _OPS or access_bytes not in _TYPES or (op == "atomic" and access_bytes != 4):
        raise ValueError(f"no probe kernel for op={op!r}, access_bytes={access_bytes!r}, form={form!r}")
    return f"probe_{_OPS[op]}_{_TYPES[access_bytes].replace('.', '_')}"


def probe_kernel_name(p: dict) -> str:
    """The kernel that runs probe ``p``."""
    return kernel_name(p["op"], int(p["access_bytes"]), p.get("form"))


def _ptx(op: str, access_bytes: int) -> tuple[str, str, str]:
    """(PTX body, output operands, input operands) for the single predicated instruction."""
    t = _TYPES[access_bytes]
    nv = max(1, access_bytes // 4)
    regs = ", ".join(f"%{i}" for i in range(nv))
    vec = "{" + regs + "}" if nv > 1 else "%0"
    outs = ", ".join(f'"+r"(v{i})' for i in range(nv))
    a, sa = f"%{nv}", f"%{nv + 1}"
    pred = f"{{\\n\\t.reg .pred p;\\n\\tsetp.ge.s32 p, {a}, 0;\\n\\t"
    if op == "load":
        return pred + f"@p ld.shared.{t} {vec}, [{sa}];\\n\\t}}", outs, '"r"(a), "r"(sa)'
    if op == "atomic":
        return pred + f"@p atom.shared.add.u32 %0, [{sa}], 1;\\n\\t}}", outs, '"r"(a), "r"(sa)'
    # store: the values are inputs; operand numbering starts at the address
    pred = "{\\n\\t.reg .pred p;\\n\\tsetp.ge.s32 p, %0, 0;\\n\\t"
    vals = ", ".join(f"%{i + 2}" for i in range(nv))
    vec = "{" + vals + "}" if nv > 1 else "%2"
    ins = '"r"(a), "r"(sa), ' + ", ".join(f'"r"(v{i})' for i in range(nv))
    return pred + f"@p st.shared.{t} [%1], {vec};\\n\\t}}", "", ins


def probe_source(op: str, access_bytes: int) -> str:
    """CUDA source of one kernel: one warp, ONE shared-memory instruction at per-lane byte offsets.

    ``probe_x(const int* addr, unsigned* out, int flag)``: lane ``l`` accesses byte ``addr[l]`` of a 48 KB
    static shared array, or sits the instruction out when ``addr[l] < 0``. ``out`` (4 words per lane) is
    written only when ``flag`` is non-zero, which keeps a loaded value alive without touching shared memory.
    """
    name = kernel_name(op, access_bytes)
    nv = max(1, access_bytes // 4)
    body, outs, ins = _ptx(op, access_bytes)
    init = " ".join(f"unsigned v{i} = lane * 4u + {i}u;" for i in range(nv))
    keep = " ^ ".join(f"v{i}" for i in range(nv))
    return f"""// autopad validate: one {op} of {access_bytes} byte(s) per active lane, one instruction
extern "C" __global__ void {name}(const int* __restrict__ addr, unsigned* __restrict__ out, int flag)
{{
    __shared__ __align__(16) unsigned char smem[{SMEM_BYTES}];
    const unsigned lane = threadIdx.x;
    const int a = addr[lane];
    const unsigned sa = (unsigned)__cvta_generic_to_shared(smem) + (unsigned)(a < 0 ? 0 : a);
    {init}
    asm volatile("{body}" : {outs} : {ins} : "memory");
    if (flag) {{
        out[lane] = {keep};
    }}
}}
"""


def new_probe_source(op: str, access_bytes: int, form: str | None = None) -> str:
    """CUDA source of one ldmatrix/stmatrix/cp.async probe: one warp, ONE such instruction.

    ``probe_x(const int* addr, unsigned* out, int flag, const unsigned char* gsrc)``: lane ``l`` gives
    byte ``addr[l]`` of the 48 KB static shared array (ldmatrix/stmatrix: the start of its 16-byte row;
    every lane gives one, lanes past 8 x matrices included, as the instruction is warp-wide); cp.async
    copies ``access_bytes`` from ``gsrc + addr[32 + l]`` to it, or sits out when ``addr[l] < 0``.
    """
    name = kernel_name(op, access_bytes, form)
    head = f"""// autopad validate: one {form or op} of {access_bytes} byte(s) per lane, one instruction
extern "C" __global__ void {name}(const int* __restrict__ addr, unsigned* __restrict__ out, int flag,
                                  const unsigned char* __restrict__ gsrc)
{{
    __shared__ __align__(128) unsigned char smem[{SMEM_BYTES}];
    const unsigned lane = threadIdx.x;
    const int a = addr[lane];
    const unsigned sa = (unsigned)__cvta_generic_to_shared(smem) + (unsigned)(a < 0 ? 0 : a);
"""
    m = _MATRIX.match(op)
    if m:
        k, trans = int(m.group(2)), ".trans" if m.group(3) else ""
        regs = ", ".join(f"%{i}" for i in range(k))
        if m.group(1) == "ldmatrix":
            outs = ", ".join(f'"=r"(v{i})' for i in range(k))
            decl = " ".join(f"unsigned v{i} = 0u;" for i in range(k))
            asm = (
                f'asm volatile("ldmatrix.sync.aligned.m8n8.x{k}{trans}.shared.b16 {{{regs}}}, [%{k}];" '
                f': {outs} : "r"(sa) : "memory");'
            )
        else:
            vals = ", ".join(f"%{i + 1}" for i in range(k))
            ins = ", ".join(f'"r"(v{i})' for i in range(k))
            decl = " ".join(f"unsigned v{i} = lane * 4u + {i}u;" for i in range(k))
            asm = (
                f'asm volatile("stmatrix.sync.aligned.m8n8.x{k}{trans}.shared.b16 [%0], {{{vals}}};" '
                f':: "r"(sa), {ins} : "memory");'
            )
        keep = " ^ ".join(f"v{i}" for i in range(k))
        return (
            head
            + f"""    {decl}
    {asm}
    if (flag) {{
        out[lane] = {keep};
    }}
}}
"""
        )
    form = form or "cp.async.ca"
    body = (
        "{\\n\\t.reg .pred p;\\n\\tsetp.ge.s32 p, %0, 0;\\n\\t"
        f"@p {form}.shared.global [%1], [%2], {access_bytes};\\n\\t}}"
    )
    return (
        head
        + f"""    const int g = addr[32 + lane];
    const unsigned char* gp = gsrc + (g < 0 ? 0 : g);
    asm volatile("{body}" :: "r"(a), "r"(sa), "l"(gp) : "memory");
    asm volatile("cp.async.wait_all;" ::: "memory");
    if (flag) {{
        out[lane] = (unsigned)(size_t)gp;
    }}
}}
"""
    )


def any_probe_source(p: dict) -> str:
    """The CUDA source of the kernel that runs probe ``p``."""
    if _family(p["op"]):
        return new_probe_source(p["op"], int(p["access_bytes"]), p.get("form"))
    return probe_source(p["op"], int(p["access_bytes"]))


def stride_source() -> str:
    """The seeds' stride micro-benchmark: lanes read ``tile[(lane * stride + i) & 2047]``, ``iters`` times."""
    return """// autopad validate: shared-memory stride micro-benchmark (seeds' stride table)
extern "C" __global__ void stride_read(float* __restrict__ out, int stride, int iters)
{
    __shared__ float tile[2048];
    for (int i = threadIdx.x; i < 2048; i += blockDim.x) tile[i] = (float)i;
    __syncthreads();
    const int base = (int)(threadIdx.x & 31) * stride;
    float acc = 0.0f;
#pragma unroll 8
    for (int i = 0; i < iters; ++i) acc += tile[(base + i) & 2047];
    if (acc == -1.0f) out[blockIdx.x * blockDim.x + threadIdx.x] = acc;  // never true; keeps the loads
}
"""
