"""Every route records the backend it runs on (`darray.record_backends`), and a backend that
cannot run a route falls back visibly: the split-axis FFT, padded and mixed transforms, pad,
gradient and halo fills (docs/native.md, "Which backend ran"). The MPI runs of the same routes
are tests/mpi/test_mpi_backend.py::test_routes_beyond_whole_plans_run_on_mpi."""
from __future__ import annotations

import threading

import jax
import numpy as np
import pytest
import scipy.fft

import darray
from darray.errors import BackendUnavailableError

MESH = jax.make_mesh((8,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
rng = np.random.default_rng(3)
LINE = rng.standard_normal(40) + 1j * rng.standard_normal(40)
CUBE = rng.standard_normal((16, 10, 8))
SHEET = rng.standard_normal((21, 6))


def _routes():
    line = darray.asarray(LINE, mesh=MESH, spec=("x",))
    cube = darray.asarray(CUBE, mesh=MESH, spec=("x", None, None))
    sheet = darray.asarray(SHEET, mesh=MESH, spec=("x", None))
    return {
        "FFT split-axis": (lambda: darray.fft.fft(line), np.fft.fft(LINE)),
        "FFT": (lambda: darray.fft.transformn(cube, ("fft", "dct2", "dst1")),
                np.fft.fft(scipy.fft.dst(scipy.fft.dct(CUBE, type=2, axis=1), type=1, axis=2),
                           axis=0)),
        "pad": (lambda: darray.pad(sheet, ((3, 2), (1, 1)), mode="reflect"),
                np.pad(SHEET, ((3, 2), (1, 1)), mode="reflect")),
        "halo": (lambda: darray.gradient(sheet, axis=0), np.gradient(SHEET, axis=0)),
    }


@pytest.mark.parametrize("route", ["FFT split-axis", "FFT", "pad", "halo"])
def test_each_route_records_jax_by_default(route):
    run, want = _routes()[route]
    with darray.record_backends() as log:
        got = run()
    assert [(s.kind, s.requested, s.backend, s.fell_back) for s in log] == \
        [(route, "jax", "jax", False)]
    assert got.data.sharding.spec == got.layout.spec
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("route", ["FFT split-axis", "pad"])
def test_a_backend_without_row_exchanges_falls_back_visibly(route):
    run, want = _routes()[route]
    # nccl cannot run on CPU devices: every route falls back to "jax", each saying why
    with darray.config_context(transpose_backend="nccl"), darray.record_backends() as log:
        got = run()
    (sel,) = log
    assert (sel.kind, sel.requested, sel.backend, sel.fell_back) == (route, "nccl", "jax", True)
    assert "fallback from 'nccl'" in repr(sel) and sel.reason, repr(sel)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)


def test_padded_rfftn_records_the_plan_backend():
    cube = darray.asarray(CUBE, mesh=MESH, spec=("x", None, None))
    with darray.record_backends() as log:
        fine = darray.fft.irfftn(darray.fft.rfftn(cube), s=CUBE.shape, padding=1.5)
    assert [(s.kind, s.backend) for s in log] == [("FFT", "jax"), ("FFT", "jax")]
    assert fine.shape == (24, 15, 12) and fine.layout.split == cube.layout.split


def test_mpi_in_a_process_of_eight_devices_raises_not_falls_back():
    line = darray.asarray(LINE, mesh=MESH, spec=("x",))
    with darray.config_context(transpose_backend="mpi"):
        with pytest.raises(BackendUnavailableError, match="one JAX device per process"):
            darray.fft.fft(line)


def test_records_are_per_thread_and_nested():
    run, _ = _routes()["FFT split-axis"]
    seen: dict[str, list] = {}

    def other():
        with darray.record_backends() as log:
            run()
        seen["other"] = log
    with darray.record_backends() as outer:
        with darray.record_backends() as inner:
            thread = threading.Thread(target=other)
            thread.start()
            thread.join()
            run()
    assert len(inner) == 1 and len(outer) == 1 and len(seen["other"]) == 1
    with darray.record_backends() as after:
        pass
    assert after == []
