"""Covers: darray/_src/backends/nccl.py, darray/_src/backends/registry.py

The "nccl" backend without a GPU: the build is there or cleanly absent, the fallbacks and
their reasons, the device groups XLA is asked for, and the copy descriptors (pure data).

The descriptors are run end to end through whole FFT plans on 8 CPU devices in
tests/multidevice/fft/test_nccl_emulated.py; the handlers themselves run in tests/gpu.
"""
import numpy as np
import pytest
from helpers import mesh_of
from jax.sharding import PartitionSpec as P

import darray
from darray._src.backends import nccl
from darray._src.backends.registry import FFT_EXECUTORS
from darray._src.base import native
from darray._src.halo.api import _HALO_BACKENDS
from darray._src.plans.fft_plan import Merge, Transpose

GOOD = {"nccl": True}


def test_build_has_both_targets_or_none():
    info = native.build_info()
    assert isinstance(info["nccl"], bool)
    targets = set(info.get("targets", ()))
    wanted = {nccl.TRANSPOSE_TARGET, nccl.SENDRECV_TARGET}
    assert wanted <= targets if info["nccl"] else not (wanted & targets)


@pytest.mark.parametrize("info, jaxlib, platform, reason", [
    ({"nccl": False}, "0.12.0.1", "gpu", "no NCCL handlers"),
    (GOOD, "0.10.2", "gpu", "jaxlib 0.10.2 has no XLA FFI collectives extension"),
    (GOOD, "0.11.1", "gpu", "arrived in jaxlib 0.11.2"),
    (GOOD, "0.12.0.1", "cpu", "JAX's default backend here is 'cpu'"),
])
def test_environment_reasons(info, jaxlib, platform, reason):
    why = nccl.environment_reason(info, jaxlib, platform)
    assert why is not None and reason in why, why


@pytest.mark.parametrize("jaxlib", ["0.11.2", "0.12.0.1", "0.13.0.dev20270101"])
def test_environment_ok(jaxlib):
    assert nccl.environment_reason(GOOD, jaxlib, "gpu") is None


def _mesh(shape, names):
    return mesh_of(shape, names)


def test_selection_falls_back_to_jax_with_the_reason_here():
    # this CPU machine: either no handlers in the build, or no GPU; never an exception
    x = darray.zeros((8, 8, 8), dtype="complex64", mesh=_mesh((8,), ("d",)), spec=P("d"))
    from darray._src.fft.api import fft_plan
    sel = FFT_EXECUTORS.select("nccl", fft_plan(x))
    assert sel.backend == "jax" and sel.requested == "nccl" and sel.fell_back
    assert sel.reason == nccl.environment_reason()
    assert "fallback from 'nccl'" in repr(sel)
    assert "nccl" not in FFT_EXECUTORS.names()
    assert _HALO_BACKENDS.select("nccl").backend == "jax"


def test_fft_runs_on_jax_when_nccl_is_asked_for_here():
    a = np.arange(512, dtype=np.complex64).reshape(8, 8, 8)
    x = darray.asarray(a, mesh=_mesh((8,), ("d",)), spec=P("d"))
    with darray.config_context(transpose_backend="nccl"):
        y = darray.fft.fftn(x)
    np.testing.assert_allclose(np.asarray(y), np.fft.fftn(a), rtol=1e-5, atol=1e-2)
    assert y.layout.split == ((), ("d",), ())


def test_plan_reason_names_a_non_gpu_mesh():
    x = darray.zeros((8, 8, 8), dtype="complex64", mesh=_mesh((8,), ("d",)), spec=P("d"))
    from darray._src.fft.api import fft_plan
    assert "'cpu' devices, not GPUs" in nccl.plan_reason(fft_plan(x))


def test_groups_are_flattened_ids_per_mesh_axis():
    mesh = _mesh((2, 4), ("x", "y"))
    assert nccl.groups(mesh, "x") == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert nccl.groups(mesh, ("y",)) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert nccl.groups(mesh, ("y", "x")) == [list(range(8))]  # one group, ascending
    assert nccl.groups(_mesh((1,), ("s",)), "s") == [[0]]


def _emulate(desc, src, out_size, gather):
    idx = np.indices(desc.dims).reshape(len(desc.dims), -1)
    off = np.asarray(desc.strides) @ idx
    ok = np.ones(off.shape, bool)
    for d, c, lim in desc.checks:
        ok &= idx[d] * desc.dims[c] + idx[c] < lim
    out = np.zeros(out_size, src.dtype)
    if gather:
        out[ok] = src.reshape(-1)[off[ok]]
    else:
        out[off[ok]] = src.reshape(-1)[ok]
    return out


@pytest.mark.parametrize("shape, src, dst, src_len, parts", [
    ((3, 8, 5), 0, 1, 6, 2),      # even dst, src padded 6 of 2*3
    ((4, 7, 6), 2, 1, 11, 2),     # uneven dst (7 over 2: chunk 4, one padded row)
    ((2, 3, 9), 0, 2, 2, 4),      # dst 9 over 4: chunk 3, three padded
])
def test_transpose_descriptors_match_numpy_all_to_all(shape, src, dst, src_len, parts):
    """P simulated blocks: pack each, deliver piece b of block p to block b as piece p,
    unpack; the result equals the numpy all-to-all of darray's transpose semantics."""
    rng = np.random.default_rng(0)
    stage = Transpose(("m",), src, dst, src_len, shape[dst], parts)
    ex = nccl.exchange_for(stage, shape, [0, 1, 2])
    blocks = [rng.standard_normal(shape) for _ in range(parts)]
    sent = [_emulate(ex.pack, b, ex.elements, True).reshape(parts, -1) for b in blocks]
    chunk = -(-shape[dst] // parts)
    for q in range(parts):
        recv = np.stack([sent[p][q] for p in range(parts)])
        got = _emulate(ex.unpack, recv, int(np.prod(ex.out_shape)), False).reshape(ex.out_shape)
        # reference: src concatenated over senders (cut to src_len), dst chunk q
        padded = [np.pad(b, [(0, chunk * parts - shape[dst]) if a == dst else (0, 0)
                             for a in range(3)]) for b in blocks]
        pieces = [np.take(b, range(q * chunk, (q + 1) * chunk), axis=dst) for b in padded]
        ref = np.take(np.concatenate(pieces, axis=src), range(src_len), axis=src)
        np.testing.assert_array_equal(got, ref)


def test_merge_and_scatter_are_one_exchange_each():
    a = Transpose(("x",), 0, 2, 8, 8, 2)
    b = Transpose(("y",), 1, 2, 8, 8, 4)
    ex = nccl.exchange_for(Merge((a, b)), (4, 2, 8), [0, 1, 2])
    assert ex.names == ("x", "y") and ex.parts == 8
    assert ex.pack.dims == (8, 4, 2, 1) and ex.unpack.dims[:2] == (2, 4)
    assert ex.out_shape == (8, 8, 1)
    back = nccl.exchange_for(Merge((a, b)).reversed(), ex.out_shape, [0, 1, 2])
    assert back.pack.dims[:2] == (2, 4) and back.out_shape == (4, 2, 8)
