"""Tuning ahead of time and shipping the cache (autopad.ops.pretune / load_items / cache_pack / unpack),
with a fake kernel and a fake benchmarker: no GPU."""

from __future__ import annotations

import hashlib
import importlib
import io
import json
import tarfile

import pytest
from test_ops_policy import _spec
from test_tune import FakeBench

from autopad import cuda_runtime, ops
from autopad.cache import Cache
from autopad.ops import plans, policy
from autopad.ops.plans import Item
from autopad.ops.policy import AutopadTuningWarning

pt = importlib.import_module("autopad.ops.pretune")  # the module (autopad.ops.pretune is the function)


def test_items_from_lines_tuples_dicts_and_files(tmp_path):
    lines = (
        "transpose 4097x8191 float16  # the odd one\n\nhistogram 16777216x4096 int64 skewed weights=float32\n"
    )
    items = ops.load_items(lines)
    assert items == [
        Item("transpose", (4097, 8191), "float16"),
        Item("histogram", (16777216, 4096), "int64", "skewed", "float32"),
    ]
    assert [i.text() for i in items] == [
        "transpose 4097x8191 float16",
        "histogram 16777216x4096 int64 skewed weights=float32",
    ]
    f = tmp_path / "shapes.txt"
    f.write_text(lines)
    assert ops.load_items(f) == ops.load_items(str(f)) == items
    j = tmp_path / "shapes.json"
    j.write_text(
        json.dumps(
            [["matmul", [64, 32, 16], "bfloat16"], {"op": "transpose", "shape": "8x9", "dtype": "int8"}]
        )
    )
    assert ops.load_items(j) == [Item("matmul", (64, 32, 16), "bfloat16"), Item("transpose", (8, 9), "int8")]
    assert ops.load_items([("transpose", (3, 4), "torch.float32")]) == [Item("transpose", (3, 4), "float32")]
    with pytest.raises(ValueError, match="op: 'conv'"):
        ops.load_items("conv 3x3 float32")
    with pytest.raises(ValueError, match="not of the form"):
        ops.load_items("transpose 3by3 float32")


def test_items_map_to_the_kernel_question_the_op_asks():
    p = plans.plan(Item("transpose", (2, 3, 5, 7), "int32"))
    assert (p.spec.NAME, p.shape, p.dtype, p.view) == ("transpose", (6, 5, 7), "float32", "float32")
    p = plans.plan(Item("histogram", (1000, 4096), "int64"))
    assert (p.shape, p.dtype, p.convert, p.dist) == ((1000, 4096), "int32", "int32", "uniform")
    p = plans.plan(Item("matmul", (64, 32, 16), "bfloat16"))
    assert (p.spec.NAME, p.spec.BACKEND, p.shape) == ("matmul", "triton", (64, 32, 16))
    assert plans.plan(Item("matmul", (64, 32, 16), "float32")).spec.BACKEND == "cuda"
    w = plans.plan(Item("histogram", (1000, 256), "int32", weights="float32"))
    assert "weighted" in w.spec.NAME and w.dtype == "int32"
    with pytest.raises(ValueError, match="histogram counts integer"):
        plans.plan(Item("histogram", (1000, 256), "float32"))
    with pytest.raises(ValueError, match="at most"):
        plans.plan(Item("histogram", (2**31, 256), "int32"))
    with pytest.raises(ValueError, match=r"float32 \(cuda\); bfloat16.*\(triton\); not int8"):
        plans.plan(Item("matmul", (4, 4, 4), "int8"))


@pytest.fixture
def fake_plan(monkeypatch):
    """pretune's items map onto the fake kernel of test_ops_policy."""
    spec = _spec()

    def plan(item):
        if item.dtype == "broken":
            raise ValueError("dtype: broken is not a dtype")
        return plans.Plan(spec, item.shape, "float32")

    monkeypatch.setattr(pt, "plan", plan)
    return spec


def test_pretune_tunes_each_item_so_the_op_finds_it_tuned(fake_plan, monkeypatch):
    monkeypatch.setenv("AUTOPAD_TUNE", "offline")  # serving: never tunes in line
    bench = FakeBench(default=None)
    rows = ops.pretune(["transpose 4096x4096 float32", "transpose 64x64 broken", "transpose 512x512 float32"],
                       benchmarker=bench, top_k=3)  # fmt: skip
    assert [r.mode for r in rows] == ["measured", "failed", "measured"]
    assert "broken is not a dtype" in rows[1].message  # one bad item does not stop the rest
    for shape in ((4096, 4096), (512, 512)):
        d = policy.decide(fake_plan, shape, "float32")
        assert d.source == "tuned"
    again = ops.pretune("transpose 512x512 float32", benchmarker=bench, top_k=3)
    assert again[0].mode == "cached" and again[0].constants == rows[2].constants


