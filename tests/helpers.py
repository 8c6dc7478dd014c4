"""What many test files need, once: meshes, random arrays, layout checks, collectives in HLO,
and tolerances that follow the dtype a result was computed in.

tests/ is on sys.path (pytest puts the directory of tests/conftest.py there), so a test imports
this module as ``import helpers`` or ``from helpers import mesh_of, rand``.
"""
from __future__ import annotations

import collections
import functools
import math
import re

import jax
import numpy as np
import pytest
from jax.sharding import AbstractMesh, AxisType

import darray

AXIS_NAMES = ("x", "y", "z", "w")


@functools.cache
def _mesh(shape: tuple[int, ...], names: tuple[str, ...], explicit: bool, devices: tuple | None):
    kind = AxisType.Explicit if explicit else AxisType.Auto
    if devices is None:
        devices = tuple(jax.devices()[:math.prod(shape)])
    return jax.make_mesh(shape, names, axis_types=(kind,) * len(shape), devices=devices)


def mesh_of(shape, names=None, *, explicit=False, devices=None):
    """A mesh of the first prod(shape) devices; axes named x, y, z unless `names` is given.

    Auto axes unless `explicit` (darray keeps its arrays on Auto meshes; jax.make_mesh defaults
    to Explicit, so `explicit=True` is the mesh a user's plain ``jax.make_mesh`` gives).
    `devices`: the devices to lay out in order instead (a sub-mesh such as
    ``jax.devices()[4:]``, or a permutation). Built once per (shape, names, kind, devices): a
    new Mesh object would defeat the jit caches.
    """
    shape = tuple(int(n) for n in shape)
    names = AXIS_NAMES[:len(shape)] if names is None else tuple(names)
    devices = None if devices is None else tuple(devices)
    return _mesh(shape, names, bool(explicit), devices)


def abstract_mesh(shape, names=None):
    """A device-free AbstractMesh (Auto axes) of `shape`, axes named as `mesh_of` names them:
    what the pure-data tests (layouts, plans) run on."""
    shape = tuple(int(n) for n in shape)
    names = AXIS_NAMES[:len(shape)] if names is None else tuple(names)
    return AbstractMesh(shape, names)


FFT_MESHES = {
    "slab8": ((8,), ("d",)),
    "pencil2x4": ((2, 4), ("x", "y")),
    "pencil4x2": ((4, 2), ("x", "y")),
    "pencil1x8": ((1, 8), ("x", "y")),
}
"""The FFT tests' meshes by name: ``mesh_of(*FFT_MESHES[key])``, split as ``fft_spec(key)``."""


def fft_spec(key):
    """The split of an FFT_MESHES mesh: the slab's one axis, or both pencil axes."""
    return ("d",) if key == "slab8" else ("x", "y")


