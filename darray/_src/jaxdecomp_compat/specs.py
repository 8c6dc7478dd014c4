"""jaxDecomp's decompositions and the PartitionSpecs of its outputs.

jaxDecomp reads the decomposition from the mesh alone (its last two axes, sizes (p0, p1)) and
gives each output a spec that is a permutation of the input's. The tables below are the
facts of jaxDecomp 0.3.1 (recorded by running it; see
tests/multidevice/jaxdecomp_compat/test_jaxdecomp_compat.py), so that a program that
constrains its arrays to these shardings runs unchanged on darray.
"""
from __future__ import annotations

import contextlib
from collections.abc import Sequence

from jax.lax import FftType
from jax.sharding import NamedSharding, PartitionSpec

from darray._src.jaxdecomp_compat.config import Decomposition, config

FORWARD = (FftType.FFT, FftType.RFFT)
INVERSE = (FftType.IFFT, FftType.IRFFT)


def mesh_pdims(mesh) -> tuple[int, int]:
    """(p0, p1): the sizes of the mesh's last two axes, (1, p) for a 1-D mesh."""
    if mesh is None or mesh.empty:
        return (1, 1)
    sizes = tuple(mesh.devices.shape)
    if len(sizes) == 1:
        sizes = (1,) + sizes
    return tuple(sizes[-2:])


def decomposition(mesh) -> Decomposition:
    p0, p1 = mesh_pdims(mesh)
    if (p0, p1) == (1, 1):
        return Decomposition.NO_DECOMP
    if p0 == 1:
        return Decomposition.SLAB_YZ
    if p1 == 1:
        return Decomposition.SLAB_XY
    return Decomposition.PENCILS


def mesh_axis_names(mesh) -> tuple:
    """The names of the mesh's last two axes (None-filled for a 1-D mesh)."""
    names = tuple(mesh.axis_names)[-2:]
    return names + (None,) * (2 - len(names))


def _pad3(spec):
    """`spec` with None up to three entries, a PartitionSpec if it was one (jaxDecomp pads with
    ``spec + (None,) * k``, and returns that object itself where the spec is unchanged)."""
    padded = tuple(spec) + (None,) * (3 - len(tuple(spec)))
    return PartitionSpec(*padded) if isinstance(spec, PartitionSpec) else padded


def fft_output_spec(fft_type, decomp: Decomposition, spec, backend: str = "jax") -> tuple:
    """The spec of pfft3d's (or pifft3d's) output for an input spec, as jaxDecomp gives it."""
    s = _pad3(spec)
    if config.transpose_axis_contiguous:
        if decomp == Decomposition.SLAB_XY:
            return (s[1], s[0], s[2])
        if decomp == Decomposition.SLAB_YZ:
            return (s[2], s[1], s[0])
        if decomp == Decomposition.PENCILS:
            return s
        raise TypeError(f"get_output_specs: pencil_type={decomp!r} has no distributed FFT; "
                        f"the mesh must have more than one device")
    if fft_type not in FORWARD + INVERSE:
        raise TypeError(f"get_output_specs: fft_type={fft_type!r} is not a jax.lax.FftType")
    if decomp == Decomposition.SLAB_XY:
        return (s[1], s[0], s[2]) if str(backend).lower() == "cudecomp" else (s[2], s[1], s[0])
    if decomp == Decomposition.SLAB_YZ:
        return (s[0], s[2], s[1])
    if decomp == Decomposition.PENCILS:
        return (s[2], s[0], s[1]) if fft_type in FORWARD else (s[1], s[2], s[0])
    raise TypeError(f"get_output_specs: pencil_type={decomp!r} has no distributed FFT; "
                    f"the mesh must have more than one device")


TRANSPOSE_KINDS = ("x_y", "y_z", "z_y", "y_x", "x_z", "z_x")
# Non-contiguous axes: jaxDecomp 0.3.1 keeps the axis order and permutes only the spec; it has
# no rule for x_z / z_x there (it raises).
_NONCONTIGUOUS = {"x_y": (0, 2, 1), "y_z": (1, 0, 2), "z_y": (1, 0, 2), "y_x": (0, 2, 1)}


def transpose_order(kind: str) -> tuple[int, int, int]:
    """How a transposeXtoY-family call permutes the global array's axes."""
    if not config.transpose_axis_contiguous:
        return (0, 1, 2)
    return (2, 0, 1) if kind in ("x_y", "y_z", "z_x") else (1, 2, 0)


def transpose_output_spec(spec, kind: str) -> tuple:
    s = _pad3(spec)
    if config.transpose_axis_contiguous:
        return (s[1], s[0], s[2])  # every kind swaps the specs of the first two axes
    if kind not in _NONCONTIGUOUS:
        raise ValueError(f"transpose kind {kind!r} has no layout with "
                         f"config.transpose_axis_contiguous=False (jaxDecomp 0.3.1 has none)")
    return tuple(s[i] for i in _NONCONTIGUOUS[kind])


