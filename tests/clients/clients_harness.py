"""The clients tier's machinery: one registry of cases, the two placements, and the comparison.

A case is one call of a third-party array-API client (scikit-learn, scipy, array-api-extra,
einops, xarray). The harness runs it twice, on numpy inputs and on the same data as DistArrays,
compares the results leaf by leaf, and records whether the DistArray run's result stayed
distributed (every array leaf a DistArray on the input's mesh) or came back through the host
(numpy arrays, Python scalars, or plain jax arrays).

Each xfail says whose bug it is: `library_bug` (strict: the day the library fixes it, the xpass
fails and the mark must go) or `darray_bug` (not strict, temporary, listed in
KNOWN_DARRAY_BUGS.md with a reproducer until it is fixed).
"""
from __future__ import annotations

import contextlib
import dataclasses
import importlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

# Set by test_clients.py when it re-runs the scipy cases in a subprocess: the child writes each
# case's outcome to this file for the parent to report.
REPORT_ENV = "DARRAY_CLIENTS_REPORT"

LIBRARIES = ("sklearn", "scipy", "array_api_extra", "einops", "xarray")

# -- placements -------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Placement:
    """The shape of a case's main 2-D input and how it is split."""
    name: str
    shape: tuple[int, int]
    mesh_shape: tuple[int, ...]
    axis_names: tuple[str, ...]
    spec: tuple  # mesh axis per array axis of the main 2-D input

    def mesh(self):
        import jax
        return jax.make_mesh(self.mesh_shape, self.axis_names)

    def spec_for(self, shape) -> tuple:
        """Inputs of other shapes: leading axes take the placement's splits in order, so a
        label vector of length n_samples is split like the rows of X."""
        spec = list(self.spec[: len(shape)]) + [None] * max(0, len(shape) - len(self.spec))
        return tuple(spec)


PLACEMENTS = (
    Placement("rows64x16_on8", (64, 16), (8,), ("x",), ("x", None)),
    Placement("pencil13x7_on2x4", (13, 7), (2, 4), ("x", "y"), ("x", "y")),
)

# -- inputs -----------------------------------------------------------------------------------


def make_inputs(names, shape, seed=0) -> dict[str, np.ndarray]:
    """Float64 numpy inputs by role. n = rows (samples), m = columns (features)."""
    rng = np.random.default_rng(seed)
    n, m = shape
    makers = {
        "X": lambda: rng.standard_normal((n, m)),
        "X2": lambda: rng.standard_normal((n, m)),
        "Xpos": lambda: rng.uniform(0.5, 2.0, (n, m)),
        "Xprob": lambda: _rows_sum_to_one(rng.uniform(0.1, 1.0, (n, m))),
        "Xint": lambda: rng.integers(0, 4, (n, m)),
        "Xnan": lambda: _with_nans(rng, rng.standard_normal((n, m))),
        "v": lambda: rng.standard_normal(n),
        "w": lambda: rng.standard_normal(n),
        "vpos": lambda: rng.uniform(0.5, 2.0, n),
        "vsorted": lambda: np.sort(rng.standard_normal(n)),
        "y_reg": lambda: rng.standard_normal(n),
        "y_cls": lambda: _labels(rng, n, 3),
        "y_bin": lambda: _labels(rng, n, 2),
        "y_pred_cls": lambda: _labels(rng, n, 3),
        "y_pred_bin": lambda: _labels(rng, n, 2),
        "y_score": lambda: rng.uniform(0.05, 0.95, n),
        "vint": lambda: rng.integers(0, 5, n),
        "cube": lambda: rng.standard_normal((n, m, 4)),
    }
    return {k: makers[k]() for k in names}


def _rows_sum_to_one(a):
    return a / a.sum(axis=1, keepdims=True)


def _with_nans(rng, a):
    a = a.copy()
    a[rng.uniform(size=a.shape) < 0.1] = np.nan
    return a


