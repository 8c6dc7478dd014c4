"""Covers: darray/_src/api/transforms.py, darray/_src/fft/api.py

Nested parallelism: a batch axis split over its own mesh axis 'c' while the FFT / stencil axes
are split over 'x', 'y'. Collectives must stay within each 'c' group; nothing is gathered."""
import re

import jax
import numpy as np
import pytest
from helpers import mesh_of

import darray
import darray.fft as dfft

SHAPE = (2, 8, 6, 4)


@pytest.fixture(scope="module")
def mesh():
    return mesh_of((2, 2, 2), ("c", "x", "y"))


@pytest.fixture(scope="module")
def host():
    return np.random.default_rng(3).standard_normal(SHAPE)


def replica_groups(hlo, op="all-to-all"):
    groups = []
    for line in hlo.splitlines():
        if op in line and "replica_groups=" in line:
            text = line.split("replica_groups=")[1]
            for g in re.findall(r"\{([\d,]+)\}", text.split("}}")[0] + "}"):
                groups.append([int(i) for i in g.split(",")])
    return groups


def mesh_axis_groups(hlo, op="all-to-all"):
    """Newer XLA prints groups by mesh axes: replica_groups=mesh['c'=2,'x'=2,'y'=2] {'y'}."""
    found = []
    for line in hlo.splitlines():
        if f" {op}(" in line and "replica_groups=mesh[" in line:
            axes = line.split("replica_groups=mesh[")[1].split("]", 1)[1]
            found.append(set(re.findall(r"'(\w+)'", axes.split("}")[0])))
    return found


def assert_within_batch_groups(hlo, mesh):
    assert "all-gather" not in hlo
    by_axes = mesh_axis_groups(hlo)
    if by_axes:
        assert all("c" not in axes for axes in by_axes), by_axes
        return
    groups = replica_groups(hlo)
    assert groups, "expected all-to-alls"
    c_of = {int(d.id): int(np.argwhere(mesh.devices == d)[0][0]) for d in mesh.devices.flat}
    for group in groups:
        assert len({c_of[i] for i in group}) == 1, f"group {group} crosses batch groups"


@pytest.mark.x64
def test_numpy_style_batch_axes(mesh, host):
    x = darray.asarray(host, mesh=mesh, spec=("c", "x", "y"))
    f = jax.jit(lambda a: dfft.fftn(a, axes=(1, 2, 3)))
    assert_within_batch_groups(f.lower(x).compile().as_text(), mesh)
    y = f(x)
    assert y.layout.split[0] == ("c",)
    assert y.data.sharding.spec == y.layout.spec
    np.testing.assert_allclose(np.asarray(y), np.fft.fftn(host, axes=(1, 2, 3)), atol=1e-10)


@pytest.mark.x64
@pytest.mark.parametrize("how", ["darray.vmap", "jax.vmap+spmd_axis_name"])
def test_vmap_keeps_batch_split(mesh, host, how):
    x = darray.asarray(host, mesh=mesh, spec=("c", "x", "y"))
    if how == "darray.vmap":
        g = darray.vmap(dfft.fftn)
    else:
        g = jax.vmap(dfft.fftn, spmd_axis_name="c")
    hlo = jax.jit(g).lower(x).compile().as_text()
    assert_within_batch_groups(hlo, mesh)
    for fn in (g, jax.jit(g)):
        y = fn(x)
        assert y.shape == SHAPE
        assert y.layout.split[0] == ("c",), y.layout
        assert y.data.sharding.spec == y.layout.spec
        np.testing.assert_allclose(np.asarray(y), np.fft.fftn(host, axes=(1, 2, 3)), atol=1e-10)
    # and the way back lands in x's layout
    back = darray.vmap(dfft.ifftn)(darray.vmap(dfft.fftn)(x))
    assert back.layout == x.layout
    np.testing.assert_allclose(np.asarray(back), host, atol=1e-12)


