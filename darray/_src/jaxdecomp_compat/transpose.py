"""jaxDecomp's pencil transposes: transposeXtoY and the five others.

With transpose_axis_contiguous (jaxDecomp's default), X->Y, Y->Z and Z->X rotate the global
axes by (2, 0, 1), their reverses by (1, 2, 0), and every one swaps the specs of the first two
axes (values and specs recorded from jaxDecomp 0.3.1). darray permutes the axes (a local
transpose, the split travelling with its axis) and redistributes to that spec in one
all-to-all.
"""
from __future__ import annotations

import dataclasses

from darray._src.api.manipulation import permute_dims
from darray._src.jaxdecomp_compat import deferred, placement, specs
from darray._src.jaxdecomp_compat.config import config, darray_backend

_INPUT_IS_NATURAL = ("x_y", "z_y", "x_z")  # the others take the output of one of these


def _contract(kind, batch):
    def contract(mesh):
        natural = specs.natural_spec(mesh)
        if kind not in _INPUT_IS_NATURAL:
            natural = (natural[1], natural[0], None)
        return (None,) * batch + tuple(natural)
    contract.__doc__ = "as the previous transpose left it"
    return contract


def transpose(x, kind: str, backend="jax"):
    fname = "transpose" + kind[0].upper() + "to" + kind[-1].upper()
    darray_backend(backend, fname)
    x = placement.as_array(x, fname)
    if x.ndim not in (3, 4):
        raise ValueError(f"{fname}: x must be 3-D, or 4-D with a leading batch axis, got shape "
                         f"{tuple(x.shape)}")
    batch = x.ndim - 3
    order = specs.transpose_order(kind)
    perm = tuple(range(batch)) + tuple(batch + i for i in order)
    mesh, spec = placement.locate(x, fname, _contract(kind, batch))
    if mesh is placement.DEFERRED:
        return deferred.apply(x, DeferredTranspose(kind, bool(config.transpose_axis_contiguous)))
    if mesh is None:
        return x.transpose(perm)
    out_spec = tuple(spec[:batch]) + specs.transpose_output_spec(spec[batch:], kind)
    d = permute_dims(placement.wrap(x, mesh, spec), perm)
    return placement.unwrap(d, mesh, out_spec)


@dataclasses.dataclass(frozen=True)
class DeferredTranspose:
    """A transposeXtoY-family call as a partition-time op (deferred.py)."""
    kind: str
    contiguous: bool

    def _perm(self, ndim):
        batch = ndim - 3
        with specs.contiguity(self.contiguous):
            order = specs.transpose_order(self.kind)
        return tuple(range(batch)) + tuple(batch + i for i in order)

    def _out_spec(self, spec):
        batch = len(spec) - 3
        with specs.contiguity(self.contiguous):
            return tuple(spec[:batch]) + tuple(specs.transpose_output_spec(spec[batch:],
                                                                           self.kind))

    def local(self, x):
        return x.transpose(self._perm(x.ndim))

    def partition(self, mesh, shape, spec):
        """One all-to-all per mesh-axis group that changes array axis (jaxDecomp's rules move
        one), then the local transpose; the split travels with its axis."""
        perm = self._perm(len(shape))
        out_spec = self._out_spec(spec)
        want = tuple(out_spec[perm.index(a)] for a in range(len(shape)))  # the input's axes
        planned = deferred.moves(mesh, shape, spec, want)
        if planned is None:
            raise ValueError(f"{self.kind}: no sequence of all-to-alls takes spec {spec} to "
                             f"{out_spec}")

        def body(block):
            return deferred.run_moves(block, planned).transpose(perm)
        return spec, out_spec, body

    def spec_map(self, mesh, ndim):
        natural = placement.padded(_contract(self.kind, ndim - 3)(mesh), ndim)
        with specs.contiguity(self.contiguous):
            return deferred.natural_map(natural, self._out_spec(natural))


def transposeXtoY(x, backend="jax"):
    """X pencil to Y pencil: global axes rotated by (2, 0, 1), specs of axes 0 and 1 swapped."""
    return transpose(x, "x_y", backend)


def transposeYtoZ(x, backend="jax"):
    """Y pencil to Z pencil: axes rotated by (2, 0, 1), specs of axes 0 and 1 swapped."""
    return transpose(x, "y_z", backend)


def transposeZtoX(x, backend="jax"):
    """Z pencil to X pencil: axes rotated by (2, 0, 1), specs of axes 0 and 1 swapped."""
    return transpose(x, "z_x", backend)


def transposeYtoX(x, backend="jax"):
    """Y pencil to X pencil: axes rotated by (1, 2, 0), specs of axes 0 and 1 swapped."""
    return transpose(x, "y_x", backend)


def transposeZtoY(x, backend="jax"):
    """Z pencil to Y pencil: axes rotated by (1, 2, 0), specs of axes 0 and 1 swapped."""
    return transpose(x, "z_y", backend)


def transposeXtoZ(x, backend="jax"):
    """X pencil to Z pencil: axes rotated by (1, 2, 0), specs of axes 0 and 1 swapped."""
    return transpose(x, "x_z", backend)
