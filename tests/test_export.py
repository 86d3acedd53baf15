"""Exports: JSON round trip and determinism, C headers whose offset macros equal the model's, merged
headers in which host and device code agree (checked with nvcc for two architectures, with planted
mismatches), Python modules a Triton kernel imports directly, overwrite protection and atomic writes.

Strings that try to escape (control characters, line ends, trigraphs, comment ends, non-ASCII) are in
test_export_fuzz.py.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import textwrap
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from autopad import layouts
from autopad.export import (
    c_name,
    device_macro,
    export_result,
    layout_spec,
    load_result,
    merge_header,
    render,
    render_json,
    render_merged_header,
    spec_offset,
)
from autopad.results import Best, CandidateResult, Measurement, TuneResult
from autopad.search import Prediction

NVCC = shutil.which("nvcc") or ("/usr/local/bin/nvcc" if os.path.exists("/usr/local/bin/nvcc") else None)
GXX = shutil.which("g++")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc not found")
needs_gxx = pytest.mark.skipif(GXX is None, reason="g++ not found")
GLUON = "gl.SwizzledSharedLayout(vec=4, per_phase=1, max_phase=8, order=[1, 0])"
TWO_ARCHS = ["-gencode", "arch=compute_80,code=sm_80", "-gencode", "arch=compute_90,code=sm_90"]


def make_result(
    constants=None,
    device=("NVIDIA H200", "90"),
    kernel="transpose",
    extra=None,
    measured: float | None = 0.0123,
    dtype: str = "float32",
) -> TuneResult:
    """A hand-made result: three candidates (one failed, one unmeasured) and the given best."""
    constants = constants or {"TILE": 32, "PAD": 1, "SWIZZLE": 0, "VEC": 1}
    pred = Prediction(1.5e-5, "dram", 32, 32, 0.75, 4224)
    cands = (
        CandidateResult(
            dict(constants),
            "pad 1",
            pred,
            ("textbook",),
            Measurement("best", True, measured, 0.0002, 30) if measured else None,
        ),
        CandidateResult(
            {**constants, "PAD": 0},
            "unpadded",
            replace(pred, wavefronts_per_tile=1024),
            ("unpadded",),
            Measurement("PAD=0", True, 0.05, 0.001, 30),
        ),
        CandidateResult(
            {**constants, "PAD": 8},
            "pad 8",
            replace(pred, seconds=float("inf")),
            (),
            Measurement("PAD=8", False, None, None, 0, "fault: misaligned address"),
        ),
    )
    best = Best(dict(constants), "pad 1", 1.5e-5, measured, dict(extra or {}))
    dev = {"name": device[0], "cc": device[1]} if device else {}
    return TuneResult(
        kernel,
        "cuda",
        (8192, 8192),
        dtype,
        "sm_90",
        "measured" if measured else "model-only",
        "test result",
        best,
        cands,
        dev,
        {"autopad": "0.1.0", "date": "2026-01-01"},
    )


SWIZZLED = dict(
    constants={"TILE": 32, "PAD": 0, "SWIZZLE": 3, "VEC": 4},
    extra={"cute_swizzle": [3, 2, 3], "gluon_layout": GLUON},
)


def tile(rows, cols, eb=4, pad=0, sw_vec=1, per_phase=1, max_phase=1) -> dict:
    return dict(
        kind="tile", rows=rows, cols=cols, elem_bytes=eb, pad=pad, sw_vec=sw_vec, per_phase=per_phase,
        max_phase=max_phase,
    )  # fmt: skip


def compile_all(jobs: list[tuple[str, list[str]]]) -> list[subprocess.CompletedProcess]:
    """Run each (name, command) in parallel (nvcc takes a few seconds per file)."""

    def one(job):
        return subprocess.run(job[1], capture_output=True, text=True, timeout=300)

    with ThreadPoolExecutor(max_workers=max(1, len(jobs))) as pool:
        return list(pool.map(one, jobs))


def nvcc(cu: Path, *flags: str) -> list[str]:
    out = cu.with_suffix(f".{abs(hash(flags)) % 10**8}.o")
    return [NVCC, "-x", "cu", "-std=c++17", "-c", str(cu), "-o", str(out), "-I", str(cu.parent), *flags]


def import_file(path: Path):
    spec = importlib.util.spec_from_file_location(f"autopad_export_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_cpp(tmp_path: Path, name: str, source: str, *flags: str) -> str:
    """Compile ``source`` with g++ and run it; its stdout."""
    src = tmp_path / f"{name}.cpp"
    src.write_text(source)
    exe = tmp_path / name
    cmd = [GXX, "-std=c++17", "-Wall", "-Werror", "-I", str(tmp_path), *flags, str(src), "-o", str(exe)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return subprocess.run([str(exe)], capture_output=True, text=True, timeout=60, check=True).stdout


# ---- names ---------------------------------------------------------------------------------------


def test_names_become_c_identifiers():
    assert c_name("tile-m") == "TILE_M" and c_name("my kernel v2") == "MY_KERNEL_V2"
    assert device_macro("NVIDIA H200") == "AUTOPAD_DEVICE_NVIDIA_H200"
    assert device_macro("NVIDIA A100-SXM4-80GB") == "AUTOPAD_DEVICE_NVIDIA_A100_SXM4_80GB"
    assert c_name("caf\u00e9 \u00fcber") == "CAF_BER"  # non-ASCII letters are not C identifier characters
    with pytest.raises(ValueError, match="identifier"):
        c_name("--")
    with pytest.raises(ValueError, match="starts with a digit"):
        export_result(make_result({"3d": 1}), "/nonexistent/x.h")
    with pytest.raises(ValueError, match="both become"):
        export_result(make_result({"tile-m": 1, "TILE_M": 2}), "/nonexistent/x.h")
    with pytest.raises(ValueError, match="defined twice"):  # a constant named like a generated macro
        export_result(make_result({"LAYOUT": 1}), "/nonexistent/x.h")


# ---- JSON ----------------------------------------------------------------------------------------


def test_json_round_trips_every_candidate_and_environment(tmp_path):
    res = make_result(**SWIZZLED)
    p = export_result(res, tmp_path / "t.json")
    back = load_result(p)
    assert back == res
    d = json.loads(p.read_text())
    assert len(d["candidates"]) == 3 and d["environment"]["date"] == "2026-01-01"
    assert d["candidates"][2]["measurement"]["error"] == "fault: misaligned address"
    assert res.export(tmp_path / "t2.json") == tmp_path / "t2.json"  # through TuneResult.export
    assert load_result(tmp_path / "t2.json") == res


def test_json_export_is_deterministic(tmp_path):
    """Equal results give equal bytes, whatever order their dicts were built in; re-exporting a loaded
    result gives the same bytes again."""
    spec = tile(32, 64, sw_vec=4, per_phase=4, max_phase=16)
    a = make_result(extra={"layout_spec": spec, "gluon_layout": GLUON})
    b = replace(
        a,
        best=replace(a.best, extra=dict(reversed(list(a.best.extra.items())))),
        environment=dict(reversed(list(a.environment.items()))),
        device=dict(reversed(list(a.device.items()))),
    )
    assert render_json(a) == render_json(b)
    p1, p2 = export_result(a, tmp_path / "a.json"), export_result(b, tmp_path / "b.json")
    assert p1.read_bytes() == p2.read_bytes()
    export_result(load_result(p1), tmp_path / "c.json")
    assert (tmp_path / "c.json").read_bytes() == p1.read_bytes()
    export_result(a, p1)  # the same result again: same bytes, so no FileExistsError
    np_extra = replace(a, best=replace(a.best, extra={"layout_spec": {**spec, "rows": np.int64(32)}}))
    assert json.loads(render_json(np_extra))["best"]["extra"]["layout_spec"]["rows"] == 32


# ---- C header ------------------------------------------------------------------------------------


def test_header_text(tmp_path):
    text = export_result(make_result(**SWIZZLED), tmp_path / "transpose.h").read_text()
    assert "#ifndef AUTOPAD_GUARD_TRANSPOSE_H_" in text and text.rstrip().endswith(
        "#endif  // AUTOPAD_GUARD_TRANSPOSE_H_"
    )
    for line in [
        "#define AUTOPAD_TRANSPOSE_TILE 32",
        "#define AUTOPAD_TRANSPOSE_PAD 0",
        "#define AUTOPAD_TRANSPOSE_SWIZZLE 3",
        "#define AUTOPAD_TRANSPOSE_VEC 4",
        "#define AUTOPAD_TRANSPOSE_CUTE_SWIZZLE_B 3",
        "#define AUTOPAD_TRANSPOSE_CUTE_SWIZZLE_M 2",
        "#define AUTOPAD_TRANSPOSE_CUTE_SWIZZLE_S 3",
        "#define AUTOPAD_TRANSPOSE_CUTE_SWIZZLE cute::Swizzle<3, 2, 3>",
        f"// Gluon: {GLUON}",
        '#define AUTOPAD_TRANSPOSE_LAYOUT "pad 1"',
    ]:
        assert line in text.splitlines(), line
    assert "NVIDIA H200 (sm_90)" in text and "8192x8192" in text and "float32" in text
    assert "measured 0.0123 ms" in text and "predicted 0.015 ms" in text
    assert "SMEM_OFF" not in text  # no layout_spec, no TILE_N: nothing to build an offset macro from
    plain = export_result(make_result(measured=None, kernel="my-kernel"), tmp_path / "p.h").read_text()
    assert "CUTE" not in plain and "Gluon" not in plain and "not measured" in plain
    assert "#define AUTOPAD_MY_KERNEL_PAD 1" in plain


def _general_tile(rows, cols, eb, pad, v, pp, mp):
    """autopad's tile with padding and a swizzle together (the shared formula)."""
    if hasattr(layouts, "Swizzle"):
        return layouts.Tile(rows, cols, eb, pad, swizzle=layouts.Swizzle(v, pp, mp))
    return layouts._Tile(rows, cols, eb, pad=pad, sw_vec=v, per_phase=pp, max_phase=mp)


