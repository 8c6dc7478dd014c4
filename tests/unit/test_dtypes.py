"""Covers: darray/_src/base/dtypes.py, darray/_src/api/data_type_functions.py

Dtypes, promotion and the config module: no devices needed."""
import os
import subprocess
import sys

import jax.numpy as jnp
import numpy as np
import pytest

import darray
from darray._src.base import config

NAMES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
         "float32", "float64", "complex64", "complex128"]


@pytest.mark.x64
def test_dtype_objects_compare_with_jax_and_numpy():
    for name in NAMES:
        dt = getattr(darray, name)
        assert dt == np.dtype(name) and hash(dt) == hash(np.dtype(name))
        assert jnp.zeros(2, dtype=dt).dtype == dt
    assert darray.float32 != darray.float64
    assert len({getattr(darray, n) for n in NAMES}) == 13


@pytest.mark.parametrize("kind,members", [
    ("bool", ["bool"]),
    ("signed integer", ["int8", "int16", "int32", "int64"]),
    ("unsigned integer", ["uint8", "uint16", "uint32", "uint64"]),
    ("integral", ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]),
    ("real floating", ["float32", "float64"]),
    ("complex floating", ["complex64", "complex128"]),
    ("numeric", NAMES[1:]),
])
def test_isdtype_kinds(kind, members):
    for name in NAMES:
        assert darray.isdtype(getattr(darray, name), kind) == (name in members), (name, kind)


def test_isdtype_dtype_and_tuple_kinds_and_errors():
    assert darray.isdtype(darray.int8, darray.int8)
    assert not darray.isdtype(darray.int8, darray.int16)
    assert darray.isdtype(darray.float32, ("bool", "real floating"))
    assert not darray.isdtype(darray.uint8, ("signed integer", darray.float32))
    with pytest.raises(TypeError, match="kind='floating' is not a dtype kind"):
        darray.isdtype(darray.float32, "floating")
    with pytest.raises(TypeError, match=r"dtype=<class 'list'> is not a darray dtype"):
        darray.isdtype(list, "bool")
    with pytest.raises(TypeError, match="dtype=dtype\\('<U1'\\) is not a darray dtype"):
        darray.isdtype(np.dtype("U1"), "bool")


# The standard's promotion table (mixed-kind and int64/uint64 mixes are left open by it).
PROMOTIONS = [
    ("bool", "bool", "bool"), ("int8", "int16", "int16"), ("int32", "int64", "int64"),
    ("uint8", "uint32", "uint32"), ("uint8", "int8", "int16"), ("uint8", "int16", "int16"),
    ("uint16", "int8", "int32"), ("uint32", "int32", "int64"), ("uint32", "int8", "int64"),
    ("float32", "float64", "float64"), ("complex64", "float64", "complex128"),
    ("complex64", "float32", "complex64"), ("complex64", "complex128", "complex128"),
]


@pytest.mark.x64
@pytest.mark.parametrize("a,b,out", PROMOTIONS)
def test_result_type_follows_the_standard(a, b, out):
    da, db = getattr(darray, a), getattr(darray, b)
    assert darray.result_type(da, db) == getattr(darray, out)
    assert darray.result_type(db, da) == getattr(darray, out)


def test_result_type_with_python_scalars_is_weak():
    assert darray.result_type(darray.int8, 1) == darray.int8
    assert darray.result_type(darray.float32, 1.0) == darray.float32
    assert darray.result_type(darray.float32, 1j) == darray.complex64
    assert darray.result_type(darray.uint16, True) == darray.uint16
    with pytest.raises(ValueError, match="besides Python scalars"):
        darray.result_type(1, 2.0)
    with pytest.raises(ValueError, match="at least one array or dtype"):
        darray.result_type()
    with pytest.raises(TypeError, match=r"arrays_and_dtypes\[1\]='x' is not a darray dtype"):
        darray.result_type(darray.int8, "x")


def test_can_cast():
    assert darray.can_cast(darray.int8, darray.int64)
    assert darray.can_cast(darray.bool, darray.float32)
    assert darray.can_cast(darray.uint8, darray.int16)
    # mixed kinds follow numpy/jax.numpy safe casting (differential seed 29652 found
    # uint64->float32)
    for a, b in ((darray.uint64, darray.float32), (darray.int64, darray.float32),
                 (darray.int32, darray.float64),
                 (darray.int8, darray.float16 if hasattr(darray, "float16") else darray.float32)):
        assert darray.can_cast(a, b) == np.can_cast(a, b, casting="safe")
    assert not darray.can_cast(darray.int64, darray.int32)
    assert not darray.can_cast(darray.float64, darray.float32)
    assert not darray.can_cast(darray.complex64, darray.float64)
    assert not darray.can_cast(darray.float32, darray.bool)


def test_finfo_iinfo():
    f = darray.finfo(darray.float32)
    assert f.bits == 32 and f.eps == float(np.finfo(np.float32).eps)
    assert f.smallest_normal == float(np.finfo(np.float32).smallest_normal)
    assert darray.finfo(darray.complex128).dtype == darray.float64
    i = darray.iinfo(darray.uint16)
    assert (i.bits, i.min, i.max, i.dtype) == (16, 0, 65535, darray.uint16)
    with pytest.raises(TypeError, match="finfo needs a floating dtype, got int32"):
        darray.finfo(darray.int32)
    with pytest.raises(TypeError, match="iinfo needs an integer dtype, got float64"):
        darray.iinfo(darray.float64)


def test_constants():
    assert darray.pi == np.pi and darray.e == np.e
    assert darray.inf == np.inf and np.isnan(darray.nan)
    assert darray.newaxis is None


def test_config_declares_each_option_once_with_env_var():
    opt = config.OPTIONS["mismatch"]
    assert opt.env == "DARRAY_MISMATCH" and opt.default == "redistribute" and opt.help
    code = "import darray; print(darray.get_config('mismatch'))"
    env = dict(os.environ, DARRAY_MISMATCH="raise", JAX_PLATFORMS="cpu")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=root, capture_output=True,
                         text=True, timeout=120)
    assert out.stdout.strip() == "raise", out.stderr
    env["DARRAY_MISMATCH"] = "often"
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=root, capture_output=True,
                         text=True, timeout=120)
    assert "DARRAY_MISMATCH='often'" in out.stderr and "'redistribute' or 'raise'" in out.stderr
