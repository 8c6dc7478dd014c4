"""Functions added beside the Array API: callbacks, fromfunction, save/load, grad, fft freqs."""
from __future__ import annotations

import tempfile

import diff_support as ds
import numpy as np
from diff_registry import Case, Example, one_array, register
from hypothesis import strategies as st

import darray

F = ds.FLOATS


@st.composite
def _freq_example(draw):
    mesh = draw(ds.meshes)
    return Example(mesh, [], {"n": draw(ds.extents(allow_zero=False)),
                              "d": draw(st.sampled_from([1.0, 0.5, 2.0])),
                              "dtype": draw(st.sampled_from(F)), "mesh": mesh,
                              "spec": draw(ds.specs(mesh, 1))}, scale=4)


def _dist_freq(name):
    def fn(n, d, dtype, mesh, spec):
        return getattr(darray.fft, name)(n, d, dtype=getattr(darray, dtype), mesh=mesh, spec=spec)
    return fn


def _np_freq(name):
    def ref(n, d, dtype, mesh, spec):
        return getattr(np.fft, name)(n, d).astype(dtype)
    return ref


@st.composite
def _fromfunction_example(draw):
    mesh = draw(ds.meshes)
    shape = draw(ds.shapes(1, 3))
    return Example(mesh, [], {"shape": shape, "mesh": mesh,
                              "spec": draw(ds.specs(mesh, len(shape))),
                              "dtype": draw(st.sampled_from(ds.REAL))})


def _index_formula(*idx):
    # depends on every index, so a wrong block offset on any axis shows
    out = 0
    for k, i in enumerate(idx):
        out = out * 31 + (k + 1) * i
    return out


def _dist_fromfunction(shape, mesh, spec, dtype):
    return darray.fromfunction(_index_formula, shape, dtype=getattr(darray, dtype), mesh=mesh,
                               spec=spec)


def _np_fromfunction(shape, mesh, spec, dtype):
    return np.fromfunction(_index_formula, shape, dtype=dtype)


def _dist_from_callback(x):
    host = np.asarray(x)
    return darray.from_callback(x.shape, x.dtype, lambda index: host[index], mesh=x.mesh,
                                spec=x.layout.split)


def _identity(x):
    return x.copy()


def _save_load(x):
    with tempfile.TemporaryDirectory() as tmp:
        darray.save(f"{tmp}/ckpt", x)
        return darray.load(f"{tmp}/ckpt", mesh=x.mesh, spec=x.layout.split)


def _dist_grad(x):
    return darray.grad(lambda a: darray.sum(a * a * a))(x)


def _dist_value_and_grad(x):
    return darray.value_and_grad(lambda a: darray.sum(a * a * a))(x)


def _np_grad(x):
    return 3 * x * x


def _np_value_and_grad(x):
    return np.sum(x * x * x), 3 * x * x


register(
    Case("fft.fftfreq", _freq_example(), _dist_freq("fftfreq"), _np_freq("fftfreq"), 16.0),
    Case("fft.rfftfreq", _freq_example(), _dist_freq("rfftfreq"), _np_freq("rfftfreq"), 16.0),
    Case("fromfunction", _fromfunction_example(), _dist_fromfunction, _np_fromfunction, None),
    Case("from_callback", one_array(ds.ALL, "int"), _dist_from_callback, _identity, None),
    Case("save", one_array(ds.ALL, "int"), _save_load, _identity, None, covers=("save", "load")),
    Case("grad", one_array(F, "real"), _dist_grad, _np_grad, 16.0),
    Case("value_and_grad", one_array(F, "real", allow_zero=False), _dist_value_and_grad,
         _np_value_and_grad, 64.0, check_dtype=False),
)
