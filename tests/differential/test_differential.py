"""darray against numpy on drawn meshes, shapes, splits, dtypes and values: one test per Case.

The fast profile runs in the default test run; test_matches_numpy_large (10x the examples)
is the slow tier. DARRAY_DIFF_PROFILE=large makes the default test use the large profile too.
"""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cases  # noqa: F401  (fills the registry)
from conftest import PROFILE
from registry import REGISTRY
from runner import run_case


def _params():
    out = []
    for case in REGISTRY:
        marks = [pytest.mark.xfail(strict=True, reason=case.xfail)] if case.xfail else []
        out.append(pytest.param(case, id=case.name, marks=marks))
    return out


@pytest.mark.parametrize("case", _params())
@settings(settings.get_profile(f"darray-{PROFILE}"))
@given(data=st.data())
def test_matches_numpy(case, data):
    run_case(case, data.draw(case.draw, label="example"))


@pytest.mark.slow
@pytest.mark.parametrize("case", _params())
@settings(settings.get_profile("darray-large"))
@given(data=st.data())
def test_matches_numpy_large(case, data):
    run_case(case, data.draw(case.draw, label="example"))
