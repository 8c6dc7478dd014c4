"""Linear algebra (namespace and darray.linalg) and fft cases."""
from __future__ import annotations

import diff_support as ds
import numpy as np
from diff_registry import AllowedRefusal, Case, Example, axis_param, one_array, register
from hypothesis import strategies as st

import darray

F, C, R, N = ds.FLOATS, ds.COMPLEX, ds.REAL, ds.NUMERIC
SMALL = (1, 2, 3, 5, 7)


# -- products ----------------------------------------------------------------------------------
@st.composite
def _matmul_example(draw):
    mesh = draw(ds.meshes)
    dtype = draw(st.sampled_from(N))
    n, k, m = (draw(st.sampled_from(ds.EXTENTS)) for _ in range(3))
    batch = tuple(draw(st.lists(st.sampled_from([1, 2, 3]), max_size=1)))
    s1 = draw(st.sampled_from([(k,), (n, k), batch + (n, k)]))
    s2 = draw(st.sampled_from([(k,), (k, m), batch + (k, m)]))
    x1 = draw(ds.operand(mesh, s1, dtype, "real"))
    x2 = draw(ds.operand(mesh, s2, dtype, "real"))
    return Example(mesh, [x1, x2], {}, scale=k)


@st.composite
def _vecdot_example(draw):
    mesh = draw(ds.meshes)
    dtype = draw(st.sampled_from(N))
    s = draw(ds.shapes(1, 3, allow_zero=False))
    x1 = draw(ds.operand(mesh, s, dtype, "real"))
    x2 = draw(ds.operand(mesh, ds.broadcast_partner(draw, s)[:0] + s[-1:] if draw(st.booleans())
                         else s, dtype, "real"))
    return Example(mesh, [x1, x2], {"axis": -1}, scale=s[-1])


def _np_vecdot(x1, x2, axis=-1):
    return np.vecdot(x1, x2, axis=axis)


@st.composite
def _tensordot_example(draw):
    mesh = draw(ds.meshes)
    dtype = draw(st.sampled_from(N))
    shared = tuple(draw(st.lists(st.sampled_from(SMALL), max_size=2)))
    a = tuple(draw(st.lists(st.sampled_from(SMALL), max_size=1)))
    b = tuple(draw(st.lists(st.sampled_from(SMALL), max_size=1)))
    x1 = draw(ds.operand(mesh, a + shared, dtype, "real"))
    x2 = draw(ds.operand(mesh, shared + b, dtype, "real"))
    if draw(st.booleans()):
        axes = len(shared)
    else:
        axes = (tuple(range(len(a), len(a) + len(shared))), tuple(range(len(shared))))
    return Example(mesh, [x1, x2], {"axes": axes}, scale=max(1, int(np.prod(shared))))


@st.composite
def _outer_example(draw):
    mesh = draw(ds.meshes)
    dtype = draw(st.sampled_from(N))
    return Example(mesh, [draw(ds.operand(mesh, (draw(ds.extents()),), dtype, "real")),
                          draw(ds.operand(mesh, (draw(ds.extents()),), dtype, "real"))])


@st.composite
def _cross_example(draw):
    mesh = draw(ds.meshes)
    dtype = draw(st.sampled_from(N))
    lead = tuple(draw(st.lists(st.sampled_from(SMALL), max_size=2)))
    axis = draw(st.integers(-len(lead) - 1, len(lead)))
    shape = list(lead)
    shape.insert(axis % (len(lead) + 1), 3)
    return Example(mesh, [draw(ds.operand(mesh, tuple(shape), dtype, "real")),
                          draw(ds.operand(mesh, tuple(shape), dtype, "real"))], {"axis": axis})


register(
    Case("matmul", _matmul_example(), darray.matmul, np.matmul, 64.0,
         covers=("matmul", "linalg.matmul")),
    Case("vecdot", _vecdot_example(), darray.vecdot, _np_vecdot, 64.0,
         covers=("vecdot", "linalg.vecdot")),
    Case("tensordot", _tensordot_example(), darray.tensordot, np.tensordot, 64.0,
         covers=("tensordot", "linalg.tensordot")),
    Case("linalg.outer", _outer_example(), darray.linalg.outer, np.outer, 16.0),
    Case("linalg.cross", _cross_example(), darray.linalg.cross, np.linalg.cross, 64.0),
)


