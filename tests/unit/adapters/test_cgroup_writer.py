"""The kernel fast path's writer: other containers' cpusets written into fake cgroup trees of
both layouts (v1 per-controller with cgroupfs paths, v2 unified with systemd paths), and every
refusal reported per container without leaving files behind."""

from __future__ import annotations

from pathlib import Path

from cpuset_adapters.cgroup_writer import KernelCpusetWriter
from cpuset_core import ContainerUpdate, CPUSet, Kind

V1_PATH = "/kubepods/burstable/pod1/c-web"
V2_PATH = "kubepods-burstable-pod1.slice:cri-containerd:c-web"
V2_DIR = ("kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice/"
          "cri-containerd-c-web.scope")


def cgroup(directory: Path, cpus: str = "0-15", mems: str = "0-1") -> Path:
    directory.mkdir(parents=True)
    (directory / "cpuset.cpus").write_text(cpus + "\n")
    (directory / "cpuset.mems").write_text(mems + "\n")
    return directory


def v1_tree(root: Path) -> Path:
    return cgroup(root / "cpuset" / V1_PATH.lstrip("/"))


def v2_tree(root: Path) -> Path:
    (root / "cgroup.controllers").write_text("cpuset cpu memory\n")
    return cgroup(root / V2_DIR)


def update(cid: str = "c-web", cpus: str = "2-15", *, mems: str | None = None,
           previous_mems: str = "0-1") -> ContainerUpdate:
    return ContainerUpdate(
        container_id=cid, subject=f"default/web/{cid}", kind=Kind.SHARED,
        cpus=CPUSet.parse(cpus), previous_cpus=CPUSet.parse("0-15"),
        mems=CPUSet.parse(mems) if mems is not None else None,
        previous_mems=CPUSet.parse(previous_mems) if mems is not None else None)


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