@pytest.mark.parametrize("wrap", ["plain", "jit inside", "in_axes=1"])
def test_plain_jax_vmap_over_a_split_axis_is_refused(mesh, host, wrap):
    """Without spmd_axis_name JAX runs each shard_map with the mapped axis replicated, so it
    would all-gather the batch: refused on entry, naming darray.vmap (jit inside vmap too)."""
    x = darray.asarray(host, mesh=mesh, spec=("c", "x", "y"))
    f = {"plain": jax.vmap(dfft.fftn), "jit inside": jax.vmap(jax.jit(dfft.fftn)),
         "in_axes=1": jax.vmap(lambda a: a * 2, in_axes=1)}[wrap]
    axis = 1 if wrap == "in_axes=1" else 0
    with pytest.raises(ValueError, match=rf"maps axis {axis} of a DistArray split over mesh axes"
                                         rf".*darray\.vmap\(f\).*spmd_axis_name="):
        f(x)


def test_plain_jax_vmap_with_the_wrong_spmd_axis_name_is_refused(mesh, host):
    x = darray.asarray(host, mesh=mesh, spec=("c", "x", "y"))
    with pytest.raises(ValueError, match=r"with spmd_axis_name=\('x',\)"):
        jax.vmap(lambda a: a, spmd_axis_name="x")(darray.asarray(host, mesh=mesh,
                                                                 spec=("c", None, "y")))
    y = jax.vmap(lambda a: a * 2, spmd_axis_name="c")(x)  # the right name keeps the split
    assert y.layout == x.layout and y.data.sharding.spec == x.layout.spec
    np.testing.assert_allclose(np.asarray(y), 2 * host)


@pytest.mark.x64
def test_plain_jax_vmap_over_an_unsplit_axis_works(mesh, host):
    x = darray.asarray(host, mesh=mesh, spec=(None, "x", "y"))
    hlo = jax.jit(jax.vmap(dfft.fftn)).lower(x).compile().as_text()
    assert "all-gather" not in hlo
    y = jax.vmap(dfft.fftn)(x)
    assert y.data.sharding.spec == y.layout.spec and y.layout.split[0] == ()
    np.testing.assert_allclose(np.asarray(y), np.fft.fftn(host, axes=(1, 2, 3)), atol=1e-10)


@pytest.mark.x64
def test_vmap_stencil_and_grad(mesh, host):
    x = darray.asarray(host, mesh=mesh, spec=("c", "x", "y"))

    def lap(block):
        c = block[1:-1, 1:-1, 1:-1]
        return (block[2:, 1:-1, 1:-1] + block[:-2, 1:-1, 1:-1] + block[1:-1, 2:, 1:-1]
                + block[1:-1, :-2, 1:-1] + block[1:-1, 1:-1, 2:] + block[1:-1, 1:-1, :-2] - 6 * c)

    step = darray.vmap(lambda a: darray.map_blocks(lap, a.halo(1)))
    y = step(x)
    ref = sum(np.roll(host, s, a) for a in (1, 2, 3) for s in (1, -1)) - 6 * host
    assert y.layout.split[0] == ("c",)
    np.testing.assert_allclose(np.asarray(y), ref, atol=1e-12)

    def energy(a):
        out = step(a)
        return darray.sum(out * out)
    g = darray.grad(energy)(x)  # darray.sum gives a 0-d DistArray: darray.grad unwraps it
    assert g.layout == x.layout and g.data.sharding.spec == x.layout.spec
    # d/dx sum(L x)^2 = 2 L^T L x, and L is symmetric
    lap_ref = lambda v: sum(np.roll(v, s, a) for a in (1, 2, 3) for s in (1, -1)) - 6 * v  # noqa
    np.testing.assert_allclose(np.asarray(g), 2 * lap_ref(lap_ref(host)), atol=1e-9)


def test_vmap_rejects_mixed_batch_splits(mesh, host):
    x = darray.asarray(host, mesh=mesh, spec=("c", "x", "y"))
    z = darray.asarray(host, mesh=mesh, spec=(None, "x", "y"))
    with pytest.raises(ValueError, match="mapped axes of the DistArray arguments are split"):
        darray.vmap(lambda a, b: a + b)(x, z)
