"""Whether the plugin's image archive is current: older than any file it is built from, it is
rebuilt by the VM lab and refused by the pod e2e (a stale image runs an old plugin)."""

from __future__ import annotations

import os
from pathlib import Path

from cpuset_lab.daemonset.image_archive import archive_path, newer_sources, stale

REPO = Path(__file__).resolve().parents[3]


def checkout(root: Path) -> Path:
    (root / "src/cpuset_core/__pycache__").mkdir(parents=True)
    for name in ("Dockerfile", "pyproject.toml", "setup.py", "MANIFEST.in",
                 "src/cpuset_core/engine.py", "src/cpuset_core/__pycache__/engine.pyc"):
        (root / name).write_text("x")
        os.utime(root / name, (1000, 1000))
    (root / "README.md").write_text("not built from")
    return root


def test_an_archive_newer_than_every_source_is_current_and_a_missing_one_is_not(
        tmp_path: Path) -> None:
    repo = checkout(tmp_path)
    archive = repo / "build/image/nri-cpuset.oci.tar"
    assert len(newer_sources(archive, repo)) == 5  # no archive: every source, no bytecode
    assert stale(archive, repo) == "missing"
    archive.parent.mkdir(parents=True)
    archive.write_text("oci")
    os.utime(archive, (2000, 2000))
    assert newer_sources(archive, repo) == []
    assert stale(archive, repo) == ""


def test_a_source_changed_after_the_build_makes_the_archive_stale(tmp_path: Path) -> None:
    repo = checkout(tmp_path)
    archive = repo / "image.tar"
    archive.write_text("oci")
    os.utime(archive, (2000, 2000))
    os.utime(repo / "src/cpuset_core/engine.py", (3000, 3000))
    os.utime(repo / "src/cpuset_core/__pycache__/engine.pyc", (3000, 3000))  # not a source
    os.utime(repo / "README.md", (3000, 3000))  # not copied into the image
    info = repo / "src/cpuset_core.egg-info/PKG-INFO"  # an editable install's, after the build
    info.parent.mkdir()
    info.write_text("Name: cpuset-core")
    assert newer_sources(archive, repo) == [repo / "src/cpuset_core/engine.py"]
    assert stale(archive, repo).startswith("older than src/cpuset_core/engine.py")


def test_the_archive_is_where_build_image_says() -> None:
    archive = archive_path(REPO)
    assert archive.parent == REPO / "build/image"
    assert archive.name.startswith("nri-cpuset-")
    assert archive.name.endswith(".oci.tar")
