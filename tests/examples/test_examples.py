"""Covers: none (the scripts in examples/)

Every script in examples/ runs to completion on 8 virtual CPU devices and passes its own
self-check (a float64 numpy reference or a conserved quantity, see each script's docstring).

Each runs as a subprocess, as a user would run it, so the device count and float64 setting in
examples/_common.py are exercised too; its figure goes to a temporary folder.
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
SCRIPTS = sorted(p.name for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))
# script -> the PNG it writes (the figures the documentation shows).
FIGURES = {name: name.replace(".py", ".png") for name in SCRIPTS}
# script -> the arguments CI runs it with (a smaller problem than the default).
ARGS = {"particle_mesh.py": ["--small"], "catalogue_mesh.py": ["--small"]}


def test_every_example_is_listed():
    assert len(SCRIPTS) >= 6, f"examples/ lost scripts: {SCRIPTS}"


# script -> why it runs in the slow tier only (CI time; tests/multidevice covers the same code)
SLOW = {"particle_mesh.py": "about 90 s even with --small: the default tier's slowest test; "
                            "tests/multidevice/particles/test_particles.py runs its painting and "
                            "forces"}


@pytest.mark.parametrize("script", [pytest.param(s, marks=pytest.mark.slow) if s in SLOW else s
                                    for s in SCRIPTS])
def test_example_runs_and_checks_itself(script, tmp_path):
    env = dict(os.environ)
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
    env["DARRAY_EXAMPLES_OUT"] = str(tmp_path)
    env["JAX_PLATFORMS"] = "cpu"
    proc = subprocess.run([sys.executable, str(EXAMPLES / script), *ARGS.get(script, [])],
                          cwd=EXAMPLES, env=env,
                          capture_output=True, text=True, timeout=600)
    report = f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr[-4000:]}"
    assert proc.returncode == 0, report
    name = script[:-3]
    assert f"{name}: SELF-CHECK PASSED" in proc.stdout, report
    assert "[FAILED]" not in proc.stdout, report
    figure = tmp_path / FIGURES[script]
    assert figure.is_file() and figure.stat().st_size > 5000, f"no figure {figure}\n{report}"
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
