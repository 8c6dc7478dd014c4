"""The JAX-version seams live here, so the rest of darray reads as if there were one JAX.

Two stay where they are used, and say so there (docs/design.md, principle 6): the jaxDecomp
layer reads the context mesh from ``jax._src.mesh`` (jaxdecomp_compat/placement.py), and the
NCCL backend checks for jaxlib >= 0.11.2 (backends/nccl.py).

Supported: jax 0.10.x (Python 3.11) and the newest jax (0.12 on Python 3.12).
"""
from __future__ import annotations

import collections
import contextlib
import functools
import math

import jax
from jax.sharding import NamedSharding, PartitionSpec

AxisType = jax.sharding.AxisType
shard_map = jax.shard_map


def mesh_axis_types(mesh) -> dict[str, object]:
    """Axis name -> AxisType; meshes without types (duck-typed test meshes) count as Auto."""
    types = getattr(mesh, "axis_types", None)
    if types is None:
        return {name: AxisType.Auto for name in mesh.axis_names}
    return dict(zip(mesh.axis_names, types))


def is_explicit(mesh, axes=None) -> bool:
    """True if any of `axes` (default: all mesh axes) is an Explicit axis."""
    types = mesh_axis_types(mesh)
    names = mesh.axis_names if axes is None else axes
    return any(types[a] == AxisType.Explicit for a in names)


def make_auto_mesh(shape, names, devices=None):
    """A mesh whose axes are all Auto (jax.make_mesh defaults to Explicit in current jax)."""
    return jax.make_mesh(tuple(shape), tuple(names), axis_types=(AxisType.Auto,) * len(names),
                         devices=devices)


AUTO_TWINS: dict = {}


def auto_twin(mesh):
    """The same devices and axis names with every axis Auto.

    darray keeps its arrays on Auto meshes: the Layout already carries the sharding that
    Explicit axes would put in the type, and Explicit axes refuse what darray needs (slicing an
    unevenly split axis, eager grad without a mesh context, with_sharding_constraint).
    A with_sharding_constraint onto the twin converts Explicit-typed values inside jit.
    """
    if not is_explicit(mesh):
        return mesh
    twin = AUTO_TWINS.get(mesh)
    if twin is None:
        twin = jax.sharding.Mesh(mesh.devices, mesh.axis_names,
                                 axis_types=(AxisType.Auto,) * len(mesh.axis_names))
        AUTO_TWINS[mesh] = twin
    return twin


def constrain(data, mesh, spec: PartitionSpec):
    """Pin `data` to NamedSharding(mesh, spec), the way the mesh's axis types allow.

    Auto axes take `with_sharding_constraint`; Explicit axes refuse it and need `reshard`
    (measured: without it jacfwd/jacrev of a shard_map fail on Explicit meshes).
    """
    if _UNEVEN_CONSTRAINT_BREAKS:
        spec = _spec_jax_accepts(tuple(getattr(data, "shape", ())), mesh, spec)
    sharding = NamedSharding(mesh, spec)
    if is_explicit(mesh):
        return jax.sharding.reshard(data, sharding)
    return jax.lax.with_sharding_constraint(data, sharding)


# jax >= 0.11 refuses (IndivisibleError at trace time) a constraint that splits an axis of
# length n over p devices when n % p != 0 but gcd(n, p) > 1 (measured on 0.12: 294 over 8
# fails, 13 and 295 over 8 pass; jax 0.10 accepts all). Such an axis is left to the
# partitioner (UNCONSTRAINED) instead: jax 0.10 returns those uneven logical arrays replicated
# anyway, so nothing that worked is lost.
_UNEVEN_CONSTRAINT_BREAKS = tuple(int(p) for p in jax.__version__.split(".")[:2]) >= (0, 11)


def _spec_jax_accepts(shape, mesh, spec: PartitionSpec) -> PartitionSpec:
    entries = tuple(spec)
    if len(entries) > len(shape):
        return spec
    sizes = dict(mesh.shape)
    out, changed = [], False
    for n, entry in zip(shape, entries):
        names = () if entry is None else ((entry,) if isinstance(entry, str) else tuple(entry))
        if entry is PartitionSpec.UNCONSTRAINED:
            names = ()
        parts = 1
        for name in names:
            parts *= sizes.get(name, 1)
        if parts > 1 and n % parts and math.gcd(n, parts) > 1:
            out.append(PartitionSpec.UNCONSTRAINED)
            changed = True
        else:
            out.append(entry)
    return PartitionSpec(*out) if changed else spec


def uncommitted(x):
    """The one-device jax.Array `x` (same buffer, no copy) as an *uncommitted* array: jit and
    jax.numpy move it next to the other operands, as they move `jnp.asarray(1.0)`. jax has no
    public call that uncommits an array; its ArrayImpl constructor takes the flag on both
    supported lines (0.10 and 0.12)."""
    if not x._committed:
        return x
    from jax._src.array import ArrayImpl  # jax-version seam: a private module
    # _skip_checks: the buffer is x's own, already checked against this aval and sharding
    return ArrayImpl(x.aval, x.sharding, [x], committed=False, _skip_checks=True)


