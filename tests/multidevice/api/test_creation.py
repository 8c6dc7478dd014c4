"""Covers: darray/_src/api/creation.py, darray/_src/engine/placing.py
Covers: darray/_src/placement/placement.py, darray/_src/distarray/array.py

DistArray foundation on 8 virtual CPU devices: placement, round trips, jit, creation, errors."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import mesh_of
from hypothesis import given, settings
from hypothesis import strategies as st
from jax.sharding import PartitionSpec as P

import darray

MESH_SHAPES = [(8,), (2, 4), (4, 2), (1, 8)]


def spec_for(mesh_shape, ndim):
    names = ("x", "y", "z")[: len(mesh_shape)]
    return tuple(names[:ndim])


def assert_blocks_only(x, host):
    """Each device holds exactly its own block (with end padding), nothing more."""
    layout = x.layout
    assert x.data.sharding.spec == layout.spec
    for shard in x.data.addressable_shards:
        assert shard.data.shape == layout.block_shape
        coords = _coords_of(x.mesh, shard.device)
        cells = layout.device_slices(coords)
        owned = host[cells]
        got = np.asarray(shard.data)[tuple(slice(0, s.stop - s.start) for s in cells)]
        np.testing.assert_array_equal(got, owned)


def _coords_of(mesh, device):
    index = np.argwhere(mesh.devices == device)[0]
    return dict(zip(mesh.axis_names, (int(i) for i in index)))


@pytest.mark.x64
@pytest.mark.parametrize("mesh_shape", MESH_SHAPES)
@pytest.mark.parametrize("explicit", [True, False])
@pytest.mark.parametrize("shape", [(13, 10, 7), (7,), (16, 8), (5, 13)])
def test_asarray_round_trip(mesh_shape, explicit, shape):
    mesh = mesh_of(mesh_shape, explicit=explicit)
    spec = spec_for(mesh_shape, len(shape))
    host = np.random.default_rng(0).standard_normal(shape)
    x = darray.asarray(host, mesh=mesh, spec=spec)
    assert x.shape == shape and x.ndim == len(shape) and x.size == host.size
    assert x.dtype == np.float64
    np.testing.assert_array_equal(np.asarray(x), host)
    assert_blocks_only(x, host)
    assert x.layout.split == tuple((n,) for n in spec) + ((),) * (len(shape) - len(spec))
    # the stored mesh is the Auto twin of the one given (same devices and names)
    assert x.mesh.axis_names == mesh.axis_names
    assert (x.mesh.devices == mesh.devices).all()


def test_issue_example_13_10_7_on_2x4():
    mesh = mesh_of((2, 4), ("x", "y"), explicit=True)
    host = np.arange(13 * 10 * 7, dtype=np.float32).reshape(13, 10, 7)
    x = darray.asarray(host, mesh=mesh, spec=("x", "y"))
    assert x.shape == (13, 10, 7)
    np.testing.assert_array_equal(np.asarray(x), host)
    assert repr(x) == "DistArray(float32[13,10,7], mesh=(x:2, y:4), split=(x, y, None))"
    assert x.data.sharding.spec == P("x", "y")
    # each device holds only its (7, 3, 7) block: 1/8 of the padded array
    assert {s.data.shape for s in x.data.addressable_shards} == {(7, 3, 7)}
    assert_blocks_only(x, host)


@pytest.mark.x64
@pytest.mark.parametrize("mesh_shape", MESH_SHAPES)
def test_jit_identity_keeps_layout(mesh_shape):
    mesh = mesh_of(mesh_shape, explicit=True)
    host = np.random.default_rng(1).standard_normal((13, 7))
    x = darray.asarray(host, mesh=mesh, spec=spec_for(mesh_shape, 2))
    y = jax.jit(lambda a: a)(x)
    assert isinstance(y, darray.DistArray)
    assert y.layout == x.layout
    assert y.data.sharding.spec == x.layout.spec
    np.testing.assert_array_equal(np.asarray(y), host)


def test_pytree_flatten_unflatten():
    x = darray.zeros((9, 4), mesh=mesh_of((2, 4), explicit=True), spec=("x", "y"))
    leaves, tree = jax.tree_util.tree_flatten(x)
    assert len(leaves) == 1 and leaves[0] is x.data
    again = jax.tree_util.tree_unflatten(tree, leaves)
    assert again.layout == x.layout
    # JAX rebuilds with odd leaves during transformations: must not validate
    odd = jax.tree_util.tree_unflatten(tree, [None])
    assert odd.layout == x.layout


@pytest.mark.parametrize("mesh_shape", MESH_SHAPES)
def test_from_jax_array(mesh_shape):
    mesh = mesh_of(mesh_shape, explicit=True)
    src = jnp.arange(13 * 6, dtype=jnp.float32).reshape(13, 6)
    x = darray.asarray(src, mesh=mesh, spec=spec_for(mesh_shape, 2))
    np.testing.assert_array_equal(np.asarray(x), np.asarray(src))
    assert x.data.sharding.spec == x.layout.spec


@pytest.mark.parametrize("obj, dtype", [
    (3.5, np.float64), (2, np.int64), (True, np.bool_), (1 + 2j, np.complex128),
    ([[1, 2], [3, 4]], np.int64), ([1.0, 2.0, 3.0], np.float64),
])
@pytest.mark.x64
def test_asarray_scalars_and_lists(obj, dtype):
    x = darray.asarray(obj)
    assert x.dtype == dtype
    np.testing.assert_array_equal(np.asarray(x), np.asarray(obj, dtype=dtype))


def test_asarray_dtype_and_redistribute():
    mesh = mesh_of((2, 4), explicit=True)
    host = np.random.default_rng(2).standard_normal((13, 10))
    x = darray.asarray(host, mesh=mesh, spec=("x", "y"))
    y = darray.asarray(x, spec=("y", "x"), dtype=np.float32)
    assert y.layout.split == (("y",), ("x",)) and y.dtype == np.float32
    assert y.data.sharding.spec == P("y", "x")
    np.testing.assert_allclose(np.asarray(y), host.astype(np.float32))
    assert darray.asarray(x) is x
    assert darray.asarray(x, copy=False) is x
    with pytest.raises(ValueError, match="copy=False"):
        darray.asarray(x, spec=("y",), copy=False)
    with pytest.raises(ValueError, match="copy=False"):
        darray.asarray(host, copy=False)


@pytest.mark.parametrize("mesh_shape", MESH_SHAPES)
def test_filled_creation(mesh_shape):
    mesh = mesh_of(mesh_shape, explicit=True)
    spec = spec_for(mesh_shape, 2)
    for fn, value in [(darray.zeros, 0), (darray.ones, 1), (darray.empty, 0)]:
        x = fn((13, 7), mesh=mesh, spec=spec)
        np.testing.assert_array_equal(np.asarray(x), np.full((13, 7), value, np.float64))
        assert x.data.sharding.spec == x.layout.spec
    x = darray.full((13, 7), 2.5, mesh=mesh, spec=spec, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(x), np.full((13, 7), 2.5, np.float32))
    assert x.dtype == np.float32
    for fn, value in [(darray.zeros_like, 0), (darray.ones_like, 1)]:
        y = fn(x)
        assert y.layout == x.layout and y.dtype == x.dtype
        np.testing.assert_array_equal(np.asarray(y), np.full((13, 7), value, np.float32))
    y = darray.full_like(x, 7, dtype=np.int32)
    assert y.layout == x.layout and y.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(y), np.full((13, 7), 7))


@given(start=st.integers(-20, 20), stop=st.integers(-20, 40),
       step=st.sampled_from([1, 2, 3, -1, -3]))
@settings(max_examples=15, deadline=None)
def test_arange(start, stop, step):
    x = darray.arange(start, stop, step)
    np.testing.assert_array_equal(np.asarray(x), np.arange(start, stop, step))


@pytest.mark.x64
def test_arange_float_and_linspace():
    mesh = mesh_of((2, 4), explicit=True)
    np.testing.assert_allclose(np.asarray(darray.arange(0.5, 7.3, 0.7)), np.arange(0.5, 7.3, 0.7))
    for num, endpoint in [(13, True), (13, False), (1, True), (0, True)]:
        x = darray.linspace(-1.0, 2.0, num, endpoint=endpoint, mesh=mesh, spec=(("x", "y"),))
        np.testing.assert_allclose(np.asarray(x), np.linspace(-1.0, 2.0, num, endpoint=endpoint))
        assert x.layout.split == (("x", "y"),)


@pytest.mark.parametrize("n, m, k", [(5, None, 0), (13, 7, 1), (7, 13, -2), (4, 4, 5)])
def test_eye(n, m, k):
    x = darray.eye(n, m, k=k, mesh=mesh_of((2, 4), explicit=True), spec=("x", "y"))
    np.testing.assert_array_equal(np.asarray(x), np.eye(n, m, k=k))
    assert x.data.sharding.spec == P("x", "y")


@pytest.mark.distributed_placement
def test_default_mesh_and_split():
    x = darray.zeros((13, 64))
    assert x.mesh.shape == {"d": 8}
    # axis 0 (13 >= 8) is split: a slab
    assert x.layout.split == (("d",), ())
    y = darray.zeros((4, 64))
    assert y.layout.split == ((), ("d",))
    # too short to split evenly and small: replicated rather than 8 blocks of mostly padding
    assert darray.zeros((5, 7)).layout.split == ((), ())
    # too short to split evenly but large: split along the longest axis anyway
    big = darray.zeros((7, 7, 7, 7, 6, 7))
    assert big.layout.split == (("d",), (), (), (), (), ())
    # a created 0-d array is a DistArray (setitem, operators follow the namespace) ...
    s = darray.asarray(3.0)
    assert isinstance(s, darray.DistArray) and s.shape == () and s.layout.split == ()
    assert float(s) == 3.0
    # ... and so are 0-d results of ops, their data replicated over the mesh
    t = darray.sum(darray.ones((13, 64)))
    assert isinstance(t, darray.DistArray) and t.shape == () and float(t) == 13 * 64
    assert len(t.to_jax().sharding.device_set) == 8 and t.to_jax().sharding.is_fully_replicated


def test_mesh_shorthand_and_device():
    x = darray.zeros((8, 8), mesh=(2, 4))
    assert dict(x.mesh.shape) == {"x": 2, "y": 4}
    assert x.layout.split == (("x",), ("y",))
    y = darray.ones((8, 8), device=x.device)
    assert y.mesh == x.mesh
    z = darray.asarray(np.ones(3), device=jax.devices()[3])
    assert z.data.sharding.device_set == {jax.devices()[3]}


@pytest.mark.parametrize("kwargs, exc, message", [
    (dict(spec=("x", "q")), ValueError, r"spec\[1\] names mesh axis 'q'.*known axes: \('x', 'y'\)"),
    (dict(spec=("x", "x")), ValueError, r"uses mesh axis 'x' twice"),
    (dict(spec=("x", "y", None)), ValueError, r"has 3 entries but the array has rank 2"),
    (dict(spec="xy"), TypeError, r"spec must be a tuple or jax.sharding.PartitionSpec"),
])
def test_bad_spec_errors(kwargs, exc, message):
    with pytest.raises(exc, match=message):
        darray.asarray(np.ones((4, 4)), mesh=mesh_of((2, 4), explicit=True), **kwargs)


def test_bad_object_and_mesh_errors():
    with pytest.raises(TypeError, match="obj of type object .*dtype object"):
        darray.asarray(object())
    with pytest.raises(TypeError, match="obj of type str"):
        darray.asarray("abc")
    with pytest.raises(ValueError,
                       match=r"mesh=\{'x': 3, 'y': 4\} needs 12 devices but 8 are available"):
        darray.zeros((4, 4), mesh=(3, 4))
    with pytest.raises(TypeError, match="mesh must be a jax.sharding.Mesh"):
        darray.zeros((4, 4), mesh="2x4")
    with pytest.raises(TypeError, match="dtype=<class 'object'> is not supported"):
        darray.zeros((4,), dtype=object)
    with pytest.raises(ValueError, match=r"shape=\(-1,\) has a negative extent"):
        darray.zeros((-1,))
