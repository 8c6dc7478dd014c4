"""Covers: darray/_src/methods/table.py

The typed surface: the generated stubs agree with the tables, and a user's file type-checks.

DistArray's methods and the elementwise functions are made at import from tables
(darray/_src/methods/table.py, darray/_src/api/elementwise.py); type checkers read
`darray/_src/distarray_methods.pyi` and `darray/_src/api/elementwise_functions.pyi`
instead, which tools/gen_typing_stubs.py renders from the same tables. These tests fail when a table
changes without its stub, when an attached name is missing from the stub, and when mypy sees
anything but a DistArray in tests/typing/user_example.py.
"""
from __future__ import annotations

import ast
import importlib.util
import pathlib
import subprocess
import sys

import darray
from darray._src.api import elementwise
from darray._src.methods import table as methods

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _generator():
    spec = importlib.util.spec_from_file_location("gen_typing_stubs",
                                                  ROOT / "tools" / "gen_typing_stubs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_stubs_are_what_the_tables_render():
    gen = _generator()
    for relative, render in gen.TARGETS.items():
        committed = (ROOT / relative).read_text()
        assert committed == render(), (
            f"{relative} is out of date with its table: run `python tools/gen_typing_stubs.py`")


def _stub_names(relative: str, cls: str | None = None) -> set[str]:
    tree = ast.parse((ROOT / relative).read_text())
    body = tree.body
    if cls is not None:
        body = next(n for n in body if isinstance(n, ast.ClassDef) and n.name == cls).body
    return {n.name for n in body if isinstance(n, ast.FunctionDef)}


def test_every_attached_name_is_declared():
    declared = _stub_names("darray/_src/distarray_methods.pyi", "DistArrayMethods")
    attached = set(methods.METHODS) | set(methods.PROTOCOL)
    for dunder, _ in methods.OPERATORS:
        attached |= {dunder, "__r" + dunder[2:], "__i" + dunder[2:]}
    attached |= {d for d, _ in methods.COMPARISONS} | {d for d, _ in methods.UNARY}
    assert attached == declared
    for name in attached:  # and each one is really on the class
        assert hasattr(darray.DistArray, name), name


def test_every_elementwise_function_is_declared():
    declared = _stub_names("darray/_src/api/elementwise_functions.pyi")
    assert declared == {row[0] for row in elementwise.TABLE}
    for name in declared:
        assert callable(getattr(darray, name)), name


def test_user_example_type_checks(tmp_path):
    """mypy (a test dependency) on a user's script: every assert_type there holds."""
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--ignore-missing-imports", "--follow-imports=silent",
         "--no-error-summary", "--cache-dir", str(tmp_path / "cache"),
         str(ROOT / "tests" / "typing" / "user_example.py")],
        capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
