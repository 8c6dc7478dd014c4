"""Covers: darray/_src/extras/io.py

darray.save / darray.load: zarr v3 checkpoints, one chunk per block, atomic commit."""
import json
import os

import numpy as np
import pytest
from helpers import mesh_of

import darray
from darray._src.extras import io

ENGINES = ["numpy"] + (["tensorstore"] if io._tensorstore() is not None else [])


def _mesh(sizes):
    return mesh_of(sizes, ("x", "y", "z")[:len(sizes)])


def _host(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(shape) * 50
    if np.dtype(dtype).kind == "c":
        values = values + 1j * rng.standard_normal(shape)
    return values.astype(dtype)


@pytest.mark.x64
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", [np.float32, np.complex128, np.int16, np.bool_])
def test_round_trip_onto_other_meshes_and_specs(tmp_path, engine, dtype):
    host = _host((13, 10, 7), dtype)
    x = darray.asarray(host, mesh=_mesh((2, 4)), spec=("x", "y"))
    path = tmp_path / "ckpt"
    darray.save(path, x, engine=engine)
    meta = json.loads((path / "zarr.json").read_text())
    assert meta["zarr_format"] == 3 and meta["shape"] == [13, 10, 7]
    assert meta["data_type"] == np.dtype(dtype).name
    assert meta["chunk_grid"]["configuration"]["chunk_shape"] == [7, 3, 7]  # the block shape
    assert meta["attributes"]["darray"]["split"] == [["x"], ["y"], []]
    assert meta["attributes"]["darray"]["mesh"] == {"x": 2, "y": 4}
    for load_engine in ENGINES:
        y = darray.load(path, mesh=_mesh((8,)), spec=(None, None, "x"), engine=load_engine)
        assert y.dtype == np.dtype(dtype) and y.layout.split == ((), (), ("x",))
        assert y.data.sharding.spec == y.layout.spec
        np.testing.assert_array_equal(np.asarray(y), host)
    z = darray.load(path, mesh=_mesh((4, 2)))  # same axis names: the saved split is kept
    assert z.layout.split == (("x",), ("y",), ())
    np.testing.assert_array_equal(np.asarray(z), host)


@pytest.mark.x64
@pytest.mark.distributed_placement
def test_chunk_files_are_the_blocks_and_plain_numpy_reads_them(tmp_path):
    host = _host((9, 5), np.float64)  # 9 over 8 devices: blocks of 2, three own nothing
    x = darray.asarray(host, mesh=_mesh((8,)), spec=("x",))
    darray.save(tmp_path / "a", x, engine="numpy")
    files = sorted(os.listdir(tmp_path / "a" / "c"))
    assert files == ["0", "1", "2", "3", "4"]  # one chunk per non-empty block, no more
    last = np.fromfile(tmp_path / "a" / "c" / "4" / "0", dtype="<f8").reshape(2, 5)
    np.testing.assert_array_equal(last[0], host[8])
    np.testing.assert_array_equal(last[1], 0)  # the edge chunk's tail is the fill value
    y = darray.load(tmp_path / "a")  # the saved layout
    assert y.layout == x.layout and y.data.sharding.spec == x.layout.spec
    np.testing.assert_array_equal(np.asarray(y), host)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.x64
def test_load_without_placement_restores_the_saved_layout(tmp_path, engine):
    """Issue 38: load() fell back to the default mesh and split, not the saved ones."""
    host = _host((13, 10, 7), np.float64)
    x = darray.asarray(host, mesh=_mesh((2, 4)), spec=(None, "y", "x"))
    darray.save(tmp_path / "c", x, engine=engine)
    y = darray.load(tmp_path / "c", engine=engine)
    assert y.layout == x.layout and y.layout.split == ((), ("y",), ("x",))
    assert y.data.sharding.spec == x.data.sharding.spec
    np.testing.assert_array_equal(np.asarray(y), host)
    # the default mesh itself where the saved mesh is it
    d = darray.asarray(host, mesh=darray.default_mesh(), spec=(None, None, "d"))
    darray.save(tmp_path / "d", d, engine=engine)
    assert darray.load(tmp_path / "d", engine=engine).layout == d.layout
    # a mesh this run cannot build (another device count): the default placement
    meta = json.loads((tmp_path / "c" / "zarr.json").read_text())
    meta["attributes"]["darray"]["mesh"] = {"x": 3, "y": 4}
    (tmp_path / "c" / "zarr.json").write_text(json.dumps(meta))
    z = darray.load(tmp_path / "c", engine=engine)
    assert z.layout.mesh == darray.default_mesh()
    np.testing.assert_array_equal(np.asarray(z), host)


@pytest.mark.x64
def test_halo_and_zero_d_and_empty(tmp_path):
    host = _host((12, 6), np.float64)
    x = darray.asarray(host, mesh=_mesh((4, 2)), spec=("x", "y")).halo(1)
    darray.save(tmp_path / "h", x)
    np.testing.assert_array_equal(np.asarray(darray.load(tmp_path / "h", mesh=_mesh((8,)))),
                                  host)
    s = darray.asarray(np.float64(2.5), mesh=_mesh((8,)))
    darray.save(tmp_path / "s", s, engine="numpy")
    assert float(np.asarray(darray.load(tmp_path / "s", mesh=_mesh((8,))))) == 2.5
    e = darray.zeros((0, 3), mesh=_mesh((8,)))
    darray.save(tmp_path / "e", e, engine="numpy")
    assert darray.load(tmp_path / "e", mesh=_mesh((8,))).shape == (0, 3)


@pytest.mark.x64
@pytest.mark.parametrize("engine", ENGINES)
def test_interrupted_save_keeps_previous_checkpoint(tmp_path, monkeypatch, engine):
    path = tmp_path / "ckpt"
    old = _host((13, 10), np.float64, seed=1)
    darray.save(path, darray.asarray(old, mesh=_mesh((8,))), engine=engine)
    new = darray.asarray(_host((13, 10), np.float64, seed=2), mesh=_mesh((2, 4)),
                         spec=("x", "y"))

    def crash(*args, **kwargs):
        raise KeyboardInterrupt("simulated crash before the commit")
    monkeypatch.setattr(io, "_commit", crash)
    with pytest.raises(KeyboardInterrupt):
        darray.save(path, new, engine=engine)
    assert os.path.isdir(str(path) + io.PARTIAL)  # the partial write is there...
    np.testing.assert_array_equal(np.asarray(darray.load(path, mesh=_mesh((8,)))), old)
    monkeypatch.undo()
    darray.save(path, new, engine=engine)  # a later save cleans up and commits
    assert not os.path.exists(str(path) + io.PARTIAL)
    assert not os.path.exists(str(path) + io.PREVIOUS)
    np.testing.assert_array_equal(np.asarray(darray.load(path, mesh=_mesh((8,)))),
                                  np.asarray(new))


def test_interrupted_first_save_is_never_complete(tmp_path, monkeypatch):
    monkeypatch.setattr(io, "_commit", lambda *a: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError):
        darray.save(tmp_path / "c", darray.ones((5,), mesh=_mesh((8,))))
    with pytest.raises(FileNotFoundError, match="no complete checkpoint.*interrupted save"):
        darray.load(tmp_path / "c")


def test_crash_between_the_two_renames_loads_the_previous(tmp_path):
    path = tmp_path / "ckpt"
    old = _host((6,), np.float32)
    darray.save(path, darray.asarray(old, mesh=_mesh((8,))), engine="numpy")
    os.rename(path, str(path) + io.PREVIOUS)  # the state right after the first rename
    np.testing.assert_array_equal(np.asarray(darray.load(path)), old)


def test_errors_name_the_problem(tmp_path):
    (tmp_path / "f").write_text("user data")
    with pytest.raises(FileExistsError, match="exists and is not a zarr array"):
        darray.save(tmp_path / "f", darray.ones((3,)))
    assert (tmp_path / "f").read_text() == "user data"
    with pytest.raises(TypeError, match="save: x must be an array"):
        darray.save(tmp_path / "g", [1.0, 2.0])
    with pytest.raises(FileNotFoundError, match="not a zarr v3 array"):
        darray.load(tmp_path / "nothing")
    with pytest.raises(ValueError, match="engine='hdf5' is not one of"):
        darray.load(tmp_path / "nothing", engine="hdf5")
    darray.save(tmp_path / "z", darray.ones((4,)), engine="numpy")
    meta = json.loads((tmp_path / "z" / "zarr.json").read_text())
    meta["codecs"] = [{"name": "bytes"}, {"name": "gzip", "configuration": {"level": 1}}]
    (tmp_path / "z" / "zarr.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match=r"uses codecs \['bytes', 'gzip'\].*tensorstore"):
        darray.load(tmp_path / "z", engine="numpy")


@pytest.mark.skipif(io._tensorstore() is None, reason="tensorstore not installed (darray[io])")
def test_tensorstore_reads_what_the_builtin_writer_wrote(tmp_path):
    import tensorstore as ts
    host = _host((13, 10, 7), np.complex64)
    darray.save(tmp_path / "a", darray.asarray(host, mesh=_mesh((2, 2, 2)),
                                               spec=("x", "y", "z")), engine="numpy")
    store = ts.open({"driver": "zarr3", "kvstore": {"driver": "file",
                                                     "path": str(tmp_path / "a")}}).result()
    np.testing.assert_array_equal(store.read().result(), host)
    assert store.schema.chunk_layout.read_chunk.shape == (7, 5, 4)


def _zarr():
    try:
        import zarr
    except ImportError:
        return None
    return zarr if int(zarr.__version__.split(".")[0]) >= 3 else None


@pytest.mark.skipif(_zarr() is None, reason="zarr-python >= 3 not installed")
def test_zarr_python_reads_ours_and_we_read_its(tmp_path):
    zarr = _zarr()
    host = _host((13, 10, 7), np.float32)
    for engine in ENGINES:
        darray.save(tmp_path / engine, darray.asarray(host, mesh=_mesh((2, 4)), spec=("x", "y")),
                    engine=engine)
        z = zarr.open_array(str(tmp_path / engine), mode="r")
        np.testing.assert_array_equal(z[...], host)
        assert z.chunks == (7, 3, 7) and z.attrs["darray"]["split"] == [["x"], ["y"], []]
    theirs = zarr.create_array(str(tmp_path / "theirs"), shape=(9, 11), chunks=(4, 5),
                               dtype="int32", compressors=None, fill_value=0)
    ref = np.arange(99, dtype=np.int32).reshape(9, 11)
    theirs[...] = ref
    y = darray.load(tmp_path / "theirs", mesh=_mesh((8,)), engine="numpy")
    assert y.dtype == np.int32 and y.data.sharding.spec == y.layout.spec
    np.testing.assert_array_equal(np.asarray(y), ref)
