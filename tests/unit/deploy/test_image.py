"""The container image definition: a small Dockerfile linter, since it cannot be built here."""

from __future__ import annotations

import fnmatch
import json
import re

import pytest

from tests.unit.deploy.schema import REPO

DOCKERFILE = REPO / "Dockerfile"
DOCKERIGNORE = REPO / ".dockerignore"


def instructions(text: str) -> list[tuple[str, str]]:
    """Return (INSTRUCTION, arguments) pairs: comments dropped, continuations joined."""
    result: list[tuple[str, str]] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue  # a comment inside a continued instruction
        if line.endswith("\\"):
            pending += line[:-1].rstrip() + " "
            continue
        keyword, _, arguments = (pending + line).partition(" ")
        result.append((keyword.upper(), arguments.strip()))
        pending = ""
    return result


def _ignored(path: str) -> bool:
    patterns = [p.strip() for p in DOCKERIGNORE.read_text().splitlines()
                if p.strip() and not p.startswith("#")]
    return any(fnmatch.fnmatch(path, p) or path.startswith(p.rstrip("/") + "/")
               for p in patterns)


def _all(keyword: str) -> list[str]:
    return [args for kw, args in instructions(DOCKERFILE.read_text()) if kw == keyword]


def test_the_parser_joins_continuations_and_drops_comments() -> None:
    text = "# c\nFROM a:1\nRUN x \\\n  # inner\n  && y\nCMD [\"z\"]\n"
    assert instructions(text) == [("FROM", "a:1"), ("RUN", "x && y"), ("CMD", '["z"]')]


def test_the_base_image_is_pinned_by_tag() -> None:
    bases = _all("FROM")
    assert bases
    for base in bases:
        image = base.split()[0]
        name, _, tag = image.partition("@")[0].rpartition(":")
        assert name, f"{image} has no tag"
        assert tag not in ("", "latest")
        assert re.fullmatch(r"python:3\.1[1-9][\w.-]*", image.partition("@")[0])


@pytest.mark.parametrize("keyword", ["ENTRYPOINT", "CMD"])
def test_entrypoint_and_cmd_are_exec_form(keyword: str) -> None:
    [arguments] = _all(keyword)
    parsed = json.loads(arguments)
    assert isinstance(parsed, list)
    assert all(isinstance(p, str) for p in parsed)


def test_the_entrypoint_is_the_plugin_and_runs_it_by_default() -> None:
    [entrypoint] = _all("ENTRYPOINT")
    [cmd] = _all("CMD")
    assert json.loads(entrypoint) == ["nri-cpuset"]
    assert json.loads(cmd) == ["run"]


def test_nothing_is_added_from_a_url() -> None:
    for arguments in _all("ADD"):
        assert "://" not in arguments


def test_pip_keeps_no_cache_in_the_image() -> None:
    installs = [run for run in _all("RUN") if "pip install" in run]
    assert installs
    for run in installs:
        for command in re.split(r"&&|;", run):
            if "pip install" in command:
                assert "--no-cache-dir" in command


def test_the_image_installs_the_engine_the_plugin_pins_from_the_same_tree() -> None:
    # nri-cpuset requires cpuset-core of its own version, built from src/ (src/pyproject.toml):
    # both in one pip call, or pip would look for that cpuset-core on an index.
    installs = [run for run in _all("RUN") if "pip install" in run]
    assert any(re.search(r"pip install [^&;]*(\S+)/src \1(\s|$)", run) for run in installs)
    copied = {s for copy in _all("COPY") for s in copy.split()[:-1]}
    assert {"pyproject.toml", "setup.py", "MANIFEST.in", "src"} <= copied


def test_the_build_context_sends_what_the_copies_need_and_no_venv_or_git() -> None:
    assert _ignored(".venv")
    assert _ignored(".git")
    sources = [s for copy in _all("COPY") for s in copy.split()[:-1] if not s.startswith("--")]
    assert sources
    for source in sources:
        assert (REPO / source).exists(), source
        assert not _ignored(source), f"{source} is excluded by .dockerignore"
