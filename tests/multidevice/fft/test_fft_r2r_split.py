"""Covers: darray/_src/fft/r2r_split.py, darray/_src/fft/r2r.py

darray.fft real-to-real transforms of split 1-D signals (every array axis split, so the
planner has no local axis; r2r_split runs them through the distributed complex FFT) against
scipy.fft in float64: values, layouts (the split is kept), round trips, no all-gather in the
compiled HLO, and the gradient against scipy's adjoint."""
import itertools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.fft as sf
from helpers import mesh_of, rand

import darray
import darray.fft as dfft

# float64 data and tolerances throughout: not run with x64 off
pytestmark = pytest.mark.x64

# (mesh shape, mesh axis names, spec of the 1-D signal): over all 8 devices; over one axis of a
# 2-D mesh (replicated over the other); over both axes of a 2-D mesh.
PLACEMENTS = {
    "d8": ((8,), ("d",), ("d",)),
    "y_of_2x4": ((2, 4), ("x", "y"), ("y",)),
    "xy_of_2x4": ((2, 4), ("x", "y"), (("x", "y"),)),
}
NAMES = ("dct", "idct", "dst", "idst")
NORMS = (None, "ortho", "forward", "backward")


def place(a, placement):
    shape, names, spec = PLACEMENTS[placement]
    return darray.asarray(a, mesh=mesh_of(shape, names), spec=spec)


def close(got, ref, tol=1e-12):
    got = np.asarray(got)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    err = np.abs(got - ref).max() / max(np.abs(ref).max(), 1.0)
    assert err < tol, f"relative error {err} >= {tol}"


def assert_split_kept(y, x, length):
    """The output keeps x's split (same mesh axes on the signal axis) with the new length."""
    assert y.layout.shape == (length,)
    assert y.layout.split == x.layout.split and y.layout.mesh == x.layout.mesh
    assert y.data.sharding.is_equivalent_to(y.sharding, y.data.ndim)
    assert y.data.shape == y.layout.physical_shape
    assert not y.data.sharding.is_fully_replicated


def defined(name, typ, n):
    return not (name.endswith("dct") and typ == 1 and n < 2)


def check(name, typ, norm, n_arg, placement, length, seed=0, orthogonalize=None,
          complex_=False):
    a = rand(length, np.complex128 if complex_ else np.float64, seed=seed)
    x = place(a, placement)
    fn = jax.jit(lambda v: getattr(dfft, name)(v, type=typ, n=n_arg, norm=norm,
                                               orthogonalize=orthogonalize))
    y = fn(x)
    def ref_of(v):
        return getattr(sf, name)(v, type=typ, n=n_arg, norm=norm, orthogonalize=orthogonalize)
    # complex input: real and imaginary parts transformed separately (scipy's documented rule;
    # scipy's own complex path ignores orthogonalize=False with norm="ortho" for DCT-I, so the
    # reference is built from the parts)
    ref = ref_of(a.real) + 1j * ref_of(a.imag) if complex_ else ref_of(a)
    close(y, ref)
    assert_split_kept(y, x, ref.shape[0])
    # x is not modified
    np.testing.assert_array_equal(np.asarray(x), a)
    return x, y, fn


# -- default tier: one compile per case, each type once (families, norms, placements cycled) -----
@pytest.mark.parametrize("name, typ, norm, placement, length", [
    ("dct", 1, None, "d8", 13), ("dst", 2, "forward", "xy_of_2x4", 7),
    ("idct", 3, "ortho", "y_of_2x4", 16), ("idst", 4, "backward", "d8", 17)])
def test_split_signal_matches_scipy_and_keeps_its_split(name, typ, norm, placement, length):
    check(name, typ, norm, None, placement, length)


