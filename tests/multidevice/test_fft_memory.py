"""XLA's memory plan of the distributed FFT programs (issue #21), read from
``jax.jit(f).lower(x).compile().memory_analysis()``.

What is counted: (temp_size_in_bytes + output_size_in_bytes) / argument_size_in_bytes, i.e. how
many arrays of the input's size the program allocates beyond its input, per device.

The bounds pinned here are the values measured on both jax lines (0.10.2, 0.12) at 64^3, with a
little margin, per program; they are not all the issue's 3.0 target. Measured maxima over the
slab, pencil and merged plans: fftn 3.00, dctn and idctn 3.03 (4.03 before r2r_local kept the
post-FFT arrays real and its reorders fusible), dctn type 1 4.94 (one complex (N-1)-point FFT
for even N: two real FFTs plan 3.98 but run 2-3x slower at prime N-1; 4.97 with the 2(N-1)
extension), rfftn 3.75, irfftn 3.85, ifftn 3.88 (XLA's heap packing of the all-to-all's eight
send and receive pieces leaves up to one array unused). A regression that adds a full extra
copy (e.g. an optimization_barrier before every exchange, or a complex gather of a DCT's
spectrum) moves a program above its bound.
"""
import jax
import numpy as np
import pytest

import darray
import darray.fft as dfft

N = 64
# arrays beyond the input (temp + output over argument), measured max + margin
BOUNDS = {"fftn": 3.05, "ifftn": 3.95, "rfftn": 3.8, "irfftn": 3.9, "dctn": 3.1, "idctn": 3.1,
          "dctn type 1": 5.0}


def _arrays_beyond_input(fn, x):
    m = jax.jit(fn).lower(x).compile().memory_analysis()
    return (m.temp_size_in_bytes + m.output_size_in_bytes) / m.argument_size_in_bytes


@pytest.mark.parametrize("plan", ["slab", "pencil", "merged"])
def test_every_program_plans_at_most_the_pinned_arrays(plan):
    mesh_shape, names, decomposition = {
        "slab": ((8,), ("d",), "auto"), "pencil": ((2, 4), ("x", "y"), "pencil"),
        "merged": ((2, 4), ("x", "y"), "auto")}[plan]
    mesh = jax.make_mesh(mesh_shape, names)
    host = np.random.default_rng(0).standard_normal((N, N, N)).astype(np.float32)
    xr = darray.asarray(host, mesh=mesh, spec=names)
    xc = darray.asarray(host.astype(np.complex64), mesh=mesh, spec=names)
    kc = dfft.fftn(xc, decomposition=decomposition)
    kr = dfft.rfftn(xr, decomposition=decomposition)
    programs = {
        "fftn": (lambda v: dfft.fftn(v, decomposition=decomposition), xc),
        "ifftn": (lambda v: dfft.ifftn(v, decomposition=decomposition), kc),
        "rfftn": (lambda v: dfft.rfftn(v, decomposition=decomposition), xr),
        "irfftn": (lambda v: dfft.irfftn(v, s=(N, N, N), decomposition=decomposition), kr),
        "dctn": (lambda v: dfft.dctn(v), xr),
        "idctn": (lambda v: dfft.idctn(v), xr),
        "dctn type 1": (lambda v: dfft.dctn(v, type=1), xr),
    }
    measured = {name: _arrays_beyond_input(fn, x) for name, (fn, x) in programs.items()}
    assert dict(kc.layout.mesh.shape) == dict(mesh.shape) and any(kr.layout.split)
    over = {name: v for name, v in measured.items() if v > BOUNDS[name]}
    assert not over, (over, measured)
