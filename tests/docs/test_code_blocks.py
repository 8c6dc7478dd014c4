"""Every code block of README.md and docs/ runs.

Python blocks of one page run in order in one fresh interpreter with 8 virtual CPU devices
(later blocks use what earlier ones defined, as a reader does), and must not raise. A block
that cannot run here (a GPU, a cluster launcher) is preceded by the line
``<!-- doc-test: skip: <reason> -->`` and is listed with its reason by
`test_skipped_blocks_say_why`. Where a page's fragments use names a reader already has (an
array `x`, a mesh, a file to read), the page defines them in a comment that only readers of
the source see, ``<!-- doc-test: setup`` ... ``-->``, which runs at its place in the page.
Shell blocks are commands (installs, launchers): the scripts and modules they name must exist
in the repository.
"""
from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
SKIP = re.compile(r"<!--\s*doc-test:\s*skip:\s*(.+?)\s*-->")
SETUP = re.compile(r"^<!--\s*doc-test:\s*setup\s*$")
FENCE = re.compile(r"^```(\w*)\s*$")


def blocks(page: pathlib.Path):
    """(language, first line number, code, skip reason or None) for each fenced block and each
    setup comment (language "setup"), in page order."""
    lines = page.read_text().splitlines()
    out, i = [], 0
    while i < len(lines):
        if SETUP.match(lines[i]):
            j = i + 1
            while j < len(lines) and lines[j].strip() != "-->":
                j += 1
            out.append(("setup", i + 2, "\n".join(lines[i + 1:j]), None))
            i = j + 1
            continue
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
        if lang not in ("python", "setup") or skip:
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