# -- matrix functions --------------------------------------------------------------------------
@st.composite
def _square(draw, dtypes=F + C, kind="wellcond", rect=False, spd=False):
    mesh = draw(ds.meshes)
    dtype = draw(st.sampled_from(dtypes))
    n = draw(st.sampled_from(SMALL))
    m = draw(st.sampled_from(SMALL)) if rect else n
    batch = tuple(draw(st.lists(st.sampled_from([1, 2, 3]), max_size=1)))
    x = draw(ds.operand(mesh, batch + (n, m), dtype, "real"))
    h = x.host.astype(np.complex128 if x.host.dtype.kind == "c" else np.float64)
    if spd:
        h = h @ np.conj(np.swapaxes(h, -1, -2)) + n * np.eye(n)
    elif kind == "wellcond":
        h = h + 3 * max(n, m) * np.eye(n, m)  # diagonally dominant: condition number ~ 1
    x.host = h.astype(x.host.dtype)
    return Example(mesh, [x], {}, scale=max(n, m) ** 2)


def _sorted_values(leaves):
    return [np.sort_complex(np.asarray(v).astype(np.complex128)) if np.asarray(v).ndim else v
            for v in leaves[:1]]


def _qr_post(leaves):
    q, r = (np.asarray(v) for v in leaves)
    return [q @ r, np.abs(r)]


def _svd_post(leaves):
    u, s, vh = (np.asarray(v) for v in leaves)
    k = s.shape[-1]
    return [s, (u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :]]


def _eigh_post(leaves):
    return [np.asarray(leaves[0])]


def _diag_params(draw, shape):
    return {"offset": draw(st.integers(-shape[-2], shape[-1]))}