def _labels(rng, n, k):
    """Labels 0..k-1, every class present (so class counts match between runs)."""
    y = rng.integers(0, k, n)
    y[:k] = np.arange(k)
    return y


def to_dist(a: np.ndarray, placement: Placement, mesh):
    import darray
    return darray.asarray(a, mesh=mesh, spec=placement.spec_for(a.shape))


# -- cases ------------------------------------------------------------------------------------


@dataclasses.dataclass
class Case:
    library: str
    name: str
    fn: Callable[..., Any]           # fn(xp, **inputs) -> result (array, scalar, tuple, dict...)
    inputs: tuple[str, ...] = ("X",)
    rtol: float = 1e-7
    atol: float = 1e-9
    marks: dict = dataclasses.field(default_factory=dict)  # placement name or "*" -> mark
    compare: Callable | None = None  # custom leaf comparison (e.g. sign-free eigenvectors)
    mutates: bool = False            # the call may write into its inputs (documented in-place)

    @property
    def id(self) -> str:
        return f"{self.library}-{self.name}"


REGISTRY: list[Case] = []


def case(library, name, inputs=("X",), *, rtol=1e-7, atol=1e-9, marks=(), compare=None,
         mutates=False):
    """Decorator registering `fn(xp, **inputs)` as one client call."""
    assert library in LIBRARIES, library

    def register(fn):
        c = Case(library, name, fn, tuple(inputs), rtol, atol, {}, compare, mutates)
        for where, mark in marks:
            c.marks[where] = mark
        assert all(c.id != other.id for other in REGISTRY), c.id
        REGISTRY.append(c)
        return fn
    return register


def library_bug(reason, where="*", strict=True):
    """The library is at fault (non-standard call, missing device=, ...): strict xfail
    (non-strict only while darray's side of the question is being decided)."""
    return (where, pytest.mark.xfail(strict=strict, reason=f"library bug: {reason}"))


def darray_bug(reason, where="*"):
    """A darray defect being fixed: non-strict until the fix lands, then the mark goes."""
    return (where, pytest.mark.xfail(strict=False, reason=f"darray bug: {reason} (being fixed)"))


def params():
    """pytest params over REGISTRY x PLACEMENTS, each carrying its own xfail mark."""
    out = []
    for c in REGISTRY:
        for p in PLACEMENTS:
            mark = c.marks.get(p.name, c.marks.get("*"))
            out.append(pytest.param(c, p, id=f"{c.id}-{p.name}",
                                    marks=[mark] if mark is not None else []))
    return out


# -- running and comparing ------------------------------------------------------------------


def require(library):
    """Import a client library; in this tier a missing one is an error, never a skip, so a CI
    that selects the tier cannot pass it by not installing the `clients` extra."""
    try:
        return importlib.import_module(library)
    except ImportError as exc:
        pytest.fail(f"{library} is not installed; install the clients extra: "
                    f"python3 -m pip install -e '.[clients]' ({exc})", pytrace=False)


def leaves(result) -> list:
    """Array-like leaves of a result: tuples, lists, dicts, namedtuples, xarray objects and
    scipy result objects are opened; everything else is a leaf."""
    if isinstance(result, dict):
        return [leaf for k in sorted(result) for leaf in leaves(result[k])]
    if isinstance(result, (tuple, list)):
        return [leaf for r in result for leaf in leaves(r)]
    mod = type(result).__module__
    if mod.startswith("xarray"):
        if hasattr(result, "data_vars"):  # Dataset
            return [leaf for k in sorted(result.data_vars) for leaf in leaves(result[k].data)]
        return leaves(result.data)
    if hasattr(result, "_asdict"):
        return leaves(tuple(result))
    if mod.startswith("scipy") and dataclasses.is_dataclass(result):
        return leaves([getattr(result, f.name) for f in dataclasses.fields(result)])
    return [result]


def kind_of(leaf) -> str:
    import jax

    import darray
    if isinstance(leaf, darray.DistArray):
        return "DistArray"
    if isinstance(leaf, jax.Array):
        return "jax.Array"
    if isinstance(leaf, np.ndarray):
        return "numpy"
    return type(leaf).__name__


