"""Covers: darray/_src/fft/mixed.py

darray.fft.transformn / itransformn (issue #30 point 2): mixed per-axis transforms against
scipy's 1-D transforms in float64 on even and uneven layouts, output layouts, round trips back
to the input layout, one plan with fftn's exchanges, no all-gather in the compiled HLO, jvp and
vjp against the scipy-built linear map, and the errors."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.fft as sf
from helpers import mesh_of, rand

import darray
import darray.fft as dfft
from darray._src.fft.api import fft_plan
from darray._src.fft.mixed import _in_order, _kernel, _plan_kind
from darray._src.plans.fft_planner import plan_fft

ISSUE_KINDS = [("dct2", "fft", "rfft"), ("fft", "dct1", "rfft"), ("dst2", "dct2", "dst4")]
LAYOUTS = {
    "slab8": ((8,), ("d",), ("d", None, None)),
    "pencil2x4": ((2, 4), ("x", "y"), ("x", "y", None)),
    "allsplit2x2x2": ((2, 2, 2), ("a", "b", "c"), ("a", "b", "c")),
}


def place(a, case):
    shape, names, spec = LAYOUTS[case]
    return darray.asarray(a, mesh=mesh_of(shape, names), spec=spec)


def reference(a, kinds, axes, inverse=False, s=None):
    """scipy along each axis: real-to-real and rfft first (forward), complex first (inverse)."""
    order = ([i for i, k in enumerate(kinds) if k not in ("fft", "rfft")]
             + [i for i, k in enumerate(kinds) if k == "rfft"]
             + [i for i, k in enumerate(kinds) if k == "fft"])
    for i in order[::-1] if inverse else order:
        kind, ax = kinds[i], axes[i]
        if kind == "fft":
            a = (sf.ifft if inverse else sf.fft)(a, axis=ax)
        elif kind == "rfft":
            a = sf.irfft(a, n=s[i], axis=ax) if inverse else sf.rfft(a, axis=ax)
        else:
            fn = getattr(sf, ("i" if inverse else "") + kind[:3])
            a = fn(a, type=int(kind[3]), axis=ax)
    return a


def no_all_gather(fn, x):
    hlo = jax.jit(fn).lower(x).compile().as_text()
    return "all-gather" not in hlo


def _matrix():
    """Every issue example on every layout, even and uneven; the default tier keeps one
    layout per example and shape (the rest is @slow: each case compiles three programs)."""
    out = []
    for i, kinds in enumerate(ISSUE_KINDS):
        for j, case in enumerate(LAYOUTS):
            for k, shape in enumerate([(16, 8, 12), (9, 13, 10)]):
                fast = (i + j + k) % 3 == 0 or case == "pencil2x4" and k == 1
                marks = () if fast else (pytest.mark.slow,)
                out.append(pytest.param(kinds, case, shape, marks=marks,
                                        id=f"{'-'.join(kinds)}-{case}-{('even', 'uneven')[k]}"))
    return out


@pytest.mark.x64
@pytest.mark.parametrize("kinds,case,shape", _matrix())
def test_values_layouts_round_trip(kinds, case, shape):
    a = rand(shape)
    x = place(a, case)
    y = dfft.transformn(x, kinds)
    np.testing.assert_allclose(np.asarray(y), reference(a, kinds, (0, 1, 2)), rtol=1e-10,
                               atol=1e-10)
    assert y.data.shape == y.layout.physical_shape
    assert y.layout.mesh == x.layout.mesh
    if case == "allsplit2x2x2":
        assert y.layout.split == x.layout.split  # the fold (or per-axis path) keeps it
    else:
        assert any(y.layout.split) and y.layout.split != x.layout.split  # k-space transposed
    z = dfft.itransformn(y, kinds, s=shape)
    np.testing.assert_allclose(np.asarray(z), a, rtol=1e-10, atol=1e-10)
    assert z.layout == x.layout


@pytest.mark.parametrize("case", ["slab8", "pencil2x4"])
def test_no_all_gather(case):
    kinds, shape = ("fft", "dct1", "rfft"), (9, 13, 10)
    x = place(rand(shape), case)
    assert no_all_gather(lambda v: dfft.itransformn(dfft.transformn(v, kinds), kinds,
                                                     s=shape).data, x)


@pytest.mark.parametrize("case", ["slab8", "pencil2x4"])
@pytest.mark.parametrize("kinds", ISSUE_KINDS + [("fft", "dst3")], ids="-".join)
def test_one_plan_with_the_exchanges_of_fftn(kinds, case):
    x = place(rand((16, 8, 12)), case)
    axes = tuple(range(3 - len(kinds), 3))
    kinds_o, axes_o = _in_order(kinds, axes)
    kernels = tuple(_kernel(k, "backward", False) for k in kinds_o)
    plan = plan_fft(x.layout, axes_o, _plan_kind(kinds_o, False), False,
                    tuple(x.shape[a] for a in axes_o), kernels)
    reference_kind = "r2c" if "rfft" in kinds else "c2c"
    fftn = fft_plan(x, axes=axes_o, kind=reference_kind)
    assert plan.n_transposes == fftn.n_transposes
    assert plan.out_layout.split == fftn.out_layout.split
    assert dfft.transformn(x, kinds).layout == plan.out_layout


@pytest.mark.x64
def test_axes_and_norms():
    a = rand((6, 10, 8))
    x = place(a, "pencil2x4")
    for norm in ("ortho", "forward"):
        y = dfft.transformn(x, ("rfft", "dst3"), axes=(2, 0), norm=norm)
        expect = sf.rfft(sf.dst(a, type=3, axis=0, norm=norm), axis=2, norm=norm)
        np.testing.assert_allclose(np.asarray(y), expect, rtol=1e-10, atol=1e-10)
        z = dfft.itransformn(y, ("rfft", "dst3"), axes=(2, 0), s=(8, 6), norm=norm)
        np.testing.assert_allclose(np.asarray(z), a, rtol=1e-10, atol=1e-10)
        assert z.layout == x.layout


@pytest.mark.x64
def test_complex_input_r2r_on_real_and_imaginary_parts():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((8, 9, 6)) + 1j * rng.standard_normal((8, 9, 6))
    x = place(a, "pencil2x4")
    for kinds in [("dct2", "fft", "dst1"), ("dst2", "dct2", "dst4")]:
        y = dfft.transformn(x, kinds)
        np.testing.assert_allclose(np.asarray(y), reference(a, kinds, (0, 1, 2)), rtol=1e-10,
                                   atol=1e-10)
        z = dfft.itransformn(y, kinds)
        np.testing.assert_allclose(np.asarray(z), a, rtol=1e-10, atol=1e-10)


def test_float32_keeps_precision():
    a = rand((8, 8, 8)).astype(np.float32)
    y = dfft.transformn(place(a, "slab8"), ("fft", "dct1", "rfft"))
    assert y.dtype == np.complex64
    np.testing.assert_allclose(np.asarray(y), reference(a.astype(np.float64),
                                                        ("fft", "dct1", "rfft"), (0, 1, 2)),
                               rtol=2e-4, atol=2e-4)


@pytest.mark.x64
@pytest.mark.parametrize("kinds", ISSUE_KINDS, ids="-".join)
def test_jvp_and_vjp_are_the_linear_map(kinds):
    shape = (4, 6, 4)
    a = rand(shape)
    x = place(a, "pencil2x4")
    t = place(rand(shape, seed=2), "pencil2x4")

    def f(v):
        return dfft.transformn(v, kinds)
    y, ty = jax.jvp(f, (x,), (t,))
    np.testing.assert_allclose(np.asarray(ty), reference(np.asarray(t), kinds, (0, 1, 2)),
                               rtol=1e-10, atol=1e-10)
    assert ty.layout == y.layout
    # vjp of L(v) = Re sum(f(v) * c): the gradient is Re(M^T c), M built column by column
    c = rand(y.shape, seed=3) + 1j * rand(y.shape, seed=4)
    g = jax.jit(jax.grad(lambda v: jnp.sum(jnp.real(f(v).to_jax() * c))))(x)
    assert g.layout == x.layout
    eye = np.eye(a.size).reshape((a.size,) + shape)
    expect = np.array([np.real(np.sum(reference(e, kinds, (0, 1, 2)) * c)) for e in eye])
    np.testing.assert_allclose(np.asarray(g).ravel(), expect, rtol=1e-10, atol=1e-10)


@pytest.mark.x64
def test_bad_input():
    x = place(rand((8, 8, 8)), "slab8")
    with pytest.raises(ValueError, match="'dct5' is not a known transform"):
        dfft.transformn(x, ("fft", "dct5"))
    with pytest.raises(ValueError, match="2 'rfft' axes"):
        dfft.transformn(x, ("rfft", "fft", "rfft"))
    with pytest.raises(TypeError, match="'rfft' needs real input"):
        dfft.transformn(darray.astype(x, darray.complex128), ("fft", "rfft"))
    with pytest.raises(TypeError, match="must be a sequence of kinds"):
        dfft.transformn(x, "fft")
    with pytest.raises(ValueError, match="same length"):
        dfft.transformn(x, ("fft", "fft"), axes=(0,))
    with pytest.raises(ValueError, match="only the 'rfft' axis"):
        dfft.itransformn(x, ("fft", "fft"), s=(8, 9))
    with pytest.raises(ValueError, match="norm"):
        dfft.transformn(x, ("fft",), norm="bogus")
