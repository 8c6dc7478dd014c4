"""Covers: darray/_src/api/info.py, darray/_src/api/data_type_functions.py
Covers: darray/_src/api/versions.py, darray/_src/base/dtypes.py
Covers: darray/_src/extras/creation_extra.py

darray as an Array API namespace: generic code through array_api_compat, the protocol
methods of DistArray, inspection, creation from arrays, data type functions, config."""
import array_api_compat
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import mesh_of
from jax.sharding import NamedSharding
from scalar_check import assert_replicated_scalar

import darray
from darray._src.distarray.array import DistArray

# float64 data and tolerances throughout: not run with x64 off
pytestmark = pytest.mark.x64

RNG = np.random.default_rng(5)


# -- the "done when": generic code written only against the namespace ------------------
def standardise_then_sum(x, axis):
    """Written against the Array API only: knows nothing about darray."""
    xp = array_api_compat.array_namespace(x)
    z = (x - xp.mean(x, axis=axis, keepdims=True)) / xp.std(x, axis=axis, keepdims=True)
    return z, xp.sum(z * z + xp.abs(z), axis=axis)


@pytest.mark.parametrize("mesh_shape,shape,spec", [((2, 4), (13, 10, 7), ("x", "y")),
                                                   ((8,), (29, 5), ("x",)),
                                                   ((1, 8), (5, 13), ("x", "y"))])
def test_generic_array_api_code_keeps_layout(mesh_shape, shape, spec):
    mesh = mesh_of(mesh_shape)
    host = RNG.standard_normal(shape)
    x = darray.asarray(host, mesh=mesh, spec=spec)
    assert array_api_compat.array_namespace(x) is darray
    z, total = standardise_then_sum(x, axis=0)
    z_ref = (host - host.mean(axis=0, keepdims=True)) / host.std(axis=0, keepdims=True)
    assert isinstance(z, darray.DistArray) and z.layout == x.layout
    assert z.data.sharding.is_equivalent_to(x.data.sharding, z.data.ndim)
    np.testing.assert_allclose(np.asarray(z), z_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(total), np.sum(z_ref ** 2 + np.abs(z_ref), axis=0),
                               rtol=1e-10)
    assert total.layout.split == x.layout.split[1:]
    # the same function on numpy gives the reference: nothing darray-specific in it
    np.testing.assert_allclose(standardise_then_sum(host, 0)[0], z_ref)


def test_array_namespace_versions():
    x = darray.asarray(np.ones(3))
    assert darray.__array_api_version__ == "2025.12"
    for version in (None, "2025.12"):
        assert x.__array_namespace__(api_version=version) is darray
    for version in ("2023.12", "2024.12"):  # darray as that revision (test_api_2025.py)
        assert x.__array_namespace__(api_version=version).__array_api_version__ == version
    with pytest.raises(ValueError, match=r"api_version='2021.12' is not supported; darray "
                                         r"implements the Array API 2025.12"):
        x.__array_namespace__(api_version="2021.12")
    assert array_api_compat.is_array_api_obj(x)