def is_tracer(x) -> bool:
    return isinstance(x, jax.core.Tracer)


def is_linearize_tracer(x) -> bool:
    """Whether x is traced by a reverse-mode derivative (jax.grad, vjp, linearize) with no
    forward-mode tracer (jax.jvp, jacfwd) above it; a vmap tracer on top is looked through.
    jax names its tracers privately (both jax lines we support: LinearizeTracer under
    reverse mode, JVPTracer under forward mode); an unknown name answers False, which keeps
    the caller on its plain path."""
    for _ in range(8):
        name = type(x).__name__
        if name == "LinearizeTracer":
            return True
        if name != "BatchTracer":
            return False
        x = getattr(x, "val", None)
    return False


def is_tracing() -> bool:
    """Whether a jax transformation (jit, grad, vmap, ...) is tracing right now. jax has no
    public call for this; its core keeps the trace context (both jax lines we support)."""
    from jax._src import core  # jax-version seam: a private module
    return not core.trace_state_clean()


_IN_FLIGHT: collections.deque = collections.deque()
_IN_FLIGHT_LIMIT = 4


@functools.lru_cache(maxsize=1)
def _needs_throttle() -> bool:
    """jax 0.10 on CPU deadlocks when dozens of programs with collectives are queued
    asynchronously (measured: 50 queued psum programs over 8 virtual devices hang in the
    rendezvous on a 2-core machine, in plain JAX too; jax 0.12 does not)."""
    version = tuple(int(p) for p in jax.__version__.split(".")[:2])
    return version < (0, 11) and jax.default_backend() == "cpu" and jax.device_count() > 1


def bound_in_flight(data):
    """Wait for the oldest eager result when more than a few are queued (see _needs_throttle).
    A no-op under tracing and on unaffected JAX versions."""
    if is_tracer(data) or not isinstance(data, jax.Array) or not _needs_throttle():
        return data
    _IN_FLIGHT.append(data)
    while len(_IN_FLIGHT) > _IN_FLIGHT_LIMIT:
        _IN_FLIGHT.popleft().block_until_ready()
    return data


def forget_in_flight(data) -> None:
    """Wait for `data` and drop it from the in-flight queue of `bound_in_flight`, where it
    would otherwise be one more holder of its buffer (before that buffer is donated). Another
    thread may change the queue meanwhile: then `data` may stay, and is not donated."""
    # identity, never `in` or `remove`: they would compare arrays elementwise
    if not any(queued is data for queued in tuple(_IN_FLIGHT)):
        return
    data.block_until_ready()
    try:
        for i in range(len(_IN_FLIGHT)):
            if _IN_FLIGHT[i] is data:
                del _IN_FLIGHT[i]
                return
    except IndexError:  # another thread took entries out meanwhile
        pass


# -- compilation counting (tests and benchmarks assert that warm calls do not recompile) -------
# jax reports every XLA compilation as a duration event under this name on both supported
# versions (0.10 and 0.12); the listener cannot be unregistered on 0.10, so one is installed
# once and feeds whichever counters are active.
_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
_ACTIVE_COUNTERS: list = []
_LISTENING = False


class CompileCounter:
    """Counts XLA compilations while active (see `count_compilations`)."""

    def __init__(self):
        self.count = 0


def _on_event(name, *args, **kwargs):
    if name == _COMPILE_EVENT:
        for counter in _ACTIVE_COUNTERS:
            counter.count += 1


@contextlib.contextmanager
def count_compilations():
    """``with count_compilations() as c: ...`` then ``c.count`` is the number of XLA
    compilations (jit cache misses) that happened inside the block."""
    global _LISTENING
    if not _LISTENING:
        jax.monitoring.register_event_duration_secs_listener(_on_event)
        _LISTENING = True
    counter = CompileCounter()
    _ACTIVE_COUNTERS.append(counter)
    try:
        yield counter
    finally:
        _ACTIVE_COUNTERS.remove(counter)


def ppermute_blocks(x, names, pairs, mesh):
    """lax.ppermute whose `pairs` number blocks over the mesh axes `names` in the split's order
    (major first, as the Layout does). ppermute numbers a tuple of axes in the MESH's order
    instead (measured on jax 0.10 and 0.12: over ('y', 'x') of an (x, y) mesh it linearises
    x-major), so the pairs are translated here, once for every caller."""
    names = (names,) if isinstance(names, str) else tuple(names)
    sizes = dict(mesh.shape)
    in_mesh_order = [n for n in mesh.axis_names if n in names]

    def device_number(block):
        digits = {}
        for name in reversed(names):
            block, digits[name] = divmod(block, sizes[name])
        number = 0
        for name in in_mesh_order:
            number = number * sizes[name] + digits[name]
        return number
    # the axes are named in the mesh's order too (jax 0.12 refuses any other order)
    axis = names[0] if len(names) == 1 else tuple(in_mesh_order)
    return jax.lax.ppermute(x, axis, [(device_number(a), device_number(b)) for a, b in pairs])