def test_round_trip_returns_x_in_its_layout_without_all_gather():
    a = rand(13, seed=3)
    x = place(a, "d8")
    fn = jax.jit(lambda v: dfft.idct(dfft.dct(v, type=2, norm="ortho"), type=2, norm="ortho"))
    compiled = fn.lower(x).compile()
    assert "all-gather" not in compiled.as_text()
    back = compiled(x)
    close(back, a)
    assert back.layout == x.layout


@pytest.mark.parametrize("family, typ", [("dct", 2), ("dst", 3), ("dct", 4), ("dst", 1)])
def test_reorder_path_runs_an_fft_of_length_n_and_sends_point_to_point(family, typ):
    """Makhoul's reorders (types 2/3, even-length 1/4): the split FFT is of length n (n/2 for
    IV, n +- 1 for I), never the 2n extension, and the reorders are collective permutes."""
    n = 64
    a = rand(n, seed=9)
    x = place(a, "d8")
    fn = jax.jit(lambda v: getattr(dfft, family)(v, type=typ))
    hlo = fn.lower(x).compile().as_text()
    lengths = {int(v) for v in re.findall(r"fft_length=\{(\d+)\}", hlo)}
    # 64 over 8 is a four-step 8 x 8 (the 2n form, 128 = 8 x 16); 32 and 65 over 8 run
    # Bluestein on 64 = 8 x 8 and 192 = 8 x 24
    want = {("dct", 2): {8}, ("dst", 3): {8}, ("dct", 4): {8}, ("dst", 1): {8, 24}}
    assert lengths == want[family, typ], lengths
    assert "all-gather" not in hlo and "collective-permute" in hlo
    close(fn(x), getattr(sf, family)(a, type=typ))


@pytest.mark.parametrize("family", ["dct", "dst"])
def test_odd_type4_by_one_fft_of_length_n(family):
    """Odd-length DCT-IV/DST-IV: one complex FFT of length n over a permutation (r2r_local's
    odd tables), never the 2n form; forward and inverse, every norm, padded and truncated."""
    for n, placement, norm, inverse in [(13, "d8", None, False), (21, "y_of_2x4", "ortho", True),
                                        (33, "xy_of_2x4", "forward", False),
                                        (7, "d8", "backward", True), (1, "d8", None, False)]:
        a = rand(n, seed=n)
        x = place(a, placement)
        name = ("i" if inverse else "") + family
        y = getattr(dfft, name)(x, type=4, norm=norm)
        close(y, getattr(sf, name)(a, type=4, norm=norm))
        assert_split_kept(y, x, n)
    a = rand(10, seed=3)
    x = place(a, "d8")
    for m in (9, 15):  # truncated, zero-padded to an odd length
        close(getattr(dfft, family)(x, type=4, n=m), getattr(sf, family)(a, type=4, n=m))
    hlo = jax.jit(lambda v: getattr(dfft, family)(v, type=4)).lower(place(rand(13), "d8"))
    hlo = hlo.compile().as_text()
    # the input permutation and the two output reorders are point-to-point sends
    assert "all-gather" not in hlo and "collective-permute" in hlo


def test_truncation_padding_orthogonalize_and_complex_input():
    check("dst", 3, "ortho", 20, "xy_of_2x4", 13, orthogonalize=False)   # n > length: padded
    check("dct", 4, None, 9, "d8", 13, complex_=True)                    # n < length: truncated


def test_all_split_2d_array_falls_back_per_axis():
    # a 2-D array split (x, y) on a 2-D mesh has no axis to move a split to either
    mesh = mesh_of((2, 4), ("x", "y"))
    a = rand(7 * 13, seed=4).reshape(7, 13)
    x = darray.asarray(a, mesh=mesh, spec=("x", "y"))
    y = dfft.dctn(x, type=3, norm="ortho")
    close(y, sf.dctn(a, type=3, norm="ortho"))
    assert y.layout.split == x.layout.split


