"""files.py: atomic writes, no-clobber creation, and no writing or locking through a symlink."""

from __future__ import annotations

import ast
import fcntl
import os
import stat
from pathlib import Path

import pytest

import autopad.cache
from autopad import files
from autopad.files import UnsafePathError, open_lock, write_atomic, write_file

ROOT = Path(__file__).resolve().parents[1]


def test_write_atomic_creates_replaces_and_keeps_mode(tmp_path):
    p = tmp_path / "sub" / "a.txt"
    assert write_atomic(p, "one\n") == p and p.read_text() == "one\n"
    assert stat.S_IMODE(p.stat().st_mode) == 0o644
    os.chmod(p, 0o600)
    write_atomic(p, b"\x00two")
    assert p.read_bytes() == b"\x00two" and stat.S_IMODE(p.stat().st_mode) == 0o600
    write_atomic(p, "three", mode=0o640)
    assert stat.S_IMODE(p.stat().st_mode) == 0o640
    assert sorted(os.listdir(p.parent)) == ["a.txt"]


def test_write_atomic_replaces_a_symlink_and_never_writes_through_it(tmp_path):
    target = tmp_path / "target.txt"
    target.write_text("precious")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    write_atomic(link, "new")
    assert target.read_text() == "precious"
    assert not link.is_symlink() and link.read_text() == "new"


def test_write_file_creates_and_is_idempotent(tmp_path):
    p = tmp_path / "out.h"
    write_file(p, "x\n")
    ino = p.stat().st_ino
    assert write_file(p, "x\n") == p and p.stat().st_ino == ino  # identical: nothing written
    with pytest.raises(FileExistsError, match=r"out\.h already exists.*overwrite=True"):
        write_file(p, "y\n")
    assert p.read_text() == "x\n"
    os.chmod(p, 0o600)
    write_file(p, "y\n", overwrite=True)
    assert p.read_text() == "y\n" and stat.S_IMODE(p.stat().st_mode) == 0o600
    assert os.listdir(tmp_path) == ["out.h"]


@pytest.mark.parametrize("dangling", [False, True])
@pytest.mark.parametrize("overwrite", [False, True])
def test_write_file_refuses_a_symlink(tmp_path, dangling, overwrite):
    target = tmp_path / "elsewhere.txt"
    if not dangling:
        target.write_text("precious")
    link = tmp_path / "out.py"
    link.symlink_to(target)
    with pytest.raises(UnsafePathError, match="symlink"):
        write_file(link, "payload", overwrite=overwrite)
    assert link.is_symlink()
    assert (target.read_text() == "precious") if not dangling else not target.exists()
    assert sorted(os.listdir(tmp_path)) == sorted(["out.py"] + ([] if dangling else ["elsewhere.txt"]))


def test_write_file_refuses_directories_and_fifos(tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(IsADirectoryError):
        write_file(tmp_path / "d", "x")
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(UnsafePathError, match="not a regular file"):
        write_file(tmp_path / "fifo", "x", overwrite=True)


def test_write_file_symlink_planted_during_the_write_is_refused(tmp_path, monkeypatch):
    """Between the check and the hard link, someone plants a symlink: the link fails, and the file
    that appeared is checked again, so nothing is written through it."""
    target = tmp_path / "target"
    target.write_text("precious")
    dest = tmp_path / "out.json"
    real_link = os.link

    def racing_link(src, dst):
        Path(dst).symlink_to(target)
        return real_link(src, dst)

    monkeypatch.setattr(os, "link", racing_link)
    with pytest.raises(UnsafePathError, match="symlink"):
        write_file(dest, "payload")
    assert target.read_text() == "precious" and dest.is_symlink()
    assert sorted(os.listdir(tmp_path)) == ["out.json", "target"]


def test_write_file_without_hard_links_still_refuses_to_clobber(tmp_path, monkeypatch):
    import errno

    def no_links(src, dst):
        raise OSError(errno.EPERM, "hard links not supported")

    monkeypatch.setattr(os, "link", no_links)
    p = tmp_path / "x.txt"
    write_file(p, "a")
    assert p.read_text() == "a"
    with pytest.raises(FileExistsError):
        write_file(p, "b")
    assert p.read_text() == "a" and os.listdir(tmp_path) == ["x.txt"]


def test_open_lock_creates_a_regular_file_and_locks(tmp_path):
    p = tmp_path / "c.json.lock"
    fd = open_lock(p)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert stat.S_ISREG(os.fstat(fd).st_mode) and p.exists()
    finally:
        os.close(fd)


def test_open_lock_refuses_symlinks_and_fifos(tmp_path):
    victim = tmp_path / "victim"
    link = tmp_path / "c.json.lock"
    link.symlink_to(victim)  # dangling: O_CREAT through it would create the victim
    with pytest.raises(UnsafePathError, match="symlink"):
        open_lock(link)
    assert not victim.exists()
    victim.write_text("precious")
    with pytest.raises(UnsafePathError, match="symlink"):
        open_lock(link)
    assert victim.read_text() == "precious"
    os.mkfifo(tmp_path / "fifo.lock")
    with pytest.raises(UnsafePathError, match="not a regular file"):
        open_lock(tmp_path / "fifo.lock")


def test_cache_uses_files_write_atomic_and_export_does_not_import_cache():
    assert autopad.cache.write_atomic is files.write_atomic
    imported = set()
    for f in (ROOT / "autopad" / "export").glob("*.py"):  # the export package, every module of it
        tree = ast.parse(f.read_text())
        imported |= {(n.module or "") for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level}
    assert "cache" not in imported and "files" in imported
