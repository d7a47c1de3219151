"""A pod's volumes as the kubelet prepares them on its node: the ``hostPath`` type checks it makes
before a container starts, and the atomic writer it fills ``configMap`` volumes with.

The lab runs the DaemonSet's pod through CRI (see :mod:`cpuset_lab.daemonset`); CRI only
bind-mounts host paths, so whatever the kubelet does to those paths first has to happen here, the
same way: a ``hostPath`` of type ``Directory`` that is missing must fail the pod, not be created
by the runtime, and the plugin must see its config as the kubelet lays it out (``config.toml`` a
symlink through ``..data``, swapped atomically on a ConfigMap update).
"""

from __future__ import annotations

import os
import stat
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final

DATA_DIR: Final = "..data"
"""The symlink a ConfigMap volume's visible files resolve through (points at the current payload
directory)."""
DATA_DIR_TMP: Final = "..data_tmp"
"""The new ``..data`` link made next to it and renamed over it: the swap is one ``rename``."""
DIR_MODE: Final = 0o755
"""What the kubelet gives a created ``DirectoryOrCreate`` path and a payload directory."""
FILE_MODE: Final = 0o644
"""A ConfigMap file's mode when neither ``defaultMode`` nor an item's ``mode`` is given (420)."""


class HostPathCheckError(Exception):
    """A ``hostPath`` volume's path is not what its ``type`` demands (the kubelet fails the pod)."""


def _is_directory(info: os.stat_result) -> bool:
    return stat.S_ISDIR(info.st_mode)


def _is_file(info: os.stat_result) -> bool:
    return stat.S_ISREG(info.st_mode)


_CHECKS: Final[Mapping[str, tuple[Callable[[os.stat_result], bool], str]]] = {
    "Directory": (_is_directory, "a directory"),
    "DirectoryOrCreate": (_is_directory, "a directory"),
    "File": (_is_file, "a file"),
    "FileOrCreate": (_is_file, "a file"),
    "Socket": (lambda info: stat.S_ISSOCK(info.st_mode), "a socket"),
    "CharDevice": (lambda info: stat.S_ISCHR(info.st_mode), "a character device"),
    "BlockDevice": (lambda info: stat.S_ISBLK(info.st_mode), "a block device"),
}
HOST_PATH_TYPES: Final = frozenset({"", *_CHECKS})
"""Every ``hostPath.type`` the kubelet knows; ``""`` (the default) checks nothing."""


def check_host_path(volume: str, path: Path, kind: str) -> None:
    """Check (or create) ``path`` as the kubelet does for a ``hostPath`` of type ``kind``.

    ``DirectoryOrCreate`` makes a missing directory (and its parents) with mode 0755,
    ``FileOrCreate`` an empty file with mode 0644 (its parent directories 0755); the other types
    only check. Symlinks are followed, as the bind mount follows them. Raises
    :class:`HostPathCheckError` naming the volume, the path and the expected type, or
    ``ValueError`` for a type the kubelet does not know.
    """
    if kind not in HOST_PATH_TYPES:
        raise ValueError(f"hostPath volume {volume!r}: unknown type {kind!r}")
    if not kind:
        return
    if not path.exists():
        if kind == "DirectoryOrCreate":
            path.mkdir(mode=DIR_MODE, parents=True)
            path.chmod(DIR_MODE)  # mkdir's mode is cut by the umask; the kubelet's is not
        elif kind == "FileOrCreate":
            path.parent.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
            path.touch(mode=FILE_MODE)
            path.chmod(FILE_MODE)
        else:
            raise HostPathCheckError(
                f"hostPath volume {volume!r}: {path} does not exist (type {kind} expects it to "
                f"be {_CHECKS[kind][1]})")
    test, wanted = _CHECKS[kind]
    if not test(path.stat()):
        raise HostPathCheckError(
            f"hostPath volume {volume!r}: {path} is not {wanted} (type {kind})")


def _payload_path(name: str) -> PurePosixPath:
    """A file's path inside the volume, refused when it could escape it (as the kubelet does)."""
    path = PurePosixPath(name)
    if not name or path.is_absolute() or ".." in path.parts or path.parts[0].startswith(".."):
        raise ValueError(f"ConfigMap file path {name!r} is not a relative path inside the volume")
    return path


