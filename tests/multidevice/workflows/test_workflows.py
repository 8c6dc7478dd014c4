"""Covers: darray/_src/fft/api.py, darray/_src/fft/r2r.py, darray/_src/api/blocks.py
Covers: darray/_src/particles/api.py, darray/_src/api/transforms.py

Five short scientific workflows end to end, against single-device jax.numpy in float64
(issue #28): particle-mesh painting on an uneven grid, a Dirichlet Poisson solve by DST, a
pseudo-spectral Navier-Stokes run under jit + lax.scan, a halo-stencil heat equation with its
gradient, and nested darray.vmap with jacfwd. Each asserts values and layouts.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_layout, mesh_of

import darray
import darray.fft as dfft


@pytest.fixture(scope="module")
def mesh():
    return mesh_of((2, 4), ("x", "y"))


# -- (a) particle-mesh painting on an uneven grid -----------------------------------------------
N_PM = (10, 10, 6)      # axis 1: 10 cells over 4 devices -> blocks 3, 3, 3, 1 (+2 padding)
GHOST = 1


def _paint_block(grid, dx, dy, dz, *, block_info):
    """Cloud-in-cell painting of the particles that start in this block's owned cells.

    The displacement blocks carry padding cells in the short block of an uneven split; they
    are not particles: `BlockInfo.owned_mask(ghosts=False)` (the displacements have no halo)
    drops them, as docs/halo.md's deposit pattern does."""
    d = (dx, dy, dz)
    owned = block_info.owned_mask(ghosts=False)
    cells, fracs = [], []
    for axis, disp in enumerate(d):
        disp = jnp.where(owned, disp, 0.0)   # padding reaches f as NaN: mask by where, not 0 *
        shape = [-1 if a == axis else 1 for a in range(3)]
        q = jnp.arange(disp.shape[axis]).reshape(shape)
        pos = q + GHOST + disp
        cell = jnp.floor(pos)
        cells.append(cell.astype(jnp.int32))
        fracs.append(pos - cell)
    for offset in [(a, b, c) for a in (0, 1) for b in (0, 1) for c in (0, 1)]:
        weight = owned.astype(dx.dtype)
        for f, o in zip(fracs, offset):
            weight = weight * (f if o else 1.0 - f)
        index = tuple(jnp.broadcast_to(c + o, dx.shape) for c, o in zip(cells, offset))
        grid = grid.at[index].add(jnp.broadcast_to(weight, dx.shape))
    return grid


def _paint_reference(d):
    """Global periodic CIC painting in single-device jax.numpy."""
    grid = jnp.zeros(N_PM)
    q = jnp.meshgrid(*[jnp.arange(n) for n in N_PM], indexing="ij")
    pos = [qi + di for qi, di in zip(q, d)]
    cells = [jnp.floor(p).astype(jnp.int32) for p in pos]
    fracs = [p - c for p, c in zip(pos, cells)]
    for offset in [(a, b, c) for a in (0, 1) for b in (0, 1) for c in (0, 1)]:
        weight = 1.0
        for f, o in zip(fracs, offset):
            weight = weight * (f if o else 1.0 - f)
        index = tuple((c + o) % n for c, o, n in zip(cells, offset, N_PM))
        grid = grid.at[index].add(weight)
    return grid


@pytest.mark.x64
def test_particle_mesh_painting_on_an_uneven_grid(mesh):
    rng = np.random.default_rng(10)
    disp = [rng.uniform(-0.9, 0.9, N_PM) for _ in range(3)]  # within the ghost width
    d = [darray.asarray(a, device=mesh, spec=("x", "y")) for a in disp]
    assert d[0].layout.is_padded  # the case the issue found: padding painted as particles

    @jax.jit
    def paint(dx, dy, dz):
        grid = darray.zeros_like(dx).halo(GHOST)
        return darray.map_blocks(_paint_block, grid, dx, dy, dz, block_info=True).halo_reduce()

    rho = paint(*d)
    assert_layout(rho, d[0].layout)
    assert float(darray.sum(rho)) == pytest.approx(np.prod(N_PM), rel=1e-13)
    np.testing.assert_allclose(np.asarray(rho), np.asarray(_paint_reference(disp)), atol=1e-12)
    # the library's own painting, which a scientist would call instead of writing the block
    both = darray.asarray(np.stack(disp, axis=-1), device=mesh, spec=("x", "y"))
    rho_lib = darray.particles.paint(both, scheme="cic")
    assert_layout(rho_lib, d[0].layout)
    np.testing.assert_allclose(np.asarray(rho_lib), np.asarray(rho), atol=1e-12)


