"""The kernel fast path's writer: other containers' cpusets written into fake cgroup trees of
both layouts (v1 per-controller with cgroupfs paths, v2 unified with systemd paths), and every
refusal reported per container without leaving files behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from cpuset_adapters import cgroup_writer
from cpuset_adapters.cgroup_writer import KernelCpusetWriter
from cpuset_adapters.kept_files import KeptFiles
from tests.unit.adapters.cgroup_trees import (
    V1_PATH,
    V2_PATH,
    cgroup,
    update,
    v1_tree,
    v2_tree,
)


def writer(root: Path, paths: dict[str, str]) -> KernelCpusetWriter:
    return KernelCpusetWriter(root, paths.get)


def test_a_v1_cgroupfs_container_gets_its_new_cpus_and_keeps_its_memory_nodes(
        tmp_path: Path) -> None:
    directory = v1_tree(tmp_path)
    outcome = writer(tmp_path, {"c-web": V1_PATH}).apply([update()])
    assert outcome.ok
    assert (directory / "cpuset.cpus").read_text() == "2-15"
    assert (directory / "cpuset.mems").read_text() == "0-1\n"  # unchanged: not written


def test_a_v2_systemd_container_gets_its_new_cpus_and_memory_nodes(tmp_path: Path) -> None:
    directory = v2_tree(tmp_path)
    outcome = writer(tmp_path, {"c-web": V2_PATH}).apply([update(cpus="4-7", mems="0")])
    assert outcome.ok
    assert (directory / "cpuset.cpus").read_text() == "4-7"
    assert (directory / "cpuset.mems").read_text() == "0"


def test_a_cgroup_that_is_gone_is_refused_by_name_and_nothing_is_created(
        tmp_path: Path) -> None:
    v1_tree(tmp_path)
    paths = {"c-web": V1_PATH, "c-gone": "/kubepods/burstable/pod1/c-gone"}
    outcome = writer(tmp_path, paths).apply([update("c-gone"), update()])
    assert outcome.failed == ("c-gone",)
    assert "default/web/c-gone" in outcome.detail
    assert "c-gone/cpuset.cpus" in outcome.detail
    assert not (tmp_path / "cpuset/kubepods/burstable/pod1/c-gone").exists()


def test_a_container_whose_runtime_gave_no_cgroup_path_is_refused(tmp_path: Path) -> None:
    v1_tree(tmp_path)
    outcome = writer(tmp_path, {}).apply([update()])
    assert outcome.failed == ("c-web",)
    assert "the runtime gave no cgroup path" in outcome.detail


def test_a_write_the_kernel_refuses_is_reported_with_its_reason(tmp_path: Path) -> None:
    directory = v1_tree(tmp_path)
    (directory / "cpuset.cpus").unlink()
    (directory / "cpuset.cpus").mkdir()  # any write fails (EISDIR), like EINVAL from a kernel
    outcome = writer(tmp_path, {"c-web": V1_PATH}).apply([update()])
    assert outcome.failed == ("c-web",)
    assert "Is a directory" in outcome.detail


def test_a_root_without_a_cpuset_hierarchy_is_unusable_and_says_where(tmp_path: Path) -> None:
    reason = writer(tmp_path, {}).unusable()
    assert reason == f"no cpuset hierarchy at {tmp_path / 'cpuset'}"


def test_a_writable_tree_of_either_layout_is_usable(tmp_path: Path) -> None:
    v1_root, v2_root = tmp_path / "v1", tmp_path / "v2"
    v1_tree(v1_root)
    v2_root.mkdir()
    v2_tree(v2_root)
    assert writer(v1_root, {}).unusable() == ""
    assert writer(v1_root, {}).version == 1
    assert writer(v2_root, {}).unusable() == ""
    assert writer(v2_root, {}).version == 2


def test_usability_is_a_root_files_write_permission_not_its_directorys(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A cgroup2 root directory is mode 0555; root without CAP_DAC_OVERRIDE still writes the
    # files it owns. (Tests run as root, where access() allows everything: record the asks.)
    v2_tree(tmp_path)
    asked: list[Path] = []

    def access(path: Path, mode: int) -> bool:
        asked.append(Path(path))
        return Path(path).is_file()

    monkeypatch.setattr(cgroup_writer.os, "access", access)
    assert writer(tmp_path, {}).unusable() == ""
    assert asked == [tmp_path / "cgroup.subtree_control"]
    (tmp_path / "cgroup.subtree_control").unlink()
    assert writer(tmp_path, {}).unusable() == f"no cgroup.subtree_control at {tmp_path}"


BALANCE = "cpuset.sched_load_balance"


def balanced_v1_tree(root: Path, root_flag: str = "1", cid: str = "c-web") -> Path:
    """A v1 tree whose root and container cpusets balance, as the kernel's defaults are."""
    (root / "cpuset").mkdir(parents=True, exist_ok=True)
    (root / "cpuset" / BALANCE).write_text(root_flag + "\n")
    directory = cgroup(root / "cpuset" / f"kubepods/burstable/pod1/{cid}")
    (directory / BALANCE).write_text("1\n")
    return directory


