"""xarray wrapping DistArrays (any object with __array_namespace__ is a duck array to it)."""
from clients_harness import case, darray_bug, library_bug  # noqa: F401

LIB = "xarray"


def da(a, dims=("n", "m")):
    import xarray as xr
    return xr.DataArray(a, dims=dims[: a.ndim])


def xr_case(name, inputs=("X",), **kw):
    return case(LIB, name, inputs, **kw)


xr_case("wrap", ("X",))(lambda xp, X: da(X))
xr_case("arith", ("X", "X2"))(lambda xp, X, X2: 2.0 * da(X) - da(X2) / 3.0)
xr_case("ufunc_abs", ("X",))(lambda xp, X: abs(da(X)))
xr_case("broadcast_dims", ("X", "v"))(lambda xp, X, v: da(X) * da(v, ("n",)))
for _op in ("sum", "mean", "max", "min", "prod"):
    xr_case(f"{_op}_n", ("X",))(lambda xp, X, _o=_op: getattr(da(X), _o)("n", skipna=False))
# xarray's duck_array_ops calls xp.std/xp.var(..., ddof=...) (numpy's spelling of the standard's
# correction=) and xp.cumsum: darray takes both, as numpy 2 does (issue 28)
xr_case("std_n", ("X",))(lambda xp, X: da(X).std("n", skipna=False))
xr_case("var_n", ("X",))(lambda xp, X: da(X).var("n", skipna=False))
xr_case("std_skipna", ("Xnan",))(lambda xp, Xnan: da(Xnan).std("n", ddof=1))
xr_case("max_skipna", ("Xnan",))(lambda xp, Xnan: da(Xnan).max("m"))
xr_case("mean_m", ("X",))(lambda xp, X: da(X).mean("m", skipna=False))
xr_case("mean_all", ("X",))(lambda xp, X: da(X).mean(skipna=False))
xr_case("sum_skipna", ("Xnan",))(lambda xp, Xnan: da(Xnan).sum("n", skipna=True))
xr_case("mean_skipna", ("Xnan",))(lambda xp, Xnan: da(Xnan).mean("m"))
xr_case("any_all", ("X",))(lambda xp, X: ((da(X) > 0).any("n"), (da(X) > 0).all("m")))
xr_case("argmax", ("X",))(lambda xp, X: da(X).argmax("n", skipna=False))
xr_case("cumsum", ("X",))(lambda xp, X: da(X).cumsum("n", skipna=False))
xr_case("transpose", ("X",))(lambda xp, X: da(X).transpose("m", "n"))
xr_case("isel", ("X",))(lambda xp, X: da(X).isel(n=slice(1, 9, 2), m=0))
xr_case("where", ("X",))(lambda xp, X: da(X).where(da(X) > 0, -1.0))
xr_case("clip", ("X",))(lambda xp, X: da(X).clip(-0.5, 0.5))
xr_case("round", ("X",))(lambda xp, X: da(X).round(2))
xr_case("astype", ("X",))(lambda xp, X: da(X).astype("float32"))
xr_case("concat", ("X", "X2"))(
    lambda xp, X, X2: __import__("xarray").concat([da(X), da(X2)], dim="n"))
xr_case("stack_new_dim", ("X", "X2"))(
    lambda xp, X, X2: __import__("xarray").concat([da(X), da(X2)], dim="k"))
# xarray.dot calls xp.einsum and DataArray.shift calls xp.pad (numpy's names, not the
# standard's): darray has both, distributed
xr_case("dot", ("X", "X2"))(
    lambda xp, X, X2: __import__("xarray").dot(da(X), da(X2), dim="m"))
xr_case("diff", ("X",))(lambda xp, X: da(X).diff("n"))
xr_case("shift", ("X",))(
    lambda xp, X: da(X).shift(n=2, fill_value=0.0))
xr_case("roll", ("X",))(lambda xp, X: da(X).roll(m=1))
xr_case("dataset_mean", ("X", "v"))(
    lambda xp, X, v: __import__("xarray").Dataset(
        {"a": (("n", "m"), X), "b": (("n",), v)}).mean("n", skipna=False))
xr_case("expand_dims", ("X",))(lambda xp, X: da(X).expand_dims("k", axis=0))
xr_case("squeeze", ("X",))(lambda xp, X: da(X[:, :1]).squeeze("m"))
