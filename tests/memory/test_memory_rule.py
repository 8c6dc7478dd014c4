"""Covers: darray/_src/engine/reshaping.py, darray/_src/api/manipulation.py
Covers: darray/_src/extras/quantiles.py

The memory rule (issue 49, item 1): every function of the namespace, compiled on uneven and
even splits over 1-D and 2-D meshes, plans at most 3 blocks of temporaries per device, a block
being the larger of a device's share of its inputs and of its outputs (XLA's plan:
``jax.jit(f).lower(*args).compile().memory_analysis()``; tests/memory/memory_survey.py).

The functions are the differential registry's cases (tests/differential/diff_registry.py), the
table test_coverage.py keeps complete, so a new public function is surveyed here as soon as
it has its differential case; `test_every_function_is_surveyed` prints how many.

Tiers: every (case, layout) pair compiles in about 12 minutes on two busy cores, so the whole
survey is in the slow tier; `FAST` (one case per family of kernels, about a minute) runs in
the default tier. The pairs over the rule today are listed in `OVER`, each with its measured
blocks and why, marked xfail(strict=True): fixing one makes its test pass, which fails the run
until its entry is removed. Cases that cannot compile as one program (data-dependent output
shapes, host I/O) or return no array are listed in `NOT_COMPILED`, and their test asserts that
they still do not compile.
"""
from __future__ import annotations

import memory_survey as ms
import pytest
from diff_registry import EXCLUDED, public_functions

# (case, layout) -> (measured blocks, why it is over the rule), measured on jax 0.10 / CPU with
# x64 on (tests/conftest.py); "g": the program all-gathers. Issue 49 item 2 names the
# algorithm each needs.
_FFT = "FFT exchange on an uneven split: the received pieces land beyond the send pieces"
_SCALARS = "3 blocks plus a few hundred bytes of per-block scalars"
_SORT = "g: XLA sorts the gathered axis (needs a distributed sort)"
OVER: dict[tuple[str, str], tuple[float, str]] = {
}

# case -> why it is not compiled as one program (its test asserts it still is not)
NOT_COMPILED = {
    "result_type": "returns a dtype",
    "can_cast": "returns a bool",
    "isdtype": "returns a bool",
    "finfo": "returns an info object",
    "iinfo": "returns an info object",
    "broadcast_shapes": "returns a shape",
    "from_callback": "calls host code per block (eager only)",
    "save": "writes to disk (eager only)",
    "getitem[boolean mask]": "output shape depends on the data",
    "getitem[boolean mask, empty tail]": "output shape depends on the data",
    "bincount": "the number of bins depends on the data without length=",
    "bincount[weights]": "the number of bins depends on the data without length=",
    "nonzero": "output shape depends on the data",
    "unique_values": "output shape depends on the data",
    "unique_counts": "output shape depends on the data",
    "unique_inverse": "output shape depends on the data",
    "unique_all": "output shape depends on the data",
}

# one case per family of kernels: elementwise, reduction, scan, manipulation moves, indexing,
# contraction, FFT, sorting, joining; about a minute on two busy cores
FAST = ("add", "sum", "mean", "cumulative_sum", "reshape", "permute_dims", "roll", "concat",
        "getitem[basic]", "take", "matmul", "fft.fftn", "sort", "where")


def _params():
    out = []
    for case in ms.REGISTRY:
        for lay in ms.LAYOUTS:
            marks = [] if case.name in FAST else [pytest.mark.slow]
            if (case.name, lay.name) in OVER:
                blocks, why = OVER[case.name, lay.name]
                marks.append(pytest.mark.xfail(strict=True,
                                               reason=f"{blocks:.1f} blocks: {why}"))
            out.append(pytest.param(case.name, lay.name, marks=marks,
                                    id=f"{case.name}@{lay.name}"))
    return out


@pytest.mark.parametrize("name,layout", _params())
def test_temporaries_within_three_blocks(name, layout):
    case = ms.case_by_name(name)
    m = ms.measure(case, ms.LAYOUT_BY_NAME[layout])
    if name in NOT_COMPILED:
        assert m.blocks is None and m.error, (
            f"{name} compiles now ({m.blocks} blocks): remove it from NOT_COMPILED")
        return
    assert m.error is None, f"{name} on {layout}: {m.error}"
    assert m.blocks is not None and m.blocks <= ms.RULE, (
        f"{name} on {layout}: {m.blocks:.2f} blocks of temporaries per device "
        f"({m.temp} bytes, block {m.block} bytes, {m.gathers} all-gathers)")


def test_every_function_is_surveyed():
    """Every public function with a differential case is compiled here (or listed as not
    compilable), so none escapes the rule; prints the count."""
    public = public_functions() - set(EXCLUDED)
    compiled = {n for c in ms.REGISTRY if c.name not in NOT_COMPILED for n in c.covers}
    listed = {n for c in ms.REGISTRY if c.name in NOT_COMPILED for n in c.covers}
    missing = sorted(public - compiled - listed)
    assert not missing, f"public functions the memory survey does not reach: {missing}"
    assert set(NOT_COMPILED) <= {c.name for c in ms.REGISTRY}
    assert {c for c, _ in OVER} <= {c.name for c in ms.REGISTRY}
    n_pairs = sum(c.name not in NOT_COMPILED for c in ms.REGISTRY) * len(ms.LAYOUTS)
    print(f"\nmemory rule: {len(compiled & public)} of {len(public)} public functions "
          f"compiled ({len(listed - compiled)} not compilable as one program, listed), "
          f"{n_pairs} case-layouts on {len(ms.LAYOUTS)} layouts; {len(OVER)} over "
          f"{ms.RULE:g} blocks (xfail strict); fast tier: {len(FAST)} cases")
