"""Covers: darray/_src/fft/api.py, darray/_src/plans/fft_plan.py, darray/_src/fft/r2r.py

Mesh axes that split nothing cost nothing: one device, size-1 mesh axes, unsplit axes.

On one device darray should run what jnp runs. The FFT planner ("auto") treats mesh axes of
size 1 as not splitting, so a 3-D FFT on a (1, 1) mesh is ONE local FFT (no exchange stage,
one fft op in the compiled program), and the halo fill pads an axis held whole by every block
with one local pad instead of the exchange machinery. Values against numpy, layouts and
shardings asserted. "pencil" keeps its transposes over size-1 axes (the cuDecomp backend is
exercised on one GPU through them).
"""
from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.fft
from halo_reference import check_filled, reduce_reference
from helpers import mesh_of, rand
from jax.sharding import PartitionSpec as P

import darray
from darray._src.fft.api import fft_plan
from darray._src.plans.fft_plan import LocalFFT, Merge, Transpose

# float64 data and tolerances throughout: not run with x64 off
pytestmark = pytest.mark.x64

RULES = ("periodic", "constant", "edge", "reflect", "symmetric")


def one_device_mesh():
    return mesh_of((1, 1), ("r", "c"), devices=jax.devices()[:1])


def assert_placed(y, x_layout_split=None):
    if x_layout_split is not None:
        assert y.layout.split == x_layout_split
    assert y.data.sharding.is_equivalent_to(y.sharding, y.data.ndim)
    assert y.data.shape == y.layout.physical_shape


def exchanges(plan):
    return [s for s in plan.stages if isinstance(s, (Transpose, Merge))]


def compiled_ops(fn, x, op):
    text = jax.jit(fn).lower(x).compile().as_text()
    return len(re.findall(rf"= \S+ {re.escape(op)}\(", text))


# -- FFT --------------------------------------------------------------------------------------
def test_one_device_fftn_is_one_local_fft():
    a = rand((8, 6, 5), np.complex128)
    x = darray.asarray(a, mesh=one_device_mesh(), spec=P("c", "r", None))
    plan = fft_plan(x)
    assert plan.stages == (LocalFFT((0, 1, 2), "c2c", False, (8, 6, 5)),)
    assert plan.in_layout == x.layout and plan.out_layout == x.layout
    y = darray.fft.fftn(x)
    np.testing.assert_allclose(np.asarray(y), np.fft.fftn(a), rtol=1e-12, atol=1e-10)
    assert_placed(y, x.layout.split)
    z = darray.fft.ifftn(y)
    assert z.layout == x.layout
    assert_placed(z, x.layout.split)
    np.testing.assert_allclose(np.asarray(z), a, rtol=1e-12, atol=1e-12)
    # What XLA runs: one fft per transform, as jnp.fft (no transposes around a split).
    round_trip = lambda v: darray.fft.ifftn(darray.fft.fftn(v))  # noqa: E731
    assert compiled_ops(round_trip, x, "fft") == 2


def test_one_device_real_and_r2r_are_local():
    a = rand((8, 6, 10))
    x = darray.asarray(a, mesh=one_device_mesh(), spec=P("c", "r", None))
    plan = fft_plan(x, kind="r2c")
    assert not exchanges(plan) and plan.out_layout.split == x.layout.split
    y = darray.fft.rfftn(x)
    np.testing.assert_allclose(np.asarray(y), np.fft.rfftn(a), rtol=1e-12, atol=1e-10)
    assert_placed(y, x.layout.split)
    z = darray.fft.irfftn(y, s=a.shape)
    assert z.layout == x.layout
    np.testing.assert_allclose(np.asarray(z), a, rtol=1e-12, atol=1e-12)
    # The real stage and the complex stage beside it run as one rfftn / irfftn, as jnp's.
    round_trip = lambda v: darray.fft.irfftn(darray.fft.rfftn(v), s=a.shape)  # noqa: E731
    assert compiled_ops(round_trip, x, "fft") == 2
    d = darray.fft.dctn(x, type=2)
    np.testing.assert_allclose(np.asarray(d), scipy.fft.dctn(a, type=2), rtol=1e-10,
                               atol=1e-10)
    assert_placed(d, x.layout.split)
    back = darray.fft.idctn(d, type=2)
    assert back.layout == x.layout
    np.testing.assert_allclose(np.asarray(back), a, rtol=1e-10, atol=1e-10)


