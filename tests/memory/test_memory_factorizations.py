"""Covers: darray/_src/linalg/blocked_cholesky.py, darray/_src/linalg/blocked_lu.py
Covers: darray/_src/linalg/panels.py

Temporaries of the blocked square factorizations (issue 50, item 5), from XLA's own plan
(`memory_analysis`), on uneven square matrices split over meshes 8, 2x4 and 4x2: cholesky,
det, slogdet, inv and solve stay within issue 50's 6 blocks per device (measured at n = 203:
cholesky, det, slogdet 4.9-5.2; inv and solve 5.3-5.4, 7.2-7.3 before their substitutions
left the factorization's loop), and no program holds an all-gather. The gathering path they
replace planned 8 to 16 blocks.
"""
import jax
import numpy as np
import pytest
from helpers import assert_layout, mesh_of

import darray

la = darray.linalg

N = 403
LAYOUTS = [((8,), ("x", None)), ((2, 4), ("x", "y")), ((4, 2), ("x", "y"))]
BOUND = {"cholesky": 6.0, "det": 6.0, "slogdet": 6.0, "inv": 6.0, "solve": 6.0}


def blocks_and_gathers(fn, *args):
    compiled = jax.jit(fn).lower(*args).compile()
    m = compiled.memory_analysis()
    block = max(m.argument_size_in_bytes, m.output_size_in_bytes)
    return m.temp_size_in_bytes / block, compiled.as_text().count("all-gather")


# the 2x4 layout in the default tier; meshes 8 and 4x2 in the slow tier (each program
# compiles for 10-16 s on two shared cores)
@pytest.mark.parametrize("where", [pytest.param(LAYOUTS[0], marks=pytest.mark.slow), LAYOUTS[1],
                                   pytest.param(LAYOUTS[2], marks=pytest.mark.slow)],
                         ids=["8", "2x4", "4x2"])
@pytest.mark.parametrize("name", sorted(BOUND))
@pytest.mark.x64
def test_temporaries_and_no_all_gather(where, name):
    mesh = mesh_of(where[0])
    a = np.eye(N) * 2.0
    x = darray.asarray(a, mesh=mesh, spec=where[1])
    b = darray.asarray(np.ones((N, N)), mesh=mesh, spec=where[1])
    fn = {"cholesky": lambda v: la.cholesky(v), "det": la.det,
          "slogdet": lambda v: la.slogdet(v)[1], "inv": la.inv,
          "solve": lambda v: la.solve(v, b)}[name]
    blocks, gathers = blocks_and_gathers(fn, x)
    assert gathers == 0
    assert blocks <= BOUND[name], blocks
    # the result is right too (the program measured is the one that runs)
    out = fn(x)
    ref = {"cholesky": np.linalg.cholesky(a), "det": np.linalg.det(a),
           "slogdet": np.linalg.slogdet(a)[1], "inv": np.linalg.inv(a),
           "solve": np.linalg.solve(a, np.ones((N, N)))}[name]
    np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-12)


@pytest.mark.parametrize("name", ["cholesky", "inv"])
def test_unrolled_panel_steps_stay_within_bound_in_float32(name):
    """The factorizations' panel steps are unrolled; jax 0.12's XLA overlapped them (cholesky
    17.6-18 blocks, inv 6.1-6.3) until each step ended in an optimization barrier. Float32,
    so that the x64-off configuration (the jax 0.12 leg of CI) measures it too."""
    a = np.eye(203, dtype=np.float32) * 2
    x = darray.asarray(a, mesh=mesh_of((2, 4)), spec=("x", "y"))
    fn = {"cholesky": la.cholesky, "inv": la.inv}[name]
    blocks, gathers = blocks_and_gathers(fn, x)
    assert gathers == 0
    assert blocks <= BOUND[name], blocks
    assert_layout(fn(x), x.layout)
    ref = {"cholesky": np.sqrt(2.0), "inv": 0.5}[name] * np.eye(203)
    np.testing.assert_allclose(np.asarray(fn(x)), ref, rtol=1e-6)