def _offset_cases() -> list[tuple[str, dict, dict, object]]:
    """(kernel name, constants, extra, autopad's own layout object) for every layout kind."""
    cons = {"TILE_M": 32, "TILE_N": 64, "THREADS": 128}
    return [
        ("pad1", cons, {"layout_spec": tile(32, 32, pad=1)}, layouts.Padded(32, 32, 4, pad=1)),
        (
            "swz",
            cons,
            {"layout_spec": tile(32, 64, sw_vec=4, per_phase=4, max_phase=16)},
            layouts.Swizzled(32, 64, 4, sw_vec=4, per_phase=4, max_phase=16),
        ),
        (
            "swz16",
            cons,
            {"layout_spec": tile(64, 32, 2, sw_vec=8, max_phase=4)},
            layouts.Swizzled(64, 32, 2, sw_vec=8, max_phase=4),
        ),
        (  # padding and a swizzle together: the shared formula, which no single class spells
            "padswz",
            cons,
            {"layout_spec": tile(16, 32, 8, pad=4, sw_vec=4, per_phase=2, max_phase=8)},
            _general_tile(16, 32, 8, 4, 4, 2, 8),
        ),
        (
            "rep",
            cons,
            {
                "layout_spec": dict(
                    kind="replicated", bins=64, replicas=8, elem_bytes=4, interleaved=False, pad=1
                )
            },
            layouts.Replicated(64, 8, 4, pad=1),
        ),
        (
            "repil",
            cons,
            {
                "layout_spec": dict(
                    kind="replicated", bins=64, replicas=8, elem_bytes=4, interleaved=True, pad=2
                )
            },
            layouts.Replicated(64, 8, 4, interleaved=True, pad=2),
        ),
        (
            "aos",
            cons,
            {"layout_spec": dict(kind="structs", count=40, fields=[4, 8, 2], aos=True, pad=8)},
            layouts.Structs(40, (4, 8, 2), aos=True, pad=8),
        ),
        (
            "soa",
            cons,
            {"layout_spec": dict(kind="structs", count=40, fields=[4, 8, 2], aos=False, pad=0)},
            layouts.Structs(40, (4, 8, 2), aos=False),
        ),
        (  # an older result: no layout_spec, the CUDA transpose's constants
            "legacy",
            {"TILE_M": 32, "TILE_N": 64, "PAD": 0, "SW_VEC": 4, "SW_PER_PHASE": 2, "SW_MAX_PHASE": 8},
            {},
            layouts.Swizzled(32, 64, 4, sw_vec=4, per_phase=2, max_phase=8),
        ),
    ]