def _mnorm_params(draw, shape):
    return {"ord": draw(st.sampled_from(["fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf])),
            "keepdims": draw(st.booleans()), "_scale": shape[-1] * shape[-2]}


def _np_mnorm(x, ord="fro", keepdims=False):  # noqa: A002
    return np.linalg.matrix_norm(x, ord=ord, keepdims=keepdims)


def _vnorm_params(draw, shape):
    axis = axis_param(draw, len(shape))
    if isinstance(axis, tuple) and len(axis) > 2:
        axis = axis[:2]
    return {"axis": axis, "keepdims": draw(st.booleans()),
            "ord": draw(st.sampled_from([2, 1, np.inf, -np.inf, 0, 3])), "_scale": 8}


def _np_vnorm(x, axis=None, keepdims=False, ord=2):  # noqa: A002
    return np.linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)


@st.composite
def _mpow_example(draw):
    ex = draw(_square())
    ex.params["n"] = draw(st.integers(-2, 3))
    return ex


def _mpow(x, n):
    return darray.linalg.matrix_power(x, n)


def _np_mpow(x, n):
    return np.linalg.matrix_power(x, n)


@st.composite
def _solve_example(draw):
    ex = draw(_square())
    a = ex.args[0]
    n = a.host.shape[-1]
    bshape = draw(st.sampled_from([a.host.shape[:-1] + (draw(st.sampled_from(SMALL)),),
                                   a.host.shape]))
    b = draw(ds.operand(ex.mesh, bshape, a.host.dtype.name, "real"))
    return Example(ex.mesh, [a, b], {}, scale=n * n)


@st.composite
def _lstsq_example(draw):
    """A well-conditioned 2-D a (numpy's lstsq takes no stacks) and a 1-D or 2-D b."""
    mesh = draw(ds.meshes)
    dtype = draw(st.sampled_from(F + C))
    m, n = draw(st.sampled_from(SMALL)), draw(st.sampled_from(SMALL))
    a = draw(ds.operand(mesh, (m, n), dtype, "real"))
    h = a.host.astype(np.complex128 if a.host.dtype.kind == "c" else np.float64)
    a.host = (h + 3 * max(m, n) * np.eye(m, n)).astype(a.host.dtype)
    bshape = draw(st.sampled_from([(m,), (m, draw(st.sampled_from(SMALL)))]))
    b = draw(ds.operand(mesh, bshape, dtype, "real"))
    return Example(mesh, [a, b], {}, scale=max(m, n) ** 2)


def _lstsq_post(leaves):
    """x, the residuals (numpy's: empty when rank < n or m <= n) and s; the rank compared as
    a float (numpy gives a Python int)."""
    x, resid, rank, s = (np.asarray(v) for v in leaves)
    return [x, resid, np.asarray(float(rank)), s]


def _trace_params(draw, shape):
    return {"offset": draw(st.integers(-max(shape[-2] - 1, 0), max(shape[-1] - 1, 0)))}


def _np_trace(x, offset=0):
    return np.linalg.trace(x, offset=offset)


def _np_rank(x):
    return np.linalg.matrix_rank(x)


L = darray.linalg
register(
    Case("linalg.diagonal", one_array(N, "int", min_ndim=2, params=_diag_params), L.diagonal,
         np.linalg.diagonal, None),
    Case("linalg.trace", one_array(N, "int", min_ndim=2, params=_trace_params), L.trace,
         _np_trace, None),
    Case("linalg.matrix_norm", one_array(F + C, "real", min_ndim=2, max_ndim=3,
                                         allow_zero=False, small=True, params=_mnorm_params),
         L.matrix_norm, _np_mnorm, 256.0),
    Case("linalg.vector_norm", one_array(F + C, "real", allow_zero=False, params=_vnorm_params),
         L.vector_norm, _np_vnorm, 256.0),
    Case("linalg.det", _square(), L.det, np.linalg.det, 256.0),
    Case("linalg.slogdet", _square(), L.slogdet, np.linalg.slogdet, 256.0),
    Case("linalg.inv", _square(), L.inv, np.linalg.inv, 256.0),
    Case("linalg.solve", _solve_example(), L.solve, np.linalg.solve, 256.0),
    Case("linalg.lstsq", _lstsq_example(), L.lstsq, np.linalg.lstsq, 256.0, post=_lstsq_post,
         check_dtype=False),
    Case("linalg.cholesky", _square(spd=True), L.cholesky, np.linalg.cholesky, 256.0),
    Case("linalg.matrix_power", _mpow_example(), _mpow, _np_mpow, 256.0),
    Case("linalg.matrix_rank", _square(rect=True), L.matrix_rank, _np_rank, None),
    Case("linalg.pinv", _square(rect=True), L.pinv, np.linalg.pinv, 256.0),
    Case("linalg.qr", _square(rect=True), L.qr, np.linalg.qr, 256.0, post=_qr_post),
    Case("linalg.svd", _square(rect=True), lambda x: L.svd(x, full_matrices=False),
         lambda x: np.linalg.svd(x, full_matrices=False), 256.0, post=_svd_post),
    Case("linalg.svdvals", _square(rect=True), L.svdvals, np.linalg.svdvals, 256.0),
    Case("linalg.eigh", _square(spd=True), L.eigh, np.linalg.eigh, 256.0, post=_eigh_post),
    Case("linalg.eigvalsh", _square(spd=True), L.eigvalsh, np.linalg.eigvalsh, 256.0),
    Case("linalg.eig", _square(spd=True), L.eig, np.linalg.eig, 256.0, post=_sorted_values,
         check_dtype=False),
    Case("linalg.eigvals", _square(spd=True), L.eigvals, np.linalg.eigvals, 256.0,
         post=_sorted_values, check_dtype=False),
)


# -- fft -----------------------------------------------------------------------------------------
# The NotImplementedErrors the fft cases accept, each with the layouts it covers and its reason
# (AllowedRefusal(when=lambda example: ..., reason="...")). Every transform runs on every drawn
# layout today (a plan of local transforms and all-to-alls; the four-step FFT along a split axis
# where every axis is split; the complex FFT under the real-to-real ones), so the list is empty:
# a refusal on any drawn layout fails its case.
FFT_REFUSALS: tuple[AllowedRefusal, ...] = ()


def _fft1_params(draw, shape):
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    n = draw(st.one_of(st.none(), st.sampled_from(ds.EXTENTS)))
    if n is None and shape[axis] == 1:
        n = 2  # a complex-to-real transform of one cell has no default length (numpy too)
    return {"axis": axis, "n": n, "norm": draw(st.sampled_from(["backward", "ortho", "forward"])),
            "_scale": 4 * (n or shape[axis])}


def _fftn_params(draw, shape):
    axes = draw(st.one_of(st.none(), st.lists(st.integers(0, len(shape) - 1), unique=True,
                                                min_size=1).map(tuple)))
    count = len(shape) if axes is None else len(axes)
    s = None
    if draw(st.booleans()) or shape[(axes or (-1,))[-1]] == 1:  # see _fft1_params
        s = tuple(draw(st.sampled_from(ds.EXTENTS)) for _ in range(count))
        if axes is None:
            axes = tuple(range(len(shape)))
    return {"axes": axes, "s": s, "norm": draw(st.sampled_from(["backward", "ortho", "forward"])),
            "_scale": 4 * int(np.prod(shape))}


def _np_fft(name):
    fn = getattr(np.fft, name)

    def ref(x, **kw):
        return fn(x, **kw)
    return ref


def _shift_params(draw, shape):
    return {"axes": axis_param(draw, len(shape))}


FFT1 = {"fft": C, "ifft": C, "rfft": F, "irfft": C, "hfft": C, "ihfft": F}
FFTN = {"fftn": C, "ifftn": C, "rfftn": F, "irfftn": C}
for _name, _dtypes in FFT1.items():
    register(Case(f"fft.{_name}", one_array(_dtypes, "real", allow_zero=False,
                                            params=_fft1_params),
                  getattr(darray.fft, _name), _np_fft(_name), 64.0, refusals=FFT_REFUSALS))
for _name, _dtypes in FFTN.items():
    register(Case(f"fft.{_name}", one_array(_dtypes, "real", allow_zero=False,
                                            params=_fftn_params),
                  getattr(darray.fft, _name), _np_fft(_name), 64.0, refusals=FFT_REFUSALS))
register(
    Case("fft.fftshift", one_array(N, "int", params=_shift_params), darray.fft.fftshift,
         np.fft.fftshift, None),
    Case("fft.ifftshift", one_array(N, "int", params=_shift_params), darray.fft.ifftshift,
         np.fft.ifftshift, None),
)


# -- real-to-real transforms (scipy.fft signatures and references) ------------------------------
LENGTHS = tuple(n for n in ds.EXTENTS if n >= 2)  # DCT-I needs two points (scipy too)
def _r2r1_params(draw, shape):
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    n = draw(st.one_of(st.none(), st.sampled_from(LENGTHS)))
    kind = draw(st.integers(1, 4))
    if kind == 1 and n is None and shape[axis] == 1:
        n = 2  # type 1 needs two points (scipy too)
    return {"type": kind, "n": n, "axis": axis,
            "norm": draw(st.sampled_from([None, "backward", "ortho", "forward"])),
            "_scale": 4 * (n or shape[axis])}


def _r2rn_params(draw, shape):
    axes = draw(st.one_of(st.none(), st.lists(st.integers(0, len(shape) - 1), unique=True,
                                                min_size=1).map(tuple)))
    kind = draw(st.integers(1, 4))
    chosen = range(len(shape)) if axes is None else axes
    s = None
    if draw(st.booleans()) or (kind == 1 and any(shape[a] == 1 for a in chosen)):
        s = tuple(draw(st.sampled_from(LENGTHS)) for _ in chosen)
        axes = tuple(chosen)
    return {"type": kind, "s": s, "axes": axes,
            "norm": draw(st.sampled_from([None, "backward", "ortho", "forward"])),
            "_scale": 4 * int(np.prod(shape))}


def _scipy(name):
    def ref(x, **kw):
        import scipy.fft
        return getattr(scipy.fft, name)(x, **kw)
    return ref


for _name in ("dct", "idct", "dst", "idst"):
    register(Case(f"fft.{_name}", one_array(F, "real", allow_zero=False, params=_r2r1_params),
                  getattr(darray.fft, _name), _scipy(_name), 64.0, refusals=FFT_REFUSALS))
for _name in ("dctn", "idctn", "dstn", "idstn"):
    register(Case(f"fft.{_name}", one_array(F, "real", allow_zero=False, params=_r2rn_params),
                  getattr(darray.fft, _name), _scipy(_name), 64.0, refusals=FFT_REFUSALS))


# -- mixed per-axis transforms (darray.fft.transformn / itransformn) ---------------------------
_KINDS = ("fft", "rfft", "dct1", "dct2", "dct3", "dct4", "dst1", "dst2", "dst3", "dst4")


def _transformn_params(draw, shape):
    count = draw(st.integers(1, len(shape)))
    kinds, rfft_used = [], False
    for n in shape[len(shape) - count:]:
        allowed = [k for k in _KINDS if not (k == "rfft" and rfft_used)
                   and not (k == "dct1" and n < 2)]
        kind = draw(st.sampled_from(allowed))
        rfft_used = rfft_used or kind == "rfft"
        kinds.append(kind)
    return {"kinds": tuple(kinds), "norm": draw(st.sampled_from(["backward", "ortho"])),
            "_scale": 8 * int(np.prod(shape))}


def _np_transformn(x, kinds, norm="backward"):
    """scipy's 1-D transforms along each axis: real-to-real ones, then rfft, then fft."""
    import scipy.fft as sf
    axes = range(x.ndim - len(kinds), x.ndim)
    out = np.asarray(x)
    for axis, kind in zip(axes, kinds):
        if kind[:3] in ("dct", "dst"):
            out = getattr(sf, kind[:3])(out, type=int(kind[3]), axis=axis, norm=norm)
    for order in ("rfft", "fft"):
        for axis, kind in zip(axes, kinds):
            if kind == order:
                out = getattr(np.fft, order)(out, axis=axis, norm=norm)
    return out


def _round_trip(x, kinds, norm="backward"):
    s = x.shape[x.ndim - len(kinds):]
    return darray.fft.itransformn(darray.fft.transformn(x, kinds, norm=norm), kinds, s=s,
                                  norm=norm)


register(
    Case("fft.transformn", one_array(F, "real", allow_zero=False, params=_transformn_params),
         darray.fft.transformn, _np_transformn, 64.0, refusals=FFT_REFUSALS),
    # the inverse against the identity: itransformn undoes transformn for every kind mix
    Case("fft.itransformn", one_array(F, "real", allow_zero=False, params=_transformn_params),
         _round_trip, lambda x, kinds, norm="backward": np.asarray(x), 64.0,
         check_dtype=False, refusals=FFT_REFUSALS, covers=("fft.itransformn", "fft.transformn")),
)
