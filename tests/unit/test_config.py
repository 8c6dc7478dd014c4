"""Covers: darray/_src/base/config.py

darray's options: the typed keywords of set_config/config_context follow OPTIONS, jaxDecomp's
and cuDecomp's spellings are accepted in any case, and the options read while tracing make up
the program key (config.program_key) that darray's program cache and JAX's jit caches see."""
from __future__ import annotations

import inspect
import threading
import typing

import jax
import numpy as np
import pytest

import darray
from darray._src.base import config, program_cache


@pytest.mark.parametrize("fn", [config.set_config, config.config_context],
                         ids=["set_config", "config_context"])
def test_typed_keywords_are_the_declared_options(fn):
    """A type checker sees one keyword per option with its declared type: this fails when an
    option is added to OPTIONS without its keyword (or the other way round)."""
    params = list(inspect.signature(fn).parameters.values())
    keywords = [p for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY]
    assert [p.name for p in keywords] == list(config.OPTIONS)
    hints = typing.get_type_hints(fn)
    for p in keywords:
        assert hints[p.name] is config.OPTIONS[p.name].type, p.name
        assert p.default is config._UNSET
    rest = [p for p in params if p.kind is not inspect.Parameter.KEYWORD_ONLY]
    assert [(p.name, p.kind) for p in rest] == [("unknown", inspect.Parameter.VAR_KEYWORD)]
    assert hints["unknown"] is typing.Never  # a type checker flags an unknown option
    assert darray.set_config is config.set_config
    assert darray.config_context is config.config_context


def test_untyped_calls_keep_their_checks():
    with pytest.raises(ValueError, match=r"unknown darray config option 'speed'; known options"):
        darray.set_config(speed=3)
    with pytest.raises(ValueError, match=r"unknown darray config option 'speed'"):
        with darray.config_context(mismatch="raise", speed=3):
            pass
    with pytest.raises(ValueError, match=r"mismatch=None is not accepted"):
        darray.set_config(mismatch=None)
    assert darray.get_config("mismatch") == "redistribute"  # failed calls change nothing
    darray.set_config()  # nothing named: nothing changes
    assert darray.get_config("mismatch") == "redistribute"


@pytest.mark.parametrize("name, given, stored", [
    ("transpose_backend", "NCCL", "nccl"), ("transpose_backend", "MPI", "mpi"),
    ("transpose_backend", "cuDecomp", "cudecomp"), ("transpose_backend", "JAX", "jax"),
    ("fft_backend", "Mpi", "mpi"), ("halo_backend", "NCCL", "nccl"),
    ("fft_backend", "my_Backend", "my_Backend"),  # a registered name keeps its spelling
    ("cudecomp_transpose_comm", "nccl_pl", "NCCL_PL"),
    ("cudecomp_transpose_comm", "TRANSPOSE_COMM_MPI_A2A", "MPI_A2A"),  # jaxDecomp's constant
    ("cudecomp_transpose_comm", "CUDECOMP_TRANSPOSE_COMM_MPI_P2P", "MPI_P2P"),  # cuDecomp's
    ("cudecomp_halo_comm", "mpi", "MPI"), ("cudecomp_halo_comm", "HALO_COMM_NCCL", "NCCL"),
])
def test_backend_spellings_in_any_case(name, given, stored):
    with darray.config_context(**{name: given}):
        assert darray.get_config(name) == stored
    assert darray.get_config(name) == config.OPTIONS[name].default


@pytest.mark.parametrize("name, bad", [
    ("transpose_backend", "gloo"), ("transpose_backend", 4), ("cudecomp_halo_comm", "MPI_A2A"),
    ("cudecomp_transpose_comm", "HALO_COMM_MPI"), ("fft_backend", "not a name"),
])
def test_bad_spellings_still_raise_naming_what_is_accepted(name, bad):
    opt = config.OPTIONS[name]
    with pytest.raises(ValueError) as err:
        darray.set_config(**{name: bad})
    assert f"{name}={bad!r} is not accepted" in str(err.value)
    assert opt.accepted in str(err.value)
    assert darray.get_config(name) == opt.default


