"""Tests for autopad/validate_kernels.py: the probe kernels' CUDA source and names (compiled with nvcc for
sm_90 where nvcc exists; moved from tests/test_validate.py)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from autopad import validate_kernels as vk
from autopad import validate_probes as vp


# ------------------------------------------------------------------------------------------- kernels
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("op,width", vp.COMBOS)
def test_probe_kernel_compiles_for_sm90(op, width, tmp_path):
    src = tmp_path / "probe.cu"
    src.write_text(vk.probe_source(op, width))
    out = tmp_path / "probe.cubin"
    proc = subprocess.run(
        ["nvcc", "-arch=sm_90", "--cubin", "-o", str(out), str(src)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert out.stat().st_size > 0
    text = vk.probe_source(op, width)
    assert f'extern "C" __global__ void {vk.kernel_name(op, width)}(' in text
    mnemonic = {"load": "ld.shared", "store": "st.shared", "atomic": "atom.shared.add"}[op]
    assert text.count(mnemonic) == 1, "exactly one shared-memory instruction"
    assert "@p " in text, "inactive lanes are predicated off"


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_stride_kernel_compiles(tmp_path):
    src = tmp_path / "stride.cu"
    src.write_text(vk.stride_source())
    proc = subprocess.run(
        ["nvcc", "-arch=sm_90", "--cubin", "-o", str(tmp_path / "s.cubin"), str(src)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr


def test_kernel_names_and_bad_combo():
    assert vk.kernel_name("load", 16) == "probe_ld_v4_u32"
    assert vk.kernel_name("store", 1) == "probe_st_u8"
    assert vk.kernel_name("atomic", 4) == "probe_atom_u32"
    with pytest.raises(ValueError):
        vk.kernel_name("atomic", 1)
    with pytest.raises(ValueError):
        vk.kernel_name("load", 3)


def test_new_kernel_names_and_bad_forms():
    assert vk.kernel_name("ldmatrix.x4", 16) == "probe_ldsm_x4"
    assert vk.kernel_name("ldmatrix.x1.trans", 16) == "probe_ldsm_x1_trans"
    assert vk.kernel_name("stmatrix.x2", 16) == "probe_stsm_x2"
    assert vk.kernel_name("cp.async", 8, "cp.async.ca") == "probe_ldgsts_ca_8"
    assert vk.kernel_name("cp.async", 16, "cp.async.cg") == "probe_ldgsts_cg_16"
    assert vk.kernel_name("cp.async", 4) == "probe_ldgsts_ca_4"
    names = [vk.kernel_name(*f) for f in vk.NEW_FORMS]
    assert len(set(names)) == len(names) and all(n.startswith("probe_") for n in names)
    for bad in [
        ("ldmatrix.x4", 8, None),
        ("cp.async", 2, None),
        ("cp.async", 8, "cp.async.cg"),
        ("ldmatrix.x3", 16, None),
    ]:
        with pytest.raises(ValueError):
            vk.kernel_name(*bad)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_new_probe_kernels_compile_for_sm90(tmp_path):
    """All 16 forms in one translation unit (one nvcc call): ldmatrix sm_75+, cp.async sm_80+, stmatrix
    sm_90, so sm_90 is where all of them must build."""
    src = tmp_path / "probes.cu"
    src.write_text("\n".join(vk.new_probe_source(*f) for f in vk.NEW_FORMS))
    out = tmp_path / "probes.cubin"
    proc = subprocess.run(
        ["nvcc", "-arch=sm_90", "--cubin", "-o", str(out), str(src)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert out.stat().st_size > 0
    data = out.read_bytes()
    for f in vk.NEW_FORMS:
        assert vk.kernel_name(*f).encode() in data, f


@pytest.mark.parametrize("op,width,form", vk.NEW_FORMS)
def test_new_probe_source_is_one_instruction(op, width, form):
    text = vk.new_probe_source(op, width, form)
    assert f'extern "C" __global__ void {vk.kernel_name(op, width, form)}(' in text
    instruction = f"{form.split('.x')[0]}.sync.aligned" if "matrix" in form else f"{form}.shared.global"
    assert text.count(instruction) == 1, "exactly one ldmatrix/stmatrix/cp.async instruction"
    assert (".trans" in text) == form.endswith(".trans")
    if "matrix" in op:
        assert f".m8n8.{op.split('.')[1]}" in text, "the matrix count of the form"
    if op == "cp.async":
        assert f"[%2], {width};" in text and "@p " in text and "cp.async.wait_all" in text
    else:
        assert "@p" not in text, "ldmatrix/stmatrix are .sync.aligned: never predicated"