def test_grad_matches_scipy_adjoint():
    n, typ = 13, 2
    a = rand(n, seed=5)
    x = place(a, "xy_of_2x4")
    dense = sf.dst(np.eye(n), type=typ, axis=0, norm="ortho", orthogonalize=False)

    def loss(v):
        return jnp.sum(dfft.dst(v, type=typ, norm="ortho", orthogonalize=False).to_jax() ** 2)

    g = jax.jit(jax.grad(loss))(x)
    close(g, dense.T @ (2 * dense @ a))
    assert g.layout == x.layout


# -- slow tier ------------------------------------------------------------------------------------
_LENGTHS = (1, 2, 7, 13, 16, 17, 64)


@pytest.mark.slow
@pytest.mark.parametrize("placement", list(PLACEMENTS))
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("typ", (1, 2, 3, 4))
def test_full_sweep(placement, name, typ):
    """Every type x norm x length x placement, and n / orthogonalize / complex input."""
    for i, (length, norm) in enumerate(itertools.product(_LENGTHS, NORMS)):
        if defined(name, typ, length):
            check(name, typ, norm, None, placement, length, seed=i)
    for length, n_arg, orth in [(13, 5, True), (13, 30, False), (7, 64, None), (64, 17, True)]:
        if defined(name, typ, n_arg):
            check(name, typ, "ortho", n_arg, placement, length, orthogonalize=orth,
                  complex_=n_arg == 30)


@pytest.mark.slow
@pytest.mark.parametrize("family, typ, norm, placement, length", [
    ("dct", 1, "ortho", "d8", 13), ("dst", 1, None, "xy_of_2x4", 7),
    ("dct", 3, "forward", "y_of_2x4", 16), ("dst", 4, "ortho", "d8", 64)])
def test_round_trips(family, typ, norm, placement, length):
    a = rand(length, seed=3)
    x = place(a, placement)
    back = jax.jit(lambda v: getattr(dfft, "i" + family)(
        getattr(dfft, family)(v, type=typ, norm=norm), type=typ, norm=norm))(x)
    close(back, a)
    assert back.layout == x.layout


@pytest.mark.slow
def test_integer_input_and_hlo_of_every_type():
    a = np.arange(13)
    x = place(a, "d8")
    for typ in (1, 2, 3, 4):
        compiled = jax.jit(lambda v, typ=typ: dfft.idct(dfft.dst(v, type=typ, n=20), type=typ)) \
            .lower(x).compile()
        assert "all-gather" not in compiled.as_text(), f"type {typ}"
        y = compiled(x)
        assert y.dtype == np.float64
        close(y, sf.idct(sf.dst(a, type=typ, n=20), type=typ))


def test_the_cheaper_form_is_chosen_per_length():
    """The reorder form where its FFT length factors over the devices (or neither does), the
    zero-padded 2n form where only 2n does (a four-step FFT against a Bluestein one), and the
    2n form for odd type I; both give scipy's numbers."""
    from darray._src.fft.r2r_split import _reordered
    assert _reordered("dct", 2, 1 << 20, 8) and _reordered("dst", 4, 1 << 20, 8)
    assert not _reordered("dct", 2, 32 * 8193, 8)      # 32 * 8193 Bluestein, 64 * 8193 four-step
    assert _reordered("dct", 4, (1 << 18) + 1, 8)      # both Bluestein: the shorter one
    assert _reordered("dst", 4, 32 * 8193, 8)          # IV: half-length FFT, a third the memory
    assert not _reordered("dct", 1, 13, 8) and _reordered("dst", 1, 14, 8)
    for n, typ in [(32, 2), (32, 3), (96, 3)]:          # lengths that take the 2n form
        assert not _reordered("dct", typ, n, 8)
        a = rand(n, seed=n)
        x = place(a, "d8")
        for family in ("dct", "dst"):
            y = getattr(dfft, family)(x, type=typ, norm="ortho")
            close(y, getattr(sf, family)(a, type=typ, norm="ortho"))
            assert_split_kept(y, x, n)
