"""Covers: darray/_src/backends/registry.py, darray/_src/fft/api.py, darray/_src/fft/mixed.py
Covers: darray/_src/fft/r2r.py, darray/_src/extras/stencils.py

Every route records the backend it runs on (`darray.record_backends`), and a backend that
cannot run a route falls back visibly: the split-axis FFT, padded and mixed transforms, pad,
gradient and halo fills (docs/native.md, "Which backend ran"). The MPI runs of the same routes
are tests/mpi/test_mpi_backend.py::test_routes_beyond_whole_plans_run_on_mpi."""
from __future__ import annotations

import threading

import numpy as np
import pytest
import scipy.fft
from helpers import mesh_of, tol

import darray
from darray.errors import BackendUnavailableError

MESH = mesh_of((8,), ("x",))
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
    np.testing.assert_allclose(np.asarray(got), want, rtol=tol(got.dtype),
                               atol=tol(got.dtype) * max(1.0, np.abs(want).max()))


@pytest.mark.parametrize("route", ["FFT split-axis", "pad"])
def test_a_backend_without_row_exchanges_falls_back_visibly(route):
    run, want = _routes()[route]
    # nccl cannot run on CPU devices: every route falls back to "jax", each saying why
    with darray.config_context(transpose_backend="nccl"), darray.record_backends() as log:
        got = run()
    (sel,) = log
    assert (sel.kind, sel.requested, sel.backend, sel.fell_back) == (route, "nccl", "jax", True)
    assert "fallback from 'nccl'" in repr(sel) and sel.reason, repr(sel)
    np.testing.assert_allclose(np.asarray(got), want, rtol=tol(got.dtype),
                               atol=tol(got.dtype) * max(1.0, np.abs(want).max()))


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


# -- fft_plan shows what the call records (#36 part 4) ------------------------------------------
def _fft_routes():
    """route -> (its plan record under the options in force, the call, numpy's answer)."""
    from darray._src.fft.api import fft_plan
    from darray._src.fft.mixed import transformn_plan
    line = darray.asarray(LINE, mesh=MESH, spec=("x",))
    line64 = darray.asarray(LINE64, mesh=MESH, spec=("x",))
    cube = darray.asarray(CUBE, mesh=MESH, spec=("x", None, None))
    spectrum = darray.fft.rfftn(cube)  # made before the records are read
    kinds = ("fft", "dct2", "dst1")
    return {
        "split-axis four-step": (lambda: fft_plan(line64), lambda: darray.fft.fft(line64),
                                 np.fft.fft(LINE64)),
        "split-axis Bluestein": (lambda: fft_plan(line), lambda: darray.fft.fft(line),
                                 np.fft.fft(LINE)),
        "padded irfftn": (
            lambda: fft_plan(spectrum, kind="c2r", inverse=True, s=CUBE.shape, padding=1.5),
            lambda: darray.fft.irfftn(spectrum, s=CUBE.shape, padding=1.5),
            _fine(CUBE, (24, 15, 12))),
        "transformn": (lambda: transformn_plan(cube, kinds),
                       lambda: darray.fft.transformn(cube, kinds),
                       np.fft.fft(scipy.fft.dst(scipy.fft.dct(CUBE, type=2, axis=1), type=1,
                                                axis=2), axis=0)),
        "fftn": (lambda: fft_plan(cube), lambda: darray.fft.fftn(cube), np.fft.fftn(CUBE)),
    }