# -- (b) Dirichlet Poisson solve by DST-I ---------------------------------------------------------
@pytest.mark.x64
def test_dirichlet_poisson_by_dst(mesh):
    """-lap(u) = f on the interior of a box with u = 0 on its walls (5-point stencil, h = 1):
    the sine series diagonalises the stencil, eigenvalue 2 - 2 cos(pi (k + 1) / (n + 1))."""
    shape = (12, 10)  # axis 1 uneven over 4 devices
    f_host = np.random.default_rng(11).standard_normal(shape)
    f = darray.asarray(f_host, device=mesh, spec=("x", "y"))
    eig = [2 - 2 * np.cos(np.pi * (np.arange(n) + 1) / (n + 1)) for n in shape]
    lam_host = eig[0][:, None] + eig[1][None, :]

    @jax.jit
    def solve(f):
        f_k = dfft.dstn(f, type=1)
        lam = darray.asarray(lam_host, device=f_k.device, spec=f_k.layout.spec)
        return dfft.idstn(f_k / lam, type=1)

    u = solve(f)
    assert_layout(u, f.layout)
    # single-device jax.numpy: the dense 5-point Dirichlet Laplacian, solved directly
    lap_1d = [2 * jnp.eye(n) - jnp.eye(n, k=1) - jnp.eye(n, k=-1) for n in shape]
    a = jnp.kron(lap_1d[0], jnp.eye(shape[1])) + jnp.kron(jnp.eye(shape[0]), lap_1d[1])
    ref = jnp.linalg.solve(a, jnp.asarray(f_host).ravel()).reshape(shape)
    np.testing.assert_allclose(np.asarray(u), np.asarray(ref), rtol=1e-10, atol=1e-12)


# -- (c) pseudo-spectral Navier-Stokes under jit + lax.scan --------------------------------------
N_NS, NU, DT, STEPS = 16, 0.05, 0.02, 4


def _ns_wavenumbers():
    k = np.fft.fftfreq(N_NS, 1.0 / N_NS)
    kx, ky = np.meshgrid(k, k, indexing="ij")
    k2 = kx ** 2 + ky ** 2
    inv_k2 = np.where(k2 > 0, 1.0 / np.where(k2 > 0, k2, 1.0), 0.0)
    return kx, ky, k2, inv_k2


def _ns_step(w, ks, fft, ifft, real):
    """One forward-Euler step of 2-D vorticity: w_t = -u.grad(w) + nu lap(w), psi = w / k^2."""
    kx, ky, k2, inv_k2 = ks
    w_k = fft(w)
    psi_k = w_k * inv_k2
    u = real(ifft(1j * ky * psi_k))
    v = real(ifft(-1j * kx * psi_k))
    w_x = real(ifft(1j * kx * w_k))
    w_y = real(ifft(1j * ky * w_k))
    lap = real(ifft(-k2 * w_k))
    return w + DT * (-(u * w_x + v * w_y) + NU * lap)


@pytest.mark.x64
def test_pseudo_spectral_navier_stokes_in_a_scan(mesh):
    g = np.linspace(0, 2 * np.pi, N_NS, endpoint=False)
    x, y = np.meshgrid(g, g, indexing="ij")
    w0_host = np.sin(x) * np.cos(2 * y) + 0.3 * np.cos(3 * x + y)
    w0 = darray.asarray(w0_host, device=mesh, spec=("x", "y"))
    k_spec = dfft.fftn(w0).layout.spec
    ks = [darray.asarray(k, device=mesh, spec=k_spec) for k in _ns_wavenumbers()]
    real = lambda a: a.real  # noqa: E731

    @jax.jit
    def run(w0, ks):
        def body(w, _):
            w = _ns_step(w, ks, dfft.fftn, dfft.ifftn, real)
            return w, darray.sum(w * w)
        return jax.lax.scan(body, w0, None, length=STEPS)

    w, enstrophy = run(w0, ks)
    assert_layout(w, w0.layout)
    assert_layout(enstrophy)
    ks_ref = [jnp.asarray(k) for k in _ns_wavenumbers()]
    w_ref, ens_ref = jnp.asarray(w0_host), []
    for _ in range(STEPS):
        w_ref = _ns_step(w_ref, ks_ref, jnp.fft.fftn, jnp.fft.ifftn, real)
        ens_ref.append(jnp.sum(w_ref * w_ref))
    np.testing.assert_allclose(np.asarray(w), np.asarray(w_ref), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(enstrophy), np.asarray(ens_ref), rtol=1e-12)


