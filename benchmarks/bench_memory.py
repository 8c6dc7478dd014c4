"""Temporaries per device, in blocks, of every function of the namespace beside jax.numpy's.

Every case of the differential registry (tests/differential, the same table the memory tier
tests/memory/test_memory_rule.py asserts) is compiled on the issue-49 layouts
(tests/memory/memory_survey.py: float32 (101, 67, 45) and (104, 68, 48) split (x, y) on a
(2, 4) mesh, (37, 203, 19) split on axis 1 over 8; 1-D and 2-D operands of the same size
class), and XLA's plan is read: ``jax.jit(f).lower(*args).compile().memory_analysis()``.
A block is the larger of a device's share of the inputs and of the outputs; the rule is at
most 3 blocks of temporaries.

The jax.numpy column runs the function of the same name (jnp, jnp.linalg, jnp.fft) on the
same operands as jax.Arrays with the same split, on the even layout only (a jax.Array cannot
be split unevenly); "-" where jax.numpy has no such function or refuses the arguments.

    python benchmarks/bench_memory.py [--cases NAME ...] [--markdown]

Prints one row per case: the blocks on each layout (with "g" where the program all-gathers),
the jax.numpy figure, and a summary: how many functions, how many cases over 3 blocks.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("DARRAY_SMALL_ARRAY_CELLS", "0")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "memory"))

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import memory_survey as ms  # noqa: E402
import numpy as np  # noqa: E402


def _jnp_function(name: str):
    stem = name.split("[")[0]
    module = jnp
    if "." in stem:
        sub, stem = stem.split(".", 1)
        module = getattr(jnp, sub, None)
    return getattr(module, stem, None) if module is not None else None


def jnp_blocks(case, example) -> float | None:
    """temp / block of jax.numpy's function of the same name on the example's operands."""
    fn = _jnp_function(case.name)
    if fn is None or case.mutates:
        return None
    # Auto axes: on an Explicit mesh jax.numpy refuses results its split does not divide
    mesh = ms.ds.helpers.mesh_of(tuple(example.mesh.shape.values()), example.mesh.axis_names)

    def place(o):
        if isinstance(o, ms.ds.Operand):
            spec = jax.sharding.PartitionSpec(*o.spec)
            return jax.device_put(o.host, jax.sharding.NamedSharding(mesh, spec))
        return o
    try:
        args = [type(a)(place(b) for b in a) if isinstance(a, (list, tuple)) and a
                and all(isinstance(b, ms.ds.Operand) for b in a) else place(a)
                for a in example.args]
    except ValueError:  # an operand its split does not divide (no uneven jax.Array)
        return None
    dyn_pos = [i for i, a in enumerate(args) if isinstance(a, jax.Array)
               or (isinstance(a, (list, tuple)) and a and all(isinstance(b, jax.Array)
                                                              for b in a))]

    def program(*dyn):
        call = list(args)
        for i, v in zip(dyn_pos, dyn):
            call[i] = v
        return fn(*call, **example.params)
    try:
        compiled = jax.jit(program).lower(*[args[i] for i in dyn_pos]).compile()
    except Exception:  # noqa: BLE001  (jax.numpy refuses darray's extra arguments: no figure)
        return None
    return ms.blocks_of(compiled)[0]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="*", help="registry case names (default: all)")
    ap.add_argument("--markdown", action="store_true", help="print a markdown table")
    args = ap.parse_args(argv)
    cases = ms.REGISTRY if not args.cases else [ms.case_by_name(n) for n in args.cases]
    even = ms.LAYOUT_BY_NAME["2x4 even"]
    heads = [lay.name for lay in ms.LAYOUTS] + ["jax.numpy (2x4 even)"]
    if args.markdown:
        print("| case | " + " | ".join(heads) + " |")
        print("|---|" + "---:|" * len(heads))
    rows = []
    for case in cases:
        measured = [ms.measure(case, lay) for lay in ms.LAYOUTS]
        if all(m.blocks is None for m in measured):
            continue
        ex = ms.draw_example(case, even)
        jb = jnp_blocks(case, ex) if ex is not None else None
        cells = [("-" if m.blocks is None else f"{m.blocks:.2f}" + (" g" if m.gathers else ""))
                 for m in measured] + ["-" if jb is None else f"{jb:.2f}"]
        rows.append((case, measured, jb))
        if args.markdown:
            print(f"| {case.name} | " + " | ".join(cells) + " |", flush=True)
        else:
            print(f"{case.name:36s} " + " ".join(f"{c:>10s}" for c in cells), flush=True)
    functions = {n for case, _, _ in rows for n in case.covers}
    over = [(c.name, m.layout, m.blocks) for c, ms_, _ in rows for m in ms_ if m.over]
    both = [(c, ms_, jb) for c, ms_, jb in rows if jb is not None]
    even_d = [next(m for m in ms_ if m.layout == even.name) for _, ms_, _ in both]
    print()
    print(f"{len(rows)} cases, {len(functions)} functions compiled on {len(ms.LAYOUTS)} layouts;"
          f" {len(over)} case-layouts over {ms.RULE:g} blocks: "
          + ", ".join(f"{n} ({lay}) {b:.1f}" for n, lay, b in over))
    n_jnp_over = sum(jb > ms.RULE for _, _, jb in both)
    n_d_over = sum(m.blocks is not None and m.blocks > ms.RULE for m in even_d)
    print(f"side by side on the even layout ({len(both)} cases jax.numpy compiles): "
          f"over {ms.RULE:g} blocks: darray {n_d_over}, jax.numpy {n_jnp_over}; "
          f"median darray {np.median([m.blocks or 0 for m in even_d]):.2f}, "
          f"jax.numpy {np.median([jb for _, _, jb in both]):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
