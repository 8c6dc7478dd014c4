"""Covers: darray/_src/fft/bluestein.py, darray/_src/fft/split_axis.py

Bluestein 1-D transforms of a split axis (fft/split_axis.py): host tables, in-program tables."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import mesh_of
from jax.sharding import PartitionSpec as P

import darray
import darray.fft as dfft
from darray._src.fft import bluestein, split_axis
from darray._src.fft.request import Request
from darray._src.plans.split_plan import BluesteinStage


def _x(n, mesh_shape=(8,), names=("d",), batch=None, seed=3):
    rng = np.random.default_rng(seed)
    shape = (n,) if batch is None else (batch, n)
    a = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    mesh = mesh_of(mesh_shape, names, explicit=True)
    spec = names if batch is not None else (names[0],)
    return a, darray.asarray(a, mesh=mesh, spec=spec)


def _rel(got, want):
    return np.max(np.abs(np.asarray(got) - want)) / np.max(np.abs(want))


@pytest.mark.x64
@pytest.mark.parametrize("n", [13, 61, 97])
@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_eager_and_jitted_paths_match_numpy(n, norm):
    """Eager calls use the cached host tables, jitted ones build them in the program."""
    a, x = _x(n)
    for fn, ref in ((dfft.fft, np.fft.fft), (dfft.ifft, np.fft.ifft)):
        eager = fn(x, norm=norm)
        traced = jax.jit(lambda v, f=fn: f(v, norm=norm))(x)
        for y in (eager, traced):
            assert y.layout == x.layout and y.data.sharding.spec == P("d")
            assert _rel(np.asarray(y), ref(a, norm=norm)) < 1e-12


@pytest.mark.x64
def test_real_transforms_of_a_prime_length():
    a, x = _x(29)
    r = a.real
    xr = darray.asarray(r, mesh=x.layout.mesh, spec=("d",))
    spec = dfft.rfft(xr)
    assert _rel(np.asarray(spec), np.fft.rfft(r)) < 1e-12
    back = dfft.irfft(spec, n=29)
    assert back.data.sharding.spec == P("d")
    assert _rel(np.asarray(back), r) < 1e-12
    traced = jax.jit(lambda v: dfft.irfft(dfft.rfft(v), n=29))(xr)
    assert _rel(np.asarray(traced), r) < 1e-12


@pytest.mark.x64
def test_batched_axis_over_a_2d_mesh():
    a, x = _x(11, (2, 4), ("x", "y"), batch=6)
    y = dfft.fft(x, axis=1)
    assert y.layout == x.layout
    assert _rel(np.asarray(y), np.fft.fft(a, axis=1)) < 1e-12


def test_eager_program_has_four_all_to_alls_and_no_gather():
    _, x = _x(13)
    request = Request((0,), (13,), "c2c", False)
    plan = split_axis.split_plan(x.layout, request)
    (stage,) = plan.stages
    assert isinstance(stage, BluesteinStage)
    dtype = np.dtype(x.dtype)
    fn = split_axis._compiled(plan, request, dtype, False, "jax")
    tables = (bluestein.host_tables(x.layout.mesh, stage, "backward", dtype),)
    hlo = fn.lower(x.data, tables).compile().as_text()
    assert hlo.count("all-to-all(") == 4 and "all-gather" not in hlo


def test_table_cache_is_bounded():
    info = bluestein.host_tables.cache_info()
    assert info.maxsize is not None and info.maxsize <= 8


def _arrays_beyond_input(fn, x):
    m = jax.jit(fn).lower(x).compile().memory_analysis()
    return (m.temp_size_in_bytes + m.output_size_in_bytes) / m.argument_size_in_bytes


def test_jitted_round_trip_memory_plan_and_collectives():
    """fft then ifft of a prime length in one jitted program: XLA plans about 7 arrays of the
    input beyond it (18 before the columns layout and the small chirp tables; the issue's bound
    is 8), ten all-to-alls (4 per transform + 1 per in-program filter) and no all-gather."""
    a = np.random.default_rng(0).standard_normal(4093).astype(np.complex64)
    x = darray.asarray(a, mesh=mesh_of((8,), ("d",), explicit=True), spec=("d",))
    fn = lambda v: dfft.ifft(dfft.fft(v)).data  # noqa: E731
    assert _arrays_beyond_input(fn, x) <= 7.5
    hlo = jax.jit(fn).lower(x).compile().as_text()
    assert hlo.count("all-to-all(") == 10 and "all-gather" not in hlo
    back = jax.jit(lambda v: dfft.ifft(dfft.fft(v)))(x)
    assert back.layout == x.layout
    assert _rel(np.asarray(back), a.astype(np.complex128)) < 1e-5


@pytest.mark.x64
@pytest.mark.parametrize("n, parts", [(13, 8), (4093, 8), (7, 4), (9, 2), (131, 8)])
def test_in_program_chirp_tables_match_the_host_tables(n, parts):
    """The small exact tables (chirp_grid) reproduce the float64 host chirps and filter."""
    m = bluestein.bluestein_length(n, parts)
    cs = -(-n // parts)
    m1, m2 = bluestein.split_length(m, parts, cs, cs)
    w = m2 // parts
    for r in range(parts):
        got = np.asarray(bluestein._block_chirp(jnp.int32(r), cs, parts, n, -1, np.complex128))
        pos = r * cs + np.arange(cs)
        np.testing.assert_allclose(got, bluestein._chirp_host(pos, n, -1), atol=1e-13)
        grid, far = bluestein.chirp_grid(jnp.int32(r), bluestein.Grid(w, parts, 1, w, m2, m1),
                                         n, 1, np.complex128, mirror=m)
        k = m2 * np.arange(m1)[None, :] + (r * w + np.arange(w))[:, None]
        dist = np.minimum(k, m - k)
        want = bluestein._chirp_host(dist, n, 1)
        got = np.where(k > m - k, np.asarray(grid) * np.asarray(far), np.asarray(grid))
        np.testing.assert_allclose(got, want, atol=1e-12)
