"""Reading what the kernel enforces on a container from its cgroup path: cgroup v1 and v2, the
cgroupfs and systemd drivers' paths, inherited (empty) cpusets, and cgroups that are gone."""

from __future__ import annotations

from pathlib import Path

import pytest

from cpuset_adapters.cgroupfs import CgroupReader, expand_systemd_path, systemd_unit
from cpuset_core import CPUSet


def write(directory: Path, files: dict[str, str]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name).write_text(text + "\n")


def test_v1_reads_the_cpuset_hierarchy_under_the_cgroupfs_drivers_path(tmp_path: Path) -> None:
    write(tmp_path / "cpuset/kubepods/burstable/podu/c1",
          {"cpuset.cpus": "1-3", "cpuset.mems": "0", "cpuset.effective_cpus": "1-3",
           "cpuset.effective_mems": "0"})
    seen = CgroupReader(tmp_path).observe("/kubepods/burstable/podu/c1")
    assert (seen.cpus, seen.mems, seen.problem) == (CPUSet.parse("1-3"), CPUSet([0]), "")


def test_v2_takes_the_effective_set_where_the_cgroup_inherits(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu\n")
    unit = "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podu.slice/" \
           "cri-containerd-c1.scope"
    write(tmp_path / unit, {"cpuset.cpus": "", "cpuset.mems": "",
                            "cpuset.cpus.effective": "0-7", "cpuset.mems.effective": "0-1"})
    seen = CgroupReader(tmp_path).observe("kubepods-burstable-podu.slice:cri-containerd:c1")
    assert (seen.cpus, seen.mems) == (CPUSet.parse("0-7"), CPUSet([0, 1]))


def test_the_effective_files_are_read_only_where_the_configured_set_is_empty(
        tmp_path: Path) -> None:
    # A pass reads half the files (issue 45): with the effective files gone, a configured
    # cgroup still reads; an inheriting one needs them (missing, as the cgroup gone is told).
    write(tmp_path / "cpuset/kubepods/podu/c1", {"cpuset.cpus": "2", "cpuset.mems": "0"})
    write(tmp_path / "cpuset/kubepods/podu/c2", {"cpuset.cpus": "", "cpuset.mems": "0"})
    reader = CgroupReader(tmp_path)
    seen = reader.observe("/kubepods/podu/c1")
    assert (seen.cpus, seen.mems, seen.problem) == (CPUSet([2]), CPUSet([0]), "")
    inheriting = reader.observe("/kubepods/podu/c2")
    assert inheriting.cpus is None
    assert inheriting.problem.startswith("no cgroup at ")


def test_a_vanished_or_unnamed_cgroup_is_an_observation_not_an_exception(tmp_path: Path) -> None:
    reader = CgroupReader(tmp_path)
    gone = reader.observe("/kubepods/pod-x/c9")
    assert gone.cpus is None
    assert gone.problem.startswith("no cgroup at ")
    assert reader.observe("").problem == "the runtime gave no cgroup path"
    write(tmp_path / "cpuset/bad", {"cpuset.cpus": "1-x", "cpuset.mems": "0",
                                     "cpuset.effective_cpus": "1", "cpuset.effective_mems": "0"})
    assert reader.observe("/bad").cpus is None
    assert set(reader.observe_all({"a": "/bad", "b": ""})) == {"a", "b"}


UID = "0b9c6a52-5f7d-4d3e-9a0e-3c1f2e4d5a6b"
ESCAPED = UID.replace("-", "_")
CID = "4f1e" * 16


def test_the_paths_containerd_reports_with_systemd_cgroup_expand_as_runc_lays_them_out() -> None:
    # What containerd 1.7 reports as linux.cgroupsPath with SystemdCgroup = true, for the
    # parents the kubelet's systemd driver gives each QoS class.
    for parent, directories in (
            (f"kubepods-pod{ESCAPED}.slice", f"kubepods.slice/kubepods-pod{ESCAPED}.slice"),
            (f"kubepods-burstable-pod{ESCAPED}.slice",
             f"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{ESCAPED}.slice"),
            (f"kubepods-besteffort-pod{ESCAPED}.slice",
             f"kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{ESCAPED}.slice")):
        assert expand_systemd_path(f"{parent}:cri-containerd:{CID}") == \
            f"/{directories}/cri-containerd-{CID}.scope"
    # runc's defaults: no slice is system.slice, "-.slice" the root.
    assert expand_systemd_path(f":cri-containerd:{CID}") == \
        f"/system.slice/cri-containerd-{CID}.scope"
    assert expand_systemd_path(f"-.slice:cri-containerd:{CID}") == f"/cri-containerd-{CID}.scope"


def test_the_verifier_reads_a_guaranteed_containers_scope(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu\n")
    write(tmp_path / f"kubepods.slice/kubepods-pod{ESCAPED}.slice/cri-containerd-{CID}.scope",
          {"cpuset.cpus": "2-3", "cpuset.mems": "", "cpuset.cpus.effective": "2-3",
           "cpuset.mems.effective": "0"})
    seen = CgroupReader(tmp_path).observe(f"kubepods-pod{ESCAPED}.slice:cri-containerd:{CID}")
    assert (seen.cpus, seen.mems, seen.problem) == (CPUSet.parse("2-3"), CPUSet([0]), "")


@pytest.mark.parametrize(("path", "unit"), [
    ("kubepods-burstable-pod1.slice:cri-containerd:abc", "cri-containerd-abc.scope"),
    (":cri-containerd:abc", "cri-containerd-abc.scope"),  # runc's default slice
    ("kubepods-pod1.slice:cri-containerd:x.scope", "x.scope"),
    ("/kubepods.slice/kubepods-pod1.slice/cri-containerd-abc.scope", "cri-containerd-abc.scope"),
    ("/kubepods/burstable/pod1/abc", None),  # the cgroupfs driver
    ("kubepods.slice:cri-containerd:pod.slice", None),  # a slice is no container
    ("/.scope", None),
])
def test_a_containers_systemd_unit_is_named_from_its_cgroup_path(path: str,
                                                                 unit: str | None) -> None:
    assert systemd_unit(path) == unit