def check(case_: Case, placement: Placement, record_property) -> None:
    """Run the case on numpy and on DistArrays, compare, and record where the result lives."""
    import darray
    record_property("client_library", case_.library)
    record_property("client_case", case_.id)
    record_property("client_placement", placement.name)
    require(case_.library)
    mesh = placement.mesh()
    host_inputs = make_inputs(case_.inputs, placement.shape)
    dist_inputs = {k: to_dist(v, placement, mesh) for k, v in host_inputs.items()}

    numpy_inputs = {k: v.copy() for k, v in host_inputs.items()}
    expected = case_.fn(np, **numpy_inputs)
    with count_host_copies() as host_copies:
        got = case_.fn(darray, **dist_inputs)

    # Inputs change exactly as numpy's do (not at all, unless the call is documented in-place).
    for k, v in dist_inputs.items():
        want = numpy_inputs[k] if case_.mutates else host_inputs[k]
        np.testing.assert_array_equal(np.asarray(v), want, err_msg=f"input {k} changed")

    exp_leaves, got_leaves = leaves(expected), leaves(got)
    assert len(exp_leaves) == len(got_leaves), (len(exp_leaves), len(got_leaves))
    kinds = [kind_of(g) for g in got_leaves]
    for i, (e, g) in enumerate(zip(exp_leaves, got_leaves)):
        if isinstance(g, darray.DistArray):
            # A distributed result lives on the input's mesh (no silent move elsewhere). Under
            # the shipped placement (docs/performance.md) a result darray placed by default may
            # lie on JAX's default device, one of the mesh's: an eager 0-d result, an array the
            # library made with no input (tril_indices), or one it brought back from the host
            # with xp.asarray (recorded as "host" below).
            devices, want = set(g.mesh.devices.flat), set(mesh.devices.flat)
            placed_by_default = g.ndim == 0 or not dist_inputs or host_copies[0] > 0
            if (darray.get_config("small_array_cells") and placed_by_default
                    and len(devices) == 1):
                assert devices <= want, (i, g.mesh, mesh)
            else:
                assert devices == want, (i, g.mesh, mesh)
            assert tuple(g.shape) == tuple(np.shape(e)), (i, g.layout, np.shape(e))
        if case_.compare is not None:
            case_.compare(np.asarray(e), np.asarray(g))
        elif isinstance(e, (str, bytes)) or (isinstance(e, np.ndarray) and e.dtype.kind in "OUS"):
            assert np.array_equal(np.asarray(g), np.asarray(e)), (i, g, e)
        else:
            np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=case_.rtol,
                                       atol=case_.atol, err_msg=f"leaf {i} ({kinds[i]})")
    # "distributed": every array leaf is a DistArray and no n-d DistArray went through host
    # memory on the way (a library doing np.asarray(x) ... xp.asarray(result) is a round trip).
    distributed = all(k == "DistArray" for k in kinds) and host_copies[0] == 0
    record_property("client_result", "distributed" if distributed else "host")
    record_property("client_kinds", ",".join(kinds))
    record_property("client_host_copies", host_copies[0])


@contextlib.contextmanager
def count_host_copies():
    """Counts n-d DistArrays exported to host memory (numpy conversion, DLPack) in the block;
    0-d reads (a Python float of a reduction) are scalars, not data round trips."""
    import darray
    counter = [0]
    cls = darray.DistArray
    saved = {name: cls.__dict__[name] for name in ("__array__", "__dlpack__")
             if name in cls.__dict__}

    def counting(original):
        def export(self, *args, **kwargs):
            if self.ndim > 0:
                counter[0] += 1
            return original(self, *args, **kwargs)
        return export

    for name, original in saved.items():
        setattr(cls, name, counting(original))
    try:
        yield counter
    finally:
        for name, original in saved.items():
            setattr(cls, name, original)
