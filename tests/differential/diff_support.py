"""Strategies and comparison for the differential suite: darray against numpy on drawn layouts.

Every example draws a mesh, shapes with uneven extents, a split per operand (which may leave
mesh axes unused, i.e. a partly replicated array, and may put several mesh axes on one array
axis), a dtype and values; the darray result is compared with numpy's, computed in float64 /
complex128 / int64 from the same values.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import helpers
import jax
import numpy as np
from hypothesis import strategies as st

import darray
from darray._src.placement import placement

# The first entry of each pool is what hypothesis tries first (and shrinks towards): a 1-D
# array of 13 cells split over one axis of a (2, 4) mesh, partly replicated: the issue-9 family.
MESH_SHAPES = ((2, 4), (8,), (4, 2), (1, 8), (2, 2, 2))
_AXIS_NAMES = {1: ("a",), 2: ("x", "y"), 3: ("x", "y", "z")}
# Uneven extents: 13 over 8 devices pads, 1 over 8 leaves 7 devices with padding only.
EXTENTS = (13, 1, 2, 3, 5, 7, 17)

# x64 off (JAX's default): the 64-bit dtypes are not array dtypes, so none is drawn, and numpy's
# result dtype is compared after JAX's canonicalisation (float64 -> float32, int64 -> int32).
X64 = bool(jax.config.jax_enable_x64)
FLOATS = ("float32", "float64") if X64 else ("float32",)
COMPLEX = ("complex64", "complex128") if X64 else ("complex64",)
INTS = ("int32", "int64") if X64 else ("int32",)
REAL = INTS + FLOATS
NUMERIC = REAL + COMPLEX
ALL = ("bool",) + NUMERIC


def mesh_of(shape: tuple[int, ...]):
    """Explicit axes (jax.make_mesh's default), built once per process (helpers.mesh_of)."""
    return helpers.mesh_of(shape, _AXIS_NAMES[len(shape)], explicit=True)


def describe_mesh(mesh) -> str:
    return "(" + ", ".join(f"{n}:{s}" for n, s in mesh.shape.items()) + ")"


@dataclasses.dataclass
class Operand:
    """One array argument: the host values and where darray should put them."""
    host: np.ndarray
    mesh: Any
    spec: tuple

    def dist(self):
        return darray.asarray(self.host, mesh=self.mesh, spec=self.spec)

    def __repr__(self) -> str:
        return (f"Operand({self.host.dtype}{list(self.host.shape)}, "
                f"mesh={describe_mesh(self.mesh)}, "
                f"spec={self.spec})")


# -- strategies ----------------------------------------------------------------------------------
meshes = st.sampled_from(MESH_SHAPES).map(mesh_of)


def extents(allow_zero: bool = True, small: bool = False):
    pool = (5, 1, 2, 3, 7) if small else EXTENTS
    if not allow_zero:
        return st.sampled_from(pool)
    # 0 occasionally: one weight in (len(pool) + 1) * 2
    return st.one_of(st.sampled_from(pool), st.sampled_from(pool + (0,)))


def shapes(min_ndim=1, max_ndim=3, allow_zero=True, small=False):
    return st.integers(min_ndim, max_ndim).flatmap(
        lambda n: st.tuples(*[extents(allow_zero, small or n == 3) for _ in range(n)]))


@st.composite
def specs(draw, mesh, ndim: int):
    """A split per array axis: any subset (any order) of the mesh axes not used yet.

    Unused mesh axes replicate the array over them (the layout family that hid bugs); an axis
    may take several mesh axes, major to minor.
    """
    free = list(draw(st.permutations(list(mesh.axis_names))))
    spec = []
    for _ in range(ndim):
        k = draw(st.sampled_from([k for k in (1, 0, 2, 3) if k <= len(free)]))
        take, free = free[:k], free[k:]
        spec.append(None if k == 0 else take[0] if k == 1 and draw(st.booleans()) else tuple(take))
    return tuple(spec)


def values(rng: np.random.Generator, shape, dtype: str, kind: str) -> np.ndarray:
    """Host values of `dtype`. kind: 'int' (small integers, exact in every dtype), 'real'
    (normal floats), 'pos' (in [0.25, 4]), 'unit' (in (-0.9, 0.9)), 'ge1' (in [1, 4]), 'pm1'
    (products stay in range: ints in {-1, 0, 1}, floats in [0.8, 1.2])."""
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        lo, hi = {"pos": (1, 5), "ge1": (1, 5), "pm1": (-1, 2)}.get(kind, (-5, 6))
        return rng.integers(lo, hi, shape).astype(dt)

    def part():
        if kind == "int":
            return rng.integers(-5, 6, shape).astype(np.float64)
        if kind == "pos":
            return rng.uniform(0.25, 4.0, shape)
        if kind == "unit":
            return rng.uniform(-0.9, 0.9, shape)
        if kind == "pm1":
            return rng.uniform(0.8, 1.2, shape)
        if kind == "ge1":
            return rng.uniform(1.0, 4.0, shape)
        return rng.standard_normal(shape)

    out = part() + 1j * part() if dt.kind == "c" else part()
    return np.asarray(out).astype(dt)


@st.composite
def operand(draw, mesh, shape, dtype, kind="real", spec=None):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    spec = draw(specs(mesh, len(shape))) if spec is None else spec
    return Operand(values(rng, shape, dtype, kind), mesh, spec)


def broadcast_partner(draw, shape):
    """A shape that broadcasts with `shape`: some leading axes dropped, some extents set to 1."""
    drop = draw(st.integers(0, len(shape)))
    out = list(shape[drop:])
    for i in range(len(out)):
        if draw(st.integers(0, 3)) == 0:
            out[i] = 1
    return tuple(out)


# -- comparison ----------------------------------------------------------------------------------
def widen(a):
    """The float64 / complex128 / int64 version of a host array (the reference's precision)."""
    if not isinstance(a, np.ndarray):
        return a
    if a.dtype.kind == "f":
        return a.astype(np.float64)
    if a.dtype.kind == "c":
        return a.astype(np.complex128)
    if a.dtype.kind == "i":
        return a.astype(np.int64)
    return a


def eps_of(dtype) -> float:
    dt = np.dtype(dtype)
    return float(np.finfo(dt).eps) if dt.kind in "fc" else 0.0


def same_mesh(a, b) -> bool:
    """Same devices in the same grid with the same axis names. Axis types are not compared:
    darray stores meshes with Auto axes while jax.make_mesh may build Explicit ones."""
    return (tuple(a.axis_names) == tuple(b.axis_names)
            and np.array_equal(np.vectorize(lambda d: d.id)(a.devices),
                               np.vectorize(lambda d: d.id)(b.devices)))


def check_layout(result, mesh, what: str):
    """A DistArray result of rank >= 1 lives on the input mesh and its layout matches its data."""
    if isinstance(result, darray.DistArray):
        if result.ndim == 0 and placement.small_cells() and placement.is_local(result.layout):
            return  # the shipped placement: an eager 0-d result lives on one device
        assert same_mesh(result.mesh, mesh), (
            f"{what}: result on mesh {describe_mesh(result.mesh)}, inputs on {describe_mesh(mesh)}")
        assert result.layout.shape == tuple(result.shape), f"{what}: layout shape != shape"
        # a size-0 array holds no data; jax normalises its sharding to replicated
        physical = result.data.sharding
        assert result.size == 0 or physical.is_equivalent_to(result.sharding, result.data.ndim), (
            f"{what}: physical sharding {result.data.sharding} differs from the layout's "
            f"{result.sharding}")
        return
    shape = np.shape(result)
    assert shape == (), (f"{what}: a result of shape {shape} came back as {type(result).__name__},"
                         f" not a DistArray")


def compare(result, expected_native, expected_wide, *, tol: float, scale: float,
            what: str, check_dtype: bool = True, eps_dtype=None):
    """result: darray output. expected_native: numpy's output on the inputs' own dtypes (gives
    the dtype); expected_wide: numpy's output on the widened inputs (gives the values).
    tol: None for exact comparison, else a multiple of the result dtype's eps times `scale`
    (the size of the quantity: magnitude times reduction length); eps_dtype: the dtype whose
    eps sets the tolerance (default: the result's)."""
    got = np.asarray(result)
    exp = np.asarray(expected_native)
    assert got.shape == exp.shape, f"{what}: shape {got.shape}, numpy {exp.shape}"
    if check_dtype:
        want = helpers.canonical_dtype(exp.dtype)
        assert got.dtype == want, f"{what}: dtype {got.dtype}, numpy {exp.dtype} (as jax: {want})"
    wide = np.asarray(expected_wide)
    if tol is None or got.dtype.kind in "biu" or wide.dtype.kind in "biu":
        # exact: integers, booleans and exact-valued float operations
        np.testing.assert_array_equal(got, wide.astype(got.dtype) if got.dtype.kind in "biu"
                                      else wide, err_msg=what)
        return
    eps = eps_of(got.dtype if eps_dtype is None else eps_dtype)
    np.testing.assert_allclose(got.astype(np.complex128 if got.dtype.kind == "c" else np.float64),
                               wide, rtol=tol * eps, atol=tol * eps * scale, equal_nan=True,
                               err_msg=what)


def structure(x) -> list:
    """Flatten a result (array, tuple, namedtuple, list) into a list of leaves."""
    if isinstance(x, (tuple, list)):
        out = []
        for item in x:
            out.extend(structure(item))
        return out
    return [x]


def magnitude(operands) -> float:
    m = 1.0
    for o in operands:
        h = o.host if isinstance(o, Operand) else np.asarray(o)
        if h.size and h.dtype.kind in "fciu":
            m = max(m, float(np.max(np.abs(h.astype(np.complex128)))))
    return m


Draw = Callable