def _fine(u, fine):
    """u on the finer grid by zero-padding its full spectrum (the 3/2 rule's prolongation;
    an even axis's Nyquist entry is split evenly between +-n/2), as numpy float64."""
    c = np.fft.fftn(u)
    for ax, m in enumerate(fine):
        n = c.shape[ax]
        c = np.moveaxis(c, ax, 0)
        out = np.zeros((m,) + c.shape[1:], complex)
        out[:(n + 1) // 2] = c[:(n + 1) // 2]
        out[m - n // 2:] = c[n - n // 2:]
        if n % 2 == 0:
            out[n // 2] = out[m - n // 2] = c[n // 2] / 2
        c = np.moveaxis(out, 0, ax)
    return np.fft.ifftn(c).real * (np.prod(fine) / u.size)


LINE64 = rng.standard_normal(64) + 1j * rng.standard_normal(64)  # 64 = 8 x 8: four-step
FFT_ROUTES = ["split-axis four-step", "split-axis Bluestein", "padded irfftn", "transformn",
              "fftn"]


@pytest.mark.parametrize("setting", ["jax", "nccl"])
@pytest.mark.parametrize("route", FFT_ROUTES)
def test_fft_plan_shows_the_backend_the_call_records(route, setting):
    plan_of, run, want = _fft_routes()[route]
    with darray.config_context(transpose_backend=setting):
        record = plan_of()
        with darray.record_backends() as log:
            got = run()
    sel = record.selection
    assert log == [sel], (log, sel)  # what fft_plan shows is what the call ran on
    assert (sel.requested, sel.backend, sel.fell_back) == (setting, "jax", setting != "jax")
    text = record.describe()
    moves = [line for line in text.splitlines() if "all-to-all" in line]
    assert f"backend: {sel!r}" in text and record.n_transposes > 0 and moves
    assert all(line.endswith(" on 'jax'") for line in moves), text
    if sel.fell_back:  # nccl on CPU devices: "jax" runs it, and the plan says why
        assert "fallback from 'nccl'" in text and sel.reason and sel.reason in text
    assert got.layout == record.out_layout and got.data.sharding.spec == got.layout.spec
    np.testing.assert_allclose(np.asarray(got), want, rtol=tol(got.dtype, 1e-10),
                               atol=tol(got.dtype, 1e-10) * max(1.0, np.abs(want).max()))


def test_split_axis_record_names_the_stages():
    from darray._src.fft.api import fft_plan
    from darray._src.plans.split_plan import AxisCut, BluesteinStage
    line = darray.asarray(LINE, mesh=MESH, spec=("x",))
    record = fft_plan(line)
    # 40 over 8 devices has no four-step factors (64 must divide it): Bluestein on 128
    cut = AxisCut(("x",), 8, 5, 40, 40, 5)
    assert record.stages == (BluesteinStage(0, "c2c", False, 40, cut, 16, 8),)
    assert "Bluestein on 128 = 16 x 8, 4 all-to-alls on 'jax'" in record.describe()


def test_mpi_with_eight_devices_per_process_raises_in_fft_plan_too():
    from darray._src.fft.api import fft_plan
    line = darray.asarray(LINE, mesh=MESH, spec=("x",))
    spectrum = darray.fft.rfftn(darray.asarray(CUBE, mesh=MESH, spec=("x", None, None)))
    with darray.config_context(transpose_backend="mpi"):
        for record in (lambda: fft_plan(line), lambda: fft_plan(
                spectrum, kind="c2r", inverse=True, s=CUBE.shape, padding=1.5)):
            with pytest.raises(BackendUnavailableError, match="one JAX device per process"):
                record()


@pytest.fixture
def cudecomp_selectable(monkeypatch):
    """cuDecomp selectable as on a GPU machine (its 'can it run here' check passes), so the
    routes it has no stage for show their fallback on CPU devices."""
    from darray._src.backends.registry import FFT_EXECUTORS, HALO_FILLS
    for registry in (FFT_EXECUTORS, HALO_FILLS):
        registry.names()  # loads the built-in and native entries
        monkeypatch.setitem(registry._usable, "cudecomp", lambda: None)


@pytest.mark.parametrize("route", ["split-axis four-step", "padded irfftn", "transformn",
                                   "pad"])
def test_cudecomp_falls_back_visibly_where_it_has_no_stage(cudecomp_selectable, route):
    if route == "pad":
        sheet = darray.asarray(SHEET, mesh=MESH, spec=("x", None))
        plan_of, run = None, lambda: darray.pad(sheet, ((3, 2), (1, 1)), mode="reflect")
        want, reason = np.pad(SHEET, ((3, 2), (1, 1)), mode="reflect"), "row exchanges"
    else:
        plan_of, run, want = _fft_routes()[route]
        reason = {"split-axis four-step": "row exchanges",
                  "padded irfftn": "padded or mixed per-axis kernels",
                  "transformn": "padded or mixed per-axis kernels"}[route]
    with darray.config_context(transpose_backend="cudecomp"):
        record = plan_of() if plan_of else None
        with darray.record_backends() as log:
            got = run()
    (sel,) = log
    assert (sel.requested, sel.backend) == ("cudecomp", "jax") and reason in sel.reason, sel
    assert "fallback from 'cudecomp'" in repr(sel)
    if record is not None:
        assert record.selection == sel and sel.reason in record.describe()
    assert got.data.sharding.spec == got.layout.spec
    np.testing.assert_allclose(np.asarray(got), want, rtol=tol(got.dtype, 1e-10),
                               atol=tol(got.dtype, 1e-10) * max(1.0, np.abs(want).max()))


class _Counting:
    """JAX's exchanges, counted: which backend a traced program's moves went through."""
    calls: list[str] = []

    def __init__(self, mesh):
        from darray._src.backends.registry import JaxExchanges
        self._jax = JaxExchanges(mesh)

    def all_to_all(self, x, names):
        self.calls.append("all_to_all")
        return self._jax.all_to_all(x, names)

    def permute(self, x, names, pairs, mesh):
        self.calls.append("permute")
        return self._jax.permute(x, names, pairs, mesh)


def test_split_dct_runs_on_the_backend_in_force_and_records_each_call(monkeypatch):
    from darray._src.backends import registry
    monkeypatch.setitem(registry.EXCHANGES, "counting", _Counting)
    registry.FFT_EXECUTORS.register("counting", registry.FFT_EXECUTORS.get("jax"))
    monkeypatch.setattr(_Counting, "calls", [])
    try:
        host = rng.standard_normal(48)
        x = darray.asarray(host, mesh=MESH, spec=("x",))
        with darray.record_backends() as log:
            first, again = darray.fft.dct(x), darray.fft.dct(x)  # the second is cached
        assert [(s.kind, s.backend) for s in log] == [("FFT split-axis", "jax")] * 2
        assert _Counting.calls == []
        with darray.config_context(fft_backend="counting"), darray.record_backends() as log:
            got = darray.fft.dct(x)
        # a program of its own (not the cached "jax" one), whose all-to-alls AND reorder
        # sends went through the selected backend's exchanges
        assert [(s.kind, s.backend) for s in log] == [("FFT split-axis", "counting")]
        assert {"all_to_all", "permute"} <= set(_Counting.calls), _Counting.calls
    finally:
        registry.FFT_EXECUTORS.unregister("counting")
    for y in (first, again, got):
        assert y.layout.split == x.layout.split and y.data.sharding.spec == y.layout.spec
        np.testing.assert_allclose(np.asarray(y), scipy.fft.dct(host), rtol=tol(y.dtype, 1e-10),
                                   atol=tol(y.dtype, 1e-10))
