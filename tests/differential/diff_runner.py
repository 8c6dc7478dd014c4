"""Run one drawn Example of a Case against numpy and compare every leaf of the result."""
from __future__ import annotations

import warnings

import diff_support as ds
import numpy as np
from diff_registry import allowed_refusal
from diff_support import Operand

REFUSALS: list[str] = []


def _dist(arg):
    if isinstance(arg, Operand):
        return arg.dist()
    if isinstance(arg, (list, tuple)) and arg and all(isinstance(a, Operand) for a in arg):
        return type(arg)(a.dist() for a in arg)
    return arg


def _host(arg, wide: bool):
    if isinstance(arg, Operand):
        return ds.widen(arg.host) if wide else arg.host.copy()
    if isinstance(arg, (list, tuple)) and arg and all(isinstance(a, Operand) for a in arg):
        return type(arg)(_host(a, wide) for a in arg)
    return arg


def run_case(case, example):
    what = f"{case.name} on {example!r}"
    dist_args = [_dist(a) for a in example.args]
    try:
        result = case.fn(*dist_args, **example.params)
    except NotImplementedError as err:
        allowed = allowed_refusal(case, example)
        if allowed is None:
            raise AssertionError(
                f"{what}: refused ({err}); no entry of the case's refusal allow-list covers "
                f"this example") from err
        first = example.args[0]
        REFUSALS.append(f"{case.name}: {first!r} {example.params}: allowed because "
                        f"{allowed.reason}: {str(err)[:160]}")
        return
    with warnings.catch_warnings():
        # numpy's answer is the reference even where numpy warns about it (var with
        # correction >= n: "Degrees of freedom <= 0", then nan or inf); darray's call above
        # runs under the suite's warnings-as-errors
        warnings.simplefilter("ignore", RuntimeWarning)
        native = case.ref(*[_host(a, False) for a in example.args], **example.params)
        wide = case.ref(*[_host(a, case.widen) for a in example.args], **example.params)
    if case.mutates:
        result, native, wide = dist_args[0], native, wide
    got, exp_n, exp_w = ds.structure(result), ds.structure(native), ds.structure(wide)
    if case.layout:
        for i, g in enumerate(got):
            ds.check_layout(g, example.mesh, f"{what} [result {i}]")
    # the tolerance follows the precision darray computed in, before any canonicalisation
    eps_dtypes = [getattr(g, "dtype", None) for g in got]
    if case.post is not None:
        got = case.post([np.asarray(g) for g in got])
        exp_n, exp_w = case.post(exp_n), case.post(exp_w)
    assert len(got) == len(exp_n), f"{what}: {len(got)} results, numpy gives {len(exp_n)}"
    scale = example.scale * ds.magnitude(example.args) if case.tol is not None else 1.0
    for i, (g, n, w) in enumerate(zip(got, exp_n, exp_w)):
        eps_dtype = eps_dtypes[i] if case.post is not None and i < len(eps_dtypes) else None
        if eps_dtype is not None and np.dtype(eps_dtype).kind not in "fc":
            eps_dtype = None
        ds.compare(g, n, w, tol=case.tol, scale=scale, what=f"{what} [result {i}]",
                   check_dtype=case.check_dtype, eps_dtype=eps_dtype)
    if not case.mutates:
        # inputs are never modified
        for d, a in zip(dist_args, example.args):
            if isinstance(a, Operand):
                np.testing.assert_array_equal(np.asarray(d), a.host,
                                              err_msg=f"{what}: input changed")