def _extent(lay) -> tuple[int, int]:
    if isinstance(lay, layouts.Replicated):
        return lay.replicas, lay.bins
    if isinstance(lay, layouts.Structs):
        return lay.count, len(lay.fields)
    return lay.rows, lay.cols


@needs_gxx
def test_offset_macros_equal_the_model_for_every_element(tmp_path):
    """g++ evaluates each header's offset macro for every (r, c) of its tile; the values are autopad's
    model offsets (layouts.*.offsets) and spec_offset. With a stand-in for CuTe's Swizzle (its documented
    formula), the exported CuTe type gives the same offsets where it exists."""
    cases = _offset_cases()
    includes, body = [], []
    for name, cons, extra, lay in cases:
        res = make_result(cons, kernel=name, extra=extra)
        export_result(res, tmp_path / f"{name}.h")
        includes.append(f'#include "{name}.h"')
        p = f"AUTOPAD_{name.upper()}"
        rows, cols = _extent(lay)
        byte_off = f"{p}_SMEM_BYTE_OFF(r, c)"
        elem = f"{p}_SMEM_OFF(r, c)" if not isinstance(lay, layouts.Structs) else "-1"
        cute = "-1"
        if layout_spec(res) and "CUTE_SWIZZLE_B" in (tmp_path / f"{name}.h").read_text():
            cute = f"autopad_{name}_cute_swizzle{{}}(r * {cols} + c)"
        body.append(
            f'  printf("{name} %d\\n", (int){p}_SMEM_BYTES);\n'
            f"  for (int r = 0; r < {rows}; ++r) for (int c = 0; c < {cols}; ++c)\n"
            f'    printf("%d %d %d\\n", (int)({byte_off}), (int)({elem}), (int)({cute}));'
        )
    fake_cute = textwrap.dedent("""\
        // stand-in for cute/swizzle.hpp: Swizzle<B, M, S> XORs bits [M+S, M+S+B) into [M, M+B)
        #define CUTE_HOST_DEVICE
        namespace cute {
        template <int B, int M, int S> struct Swizzle {
          static_assert(S >= B, "CuTe requires |S| >= B");
          constexpr int operator()(int o) const { return o ^ ((o >> S) & (((1 << B) - 1) << M)); }
        };
        }
        """)
    out = run_cpp(
        tmp_path,
        "offsets",
        fake_cute + "#include <cstdio>\n" + "\n".join(includes) + "\nint main() {\n" + "\n".join(body)
        + "\n  return 0;\n}\n",
    )  # fmt: skip
    lines = iter(out.splitlines())
    cute_seen = 0
    for name, cons, extra, lay in cases:
        head, foot = next(lines).split()
        assert head == name and int(foot) == lay.footprint, name
        spec = layout_spec(make_result(cons, kernel=name, extra=extra))
        rows, cols = _extent(lay)
        r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
        model = lay.offsets(r.ravel(), c.ravel())
        got = np.array([[int(x) for x in next(lines).split()] for _ in range(rows * cols)])
        assert (got[:, 0] == model).all(), name
        ours = np.array([spec_offset(spec, int(i), int(j)) for i, j in zip(r.ravel(), c.ravel())])
        if isinstance(lay, layouts.Structs):
            assert (ours == model).all(), name
        else:
            eb = spec["elem_bytes"]
            assert (got[:, 1] * eb == model).all() and (ours * eb == model).all(), name
        if got[0, 2] != -1:
            cute_seen += 1
            assert (got[:, 2] == got[:, 1]).all(), name
    assert cute_seen == 3  # the three power-of-two swizzles without padding


def test_spec_format_is_what_layouts_to_dict_writes():
    """The dicts this module reads are the ones autopad.layouts writes (where it has ``to_dict``)."""
    for _name, _cons, extra, lay in _offset_cases():
        if extra and hasattr(lay, "to_dict"):
            assert lay.to_dict() == extra["layout_spec"]


def test_layout_spec_is_validated():
    ok = make_result(extra={"layout_spec": tile(32, 64, sw_vec=4, max_phase=16)})
    assert layout_spec(ok)["max_phase"] == 16
    for bad, match in [
        ({**tile(32, 64), "sw_vec": 3}, "power of two"),
        ({**tile(32, 48, sw_vec=4, max_phase=8)}, "not a multiple"),
        ({**tile(32, 64), "pad": -1}, "pad"),
        ({**tile(32, 64), "rows": "32\n#define X"}, "rows"),
        ({**tile(32, 64), "cols": True}, "cols"),
        ({**tile(1 << 20, 1 << 20)}, "32-bit"),
        ({"kind": "replicated", "bins": 0}, "bins"),
        ({"kind": "structs", "count": 4, "fields": [3]}, "fields"),
        ("tile", "dict"),
    ]:
        with pytest.raises(ValueError, match=match):
            layout_spec(make_result(extra={"layout_spec": bad}))
    unknown = make_result(extra={"layout_spec": {"kind": "operands", "a": {}}})
    assert layout_spec(unknown) is None  # a kind from a newer autopad: no offset macro, no error


