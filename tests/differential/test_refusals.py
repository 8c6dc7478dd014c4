"""Covers: none (the differential harness's allow-lists)

A NotImplementedError fails its case unless the case's allow-list covers the example."""
import diff_runner
import numpy as np
import pytest
from diff_registry import AllowedRefusal, Case, Example
from diff_support import Operand, mesh_of


def _refuse(x):
    raise NotImplementedError("no plan for this layout")


def _example():
    mesh = mesh_of((8,))
    return Example(mesh, [Operand(np.arange(13.0), mesh, ("a",))])


def test_a_refusal_off_the_allow_list_fails_naming_the_case():
    case = Case("fft.fake[refuses]", None, _refuse, np.fft.fft)
    with pytest.raises(AssertionError, match=r"fft\.fake\[refuses\] on .*refused \(no plan "
                                             r"for this layout\); no entry of the case's "
                                             r"refusal allow-list"):
        diff_runner.run_case(case, _example())


def test_a_refusal_on_the_allow_list_is_recorded_with_its_reason():
    only_1d = AllowedRefusal(when=lambda e: e.args[0].host.ndim == 1, reason="a 1-d test")
    case = Case("fft.fake[allowed]", None, _refuse, np.fft.fft, refusals=(only_1d,))
    before = len(diff_runner.REFUSALS)
    diff_runner.run_case(case, _example())
    assert diff_runner.REFUSALS[before:] == [
        "fft.fake[allowed]: Operand(float64[13], mesh=(a:8), spec=('a',)) {}: allowed because "
        "a 1-d test: no plan for this layout"]
    two_d = _example()
    two_d.args[0] = Operand(np.ones((2, 3)), two_d.mesh, ("a",))
    with pytest.raises(AssertionError, match="allow-list"):
        diff_runner.run_case(case, two_d)