def v1_paths(*cids: str) -> dict[str, str]:
    return {cid: f"/kubepods/burstable/pod1/{cid}" for cid in cids}


def test_on_v1_with_a_balancing_root_each_container_flag_is_cleared_once(
        tmp_path: Path) -> None:
    web, db = balanced_v1_tree(tmp_path), balanced_v1_tree(tmp_path, cid="c-db")
    kernel = writer(tmp_path, v1_paths("c-web", "c-db"))
    assert kernel.clears_balance
    assert kernel.apply([update(), update("c-db")]).ok
    assert (web / BALANCE).read_text() == "0"
    assert (db / BALANCE).read_text() == "0"
    (web / BALANCE).write_text("1")  # not written again: the writer remembers it did it
    assert kernel.apply([update(cpus="3-15")]).ok
    assert (web / BALANCE).read_text() == "1"
    assert (web / "cpuset.cpus").read_text() == "3-15"


def test_on_v1_with_a_partitioned_root_container_flags_are_left_and_the_log_says_why(
        tmp_path: Path) -> None:
    directory = balanced_v1_tree(tmp_path, root_flag="0")
    kernel = writer(tmp_path, v1_paths("c-web"))
    assert not kernel.clears_balance
    assert kernel.balance_note == (f"{tmp_path / 'cpuset' / BALANCE} is 0: containers' flags "
                                   "left as they are")
    assert kernel.apply([update()]).ok
    assert (directory / BALANCE).read_text() == "1\n"
    assert (directory / "cpuset.cpus").read_text() == "2-15"


def test_the_root_flag_is_read_again_on_request(tmp_path: Path) -> None:
    directory = balanced_v1_tree(tmp_path, root_flag="0")
    kernel = writer(tmp_path, v1_paths("c-web"))
    (tmp_path / "cpuset" / BALANCE).write_text("1\n")
    kernel.read_root_balance()
    assert kernel.apply([update()]).ok
    assert (directory / BALANCE).read_text() == "0"


def test_on_v2_no_balance_flag_is_written(tmp_path: Path) -> None:
    directory = v2_tree(tmp_path)
    kernel = writer(tmp_path, {"c-web": V2_PATH})
    assert not kernel.clears_balance
    assert kernel.balance_note == f"cgroup v2 has no {BALANCE}"
    assert kernel.apply([update()]).ok
    assert not (directory / BALANCE).exists()


def test_a_refused_flag_write_still_writes_the_cpus_and_is_counted(tmp_path: Path) -> None:
    directory = balanced_v1_tree(tmp_path)
    (directory / BALANCE).unlink()
    (directory / BALANCE).mkdir()  # the flag write fails (EISDIR)
    kernel = writer(tmp_path, v1_paths("c-web"))
    assert kernel.apply([update()]).ok
    assert (directory / "cpuset.cpus").read_text() == "2-15"
    assert kernel.balance_refused == 1
    assert kernel.apply([update(cpus="3-15")]).ok  # not tried again
    assert kernel.balance_refused == 1


def test_removed_containers_are_forgotten_as_the_cleared_set_grows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cgroup_writer, "PRUNE_FLOOR", 2)
    cids = ("c-a", "c-b", "c-c")
    for cid in cids:
        balanced_v1_tree(tmp_path, cid=cid)
    paths = v1_paths(*cids)
    kernel = writer(tmp_path, paths)
    assert kernel.apply([update("c-a"), update("c-b")]).ok
    assert kernel.unbalanced == 2
    del paths["c-a"], paths["c-b"]  # removed: the runtime no longer names their cgroups
    assert kernel.apply([update("c-c")]).ok
    assert kernel.unbalanced == 1


def test_readying_clears_the_flag_and_keeps_the_file_so_the_first_write_is_a_write(
        tmp_path: Path) -> None:
    web = balanced_v1_tree(tmp_path)
    kernel = writer(tmp_path, v1_paths("c-web"))
    kernel.files = KeptFiles(keeps=lambda _fd: True)
    kernel.ready("c-web")
    assert (web / BALANCE).read_text() == "0"
    assert (web / "cpuset.cpus").read_text() == "0-15\n"  # not written
    assert (kernel.unbalanced, len(kernel.files)) == (1, 1)
    (web / BALANCE).write_text("1")  # the write neither clears it again nor opens the file
    assert kernel.apply([update(cpus="3-15")]).ok
    assert (web / BALANCE).read_text() == "1"
    assert (web / "cpuset.cpus").read_text().strip() == "3-15"  # on the kept descriptor
    kernel.close_files()


def test_readying_an_unknown_or_gone_container_does_nothing(tmp_path: Path) -> None:
    balanced_v1_tree(tmp_path)
    kernel = writer(tmp_path, {**v1_paths("c-web"), "c-gone": "/kubepods/burstable/pod1/gone"})
    kernel.ready("c-unknown")
    kernel.ready("c-gone")
    assert len(kernel.files) == 0
    assert not (tmp_path / "cpuset/kubepods/burstable/pod1/gone").exists()