@needs_nvcc
def test_headers_compile_with_nvcc_and_a_kernel_needs_no_glue(tmp_path):
    """One nvcc run per case (in parallel, a few seconds each):

    - a transpose kernel that uses only the single header's macros (tile size, offsets, bytes), nothing
      else, for sm_90;
    - the merged header of two architectures, compiled for both (sm_80 and sm_90): each device pass
      asserts its own block's values, the host launches with ``config_for_cc``; the header's own
      static_asserts check that each pass's macros are its host-table row;
    - host code using a constant that differs per architecture: a compile error;
    - the same header with a planted mismatch in the sm_80 device block, then in the host table: both
      compile errors naming the macro;
    - a pinned device: host code may use the macros, and they are that device's.
    """
    spec = tile(32, 64, sw_vec=4, per_phase=4, max_phase=16)
    export_result(make_result({"TILE_M": 32, "TILE_N": 64, "THREADS": 128}, extra={"layout_spec": spec}),
                  tmp_path / "transpose.h")  # fmt: skip
    single = tmp_path / "single.cu"
    single.write_text(
        textwrap.dedent("""\
        #include "transpose.h"
        #include "transpose.h"
        static_assert(AUTOPAD_TRANSPOSE_SMEM_BYTES == 32 * 64 * 4, "bytes");
        __global__ void transpose(const float *x, float *y, int m, int n) {
          __shared__ __align__(16) unsigned char smem[AUTOPAD_TRANSPOSE_SMEM_BYTES];
          float *tile = reinterpret_cast<float *>(smem);
          int r0 = blockIdx.y * AUTOPAD_TRANSPOSE_TILE_M, c0 = blockIdx.x * AUTOPAD_TRANSPOSE_TILE_N;
          const int size = AUTOPAD_TRANSPOSE_TILE_M * AUTOPAD_TRANSPOSE_TILE_N;
          for (int i = threadIdx.x; i < size; i += blockDim.x) {
            int r = i / AUTOPAD_TRANSPOSE_TILE_N, c = i % AUTOPAD_TRANSPOSE_TILE_N;
            tile[AUTOPAD_TRANSPOSE_SMEM_OFF(r, c)] = x[(r0 + r) * n + c0 + c];
          }
          __syncthreads();
          for (int i = threadIdx.x; i < size; i += blockDim.x) {
            int c = i / AUTOPAD_TRANSPOSE_TILE_M, r = i % AUTOPAD_TRANSPOSE_TILE_M;
            y[(c0 + c) * m + r0 + r] = tile[AUTOPAD_TRANSPOSE_SMEM_OFF(r, c)];
          }
        }
        void launch(const float *x, float *y, int m, int n, cudaStream_t s) {
          dim3 grid(n / AUTOPAD_TRANSPOSE_TILE_N, m / AUTOPAD_TRANSPOSE_TILE_M);
          transpose<<<grid, AUTOPAD_TRANSPOSE_THREADS, 0, s>>>(x, y, m, n);
        }
        """)
    )
    a100 = make_result({"TILE_M": 64, "TILE_N": 64, "THREADS": 256}, ("NVIDIA A100-SXM4-80GB", "80"),
                       extra={"layout_spec": tile(64, 64, pad=1)})  # fmt: skip
    h200 = make_result({"TILE_M": 32, "TILE_N": 64, "THREADS": 128}, ("NVIDIA H200", "90"),
                       extra={"layout_spec": spec})  # fmt: skip
    merged = render_merged_header([a100, h200], "merged.h")
    (tmp_path / "merged.h").write_text(merged)
    old = "    #define AUTOPAD_TRANSPOSE_THREADS 256"
    assert merged.count(old) == 1  # the sm_80 device block (pinned blocks are indented by 2)
    (tmp_path / "bad_device.h").write_text(merged.replace(old, old[:-3] + "257"))
    row = "autopad_transpose_config c = {1, 80, 256"
    assert merged.count(row) == 1
    (tmp_path / "bad_host.h").write_text(merged.replace(row, row[:-3] + "512"))

    def kernel_file(name: str, header: str, host_code: str) -> Path:
        p = tmp_path / f"{name}.cu"
        p.write_text(
            textwrap.dedent(f"""\
            #include "{header}"
            __global__ void k(float *x) {{
            #if defined(__CUDA_ARCH__) && !defined(AUTOPAD_DEVICE_NVIDIA_H200)
            #  if __CUDA_ARCH__ >= 900
              static_assert(AUTOPAD_TRANSPOSE_TILE_M == 32 && AUTOPAD_TRANSPOSE_THREADS == 128, "sm_90");
              static_assert(AUTOPAD_TRANSPOSE_SMEM_BYTES == 32 * 64 * 4, "sm_90 bytes");
            #  else
              static_assert(AUTOPAD_TRANSPOSE_TILE_M == 64 && AUTOPAD_TRANSPOSE_THREADS == 256, "sm_80");
              static_assert(AUTOPAD_TRANSPOSE_SMEM_BYTES == 64 * 65 * 4, "sm_80 bytes");
            #  endif
            #endif
              __shared__ float t[AUTOPAD_TRANSPOSE_SMEM_BYTES / sizeof(float)];
              int r = threadIdx.x / AUTOPAD_TRANSPOSE_TILE_N, c = threadIdx.x % AUTOPAD_TRANSPOSE_TILE_N;
              t[AUTOPAD_TRANSPOSE_SMEM_OFF(r, c)] = x[threadIdx.x];
              __syncthreads();
              x[threadIdx.x] = t[AUTOPAD_TRANSPOSE_SMEM_OFF(c % AUTOPAD_TRANSPOSE_TILE_M, r)];
            }}
            {host_code}
            """)
        )
        return p

    launch = textwrap.dedent("""\
        int launch(float *x) {
          cudaFuncAttributes fa;
          if (cudaFuncGetAttributes(&fa, k) != cudaSuccess) return -1;
          autopad_transpose_config cfg = autopad_transpose_config_for_cc(fa.ptxVersion);
          if (!cfg.found) return -1;
          k<<<1, cfg.THREADS, 0>>>(x);
          return 0;
        }
        """)
    table = textwrap.dedent("""\
        static_assert(autopad_transpose_config_for_cc(90).THREADS == 128, "host table sm_90");
        #ifdef AUTOPAD_DEVICE_NVIDIA_H200
        static_assert(autopad_transpose_config_for_cc(75).THREADS == 128, "pinned: H200 everywhere");
        #else
        static_assert(autopad_transpose_config_for_cc(86).THREADS == 256, "host table sm_86 -> sm_80 block");
        static_assert(!autopad_transpose_config_for_cc(75).found, "nothing tuned below sm_80");
        #endif
        """)
    host_use = "int threads() { return AUTOPAD_TRANSPOSE_THREADS; }"
    pinned_use = 'static_assert(AUTOPAD_TRANSPOSE_THREADS == 128, "pinned H200");\n' + launch + table
    jobs = [
        ("single", nvcc(single, "-arch=sm_90")),
        ("merged", nvcc(kernel_file("ok", "merged.h", launch + table), *TWO_ARCHS)),
        ("host use", nvcc(kernel_file("host", "merged.h", host_use), "-arch=sm_80")),
        ("bad device", nvcc(kernel_file("bad_dev", "bad_device.h", launch), *TWO_ARCHS)),
        ("bad host", nvcc(kernel_file("bad_host", "bad_host.h", launch), *TWO_ARCHS)),
        (
            "pinned",
            nvcc(kernel_file("pin", "merged.h", pinned_use), *TWO_ARCHS, "-DAUTOPAD_DEVICE_NVIDIA_H200"),
        ),
    ]
    res = dict(zip([j[0] for j in jobs], compile_all(jobs)))
    for ok in ("single", "merged", "pinned"):
        assert res[ok].returncode == 0, f"{ok}:\n{res[ok].stderr}"
    assert res["host use"].returncode != 0
    assert "autopad_transpose_device_only_THREADS" in res["host use"].stderr
    assert res["bad device"].returncode != 0
    assert "AUTOPAD_TRANSPOSE_THREADS differs between host and device" in res["bad device"].stderr
    assert res["bad host"].returncode != 0
    assert "AUTOPAD_TRANSPOSE_THREADS differs between host and device" in res["bad host"].stderr


