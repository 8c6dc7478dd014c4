"""Covers: darray/_src/extras/io.py

Damaged checkpoints: load names the checkpoint, the file and what is wrong, with both engines,
for the metadata (zarr.json) and for chunks."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

import darray
from darray._src.extras import io

ENGINES = ["numpy"] + (["tensorstore"] if io._tensorstore() is not None else [])


def _saved(tmp_path, engine):
    host = np.arange(64.0).reshape(8, 8)
    path = tmp_path / "ck"
    darray.save(path, darray.asarray(host, mesh=(8,), spec=("x",)), engine=engine)
    np.testing.assert_array_equal(np.asarray(darray.load(path, engine=engine)), host)
    return path


def _damage_json(path, how):
    target = path / "zarr.json"
    if how == "truncated":
        raw = target.read_bytes()
        target.write_bytes(raw[: len(raw) // 2])
        return r"zarr\.json is not valid JSON \(.*: line \d+, column \d+; the file holds \d+ bytes"
    if how == "binary":
        target.write_bytes(b"\xff\xfe\x00garbage")
        return r"zarr\.json is not UTF-8 text"
    if how == "not-an-object":
        target.write_text("[1, 2, 3]")
        return r"zarr\.json holds a JSON list, not an object"
    meta = json.loads(target.read_text())
    del meta["shape"], meta["codecs"]
    target.write_text(json.dumps(meta))
    return r"zarr\.json lacks the zarr v3 field\(s\) \['shape', 'codecs'\]"


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("how", ["truncated", "binary", "not-an-object", "missing-fields"])
def test_damaged_metadata_names_checkpoint_file_and_problem(tmp_path, engine, how):
    path = _saved(tmp_path, engine)
    problem = _damage_json(path, how)
    for call in (lambda: darray.load(path, engine=engine), lambda: io.read_metadata(path)):
        with pytest.raises(ValueError, match=re.escape(f"checkpoint {str(path)!r} is damaged: ")
                           + problem) as err:
            call()
        assert "save the array again" in str(err.value)


@pytest.mark.x64
@pytest.mark.distributed_placement  # the damaged block is read as a block
@pytest.mark.parametrize("engine", ENGINES)
def test_truncated_chunk_names_checkpoint_file_and_sizes(tmp_path, engine):
    path = _saved(tmp_path, engine)
    chunk = path / "c" / "3" / "0"  # block 3 of the (8,) split: one row of 8 float64
    assert chunk.stat().st_size == 64
    chunk.write_bytes(chunk.read_bytes()[:10])
    with pytest.raises(ValueError) as err:
        np.asarray(darray.load(path, engine=engine))
    text = str(err.value)
    assert text.startswith(f"checkpoint {str(path)!r} is damaged: "), text
    if engine == "numpy":
        assert "chunk file 'c/3/0' holds 10 bytes" in text and "needs 64" in text, text
    else:  # tensorstore's own reason, which names the file
        assert "reading cells [3:4, 0:8] failed" in text and str(chunk) in text, text
