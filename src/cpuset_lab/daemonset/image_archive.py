"""The plugin's image as ``scripts/build-image`` leaves it (an OCI archive), and whether it is
older than the sources it was built from: a pod run from a stale archive runs yesterday's
plugin against today's tests (it happened: a VM run whose archive was copied from an earlier
checkout tested a fix the image did not have)."""

from __future__ import annotations

import json
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

BUILT_FROM: Final = ("Dockerfile", "pyproject.toml", "setup.py", "MANIFEST.in", "src")
"""What the image is built from (the Dockerfile's first stage copies these), relative to the
checkout; a directory counts by its files."""


def archive_path(repo: Path) -> Path:
    """The OCI archive ``bash scripts/build-image`` leaves (its ``--print`` names it)."""
    printed = subprocess.run(["bash", str(repo / "scripts/build-image"), "--print"],  # noqa: S603,S607
                             check=True, capture_output=True, text=True, cwd=repo).stdout
    fields = dict(line.split("=", 1) for line in printed.splitlines() if "=" in line)
    return repo / fields["archive"]


def archive_image_name(archive: Path) -> str:
    """The image's name as the archive's index records it (``ctr images import`` keeps it)."""
    with tarfile.open(archive) as tar:
        member = tar.extractfile("index.json")
        assert member is not None
        index: dict[str, Any] = json.load(member)
    name: str = index["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"]
    return name


def newer_sources(archive: Path, repo: Path) -> list[Path]:
    """The image's sources changed since ``archive`` was written (by modification time, as
    make judges; bytecode caches aside). Empty when it is current; every source when there is
    no archive."""
    built = archive.stat().st_mtime if archive.is_file() else float("-inf")
    return [path for path in _sources(repo) if path.stat().st_mtime > built]


def stale(archive: Path, repo: Path) -> str:
    """Why ``archive`` cannot be run as the plugin of ``repo`` (``""``: it can)."""
    changed = newer_sources(archive, repo)
    if not changed:
        return ""
    return ("missing" if not archive.is_file()
            else f"older than {changed[0].relative_to(repo)}: it would run an old plugin")


def _sources(repo: Path) -> Iterator[Path]:
    for name in BUILT_FROM:
        path = repo / name
        if path.is_file():
            yield path
        elif path.is_dir():
            yield from (p for p in sorted(path.rglob("*")) if p.is_file() and not _made(p))


def _made(path: Path) -> bool:
    """Written by tools beside the sources (bytecode, an editable install's metadata), never
    copied into the image's wheels."""
    return path.suffix == ".pyc" or any(
        part == "__pycache__" or part.endswith(".egg-info") for part in path.parts)