@needs_gxx
def test_merged_header_host_table_in_plain_cpp_and_c(tmp_path):
    """Host-only code (g++, gcc): config_for_cc follows the same rule as the device blocks; macros that
    agree are usable; one that differs is a compile error."""
    a100 = make_result({"TILE_M": 64, "TILE_N": 64}, ("NVIDIA A100-SXM4-80GB", "8.0"))
    h200 = make_result({"TILE_M": 32, "TILE_N": 64}, ("NVIDIA H200", (9, 0)))
    model = make_result({"TILE_M": 16, "TILE_N": 64}, device=None, measured=None)
    (tmp_path / "m.h").write_text(render_merged_header([a100, h200, model], "m.h"))
    out = run_cpp(
        tmp_path,
        "table",
        '#include <cstdio>\n#include "m.h"\nstatic_assert(AUTOPAD_TRANSPOSE_TILE_N == 64, "agreed");\n'
        "int main() {\n  static const int ccs[] = {60, 75, 80, 86, 89, 90, 100, 120};\n"
        "  for (int cc : ccs) {\n"
        "    autopad_transpose_config c = autopad_transpose_config_for_cc(cc);\n"
        '    printf("%d %d %d %d\\n", cc, c.found, c.cc, c.TILE_M);\n  }\n}\n',
    )
    rows = [tuple(int(x) for x in ln.split()) for ln in out.splitlines()]
    expect = {60: (0, 16), 75: (0, 16), 80: (80, 64), 86: (80, 64), 89: (80, 64), 90: (90, 32), 100: (90, 32)}
    expect[120] = (90, 32)
    assert [(cc, 1, *expect[cc]) for cc in expect] == rows
    bad = tmp_path / "bad.cpp"
    bad.write_text('#include "m.h"\nint f() { return AUTOPAD_TRANSPOSE_TILE_M; }\n')
    r = subprocess.run([GXX, "-fsyntax-only", "-I", str(tmp_path), str(bad)], capture_output=True, text=True)
    assert r.returncode != 0 and "TILE_M_differs_per_arch" in r.stderr
    bad.write_text('#include "m.h"\n#if AUTOPAD_TRANSPOSE_TILE_M > 32\n#endif\n')
    r = subprocess.run([GXX, "-fsyntax-only", "-I", str(tmp_path), str(bad)], capture_output=True, text=True)
    assert r.returncode != 0  # an #if on it: division by zero in #if
    c = subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", "-x", "c",
                        str(tmp_path / "m.h")], capture_output=True, text=True)  # fmt: skip
    assert c.returncode == 0, c.stderr


def test_merged_header_structure(tmp_path):
    a = make_result(device=("NVIDIA A100-SXM4-80GB", "8.0"), **SWIZZLED)
    b = make_result(
        {"TILE": 32, "PAD": 0, "SWIZZLE": 2, "VEC": 4},
        ("NVIDIA H200", "90"),
        extra={"cute_swizzle": "Swizzle<2,2,3>"},
    )
    c = make_result(device=None)  # no GPU: the fallback below every tuned architecture
    text = merge_header([a, b, c], tmp_path / "m.h").read_text()
    after = text.split("autopad_transpose_config_for_cc(int cc) {")[1]
    conds = [
        ln.split("  //")[0]
        for ln in after.splitlines()
        if ln.startswith("#") and ln.lstrip("# ").startswith(("if ", "elif", "else", "endif"))
    ]
    assert conds[:15] == [
        "#if defined(AUTOPAD_DEVICE_NVIDIA_A100_SXM4_80GB)",  # in config_for_cc
        "#elif defined(AUTOPAD_DEVICE_NVIDIA_H200)",
        "#else",
        "#endif",
        "#if defined(AUTOPAD_DEVICE_NVIDIA_A100_SXM4_80GB)",  # the macros
        "#elif defined(AUTOPAD_DEVICE_NVIDIA_H200)",
        "#elif defined(__CUDA_ARCH__)",
        "#  if __CUDA_ARCH__ >= 900",
        "#  elif __CUDA_ARCH__ >= 800",
        "#  else",
        "#  endif",
        "#else",
        "#  if defined(__CUDACC__)",
        "#    if defined(__CUDACC_RELAXED_CONSTEXPR__) && !defined(AUTOPAD_ALLOW_RELAXED_CONSTEXPR)",
        "#    endif",
    ]
    assert "  if (cc >= 90) return autopad_transpose_block_1();" in text
    assert "  if (cc >= 80) return autopad_transpose_block_0();" in text
    assert "  return autopad_transpose_block_2();" in text  # below sm_80: the result without a GPU
    # every block defines the same names; CuTe macros are left out since one result has no swizzle
    # 2 pinned + 2 architectures + the default + host code's two forms (it differs: nvcc's and plain C's)
    assert text.count("#define AUTOPAD_TRANSPOSE_SWIZZLE ") == 7
    assert text.count("#define AUTOPAD_TRANSPOSE_TILE ") == 6  # the same everywhere: host gets it once
    assert "#define AUTOPAD_TRANSPOSE_CUTE" not in text
    assert "cute::Swizzle<2, 2, 3>" in text  # still spelled in the comments
    assert "Left out" in text and "CUTE_SWIZZLE_B" in text


