"""autopad.cache_key: the key's file name (stable, distinct for each field), its context, the bucket."""

from __future__ import annotations

import json

import pytest
from cache_fixtures import make_key

from autopad.cache_key import CacheKey, bucket


def test_key_filename_is_stable_and_distinct():
    a, b = make_key(), make_key()
    assert a == b and a.filename == b.filename
    assert a.filename.startswith("transpose-") and a.filename.endswith(".json")
    others = [
        make_key(shape=(1024, 2048)),
        make_key(dtype="float16"),
        make_key(gpu="NVIDIA A100"),
        make_key(cc="80"),
        make_key(backend="triton"),
        make_key(source_hash="zzz"),
        make_key(dist="skewed"),
        make_key(version="0.2.0"),
        make_key(kernel="matmul"),
    ]
    assert len({k.filename for k in others} | {a.filename}) == len(others) + 1


def test_key_context_excludes_only_shape():
    assert make_key(shape=(64, 64)).context() == make_key(shape=(4096, 8)).context()
    assert make_key().context() != make_key(dtype="float16").context()
    assert make_key().context() != make_key(dist="uniform").context()
    assert CacheKey.from_dict(json.loads(json.dumps(make_key(dist="single").to_dict()))) == make_key(
        dist="single"
    )


def test_bucket_rule():
    assert bucket((8192, 8192)) == (8192, 8192)
    assert bucket((1000, 17, 16, 3, 1)) == (1024, 32, 16, 3, 1)
    assert bucket((4097,)) == (8192,)
    with pytest.raises(ValueError, match="positive"):
        bucket((0, 4))