def _write_payload(directory: Path, files: Mapping[str, bytes | str]) -> Path:
    """A new hidden ``..<UTC timestamp>.<random>`` directory holding ``files``."""
    prefix = time.strftime("..%Y_%m_%d_%H_%M_%S.", time.gmtime())
    payload = Path(tempfile.mkdtemp(prefix=prefix, dir=directory))
    payload.chmod(DIR_MODE)
    for name, content in files.items():
        target = payload / _payload_path(name)
        target.parent.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        target.write_bytes(content.encode() if isinstance(content, str) else content)
        target.chmod(FILE_MODE)
    return payload


def _swap_data_link(directory: Path, payload: Path) -> None:
    """Point ``..data`` at ``payload`` in one ``rename``: a reader sees the old or the new
    payload, never a missing link or a mix of both."""
    tmp = directory / DATA_DIR_TMP
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(payload.name)
    os.replace(tmp, directory / DATA_DIR)


def _visible_names(files: Mapping[str, bytes | str]) -> set[str]:
    return {_payload_path(name).parts[0] for name in files}


def _link_visible_files(directory: Path, names: set[str], old: set[str]) -> None:
    """``name -> ..data/name`` for each top-level entry; stale ones from the old payload go."""
    for name in sorted(names):
        link = directory / name
        if not link.is_symlink():
            link.symlink_to(f"{DATA_DIR}/{name}")
    for name in sorted(old - names):
        (directory / name).unlink(missing_ok=True)


def _current_payload(directory: Path) -> Path | None:
    data = directory / DATA_DIR
    return directory / os.readlink(data) if data.is_symlink() else None


def _store(directory: Path, files: Mapping[str, bytes | str], old: Path | None) -> Path:
    old_names = {entry.name for entry in old.iterdir()} if old is not None else set()
    payload = _write_payload(directory, files)
    _swap_data_link(directory, payload)
    _link_visible_files(directory, _visible_names(files), old_names)
    return payload


def write_configmap(directory: Path, files: Mapping[str, bytes | str]) -> Path:
    """Fill a new ConfigMap volume at ``directory`` as the kubelet's atomic writer does: the files
    in ``..<timestamp>``, ``..data`` linked to it, ``<name> -> ..data/<name>`` per top-level
    entry. Returns the payload directory. Refuses a directory that already has ``..data`` (that
    is :func:`update_configmap`'s job)."""
    directory.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    if _current_payload(directory) is not None:
        raise FileExistsError(f"{directory} already holds a ConfigMap payload; update it instead")
    return _store(directory, files, None)


def update_configmap(directory: Path, files: Mapping[str, bytes | str]) -> Path:
    """Replace a ConfigMap volume's files the kubelet's way: a new ``..<timestamp>`` directory,
    ``..data_tmp`` linked to it and renamed over ``..data``, then the old directory removed.
    Returns the new payload directory."""
    old = _current_payload(directory)
    if old is None:
        raise FileNotFoundError(f"{directory} holds no ConfigMap payload to update")
    payload = _store(directory, files, old)
    _remove_tree(old)
    return payload


def _remove_tree(path: Path) -> None:
    for child in sorted(path.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if child.is_dir() and not child.is_symlink():
            child.rmdir()
        else:
            child.unlink()
    path.rmdir()


@dataclass(frozen=True, slots=True, kw_only=True)
class HostPathVolume:
    """A ``hostPath`` volume: the manifest's path and the lab path that stands for it."""

    name: str
    manifest_path: str
    lab_path: Path
    type: str

    def check(self) -> None:
        """:func:`check_host_path` on the lab path."""
        check_host_path(self.name, self.lab_path, self.type)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigMapVolume:
    """A ``configMap`` volume: the ConfigMap it shows, where the lab keeps it, and its files
    (only the ``items`` when the volume lists some, under their ``path``)."""

    name: str
    config_map: str
    directory: Path
    files: Mapping[str, str]

    def write(self) -> Path:
        """:func:`write_configmap` with this volume's files."""
        return write_configmap(self.directory, self.files)