def test_merged_header_errors_name_the_files(tmp_path):
    a = make_result(device=("NVIDIA A100-SXM4-80GB", "8.0"))
    cpu1, cpu2 = make_result(device=None, measured=None), make_result(device=None, measured=None)
    with pytest.raises(
        ValueError, match=r"a\.json \(no GPU\) and b\.json \(no GPU\) are both for no GPU.*at most one"
    ):
        merge_header([cpu1, cpu2], tmp_path / "x.h", sources=["a.json", "b.json"])
    with pytest.raises(
        ValueError, match=r"result 1 .* and result 2 .* are both for device AUTOPAD_DEVICE_NVIDIA_A100"
    ):
        merge_header([a, a], tmp_path / "x.h")
    with pytest.raises(ValueError, match="one kernel's results"):
        merge_header([a, make_result(kernel="matmul")], tmp_path / "x.h")
    with pytest.raises(ValueError, match="one dtype's results"):
        merge_header([a, make_result(dtype="float16")], tmp_path / "x.h")
    with pytest.raises(ValueError, match=r"same constants.*\['PAD', 'SWIZZLE', 'VEC'\] that h\.json"):
        merge_header([a, make_result({"TILE": 32})], tmp_path / "x.h", sources=["a.json", "h.json"])
    with pytest.raises(ValueError, match="at least one"):
        merge_header([], tmp_path / "x.h")
    assert not (tmp_path / "x.h").exists()


def test_cli_export_two_results_without_a_gpu_is_an_error(tmp_path, capsys):
    from autopad.cli import main

    for name in ("a", "b"):
        export_result(make_result(device=None, measured=None), tmp_path / f"{name}.json")
    code = main(["export", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "-o", str(tmp_path / "m.h")])
    err = capsys.readouterr().err
    assert code != 0 and "no GPU" in err and "at most one" in err
    assert not (tmp_path / "m.h").exists()


