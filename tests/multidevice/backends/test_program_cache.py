"""Covers: darray/_src/base/program_cache.py

Compiled programs are cached under one bounded budget (darray/_src/base/program_cache.py): a
process meeting many shapes keeps its memory mappings bounded instead of growing until XLA
crashes at vm.max_map_count (issue 19 item 3: scipy's fftconvolve test over 604 lengths)."""
import ast
import gc
import os
import pathlib

import numpy as np
import pytest
from helpers import mesh_of

import darray
from darray._src.base import program_cache

MESH = mesh_of((8,), ("x",), explicit=True)
SRC = pathlib.Path(darray.__file__).parent / "_src"


def _maps() -> int:
    with open("/proc/self/maps") as f:
        return sum(1 for _ in f)


def _convolve(a_np, b_np):
    """scipy's fftconvolve(a, b, 'full') on a split axis, in darray.fft."""
    n = a_np.size + b_np.size - 1
    a = darray.asarray(a_np, mesh=MESH, spec=("x",))
    b = darray.asarray(b_np, mesh=MESH, spec=("x",))
    out = darray.fft.ifft(darray.fft.fft(a, n=n) * darray.fft.fft(b, n=n))
    assert out.layout.split == (("x",),) and out.mesh == a.mesh
    return out


def _lengths_loop(lengths):
    rng = np.random.default_rng(0)
    for n in lengths:
        a_np = rng.standard_normal(n) + 1j * rng.standard_normal(n)
        b_np = rng.standard_normal(n) + 1j * rng.standard_normal(n)
        out = _convolve(a_np, b_np)
        np.testing.assert_allclose(np.asarray(out), np.convolve(a_np, b_np), atol=1e-10)


def test_cache_is_lru_and_counts_weights(monkeypatch):
    monkeypatch.setattr(program_cache, "BUDGET", 3 * 7)
    built = []

    @program_cache.program_cache(7)
    def make(k):
        built.append(k)
        return object()

    first = make(1)
    make(2), make(3)
    assert make(1) is first            # a hit refreshes 1
    make(4)                            # over budget: 2, the least recently used, goes
    assert make(1) is first and make(3) is not None
    assert built == [1, 2, 3, 4]
    make(2)
    assert built == [1, 2, 3, 4, 2]
    assert program_cache.held()[1] <= 3 * 7
    assert make.cache_info().currsize <= 3
    make.cache_clear()
    assert make.cache_info().currsize == 0
    with pytest.raises(ValueError, match="weight=0"):
        program_cache.program_cache(0)


@pytest.mark.x64
@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs Linux /proc")
def test_many_fft_lengths_keep_mappings_bounded(monkeypatch):
    # a budget of a few FFT programs: every new length past it evicts, and the evicted
    # executables are freed (the mapping count stops growing)
    monkeypatch.setattr(program_cache, "BUDGET", 4 * program_cache.FFT)
    _lengths_loop([37])  # warm the small programs (slicing, elementwise) of this pattern
    gc.collect()
    before = _maps()
    lengths = [43, 47, 53, 59, 61, 67]  # Bluestein lengths: ~250 mappings each
    _lengths_loop(lengths)
    gc.collect()
    grown = _maps() - before
    programs, weight = program_cache.held()
    assert weight <= program_cache.BUDGET, (programs, weight)
    # kept: at most 4 FFT programs (~250 mappings each) plus small ones; unbounded, the 6
    # lengths x 2 transforms would have added ~12 x 250
    assert grown < 1600, grown


def test_no_jit_program_is_cached_outside_the_budget():
    """Every cached function that builds a jax.jit program uses program_cache (functools
    caches of jitted closures are what grew without bound)."""
    offenders = []
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef):
                continue
            lru = any("lru_cache" in ast.unparse(d) or ast.unparse(d).startswith("functools.cache")
                      for d in node.decorator_list)
            if lru and "jax.jit(" in ast.unparse(node):
                offenders.append(f"{path.relative_to(SRC)}:{node.name}")
    assert not offenders, offenders


@pytest.mark.slow
@pytest.mark.timeout(3600)  # 604 compilations: ~20 min on 2 busy cores
@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs Linux /proc")
def test_scipy_many_sizes_pattern_runs_to_the_end():
    """The full length sweep of scipy's TestFFTConvolve::test_many_sizes in one process."""
    lengths = list(range(1, 100)) + list(range(1000, 1500))
    _lengths_loop(lengths[:40])
    gc.collect()
    plateau = _maps()
    _lengths_loop(lengths[40:])
    gc.collect()
    # the budget (24000 estimated mappings) plus slack; unbounded this grew by ~270 per
    # length and crashed past ~65000
    assert _maps() - plateau < 30000, (plateau, _maps())
    assert program_cache.held()[1] <= program_cache.BUDGET