def get_output_specs(fft_type, pencil_type, spec=None, backend: str = "JAX", *, mesh=None):
    """jaxDecomp's output spec of a distributed FFT, in either signature jaxDecomp had.

    jaxDecomp 0.3: ``get_output_specs(fft_type, pencil_type, spec, backend='JAX')``.
    jaxDecomp 0.2 (what JaxPM 0.1.6 calls): ``get_output_specs(fft_type, spec, mesh,
    backend='JAX')``, the decomposition read from `mesh`.
    """
    if not isinstance(pencil_type, Decomposition):  # the 0.2 form: (fft_type, spec, mesh)
        if mesh is None:
            spec, mesh = None, spec
        if mesh is None:
            raise TypeError("get_output_specs: pass (fft_type, pencil_type, spec) as jaxDecomp "
                            "0.3 does, or (fft_type, spec, mesh=mesh) as jaxDecomp 0.2 did; "
                            f"got pencil_type={pencil_type!r} and no mesh")
        pencil_type, spec = decomposition(mesh), pencil_type
    if spec is None:
        raise TypeError("get_output_specs: spec (a PartitionSpec) is missing")
    return fft_output_spec(fft_type, pencil_type, spec, backend)


def get_fft_output_sharding(fft_sharding: NamedSharding) -> NamedSharding:
    """The sharding of ``pfft3d(x)`` for an `x` sharded as `fft_sharding` (jaxDecomp 0.3.1's
    rule, including its reading of a spec whose first entry is None, or with three named
    entries, as (batch, x, y, z): a 3-D array sharded P(None, 'y') gets a 4-entry spec)."""
    if not isinstance(fft_sharding, NamedSharding):
        raise TypeError(f"get_fft_output_sharding: fft_sharding must be a NamedSharding, got "
                        f"{type(fft_sharding).__name__}")
    spec, mesh = tuple(fft_sharding.spec), fft_sharding.mesh
    decomp = decomposition(mesh)
    if sum(s is not None for s in spec) >= 3 or (spec and spec[0] is None):
        batch = spec[0] if spec else None
        out = fft_output_spec(FftType.FFT, decomp, spec[1:])
        return NamedSharding(mesh, PartitionSpec(batch, *out))
    return NamedSharding(mesh, PartitionSpec(*fft_output_spec(FftType.FFT, decomp, spec)))


def natural_spec(mesh) -> tuple:
    """The spec jaxDecomp requires of a forward-FFT or halo input: the mesh's last two axes
    on the first two array axes (a size-1 mesh axis may be left out)."""
    sizes = dict(mesh.shape)
    return tuple(n if n is not None and sizes[n] > 1 else None for n in mesh_axis_names(mesh))


@contextlib.contextmanager
def contiguity(value: bool):
    """`config.transpose_axis_contiguous` set to `value` while the rules above are read: a
    partition-time op (deferred.py) applies the value its call was traced with."""
    old = config.transpose_axis_contiguous
    config.transpose_axis_contiguous = value
    try:
        yield
    finally:
        config.transpose_axis_contiguous = old


def validate_spec_matches_mesh(spec, mesh) -> None:
    """Raise ValueError unless `spec` shards the first array axes by the mesh's axes in mesh
    order (jaxDecomp 0.3's check of a forward-transform input). Position by position, an entry
    must name the mesh axis at that position; None is accepted only for a mesh axis of size 1
    or a position past the mesh's axes."""
    entries = tuple(spec) + (None,) * max(0, 3 - len(tuple(spec)))
    names = tuple(mesh.axis_names)
    sizes = dict(mesh.shape)
    for i, entry in enumerate(entries[:3]):
        expected = names[i] if i < len(names) else None
        if entry is not None and entry != expected:
            raise ValueError(
                f"validate_spec_matches_mesh: spec {entries} does not follow the mesh's axes "
                f"{names}. At position {i}: spec has {entry!r} but mesh expects "
                f"{expected if expected is not None else 'nothing (trailing)'!r}; shard the "
                f"array by the mesh axes in their order")
        if entry is None and expected is not None and sizes[expected] > 1:
            raise ValueError(
                f"validate_spec_matches_mesh: spec {entries} does not follow the mesh's axes "
                f"{names}. At position {i}: spec has None but mesh axis {expected!r} has size "
                f"{sizes[expected]} (> 1): an unsharded array axis cannot stand for a "
                f"distributed mesh axis")


# jaxDecomp's `typing` aliases (darray.jaxdecomp.typing re-exports them)
GdimsType = tuple[int, int, int]
TransposablePdimsType = tuple[int, int, int]
PdimsType = tuple[int, int]
HaloExtentType = tuple[int, int]
Periodicity = tuple[bool, bool]
HLOResult = Sequence[type]
