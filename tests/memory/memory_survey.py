"""The memory survey: every case of the differential registry compiled on fixed layouts, its
temporaries per device read from XLA's plan and counted in blocks.

The functions come from the registry that drives the differential coverage test
(tests/differential: diff_registry.REGISTRY, filled by diff_cases), so a function that gains a
differential case is surveyed too, and test_coverage.py keeps that registry complete.

How an example is drawn: the case's own hypothesis strategy runs with the differential
suite's shape, extent, mesh and split strategies swapped for fixed ones (`LAYOUTS`), so its
parameters (axes, reshape targets, indices) are drawn against the fixed shapes. The first
drawn example whose array operands are all float32 is kept (any dtype if none is within
`_TRIES`): one deterministic example per (case, layout).

What is counted: ``jax.jit(f).lower(*args).compile().memory_analysis()`` gives, per device,
the bytes of the arguments, of the outputs and of the temporaries. A *block* is the larger of
a device's share of the inputs and of the outputs (at least `MIN_BLOCK` bytes, so that a
0-d result of a tiny array is not divided by a few bytes); the figure is temp / block.
"""
from __future__ import annotations

import contextlib
import dataclasses
import sys
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
for _p in (_HERE.parent.parent, _HERE.parent, _HERE.parent / "differential"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

import diff_cases  # noqa: E402,F401  (fills the registry)
import diff_support as ds  # noqa: E402
import jax  # noqa: E402
import numpy as np  # noqa: E402
from diff_registry import REGISTRY, Case, Example  # noqa: E402
from hypothesis import HealthCheck, Phase, find, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.errors import NoSuchExample, Unsatisfiable  # noqa: E402

import darray  # noqa: E402

RULE = 3.0          # blocks of temporaries per device a function may plan
MIN_BLOCK = 4096    # bytes: the smallest block counted


@dataclasses.dataclass(frozen=True)
class FixedLayout:
    """Shapes per rank (1-, 2- and 3-D operands) and the split of each, on one mesh."""
    name: str
    mesh_shape: tuple[int, ...]
    shapes: dict
    specs: dict
    extent: int          # what a case drawing a single extent (ds.extents) gets

    @property
    def mesh(self):
        return ds.mesh_of(self.mesh_shape)


# The issue-49 layouts: uneven and even splits on the (2, 4) mesh, an uneven one on 8.
LAYOUTS = (
    FixedLayout("2x4 uneven", (2, 4), {1: (100003,), 2: (1001, 403), 3: (101, 67, 45)},
                {1: (("x", "y"),), 2: ("x", "y"), 3: ("x", "y", None)}, 61),
    FixedLayout("2x4 even", (2, 4), {1: (100000,), 2: (1000, 400), 3: (104, 68, 48)},
                {1: (("x", "y"),), 2: ("x", "y"), 3: ("x", "y", None)}, 64),
    FixedLayout("8 uneven", (8,), {1: (100003,), 2: (403, 1001), 3: (37, 203, 19)},
                {1: ("a",), 2: (None, "a"), 3: (None, "a", None)}, 61),
)
LAYOUT_BY_NAME = {lay.name: lay for lay in LAYOUTS}

_TRIES = 40
_SETTINGS = settings(max_examples=_TRIES, derandomize=True, database=None, deadline=None,
                     phases=[Phase.generate],
                     suppress_health_check=list(HealthCheck))


@contextlib.contextmanager
def fixed_strategies(layout: FixedLayout):
    """The differential strategies drawing only `layout`'s mesh, shapes and splits."""
    def shapes(min_ndim=1, max_ndim=3, allow_zero=True, small=False):
        ndim = max(min_ndim, min(max_ndim, 3))
        return st.just(layout.shapes[ndim]) if ndim in layout.shapes else st.just((1,) * ndim)

    def specs(mesh, ndim):
        spec = layout.specs.get(ndim)
        return st.just(tuple(spec) if spec is not None else (None,) * ndim)

    saved = {n: getattr(ds, n) for n in ("meshes", "shapes", "specs", "extents")}
    ds.meshes = st.just(layout.mesh)
    ds.shapes = shapes
    ds.specs = specs
    ds.extents = lambda allow_zero=True, small=False: st.just(layout.extent)
    try:
        yield
    finally:
        for n, v in saved.items():
            setattr(ds, n, v)


def _operands(example: Example):
    for a in example.args:
        if isinstance(a, ds.Operand):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from (o for o in a if isinstance(o, ds.Operand))


def draw_example(case: Case, layout: FixedLayout) -> Example | None:
    """One deterministic example of `case` on `layout` (float32 operands where it can)."""
    with fixed_strategies(layout):
        for want_f32 in (True, False):
            def ok(ex, want_f32=want_f32):
                ops = list(_operands(ex))
                # creation functions have no operand: their example is kept as drawn
                return not want_f32 or all(o.host.dtype == np.float32 for o in ops)
            try:
                return find(case.draw, ok, settings=_SETTINGS)
            except (NoSuchExample, Unsatisfiable):
                continue
    return None


@dataclasses.dataclass
class Measured:
    case: str
    layout: str
    covers: tuple[str, ...]
    blocks: float | None = None     # temp / block
    temp: int = 0
    block: int = 0
    gathers: int = 0
    error: str | None = None        # why nothing was compiled
    seconds: float = 0.0

    @property
    def over(self) -> bool:
        return self.blocks is not None and self.blocks > RULE


def _split_args(args):
    """(jit arguments, rebuild) where the arguments are the DistArrays (or lists of them)."""
    dyn_pos = [i for i, a in enumerate(args)
               if isinstance(a, darray.DistArray)
               or (isinstance(a, (list, tuple)) and a
                   and all(isinstance(b, darray.DistArray) for b in a))]

    def rebuild(dyn):
        out = list(args)
        for i, v in zip(dyn_pos, dyn):
            out[i] = type(args[i])(v) if isinstance(args[i], (list, tuple)) else v
        return out
    return [args[i] for i in dyn_pos], rebuild


def _as_arrays(result):
    """The array leaves of a result (a DistArray is a pytree; other leaves must be arrays)."""
    leaves = jax.tree_util.tree_leaves(result)
    if not all(isinstance(v, (jax.Array, np.ndarray, np.generic)) for v in leaves):
        raise TypeError("result holds non-array leaves")
    return result


def compile_case(case: Case, example: Example):
    """The compiled program of `case.fn` on `example`'s operands (jitted, DistArrays as args)."""
    args = [o.dist() if isinstance(o, ds.Operand) else
            type(o)(b.dist() for b in o) if isinstance(o, (list, tuple)) and o
            and all(isinstance(b, ds.Operand) for b in o) else o for o in example.args]
    dyn, rebuild = _split_args(args)
    params = example.params

    def program(*arrays):
        call = rebuild(arrays)
        out = case.fn(*call, **params)
        return _as_arrays(call[0] if case.mutates else out)

    return jax.jit(program).lower(*dyn).compile()


def blocks_of(compiled) -> tuple[float, int, int, int]:
    """(temp / block, temp bytes, block bytes, all-gathers) per device."""
    m = compiled.memory_analysis()
    block = max(m.argument_size_in_bytes, m.output_size_in_bytes, MIN_BLOCK)
    gathers = compiled.as_text().count("all-gather-start") or compiled.as_text().count(
        "all-gather(")
    return m.temp_size_in_bytes / block, m.temp_size_in_bytes, block, gathers


def measure(case: Case, layout: FixedLayout) -> Measured:
    out = Measured(case.name, layout.name, tuple(case.covers))
    t0 = time.perf_counter()
    if not case.layout:
        out.error = "no array result (dtypes, shapes or info objects)"
        return out
    example = draw_example(case, layout)
    if example is None:
        out.error = "the case's strategy draws no example on this layout"
        return out
    try:
        compiled = compile_case(case, example)
    except Exception as err:  # noqa: BLE001  (recorded by name, compared with a fixed list)
        out.error = f"{type(err).__name__}: {str(err).splitlines()[0][:120] if str(err) else ''}"
        return out
    finally:
        out.seconds = time.perf_counter() - t0
    out.blocks, out.temp, out.block, out.gathers = blocks_of(compiled)
    out.seconds = time.perf_counter() - t0
    return out


def survey(cases=None, layouts=LAYOUTS) -> list[Measured]:
    cases = REGISTRY if cases is None else cases
    return [measure(c, lay) for c in cases for lay in layouts]


def case_by_name(name: str) -> Case:
    return next(c for c in REGISTRY if c.name == name)
