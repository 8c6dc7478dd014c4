"""Covers: darray/_src/fft/r2r.py, darray/_src/kernels/r2r_local.py

darray.fft real-to-real transforms (dct/dst, types 1-4) against scipy.fft on 8 devices:
values in float64, output layouts, round trips back to the input layout, no all-gather in the
compiled HLO, and gradients against the analytic adjoint computed with scipy."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.fft as sf
from helpers import assert_layout, canonical_dtype, mesh_of, rand

import darray
import darray.fft as dfft
from darray._src.fft.api import fft_plan

SHAPE = (7, 13, 17)
# (mesh shape, mesh axis names, spec): slab; pencil; a mesh axis left unused (replicated);
# one array axis split over two mesh axes on a 3-D mesh; every array axis split.
CASES = {
    "slab8": ((8,), ("d",), ("d", None, None)),
    "pencil2x4": ((2, 4), ("x", "y"), ("x", "y", None)),
    "unused4x2": ((4, 2), ("x", "y"), (None, "y", None)),
    "merged2x2x2": ((2, 2, 2), ("a", "b", "c"), (("a", "b"), None, "c")),
    "allsplit2x2x2": ((2, 2, 2), ("a", "b", "c"), ("a", "b", "c")),
}
# the example: a 2-D array split on both axes of a 2-D mesh
ALLSPLIT_2D = ((4, 2), ("x", "y"), ("x", "y"))


def place(a, case):
    shape, names, spec = CASES[case]
    return darray.asarray(a, mesh=mesh_of(shape, names), spec=spec)


def close(got, ref, tol=1e-12):
    """Relative to the largest reference value; a single-precision result (x64 off makes the
    float64 data float32) is held to single precision."""
    got = np.asarray(got)
    if got.dtype in (np.float32, np.complex64):
        tol = max(tol, 2e-5)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    err = np.abs(got - ref).max() / max(np.abs(ref).max(), 1.0)
    assert err < tol, f"relative error {err} >= {tol}"


def expected_layout(x, axes, sizes):
    """The layout the complex FFT of the same call ends in: r2r moves data the same way."""
    return fft_plan(x, axes=axes, s=sizes).out_layout


@pytest.mark.parametrize("case", CASES)
def test_dctn_idctn_values_layouts_and_no_all_gather(case):
    a = rand(SHAPE)
    x = place(a, case)
    y = dfft.dctn(x)
    close(y, sf.dctn(a))
    assert y.dtype == canonical_dtype(np.float64)
    assert y.layout == expected_layout(x, (0, 1, 2), SHAPE)
    assert_layout(y)
    # the round trip in one jit: its values, its layout and its HLO
    text = _round_trip_hlo(lambda v: dfft.idctn(dfft.dctn(v, norm="ortho"), norm="ortho"), x, a)
    assert "all-to-all" in text  # every case has a split transform axis


def _round_trip_hlo(fn, x, a):
    """Run ``fn`` (a round trip) in one jit on `x`: back to `a` and `x`'s layout, no
    all-gather; returns the compiled HLO text."""
    compiled = jax.jit(fn).lower(x).compile()
    z = compiled(x)
    close(z, a)
    assert z.layout == x.layout
    assert_layout(z)
    text = compiled.as_text()
    assert "all-gather" not in text
    return text


EVEN_SHAPE = (8, 12, 16)  # every axis even: the two-axis stages run Makhoul's 2-D form


@pytest.mark.parametrize("case", ["slab8", "pencil2x4", "merged2x2x2"])
@pytest.mark.parametrize("family", ["dct", "dst"])
def test_even_lengths_pair_axes_with_scipy_values_and_layouts(case, family):
    a = rand(EVEN_SHAPE, seed=11)
    x = place(a, case)
    fwd, inv = getattr(dfft, family + "n"), getattr(dfft, "i" + family + "n")
    ref_fwd, ref_inv = getattr(sf, family + "n"), getattr(sf, "i" + family + "n")
    for typ, norm in ((2, None), (3, "ortho"), (2, "forward")):
        y = fwd(x, type=typ, norm=norm)
        close(y, ref_fwd(a, type=typ, norm=norm))
        assert y.layout == expected_layout(x, (0, 1, 2), EVEN_SHAPE)
        assert_layout(y)
        close(inv(y, type=typ, norm=norm), ref_inv(ref_fwd(a, type=typ, norm=norm), type=typ,
                                                   norm=norm))
    text = _round_trip_hlo(lambda v: inv(fwd(v)), x, a)
    # a two-axis local stage is one 2-D real FFT: four FFTs in the round trip (six one axis
    # at a time); the (2, 2, 2) case's plan transforms one axis per stage
    assert text.count(" fft(") == (6 if case == "merged2x2x2" else 4)
    # reverse mode through the 2-D form: the orthonormal transform's transpose is its inverse
    w = rand(EVEN_SHAPE, seed=12)
    g = jax.jit(jax.grad(lambda v: jnp.sum(fwd(v, norm="ortho").to_jax() * w)))(x)
    assert g.layout == x.layout
    assert_layout(g)
    close(g, ref_inv(w, norm="ortho"))


@pytest.mark.parametrize("family", ["dct", "dst"])
@pytest.mark.parametrize("typ", [1, 2, 3, 4])
def test_every_type_on_a_pencil_with_norms_and_lengths(family, typ):
    a = rand(SHAPE, seed=typ)
    x = place(a, "pencil2x4")
    fwd, inv = getattr(dfft, family + "n"), getattr(dfft, "i" + family + "n")
    ref_fwd, ref_inv = getattr(sf, family + "n"), getattr(sf, "i" + family + "n")
    norm = {1: None, 2: "ortho", 3: "forward", 4: "backward"}[typ]
    # s truncates a split axis and zero-pads the other one
    s, axes = (5, 20), (0, 1)
    y = fwd(x, type=typ, s=s, axes=axes, norm=norm)
    close(y, ref_fwd(a, type=typ, s=s, axes=axes, norm=norm))
    assert y.layout == expected_layout(x, axes, s)
    assert_layout(y)
    z = inv(y, type=typ, s=SHAPE[:2], axes=axes, norm=norm)
    close(z, ref_inv(ref_fwd(a, type=typ, s=s, axes=axes, norm=norm), type=typ, s=SHAPE[:2],
                     axes=axes, norm=norm))
    assert z.layout == x.layout
    # the one-axis functions along a split axis, with orthogonalize flipped from its default
    one = getattr(dfft, family)
    orth = norm != "ortho"
    y1 = one(x, type=typ, n=9, axis=1, norm=norm, orthogonalize=orth)
    close(y1, getattr(sf, family)(a, type=typ, n=9, axis=1, norm=norm, orthogonalize=orth))
    assert y1.layout == expected_layout(x, (1,), (9,))
    assert_layout(y1)


def test_2d_array_split_on_both_mesh_axes():
    a = rand((13, 17), seed=12)
    mesh = mesh_of(*ALLSPLIT_2D[:2])
    x = darray.asarray(a, mesh=mesh, spec=ALLSPLIT_2D[2])
    y = dfft.dstn(x, type=2, norm="ortho")
    close(y, sf.dstn(a, type=2, norm="ortho"))
    assert y.layout == expected_layout(x, (0, 1), (13, 17))
    assert_layout(y)
    z = dfft.idstn(y, type=2, norm="ortho")
    close(z, a)
    assert z.layout == x.layout
    compiled = jax.jit(lambda v: dfft.idst(v, type=3, axis=0)).lower(x).compile()
    assert "all-gather" not in compiled.as_text()
    close(compiled(x), sf.idst(a, type=3, axis=0))


def test_split_1d_array_is_transformed_in_place():
    # no local axis exists for a split 1-D signal: r2r_split runs it through the distributed
    # complex FFT (full coverage in test_fft_r2r_split.py)
    mesh = mesh_of((8,), ("d",))
    a = rand((13,))
    x = darray.asarray(a, mesh=mesh, spec=("d",))
    y = dfft.dct(x)
    close(y, sf.dct(a))
    assert y.layout == x.layout


def test_host_1d_input_is_placed_whole_and_matches_scipy():
    a = rand((29,), seed=13)
    y = dfft.idct(a, type=2, norm="ortho")
    close(y, sf.idct(a, type=2, norm="ortho"))
    assert y.layout.split == ((),) and len(y.data.sharding.device_set) == 8
    assert_layout(y)


def test_float32_complex_and_integer_inputs():
    a = rand(SHAPE, seed=3)
    x32 = place(a.astype(np.float32), "slab8")
    y = dfft.dstn(x32, type=2, axes=(0, 2))
    assert y.dtype == np.float32
    close(y, sf.dstn(a, type=2, axes=(0, 2)), tol=2e-6)
    c = a + 1j * rand(SHAPE, seed=4)
    yc = dfft.idst(place(c, "slab8"), type=4, axis=0, norm="ortho")
    assert yc.dtype == canonical_dtype(np.complex128)
    close(yc, sf.idst(c, type=4, axis=0, norm="ortho"))
    ints = np.arange(np.prod(SHAPE)).reshape(SHAPE) % 11
    yi = dfft.idct(place(ints, "slab8"), type=3, axis=0)
    assert yi.dtype == canonical_dtype(np.float64)
    close(yi, sf.idct(ints, type=3, axis=0))
    assert_layout(yi)


def _along(mat, arr, axis):
    """Apply the dense matrix `mat` (out, in) along `axis` of `arr`."""
    return np.moveaxis(np.tensordot(mat, arr, axes=([1], [axis])), 0, axis)


def _dense(family, typ, inverse, length, norm):
    name = ("i" if inverse else "") + family
    return getattr(sf, name)(np.eye(length), type=typ, axis=0, norm=norm)


@pytest.mark.parametrize("case, family, typ, inverse", [
    ("pencil2x4", "dct", 2, False), ("merged2x2x2", "dct", 1, True),
    ("unused4x2", "dst", 3, False)])
def test_grad_matches_scipy_adjoint_and_keeps_layout(case, family, typ, inverse):
    a = rand(SHAPE, seed=5)
    x = place(a, case)
    name = ("i" if inverse else "") + family + "n"
    fn = getattr(dfft, name)

    def loss(v):
        return jnp.sum(fn(v, type=typ).to_jax() ** 2)

    mats = [_dense(family, typ, inverse, n, None) for n in SHAPE]
    forward = a
    for axis, m in enumerate(mats):
        forward = _along(m, forward, axis)
    adjoint = 2 * forward
    for axis, m in enumerate(mats):
        adjoint = _along(m.T, adjoint, axis)
    g = jax.jit(jax.grad(loss))(x)
    assert g.layout == x.layout
    assert_layout(g)
    close(g, adjoint)


def test_jvp_of_dst_along_split_axis():
    a, t = rand(SHAPE, seed=6), rand(SHAPE, seed=7)
    x, tx = place(a, "pencil2x4"), place(t, "pencil2x4")
    y, ty = jax.jvp(lambda v: dfft.dst(v, type=1, axis=0, norm="ortho"), (x,), (tx,))
    close(y, sf.dst(a, type=1, axis=0, norm="ortho"))
    close(ty, sf.dst(t, type=1, axis=0, norm="ortho"))
    assert ty.layout == y.layout


@pytest.mark.parametrize("call, exc, match", [
    (lambda x: dfft.dct(x, type=5), ValueError, r"dct: type=5 is not a valid .* 1, 2, 3 or 4"),
    (lambda x: dfft.dct(x, type=2.0), TypeError, r"dct: type=2.0 must be an int"),
    (lambda x: dfft.idst(x, norm="unit"), ValueError, r"idst: norm='unit' is not accepted"),
    (lambda x: dfft.dst(x, n=0), ValueError, r"dst: n=0 is an invalid number of data points"),
    (lambda x: dfft.dst(x, n=2.5), TypeError, r"dst: n=2.5 must be an int"),
    (lambda x: dfft.dct(x, axis=3), ValueError, r"dct: axis=3 is out of range .* rank 3"),
    (lambda x: dfft.dct(x, type=1, n=1, axis=0), ValueError,
     r"dct: type=1 is undefined for a transform length of 1 along axis 0"),
    (lambda x: dfft.idctn(x, type=1, s=(1,)), ValueError, r"idct: type=1 is undefined"),
    (lambda x: dfft.dctn(x, s=(4, 5), axes=(0,)), ValueError,
     r"dctn: s=\(4, 5\) and axes=\(0,\) must have the same length"),
    (lambda x: dfft.dctn(x, s=(2, 3, 4, 5)), ValueError, r"dctn: s=.* has 4 entries but x has"),
    (lambda x: dfft.dstn(x, axes=(0, 0)), ValueError, r"dstn: axes=\(0, 0\) repeats an axis"),
    (lambda x: dfft.dstn(x, s=(3, None), axes=(0, 1)), TypeError, r"dstn: s=.* must hold ints"),
    (lambda x: dfft.dct(x, workers=0), ValueError, r"dct: workers=0 is not accepted"),
    (lambda x: dfft.dct(x, orthogonalize="yes"), TypeError,
     r"dct: orthogonalize='yes' must be None, True or False"),
    (lambda x: dfft.dct("abc"), TypeError, r"dct: x must be an array"),
])
def test_errors_name_argument_value_and_accepted(call, exc, match):
    x = place(rand(SHAPE), "pencil2x4")
    with pytest.raises(exc, match=match):
        call(x)


def test_scipy_argument_forms_and_input_untouched():
    a = rand(SHAPE, seed=8)
    x = place(a, "pencil2x4")
    before = np.asarray(x).copy()
    # a scalar s and axis, -1 keeping a length, axes=() returning the input, ignored flags
    close(dfft.dctn(x, s=6, axes=1, overwrite_x=True, workers=-1),
          sf.dctn(a, s=6, axes=1))
    close(dfft.dstn(x, s=(-1, 4)), sf.dstn(a, s=(-1, 4)))
    assert dfft.idstn(x, axes=()).layout == x.layout
    close(dfft.idstn(x, axes=()), sf.idstn(a, axes=()))
    np.testing.assert_array_equal(np.asarray(x), before)


# -- the AD matrix for dctn/idctn (issue 5's, on the r2r path) --------------------------------
AD_SHAPE = (4, 4, 4)  # even on (2, 4): physical == logical, so Jacobians compare cell by cell
AD_OPS = {"dctn": (False, None), "idctn": (True, "ortho")}
AD_TRANSFORMS = ["grad", "jvp", "vjp", "jacfwd", "jacrev"]
AD_SETTINGS = [(mode, kind, part) for mode in ("eager", "jit") for kind in ("explicit", "auto")
               for part in ("shardy", "gspmd")]


def _ad_mesh(kind):
    if kind == "explicit":
        return mesh_of((2, 4), ("x", "y"), explicit=True)
    return mesh_of((2, 4), ("x", "y"))


def _kron_dct(inverse, norm):
    """The dense operator of dctn/idctn on AD_SHAPE, shape AD_SHAPE + AD_SHAPE."""
    m = [_dense("dct", 2, inverse, n, norm) for n in AD_SHAPE]
    return np.einsum("ia,jb,kc->ijkabc", *m)


def _check_ad(op, transform, mode, mesh_kind, partitioner):
    inverse, norm = AD_OPS[op]
    before = jax.config.jax_use_shardy_partitioner
    jax.config.update("jax_use_shardy_partitioner", partitioner == "shardy")
    try:
        mesh = _ad_mesh(mesh_kind)
        rng = np.random.default_rng(AD_TRANSFORMS.index(transform))
        host = rng.standard_normal(AD_SHAPE)
        x = darray.asarray(host, mesh=mesh, spec=("x", "y"))
        f = lambda a: getattr(dfft, op)(a, norm=norm)  # noqa: E731
        op_dense = _kron_dct(inverse, norm)
        apply = lambda v: np.einsum("ijkabc,abc->ijk", op_dense, v)  # noqa: E731
        wrap = jax.jit if mode == "jit" else (lambda g: g)
        if transform == "grad":
            g = wrap(jax.grad(lambda a: jnp.sum(f(a).to_jax() ** 2)))(x)
            ref = 2 * np.einsum("ijkabc,ijk->abc", op_dense, apply(host))
            out, layout = g, x.layout
        elif transform == "jvp":
            t_host = rng.standard_normal(AD_SHAPE)
            t = darray.asarray(t_host, mesh=mesh, spec=("x", "y"))
            y, out = wrap(lambda a, b: jax.jvp(f, (a,), (b,)))(x, t)
            close(y, apply(host))
            ref, layout = apply(t_host), y.layout
        elif transform == "vjp":
            y = f(x)
            ct_host = rng.standard_normal(AD_SHAPE)
            ct = darray.DistArray._new(darray.asarray(ct_host, mesh=mesh, spec=y.layout.spec).data,
                                       y.layout)

            def pull(a, c):
                return jax.vjp(f, a)[1](c)[0]
            out = wrap(pull)(x, ct)
            ref, layout = np.einsum("ijkabc,ijk->abc", op_dense, ct_host), x.layout
        else:
            jac = wrap(jax.jacfwd(f) if transform == "jacfwd" else jax.jacrev(f))(x)
            (leaf,) = jax.tree_util.tree_leaves(jac)
            assert leaf.shape == AD_SHAPE + AD_SHAPE
            assert len(leaf.sharding.device_set) == 8 and not leaf.sharding.is_fully_replicated
            close(np.asarray(leaf), op_dense)
            return
        assert isinstance(out, darray.DistArray) and out.layout == layout
        assert len(out.data.sharding.device_set) == 8
        assert not out.data.sharding.is_fully_replicated
        assert_layout(out)
        close(out, ref)
    finally:
        jax.config.update("jax_use_shardy_partitioner", before)


# Default tier: every transform on dctn and three on idctn, each of the 8 (mode, mesh,
# partitioner) settings exercised once; the full product runs in the slow tier.
_SPREAD = [("dctn", t) for t in AD_TRANSFORMS] + [("idctn", t) for t in ("grad", "vjp", "jacfwd")]


@pytest.mark.parametrize("op, transform, setting", [
    (op, t, setting) for (op, t), setting in zip(_SPREAD, AD_SETTINGS)])
def test_ad_matrix_spread(op, transform, setting):
    _check_ad(op, transform, *setting)


@pytest.mark.slow
@pytest.mark.parametrize("setting", AD_SETTINGS)
@pytest.mark.parametrize("transform", AD_TRANSFORMS)
@pytest.mark.parametrize("op", list(AD_OPS))
def test_ad_matrix_full(op, transform, setting):
    _check_ad(op, transform, *setting)
