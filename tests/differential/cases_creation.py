"""Creation functions (on a drawn mesh and split), *_like, astype, tril/triu, meshgrid and the
data type functions."""
from __future__ import annotations

import diff_support as ds
import numpy as np
from diff_registry import Case, Example, one_array, register
from hypothesis import strategies as st

import darray

A, N, R, F = ds.ALL, ds.NUMERIC, ds.REAL, ds.FLOATS


@st.composite
def _placed(draw, dtypes=N, min_ndim=1, max_ndim=3, extra=None):
    """No operand: a shape, dtype, mesh and split for a creation function."""
    mesh = draw(ds.meshes)
    shape = draw(ds.shapes(min_ndim, max_ndim))
    params = {"shape": shape, "dtype": draw(st.sampled_from(dtypes)), "mesh": mesh,
              "spec": draw(ds.specs(mesh, len(shape)))}
    if extra:
        params.update(extra(draw, shape))
    return Example(mesh, [], params)


def _dist(name):
    def fn(shape, dtype, mesh, spec, **kw):
        return getattr(darray, name)(shape, dtype=getattr(darray, dtype), mesh=mesh, spec=spec,
                                     **kw)
    return fn


def _np(name):
    def ref(shape, dtype, mesh, spec, **kw):
        return getattr(np, name)(shape, dtype=dtype, **kw)
    return ref


def _full_extra(draw, shape):
    return {"fill_value": draw(st.integers(-3, 3))}


def _np_full(shape, dtype, mesh, spec, fill_value):
    return np.full(shape, fill_value, dtype=dtype)


def _dist_full(shape, dtype, mesh, spec, fill_value):
    return darray.full(shape, fill_value, dtype=getattr(darray, dtype), mesh=mesh, spec=spec)


def _zero_values(leaves):
    """empty/empty_like: the content is unspecified; shape, dtype and layout are compared."""
    return [np.zeros_like(np.asarray(v)) for v in leaves]


@st.composite
def _arange_example(draw):
    mesh = draw(ds.meshes)
    start, stop = draw(st.integers(-20, 20)), draw(st.integers(-20, 20))
    step = draw(st.sampled_from([1, 2, 3, -1, -2]))
    dtype = draw(st.sampled_from(R))
    return Example(mesh, [], {"start": start, "stop": stop, "step": step, "dtype": dtype,
                              "mesh": mesh})


def _dist_arange(start, stop, step, dtype, mesh):
    return darray.arange(start, stop, step, dtype=getattr(darray, dtype), mesh=mesh)


def _np_arange(start, stop, step, dtype, mesh):
    return np.arange(start, stop, step, dtype=dtype)


@st.composite
def _linspace_example(draw):
    mesh = draw(ds.meshes)
    return Example(mesh, [], {"start": draw(st.integers(-5, 5)), "stop": draw(st.integers(-5, 5)),
                              "num": draw(ds.extents()), "endpoint": draw(st.booleans()),
                              "dtype": draw(st.sampled_from(F + ds.COMPLEX)), "mesh": mesh},
                   scale=8)


def _dist_linspace(start, stop, num, endpoint, dtype, mesh):
    return darray.linspace(start, stop, num, endpoint=endpoint, dtype=getattr(darray, dtype),
                           mesh=mesh)


def _np_linspace(start, stop, num, endpoint, dtype, mesh):
    return np.linspace(start, stop, num, endpoint=endpoint, dtype=dtype)


@st.composite
def _eye_example(draw):
    mesh = draw(ds.meshes)
    n, m = draw(ds.extents()), draw(ds.extents())
    return Example(mesh, [], {"n_rows": n, "n_cols": m, "k": draw(st.integers(-n - 1, m + 1)),
                              "dtype": draw(st.sampled_from(A)), "mesh": mesh,
                              "spec": draw(ds.specs(mesh, 2))})


