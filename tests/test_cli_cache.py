"""`autopad pretune` and `autopad cache list|clear|path|pack|unpack` without a GPU: checks before work,
JSON output, and a pack that carries tuned entries to another cache."""

from __future__ import annotations

import importlib
import json
import tarfile

import pytest

from autopad.cli import main

pt = importlib.import_module("autopad.ops.pretune")  # the module (autopad.ops.pretune is the function)

ITEM = "histogram 4096x256 int32"


@pytest.fixture(autouse=True)
def _no_bench(monkeypatch):
    monkeypatch.setenv("AUTOPAD_NO_BENCH", "1")


def one_line_error(capsys) -> str:
    captured = capsys.readouterr()
    err = [ln for ln in captured.err.splitlines() if ln.strip()]
    assert len(err) == 1 and "error" in err[0] and "Traceback" not in captured.err, captured.err
    return err[0]


def test_pretune_pack_unpack_round_trip(tmp_path, monkeypatch, capsys):
    items = tmp_path / "shapes.txt"
    items.write_text(f"# the service's shapes\n{ITEM}\n")
    assert main(["pretune", str(items), "--json", "--no-progress"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["item"] == ITEM and row["mode"] == "model-only" and row["constants"]
    assert main(["pretune", "--item", ITEM, "--no-progress"]) == 0  # now answered by the cache
    out = capsys.readouterr().out
    assert "cached" in out and "pretuned 1 of 1 items" in out

    pack = tmp_path / "p.tar.gz"
    assert main(["cache", "pack", str(pack), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tune_files"] == 1
    with tarfile.open(pack) as tar:
        assert [m.name.split("/")[0] for m in tar.getmembers()] == ["tune"]
    assert main(["cache", "pack", str(pack)]) == 2  # exists: --overwrite replaces it
    assert "--overwrite" in one_line_error(capsys)
    assert main(["cache", "pack", str(pack), "--overwrite"]) == 0
    assert capsys.readouterr().out.startswith(f"wrote {pack}: 1 tuning files")

    monkeypatch.setenv("AUTOPAD_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert main(["cache", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert main(["cache", "unpack", str(pack), "--json"]) == 0
    counts = json.loads(capsys.readouterr().out)
    assert counts["tune_entries"] == 1 and counts["refused"] == 0
    assert main(["cache", "list", "--json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)
    assert entry["kernel"] == "histogram" and entry["has_result"] and entry["problem"] is None
    assert main(["tune", "histogram", "--shape", "4096x256", "--dtype", "int32", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cache_hit"] is True  # the unpacked entry answers


def test_cache_path_and_clear(tmp_path, capsys):
    assert main(["cache", "path", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["path"].endswith("tune")
    assert main(["cache", "clear", "--kernel", "histogram", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["removed"] == 0


@pytest.mark.parametrize(
    "argv,names",
    [
        (["pretune"], "give a FILE or --item"),
        (["pretune", "--item", "conv 3x3 float32"], "--item 'conv 3x3 float32'"),
        (["pretune", "--item", "histogram 1000x256 float32"], "histogram counts integer"),
        (["pretune", "missing.txt"], "no such file"),
        (["pretune", "--item", ITEM, "--top-k", "0"], "--top-k: must be an int >= 1, got 0"),
        (["pretune", "--item", ITEM, "--refine", "-1"], "--refine: must be an int >= 0"),
        # a shape tune() refuses is found with the other checks, not as a failed row after the work began
        (
            ["pretune", "--item", ITEM, "--item", "transpose 64x0 float32"],
            "every dimension must be a positive",
        ),
        (["pretune", "--item", "matmul 64x64x0 bfloat16"], "matmul 64x64x0 bfloat16"),
        (["cache", "pack"], "needs a FILE"),
        (["cache", "pack", "x.zip"], ".tar.gz"),
        (["cache", "list", "extra"], "takes no FILE"),
        (["cache", "unpack", "missing.tar.gz"], "no such file"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(argv, names, capsys, monkeypatch):
    monkeypatch.setattr(pt, "plan", lambda *a: pytest.fail("checked before any work"), raising=False)
    assert main(argv) == 2
    assert names in one_line_error(capsys)


def test_pretune_of_a_file_that_is_not_text_names_it(tmp_path, capsys):
    """A binary file of items is named with what a file of items holds (it was the codec's words alone:
    "'utf-8' codec can't decode byte 0xff in position 0")."""
    items = tmp_path / "items.bin"
    items.write_bytes(b"\xff\xfe\x00binary")
    assert main(["pretune", str(items)]) == 2
    line = one_line_error(capsys)
    assert f"FILE: {items} is not text" in line and "op SHAPE dtype" in line


def test_unpack_of_a_file_that_is_not_a_pack(tmp_path, capsys):
    for name, data in (("t.tar.gz", b"not a tar"), ("e.tar.gz", b"")):
        (tmp_path / name).write_bytes(data)
        assert main(["cache", "unpack", str(tmp_path / name)]) == 2
        assert "is not a pack" in one_line_error(capsys)


def test_pretune_reports_an_item_that_fails_and_goes_on(tmp_path, monkeypatch, capsys):
    real = pt.plan

    def plan(item):
        if item.shape == (8192, 256):
            raise RuntimeError("compiler exploded")
        return real(item)

    monkeypatch.setattr(pt, "plan", plan)
    assert main(["pretune", "--item", "histogram 8192x256 int32", "--item", ITEM, "--no-progress"]) == 1
    captured = capsys.readouterr()
    assert "failed" in captured.out and "compiler exploded" in captured.out
    assert "pretuned 1 of 2 items" in captured.out
    assert captured.err.strip().splitlines()[-1] == "autopad pretune: 1 of 2 items failed (see their rows)"