# -- (d) halo-stencil heat equation and its gradient ---------------------------------------------
ALPHA, HEAT_STEPS = 0.2, 4


def _laplacian_block(b):
    return b[:-2, 1:-1] + b[2:, 1:-1] + b[1:-1, :-2] + b[1:-1, 2:] - 4 * b[1:-1, 1:-1]


@pytest.mark.x64
def test_halo_stencil_heat_equation_and_gradient(mesh):
    shape = (13, 10)  # uneven on both split axes
    rng = np.random.default_rng(12)
    u0_host, w_host = rng.standard_normal(shape), rng.standard_normal(shape)
    u0 = darray.asarray(u0_host, device=mesh, spec=("x", "y"))
    w = darray.asarray(w_host, device=mesh, spec=("x", "y"))

    def evolve(u):
        for _ in range(HEAT_STEPS):
            u = u + ALPHA * darray.map_blocks(_laplacian_block, u.halo(1))
        return u

    def loss(u):
        return darray.sum(evolve(u) * w)

    def evolve_ref(u):
        for _ in range(HEAT_STEPS):
            lap = sum(jnp.roll(u, s, a) for a in (0, 1) for s in (1, -1)) - 4 * u
            u = u + ALPHA * lap
        return u

    u = jax.jit(evolve)(u0)
    value, grad = jax.jit(darray.value_and_grad(loss))(u0)
    assert_layout(u, u0.layout)
    assert_layout(grad, u0.layout)
    ref_value, ref_grad = jax.value_and_grad(lambda a: jnp.sum(evolve_ref(a) * w_host))(
        jnp.asarray(u0_host))
    np.testing.assert_allclose(np.asarray(u), np.asarray(evolve_ref(jnp.asarray(u0_host))),
                               rtol=1e-12, atol=1e-12)
    assert float(value) == pytest.approx(float(ref_value), rel=1e-12)
    np.testing.assert_allclose(np.asarray(grad), np.asarray(ref_grad), rtol=1e-12, atol=1e-12)


# -- (e) nested darray.vmap with jacfwd -----------------------------------------------------------
@pytest.mark.x64
def test_nested_vmap_and_jacfwd():
    """Two batch axes, each split over its own mesh axis (c, x), fields split over y (the
    nested parallelism of jaxDecomp's notebook): an FFT per member, and per member the Jacobian
    of a map with an FFT and a reduction over y. The batch splits are kept, nothing is
    gathered."""
    mesh = mesh_of((2, 2, 2), ("c", "x", "y"))
    host = np.random.default_rng(13).standard_normal((2, 2, 4, 6))
    xs = darray.asarray(host, device=mesh, spec=("c", "x", "y"))

    spectra = jax.jit(darray.vmap(darray.vmap(dfft.fftn)))
    assert "all-gather" not in spectra.lower(xs).compile().as_text()
    k = spectra(xs)
    assert k.layout.split[:2] == (("c",), ("x",))
    assert_layout(k)
    np.testing.assert_allclose(np.asarray(k), np.asarray(jnp.fft.fftn(host, axes=(2, 3))),
                               rtol=1e-12, atol=1e-12)

    def f(a):
        return dfft.fftn(a * a).real + darray.sin(a) * darray.sum(a * a)

    def f_ref(a):
        return jnp.fft.fftn(a * a).real + jnp.sin(a) * jnp.sum(a * a)

    jacobians = jax.jit(darray.vmap(darray.vmap(jax.jacfwd(f))))
    assert "all-gather" not in jacobians.lower(xs).compile().as_text()
    J = jacobians(xs)
    assert J.shape == (2, 2, 4, 6, 4, 6)
    assert J.layout.split[:2] == (("c",), ("x",))
    assert_layout(J)
    ref = jax.vmap(jax.vmap(jax.jacfwd(f_ref)))(jnp.asarray(host))
    np.testing.assert_allclose(np.asarray(J), np.asarray(ref), rtol=1e-12, atol=1e-12)