def test_program_key_is_the_traced_options():
    traced = [name for name, opt in config.OPTIONS.items() if opt.traced]
    # Every option darray has today but one is read while tracing (backends chosen in fft/halo
    # programs, cuDecomp comms in cudecomp.grid, mismatch in elementwise functions);
    # max_temp_blocks is read when a compiled program is about to run, never while tracing.
    assert traced == [name for name in config.OPTIONS if name != "max_temp_blocks"]
    key = config.program_key()
    assert dict(key) == {name: darray.get_config(name) for name in traced}
    with darray.config_context(cudecomp_transpose_comm="mpi_a2a"):
        inside = config.program_key()
        assert dict(inside)["cudecomp_transpose_comm"] == "MPI_A2A"
    assert config.program_key() == key and inside != key


def test_an_option_not_traced_stays_out_of_the_key(monkeypatch):
    quiet = config.Option("quiet", bool, False, "a test option read only eagerly",
                          lambda v: True, "True or False", traced=False)
    monkeypatch.setitem(config.OPTIONS, "quiet", quiet)
    monkeypatch.setitem(config._VALUES, "quiet", False)
    key = config.program_key()
    config._store({"quiet": True})
    assert darray.get_config("quiet") is True and config.program_key() == key


def test_program_cache_key_includes_the_traced_options():
    built = []

    @program_cache.program_cache(program_cache.SMALL)
    def build(n):
        built.append((n, darray.get_config("transpose_backend")))
        return object()

    try:
        first = build(1)
        assert build(1) is first
        with darray.config_context(transpose_backend="MPI"):
            other = build(1)
            assert build(1) is other and other is not first
        assert build(1) is first  # back to the first key: the first program
        assert built == [(1, "jax"), (1, "mpi")]
        assert build.cache_info().hits == 3 and build.cache_info().misses == 2
    finally:
        build.cache_clear()


def test_config_context_is_thread_local():
    """Two threads inside config_context blocks at once each see their own values (#36.5):
    get_config, the program key, darray's placement and a jax.jit function's trace."""
    traced = jax.jit(lambda x: x + (1 if darray.get_config("mismatch") == "raise" else 2))
    barrier = threading.Barrier(2, timeout=60)
    seen: dict = {}

    def run(name, options):
        try:
            with darray.config_context(**options):
                barrier.wait()  # both blocks are open now
                x = darray.asarray(np.arange(64.0))
                seen[name] = (darray.get_config("mismatch"),
                              darray.get_config("small_array_cells"),
                              dict(config.program_key()), x.mesh.size,
                              int(traced(np.int32(0))))
                barrier.wait()  # neither block closes before the other has read
        except BaseException as err:  # noqa: BLE001 - reported below
            seen[name] = err
            barrier.abort()

    before = (darray.get_config("mismatch"), config.program_key())
    threads = [threading.Thread(target=run, args=("a", dict(mismatch="raise",
                                                             small_array_cells=10**6))),
               threading.Thread(target=run, args=("b", dict(mismatch="redistribute",
                                                             small_array_cells=0)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    a, b = seen["a"], seen["b"]
    assert not isinstance(a, BaseException), a
    assert not isinstance(b, BaseException), b
    assert a[:2] == ("raise", 10**6) and b[:2] == ("redistribute", 0)
    assert a[2]["mismatch"] == "raise" and b[2]["mismatch"] == "redistribute"
    assert a[3] == 1 and b[3] == jax.device_count()  # small array on one device, or split
    assert (a[4], b[4]) == (1, 2)
    # the main thread never saw either block
    assert (darray.get_config("mismatch"), config.program_key()) == before


def test_set_config_reaches_every_thread_outside_its_blocks():
    old = darray.get_config("mismatch")
    seen = []
    try:
        darray.set_config(mismatch="raise")
        t = threading.Thread(target=lambda: seen.append(darray.get_config("mismatch")))
        t.start()
        t.join()
        with darray.config_context(mismatch="redistribute"):
            darray.set_config(mismatch="raise")  # process-wide; this block still overrides
            assert darray.get_config("mismatch") == "redistribute"
        assert darray.get_config("mismatch") == "raise"
    finally:
        darray.set_config(mismatch=old)
    assert seen == ["raise"]