def rand(shape, dtype=np.float64, *, seed=0):
    """Standard normal values of `dtype` (a complex dtype draws the imaginary part second)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def assert_layout(y, layout=None, *, split=None, shape=None, mesh=None):
    """`y` is a DistArray whose data is laid out as its Layout says, and the Layout is the one
    asked for (`layout`, or its `split`, `shape` and `mesh`).

    JAX drops size-1 mesh axes from specs, so the physical sharding is compared by equivalence,
    not by spec tuples. A size-0 array holds no data (jax normalises its sharding).
    """
    assert isinstance(y, darray.DistArray), f"a {type(y).__name__}, not a DistArray"
    if layout is not None:
        assert y.layout == layout, (y.layout, layout)
    if split is not None:
        want = tuple((s,) if isinstance(s, str) else tuple(s or ()) for s in split)
        assert y.layout.split == want, (y.layout.split, want)
    if shape is not None:
        assert tuple(y.shape) == tuple(shape), (y.shape, shape)
    if mesh is not None:
        assert y.layout.mesh == mesh, (y.layout.mesh, mesh)
    assert tuple(y.data.shape) == tuple(y.layout.physical_shape), (y.data.shape, y.layout)
    assert y.size == 0 or y.data.sharding.is_equivalent_to(y.sharding, y.data.ndim), (
        y.data.sharding, y.layout)


# -- collectives in compiled HLO -----------------------------------------------------------------
COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")
# an instruction `op(` or its async `op-start(`; `%all-reduce.3 = ...` names are not calls
_COLLECTIVE = re.compile(r"\b(" + "|".join(COLLECTIVES) + r")(?:-start)?\(")


def compiled_hlo(fn, *args) -> str:
    """The compiled (optimised, partitioned) HLO text of ``jax.jit(fn)(*args)``."""
    return jax.jit(fn).lower(*args).compile().as_text()


def collectives(text: str) -> list[str]:
    """The collective instructions of an HLO text, in order (``-start`` counted as the op)."""
    return _COLLECTIVE.findall(text)


def collective_counts(text: str) -> collections.Counter:
    """How many of each collective an HLO text holds (a missing one counts 0)."""
    return collections.Counter(collectives(text))


def collective_count(text: str, op: str) -> int:
    """How many `op` instructions (one of COLLECTIVES) an HLO text holds."""
    if op not in COLLECTIVES:
        raise ValueError(f"op={op!r} is not a collective; use one of {COLLECTIVES}")
    return collective_counts(text)[op]


# -- dtypes and tolerances ------------------------------------------------------------------------
def canonical_dtype(dtype) -> np.dtype:
    """The dtype JAX makes of `dtype`: itself with x64 on; float64 -> float32, int64 -> int32,
    complex128 -> complex64 with x64 off (JAX's default)."""
    return np.dtype(jax.dtypes.canonicalize_dtype(dtype))


def host(a) -> np.ndarray:
    """A host array in the dtype darray will hold it in (numpy's float64 becomes float32 with
    x64 off), so that values a test compares exactly are the values darray holds."""
    a = np.asarray(a)
    return a.astype(canonical_dtype(a.dtype))


def eps(dtype) -> float:
    """Machine epsilon of the precision `dtype` computes in (a complex dtype: its real part;
    integers and bools: float64, the precision numpy's references use)."""
    dtype = np.dtype(dtype)
    if dtype.kind not in "fc":
        dtype = np.dtype(np.float64)
    return float(np.finfo(dtype).eps)


def rtol(dtype, ulps: float = 64.0) -> float:
    """A relative tolerance of `ulps` units of `dtype`'s precision: 64 ulps of float64 is
    1.4e-14, of float32 7.6e-6."""
    return ulps * eps(dtype)


def tol(dtype, f64: float = 1e-12, f32: float = 1e-5) -> float:
    """A test's tolerance for results computed in `dtype`'s precision: `f64` for float64 /
    complex128 (and integers, whose references are exact), `f32` for the 32-bit ones and below
    (x64 off makes numpy's float64 data float32)."""
    dtype = np.dtype(dtype)
    return f32 if dtype.kind in "fc" and dtype.itemsize <= (8 if dtype.kind == "c" else 4) else f64


def close(got, ref, dtype):
    """`got` equals the float64 reference `ref` to the precision it was computed in: that of
    `dtype`, or of the dtype darray holds it in (float32 / complex64 with x64 off)."""
    got = np.asarray(got)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    single = (np.float32, np.complex64)
    tol = 2e-5 if canonical_dtype(dtype) in single or got.dtype in single else 1e-12
    err = np.abs(got - ref).max() / max(np.abs(ref).max(), 1.0)
    assert err < tol, f"relative error {err} >= {tol}"


def thin_parametrized(items, file_names) -> None:
    """Move every other case of each parametrized test in `file_names` to the slow tier.

    For test files whose cases each compile distributed programs for seconds on two shared
    cores: the default tier keeps the first case of every test and every other one after it
    (so each function and each algorithm stays covered there), the slow tier runs them all.
    """
    seen: collections.Counter = collections.Counter()
    for item in items:
        if item.path.name not in file_names or not hasattr(item, "callspec"):
            continue
        key = (item.path.name, item.originalname)
        if seen[key] % 2:
            item.add_marker(pytest.mark.slow)
        seen[key] += 1
