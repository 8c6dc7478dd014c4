"""Covers: darray/_src/base/memory_budget.py, darray/_src/base/program_cache.py
Covers: darray/_src/base/config.py

The ``max_temp_blocks`` option (issue 49, item 4): with a limit, a program whose temporaries
per device exceed that many blocks is refused before it runs, by name (MemoryBudgetError says
the function, the blocks, the limit and the option); within the limit, and with the default
(None), everything runs as before. Under a user's jax.jit the operations are one program:
`darray.check_memory` measures it."""
from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import mesh_of
from jax.sharding import PartitionSpec

import darray
from darray._src.base import config, memory_budget
from darray._src.engine import apply


def _outer_of_block(b):
    """A block function whose temporary is the outer product of its block: (cells)^2."""
    v = b.reshape(-1)
    return (jnp.outer(v, v) @ v).reshape(b.shape)


def _grid(shape=(64, 61), split=("x", "y")):
    """A (64, 61) float32 grid split on the 2x4 mesh (uneven on its last axis); the tests of
    `_outer_of_block` ask for (64, 64), whose blocks have no padding for it to read."""
    host = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    return host, darray.asarray(host, mesh=mesh_of((2, 4)), spec=split)


def test_a_program_over_the_limit_is_refused_by_name():
    host, x = _grid((64, 64))
    with darray.config_context(max_temp_blocks=4):
        with pytest.raises(darray.MemoryBudgetError) as err:
            darray.map_blocks(_outer_of_block, x)
    text = str(err.value)
    assert text.startswith("darray.map_blocks ")
    blocks = float(re.search(r"plans ([\d.]+) blocks of temporaries per device", text)[1])
    assert blocks > 4
    assert "max_temp_blocks=4" in text and "DARRAY_MAX_TEMP_BLOCKS" in text
    assert isinstance(err.value, MemoryError)
    # without the limit the same call runs and is right
    out = darray.map_blocks(_outer_of_block, x)
    assert out.layout.spec == x.layout.spec
    v = host[:32, :16].reshape(-1).astype(np.float64)  # the first device's block
    np.testing.assert_allclose(np.asarray(out)[:32, :16], (np.outer(v, v) @ v).reshape(32, 16),
                               rtol=1e-4)


@pytest.mark.parametrize("call, name", [(lambda x: x.sum(axis=0), "DistArray.sum"),
                                        (lambda x: darray.sum(x, axis=0), "darray.sum"),
                                        (lambda x: x + 1, "darray.add")])
def test_the_function_is_named_as_the_user_wrote_it(monkeypatch, call, name):
    """The message names the method or function called, not darray's internal program: every
    program measured here is made to look like 10 blocks."""
    _, x = _grid()
    monkeypatch.setattr(memory_budget, "_MEASURED", memory_budget.weakref.WeakKeyDictionary())
    monkeypatch.setattr(memory_budget, "measure", lambda compiled, function, *a, **k:
                        memory_budget.MemoryReport(function, 10.0, 40960, 4096, 0))
    with darray.config_context(max_temp_blocks=9):
        with pytest.raises(darray.MemoryBudgetError,
                           match=rf"^{re.escape(name)} \(darray's program darray\._src\.\S+\) "
                                 rf"plans 10\.00 blocks"):
            call(x)


def test_within_the_limit_runs_and_the_default_is_unchanged():
    host, x = _grid()
    assert darray.get_config("max_temp_blocks") is None and not config.MEMORY_LIMITED[0]
    with darray.config_context(max_temp_blocks=3):
        assert config.MEMORY_LIMITED[0]
        total = darray.sum(x, axis=0)
        y = darray.add(x, 1.0)
    assert not config.MEMORY_LIMITED[0]
    np.testing.assert_allclose(np.asarray(total), host.astype(np.float64).sum(0), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(y), host + 1.0, rtol=1e-6)
    assert total.layout.spec == PartitionSpec("y") and y.layout.spec == x.layout.spec
    # with no limit the cache hands out the plain jit program, not the checking wrapper
    program = apply._physical_fn(jnp.add, ("dist", ("scalar", float)), x.layout)
    assert isinstance(program, jax.stages.Wrapped)
    with darray.config_context(max_temp_blocks=3):
        assert isinstance(apply._physical_fn(jnp.add, ("dist", ("scalar", float)), x.layout),
                          memory_budget._Checked)


def test_an_inner_none_lifts_an_outer_limit_and_set_config_limits_every_call():
    _, x = _grid((64, 64))
    with darray.config_context(max_temp_blocks=2):
        with darray.config_context(max_temp_blocks=None):
            darray.map_blocks(_outer_of_block, x)
    try:
        darray.set_config(max_temp_blocks=2)
        assert config.MEMORY_LIMITED[0]
        with pytest.raises(darray.MemoryBudgetError, match="max_temp_blocks=2"):
            darray.map_blocks(_outer_of_block, x)
    finally:
        darray.set_config(max_temp_blocks=None)
    assert not config.MEMORY_LIMITED[0]


def test_under_jax_jit_the_ops_pass_and_check_memory_measures_the_whole():
    host, x = _grid((64, 64))
    jitted = jax.jit(lambda a: darray.map_blocks(_outer_of_block, a))
    with darray.config_context(max_temp_blocks=2):
        out = jitted(x)  # traced: one program, not measured op by op
    assert out.layout.spec == x.layout.spec
    report = darray.check_memory(lambda a: darray.map_blocks(_outer_of_block, a), x)
    assert report.blocks > 100 and report.limit is None and report.all_gathers == 0
    with pytest.raises(darray.MemoryBudgetError, match=r"<lambda> plans .* max_temp_blocks=3"):
        darray.check_memory(lambda a: darray.map_blocks(_outer_of_block, a), x,
                            max_temp_blocks=3)
    with darray.config_context(max_temp_blocks=3):  # the option is the default limit
        with pytest.raises(darray.MemoryBudgetError):
            darray.check_memory(jitted, x)
    fine = darray.check_memory(darray.sum, x, axis=1, max_temp_blocks=3)
    assert fine.within and fine.blocks <= 3 and fine.function == "sum"
    with pytest.raises(ValueError, match=r"max_temp_blocks=0 is not accepted; use None or an "
                                         r"int >= 1"):
        darray.check_memory(darray.sum, x, max_temp_blocks=0)
    np.testing.assert_allclose(np.asarray(x), host)  # inputs untouched


@pytest.mark.parametrize("bad", [0, -1, True, 2.5, "4"])
def test_bad_limits_are_refused_naming_what_is_accepted(bad):
    with pytest.raises(ValueError, match=rf"max_temp_blocks={re.escape(repr(bad))} is not "
                                         r"accepted; use None or an int >= 1"):
        darray.set_config(max_temp_blocks=bad)
    assert darray.get_config("max_temp_blocks") is None


@pytest.mark.parametrize("text, value", [("4", 4), ("none", None), ("", None)])
def test_the_environment_variable_sets_the_initial_value(monkeypatch, text, value):
    monkeypatch.setenv("DARRAY_MAX_TEMP_BLOCKS", text)
    assert config._initial()["max_temp_blocks"] == value
    monkeypatch.setenv("DARRAY_MAX_TEMP_BLOCKS", "lots")
    with pytest.raises(ValueError, match="environment variable DARRAY_MAX_TEMP_BLOCKS='lots'"):
        config._initial()