# -- protocol methods --------------------------------------------------------------------------
def test_python_scalar_conversions():
    mesh = mesh_of((8,))
    assert bool(darray.asarray(np.array([2.0]), mesh=mesh)) is True
    assert int(darray.asarray(np.array(7, np.int32), mesh=mesh)) == 7
    assert float(darray.sum(darray.asarray(np.arange(13.0), mesh=mesh))) == 78.0
    assert complex(darray.asarray(np.array([1 + 2j]), mesh=mesh)) == 1 + 2j
    i = darray.asarray(np.array(3), mesh=mesh)
    assert [10, 20, 30, 40][i] == 40 and i.__index__() == 3
    h = darray.asarray(np.arange(29.0), mesh=mesh).halo(2)
    assert float(darray.max(h)) == 28.0  # ghost cells are skipped
    one = darray.asarray(np.array([4.0]), mesh=mesh, spec=("x",)).halo(1, boundary="constant",
                                                                        fill_value=-1.0)
    assert one.layout.has_halo and float(one) == 4.0  # the cell after the ghosts
    with pytest.raises(ValueError, match=r"bool\(\) needs an array of size 1, got shape \(13,\)"):
        bool(darray.ones(13, mesh=mesh))
    with pytest.raises(TypeError, match="index.. is not defined for dtype float64"):
        [1][darray.asarray(np.array([0.0]), mesh=mesh)]
    with pytest.raises(TypeError, match="float.. is not defined for dtype complex128"):
        float(darray.asarray(np.array([1j]), mesh=mesh))
    # a created 0-d array and a 0-d op result are both 0-d DistArrays with darray's conversions
    z = darray.asarray(np.array(0.0), mesh=mesh)
    assert isinstance(z, DistArray) and float(z) == 0.0
    with pytest.raises(TypeError, match="index.. is not defined for dtype float64"):
        [1][z]
    r = darray.sum(z)
    assert_replicated_scalar(r, mesh, 0.0)
    with pytest.raises(TypeError, match="index.. is not defined for dtype float64"):
        [1][r]
    assert [5, 6][darray.sum(darray.ones(1, mesh=mesh, dtype=darray.int64))] == 6
    # a 0-d DistArray built from a jax scalar converts like size 1
    w = DistArray._wrap_scalar(np.float64(2.5), mesh)
    assert (float(w), int(w), bool(w), complex(w)) == (2.5, 2, True, 2.5 + 0j)
    assert int(DistArray._wrap_scalar(np.int64(3), mesh).__index__()) == 3
    assert len(darray.ones((5, 3), mesh=mesh)) == 5


def test_dlpack_and_from_dlpack():
    mesh = mesh_of((2, 4))
    host = RNG.standard_normal((13, 10))
    x = darray.asarray(host, mesh=mesh, spec=("x", "y"))
    np.testing.assert_array_equal(np.from_dlpack(x), host)
    assert x.__dlpack_device__() == (1, 0)
    for source in (host, jnp.asarray(host), x):
        y = darray.from_dlpack(source, device=mesh)
        assert isinstance(y, darray.DistArray) and y.mesh == mesh
        np.testing.assert_array_equal(np.asarray(y), host)
    for shape in ((0, 3), (2, 0)):  # empty sharded arrays reach the host too
        assert np.from_dlpack(darray.zeros(shape, mesh=mesh)).shape == shape
    with pytest.raises(TypeError, match="from_dlpack needs an object with __dlpack__, got list"):
        darray.from_dlpack([1, 2])


def test_transposes():
    mesh = mesh_of((2, 4))
    host = RNG.standard_normal((13, 10))
    x = darray.asarray(host, mesh=mesh, spec=("x", "y"))
    np.testing.assert_array_equal(np.asarray(x.T), host.T)
    assert x.T.layout.split == (("y",), ("x",))
    b = darray.asarray(RNG.standard_normal((3, 13, 10)), mesh=mesh, spec=(None, "x", "y"))
    np.testing.assert_array_equal(np.asarray(b.mT), np.swapaxes(np.asarray(b), -1, -2))
    with pytest.raises(ValueError, match="x.T needs a 2-D array, got 3-D"):
        _ = b.T


# -- creation from arrays ----------------------------------------------------------------------
def test_tril_triu_meshgrid():
    mesh = mesh_of((2, 4))
    host = RNG.standard_normal((2, 13, 10))
    x = darray.asarray(host, mesh=mesh, spec=(None, "x", "y"))
    for k in (-2, 0, 3):
        lo, up = darray.tril(x, k=k), darray.triu(x, k=k)
        np.testing.assert_array_equal(np.asarray(lo), np.tril(host, k))
        np.testing.assert_array_equal(np.asarray(up), np.triu(host, k))
        assert lo.layout == x.layout and up.layout == x.layout
    text = jax.jit(lambda x: darray.tril(x)).lower(x).compile().as_text()
    assert not any(c in text for c in ("all-gather", "all-reduce", "all-to-all",
                                       "collective-permute"))
    with pytest.raises(ValueError, match=r"tril needs an array of rank >= 2, got shape \(3,\)"):
        darray.tril(darray.ones(3, mesh=mesh))
    a, b = np.arange(5.0), np.arange(7.0)
    for indexing in ("xy", "ij"):
        got = darray.meshgrid(darray.asarray(a, mesh=mesh), darray.asarray(b, mesh=mesh),
                              indexing=indexing)
        for g, r in zip(got, np.meshgrid(a, b, indexing=indexing)):
            np.testing.assert_array_equal(np.asarray(g), r)
            assert g.mesh == mesh
    with pytest.raises(ValueError, match="indexing='xz'"):
        darray.meshgrid(darray.asarray(a), indexing="xz")


