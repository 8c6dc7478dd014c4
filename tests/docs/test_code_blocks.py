"""Covers: none (the code blocks of README.md and docs/)

Every code block of README.md and docs/ runs, as a reader would run it.

The Python blocks of one page run in order in one fresh interpreter with 8 virtual CPU devices
and one namespace (later blocks use what earlier ones defined, as a reader does): nothing is
imported or defined for them, so a block that uses a name the page never defined (``jnp``
without ``import jax.numpy as jnp``) fails here as it would for a reader. A block that cannot
run here (a GPU, a cluster launcher) is preceded by the line
``<!-- doc-test: skip: <reason> -->``; each such block is reported as a skipped test with its
reason (`test_skipped_block`). Hidden set-up (the former ``<!-- doc-test: setup`` comments,
which ran code readers never saw) is refused. Shell blocks are commands (installs,
launchers): the scripts and modules they name must exist in the repository, and a pip extra
they install must exist in pyproject.toml.
"""
from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))
SKIP = re.compile(r"<!--\s*doc-test:\s*skip:\s*(.+?)\s*-->")
HIDDEN = re.compile(r"<!--\s*doc-test:\s*setup")
FENCE = re.compile(r"^```(\w*)\s*$")


def blocks(page: pathlib.Path):
    """(language, first line number, code, skip reason or None) for each fenced block, in page
    order."""
    lines = page.read_text().splitlines()
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m or not m.group(1):
            i += 1
            continue
        start, lang = i + 1, m.group(1)
        j = start
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        before = lines[i - 1] if i else ""
        skip = SKIP.search(before)
        out.append((lang, start + 1, "\n".join(lines[start:j]), skip.group(1) if skip else None))
        i = j + 1
    return out


def _python_pages():
    return [p for p in PAGES if any(lang == "python" for lang, *_ in blocks(p))]


@pytest.mark.parametrize("page", _python_pages(), ids=lambda p: p.name)
def test_python_blocks_run(page, tmp_path):
    parts = []
    for lang, line, code, skip in blocks(page):
        if lang != "python" or skip:
            continue
        # each block keeps its line numbers in tracebacks
        parts.append(f"exec(compile({code!r}, {f'{page.name}:{line}'!r}, 'exec'))")
    script = tmp_path / "blocks.py"
    script.write_text("\n".join(parts) + "\n")
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8",
               MPLBACKEND="Agg", PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{page.name}: a code block failed\n{result.stderr[-4000:]}"


def test_no_hidden_setup():
    """Code a reader does not see must not run before the blocks (issue 38: numerical.md used
    jnp, which only a hidden set-up imported)."""
    for page in PAGES:
        for number, line in enumerate(page.read_text().splitlines(), 1):
            assert not HIDDEN.search(line), (
                f"{page.name}:{number}: a hidden doc-test setup; put the code in a visible "
                "block (the reader needs it too)")


def _skipped():
    return [(page, line, skip) for page in PAGES
            for _lang, line, _code, skip in blocks(page) if skip is not None]


@pytest.mark.parametrize("page,line,reason", _skipped(),
                         ids=lambda v: v.name if isinstance(v, pathlib.Path) else str(v)[:0])
def test_skipped_block(page, line, reason):
    pytest.skip(f"{page.name}:{line}: {reason}")


def test_skipped_blocks_say_why():
    for page in PAGES:
        for _lang, line, _code, skip in blocks(page):
            if skip is not None:
                assert len(skip) > 10, f"{page.name}:{line}: give the reason a block is not run"


_PATH = re.compile(r"(?:python3?\s+)((?:examples|benchmarks|tools|tests)/[\w/.-]+\.py)")
_MODULE = re.compile(r"python3?\s+-m\s+(darray[\w.]*)")


def test_shell_blocks_name_existing_files():
    for page in PAGES:
        for lang, line, code, _skip in blocks(page):
            if lang not in ("bash", "sh", "console", "shell"):
                continue
            for path in _PATH.findall(code):
                assert (ROOT / path).exists(), f"{page.name}:{line}: {path} does not exist"
            for module in _MODULE.findall(code):
                file = ROOT / (module.replace(".", "/") + ".py")
                package = ROOT / module.replace(".", "/") / "__init__.py"
                assert file.exists() or package.exists(), (
                    f"{page.name}:{line}: module {module} does not exist")


_EXTRA = re.compile(r"pip install[^\n]*?['\"]?(?:\.|darray)\[([\w,-]+)\]")


def test_pip_extras_exist():
    """from_jaxdecomp.md installed a `[jaxdecomp]` extra that pyproject.toml does not define."""
    import tomllib
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
                 ["optional-dependencies"])
    for page in PAGES:
        for number, line in enumerate(page.read_text().splitlines(), 1):
            for group in _EXTRA.findall(line):
                for name in group.split(","):
                    assert name in extras, (f"{page.name}:{number}: pip extra [{name}] is not "
                                            f"in pyproject.toml's {sorted(extras)}")
