"""Covers: darray/_src/extras/diagnostics.py, darray/_src/base/native.py
Covers: darray/_src/backends/errors.py, darray/_src/backends/registry.py

`python -m darray.info` and what an install without the native part tells its user.

The report's sections are checked against what jax and darray's config say; the self-check is
run for real on the 8 devices (and made to fail once, so a broken check cannot pass); an install
without darray._native is imitated by replacing the loader's answer, as an install built with
no compiler gives it (its reason read from the marker CMakeLists.txt installs).
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import jax
import numpy as np
import pytest

from darray._src.backends import registry
from darray._src.base import config, native
from darray._src.base.errors import BackendUnavailableError
from darray._src.extras import diagnostics

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_report_names_versions_devices_options_and_every_native_backend():
    report = diagnostics.collect()
    assert list(report) == ["versions", "devices and processes", "options in force", "backends",
                            "local FFT", "MPI"]
    assert report["local FFT"]["provider in force"] == "xla (local_fft='xla')"
    assert report["local FFT"]["fftw (optional, GPL)"].startswith(("found: fftw-",
                                                                    "not available: "))
    assert report["versions"]["jax"] == jax.__version__
    assert report["versions"]["numpy"] == np.__version__
    assert report["devices and processes"]["devices"].startswith(f"{jax.device_count()} (")
    options = report["options in force"]
    assert options["jax_enable_x64"] == str(bool(jax.config.read("jax_enable_x64")))
    for name in config.OPTIONS:
        assert options[name].startswith(repr(config.get_config(name)))
    backends = report["backends"]
    for name in diagnostics.NATIVE_BACKENDS:
        assert backends[name].startswith(("compiled in;", "not compiled in;"))
    # 8 devices in one process: the MPI backend (one device per process) cannot run here
    assert "not usable: it needs one JAX device per process" in backends["mpi"]
    text = diagnostics.render(report)
    assert "backends:" in text and "  native module" in text


def test_self_check_passes_on_the_devices_and_fails_on_a_wrong_fft(monkeypatch):
    rows = diagnostics.self_check()
    assert [name for name, _, _ in rows] == ["rfftn vs numpy", "irfftn(rfftn(x)) == x",
                                            "halo(1) stencil vs numpy"]
    assert all(ok for _, ok, _ in rows), rows
    assert all("over 8 devices" in detail for _, _, detail in rows)

    right = diagnostics.fft_api.rfftn
    monkeypatch.setattr(diagnostics.fft_api, "rfftn", lambda x: right(x) * 1.001)
    wrong = {name: ok for name, ok, _ in diagnostics.self_check()}
    assert wrong["rfftn vs numpy"] is False


def test_command_line_prints_the_report_and_the_check():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8",
               JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-m", "darray.info", "--check"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    for heading in ("versions:", "devices and processes:", "options in force:", "backends:",
                    "MPI:", "check:"):
        assert heading in out.stdout
    assert out.stdout.count("  ok   ") == 3, out.stdout


def _without_native(monkeypatch, reason):
    monkeypatch.setattr(native, "_load", lambda: (None, reason))


def test_missing_native_module_says_why_and_how_to_rebuild(monkeypatch):
    reason = ("darray was installed without its native part: no working C++ compiler was "
              "found at install time (CXX='/bin/false')")
    _without_native(monkeypatch, reason)
    with pytest.raises(BackendUnavailableError, match="no working C.. compiler") as err:
        native.require()
    assert "reinstall darray with a C++17 compiler" in str(err.value)
    assert isinstance(err.value, ImportError)  # `except ImportError` code keeps working

    with pytest.raises(BackendUnavailableError) as err:
        registry.FFT_EXECUTORS.select("mpi")
    message = str(err.value)
    assert "backend='mpi'" in message and "no working C++ compiler" in message
    assert "reinstall darray with a C++17 compiler" in message
    assert message.index("reinstall") < message.index("'darray[mpi]'")  # the rebuild first

    backends = diagnostics.collect()["backends"]
    assert backends["native module"].startswith("not built: darray was installed without")
    assert backends["mpi"].startswith("not compiled in; not usable: darray was installed")
    fftw = diagnostics.collect()["local FFT"]["fftw (optional, GPL)"]
    assert fftw.startswith("not available: the FFTW provider runs in darray's native module"), fftw


def test_skip_marker_on_sys_path_is_the_reason(tmp_path, monkeypatch):
    (tmp_path / "darray").mkdir()
    (tmp_path / "darray" / "_native_skipped.txt").write_text("DARRAY_NATIVE=0 was set\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path)] + sys.path)
    assert native.not_built_reason() == "DARRAY_NATIVE=0 was set"
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(tmp_path)])
    assert native.not_built_reason() is None  # this test run's darray has its native part
