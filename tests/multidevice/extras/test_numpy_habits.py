"""Covers: darray/_src/api/creation.py

numpy habits generic code relies on (issue 19 item 6): integer linspace, transforms of an
empty axis padded to n, frequency grids placed with device=."""
import jax
import numpy as np
import pytest
from helpers import mesh_of

import darray

MESH = mesh_of((8,), ("x",), explicit=True)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "uint16", "bool"])
@pytest.mark.parametrize("args", [(0, 3, 4), (-1, 0, 4), (5, -5, 9), (2.5, 9.5, 16),
                                  (0, 3, 1), (0, 3, 0)])
@pytest.mark.x64
@pytest.mark.parametrize("endpoint", [True, False])
def test_linspace_integer_dtype_as_numpy(dtype, args, endpoint):
    if dtype.startswith("u") and min(args[:2]) < 0:
        return  # numpy's cast of negative samples to unsigned is undefined
    want = np.linspace(*args, dtype=dtype, endpoint=endpoint)
    got = darray.linspace(*args, dtype=getattr(darray, dtype), endpoint=endpoint, mesh=MESH,
                          spec=("x",))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), want)
    assert got.mesh.shape == MESH.shape and got.layout.split == (("x",),)


@pytest.mark.parametrize("fn", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
@pytest.mark.parametrize("shape, spec, axis", [((0,), ("x",), 0), ((0, 3), ("x", None), 0),
                                               ((3, 0), (None, "x"), 1)])
@pytest.mark.x64
def test_transform_of_an_empty_axis_padded_to_n_is_zeros(fn, shape, spec, axis):
    host = np.zeros(shape, complex if fn in ("irfft", "hfft") else float)
    x = darray.asarray(host, mesh=MESH, spec=spec)
    # numpy's transform of the input zero-padded to what `n` reads (numpy's own irfft/hfft of
    # a length-0 axis returns uninitialised memory)
    padded = list(shape)
    padded[axis] = 5 if fn in ("irfft", "hfft") else 8
    want = getattr(np.fft, fn)(np.zeros(padded, host.dtype), n=8, axis=axis)
    got = getattr(darray.fft, fn)(x, n=8, axis=axis)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got), want)
    assert got.layout.split == x.layout.split and got.mesh == x.mesh


@pytest.mark.x64
@pytest.mark.parametrize("fn", ["fftfreq", "rfftfreq"])
def test_frequency_grids_accept_device(fn):
    x = darray.asarray(np.ones(16), mesh=MESH, spec=("x",))
    want = getattr(np.fft, fn)(12, d=0.5)
    for device in (x.device, jax.devices()[0]):
        got = getattr(darray.fft, fn)(12, d=0.5, device=device)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-15)
        assert got.device == device or got.mesh.devices.reshape(-1).tolist() == [device]
