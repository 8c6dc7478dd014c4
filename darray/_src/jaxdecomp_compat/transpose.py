"""jaxDecomp's pencil transposes: transposeXtoY and the five others.

With transpose_axis_contiguous (jaxDecomp's default), X->Y, Y->Z and Z->X rotate the global
axes by (2, 0, 1), their reverses by (1, 2, 0), and every one swaps the specs of the first two
axes (values and specs recorded from jaxDecomp 0.3.1). darray permutes the axes (a local
transpose, the split travelling with its axis) and redistributes to that spec in one
all-to-all.
"""
from __future__ import annotations

from darray._src.api.manipulation import permute_dims
from darray._src.jaxdecomp_compat import placement, specs
from darray._src.jaxdecomp_compat.config import darray_backend

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
    if mesh is None:
        return x.transpose(perm)
    out_spec = tuple(spec[:batch]) + specs.transpose_output_spec(spec[batch:], kind)
    d = permute_dims(placement.wrap(x, mesh, spec), perm)
    return placement.unwrap(d, mesh, out_spec)


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