# -- inspection and data type functions on arrays ----------------------------------------------
@pytest.mark.distributed_placement
def test_namespace_info():
    info = darray.__array_namespace_info__()
    caps = info.capabilities()
    assert caps["boolean indexing"] is True and caps["data-dependent shapes"] is True
    assert "max dimensions" in caps
    # under jit the masks' counts are unknown: reported False while tracing, as jax does
    seen = []

    @jax.jit
    def traced(a):
        seen.append(darray.__array_namespace_info__().capabilities())
        return a * 2

    traced(jax.numpy.ones(3))
    assert seen[0]["boolean indexing"] is False and seen[0]["data-dependent shapes"] is False
    assert jax.numpy.__array_namespace_info__().capabilities()["boolean indexing"] is False
    assert info.capabilities()["boolean indexing"] is True  # eager again after the trace
    assert info.default_device() == darray.default_mesh()
    assert info.default_device() in info.devices()
    defaults = info.default_dtypes()
    assert defaults["real floating"] == darray.float64 and defaults["indexing"] == darray.int64
    assert set(info.dtypes(kind="complex floating")) == {"complex64", "complex128"}
    assert len(info.dtypes()) == 13
    assert set(info.dtypes(kind=("bool", "unsigned integer"))) == {
        "bool", "uint8", "uint16", "uint32", "uint64"}
    with pytest.raises(ValueError, match="kind='float' is not a dtype kind"):
        info.dtypes(kind="float")
    x = darray.zeros(3)
    assert x.device == info.default_device()
    assert darray.zeros(3, device=info.default_device()).device == x.device


def test_astype_and_dtype_functions_on_arrays():
    mesh = mesh_of((2, 4))
    host = RNG.uniform(-5, 5, (13, 10))
    x = darray.asarray(host, mesh=mesh, spec=("x", "y"))
    y = darray.astype(x, darray.int32)
    assert y.dtype == darray.int32 and y.layout == x.layout
    assert y.data.sharding.is_equivalent_to(NamedSharding(mesh, x.layout.spec), 2)
    np.testing.assert_array_equal(np.asarray(y), host.astype(np.int32))
    assert darray.astype(x, darray.float64, copy=False) is x
    assert darray.astype(x, darray.float64) is not x
    with pytest.raises(TypeError, match="would drop the imaginary part"):
        darray.astype(x * 1j, darray.float64)
    # asarray refuses the same cast, from every source (numpy and jax only warn)
    for source in (x * 1j, (x * 1j).data, host * 1j, [1 + 2j, 3j], 2j):
        with pytest.raises(TypeError, match=r"complex\d+ data with dtype=float32 would drop "
                                            r"the imaginary part"):
            darray.asarray(source, dtype=darray.float32)
    assert darray.asarray(x * 1j, dtype=darray.complex64).dtype == darray.complex64
    assert darray.asarray(host, dtype=darray.float32).dtype == darray.float32
    with pytest.raises(TypeError, match=r"dtype='float17' is not a darray dtype"):
        darray.astype(x, "float17")
    assert darray.result_type(x, y) == darray.float64
    assert darray.result_type(y, darray.int8, 1) == darray.int32
    assert darray.can_cast(y, darray.int64) and not darray.can_cast(x, darray.int32)
    assert darray.finfo(x).eps == np.finfo(np.float64).eps
    assert darray.iinfo(y).max == 2**31 - 1
    assert x.dtype == darray.float64 and darray.isdtype(x.dtype, "real floating")


def test_config_api():
    assert darray.get_config("mismatch") == "redistribute"
    with darray.config_context(mismatch="raise"):
        assert darray.get_config("mismatch") == "raise"
    assert darray.get_config("mismatch") == "redistribute"
    with pytest.raises(ValueError, match=r"mismatch='sometimes' is not accepted; use "
                                         r"'redistribute' or 'raise'"):
        darray.set_config(mismatch="sometimes")
    with pytest.raises(ValueError, match="unknown darray config option 'speed'"):
        darray.set_config(speed=3)
    assert darray.get_config("mismatch") == "redistribute"
