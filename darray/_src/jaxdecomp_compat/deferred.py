"""Partition-time planning: darray.jaxdecomp's operations on traced arrays with no known sharding.

Under `jit`, `grad` or `vmap`, an array on Auto mesh axes carries no sharding in its type, and
often no mesh is in context either. jaxDecomp plans such calls when XLA's partitioner has
assigned the shardings (`custom_partitioning`); darray does the same here, with its own plans:

- one primitive, ``darray_jaxdecomp``, whose parameter is a hashable *op* (an FFT, a pencil
  transpose or a halo exchange, defined beside the eager code in fft.py, transpose.py and
  halo.py). An op says what it computes on one device (`local`), and, given the mesh, the
  global shape and the input's PartitionSpec, which specs it takes and returns and the
  per-device body that computes it there (`partition`: darray's FFT plan run by
  `run_stages`, the same code the eager path runs inside its shard_map);
- the primitive lowers through `custom_partitioning`, so XLA calls `partition` with the
  sharding it chose (GSPMD or Shardy alike); on one device the local function runs;
- every op is linear, so the primitive is linear for JAX's AD: its JVP is the op on the
  tangent, and its transpose is the `Transposed` op, whose per-device body is JAX's
  `linear_transpose` of the forward body (all-to-alls, ppermutes and FFTs transpose
  exactly) and whose specs are the forward ones swapped. jacfwd, jacrev, grad and vjp of any
  order follow;
- vmap moves the batch axis to the front: every op takes leading batch axes and keeps their
  sharding (a batch sharded over a third mesh axis stays sharded).

Arrays whose sharding is known at trace time (concrete arrays, Explicit mesh axes) keep the
eager path, which also handles uneven splits (padded blocks). The op's partition does too:
XLA's blocks of an uneven split are darray's padded blocks (the padding at the end).
"""
from __future__ import annotations

import dataclasses
import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental.custom_partitioning import custom_partitioning
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir
from jax.sharding import NamedSharding, PartitionSpec

from darray._src.backends.jax.transpose import all_to_all_move
from darray._src.base import compat
from darray._src.jaxdecomp_compat.placement import effective_entries

darray_jaxdecomp_p = Primitive("darray_jaxdecomp")


def apply(x, op):
    """`op` of `x`, planned when XLA partitions the program."""
    return darray_jaxdecomp_p.bind(x, op=op)


# -- what an op provides (fft.py, transpose.py, halo.py) -------------------------------------
#   op.local(x)                       -> the result on one device (jnp code, any batch axes)
#   op.partition(mesh, shape, spec)   -> (in_spec, out_spec, body): specs as tuples of length
#                                        len(shape); body(block) -> the output block
#   op.spec_map(mesh, ndim)           -> for each output axis, the input axis whose sharding it
#                                        takes for the natural input (Shardy's rule)
# They are frozen dataclasses: hashable, so they can be primitive parameters.


@dataclasses.dataclass(frozen=True)
class Transposed:
    """The linear transpose of `op`, whose input had spatial shape `in_shape3` and dtype
    `in_dtype` (the cotangent of the output -> the cotangent of the input)."""
    op: object
    in_shape3: tuple
    in_dtype: str

    def _in_aval(self, batch_shape):
        return jax.ShapeDtypeStruct(tuple(batch_shape) + tuple(self.in_shape3),
                                    np.dtype(self.in_dtype))

    def local(self, ct):
        batch = ct.ndim - 3
        aval = self._in_aval(ct.shape[:batch])
        return jax.linear_transpose(self.op.local, aval)(ct)[0]

    def partition(self, mesh, shape, spec):
        batch = len(shape) - 3
        in_shape = tuple(shape[:batch]) + tuple(self.in_shape3)
        chosen = None
        for forward_spec in _spec_guesses(spec, batch):
            try:
                f_in, f_out, body = _partition(self.op, mesh, in_shape, forward_spec)
            except ValueError:
                continue
            if chosen is None:
                chosen = (f_in, f_out, body)
            if effective_entries(mesh, f_out) == effective_entries(mesh, spec):
                chosen = (f_in, f_out, body)
                break
        if chosen is None:
            raise ValueError(f"darray.jaxdecomp: no partition of the transpose of {self.op!r} "
                             f"for a cotangent sharded {PartitionSpec(*spec)}")
        f_in, f_out, body = chosen
        block = _block_shape(mesh, in_shape, f_in)
        aval = jax.ShapeDtypeStruct(block, np.dtype(self.in_dtype))

        def transposed_body(ct_block):
            return jax.linear_transpose(body, aval)(ct_block)[0]
        return f_out, f_in, transposed_body

    def spec_map(self, mesh, ndim):
        forward = self.op.spec_map(mesh, ndim)
        return tuple(forward.index(a) for a in range(ndim))


