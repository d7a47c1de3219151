"""Fake cgroup trees of both layouts (v1 per-controller with cgroupfs paths, v2 unified with
systemd paths) and the update the kernel writers are handed, for the writers' tests."""

from __future__ import annotations

from pathlib import Path

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
    leaf = cgroup(root / "cpuset" / V1_PATH.lstrip("/"))
    (root / "cpuset" / "cpuset.cpus").write_text("0-15\n")
    return leaf


def v2_tree(root: Path) -> Path:
    (root / "cgroup.controllers").write_text("cpuset cpu memory\n")
    (root / "cgroup.subtree_control").write_text("cpuset cpu memory\n")
    return cgroup(root / V2_DIR)


def update(cid: str = "c-web", cpus: str = "2-15", *, mems: str | None = None,
           previous_mems: str = "0-1") -> ContainerUpdate:
    return ContainerUpdate(
        container_id=cid, subject=f"default/web/{cid}", kind=Kind.SHARED,
        cpus=CPUSet.parse(cpus), previous_cpus=CPUSet.parse("0-15"),
        mems=CPUSet.parse(mems) if mems is not None else None,
        previous_mems=CPUSet.parse(previous_mems) if mems is not None else None)