def _dist_eye(n_rows, n_cols, k, dtype, mesh, spec):
    return darray.eye(n_rows, n_cols, k=k, dtype=getattr(darray, dtype), mesh=mesh, spec=spec)


def _np_eye(n_rows, n_cols, k, dtype, mesh, spec):
    return np.eye(n_rows, n_cols, k=k, dtype=dtype)


register(
    Case("zeros", _placed(A), _dist("zeros"), _np("zeros"), None),
    Case("ones", _placed(A), _dist("ones"), _np("ones"), None),
    Case("empty", _placed(A), _dist("empty"), _np("empty"), None, post=_zero_values),
    Case("full", _placed(R, extra=_full_extra), _dist_full, _np_full, None),
    Case("arange", _arange_example(), _dist_arange, _np_arange, None),
    Case("linspace", _linspace_example(), _dist_linspace, _np_linspace, 16.0),
    Case("eye", _eye_example(), _dist_eye, _np_eye, None),
)


# -- from an array -------------------------------------------------------------------------------
def _like_params(draw, shape):
    return {"dtype": draw(st.one_of(st.none(), st.sampled_from(A)))}


def _dist_like(name):
    def fn(x, dtype=None, **kw):
        return getattr(darray, name)(x, dtype=None if dtype is None else getattr(darray, dtype),
                                     **kw)
    return fn


def _np_like(name):
    def ref(x, dtype=None, **kw):
        return getattr(np, name)(x, dtype=dtype, **kw)
    return ref


def _full_like_params(draw, shape):
    return {"dtype": draw(st.one_of(st.none(), st.sampled_from(R))),
            "fill_value": draw(st.integers(0, 3))}


def _astype_params(draw, shape):
    return {"dtype": draw(st.sampled_from(A))}


def _astype_target(source, dtype):
    """complex -> real casts are not permitted by the standard: keep complex sources complex."""
    if np.dtype(source).kind == "c" and np.dtype(dtype).kind != "c":
        return "complex128"
    return dtype


def _dist_astype(x, dtype):
    return darray.astype(x, getattr(darray, _astype_target(x.dtype, dtype)))


def _np_astype(x, dtype):
    return x.astype(_astype_target(x.dtype, dtype))


def _tri_params(draw, shape):
    return {"k": draw(st.integers(-shape[-2] - 1, shape[-1] + 1))}


@st.composite
def _meshgrid_example(draw):
    mesh = draw(ds.meshes)
    dtype = draw(st.sampled_from(N))
    arrays = [draw(ds.operand(mesh, (draw(ds.extents()),), dtype, "int"))
              for _ in range(draw(st.integers(1, 3)))]
    return Example(mesh, arrays, {"indexing": draw(st.sampled_from(["xy", "ij"]))})


def _asarray_params(draw, shape):
    return {"dtype": draw(st.one_of(st.none(), st.sampled_from(A)))}


def _dist_asarray(x, dtype=None):
    dtype = None if dtype is None else _astype_target(x.dtype, dtype)
    return darray.asarray(x, dtype=None if dtype is None else getattr(darray, dtype))


def _np_asarray(x, dtype=None):
    return np.asarray(x, dtype=None if dtype is None else _astype_target(x.dtype, dtype))


def _from_dlpack(x):
    return darray.from_dlpack(x)


