"""The lab's node for the DaemonSet's pod (``lab_host``: every hostPath of the real manifests
mapped, the CRI log read back, a container's memory from its cgroup) and the kubelet-like probe
(``running``), without a runtime (the e2e tests run the pod: tests/e2e/test_daemonset_pod.py)."""

from __future__ import annotations

import http.server
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from cpuset_lab.containerd import LabContainerd
from cpuset_lab.cri_log import cri_log_lines
from cpuset_lab.daemonset import Probe, translate
from cpuset_lab.daemonset.lab_host import (
    CPU_MANAGER_NONE,
    container_memory,
    lab_host_paths,
    lab_node,
    log_messages,
    render,
)
from cpuset_lab.daemonset.running import probe_status, succeeded
from tests.unit.deploy.schema import KUBERNETES


@pytest.fixture
def lab(tmp_path: Path) -> LabContainerd:
    return LabContainerd(tmp_path / "lab")  # never started: only its paths are read


def test_every_host_path_of_the_manifests_is_mapped_to_the_labs(lab: LabContainerd,
                                                                tmp_path: Path) -> None:
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed")
    pod = translate(render(KUBERNETES), lab_node(lab, tmp_path, image="nri-cpuset:lab"))
    mapped = {volume.manifest_path: volume.lab_path for volume in pod.host_paths}
    assert mapped["/var/run/nri"] == lab.nri_socket.parent
    assert mapped["/run/containerd"] / "containerd.sock" == lab.cri_address
    assert mapped["/sys/fs/cgroup"] == Path("/sys/fs/cgroup")
    for private in ("/run/dbus", "/run/nri-cpuset", "/var/lib/kubelet/cpu_manager_state"):
        assert mapped[private].is_relative_to(tmp_path / "host"), private
    [config] = pod.config_maps
    assert config.directory.is_relative_to(tmp_path / "kubelet/pods" / pod.uid)


def test_the_kubelet_state_file_says_policy_none_and_is_kept(lab: LabContainerd,
                                                             tmp_path: Path) -> None:
    state = lab_host_paths(lab, tmp_path)["/var/lib/kubelet/cpu_manager_state"]
    assert state.read_text() == CPU_MANAGER_NONE
    assert state.stat().st_mode & 0o777 == 0o600
    state.write_text("{}")
    lab_host_paths(lab, tmp_path)
    assert state.read_text() == "{}"


def test_each_pod_gets_its_own_uid_and_volumes(lab: LabContainerd, tmp_path: Path) -> None:
    first, second = (lab_node(lab, tmp_path, image="i") for _ in range(2))
    assert first.pod_uid != second.pod_uid
    assert first.volumes_dir != second.volumes_dir


def test_cri_log_records_are_read_back_as_lines_partial_ones_joined(tmp_path: Path) -> None:
    log = tmp_path / "0.log"
    log.write_text('2026-11-29T08:00:00.1Z stderr F {"event": "one", "level": "info"}\n'
                   "2026-11-29T08:00:00.2Z stdout P two \n"
                   "2026-11-29T08:00:00.3Z stdout F halves\n"
                   "2026-11-29T08:00:00.4Z stdout F \n")
    lines = cri_log_lines(log)
    assert lines == ['{"event": "one", "level": "info"}', "two halves", ""]
    assert log_messages(lines) == ["one", "two halves", ""]
    assert cri_log_lines(tmp_path / "missing.log") == []


def test_container_memory_reads_v1_and_v2(tmp_path: Path) -> None:
    v1 = tmp_path / "v1"
    memory = v1 / "memory/kubepods/pod1/abc"
    memory.mkdir(parents=True)
    (v1 / "cpuset").mkdir()
    (memory / "memory.stat").write_text("cache 4096\nrss 1048576\n")
    (memory / "memory.usage_in_bytes").write_text("2097152\n")
    found = container_memory("/kubepods/pod1/abc", root=v1)
    assert (found.rss, found.usage) == (1048576, 2097152)
    v2 = tmp_path / "v2"
    scope = v2 / "kubepods/pod1/abc"
    scope.mkdir(parents=True)
    (v2 / "cgroup.controllers").write_text("cpuset memory\n")
    (scope / "memory.stat").write_text("anon 3145728\nfile 0\n")
    (scope / "memory.current").write_text("4194304\n")
    found = container_memory("/kubepods/pod1/abc", root=v2)
    assert (found.rss, found.usage) == (3145728, 4194304)


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/readyz" else 503)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[int]:
    httpd = http.server.HTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd.server_address[1]
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_probe_answers_its_status_and_nothing_when_nobody_listens(server: int) -> None:
    assert probe_status(Probe(kind="readiness", path="/readyz", port=server)) == 200
    assert probe_status(Probe(kind="liveness", path="/healthz", port=server)) == 503
    httpd = http.server.HTTPServer(("127.0.0.1", 0), _Handler)
    port = httpd.server_address[1]
    httpd.server_close()
    assert probe_status(Probe(kind="readiness", path="/readyz", port=port)) is None
    assert succeeded(200)
    assert succeeded(302)
    assert not succeeded(503)
    assert not succeeded(None)
