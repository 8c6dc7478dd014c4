"""Covers: none (the project's version and licence)

The project's metadata holds together: one version, one licence.

The version is written once, in darray/_version.py: pyproject.toml declares it dynamic and has
scikit-build-core's regex provider read it from there at build time, and `darray.__version__`
imports it, so a source checkout without an install reports it too. These tests fail when the
two could disagree (a version put back into [project], another input file, a changed regex) and
when the licence file or its declaration goes missing.
"""
from __future__ import annotations

import importlib.metadata
import pathlib
import re
import tomllib

import pytest

import darray

ROOT = pathlib.Path(__file__).resolve().parents[2]
# scikit-build-core's default for the version field (scikit_build_core.metadata.regex).
DEFAULT_VERSION_REGEX = r'(?i)^(__version__|VERSION)(?: ?\: ?str)? *= *([\'"])v?(?P<value>.+?)\2'


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _built_version() -> str:
    """The version a build writes into the metadata: the regex provider's reading."""
    settings = _pyproject()["tool"]["scikit-build"]["metadata"]["version"]
    assert settings["provider"] == "scikit_build_core.metadata.regex"
    regex = settings.get("regex", DEFAULT_VERSION_REGEX)
    match = re.search(regex, (ROOT / settings["input"]).read_text(), re.MULTILINE)
    assert match is not None, f"no version in {settings['input']}"
    return settings.get("result", "{value}").format(*match.groups(), **match.groupdict())


def test_version_is_single_sourced():
    project = _pyproject()["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert darray.__version__ == _built_version()
    # PEP 440: release segment, optional pre/dev part (packaging may not be installed)
    assert re.fullmatch(r"\d+\.\d+\.\d+((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?", darray.__version__)


def test_installed_metadata_matches_the_source():
    try:
        dist = importlib.metadata.distribution("darray")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("darray is not installed (source checkout on PYTHONPATH)")
    origin = dist.read_text("direct_url.json") or ""
    if ROOT.as_uri() not in origin:
        pytest.skip(f"the installed darray comes from elsewhere ({origin or 'no direct_url'})")
    assert dist.version == darray.__version__
    # the field every pip's `pip show` prints (pip < 25.0 ignores License-Expression)
    assert dist.metadata["License"] == "Apache-2.0"


def test_licence_file_and_declaration():
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text  # the full text, not a pointer to it
    assert "the darray authors" in text
    project = _pyproject()["project"]
    assert project["license"] == {"text": "Apache-2.0"}
    assert "License :: OSI Approved :: Apache Software License" in project["classifiers"]
    # the wheel ships LICENSE by the default licence-file globs, which a license-files key
    # (allowed only with an SPDX expression) would replace
    assert "license-files" not in project


def test_changelog_names_the_version():
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert "## [Unreleased]" in changelog
    assert darray.__version__ in changelog  # the Unreleased section says which version it is
