"""Exports: JSON round trip, C headers that nvcc compiles, Python modules that import, merged per-device
headers, overwrite protection and atomic writes."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest

from autopad.export import c_name, device_macro, export_result, load_result, merge_header
from autopad.results import Best, CandidateResult, Measurement, TuneResult
from autopad.search import Prediction

NVCC = shutil.which("nvcc") or ("/usr/local/bin/nvcc" if os.path.exists("/usr/local/bin/nvcc") else None)
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc not found")
GLUON = "gl.SwizzledSharedLayout(vec=4, per_phase=1, max_phase=8, order=[1, 0])"


def make_result(
    constants=None,
    device=("NVIDIA H200", "90"),
    kernel="transpose",
    extra=None,
    measured: float | None = 0.0123,
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
        "float32",
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


def nvcc_compile(cu_files: list[tuple[Path, list[str]]]) -> list[subprocess.CompletedProcess]:
    """Compile each (.cu, extra flags) with nvcc for sm_90, in parallel (each takes a few seconds)."""

    def one(item):
        cu, flags = item
        cmd = [
            NVCC,
            "-x",
            "cu",
            "-arch=sm_90",
            "-c",
            str(cu),
            "-o",
            str(cu.with_suffix(f".{len(flags)}.o")),
            "-I",
            str(cu.parent),
            *flags,
        ]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120)

    with ThreadPoolExecutor(max_workers=len(cu_files)) as pool:
        return list(pool.map(one, cu_files))


def import_file(path: Path):
    spec = importlib.util.spec_from_file_location(f"autopad_export_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ---- names ---------------------------------------------------------------------------------------


def test_names_become_c_identifiers():
    assert c_name("tile-m") == "TILE_M" and c_name("my kernel v2") == "MY_KERNEL_V2"
    assert device_macro("NVIDIA H200") == "AUTOPAD_DEVICE_NVIDIA_H200"
    assert device_macro("NVIDIA A100-SXM4-80GB") == "AUTOPAD_DEVICE_NVIDIA_A100_SXM4_80GB"
    with pytest.raises(ValueError, match="identifier"):
        c_name("--")


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
    plain = export_result(make_result(measured=None, kernel="my-kernel"), tmp_path / "p.h").read_text()
    assert "CUTE" not in plain and "Gluon" not in plain and "not measured" in plain
    assert "#define AUTOPAD_MY_KERNEL_PAD 1" in plain


@needs_nvcc
def test_headers_compile_with_nvcc(tmp_path):
    """A single header and a three-device merged header, each checked with static_assert in a kernel.

    Four compiles (a few seconds each, run in parallel): the single header together with the merged one
    without a device macro, then the merged one with each device's macro.
    """
    export_result(make_result(**SWIZZLED), tmp_path / "transpose.h")
    # the merged header is another kernel's ("copy"), so both headers can be included in one file
    a100 = make_result({"TILE": 32, "PAD": 1, "VEC": 1}, ("NVIDIA A100-SXM4-80GB", "80"), kernel="copy")
    h200 = make_result({"TILE": 32, "PAD": 2, "VEC": 2}, ("NVIDIA H200", "90"), kernel="copy")
    h100 = make_result({"TILE": 64, "PAD": 3, "VEC": 4}, ("NVIDIA H100 80GB HBM3", "90"), kernel="copy")
    merge_header([a100, h200, h100], tmp_path / "merged.h")

    def cu(name: str, check: str) -> Path:
        p = tmp_path / f"{name}.cu"
        p.write_text(
            '#include "transpose.h"\n#include "merged.h"\n#include "merged.h"\n'
            "__global__ void k(float* x) {\n"
            f"{check}\n"
            "  __shared__ float t[AUTOPAD_TRANSPOSE_TILE][AUTOPAD_TRANSPOSE_TILE + AUTOPAD_TRANSPOSE_PAD];\n"
            "  t[threadIdx.y][threadIdx.x] = x[threadIdx.x];\n  __syncthreads();\n"
            "  x[threadIdx.x] = t[threadIdx.x][threadIdx.y] + sizeof(AUTOPAD_TRANSPOSE_LAYOUT)\n"
            "                   + AUTOPAD_COPY_TILE + AUTOPAD_COPY_PAD + AUTOPAD_COPY_VEC;\n}\n"
        )
        return p

    def copy_is(tile: int, pad: int, vec: int, what: str) -> str:
        return (
            f"  static_assert(AUTOPAD_COPY_TILE == {tile} && AUTOPAD_COPY_PAD == {pad} && "
            f'AUTOPAD_COPY_VEC == {vec}, "{what}");'
        )

    # without a device macro, device code (__CUDA_ARCH__ 900) gets sm_90's first device (H200) and host
    # code the default (the first result, A100)
    single = (
        '  static_assert(AUTOPAD_TRANSPOSE_TILE == 32 && AUTOPAD_TRANSPOSE_PAD == 0, "tile");\n'
        '  static_assert(AUTOPAD_TRANSPOSE_SWIZZLE == 3 && AUTOPAD_TRANSPOSE_VEC == 4, "consts");\n'
        "  static_assert(AUTOPAD_TRANSPOSE_CUTE_SWIZZLE_B == 3 && AUTOPAD_TRANSPOSE_CUTE_SWIZZLE_M == 2 && "
        'AUTOPAD_TRANSPOSE_CUTE_SWIZZLE_S == 3, "cute");\n'
        f"#ifdef __CUDA_ARCH__\n{copy_is(32, 2, 2, 'cc block')}\n"
        f"#else\n{copy_is(32, 1, 1, 'default')}\n#endif"
    )
    jobs = [
        (cu("nodev", single), []),
        (cu("a100", copy_is(32, 1, 1, "a100 block")), ["-DAUTOPAD_DEVICE_NVIDIA_A100_SXM4_80GB"]),
        (cu("h200", copy_is(32, 2, 2, "h200 block")), ["-DAUTOPAD_DEVICE_NVIDIA_H200"]),
        (cu("h100", copy_is(64, 3, 4, "h100 block")), ["-DAUTOPAD_DEVICE_NVIDIA_H100_80GB_HBM3"]),
    ]
    for (p, flags), r in zip(jobs, nvcc_compile(jobs), strict=True):
        assert r.returncode == 0, f"{p.name} {flags}:\n{r.stderr}"


def test_merged_header_structure(tmp_path):
    a = make_result(device=("NVIDIA A100-SXM4-80GB", "8.0"), **SWIZZLED)
    b = make_result(
        {"TILE": 32, "PAD": 0, "SWIZZLE": 2, "VEC": 4},
        ("NVIDIA H200", "90"),
        extra={"cute_swizzle": "Swizzle<2,2,3>"},
    )
    c = make_result(device=None)  # no GPU: only a candidate for the default
    text = merge_header([a, b, c], tmp_path / "m.h").read_text()
    lines = text.splitlines()
    conds = [ln for ln in lines if ln.startswith(("#if ", "#elif", "#else", "#endif"))]
    assert conds == [
        "#if defined(AUTOPAD_DEVICE_NVIDIA_A100_SXM4_80GB)",
        "#elif defined(AUTOPAD_DEVICE_NVIDIA_H200)",
        "#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 800",
        "#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900",
        "#else  // default: the first result",
        "#endif",
        "#endif  // AUTOPAD_GUARD_M_H_",
    ]
    # every block defines the same names; CuTe macros are left out since one result has no swizzle
    assert text.count("#define AUTOPAD_TRANSPOSE_SWIZZLE ") == 5
    assert "#define AUTOPAD_TRANSPOSE_CUTE" not in text
    assert "cute::Swizzle<2, 2, 3>" in text  # still spelled in the comments

    with pytest.raises(ValueError, match="one kernel"):
        merge_header([a, make_result(kernel="matmul")], tmp_path / "x.h")
    with pytest.raises(ValueError, match="same macros"):
        merge_header([a, make_result({"TILE": 32}, ("NVIDIA H200", "90"))], tmp_path / "x.h")
    with pytest.raises(ValueError, match="two results for device"):
        merge_header([a, a], tmp_path / "x.h")
    with pytest.raises(ValueError, match="at least one"):
        merge_header([], tmp_path / "x.h")
    assert not (tmp_path / "x.h").exists()


# ---- Python module -------------------------------------------------------------------------------


def test_python_module_imports_with_values(tmp_path):
    mod = import_file(export_result(make_result(**SWIZZLED), tmp_path / "transpose_consts.py"))
    assert (mod.TILE, mod.PAD, mod.SWIZZLE, mod.VEC) == (32, 0, 3, 4)
    assert mod.CONSTANTS == {"TILE": 32, "PAD": 0, "SWIZZLE": 3, "VEC": 4}
    assert mod.CUTE_SWIZZLE == (3, 2, 3) and mod.GLUON_LAYOUT == GLUON
    assert (
        mod.DEVICE == "NVIDIA H200"
        and mod.CC == "90"
        and mod.SHAPE == (8192, 8192)
        and mod.DTYPE == "float32"
    )
    assert mod.MEASURED_MS == 0.0123 and mod.KERNEL == "transpose"

    plain = import_file(
        export_result(
            make_result({"tile-m": 64, "pad": 1}, device=None, measured=None), tmp_path / "plain.py"
        )
    )
    assert plain.TILE_M == 64 and plain.PAD == 1 and plain.DEVICE == "" and plain.MEASURED_MS is None
    assert not hasattr(plain, "CUTE_SWIZZLE") and not hasattr(plain, "GLUON_LAYOUT")
    with pytest.raises(ValueError, match="SHAPE"):
        export_result(make_result({"shape": 1}), tmp_path / "bad.py")


def test_gluon_spec_dict_is_spelled(tmp_path):
    extra = {"gluon_layout": {"kind": "swizzled", "vec": 4, "per_phase": 1, "max_phase": 8, "order": [1, 0]}}
    mod = import_file(export_result(make_result(extra=extra), tmp_path / "g.py"))
    assert mod.GLUON_LAYOUT == GLUON


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
