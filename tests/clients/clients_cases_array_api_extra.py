"""array-api-extra: its documented functions, each on the namespace of its inputs."""
import numpy as np
from clients_harness import case, darray_bug, library_bug  # noqa: F401

LIB = "array_api_extra"


def _x():
    import array_api_extra as xpx
    return xpx


def ex_case(name, inputs=("X",), **kw):
    return case(LIB, name, inputs, **kw)


ex_case("atleast_nd", ("v",))(lambda xp, v: _x().atleast_nd(v, ndim=3))
ex_case("cov", ("X",))(lambda xp, X: _x().cov(X.T))
ex_case("create_diagonal", ("v",))(lambda xp, v: _x().create_diagonal(v))
ex_case("expand_dims", ("X",))(lambda xp, X: _x().expand_dims(X, axis=(0, 2)))
ex_case("kron", ("X",))(lambda xp, X: _x().kron(X[:3, :3], X[:2, :2]))
ex_case("nunique", ("Xint",))(lambda xp, Xint: _x().nunique(Xint))
ex_case("pad", ("X",))(lambda xp, X: _x().pad(X, 2, constant_values=1.5))
ex_case("setdiff1d", ("vint", "Xint"))(lambda xp, vint, Xint: _x().setdiff1d(vint, Xint[:, 0]))
ex_case("union1d", ("vint", "Xint"))(lambda xp, vint, Xint: _x().union1d(vint, Xint[:, 0]))
ex_case("isin", ("vint", "Xint"))(lambda xp, vint, Xint: _x().isin(vint, Xint[:, 0]))
ex_case("sinc", ("X",))(lambda xp, X: _x().sinc(X))
ex_case("isclose", ("X", "X2"))(lambda xp, X, X2: _x().isclose(X, X + 1e-9 * X2))
ex_case("one_hot", ("vint",))(lambda xp, vint: _x().one_hot(vint, 5))
# copy=None lets xpx write into any writeable array (DistArray supports __setitem__), so the
# out-of-place cases ask for copy=True and one case checks the in-place semantics against numpy.
ex_case("at_set", ("X",))(lambda xp, X: _x().at(X)[1:3, 0].set(7.0, copy=True))
# Was KNOWN_DARRAY_BUGS.md #2 (x[mask] = uneven values on jax 0.12): fixed in 9dcea6e.
ex_case("at_add_mask", ("X",))(
    lambda xp, X: _x().at(X)[X > 0.5].add(1.0, copy=True))
ex_case("at_multiply", ("X",))(lambda xp, X: _x().at(X)[:, 1].multiply(2.0, copy=True))
ex_case("at_set_inplace", ("X",), mutates=True)(
    lambda xp, X: (_x().at(X)[1:3, 0].set(7.0, copy=False), X))
ex_case("apply_where", ("X",))(
    lambda xp, X: _x().apply_where(X > 0, X, lambda a: a ** 0.5, fill_value=-1.0))
ex_case("nan_to_num", ("Xnan",))(lambda xp, Xnan: _x().nan_to_num(Xnan, fill_value=-3.0))
ex_case("nansum", ("Xnan",))(lambda xp, Xnan: _x().nansum(Xnan, axis=0))
ex_case("nanmean", ("Xnan",))(lambda xp, Xnan: _x().nanmean(Xnan, axis=1))
ex_case("nanmax", ("Xnan",))(lambda xp, Xnan: _x().nanmax(Xnan, axis=0))
ex_case("nanmin", ("Xnan",))(lambda xp, Xnan: _x().nanmin(Xnan))
ex_case("partition", ("v",))(lambda xp, v: _x().partition(v, 5)[5])
ex_case("argpartition", ("v",))(lambda xp, v: v[_x().argpartition(v, 5)[5]])
ex_case("searchsorted", ("vsorted", "v"))(
    lambda xp, vsorted, v: _x().searchsorted(vsorted, v, side="right"))
ex_case("unravel_index", ("vint",))(lambda xp, vint: _x().unravel_index(vint * 3, (4, 5)))
ex_case("tril_indices", ())(lambda xp: _x().tril_indices(5, xp=xp))
ex_case("angle", ("X", "X2"))(lambda xp, X, X2: _x().angle(X + 1j * X2))
ex_case("deg2rad", ("X",))(lambda xp, X: _x().deg2rad(X))
ex_case("rad2deg", ("X",))(lambda xp, X: _x().rad2deg(X))
ex_case("default_dtype", ("X",))(lambda xp, X: np.dtype(_x().default_dtype(xp)).name)