def test_cli_export_and_tune_take_a_header_name(tmp_path, capsys, monkeypatch):
    """``--name`` prefixes a header's macros, from ``autopad export`` and ``autopad tune --export``; with a
    .py destination, or a name that is no C identifier, it is one line and exit 2 before any work."""
    from autopad.cli import main

    export_result(make_result(), tmp_path / "r.json")
    assert main(["export", str(tmp_path / "r.json"), "-o", str(tmp_path / "t.h"), "--name", "t_f32"]) == 0
    assert "#define AUTOPAD_T_F32_TILE 32" in (tmp_path / "t.h").read_text()
    for args, why in (
        (["-o", str(tmp_path / "t.py"), "--name", "t"], "give a .h destination"),
        (["-o", str(tmp_path / "u.h"), "--name", "9t"], "is not a C identifier"),
    ):
        capsys.readouterr()
        assert main(["export", str(tmp_path / "r.json"), *args]) == 2
        err = capsys.readouterr().err
        assert why in err and len(err.strip().splitlines()) == 1
    monkeypatch.setenv("AUTOPAD_NO_BENCH", "1")
    monkeypatch.setenv("AUTOPAD_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "tuned.h"
    code = main(
        ["tune", "transpose", "--shape", "256x256", "--quiet", "--export", str(out), "--name", "tp_256"]
    )
    assert code == 0 and "AUTOPAD_TP_256_SMEM_OFF" in out.read_text()
    assert (
        main(["tune", "transpose", "--shape", "256x256", "--export", str(tmp_path / "t.json"), "--name", "x"])
        == 2
    )


# ---- Python module -------------------------------------------------------------------------------


def test_python_module_imports_with_values(tmp_path):
    mod = import_file(export_result(make_result(**SWIZZLED), tmp_path / "transpose_consts.py"))
    assert (mod.TILE, mod.PAD, mod.SWIZZLE, mod.VEC) == (32, 0, 3, 4)
    assert mod.CONSTANTS == {"TILE": 32, "PAD": 0, "SWIZZLE": 3, "VEC": 4}
    assert mod.CONFIG == mod.CONSTANTS and mod.NUM_WARPS is None and mod.LAUNCH == {}
    assert mod.CUTE_SWIZZLE == (3, 2, 3) and mod.GLUON_LAYOUT == GLUON
    assert mod.DEVICE == "NVIDIA H200" and mod.CC == "90" and mod.SHAPE == (8192, 8192)
    assert mod.DTYPE == "float32" and mod.MEASURED_MS == 0.0123 and mod.KERNEL == "transpose"
    assert mod.ENVIRONMENT == {"autopad": "0.1.0", "date": "2026-01-01"} and mod.MESSAGE == "test result"
    assert mod.gluon_layout() is None and mod.LAYOUT_SPEC is None

    plain = import_file(
        export_result(
            make_result({"tile-m": 64, "pad": 1}, device=None, measured=None), tmp_path / "plain.py"
        )
    )
    assert plain.TILE_M == 64 and plain.PAD == 1 and plain.DEVICE == "" and plain.MEASURED_MS is None
    assert plain.CONFIG == {"pad": 1}  # kernel arguments keep their names; "tile-m" cannot be one
    assert plain.CUTE_SWIZZLE is None and plain.GLUON_LAYOUT is None
    with pytest.raises(ValueError, match="SHAPE"):
        export_result(make_result({"shape": 1}), tmp_path / "bad.py")


def test_python_constants_are_ints_on_the_host(tmp_path):
    """The constants are tl.constexpr for Triton and still behave as ints in host code."""
    tl = pytest.importorskip("triton.language")
    mod = import_file(export_result(make_result({"BM": 64, "PAD": 0}), tmp_path / "hostcfg.py"))
    bm = mod.BM
    assert isinstance(bm, int) and isinstance(bm, tl.constexpr) and bm.value == 64
    assert (bm * 2, 2 * bm, bm // 3, 100 % bm, 1 << (bm // 32)) == (128, 128, 21, 36, 4)
    assert (-bm, bm / 128) == (-64, 0.5)
    assert type(bm * 2) is int and type(bm * bm) is type(-bm) is type(bm)  # derived from constants only
    assert str(bm) == "64" and repr(bm) == "64" and f"{bm:4d}" == "  64"
    assert json.dumps({"bm": bm}) == '{"bm": 64}' and {64: "x"}[bm] == "x" and (bm == 64) is True
    assert list(range(bm))[-1] == 63 and not mod.PAD


def test_python_config_launch_and_gluon_layout(tmp_path):
    triton = pytest.importorskip("triton")
    from triton.experimental.gluon import language as gl

    extra = {
        "layout_spec": tile(64, 64, pad=4),
        "kernel_args": ["BM", "BN", "PAD"],
        "launch": {"num_warps": 8, "num_stages": 3},
    }
    mod = import_file(
        export_result(
            make_result({"BM": 64, "BN": 64, "PAD": 4, "WARPS": 8}, extra=extra), tmp_path / "cfg1.py"
        )
    )
    assert mod.CONFIG == {"BM": 64, "BN": 64, "PAD": 4} and (mod.NUM_WARPS, mod.NUM_STAGES) == (8, 3)
    cfg = mod.triton_config()
    assert isinstance(cfg, triton.Config) and cfg.kwargs == mod.CONFIG
    assert (cfg.num_warps, cfg.num_stages) == (8, 3)
    assert triton.Config(mod.CONFIG, **mod.LAUNCH).all_kwargs() == cfg.all_kwargs()
    padded = mod.gluon_layout()
    assert isinstance(padded, gl.PaddedSharedLayout) and padded.interval_padding_pairs == [[64, 4]]
    assert mod.GLUON_LAYOUT == "gl.PaddedSharedLayout.with_identity_for([[64, 4]], [64, 64], [1, 0])"

    swz = dict(extra, layout_spec=tile(64, 64, sw_vec=4, per_phase=2, max_phase=8))
    mod2 = import_file(
        export_result(make_result({"BM": 64, "BN": 64, "PAD": 0}, extra=swz), tmp_path / "cfg2.py")
    )
    assert mod2.gluon_layout() == gl.SwizzledSharedLayout(vec=4, per_phase=2, max_phase=8, order=[1, 0])
    assert mod2.CUTE_SWIZZLE == (3, 2, 5) and mod2.LAYOUT_SPEC["max_phase"] == 8
    for bad, match in [(["BM", "nope"], "not one of the constants"), (["B M"], "not a Python identifier")]:
        with pytest.raises(ValueError, match=match):
            export_result(make_result({"BM": 64}, extra={"kernel_args": bad}), tmp_path / "bad.py")


_KERNELS = """import triton
import triton.language as tl

from {mod} import BM, BN, PAD


@triton.jit
def copy_tile(x_ptr, y_ptr, n_cols, BM: tl.constexpr, BN: tl.constexpr, PAD: tl.constexpr):
    r = tl.program_id(0) * BM + tl.arange(0, BM)[:, None]
    c = tl.arange(0, BN)[None, :]
    v = tl.load(x_ptr + r * n_cols + c)
    tl.store(y_ptr + r * n_cols + c, v * 2 + PAD)


@triton.jit
def scale(x_ptr, y_ptr):  # reads the imported module globals directly
    offs = tl.arange(0, BM * BN // 64)
    v = tl.load(x_ptr + offs)
    if PAD:
        v = v + 1000
    for i in tl.static_range(BN // 32):
        v = v + i
    tl.store(y_ptr + offs, v * BM + BN)
"""


def _import(tmp_path: Path, name: str, text: str):
    (tmp_path / f"{name}.py").write_text(text)
    return importlib.import_module(name)


@pytest.mark.parametrize("mode", ["run", "compile"])
def test_triton_kernel_imports_the_exported_constants(tmp_path, monkeypatch, mode):
    """A @triton.jit kernel does ``from cfg import BM, BN, PAD``: it runs under TRITON_INTERPRET=1 on CPU
    tensors (with ``**CONFIG, **LAUNCH`` for its constexpr arguments), and compiles for sm_90
    (compile_sm90) to the same PTX as with the constants declared as plain ``tl.constexpr``."""
    pytest.importorskip("triton")
    torch = pytest.importorskip("torch")
    tag = f"{mode}_{os.getpid()}_{abs(hash(str(tmp_path))) % 10**8}"
    extra = {"kernel_args": ["BM", "BN", "PAD"], "launch": {"num_warps": 4, "num_stages": 2}}
    res = make_result({"BM": 16, "BN": 64, "PAD": 1, "WARPS": 4}, extra=extra)
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = _import(tmp_path, f"cfg_{tag}", export_result(res, tmp_path / "x.py").read_text())
    if mode == "run":
        monkeypatch.setenv("TRITON_INTERPRET", "1")
        k = _import(tmp_path, f"k_{tag}", _KERNELS.format(mod=cfg.__name__))
        x = torch.arange(16 * 64, dtype=torch.float32).reshape(16, 64)
        y = torch.empty_like(x)
        k.copy_tile[(1,)](x, y, x.shape[1], **cfg.CONFIG)
        assert torch.equal(y, x * 2 + 1)
        z = torch.empty(16)
        k.scale[(1,)](x, z)
        assert torch.equal(z, (x.flatten()[:16] + 1000 + 1) * 16 + 64)
        return
    from autopad.gluon_model import compile_sm90

    plain = _import(tmp_path, f"plain_{tag}", "import triton.language as tl\nBM, BN, PAD = tl.constexpr(16), "
                    "tl.constexpr(64), tl.constexpr(1)\n")  # fmt: skip
    ptx = []
    for mod in (cfg, plain):
        k = _import(tmp_path, f"k_{mod.__name__}", _KERNELS.format(mod=mod.__name__))
        text = compile_sm90(k.scale, {"x_ptr": "*fp32", "y_ptr": "*fp32"}, {}, **cfg.LAUNCH).asm["ptx"]
        code = text.split(".section")[0].splitlines()  # the code, not the debug info (file names, lines)
        ptx.append(
            [ln.split("//")[0].rstrip() for ln in code if not ln.strip().startswith((".loc", ".file"))]
        )
    assert ptx[0] == ptx[1] and any("st.global" in ln for ln in ptx[0])


# ---- formats, overwrite, atomicity ---------------------------------------------------------------


def test_format_from_fmt_and_unknown_suffix(tmp_path):
    res = make_result()
    p = export_result(res, tmp_path / "consts.txt", fmt="json")
    assert load_result(p) == res
    with pytest.raises(ValueError, match=r"\.json \.h \.py"):
        export_result(res, tmp_path / "consts.yaml")
    with pytest.raises(ValueError, match=r"\.json \.h \.py"):
        export_result(res, tmp_path / "noext")
    assert sorted(os.listdir(tmp_path)) == ["consts.txt"]


@pytest.mark.parametrize("suffix", [".json", ".h", ".py"])
def test_overwrite_protection(tmp_path, suffix):
    p = tmp_path / f"out{suffix}"
    first, second = make_result(), make_result({"TILE": 64, "PAD": 4, "SWIZZLE": 0, "VEC": 1})
    export_result(first, p)
    before = p.read_text()
    export_result(first, p)  # identical content again: fine
    with pytest.raises(FileExistsError, match=f"out{suffix}.*overwrite=True"):
        export_result(second, p)
    assert p.read_text() == before
    export_result(second, p, overwrite=True)
    assert p.read_text() != before and "64" in p.read_text()
    assert os.listdir(tmp_path) == [p.name]  # no temporaries left behind


@pytest.mark.parametrize("suffix", [".json", ".h", ".py"])
def test_export_never_writes_through_a_symlink(tmp_path, suffix):
    from autopad.files import UnsafePathError

    target = tmp_path / "victim.txt"
    target.write_text("precious")
    link = tmp_path / f"out{suffix}"
    link.symlink_to(target)
    for overwrite in (False, True):
        with pytest.raises(UnsafePathError, match="symlink"):
            export_result(make_result(), link, overwrite=overwrite)
    with pytest.raises(UnsafePathError):
        merge_header([make_result()], link, overwrite=True)
    assert target.read_text() == "precious" and link.is_symlink()


def test_user_file_is_never_clobbered(tmp_path):
    p = tmp_path / "kernel.h"
    p.write_text("// my own header\n")
    with pytest.raises(FileExistsError, match="kernel.h"):
        export_result(make_result(), p)
    with pytest.raises(FileExistsError):
        merge_header([make_result()], p)
    assert p.read_text() == "// my own header\n"


def test_failed_write_leaves_old_file_and_no_temporaries(tmp_path, monkeypatch):
    p = export_result(make_result(), tmp_path / "t.h")
    before = p.read_text()

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        export_result(make_result({"TILE": 64}), p, overwrite=True)
    monkeypatch.setattr(os, "link", boom)
    with pytest.raises(OSError, match="disk full"):
        export_result(make_result(), tmp_path / "new.py")
    assert p.read_text() == before
    assert os.listdir(tmp_path) == ["t.h"]


@pytest.mark.skipif(GXX is None, reason="needs g++")
def test_named_headers_of_one_kernel_share_a_translation_unit(tmp_path):
    """Two results of one kernel (fp32 and fp16) as headers: under the kernel's own prefix, one translation
    unit cannot include both (the macros and the config struct are defined twice); each under its ``name``
    they compile together and keep their own values, merged headers too. A name that is not a C identifier,
    or a name for a .json / .py export, is refused."""
    f32 = make_result({"TILE": 32, "PAD": 1, "SWIZZLE": 0, "VEC": 1})
    f16 = make_result({"TILE": 64, "PAD": 2, "SWIZZLE": 0, "VEC": 2}, dtype="float16")
    f32.export(tmp_path / "a.h")
    f16.export(tmp_path / "b.h")
    src = tmp_path / "both.cpp"
    src.write_text('#include "a.h"\n#include "b.h"\nint main() { return 0; }\n')
    r = subprocess.run([GXX, "-fsyntax-only", "-I", str(tmp_path), str(src)], capture_output=True, text=True)
    assert r.returncode != 0 and "redefin" in r.stderr
    f32.export(tmp_path / "a.h", name="transpose_f32", overwrite=True)
    f16.export(tmp_path / "b.h", name="transpose_f16", overwrite=True)
    h100 = replace(
        f16,
        device={"name": "NVIDIA H100", "cc": "90"},
        best=replace(f16.best, constants={**f16.best.constants, "TILE": 32}),
    )
    a100 = replace(f16, device={"name": "NVIDIA A100", "cc": "80"})
    (tmp_path / "c.h").write_text(render_merged_header([h100, a100], "c.h", name="transpose_f16_all"))
    src.write_text(
        '#include <cstdio>\n#include "a.h"\n#include "b.h"\n#include "c.h"\n'
        "int main() {\n"
        '  printf("%d %d %d %d\\n", AUTOPAD_TRANSPOSE_F32_TILE, AUTOPAD_TRANSPOSE_F16_TILE,\n'
        "         autopad_transpose_f16_config_for_cc(90).TILE,\n"
        "         autopad_transpose_f16_all_config_for_cc(90).TILE);\n"
        "}\n"
    )
    assert run_cpp(tmp_path, "both", src.read_text()).split() == ["32", "64", "64", "32"]
    # the same file name (two folders, or stdout's autopad.h): the name keeps their include guards apart
    (tmp_path / "d.h").write_text(render(f32, ".h", name="tp_f32"))
    (tmp_path / "e.h").write_text(render(f16, ".h", name="tp_f16"))
    two = '#include <cstdio>\n#include "d.h"\n#include "e.h"\n'
    two += 'int main() { printf("%d %d\\n", AUTOPAD_TP_F32_TILE, AUTOPAD_TP_F16_TILE); }\n'
    assert run_cpp(tmp_path, "same_file_name", two).split() == ["32", "64"]
    for bad in ("2x", "a-b", "", "transpose f16", "_x", "a__b"):
        with pytest.raises(ValueError, match="is not a C identifier starting with a letter"):
            f32.export(tmp_path / "x.h", name=bad)
    for bad in ("device_h200", "GUARD", "fn_x", "cxx14_y"):
        with pytest.raises(ValueError, match="starts like the headers' own"):
            f32.export(tmp_path / "x.h", name=bad)
    with pytest.raises(ValueError, match=r"name: names a header's macros \(.h\); a .json export takes none"):
        f32.export(tmp_path / "x.json", name="t")
