"""Parallel checkpoints: a DistArray saved as a zarr v3 array, one chunk per block.

The chunk grid is the layout's block grid, so every process writes exactly the chunks its
devices hold (one replica of each) and no data crosses the network. `load` reads any regular
zarr v3 array onto any mesh and spec: each process reads only the chunks that overlap its own
devices' blocks (through `from_callback`).

I/O engines: tensorstore (the optional extra ``darray[io]``) when it is importable, else a
small built-in writer and reader for the subset of zarr v3 darray writes (regular chunk grid,
default "/" chunk keys, the uncompressed little-endian ``bytes`` codec). Both produce the same
files; zarr-python, tensorstore and xarray read them.

Commit protocol (an interrupted save never looks complete; the previous checkpoint stays
readable): everything is written under ``PATH.darray-partial``; only when every process has
finished does process 0 write ``zarr.json`` and rename the directory to ``PATH``. An existing
checkpoint at ``PATH`` is first renamed to ``PATH.darray-previous`` and deleted only after the
new one is in place; `load` falls back to it if a crash hit between the two renames.
"""
from __future__ import annotations

import json
import math
import os
import shutil

import jax
import numpy as np
from jax.experimental import multihost_utils

from darray._src.base.compat import make_auto_mesh
from darray._src.base.errors import LayoutError
from darray._src.distarray.array import DistArray
from darray._src.engine.arguments import ensure_array
from darray._src.extras.blockwise import from_callback, logical_ranges
from darray._src.halo.api import unhalo
from darray._src.layout.layout import normalize_spec
from darray._src.placement.placement import default_mesh, resolve_mesh

PARTIAL, PREVIOUS = ".darray-partial", ".darray-previous"
FORMAT_VERSION = 1
_ENGINES = ("auto", "tensorstore", "numpy")


def _tensorstore():
    try:
        import tensorstore  # optional dependency
    except ImportError:
        return None
    return tensorstore


def _engine(engine):
    if engine not in _ENGINES:
        raise ValueError(f"engine={engine!r} is not one of {_ENGINES}")
    if engine == "auto":
        return "tensorstore" if _tensorstore() is not None else "numpy"
    if engine == "tensorstore" and _tensorstore() is None:
        raise ImportError("engine='tensorstore' needs the tensorstore package: "
                          "pip install 'darray[io]' (or pip install tensorstore)")
    return engine


def _barrier(name):
    if jax.process_count() > 1:
        multihost_utils.sync_global_devices(name)


def _fill_value(dtype: np.dtype):
    if dtype.kind == "b":
        return False
    if dtype.kind == "c":
        return [0.0, 0.0]
    return 0 if dtype.kind in "iu" else 0.0


def _metadata(x: DistArray, chunks) -> dict:
    layout = x.layout
    return {
        "zarr_format": 3,
        "node_type": "array",
        "shape": list(layout.shape),
        "data_type": np.dtype(x.dtype).name,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(chunks)}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": _fill_value(np.dtype(x.dtype)),
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "attributes": {"darray": {
            "format_version": FORMAT_VERSION,
            "mesh": {name: int(size) for name, size in layout.mesh.shape.items()},
            "split": [list(s) for s in layout.split],
            "process_count": jax.process_count(),
        }},
    }


def _savable(x) -> DistArray:
    x = ensure_array("save", x)
    if x.layout.has_halo:
        x = unhalo(x)
    return x


def _check_target(final: str):
    """Refuse to replace anything that is not a zarr array (never delete a user's files)."""
    if os.path.lexists(final) and not os.path.isfile(os.path.join(final, "zarr.json")):
        raise FileExistsError(f"path={final!r} exists and is not a zarr array; darray.save only "
                              "replaces an earlier checkpoint. Remove it or choose another path")


