"""The kubelet's volume behaviours the lab copies: ``hostPath`` type checks before a container
starts, and the atomic writer that fills (and swaps) ``configMap`` volumes through ``..data``."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cpuset_lab.daemonset import kubelet_volumes
from cpuset_lab.daemonset.kubelet_volumes import (
    HostPathCheckError,
    check_host_path,
    update_configmap,
    write_configmap,
)

# ---- hostPath type checks ------------------------------------------------------------------


@pytest.fixture
def kinds(tmp_path: Path) -> Iterator[dict[str, Path]]:
    """One path of each kind: a directory, a file, a socket, a character device."""
    directory = tmp_path / "dir"
    directory.mkdir()
    regular = tmp_path / "file"
    regular.write_text("x")
    sock_path = tmp_path / "sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(sock_path))
    try:
        yield {"dir": directory, "file": regular, "sock": sock_path, "char": Path("/dev/null")}
    finally:
        listener.close()


@pytest.mark.parametrize(("kind", "good", "bad", "wanted"), [
    ("Directory", "dir", "file", "a directory"),
    ("DirectoryOrCreate", "dir", "file", "a directory"),
    ("File", "file", "dir", "a file"),
    ("FileOrCreate", "file", "dir", "a file"),
    ("Socket", "sock", "file", "a socket"),
    ("CharDevice", "char", "dir", "a character device"),
    ("BlockDevice", None, "char", "a block device"),
])
def test_host_path_types_are_checked(kinds: dict[str, Path], kind: str, good: str | None,
                                     bad: str, wanted: str) -> None:
    if good is not None:
        check_host_path("vol", kinds[good], kind)
    with pytest.raises(HostPathCheckError) as raised:
        check_host_path("vol", kinds[bad], kind)
    assert str(raised.value) == f"hostPath volume 'vol': {kinds[bad]} is not {wanted} (type {kind})"


@pytest.mark.parametrize("kind", ["Directory", "File", "Socket", "CharDevice", "BlockDevice"])
def test_a_missing_path_fails_unless_its_type_creates_it(tmp_path: Path, kind: str) -> None:
    expected = rf"'vol': {tmp_path}/gone does not exist \(type {kind} expects"
    with pytest.raises(HostPathCheckError, match=expected):
        check_host_path("vol", tmp_path / "gone", kind)
    assert not (tmp_path / "gone").exists()


def test_or_create_types_create_with_the_kubelets_modes(tmp_path: Path) -> None:
    old = os.umask(0o077)
    try:
        check_host_path("d", tmp_path / "a" / "dir", "DirectoryOrCreate")
        check_host_path("f", tmp_path / "b" / "file", "FileOrCreate")
    finally:
        os.umask(old)
    assert (tmp_path / "a" / "dir").stat().st_mode & 0o777 == 0o755
    assert (tmp_path / "b" / "file").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "b" / "file").read_bytes() == b""


def test_no_type_checks_nothing_and_an_unknown_type_is_refused(tmp_path: Path) -> None:
    check_host_path("vol", tmp_path / "gone", "")
    with pytest.raises(ValueError, match="unknown type 'Dir'"):
        check_host_path("vol", tmp_path, "Dir")


# ---- ConfigMap volumes ---------------------------------------------------------------------


def test_a_config_map_is_written_through_data(tmp_path: Path) -> None:
    volume = tmp_path / "config"
    payload = write_configmap(volume, {"config.toml": "a = 1\n"})
    assert payload.parent == volume
    assert payload.name.startswith("..")
    assert payload.name != "..data"
    assert os.readlink(volume / "..data") == payload.name
    assert os.readlink(volume / "config.toml") == "..data/config.toml"
    assert (volume / "config.toml").read_text() == "a = 1\n"
    assert sorted(p.name for p in volume.iterdir()) == sorted(
        ["..data", payload.name, "config.toml"])
    with pytest.raises(FileExistsError):
        write_configmap(volume, {"config.toml": "again"})


def test_an_update_swaps_data_by_one_rename_and_removes_the_old_payload(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    volume = tmp_path / "config"
    old = write_configmap(volume, {"config.toml": "a = 1\n", "gone.txt": "x"})
    renames: list[tuple[str, str, str]] = []
    real_replace = os.replace

    def spy(src: Any, dst: Any) -> None:
        # At the swap the old link still stands and the new one is ..data_tmp, ready.
        renames.append((Path(src).name, Path(dst).name, os.readlink(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(kubelet_volumes.os, "replace", spy)
    new = update_configmap(volume, {"config.toml": "a = 2\n"})
    assert renames == [("..data_tmp", "..data", old.name)]
    assert os.readlink(volume / "..data") == new.name
    assert not old.exists()
    assert not (volume / "..data_tmp").exists()
    assert not (volume / "gone.txt").is_symlink()
    assert (volume / "config.toml").read_text() == "a = 2\n"
    assert sorted(p.name for p in volume.iterdir()) == sorted(["..data", new.name, "config.toml"])


def test_an_update_needs_a_written_volume_and_paths_stay_inside(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        update_configmap(tmp_path / "never", {"a": "b"})
    for bad in ("/etc/passwd", "../escape", "..data/x"):
        with pytest.raises(ValueError, match="relative path inside"):
            write_configmap(tmp_path / bad.replace("/", "_"), {bad: "x"})


def test_nested_item_paths_link_their_top_directory(tmp_path: Path) -> None:
    volume = tmp_path / "config"
    write_configmap(volume, {"sub/dir/file.txt": "x"})
    assert os.readlink(volume / "sub") == "..data/sub"
    assert (volume / "sub/dir/file.txt").read_text() == "x"

