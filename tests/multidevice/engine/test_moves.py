"""Covers: darray/_src/engine/placing.py, darray/_src/layout/layout.py

Moving an array to another device assignment is block-wise (#36.3): one function
(`darray._src.engine.placing.redistribute`) behind asarray(mesh=...), x.to_device and every
internal move, and no device ever holds much more than its own blocks.

The peak is measured from outside: every `jax.device_put` and
`jax.make_array_from_single_device_arrays` during the move takes a snapshot of the arrays
alive on each device (buffers that existed before the move, the input's included, are not
counted, nor is a buffer twice when two arrays share it), so whatever the move materialised
before or by that call is seen. The test fails on a move that puts the whole array on every
target device (the old `_redistribute`: 9 to 14 blocks per device on these cases).
"""
import gc

import jax
import numpy as np
import pytest
from helpers import mesh_of

import darray
from darray._src.api.creation import redistribute
from darray._src.layout.layout import Layout

DEVICES = jax.devices()


def _mesh(shape, names, order):
    return mesh_of(shape, names, devices=[DEVICES[i] for i in order])


class _Peak:
    """Largest bytes per device held by arrays created after `__enter__`."""

    def __init__(self, monkeypatch):
        self.monkeypatch = monkeypatch
        self.peak = 0
        self.calls = 0

    def snapshot(self):
        per_device: dict = {}
        seen = set(self.before_buffers)  # a buffer shared by two arrays counts once
        for arr in jax.live_arrays():
            if arr.is_deleted():
                continue
            for shard in arr.addressable_shards:
                key = (shard.device, shard.data.unsafe_buffer_pointer())
                if key not in seen:
                    seen.add(key)
                    per_device[shard.device] = per_device.get(shard.device, 0) + shard.data.nbytes
        self.peak = max([self.peak, *per_device.values()])

    def wrap(self, fn):
        def wrapped(*args, **kwargs):
            self.calls += 1
            self.snapshot()
            out = fn(*args, **kwargs)
            self.snapshot()
            return out
        return wrapped

    def __enter__(self):
        gc.collect()
        self.before_buffers = {(s.device, s.data.unsafe_buffer_pointer())
                               for a in jax.live_arrays() if not a.is_deleted()
                               for s in a.addressable_shards}
        self.monkeypatch.setattr(jax, "device_put", self.wrap(jax.device_put))
        self.monkeypatch.setattr(jax, "make_array_from_single_device_arrays",
                                 self.wrap(jax.make_array_from_single_device_arrays))
        return self

    def __exit__(self, *exc):
        self.snapshot()
        self.monkeypatch.undo()


def _block_bytes(layout, itemsize):
    return int(np.prod(layout.block_shape)) * itemsize


CASES = [
    # (shape, source mesh, source spec, target mesh, target spec)
    ((64, 48, 16), ((2, 4), ("x", "y"), range(8)), ("x", "y", None),
     ((4, 2), ("a", "b"), [3, 6, 0, 5, 7, 1, 2, 4]), ("a", None, "b")),
    ((37, 29, 11), ((2, 4), ("x", "y"), range(8)), ("x", "y", None),       # uneven
     ((4, 2), ("x", "y"), [7, 6, 5, 4, 3, 2, 1, 0]), (None, "x", "y")),
    ((37, 29), ((8,), ("d",), [1, 3, 5, 7, 0, 2, 4, 6]), ("d", None),
     ((2, 2, 2), ("p", "q", "r"), range(8)), (("p", "q"), "r")),
    # different device counts: a target block is cut on the source devices, then copied
    ((37, 29), ((2, 4), ("x", "y"), range(8)), ("x", "y"),                 # 8 -> 4 devices
     ((2, 2), ("x", "y"), [6, 4, 7, 5]), ("y", "x")),
    ((37, 29), ((2, 2), ("x", "y"), [2, 0, 3, 1]), ("x", "y"),             # 4 -> 8 devices
     ((4, 2), ("x", "y"), [5, 1, 6, 0, 7, 2, 3, 4]), ("x", "y")),
]


@pytest.mark.parametrize("shape,src,src_spec,dst,dst_spec", CASES)
def test_move_peaks_at_two_blocks_per_device(monkeypatch, shape, src, src_spec, dst,
                                              dst_spec):
    ref = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) * 0.5 - 3
    x = darray.asarray(ref, mesh=_mesh(*src), spec=src_spec)
    target = Layout.create(shape, _mesh(*dst), dst_spec)
    with _Peak(monkeypatch) as peak:
        out = redistribute(x, target)
    assert peak.calls, "the move was not observed"
    block = max(_block_bytes(x.layout, 8), _block_bytes(target, 8))
    # as many devices: the proxy block and the moved one; else also the padded target's
    # share on each source device while the blocks are cut
    blocks = 2 if x.mesh.size == target.mesh.size else 3
    assert peak.peak <= blocks * block, (peak.peak, block, peak.peak / block)
    assert out.layout == target
    assert out.data.sharding.is_equivalent_to(jax.sharding.NamedSharding(
        target.mesh, target.spec), out.ndim)
    assert tuple(out.data.shape) == target.physical_shape
    np.testing.assert_array_equal(np.asarray(out), ref)


@pytest.mark.x64
def test_to_device_and_asarray_share_the_move(monkeypatch):
    ref = np.arange(64 * 48, dtype=np.float32).reshape(64, 48)
    x = darray.asarray(ref, mesh=_mesh((2, 4), ("x", "y"), range(8)), spec=("x", "y"))
    mesh = _mesh((4, 2), ("a", "b"), [3, 6, 0, 5, 7, 1, 2, 4])
    block = _block_bytes(x.layout, 4)  # the target's blocks are as large
    with _Peak(monkeypatch) as peak:
        moved = x.to_device(jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("a", "b")))
    assert peak.peak <= 2 * block
    assert moved.layout == Layout.create(ref.shape, mesh, ("a", "b"))
    np.testing.assert_array_equal(np.asarray(moved), ref)
    with _Peak(monkeypatch) as peak:
        cast = darray.asarray(x, mesh=mesh, spec=(None, "a"), dtype=darray.float64)
    block = _block_bytes(cast.layout, 8)  # float64, and replicated over b: 4x the input's
    assert peak.peak <= 2 * block
    assert cast.dtype == np.float64 and cast.layout.split == ((), ("a",))
    np.testing.assert_array_equal(np.asarray(cast), ref)
    # onto one device and back
    with _Peak(monkeypatch) as peak:
        one = x.to_device(DEVICES[5])
    assert peak.peak <= 2 * _block_bytes(one.layout, 4)
    assert one.data.sharding.device_set == {DEVICES[5]}
    back = one.to_device(mesh)
    assert back.mesh == mesh
    np.testing.assert_array_equal(np.asarray(back), ref)