def refuse_as_jax_value(cls, explain) -> None:
    """Make JAX's type lookup (`jax.core.typeof`, used by `jax.grad` on its loss, `jnp`
    functions and others) raise ``TypeError(explain(x))`` for instances of `cls`, instead of
    JAX's generic "is not a valid JAX type", which formats the value. JAX keeps the error as
    the cause of its own (``raise ... from``), so the traceback shows the fix. Flattened
    pytrees (jit, grad and vmap arguments) never reach this lookup."""
    from jax._src import core as jax_core  # the registry has no public name on jax 0.10-0.12

    def refuse(x):
        raise TypeError(explain(x))
    jax_core.pytype_aval_mappings[cls] = refuse


def vmap_levels(x) -> list:
    """For a value traced by `jax.vmap`: ``(batch_dim, spmd_axis_name, ndim before mapping)``
    per enclosing vmap, innermost first (batch_dim None where that vmap does not map it).
    `jax.vmap` has no public view of its tracers; both jax lines we support keep the mapped
    axis on ``BatchTracer.batch_dim`` and the vmap's ``spmd_axis_name`` (a tuple or None) on
    its trace's ``axis_data``."""
    from jax._src.interpreters import batching  # jax-version seam: a private module
    levels = []
    while isinstance(x, batching.BatchTracer):
        dim = x.batch_dim
        axis_data = getattr(getattr(x, "_trace", None), "axis_data", None)
        spmd = getattr(axis_data, "spmd_name", None)
        x = x.val
        levels.append((dim if isinstance(dim, int) else None,
                       None if spmd is None else tuple(spmd), len(getattr(x, "shape", ()))))
    return levels


def explain_structure_mismatch(explain) -> None:
    """Add darray's fix to JAX's error when a loop body returns its carry (lax.scan,
    while_loop, fori_loop), or cond/switch branches return outputs, with other pytree metadata.

    JAX checks carries and branch outputs in private functions and raises a TypeError that
    names the differing metadata (here, two Layouts) but not how to make them agree. Each check
    is wrapped: when it raises, ``explain(kind, names, pytree_a, pytree_b)`` (pytrees of avals,
    unflattened; names: the two things compared) may return text, added to JAX's message (the
    original stays the cause). Only the error path changes. A jax without these functions keeps
    its own message (both lines we support have them: jax 0.10 and 0.12)."""
    from jax._src.lax.control_flow import conditionals, loops  # jax-version seam: a private module

    def carry_check(check):
        @functools.wraps(check)
        def checked(name, body_fun, in_carry, out_carry):
            try:
                return check(name, body_fun, in_carry, out_carry)
            except TypeError as err:
                _reraise(err, "carry", (f"{name} input", f"{name} output"), in_carry, out_carry)
                raise
        return checked

    def branch_check(check):
        @functools.wraps(check)
        def checked(api_name, name1, name2, f1, f2, out_avals1, out_avals2):
            try:
                return check(api_name, name1, name2, f1, f2, out_avals1, out_avals2)
            except TypeError as err:
                _reraise(err, "branch", (name1, name2), out_avals1, out_avals2)
                raise
        return checked

    def _reraise(err, kind, names, first, second):
        try:
            extra = explain(kind, names, first.unflatten(), second.unflatten())
        except Exception:  # never hide JAX's own error behind a failure of ours
            return
        if extra:
            raise TypeError(f"{err}\n\n{extra}") from err

    for module, name, wrap in ((loops, "_check_carry_type", carry_check),
                               (conditionals, "_check_branch_outputs", branch_check)):
        check = getattr(module, name, None)
        if check is not None and not getattr(check, "_darray_wrapped", False):
            wrapped = wrap(check)
            wrapped._darray_wrapped = True
            setattr(module, name, wrapped)


def requires_devices_during_lowering(primitive) -> None:
    """Mark `primitive` as needing the device assignment when it is lowered: a primitive that
    lowers through `custom_partitioning` does (it asks the partitioner for its shardings).
    jax has no public call for this; jax._src.dispatch keeps the set on jax 0.10 and 0.12."""
    from jax._src import dispatch  # jax-version seam: a private module
    dispatch.prim_requires_devices_during_lowering.add(primitive)


def lowering_device_count(ctx) -> int | None:
    """How many devices the program being lowered runs on (None when JAX does not say): the
    device assignment of its sharding context (jax._src.sharding_impls on jax 0.10 and 0.12)."""
    from jax._src import sharding_impls  # jax-version seam: a private module
    context = ctx.module_context.axis_context
    if isinstance(context, sharding_impls.ShardingContext):
        devices = context.device_assignment
        return None if devices is None else len(devices)
    if isinstance(context, sharding_impls.SPMDAxisContext):
        return context.mesh.size
    return None