register(
    Case("zeros_like", one_array(A, "int", params=_like_params), _dist_like("zeros_like"),
         _np_like("zeros_like"), None),
    Case("ones_like", one_array(A, "int", params=_like_params), _dist_like("ones_like"),
         _np_like("ones_like"), None),
    Case("empty_like", one_array(A, "int", params=_like_params), _dist_like("empty_like"),
         _np_like("empty_like"), None, post=_zero_values),
    Case("full_like", one_array(A, "int", params=_full_like_params), _dist_like("full_like"),
         _np_like("full_like"), None),
    Case("astype", one_array(A, "int", params=_astype_params), _dist_astype, _np_astype, None),
    Case("asarray", one_array(A, "int", params=_asarray_params), _dist_asarray, _np_asarray,
         None),
    Case("from_dlpack", one_array(A, "int"), _from_dlpack, np.from_dlpack, None),
    Case("tril", one_array(A, "int", min_ndim=2, params=_tri_params), darray.tril, np.tril,
         None),
    Case("triu", one_array(A, "int", min_ndim=2, params=_tri_params), darray.triu, np.triu,
         None),
    Case("meshgrid", _meshgrid_example(), darray.meshgrid, np.meshgrid, None),
)


# -- data type functions (no arrays moved; cheap) -------------------------------------------------
DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float32", "float64", "complex64", "complex128")
KINDS = ("bool", "signed integer", "unsigned integer", "integral", "real floating",
         "complex floating", "numeric")


@st.composite
def _dtype_pair(draw):
    return Example(ds.mesh_of((8,)), [draw(st.sampled_from(DTYPES)),
                                      draw(st.sampled_from(DTYPES))])


def _same_kind(a, b):
    ka, kb = np.dtype(a).kind, np.dtype(b).kind
    return ka == kb or {ka, kb} <= {"i", "u"} or {ka, kb} <= {"f", "c"}


def _dist_result_type(a, b):
    return np.dtype(darray.result_type(getattr(darray, a), getattr(darray, b)))


def _np_result_type(a, b):
    # the standard defines promotion within a kind only (ints with ints, floats with floats)
    return np.dtype(np.result_type(a, b)) if _same_kind(a, b) else None


def _guard_result_type(a, b):
    return _dist_result_type(a, b) if _same_kind(a, b) else None


def _dist_can_cast(a, b):
    return darray.can_cast(getattr(darray, a), getattr(darray, b))


def _np_can_cast(a, b):
    return bool(np.can_cast(a, b, casting="safe"))


@st.composite
def _isdtype_example(draw):
    return Example(ds.mesh_of((8,)), [draw(st.sampled_from(DTYPES)),
                                      draw(st.sampled_from(KINDS))])


def _dist_isdtype(a, kind):
    return darray.isdtype(getattr(darray, a), kind)


def _np_isdtype(a, kind):
    return np.isdtype(np.dtype(a), kind)


def _finfo_fields(info):
    return [np.asarray([info.bits, info.eps, info.max, info.min, info.smallest_normal]),
            np.dtype(info.dtype).name]


@st.composite
def _one_dtype(draw, pool):
    return Example(ds.mesh_of((8,)), [draw(st.sampled_from(pool))])


def _dist_finfo(a):
    return _finfo_fields(darray.finfo(getattr(darray, a)))


def _np_finfo(a):
    return _finfo_fields(np.finfo(a))


def _iinfo_fields(info):
    return [np.asarray([info.bits, info.max, info.min]), np.dtype(info.dtype).name]


def _dist_iinfo(a):
    return _iinfo_fields(darray.iinfo(getattr(darray, a)))


def _np_iinfo(a):
    return _iinfo_fields(np.iinfo(a))


def _as_str(leaves):
    return [np.asarray(str(v)) for v in leaves]


register(
    Case("result_type", _dtype_pair(), _guard_result_type, _np_result_type, None, post=_as_str,
         layout=False),
    Case("can_cast", _dtype_pair(), _dist_can_cast, _np_can_cast, None, post=_as_str,
         layout=False),
    Case("isdtype", _isdtype_example(), _dist_isdtype, _np_isdtype, None, post=_as_str,
         layout=False),
    Case("finfo", _one_dtype(F + ds.COMPLEX), _dist_finfo, _np_finfo, None, post=_as_str,
         layout=False),
    Case("iinfo", _one_dtype(DTYPES[1:9]), _dist_iinfo, _np_iinfo, None, post=_as_str,
         layout=False),
)