def _fill_cache(fake_plan):
    ops.pretune("transpose 4096x4096 float32\ntranspose 512x512 float32", benchmarker=FakeBench(), top_k=3)
    payload = b"\x7fELF" + b"x" * 100
    name = hashlib.sha256(b"a key").hexdigest() + ".cubin"
    cuda_runtime.write_cubin(cuda_runtime.cache_dir() / name, payload)
    return name, payload


def test_pack_and_unpack_carry_tuned_picks_and_checked_cubins(fake_plan, tmp_path, monkeypatch):
    name, payload = _fill_cache(fake_plan)
    packed = ops.cache_pack(tmp_path / "pack.tar.gz")
    assert packed["tune_files"] == 2 and packed["cubins"] == 1
    monkeypatch.setenv("AUTOPAD_CACHE_DIR", str(tmp_path / "production"))  # another machine, empty cache
    with pytest.warns(AutopadTuningWarning, match="not tuned and AUTOPAD_TUNE=offline"):
        assert policy.decide(fake_plan, (512, 512), "float32", mode="offline").source != "tuned"
    got = ops.cache_unpack(tmp_path / "pack.tar.gz")
    assert got["tune_entries"] == 2 and got["cubins"] == 1 and got["refused"] == 0
    assert policy.decide(fake_plan, (512, 512), "float32", mode="offline").source == "tuned"
    assert cuda_runtime.read_cubin(cuda_runtime.cache_dir() / name) == payload
    assert ops.cache_unpack(tmp_path / "pack.tar.gz")["tune_entries"] == 2  # merging twice is harmless


def test_pack_leaves_out_a_tuning_file_the_cache_would_refuse(fake_plan, tmp_path, monkeypatch):
    """A corrupt tuning file in the cache is not packed (unpack refused it on the production machine): it is
    counted as skipped, and the pack unpacks with nothing refused."""
    _fill_cache(fake_plan)
    bad = sorted(Cache().dir.glob("*.json"))[0]
    bad.write_text('{"key": {"kernel": "transpose"}, "garbage": true}')
    packed = ops.cache_pack(tmp_path / "pack.tar.gz", cubins=False)
    assert (packed["tune_files"], packed["skipped"]) == (1, 1)
    monkeypatch.setenv("AUTOPAD_CACHE_DIR", str(tmp_path / "production"))
    got = ops.cache_unpack(tmp_path / "pack.tar.gz")
    assert (got["tune_entries"], got["refused"]) == (1, 0)


def test_unpack_refuses_altered_cubins_foreign_names_and_links(fake_plan, tmp_path, monkeypatch):
    name, payload = _fill_cache(fake_plan)
    pack = tmp_path / "evil.tar.gz"
    good = (cuda_runtime.cache_dir() / name).read_bytes()
    altered = good[:-1] + bytes([good[-1] ^ 1])
    with tarfile.open(pack, "w:gz") as tar:

        def add(arcname, data, **kw):
            info = tarfile.TarInfo(arcname)
            info.size = len(data)
            for k, v in kw.items():
                setattr(info, k, v)
            tar.addfile(info, io.BytesIO(data))

        add(f"cubin/{name}", altered)
        add("cubin/../../evil.cubin", good)
        add("tune/" + "x" * 5 + ".json", b"{}")
        add("tune/transpose-" + "0" * 24 + ".json", b"not json")
        link = tarfile.TarInfo("cubin/" + "b" * 64 + ".cubin")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
    monkeypatch.setenv("AUTOPAD_CACHE_DIR", str(tmp_path / "production"))
    got = ops.cache_unpack(pack)
    assert got == {"tune_entries": 0, "for_this_gpu": 0, "cubins": 0, "refused": 2}
    assert not (tmp_path / "evil.cubin").exists() and not list(cuda_runtime.cache_dir().glob("*"))
    assert not Cache().entries()


def test_pack_keeps_only_the_kernels_asked_for(fake_plan, tmp_path):
    _fill_cache(fake_plan)
    assert ops.cache_pack(tmp_path / "p.tar.gz", kernels=["matmul"], cubins=False) == {
        "path": str(tmp_path / "p.tar.gz"),
        "tune_files": 0,
        "cubins": 0,
        "skipped": 0,
    }
