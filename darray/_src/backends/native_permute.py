"""A transposing copy on the CPU by darray's native handler (csrc/permute_cpu.cc).

XLA:CPU compiles a transpose that moves the minor axis into a loop that reads one element per
cache line; the handler copies in tiles. Measured at 256^3 complex128 on 2 MPI ranks (one core
each), the two such copies of a jitted fftn + ifftn round trip took 195 ms of 526 ms with XLA's
transpose. The MPI backend (CPU only, one device per process) uses it for the block reorders
of its FFT plans (`fft_exec.run_stages(permute=...)`); permutations that keep the minor axis
minor stay with XLA, which copies whole rows and fuses them with their neighbours.

`permute` is a JAX primitive: linear, so jvp applies it to the tangent and the transpose rule
applies the inverse permutation (grad, linear_transpose); vmap moves the batch axis in front.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend import core as jex_core
from jax.interpreters import ad, batching, mlir

from darray._src.base import native

TARGET = "darray_permute_cpu"
_ITEM_SIZES = (4, 8, 16)  # float32, float64 / complex64, complex128


def _abstract(x, *, perm):
    return x.update(shape=tuple(x.shape[p] for p in perm))


_permute_p = jex_core.Primitive("darray_permute")
_permute_p.def_abstract_eval(_abstract)
_permute_p.def_impl(lambda x, *, perm: jax.jit(
    lambda a: _permute_p.bind(a, perm=perm))(x))
_lower = jax.ffi.ffi_lowering(TARGET)
mlir.register_lowering(
    _permute_p, lambda ctx, x, *, perm: _lower(ctx, x, perm=np.asarray(perm, np.int64)),
    platform="cpu")


def _inverse(perm):
    return tuple(int(i) for i in np.argsort(perm))


ad.deflinear2(_permute_p, lambda ct, x, *, perm: [_permute_p.bind(
    ad.instantiate_zeros(ct), perm=_inverse(perm))])


def _batch(args, dims, *, perm):
    (x,), (bd,) = args, dims
    x = jnp.moveaxis(x, bd, 0)
    return _permute_p.bind(x, perm=(0,) + tuple(p + 1 for p in perm)), 0


batching.primitive_batchers[_permute_p] = _batch


def available() -> bool:
    """True if this build has the handler (every build since it was added has)."""
    return TARGET in native.build_info().get("targets", ())


def moves_minor_axis(perm) -> bool:
    """Whether the permutation changes which axis is minor (the copies XLA does slowly)."""
    return len(perm) > 1 and perm[-1] != len(perm) - 1


def permute(x, perm):
    """``jnp.transpose(x, perm)``, by the native handler where it helps: the minor axis moves,
    the dtype's items are 4, 8 or 16 bytes and the handler is built; XLA's transpose otherwise
    (identical values either way)."""
    perm = tuple(int(p) for p in perm)
    if (not moves_minor_axis(perm) or jnp.dtype(x.dtype).itemsize not in _ITEM_SIZES
            or not available()):
        return jnp.transpose(x, perm)
    native.register_targets("cpu")
    return _permute_p.bind(x, perm=perm)


__all__ = ["available", "moves_minor_axis", "permute"]
