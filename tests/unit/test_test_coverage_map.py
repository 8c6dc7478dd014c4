"""Covers: none (the tests' Covers lines, read against the files of darray/_src)

Tests point back at the code (issue 48, item 4): every test file's module docstring opens with
the darray/_src modules it covers, in one form a machine reads:

    Covers: darray/_src/fft/api.py, darray/_src/plans/fft_plan.py
    Covers: darray/_src/fft/freq.py

one or more leading lines, each ``Covers:`` and comma-separated paths from the repository root,
then a blank line and the prose. A test of no darray/_src module (a benchmark's smoke run, the
project's metadata) says so in one line: ``Covers: none (what it covers instead)``.

Every darray/_src module is named by some test; a package face (an ``__init__.py`` of only a
docstring and imports) defines nothing to test and is exempt. Every path named exists. No test
folder holds more than MAX_TESTS_PER_FOLDER test files, and no test imports another test
module (what tests share lives in tests/helpers.py).
"""
from __future__ import annotations

import ast
import collections
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SRC = ROOT / "darray" / "_src"
TESTS = ROOT / "tests"
MAX_TESTS_PER_FOLDER = 30

_PATH = re.compile(r"darray/_src/[\w/]+\.py")
_NONE = re.compile(r"none \(.+\)")


def covers(docstring: str | None) -> list[str] | None:
    """The paths a module docstring's leading ``Covers:`` lines name ([] for ``Covers: none
    (...)``), or None when it opens with no Covers line. Raises ValueError on a malformed one."""
    lines = (docstring or "").splitlines()
    heads = []
    for line in lines:
        if not line.startswith("Covers:"):
            break
        heads.append(line[len("Covers:"):].strip())
    if not heads:
        return None
    if len(lines) > len(heads) and lines[len(heads)].strip():
        raise ValueError("the Covers lines must be followed by a blank line")
    if any(_NONE.fullmatch(h) for h in heads):
        if len(heads) > 1:
            raise ValueError("'Covers: none (...)' must be the only Covers line")
        return []
    paths = []
    for head in heads:
        for item in head.split(","):
            item = item.strip()
            if not _PATH.fullmatch(item):
                raise ValueError(f"{item!r} is not a darray/_src/....py path (or write "
                                 "'Covers: none (why)')")
            paths.append(item)
    return paths


def all_test_files() -> list[pathlib.Path]:
    return sorted(TESTS.rglob("test_*.py"))


def defines_nothing(path: pathlib.Path) -> bool:
    """A package face: an __init__.py of only a docstring and imports."""
    if path.name != "__init__.py":
        return False
    body = ast.parse(path.read_text()).body
    return all(isinstance(s, (ast.Import, ast.ImportFrom))
               or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)) for s in body)


def src_modules() -> set[str]:
    return {p.relative_to(ROOT).as_posix() for p in SRC.rglob("*.py") if not defines_nothing(p)}


def coverage_map() -> dict[str, list[str] | None]:
    """test file (relative path) -> the modules it names (None: no Covers line)."""
    out = {}
    for path in all_test_files():
        doc = ast.get_docstring(ast.parse(path.read_text()), clean=False)
        try:
            out[path.relative_to(ROOT).as_posix()] = covers(doc)
        except ValueError as err:
            where = path.relative_to(ROOT)
            raise AssertionError(f"{where}: malformed Covers line: {err}") from None
    return out


# -- the rules ---------------------------------------------------------------------------------
def test_every_test_file_opens_with_a_covers_line():
    missing = [f for f, paths in coverage_map().items() if paths is None]
    assert not missing, (
        f"{len(missing)} test file(s) do not open with a 'Covers:' line naming the darray/_src "
        "modules they test (the first lines of the module docstring; 'Covers: none (why)' for a "
        "test of no module):\n  " + "\n  ".join(missing))


def test_every_named_module_exists():
    stale = [f"{f}: {p}" for f, paths in coverage_map().items() for p in paths or ()
             if not (ROOT / p).is_file()]
    assert not stale, ("Covers lines name modules that do not exist (moved or deleted? name "
                       "where the code lives now):\n  " + "\n  ".join(stale))


def test_every_src_module_is_named_by_a_test():
    named = {p for paths in coverage_map().values() for p in paths or ()}
    uncovered = sorted(src_modules() - named)
    assert not uncovered, (
        f"{len(uncovered)} darray/_src module(s) are named by no test's 'Covers:' line; add the "
        "module to the Covers line of the test that exercises it, or write one:\n  "
        + "\n  ".join(uncovered))


def test_no_test_folder_holds_more_than_30_test_files():
    per_folder = collections.Counter(p.parent.relative_to(ROOT).as_posix()
                                     for p in all_test_files())
    crowded = {d: n for d, n in per_folder.items() if n > MAX_TESTS_PER_FOLDER}
    assert not crowded, (f"test folders with more than {MAX_TESTS_PER_FOLDER} test files (split "
                         f"them as darray/_src is split): {crowded}")


def test_no_test_imports_another_test_module():
    """What tests share lives in tests/helpers.py (or a reference module beside it), so that
    running one test file never collects, or depends on, another."""
    found = []
    for path in all_test_files():
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{path.relative_to(ROOT)}: imports {n}" for n in names
                      if n.split(".")[-1].startswith("test_")]
    assert not found, ("test files import other test modules; move what they share into "
                       "tests/helpers.py:\n  " + "\n  ".join(found))


# -- the reader itself -------------------------------------------------------------------------
def test_covers_reads_one_or_more_lines_and_stops_at_the_prose():
    doc = ("Covers: darray/_src/fft/api.py, darray/_src/plans/fft_plan.py\n"
           "Covers: darray/_src/fft/freq.py\n\nThe prose. Covers: darray/_src/x.py is not read.")
    assert covers(doc) == ["darray/_src/fft/api.py", "darray/_src/plans/fft_plan.py",
                           "darray/_src/fft/freq.py"]
    assert covers("Covers: none (benchmarks/plot.py)\n\nProse.") == []
    assert covers("The prose first.\nCovers: darray/_src/fft/api.py") is None
    assert covers(None) is None


@pytest.mark.parametrize("doc, match", [
    ("Covers: fft/api.py", "not a darray/_src"),
    ("Covers: darray/_src/fft/api.py darray/_src/fft/freq.py", "not a darray/_src"),
    ("Covers: darray/_src/fft/api.py\nProse with no blank line.", "blank line"),
    ("Covers: none (x)\nCovers: darray/_src/fft/api.py", "only Covers line"),
    ("Covers: none", "not a darray/_src"),
])
def test_covers_refuses_a_malformed_line(doc, match):
    with pytest.raises(ValueError, match=match):
        covers(doc)


def test_the_check_names_what_is_uncovered(tmp_path, monkeypatch):
    """The rule's own failure message lists the module no test names."""
    src = tmp_path / "darray" / "_src"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "__init__.py").write_text('"""A face."""\nimport os\n')
    (src / "pkg" / "named.py").write_text("X = 1\n")
    (src / "pkg" / "lonely.py").write_text("Y = 2\n")
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_a.py").write_text('"""Covers: darray/_src/pkg/named.py\n\nA test."""\n')
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    monkeypatch.setitem(globals(), "SRC", src)
    monkeypatch.setitem(globals(), "TESTS", tests)
    named_in_message = r"1 darray/_src module\(s\)[^\n]*\n\s+darray/_src/pkg/lonely\.py"
    with pytest.raises(AssertionError, match=named_in_message):
        test_every_src_module_is_named_by_a_test()
