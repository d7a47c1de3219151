"""A container's CFS quota read from its cgroup and lifted there (issue 44): cgroup v1
``cpu.cfs_quota_us`` and v2 ``cpu.max``, the systemd driver's paths, cgroups that are gone and
files that hold nonsense."""

from __future__ import annotations

from pathlib import Path

import pytest

from cpuset_adapters.cgroup_writer import CgroupQuotaWriter
from cpuset_adapters.cgroupfs import CgroupReader, parse_quota
from cpuset_core.quota import UNLIMITED

V1_CPUSET = {"cpuset.cpus": "1", "cpuset.mems": "0", "cpuset.effective_cpus": "1",
             "cpuset.effective_mems": "0"}
V2_CPUSET = {"cpuset.cpus": "1", "cpuset.mems": "0", "cpuset.cpus.effective": "1",
             "cpuset.mems.effective": "0"}
SCOPE = "kubepods.slice/kubepods-pod1.slice/cri-containerd-c1.scope"


def write(directory: Path, files: dict[str, str]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name).write_text(text + "\n")


def v1(root: Path, quota: str) -> str:
    write(root / "cpuset/kubepods/pod1/c1", V1_CPUSET)
    write(root / "cpu/kubepods/pod1/c1", {"cpu.cfs_quota_us": quota})
    return "/kubepods/pod1/c1"


def v2(root: Path, cpu_max: str) -> str:
    (root / "cgroup.controllers").write_text("cpuset cpu\n")
    write(root / SCOPE, {**V2_CPUSET, "cpu.max": cpu_max})
    return "kubepods-pod1.slice:cri-containerd:c1"


def test_v1_reads_the_quota_and_the_lift_writes_minus_one(tmp_path: Path) -> None:
    path = v1(tmp_path, "100000")
    assert CgroupReader(tmp_path).observe(path).cfs_quota == 100_000
    assert CgroupQuotaWriter(tmp_path).lift(path) == ""
    assert (tmp_path / "cpu/kubepods/pod1/c1/cpu.cfs_quota_us").read_text() == "-1"
    assert CgroupReader(tmp_path).observe(path).cfs_quota == UNLIMITED


def test_v2_reads_cpu_max_and_the_lift_writes_max(tmp_path: Path) -> None:
    path = v2(tmp_path, "200000 100000")
    assert CgroupReader(tmp_path).observe(path).cfs_quota == 200_000
    assert CgroupQuotaWriter(tmp_path).lift(path) == ""
    assert (tmp_path / SCOPE / "cpu.max").read_text() == "max"
    assert CgroupReader(tmp_path).observe(path).cfs_quota == UNLIMITED


def test_a_cgroup_that_is_gone_is_reported_not_created(tmp_path: Path) -> None:
    problem = CgroupQuotaWriter(tmp_path).lift("/kubepods/pod1/gone")
    assert "cpu/kubepods/pod1/gone/cpu.cfs_quota_us" in problem
    assert not (tmp_path / "cpu/kubepods/pod1/gone").exists()


def test_a_quota_that_cannot_be_read_is_not_judged(tmp_path: Path) -> None:
    write(tmp_path / "cpuset/kubepods/pod1/c1", V1_CPUSET)  # no cpu hierarchy
    seen = CgroupReader(tmp_path).observe("/kubepods/pod1/c1")
    assert (seen.cpus is not None, seen.cfs_quota) == (True, None)
    path = v1(tmp_path / "other", "a lot")
    assert CgroupReader(tmp_path / "other").observe(path).cfs_quota is None


@pytest.mark.parametrize(("text", "version", "quota"), [
    ("-1\n", 1, UNLIMITED), ("150000\n", 1, 150_000), ("max 100000\n", 2, UNLIMITED),
    ("50000 100000\n", 2, 50_000)])
def test_quota_files_parse_as_the_kernel_writes_them(text: str, version: int, quota: int) -> None:
    assert parse_quota(text, version) == quota


@pytest.mark.parametrize(("text", "version"), [("", 1), ("max\n", 1), ("lots 100000", 2)])
def test_anything_else_in_a_quota_file_is_an_error(text: str, version: int) -> None:
    with pytest.raises(ValueError, match="invalid literal"):
        parse_quota(text, version)


def test_a_pass_reads_the_quota_of_only_the_containers_it_judges(tmp_path: Path) -> None:
    path = v1(tmp_path, "100000")
    reader = CgroupReader(tmp_path)
    judged = reader.observe_all({"c1": path, "c2": path}, quotas={"c2"})
    assert (judged["c1"].cfs_quota, judged["c2"].cfs_quota) == (None, 100_000)
    assert judged["c1"].cpus == judged["c2"].cpus  # the cpuset is read for every container
    assert reader.observe_all({"c1": path})["c1"].cfs_quota == 100_000  # no set: all
