"""Covers: darray/_src/base/native.py

The native module darray._native and its Python seam darray._src.base.native.

The native part is built by every `pip install` of darray, so these tests require it: a missing
module is a failed build, not a reason to skip.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from darray._src.base import native

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


def _sample(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _reference(x, length, axis):
    widths = [(0, 0)] * x.ndim
    widths[axis] = (0, length - x.shape[axis])
    return np.pad(x, widths)


def test_native_module_imports_and_is_compiled():
    import darray._native as mod

    assert native.available()
    assert mod.__file__.endswith((".so", ".pyd", ".dylib"))


def test_build_info_keys_and_types():
    info = native.build_info()
    assert info["available"] is True
    for key in ("cuda", "cudecomp", "mpi"):
        assert isinstance(info[key], bool), key
    # xla_ffi_api is "major.minor" of the headers the handlers were compiled against.
    major, minor = info["xla_ffi_api"].split(".")
    assert major.isdigit() and minor.isdigit()
    assert isinstance(info["compiler"], str) and info["compiler"]
    assert "darray_pad_axis_cpu" in info["targets"]
    # cuDecomp is only ever linked on top of CUDA.
    assert not info["cudecomp"] or info["cuda"]


def test_registrations_is_a_dict_of_capsules():
    import darray._native as mod

    regs = mod.registrations()
    assert isinstance(regs, dict) and regs
    for name, capsule in regs.items():
        assert name.startswith("darray_") and name.endswith(("_cpu", "_cuda")), name
        assert type(capsule).__name__ == "PyCapsule", (name, type(capsule))


def test_register_targets_is_idempotent():
    first = native.register_targets()
    second = native.register_targets("CPU")
    assert first == second
    assert "darray_pad_axis_cpu" in first


def test_register_targets_rejects_unknown_platform():
    with pytest.raises(ValueError, match=r"platform='tpu'.*expected 'cpu' or 'cuda'"):
        native.register_targets("tpu")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("shape", "length", "axis"), [
    ((7,), 8, 0),
    ((3, 5), 8, 1),
    ((3, 5), 4, 0),
    ((2, 3, 5), 3, 1),     # length == current: a plain copy
    ((2, 3, 5), 9, -1),
    ((4, 0, 3), 2, 1),     # empty input axis: all zeros out
])
@pytest.mark.x64
def test_pad_axis_matches_numpy_under_jit(dtype, shape, length, axis):
    x = _sample(shape, dtype)
    out = jax.jit(native.pad_axis, static_argnums=(1, 2))(x, length, axis)
    expected = _reference(x, length, axis)
    assert out.dtype == dtype
    assert out.shape == expected.shape
    np.testing.assert_array_equal(np.asarray(out), expected)


@pytest.mark.x64
@pytest.mark.parametrize("dtype", DTYPES)
def test_pad_axis_eager_matches_numpy(dtype):
    x = _sample((3, 4), dtype, seed=1)
    np.testing.assert_array_equal(np.asarray(native.pad_axis(x, 6, axis=0)), _reference(x, 6, 0))


@pytest.mark.x64
def test_pad_axis_under_vmap_keeps_the_axis():
    x = _sample((5, 3, 4), np.float64, seed=2)
    out = jax.vmap(lambda a: native.pad_axis(a, 6, axis=0))(x)
    expected = np.stack([_reference(a, 6, 0) for a in x])
    np.testing.assert_array_equal(np.asarray(out), expected)


@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(0, 5), min_size=1, max_size=4), data=st.data())
def test_pad_axis_property(shape, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    length = shape[axis] + data.draw(st.integers(0, 4))
    x = _sample(tuple(shape), np.float32, seed=3)
    out = native.pad_axis(x, length, axis)
    np.testing.assert_array_equal(np.asarray(out), _reference(x, length, axis))


# -- errors from the Python wrapper ------------------------------------------------------

def test_pad_axis_rejects_int_dtype():
    with pytest.raises(TypeError, match=r"dtype int32; expected one of float32, float64"):
        native.pad_axis(np.ones((2, 3), np.int32), 4)


def test_pad_axis_rejects_shrinking():
    with pytest.raises(ValueError, match=r"length=2 is smaller than x.shape\[1\]=3"):
        native.pad_axis(np.ones((2, 3), np.float32), 2)


def test_pad_axis_rejects_bad_axis():
    with pytest.raises(IndexError, match=r"axis=2 is out of range .* rank 2"):
        native.pad_axis(np.ones((2, 3), np.float32), 4, axis=2)


# -- errors returned by the C++ handler itself (the process must survive) ----------------

def _raw_call(x, out_shape, out_dtype, **attrs):
    native.register_targets()
    call = jax.ffi.ffi_call("darray_pad_axis_cpu", jax.ShapeDtypeStruct(out_shape, out_dtype))
    return jax.jit(lambda a: call(a, **attrs))(x).block_until_ready()


@pytest.mark.parametrize(("x", "out_shape", "out_dtype", "attrs", "message"), [
    (np.ones((2, 3), np.int32), (2, 5), np.int32, {"axis": np.int64(1)},
     r"unsupported dtype int32; expected float32, float64, complex64 or complex128"),
    (np.ones((2, 3), np.float32), (2, 5), np.float64, {"axis": np.int64(1)},
     r"output dtype float64 differs from input dtype float32"),
    (np.ones((2, 3), np.float32), (2, 5), np.float32, {"axis": np.int64(7)},
     r"axis=7 is out of range for rank 2"),
    (np.ones((2, 3), np.float32), (2, 2), np.float32, {"axis": np.int64(-1)},
     r"cannot pad axis 1 from length 3 down to 2"),
    (np.ones((2, 3), np.float32), (4, 5), np.float32, {"axis": np.int64(1)},
     r"may differ from input shape \(2, 3\) only on axis 1"),
    (np.ones((2, 3), np.float32), (2, 3, 1), np.float32, {"axis": np.int64(0)},
     r"must have the same rank"),
])
def test_handler_returns_invalid_argument(x, out_shape, out_dtype, attrs, message):
    with pytest.raises(jax.errors.JaxRuntimeError, match="INVALID_ARGUMENT") as excinfo:
        _raw_call(x, out_shape, out_dtype, **attrs)
    assert excinfo.match(message)
    # The process survived the error and the handler still works.
    good = native.pad_axis(np.ones((2, 3), np.float32), 4)
    assert np.asarray(good).sum() == 6.0


@pytest.mark.parametrize(("attrs", "message"), [
    ({}, r"(?s)INVALID_ARGUMENT.*attributes"),                    # axis missing
    ({"axis": np.float32(1.0)}, r"(?s)INVALID_ARGUMENT.*expected S64"),  # axis not int64
])
def test_handler_rejects_bad_attributes(attrs, message):
    with pytest.raises(jax.errors.JaxRuntimeError, match=message):
        _raw_call(np.ones((2, 3), np.float32), (2, 5), np.float32, **attrs)


# -- the native module missing -----------------------------------------------------------

def test_missing_module_reports_reason_and_fix(monkeypatch):
    monkeypatch.setattr(native, "_load", lambda: (None, "ImportError: no _native here"))
    assert native.available() is False
    info = native.build_info()
    assert info["available"] is False
    assert (info["cuda"], info["cudecomp"], info["mpi"]) == (False, False, False)
    assert "no _native here" in info["reason"] and "pip install -e ." in info["reason"]
    with pytest.raises(ImportError, match=r"darray._native is not available.*pip install -e \."):
        native.pad_axis(jnp.ones(3), 4)
    with pytest.raises(ImportError, match=r"pip install -e \."):
        native.register_targets()