def test_pencil_keeps_transposes_over_size_one_axes():
    # cuDecomp runs pencil plans; its GPU tier relies on these transposes on one device.
    x = darray.zeros((8, 8, 8), dtype="complex64", mesh=one_device_mesh(),
                     spec=P("c", "r", None))
    plan = fft_plan(x, decomposition="pencil")
    assert len(exchanges(plan)) == 2 and all(isinstance(s, Transpose) for s in exchanges(plan))


def test_one_device_1d_split_over_size_one_axis_is_local():
    # Formerly a "split" 1-D array ran the four-step FFT; on a size-1 axis it is one local FFT.
    a = rand((12,), np.complex128)
    x = darray.asarray(a, mesh=one_device_mesh(), spec=P("r"))
    assert fft_plan(x).stages == (LocalFFT((0,), "c2c", False, (12,)),)
    y = darray.fft.fft(x)
    np.testing.assert_allclose(np.asarray(y), np.fft.fft(a), rtol=1e-12, atol=1e-10)
    assert_placed(y, (("r",),))


@pytest.mark.parametrize("spec, kspace", [
    (P("c", "r", None), ((), ("r", "c"), ())),      # r (size 1) stays on axis 1, c moves 0 -> 1
    (P("r", "c", None), (("r",), (), ("c",))),      # r stays, c moves 1 -> 2
    (P(("r", "c"), None, None), (("r",), ("c",), ())),
])
def test_size_one_mesh_axis_beside_a_real_one(spec, kspace):
    # (1, 8) mesh: one exchange for the one real split, size-1 axis left where it was.
    a = rand((16, 12, 10), np.complex128)
    x = darray.asarray(a, mesh=mesh_of((1, 8), ("r", "c")), spec=spec)
    plan = fft_plan(x)
    assert len(exchanges(plan)) == 1 and exchanges(plan)[0].mesh_axes == ("c",)
    y = darray.fft.fftn(x)
    np.testing.assert_allclose(np.asarray(y), np.fft.fftn(a), rtol=1e-12, atol=1e-10)
    assert_placed(y, kspace)
    z = darray.fft.ifftn(y)
    assert z.layout == x.layout
    assert_placed(z, x.layout.split)
    np.testing.assert_allclose(np.asarray(z), a, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("axes, s", [((0, 1, 2), None), ((0, 2), (9, 7)), ((1,), (5,))])
def test_fused_real_stages_after_an_exchange(axes, s):
    # (2, 4) pencil: the real stage runs next to a complex one after/before all-to-alls.
    a = rand((16, 12, 10), seed=4)
    x = darray.asarray(a, mesh=mesh_of((2, 4), ("r", "c")), spec=P("r", "c", None))
    y = darray.fft.rfftn(x, s=s, axes=axes)
    np.testing.assert_allclose(np.asarray(y), np.fft.rfftn(a, s=s, axes=axes), rtol=1e-12,
                               atol=1e-10)
    assert_placed(y)
    n = s if s is not None else tuple(a.shape[i] for i in axes)
    z = darray.fft.irfftn(y, s=n, axes=axes)
    np.testing.assert_allclose(np.asarray(z), np.fft.irfftn(np.fft.rfftn(a, s=s, axes=axes),
                                                            s=n, axes=axes),
                               rtol=1e-12, atol=1e-12)
    assert z.layout.split == x.layout.split
    assert_placed(z)


def test_size_one_axis_minor_in_a_group_keeps_the_plain_plan():
    # (c, r): the size-1 name cannot be put back in its place by the rule; plain plan, exact
    # round trip.
    a = rand((16, 12, 10), np.complex128)
    x = darray.asarray(a, mesh=mesh_of((1, 8), ("r", "c")), spec=P(("c", "r"), None, None))
    y = darray.fft.fftn(x)
    np.testing.assert_allclose(np.asarray(y), np.fft.fftn(a), rtol=1e-12, atol=1e-10)
    z = darray.fft.ifftn(y)
    assert z.layout == x.layout
    assert_placed(z, x.layout.split)
    np.testing.assert_allclose(np.asarray(z), a, rtol=1e-12, atol=1e-12)


# -- halo -------------------------------------------------------------------------------------
@pytest.mark.parametrize("rule", RULES)
def test_one_device_halo_is_np_pad(rule):
    host = rand((7, 6, 5))
    x = darray.asarray(host, mesh=one_device_mesh(), spec=P("c", "r", None))
    widths = ((1, 2), 2, (0, 3))
    y = x.halo(widths, boundary=rule, fill_value=-2.5)
    assert y.layout.halo == ((1, 2), (2, 2), (0, 3))
    assert y.layout.split == x.layout.split
    assert_placed(y)
    check_filled(y, host, rule, fill_value=-2.5)
    np.testing.assert_array_equal(np.asarray(y), host)
    # one block holding the whole array: the physical data IS np.pad's result
    assert y.data.shape == (10, 10, 8)
    r = y.halo_reduce(boundary=rule)
    assert r.layout == x.layout
    np.testing.assert_allclose(np.asarray(r), reduce_reference(y, rule), rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("rule", ("periodic", "reflect", "symmetric"))
def test_one_device_halo_wider_than_the_axis(rule):
    host = rand((3, 4))
    x = darray.asarray(host, mesh=one_device_mesh(), spec=P("r", None))
    y = x.halo(7, boundary=rule)
    check_filled(y, host, rule)
    assert y.data.shape == (17, 18)


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("mesh_shape, spec", [
    ((2, 4), P("r", "c", None)),          # exchange, exchange, local
    ((2, 4), P(None, "c", "r")),          # local, exchange, exchange
    ((1, 8), P("r", "c", None)),          # local (size-1 r), exchange, local
    ((2, 4), P("c", None, "r")),          # exchange, local, exchange: corners cross both
])
def test_unsplit_axes_pad_locally_between_exchanges(rule, mesh_shape, spec):
    host = rand((9, 13, 6), seed=3)
    x = darray.asarray(host, mesh=mesh_of(mesh_shape, ("r", "c")), spec=spec)
    y = x.halo(((2, 1), 2, (1, 3)), boundary=rule, fill_value=4.0)
    assert y.layout.halo == ((2, 1), (2, 2), (1, 3))
    assert y.layout.split == x.layout.split
    assert y.data.sharding.spec == x.data.sharding.spec
    assert_placed(y)
    check_filled(y, host, rule, fill_value=4.0)
    rng = np.random.default_rng(1)
    deposit = darray.DistArray._new(jax.device_put(jnp.asarray(rng.standard_normal(y.data.shape)),
                                              y.data.sharding), y.layout)
    r = deposit.halo_reduce(boundary=rule)
    assert r.layout == x.layout
    np.testing.assert_allclose(np.asarray(r), reduce_reference(deposit, rule), rtol=1e-12,
                               atol=1e-12)


def test_one_device_halo_gradient_is_halo_reduce():
    host = rand((6, 5))
    x = darray.asarray(host, mesh=one_device_mesh(), spec=P("r", "c"))
    weights = rand((10, 9), seed=2)  # the physical shape with width 2

    def loss(v):
        return jnp.sum(v.halo(2, boundary="reflect").data * weights)

    g = jax.grad(loss)(x)
    ghosted = darray.DistArray._new(jnp.asarray(weights), x.halo(2).layout)
    np.testing.assert_allclose(np.asarray(g), reduce_reference(ghosted, "reflect"),
                               rtol=1e-12, atol=1e-12)
    assert g.layout == x.layout