def save(path, x, *, engine="auto") -> None:
    """Save a DistArray as a zarr v3 array, each process writing only its own blocks.

    Args:
      path: a directory path (created; an earlier checkpoint there is replaced atomically).
      x: the DistArray (ghost cells are not saved).
      engine: "auto" (tensorstore if installed, else the built-in writer), "tensorstore" or
        "numpy".

    In a multi-process run every process must call `save` with the same path on a file system
    all of them see. Collective: processes synchronise before the commit.

    Layout:
      The chunk grid is x's block grid (chunk = block size); x's mesh axes and split are
      recorded in the zarr attributes under "darray". No communication of data.
    """
    x = _savable(x)
    engine = _engine(engine)
    final = os.path.abspath(os.fspath(path))
    tmp = final + PARTIAL
    layout = x.layout
    chunks = tuple(max(1, layout.chunk(a)) for a in range(layout.ndim))
    meta = _metadata(x, chunks)
    _check_target(final)
    if jax.process_index() == 0:
        shutil.rmtree(tmp, ignore_errors=True)  # a stale interrupted save
        os.makedirs(tmp)
        if engine == "tensorstore":
            _ts_open(tmp, meta, create=True)
    _barrier("darray.save.begin:" + final)
    store = _ts_open(tmp, None) if engine == "tensorstore" else None
    for shard in x.data.addressable_shards:
        if shard.replica_id != 0:  # another device (maybe another process) writes this block
            continue
        region = logical_ranges(layout, shard.index)
        if any(r.stop == r.start for r in region):
            continue  # a trailing block that owns no cells: outside the chunk grid
        block = np.asarray(shard.data)
        if store is not None:
            owned = block[tuple(slice(0, r.stop - r.start) for r in region)]
            store[region].write(owned).result()
        else:
            key = tuple(r.start // c for r, c in zip(region, chunks))
            _write_chunk(tmp, key, _full_chunk(block, region, chunks))
    _barrier("darray.save.written:" + final)
    if jax.process_index() == 0:
        _write_json(os.path.join(tmp, "zarr.json"), meta)
        _commit(tmp, final)
    _barrier("darray.save.committed:" + final)


def _full_chunk(block, region, chunks) -> np.ndarray:
    """The block as a full zarr chunk: owned cells, then the fill value (zero) in padding."""
    owned = tuple(slice(0, r.stop - r.start) for r in region)
    if all(s.stop == c for s, c in zip(owned, chunks)):
        return block
    out = np.zeros(chunks, block.dtype)
    out[owned] = block[owned]
    return out


def _chunk_path(root, key) -> str:
    return os.path.join(root, "c", *map(str, key)) if key else os.path.join(root, "c")


def _write_chunk(root, key, chunk: np.ndarray):
    target = _chunk_path(root, key)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    data = np.ascontiguousarray(chunk)
    if data.dtype.byteorder == ">":  # zarr chunks are little-endian (the bytes codec above)
        data = data.astype(data.dtype.newbyteorder("<"))
    data.tofile(target)


def _write_json(target, obj):
    with open(target, "w") as f:
        json.dump(obj, f, indent=2)
        f.flush()
        os.fsync(f.fileno())


def _commit(tmp, final):
    """Put the finished directory at `final`; an old checkpoint goes only once the new is in."""
    previous = final + PREVIOUS
    if os.path.lexists(final):
        shutil.rmtree(previous, ignore_errors=True)
        os.rename(final, previous)
    # without `final`, an existing `previous` is the last good checkpoint (a save killed between
    # the renames): it too goes only once the new one is in
    os.rename(tmp, final)
    shutil.rmtree(previous, ignore_errors=True)


def _ts_open(root, meta, create=False):
    ts = _tensorstore()
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": root}}
    if create:
        return ts.open(dict(spec, metadata=meta), create=True).result()
    return ts.open(spec, open=True).result()


# -- loading -----------------------------------------------------------------------------------

def _committed_root(final) -> str:
    if os.path.isfile(os.path.join(final, "zarr.json")):
        return final
    previous = final + PREVIOUS
    if not os.path.lexists(final) and os.path.isfile(os.path.join(previous, "zarr.json")):
        return previous  # a save crashed between its two renames: the old checkpoint is intact
    if os.path.isdir(final + PARTIAL):
        raise FileNotFoundError(f"path={final!r} holds no complete checkpoint: only an "
                                f"interrupted save ({final + PARTIAL!r}) is there")
    raise FileNotFoundError(f"path={final!r} is not a zarr v3 array (no zarr.json found)")


def read_metadata(path) -> dict:
    """The zarr.json of a checkpoint (shape, data_type, chunk grid, attributes["darray"])."""
    return _read_zarr_json(_committed_root(os.path.abspath(os.fspath(path))))


_REQUIRED = ("zarr_format", "node_type", "shape", "data_type", "chunk_grid", "codecs")


def _damaged(root, what: str) -> ValueError:
    return ValueError(f"checkpoint {root!r} is damaged: {what}. It cannot be loaded; save the "
                      f"array again or restore the checkpoint from a copy")


def _read_zarr_json(root) -> dict:
    """The checkpoint's zarr.json, or a ValueError naming the checkpoint, the file and what is
    wrong with it (the bare JSONDecodeError names neither)."""
    target = os.path.join(root, "zarr.json")
    with open(target, "rb") as f:
        raw = f.read()
    try:
        meta = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise _damaged(root, f"zarr.json is not UTF-8 text ({err.reason} at byte {err.start} of "
                             f"{len(raw)})") from None
    except json.JSONDecodeError as err:
        raise _damaged(root, f"zarr.json is not valid JSON ({err.msg}: line {err.lineno}, "
                             f"column {err.colno}; the file holds {len(raw)} bytes: truncated?)"
                       ) from None
    if not isinstance(meta, dict):
        raise _damaged(root, f"zarr.json holds a JSON {type(meta).__name__}, not an object")
    missing = [key for key in _REQUIRED if key not in meta]
    if missing:
        raise _damaged(root, f"zarr.json lacks the zarr v3 field(s) {missing}")
    return meta


def load(path, *, mesh=None, spec=None, engine="auto") -> DistArray:
    """Load a zarr v3 array as a DistArray, each process reading only its own blocks.

    Args:
      path: a checkpoint written by `darray.save`, or any zarr v3 array with a regular chunk
        grid (the built-in reader needs the uncompressed ``bytes`` codec; tensorstore reads
        every codec).
      mesh, spec: where the array goes; any mesh and spec, whatever the save used. Default
        (neither given): the saved layout, i.e. a mesh of the saved axis names and sizes over
        this run's devices (`darray.default_mesh()` itself where it is that mesh) and the saved
        split, when the device count equals the saved mesh's size; otherwise (another device
        count, or no darray attributes in the file) the default mesh and split. With only
        `mesh` given: the saved split if that mesh has the saved axis names.
      engine: "auto", "tensorstore" or "numpy", as in `save`.

    Layout:
      As requested; no communication (the blocks come from the files).
    """
    engine = _engine(engine)
    root = _committed_root(os.path.abspath(os.fspath(path)))
    meta = _read_zarr_json(root)
    shape, dtype = _check_metadata(meta, root)
    if spec is None and mesh is None:
        mesh = _saved_mesh(meta)
    if spec is None and mesh is not None:
        spec = _saved_spec(meta, mesh, len(shape))
    if engine == "tensorstore":
        try:
            store = _ts_open(root, None)
        except ValueError as err:  # tensorstore's errors name the file, not the checkpoint
            raise _damaged(root, f"tensorstore cannot open it ({err})") from None
        return from_callback(shape, dtype, lambda region: _ts_read(store, region, root, meta),
                             mesh=mesh, spec=spec)
    reader = _ChunkReader(root, meta, shape, dtype)
    return from_callback(shape, dtype, reader.read, mesh=mesh, spec=spec)


def _ts_read(store, region, root, meta):
    try:
        return store[region].read().result()
    except ValueError as err:
        cells = "[" + ", ".join(f"{r.start}:{r.stop}" for r in region) + "]"
        raise _damaged(root, f"reading cells {cells} failed ({err})") from None


def _saved_mesh(meta):
    """The saved mesh rebuilt over this run's devices (Auto axes, darray's kind), or None when
    the file records none or the device count differs (then the default placement)."""
    saved = meta.get("attributes", {}).get("darray", {}).get("mesh")
    if not isinstance(saved, dict) or not saved:
        return None
    names, sizes = tuple(saved), tuple(saved.values())
    if not all(isinstance(n, str) for n in names) or not all(
            isinstance(s, int) and s > 0 for s in sizes):
        return None
    if math.prod(sizes) != jax.device_count():
        return None
    default = default_mesh()
    if tuple(default.axis_names) == names and tuple(default.devices.shape) == sizes:
        return default
    return make_auto_mesh(sizes, names)


def _saved_spec(meta, mesh, ndim):
    saved = meta.get("attributes", {}).get("darray", {}).get("split")
    if saved is None or len(saved) != ndim:
        return None
    spec = tuple(tuple(s) or None for s in saved)
    try:
        normalize_spec(spec, ndim, resolve_mesh(mesh))
    except (LayoutError, TypeError):
        return None  # the target mesh has other axis names: use the default split
    return spec


def _check_metadata(meta, root):
    if meta.get("zarr_format") != 3 or meta.get("node_type") != "array":
        raise ValueError(f"{root!r} is not a zarr v3 array (zarr_format="
                         f"{meta.get('zarr_format')!r}, node_type={meta.get('node_type')!r})")
    try:
        dtype = np.dtype(meta["data_type"])
    except TypeError:
        raise ValueError(f"{root!r} has data_type={meta['data_type']!r}, which darray does not "
                         "hold") from None
    return tuple(int(n) for n in meta["shape"]), dtype


class _ChunkReader:
    """Reads regions of an uncompressed regular-grid zarr v3 array, chunk by chunk."""

    def __init__(self, root, meta, shape, dtype):
        grid, keys, codecs = meta["chunk_grid"], meta["chunk_key_encoding"], meta["codecs"]
        if grid.get("name") != "regular":
            raise ValueError(f"{root!r}: chunk grid {grid.get('name')!r} is not supported by the "
                             "built-in reader (regular only); install tensorstore")
        names = [c["name"] for c in codecs]
        if names != ["bytes"]:
            raise ValueError(f"{root!r} uses codecs {names}; the built-in reader handles only the "
                             "uncompressed 'bytes' codec: pip install 'darray[io]' (tensorstore)")
        endian = codecs[0].get("configuration", {}).get("endian", "little")
        self.dtype = dtype.newbyteorder("<" if endian == "little" else ">")
        self.out_dtype, self.root, self.shape = dtype, root, shape
        self.chunks = tuple(int(c) for c in grid["configuration"]["chunk_shape"])
        self.separator = keys.get("configuration", {}).get("separator", "/")
        self.v2_keys = keys.get("name") == "v2"
        fill = meta.get("fill_value", 0)
        self.fill = complex(*fill) if isinstance(fill, list) else fill

    def _path(self, key):
        if self.v2_keys:
            return os.path.join(self.root, self.separator.join(map(str, key)) if key else "0")
        return os.path.join(self.root, self.separator.join(["c", *map(str, key)]))

    def read(self, region) -> np.ndarray:
        out = np.empty([r.stop - r.start for r in region], self.out_dtype)
        ranges = [range(r.start // c, -(-r.stop // c)) for r, c in zip(region, self.chunks)]
        for key in np.ndindex(*[len(r) for r in ranges]):
            key = tuple(rng[i] for rng, i in zip(ranges, key))
            chunk = self._chunk(key)
            src, dst = [], []
            for r, c, k in zip(region, self.chunks, key):
                lo, hi = max(r.start, k * c), min(r.stop, (k + 1) * c)
                src.append(slice(lo - k * c, hi - k * c))
                dst.append(slice(lo - r.start, hi - r.start))
            out[tuple(dst)] = chunk[tuple(src)]
        return out

    def _chunk(self, key) -> np.ndarray:
        target = self._path(key)
        if not os.path.exists(target):  # zarr leaves all-fill chunks unwritten
            return np.full(self.chunks, self.fill, self.out_dtype)
        need = int(np.prod(self.chunks)) * self.dtype.itemsize
        size = os.path.getsize(target)
        if size != need:
            raise _damaged(self.root, f"chunk file {os.path.relpath(target, self.root)!r} holds "
                                      f"{size} bytes; the chunk shape {self.chunks} of "
                                      f"{self.out_dtype} needs {need} (truncated write?)")
        # Mapped, not read: a block that needs part of a chunk copies only that part, and a
        # chunk shared by several target blocks is read from disk once (page cache).
        return np.memmap(target, dtype=self.dtype, mode="r", shape=self.chunks)
