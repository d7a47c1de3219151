"""The lab's pure parts: the OCI image archive, the containerd config, the cgroup readers (on
fake v1 and v2 trees). The lab against a real containerd is in tests/e2e."""

from __future__ import annotations

import hashlib
import json
import subprocess
import tarfile
import tomllib
from pathlib import Path

import pytest

from cpuset_adapters import cgroupfs
from cpuset_core.cpuset import CPUSet
from cpuset_lab import cgroups, faulty_runc
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.containerd_install import (
    LabError,
)
from cpuset_lab.image import IMAGE_NAME, build_image_archive, goarch


def _members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path) as tar:
        return {m.name: (tar.extractfile(m).read() if m.isfile() else b"")  # type: ignore[union-attr]
                for m in tar.getmembers()}


def test_image_archive_is_a_deterministic_oci_layout(tmp_path: Path) -> None:
    busybox = tmp_path / "busybox"
    busybox.write_bytes(b"\x7fELF fake busybox")
    first = build_image_archive(tmp_path / "a.tar", busybox=busybox, arch="amd64")
    second = build_image_archive(tmp_path / "b.tar", busybox=busybox, arch="amd64")
    assert (tmp_path / "a.tar").read_bytes() == (tmp_path / "b.tar").read_bytes()
    assert first.manifest_digest == second.manifest_digest

    files = _members(first.path)
    assert json.loads(files["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}
    index = json.loads(files["index.json"])
    (entry,) = index["manifests"]
    assert entry["annotations"]["io.containerd.image.name"] == IMAGE_NAME
    assert entry["digest"] == first.manifest_digest
    for name, blob in files.items():  # every blob is named by its digest
        if name.startswith("blobs/sha256/") and blob:
            assert hashlib.sha256(blob).hexdigest() == name.rsplit("/", 1)[1]
    manifest = json.loads(files[f"blobs/sha256/{first.manifest_digest[7:]}"])
    config = json.loads(files[f"blobs/sha256/{first.config_digest[7:]}"])
    assert config["architecture"] == "amd64"
    assert config["rootfs"]["diff_ids"] == [manifest["layers"][0]["digest"]]
    layer = tmp_path / "layer.tar"
    layer.write_bytes(files[f"blobs/sha256/{manifest['layers'][0]['digest'][7:]}"])
    with tarfile.open(layer) as tar:
        assert tar.extractfile("bin/busybox").read() == busybox.read_bytes()  # type: ignore[union-attr]
        sleep = tar.getmember("bin/sleep")
        assert sleep.issym()
        assert sleep.linkname == "busybox"
        assert all(m.mtime == 0 and m.uid == 0 for m in tar.getmembers())


def test_goarch() -> None:
    assert goarch("x86_64") == "amd64"
    assert goarch("aarch64") == "arm64"
    assert goarch("mips") == "mips"


def test_containerd_config_is_private_and_enables_nri(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NRI_CPUSET_RUNTIME", raising=False)
    lab = LabContainerd(tmp_path, nri_plugin_path=tmp_path / "plugins",
                        registration_timeout="3s", request_timeout="1s")
    config = tomllib.loads(lab.config.text())
    assert config["version"] == 2
    assert config["root"].startswith(str(tmp_path))
    assert config["grpc"]["address"] == str(lab.cri_address)
    nri = config["plugins"]["io.containerd.nri.v1.nri"]
    assert nri == {
        "disable": False, "socket_path": str(lab.nri_socket),
        "plugin_path": str(tmp_path / "plugins"),
        "plugin_config_path": str(tmp_path / "nri" / "conf.d"),
        "plugin_registration_timeout": "3s", "plugin_request_timeout": "1s"}
    cri = config["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["sandbox_image"] == IMAGE_NAME
    assert cri["restrict_oom_score_adj"] is True
    runc = cri["containerd"]["runtimes"]["runc"]
    assert runc["options"]["BinaryName"] == "/usr/sbin/runc"
    faulty = cri["containerd"]["runtimes"][faulty_runc.HANDLER]
    assert faulty["runtime_type"] == "io.containerd.runc.v2"
    assert faulty["options"]["BinaryName"] == str(lab.config.faulty_runc)
    assert faulty["options"]["Root"] == runc["options"]["Root"]  # cleanup finds its containers
    assert tomllib.loads(LabContainerd(tmp_path, nri_enabled=False).config.text())[
        "plugins"]["io.containerd.nri.v1.nri"]["disable"] is True


def _run(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(script), *args], input='{"cpu": {"cpus": "0"}}',
                          capture_output=True, text=True, check=False, timeout=30)


def test_the_faulty_runc_fails_only_the_updates_of_flagged_containers(tmp_path: Path) -> None:
    """The wrapper passes everything to runc, except ``update`` of a flagged container id
    (go-runc's ``runc --root R --log L --log-format json update --resources=- ID``)."""
    runc = tmp_path / "runc"
    runc.write_text('#!/bin/sh\necho "runc $*"\n')
    runc.chmod(0o755)
    faults = faulty_runc.UpdateFaults(tmp_path / "faults")
    script = tmp_path / "runc-faulty"
    script.write_text(faulty_runc.wrapper_script(runc, faults.directory))
    script.chmod(0o755)
    update = ("--root", "/r/update", "--log", "/l/log.json", "--log-format", "json", "update",
              "--resources=-")
    assert _run(script, *update, "abc").stdout == f"runc {' '.join(update)} abc\n"
    faults.fail("abc")
    refused = _run(script, *update, "abc")
    assert (refused.returncode, refused.stdout) == (1, "")
    assert refused.stderr == f"{faulty_runc.REFUSAL} abc (fault injected)\n"
    assert _run(script, *update, "other").returncode == 0  # only the flagged container
    assert _run(script, "--root", "/r", "start", "abc").returncode == 0  # only updates
    assert _run(script, "--root", "/r", "state", "update").returncode == 0
    assert faults.failing() == {"abc"}
    faults.clear()
    assert _run(script, *update, "abc").returncode == 0
    with pytest.raises(ValueError, match="not a container id"):
        faults.fail("../etc")


def test_overlong_socket_paths_are_refused(tmp_path: Path) -> None:
    with pytest.raises(LabError, match="too long"):
        LabContainerd(tmp_path / ("x" * 120)).config.write()


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_cgroup_v1_tree(tmp_path: Path) -> None:
    root, proc = tmp_path / "cgroup", tmp_path / "proc"
    cg = root / "cpuset" / "kubepods" / "podU" / "ctr"
    for name, value in (("cpuset.cpus", "1,3\n"), ("cpuset.mems", "0\n"),
                        ("cpuset.effective_cpus", "1,3\n"), ("cpuset.effective_mems", "0\n")):
        _write(cg / name, value)
    _write(proc / "7" / "cgroup", "4:memory:/kubepods/podU/ctr\n3:cpuset:/kubepods/podU/ctr\n"
                                  "0::/kubepods/podU/ctr\n")
    _write(proc / "7" / "status", "Name:\tsleep\nCpus_allowed:\ta\nCpus_allowed_list:\t1,3\n"
                                  "Mems_allowed_list:\t0\n")
    assert cgroupfs.cgroup_version(root) == 1
    assert cgroupfs.process_cgroup(7, proc=proc, root=root) == "/kubepods/podU/ctr"
    reading = cgroupfs.process_cpuset(7, proc=proc, root=root)
    assert (reading.version, reading.path) == (1, cg)
    assert reading.cpus == reading.effective_cpus == CPUSet([1, 3])
    affinity = cgroups.process_affinity(7, proc=proc)
    assert (affinity.cpus, affinity.mems) == (CPUSet([1, 3]), CPUSet([0]))

    (root / "cpu" / "kubepods" / "podU").mkdir(parents=True)
    for name in list((cg).iterdir()):
        name.unlink()
    cg.rmdir()
    removed = cgroups.remove_cgroup("/kubepods/podU", root=root, parents=1)
    assert root / "cpuset" / "kubepods" in removed
    assert not (root / "cpu" / "kubepods").exists()


def test_cgroup_v2_tree(tmp_path: Path) -> None:
    root, proc = tmp_path / "cgroup", tmp_path / "proc"
    _write(root / "cgroup.controllers", "cpuset cpu memory\n")
    cg = root / "kubepods.slice" / "kubepods-burstable.slice" / "kubepods-burstable-podU.slice" / (
        "cri-containerd-abc.scope")
    for name, value in (("cpuset.cpus", "\n"), ("cpuset.mems", "\n"),
                        ("cpuset.cpus.effective", "0-3\n"), ("cpuset.mems.effective", "0-1\n")):
        _write(cg / name, value)
    _write(proc / "9" / "cgroup", "0::/kubepods.slice/kubepods-burstable.slice/"
                                  "kubepods-burstable-podU.slice/cri-containerd-abc.scope\n")
    assert cgroupfs.cgroup_version(root) == 2
    reading = cgroupfs.container_cpuset("kubepods-burstable-podU.slice:cri-containerd:abc",
                                       root=root)
    assert reading.path == cg
    assert reading.cpus == CPUSet()  # inherit
    assert reading.effective_cpus == CPUSet.range(0, 3)
    assert reading.effective_mems == CPUSet([0, 1])
    assert cgroupfs.process_cpuset(9, proc=proc, root=root).path == cg



def _v2_container(root: Path, proc: Path, cpus: str) -> None:
    _write(root / "cgroup.controllers", "cpuset\n")
    for name, value in (("cpuset.cpus", f"{cpus}\n"), ("cpuset.mems", "0\n"),
                        ("cpuset.cpus.effective", f"{cpus}\n"),
                        ("cpuset.mems.effective", "0\n")):
        _write(root / "pod" / "ctr" / name, value)
    _write(proc / "5" / "status", "Cpus_allowed_list:\t1\nMems_allowed_list:\t0\n")


def test_a_container_view_reads_again_while_cgroup_and_process_disagree(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, proc = tmp_path / "cgroup", tmp_path / "proc"
    _v2_container(root, proc, "0")  # a move to CPU 1 landed between the two reads
    pauses: list[float] = []

    def the_move_lands(seconds: float) -> None:
        pauses.append(seconds)
        _write(root / "pod" / "ctr" / "cpuset.cpus.effective", "1\n")

    monkeypatch.setattr(cgroups.time, "sleep", the_move_lands)
    cgroup, affinity = cgroups.container_view("/pod/ctr", 5, root=root, proc=proc)
    assert (cgroup.effective_cpus, affinity.cpus) == (CPUSet([1]), CPUSet([1]))
    assert pauses == [0.1]


def test_a_container_view_that_never_agrees_is_returned_as_read_last(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, proc = tmp_path / "cgroup", tmp_path / "proc"
    _v2_container(root, proc, "0")
    pauses: list[float] = []
    monkeypatch.setattr(cgroups.time, "sleep", pauses.append)
    cgroup, affinity = cgroups.container_view("/pod/ctr", 5, reads=3, root=root, proc=proc)
    assert (cgroup.effective_cpus, affinity.cpus) == (CPUSet([0]), CPUSet([1]))
    assert pauses == [0.1, 0.1]

def test_missing_status_fields_and_cgroups_are_lookup_errors(tmp_path: Path) -> None:
    _write(tmp_path / "1" / "status", "Name:\tx\n")
    _write(tmp_path / "1" / "cgroup", "4:memory:/x\n")
    with pytest.raises(LookupError, match="Cpus_allowed_list"):
        cgroups.process_affinity(1, proc=tmp_path)
    with pytest.raises(LookupError, match="cpuset"):
        cgroupfs.process_cgroup(1, proc=tmp_path, root=tmp_path / "v1")


def test_expand_systemd_path() -> None:
    assert cgroupfs.expand_systemd_path("kubepods-pod1.slice:cri-containerd:c1") == (
        "/kubepods.slice/kubepods-pod1.slice/cri-containerd-c1.scope")
    assert cgroupfs.expand_systemd_path("/kubepods/pod1/c1") == "/kubepods/pod1/c1"


def test_the_lab_reads_plugin_events_from_console_and_json_lines() -> None:
    from cpuset_lab import plugin_log

    text = "\n".join([
        "2026-11-24T02:00:00Z INFO nri_cpuset.placement: synchronized source=synchronize pods=0",
        '{"event": "synchronized", "source": "CRI inventory", "pods": 1}',
        '{"event": "synchronized", "sour',  # cut by a concurrent write
        "2026-11-24T02:00:01Z INFO nri_cpuset.decisions: release container=a/b/c id=0123 "
        "reason=stop",
        "2026-11-24T02:00:02Z INFO nri_cpuset.daemon: synchronizedness is not an event",
    ])
    assert plugin_log.synchronized(text) == 2
    assert [e["source"] for e in plugin_log.events(text, "synchronized")] == [
        "synchronize", "CRI inventory"]
    assert plugin_log.events(text, "release") == [
        {"container": "a/b/c", "id": "0123", "reason": "stop"}]