def _spec_guesses(spec, batch):
    """Forward input specs to try for a cotangent sharded `spec`: its spatial entries in every
    order (the forward ops permute specs), the batch entries as they are."""
    spatial = tuple(spec[batch:])
    seen = []
    for perm in itertools.permutations(range(3)):
        guess = tuple(spec[:batch]) + tuple(spatial[p] for p in perm)
        if guess not in seen:
            seen.append(guess)
    return seen


def _names(entry) -> tuple:
    if entry is None:
        return ()
    return (entry,) if isinstance(entry, str) else tuple(entry)


def _block_shape(mesh, shape, spec) -> tuple:
    sizes = dict(mesh.shape)
    out = []
    for n, entry in zip(shape, spec):
        parts = 1
        for name in _names(entry):
            parts *= sizes[name]
        out.append(-(-n // parts))
    return tuple(out)


@functools.lru_cache(maxsize=256)
def _partition(op, mesh, shape, spec):
    in_spec, out_spec, body = op.partition(mesh, shape, spec)
    if not isinstance(op, Transposed):  # (a cotangent's split is its forward output's)
        _check_even(op, mesh, shape, in_spec)
    return tuple(in_spec), tuple(out_spec), body


def _check_even(op, mesh, shape, spec):
    """Refuse an input split unevenly: XLA pads such blocks with unspecified values and XLA:CPU
    miscompiles some FFTs of them (jax 0.10: a RET_CHECK in its FFT thunk under grad), so
    darray does not run them here. jaxDecomp refuses them too."""
    sizes = dict(mesh.shape)
    parts = [int(np.prod([sizes[name] for name in _names(entry)])) for entry in spec]
    if any(n % p for n, p in zip(shape, parts)):
        raise ValueError(
            f"darray.jaxdecomp: an array of shape {tuple(shape)} sharded "
            f"{PartitionSpec(*spec)} on mesh {dict(mesh.shape)} does not split evenly; under "
            f"jax.jit without a known sharding darray.jaxdecomp needs every split axis to divide "
            f"evenly (as jaxDecomp does). Call it outside jit, or use darray.fft on a DistArray, "
            f"which pads uneven blocks")


def _spec_of(sharding, ndim) -> tuple:
    spec = tuple(getattr(sharding, "spec", ()) or ())[:ndim]
    return spec + (None,) * (ndim - len(spec))


# -- the primitive ---------------------------------------------------------------------------
def _abstract_eval(x, *, op):
    if isinstance(op, Transposed):
        batch = len(x.shape) - 3
        return jax.core.ShapedArray(tuple(x.shape[:batch]) + tuple(op.in_shape3),
                                    np.dtype(op.in_dtype))
    out = jax.eval_shape(op.local, jax.ShapeDtypeStruct(x.shape, x.dtype))
    return jax.core.ShapedArray(out.shape, out.dtype)


def _impl(x, *, op):
    return jax.jit(functools.partial(apply, op=op))(x)


def _transpose_rule(ct, x, *, op):
    aval = x.aval
    batch = len(aval.shape) - 3
    if isinstance(op, Transposed):
        back = op.op
    else:
        back = Transposed(op, tuple(aval.shape[batch:]), np.dtype(aval.dtype).name)
    return [apply(ct, back)]


def _batch_rule(args, dims, *, op):
    (x,), (d,) = args, dims
    x = jnp.moveaxis(x, d, 0)
    return apply(x, op), 0


def _local(x, op):
    return op.local(x)


def _infer(op, mesh, arg_shapes, result_shape):
    arg = arg_shapes[0]
    _, out_spec, _ = _partition(op, mesh, tuple(arg.shape), _spec_of(arg.sharding,
                                                                      len(arg.shape)))
    return NamedSharding(mesh, PartitionSpec(*out_spec))


def _partition_rule(op, mesh, arg_shapes, result_shape):
    arg = arg_shapes[0]
    in_spec, out_spec, body = _partition(op, mesh, tuple(arg.shape),
                                         _spec_of(arg.sharding, len(arg.shape)))
    return (mesh, body, NamedSharding(mesh, PartitionSpec(*out_spec)),
            (NamedSharding(mesh, PartitionSpec(*in_spec)),))


def _sharding_rule(op, mesh, operand_types, result_types):
    ndim = len(operand_types[0].shape)
    letters = [f"a{i}" for i in range(ndim)]
    mapping = op.spec_map(mesh, ndim)
    out = [letters[m] for m in mapping]
    return " ".join(letters) + " -> " + " ".join(out)


_partitioned = custom_partitioning(_local, static_argnums=(1,))
_partitioned.def_partition(partition=_partition_rule, infer_sharding_from_operands=_infer,
                           sharding_rule=_sharding_rule)

# The lowering of a custom_partitioning call needs the device assignment; JAX computes it
# only for primitives in this set (jax._src.dispatch on both supported jax lines; jaxDecomp
# registers its primitives the same way).
compat.requires_devices_during_lowering(darray_jaxdecomp_p)
darray_jaxdecomp_p.def_abstract_eval(_abstract_eval)
darray_jaxdecomp_p.def_impl(_impl)
ad.deflinear2(darray_jaxdecomp_p, _transpose_rule)
batching.primitive_batchers[darray_jaxdecomp_p] = _batch_rule
_lower_partitioned = mlir.lower_fun(lambda x, *, op: _partitioned(x, op),
                                    multiple_results=False)


def _lowering(ctx, x, *, op):
    base = op.op if isinstance(op, Transposed) else op
    if getattr(base, "layout_dependent", False) and jax.device_count() > 1 \
            and compat.lowering_device_count(ctx) == 1:
        # A halo exchange is defined by where the blocks end; a program compiled for one
        # device has none, and running it there would be silently wrong.
        raise ValueError(
            f"darray.jaxdecomp: {base.name} in a program compiled for one device of "
            f"{jax.device_count()}: it has no block edges to exchange across. This happens when "
            f"no input of the jitted function lives on the mesh, e.g. the gradient of a "
            f"halo_exchange against a constant cotangent once JAX has pruned the unused "
            f"inputs: pass that constant as an argument placed on the mesh (jax.device_put)")
    return _lower_partitioned(ctx, x, op=op)


mlir.register_lowering(darray_jaxdecomp_p, _lowering)


def moves(mesh, shape, have_spec, want_spec):
    """The all-to-alls that take an array of `shape` sharded `have_spec` to `want_spec`, when
    each mesh-axis group that changes array axis lands on an axis that is unsplit at that
    point: a list of ``(mesh_axes, src, dst, src_len, parts)`` for `all_to_all_move`, or
    None when the change is not such a sequence."""
    have = list(effective_entries(mesh, have_spec))
    want = effective_entries(mesh, want_spec)
    sizes = dict(mesh.shape)
    out = []
    for src in range(len(shape)):
        if have[src] == want[src] or not have[src]:
            continue
        dst = next((d for d in range(len(shape)) if want[d] == have[src] and not have[d]), None)
        if dst is None or want[src]:
            return None
        parts = 1
        for name in have[src]:
            parts *= sizes[name]
        out.append((have[src], src, dst, shape[src], parts))
        have[dst], have[src] = have[src], ()
    return out if tuple(have) == tuple(want) else None


def run_moves(block, planned):
    for names, src, dst, src_len, parts in planned:
        block = all_to_all_move(block, names, src, dst, src_len, parts)
    return block


def natural_map(in_spec, out_spec) -> tuple:
    """For each output axis, the input axis whose spec entry it holds (None entries matched in
    order): the Shardy rule of an op that permutes spec entries."""
    used: set = set()
    mapping = []
    for entry in out_spec:
        for p, candidate in enumerate(in_spec):
            if p not in used and candidate == entry:
                used.add(p)
                mapping.append(p)
                break
        else:
            free = next(p for p in range(len(in_spec)) if p not in used)
            used.add(free)
            mapping.append(free)
    return tuple(mapping)
