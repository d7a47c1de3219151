"""Containers' ``cpuset.cpus`` kept open between writes: reused while the cgroup is there,
closed when the container is forgotten or at a resync, dropped and written afresh when a write
on it says the cgroup is gone, bounded, and never kept for a plain file."""

from __future__ import annotations

import errno
import os
import resource
from pathlib import Path

import pytest

from cpuset_adapters import kept_files
from cpuset_adapters.cgroup_writer import KernelCpusetWriter
from cpuset_adapters.kept_files import KeptFiles
from tests.unit.adapters.cgroup_trees import V1_PATH, update, v1_tree


def always(_fd: int) -> bool:
    return True  # as for a cgroup file (size 0); a test's plain file reports its size


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_kept_file_is_written_again_without_opening_it(tmp_path: Path) -> None:
    file = tmp_path / "cpuset.cpus"
    file.write_text("0-15")
    files = KeptFiles(keeps=always)
    files.write("c", str(file), b"0-7")
    file.unlink()  # a fresh open would fail now: the second write must use the kept one
    files.write("c", str(file), b"0-3")
    assert len(files) == 1
    files.close_all()


def test_forgetting_a_container_closes_its_file(tmp_path: Path) -> None:
    file = tmp_path / "cpuset.cpus"
    file.write_text("")
    files = KeptFiles(keeps=always)
    before = open_fds()
    files.write("c", str(file), b"0-7")
    assert open_fds() == before + 1
    files.forget("c")
    files.forget("c")  # twice, or never kept: nothing to do
    assert (len(files), open_fds()) == (0, before)


def test_a_resync_closes_every_kept_file(tmp_path: Path) -> None:
    files = KeptFiles(keeps=always)
    before = open_fds()
    for n in range(3):
        (tmp_path / f"f{n}").write_text("")
        files.write(f"c{n}", str(tmp_path / f"f{n}"), b"1")
    assert open_fds() == before + 3
    files.close_all()
    assert (len(files), open_fds()) == (0, before)


def test_a_write_that_says_the_cgroup_is_gone_is_made_afresh(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ENODEV (kernfs: the cgroup was removed) or EBADF: the kept descriptor is dropped and the
    file opened again, which refuses as a plain write does when the cgroup is really gone."""
    file = tmp_path / "cpuset.cpus"
    file.write_text("")
    files = KeptFiles(keeps=always)
    files.write("c", str(file), b"0-7")

    def gone(_fd: int, _value: bytes, _offset: int) -> int:
        raise OSError(errno.ENODEV, "No such device")

    monkeypatch.setattr(kept_files.os, "pwrite", gone)
    files.write("c", str(file), b"0-3")  # the file is there: opened and kept again
    assert file.read_text() == "0-3"
    assert len(files) == 1
    before = open_fds()
    file.unlink()
    with pytest.raises(FileNotFoundError):
        files.write("c", str(file), b"1")
    assert (len(files), open_fds()) == (0, before - 1)  # nothing kept for it any more


def test_a_value_the_kernel_refuses_keeps_the_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    file = tmp_path / "cpuset.cpus"
    file.write_text("")
    files = KeptFiles(keeps=always)
    files.write("c", str(file), b"0-7")

    def invalid(_fd: int, _value: bytes, _offset: int) -> int:
        raise OSError(errno.EINVAL, "Invalid argument")

    monkeypatch.setattr(kept_files.os, "pwrite", invalid)
    with pytest.raises(OSError, match="Invalid argument"):
        files.write("c", str(file), b"99")
    assert len(files) == 1  # the cgroup is still there
    files.close_all()


def test_a_container_whose_cgroup_is_another_now_gets_the_new_file(tmp_path: Path) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    old.write_text("")
    new.write_text("")
    files = KeptFiles(keeps=always)
    files.write("c", str(old), b"0-7")
    before = open_fds()
    files.write("c", str(new), b"0-3")
    assert new.read_text() == "0-3"
    assert (len(files), open_fds()) == (1, before)  # the old one closed
    files.close_all()


def test_no_more_than_the_limit_are_kept_the_rest_written_as_before(tmp_path: Path) -> None:
    files = KeptFiles(limit=2, keeps=always)
    for n in range(4):
        (tmp_path / f"f{n}").write_text("")
        files.write(f"c{n}", str(tmp_path / f"f{n}"), b"5")
    assert len(files) == 2
    assert {(tmp_path / f"f{n}").read_text() for n in range(4)} == {"5"}
    files.close_all()


def test_the_default_limit_is_half_the_soft_open_files_limit() -> None:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    expected = (65536 if soft == resource.RLIM_INFINITY else soft) // 2
    assert KeptFiles().limit == kept_files.default_limit() == expected


def test_a_plain_file_is_never_kept_and_is_written_whole_each_time(tmp_path: Path) -> None:
    file = tmp_path / "cpuset.cpus"
    file.write_text("0-15")
    files = KeptFiles()
    files.write("c", str(file), b"0-7")
    files.write("c", str(file), b"2")  # kept, a plain file would still end in "-7"
    assert file.read_text() == "2"
    assert len(files) == 0


def test_the_writer_keeps_cpus_files_open_and_closes_them_when_told(tmp_path: Path) -> None:
    directory = v1_tree(tmp_path)
    writer = KernelCpusetWriter(tmp_path, {"c-web": V1_PATH}.get)
    writer.files = KeptFiles(keeps=always)
    assert writer.apply([update(cpus="2-15")]).ok
    assert len(writer.files) == 1
    writer.forget("c-web")
    assert len(writer.files) == 0
    assert writer.apply([update(cpus="2-15", mems="0", previous_mems="0-1")]).ok
    assert (directory / "cpuset.mems").read_text() == "0"  # memory nodes: written as before
    writer.close_files()
    assert len(writer.files) == 0


def test_a_kept_unwritten_file_serves_the_first_write(tmp_path: Path) -> None:
    file = tmp_path / "cpuset.cpus"
    file.write_text("0-15")
    files = KeptFiles(keeps=always)
    files.keep("c", str(file))
    assert file.read_text() == "0-15"  # opened, not written nor truncated
    file.unlink()  # a fresh open would fail now: the write must use the kept one
    files.write("c", str(file), b"0-3")
    assert len(files) == 1
    files.close_all()


def test_keeping_is_skipped_when_kept_already_at_the_limit_or_not_a_cgroup_file(
        tmp_path: Path) -> None:
    for name in ("a", "b", "plain"):
        (tmp_path / name).write_text("")
    files = KeptFiles(limit=1, keeps=always)
    before = open_fds()
    files.keep("a", str(tmp_path / "a"))
    files.keep("a", str(tmp_path / "a"))  # kept already: no second descriptor
    files.keep("b", str(tmp_path / "b"))  # at the limit
    assert (len(files), open_fds()) == (1, before + 1)
    files.close_all()
    plain = KeptFiles(keeps=lambda _fd: False)
    plain.keep("c", str(tmp_path / "plain"))
    assert (len(plain), open_fds()) == (0, before)


def test_keeping_a_file_that_is_gone_creates_nothing_and_keeps_nothing(tmp_path: Path) -> None:
    files = KeptFiles(keeps=always)
    files.keep("c", str(tmp_path / "gone" / "cpuset.cpus"))
    files.keep("c", str(tmp_path / "cpuset.cpus"))
    assert len(files) == 0
    assert list(tmp_path.iterdir()) == []
