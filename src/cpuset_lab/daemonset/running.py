"""The DaemonSet's pod run over CRI as the kubelet runs it (issue 33): volumes prepared, the
sandbox run, the container created and started, its ``httpGet`` probes polled; stopped and
removed as the kubelet does when the pod goes; its container killed and a new attempt created
in the same sandbox, as the kubelet restarts a container; and a rolling update with
``maxSurge: 0`` (the old pod gone before the new one starts).

Probes go to ``host`` (``127.0.0.1``: the lab runs the pod in the node's network, see
:class:`~cpuset_lab.daemonset.LabNode`), as the kubelet GETs the pod IP.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cpuset_adapters.cri.client import CriError
from cpuset_adapters.cri.proto import cri_pb2 as pb
from cpuset_adapters.cri.results import ContainerStatus
from cpuset_lab.cri_log import cri_log_lines
from cpuset_lab.daemonset.pod import DaemonSetPod
from cpuset_lab.daemonset.probes import Probe
from cpuset_lab.kubelet import KubeletClient

PROBE_HOST = "127.0.0.1"


class PodNotReadyError(AssertionError):
    """The pod's readiness probe did not answer 200 in time (the kubelet keeps it NotReady)."""


def probe_status(probe: Probe, host: str = PROBE_HOST) -> int | None:
    """One probe as the kubelet makes it: GET with the probe's timeout; the HTTP status, or
    ``None`` when nothing answered (refused, timed out). The kubelet counts 200-399 a success."""
    connection = http.client.HTTPConnection(host, probe.port, timeout=probe.timeout)
    try:
        connection.request("GET", probe.path, headers={"User-Agent": "kube-probe/1.32"})
        return connection.getresponse().status
    except OSError:
        return None
    finally:
        connection.close()


def succeeded(status: int | None) -> bool:
    return status is not None and 200 <= status < 400


@dataclass(slots=True)
class RunningPod:
    """One run of the pod: its sandbox, its current container (``attempt``: the kubelet's
    restart count), and when that container was created (``time.monotonic()``)."""

    client: KubeletClient
    pod: DaemonSetPod
    sandbox_id: str
    container_id: str = ""
    attempt: int = 0
    created_at: float = 0.0
    containers: list[str] = field(default_factory=list)

    def probe(self, kind: str) -> Probe:
        return next(p for p in self.pod.probes if p.kind == kind)

    @property
    def log_path(self) -> Path | None:
        """The current container's CRI log file (None when the node keeps no pod logs)."""
        directory = self.pod.sandbox_config.log_directory
        return (Path(directory) / self.pod.container_config.metadata.name
                / f"{self.attempt}.log") if directory else None

    def log_lines(self) -> list[str]:
        """What the current container wrote, one line per record (see ``cri_log_lines``)."""
        return cri_log_lines(self.log_path) if self.log_path else []

    def log_text(self) -> str:
        return "\n".join(self.log_lines())

    def status(self) -> ContainerStatus:
        return self.client.container_status(self.container_id)

    def create_container(self) -> str:
        """CreateContainer with the translated config (attempt and log path of this attempt)
        and StartContainer; returns the new container's id."""
        config = self.pod.container_config
        config.metadata.attempt = self.attempt
        if self.log_path is not None:  # the kubelet makes <pod log dir>/<container>/ first
            config.log_path = f"{config.metadata.name}/{self.attempt}.log"
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.created_at = time.monotonic()
        response = self.client.call(
            "RuntimeService", "CreateContainer",
            pb.CreateContainerRequest(pod_sandbox_id=self.sandbox_id, config=config,
                                      sandbox_config=self.pod.sandbox_config),
            pb.CreateContainerResponse)
        self.container_id = response.container_id
        self.containers.append(self.container_id)
        self.client.start(self.container_id)
        return self.container_id

    def wait_ready(self, timeout: float = 60.0, interval: float = 0.1) -> float:
        """Poll the readiness probe every ``interval`` seconds (finer than the kubelet's
        period, to measure) until it succeeds; returns the seconds since CreateContainer.
        Raises :class:`PodNotReadyError` with the log's tail after ``timeout``, or at once when
        the container is no longer running."""
        probe = self.probe("readiness")
        deadline = time.monotonic() + timeout
        while True:
            if succeeded(probe_status(probe)):
                return time.monotonic() - self.created_at
            state = self.status().state
            if state != "CONTAINER_RUNNING" or time.monotonic() > deadline:
                tail = "\n".join(self.log_lines()[-30:])
                raise PodNotReadyError(
                    f"{probe.url(PROBE_HOST)} not 200 within {timeout} s (container "
                    f"{self.container_id[:12]} {state})\n--- its log ---\n{tail}")
            time.sleep(interval)

    def kubelet_probe(self, kind: str) -> bool:
        """The kubelet's verdict after ``failure_threshold`` periods: ``False`` when that many
        probes in a row failed (liveness: the kubelet would restart the container; readiness:
        the pod leaves the endpoints), ``True`` at the first success."""
        probe = self.probe(kind)
        for attempt in range(probe.failure_threshold):
            if succeeded(probe_status(probe)):
                return True
            if attempt + 1 < probe.failure_threshold:
                time.sleep(probe.period)
        return False

    def kill(self) -> None:
        """SIGKILL the container's process (a crash, an OOM kill) and wait until the runtime
        reports it exited."""
        pid = self.status().pid
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while self.status().state == "CONTAINER_RUNNING":
            if time.monotonic() > deadline:
                raise AssertionError(f"container {self.container_id[:12]} still running")
            time.sleep(0.05)

    def restart(self) -> str:
        """What the kubelet does for a container that exited (restartPolicy Always): a new
        container, attempt + 1, in the same sandbox, started; the dead one is kept (the
        kubelet's garbage collection keeps the last dead instance)."""
        self.attempt += 1
        return self.create_container()

    def stop(self) -> None:
        """The pod deleted: StopContainer with the grace period, then the sandbox stopped and
        removed (with its containers)."""
        with contextlib.suppress(CriError):
            if self.container_id:
                self.client.stop(self.container_id, timeout=self.pod.stop_timeout)
        self.client.stop_pod(self.sandbox_id)
        self.client.remove_pod(self.sandbox_id)


def start_pod(client: KubeletClient, pod: DaemonSetPod) -> RunningPod:
    """The kubelet's path for a new pod: volumes prepared (host path types checked, the
    ConfigMap written; a :class:`HostPathCheckError` fails the pod before any CRI call), the
    pod's log directory made, RunPodSandbox, CreateContainer and StartContainer."""
    pod.prepare_volumes()
    config = pod.sandbox_config
    if config.log_directory:
        Path(config.log_directory).mkdir(parents=True, exist_ok=True)
    running = RunningPod(client=client, pod=pod,
                         sandbox_id=client.run_pod_sandbox(config))
    try:
        running.create_container()
    except BaseException:
        running.stop()
        raise
    return running


def upgrade(old: RunningPod, new: DaemonSetPod,
            gap: Callable[[], None] | None = None) -> RunningPod:
    """A rolling update with ``maxSurge: 0``, ``maxUnavailable: 1``: the old pod is deleted
    (stopped and removed) before the new one, a new pod with a new uid and name, is started;
    ``gap`` runs in between (what happens on the node while no plugin runs)."""
    old.stop()
    if gap is not None:
        gap()
    return start_pod(old.client, new)
