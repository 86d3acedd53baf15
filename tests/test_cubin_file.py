"""autopad.cubin_file: the checked on-disk cubin: header and sha256, tampered, symlinked, foreign or
group-writable files refused and compiled afresh, legacy unheadered cubins recompiled quietly."""

from __future__ import annotations

import os

import pytest

from autopad import cubin_file, cuda_compile

TINY = 'extern "C" __global__ void k(int* o) { o[threadIdx.x] = VALUE; }\n'


PAYLOAD = b"\x7fELF" + bytes(range(256)) * 4


def _compiles(monkeypatch, payload=PAYLOAD):
    """compile_cubin with a fake compiler that counts its calls (no nvcc needed)."""
    calls = []

    def fake(source, defines, arch, name):
        calls.append(name)
        return payload

    monkeypatch.setattr(cuda_compile, "_backend", lambda: "nvcc")
    monkeypatch.setattr(cuda_compile, "compiler_version", lambda backend=None: "fake-1")
    monkeypatch.setattr(cuda_compile, "_compile_nvcc", fake)
    cuda_compile._MEM_CUBINS.clear()
    return calls


def _only_file():
    (f,) = cuda_compile.cache_dir().glob("*.cubin")
    return f


def test_cubin_round_trip_and_tampering_is_refused(monkeypatch):
    calls = _compiles(monkeypatch)
    assert cuda_compile.compile_cubin(TINY, {"VALUE": 1}) == PAYLOAD and len(calls) == 1
    f = _only_file()
    cuda_compile._MEM_CUBINS.clear()
    assert cuda_compile.compile_cubin(TINY, {"VALUE": 1}) == PAYLOAD and len(calls) == 1  # served from disk
    data = bytearray(f.read_bytes())
    data[-1] ^= 0xFF  # one flipped bit in the machine code
    f.write_bytes(bytes(data))
    cuda_compile._MEM_CUBINS.clear()
    with pytest.warns(UserWarning, match="sha256 does not match"):
        assert cuda_compile.compile_cubin(TINY, {"VALUE": 1}) == PAYLOAD
    assert len(calls) == 2  # refused, compiled again, and the good copy replaced the bad one
    assert cubin_file.read_cubin(f) == PAYLOAD


def test_cubin_header_must_match_payload_not_just_exist():
    assert cubin_file.unwrap_cubin(cubin_file.CUBIN_MAGIC + b"\0" * 32 + PAYLOAD) is None
    good = cubin_file.CUBIN_MAGIC + __import__("hashlib").sha256(PAYLOAD).digest() + PAYLOAD
    assert cubin_file.unwrap_cubin(good) == PAYLOAD
    assert cubin_file.unwrap_cubin(good[:20]) is None


def test_symlinked_cubin_is_refused_and_replaced(monkeypatch, tmp_path):
    calls = _compiles(monkeypatch)
    cuda_compile.compile_cubin(TINY, {"VALUE": 2})
    f = _only_file()
    planted = tmp_path / "elsewhere.cubin"
    planted.write_bytes(f.read_bytes())  # a valid file, but reached through a link
    f.unlink()
    f.symlink_to(planted)
    cuda_compile._MEM_CUBINS.clear()
    with pytest.warns(UserWarning, match="cannot be opened safely|not a regular file"):
        cuda_compile.compile_cubin(TINY, {"VALUE": 2})
    assert len(calls) == 2
    assert not f.is_symlink() and cubin_file.read_cubin(f) == PAYLOAD  # the link itself was replaced
    assert planted.read_bytes().startswith(cubin_file.CUBIN_MAGIC)  # and its target left alone


def test_group_writable_or_foreign_cubin_is_refused(monkeypatch):
    calls = _compiles(monkeypatch)
    cuda_compile.compile_cubin(TINY, {"VALUE": 3})
    f = _only_file()
    os.chmod(f, 0o664)
    cuda_compile._MEM_CUBINS.clear()
    with pytest.warns(UserWarning, match="writable by group or others"):
        cuda_compile.compile_cubin(TINY, {"VALUE": 3})
    assert len(calls) == 2 and f.stat().st_mode & 0o777 == 0o600
    real_uid = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: real_uid + 1)  # as if another user owned the file
    cuda_compile._MEM_CUBINS.clear()
    with pytest.warns(UserWarning, match="owned by uid"):
        cuda_compile.compile_cubin(TINY, {"VALUE": 3})
    assert len(calls) == 3


def test_legacy_unheadered_cubin_is_recompiled_quietly(monkeypatch, recwarn):
    calls = _compiles(monkeypatch)
    cuda_compile.compile_cubin(TINY, {"VALUE": 4})
    f = _only_file()
    f.write_bytes(PAYLOAD)  # what an autopad before the header wrote
    os.chmod(f, 0o600)
    cuda_compile._MEM_CUBINS.clear()
    assert cuda_compile.compile_cubin(TINY, {"VALUE": 4}) == PAYLOAD and len(calls) == 2
    assert not [w for w in recwarn if "cubin" in str(w.message)]
