"""The lab's side of the benchmark: the neighbours run as pods on the lab's containerd, the
plugin started and stopped, and the probe run in a Guaranteed 1-CPU pod with the probe's build
directory bind-mounted read-only; its output read back from its CRI log. Every pod's cgroups
carry the weights a kubelet gives them (``weights.py``) while the probe runs."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cpuset_lab.cgroups import online_cpus
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.cri_log import cri_log_lines
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.plugin_process import PluginProcess
from cpuset_lab.pod_spec import Mount, PodSpec, QosClass, cgroup_parent
from cpuset_lab.resources import container_resources, guaranteed, milli_cpus
from isolation_bench import interrupts
from isolation_bench.cases import IO_MOUNT, Case, Neighbour
from isolation_bench.probe import MOUNT_POINT
from isolation_bench.weights import PodWeight, WeightWriter, kubelet_shares

NAMESPACE = "isolation"
SETTLE = 1.0
"""Seconds the neighbours run before the probe starts (every one of them spinning)."""
SAMPLE_AT = 1.0
"""Seconds into the probe's run when ``run_probe`` samples (its quiet CPU settled: the
plugin's pass follows the container's start within a second, issue 43's acceptance)."""


class ProbeFailedError(RuntimeError):
    """The probe's container did not exit 0 in time."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeOutput:
    """The probe's output lines, the seconds its container ran (from start to seen exited),
    the device interrupts per CPU before and after, and what ``sample`` said while it ran."""

    lines: list[str]
    seconds: float
    irqs_before: dict[int, int]
    irqs_after: dict[int, int]
    sampled: str = ""


class IsolationNode:
    """One lab containerd on which the cases run, one after another."""

    def __init__(self, lab: LabContainerd, workdir: Path, probe_dir: Path, *,
                 scale: float = 1.0) -> None:
        self.lab, self.workdir, self.probe_dir = lab, workdir, probe_dir
        self.scale = scale
        """How much slower than this host the machine is (every wait is multiplied by it)."""
        self.cri: KubeletClient = lab.client()
        self.cri.timeout *= scale
        self.io_dir = workdir / "io"
        self.io_dir.mkdir(parents=True, exist_ok=True)
        self.runs = 0
        self.pods: list[PodWeight] = []
        self.weights = WeightWriter()

    # -- the plugin ------------------------------------------------------------------------------

    def start_plugin(self, case: Case) -> PluginProcess:
        """``nri-cpuset run`` with the case's configuration, once it synchronized."""
        config = self.workdir / f"plugin-{self.runs}.toml"
        config.write_text(case.plugin_config)  # empty: the built-in defaults, not /etc's file
        # Its own journal of quiet CPUs' originals: the default one is the host's, and another
        # lab's plugin starting meanwhile would put back what a quiet case needs.
        journal = self.workdir / f"quiet-{self.runs}.json"
        plugin = PluginProcess(self.lab.nri_socket, self.workdir / f"plugin-{self.runs}.log",
                               cri_socket=self.lab.cri_address,
                               args=("--config", str(config), "--quiet-journal", str(journal)))
        plugin.start()
        try:
            plugin.wait_for("synchronized", 1, timeout=60 * self.scale)
        except BaseException:
            plugin.kill()
            raise
        return plugin

    # -- neighbours ------------------------------------------------------------------------------

    def start_neighbours(self, neighbours: Sequence[Neighbour]) -> None:
        """Run every neighbour, each in its own pod, then let them spin for :data:`SETTLE`."""
        for neighbour in neighbours:
            pod_id = self._run_pod(neighbour.name, neighbour.qos,
                                   milli_cpus(neighbour.cpu_request or 0))
            resources = container_resources(cpu_request=neighbour.cpu_request or None)
            mounts = ([Mount(container_path=IO_MOUNT, host_path=str(self.io_dir),
                             readonly=False)] if neighbour.io else [])
            self.cri.run_container(pod_id, "app", self.lab.image, resources=resources,
                                   command=neighbour.command, mounts=mounts)
        time.sleep(SETTLE)

    # -- the probe -------------------------------------------------------------------------------

    def run_probe(self, case: Case, command: Sequence[str], timeout: float,
                  sample: Callable[[], str] | None = None) -> ProbeOutput:
        """Run ``command`` in a Guaranteed 1-CPU pod (with the case's annotations) until it
        exits; raises :class:`ProbeFailedError` with its log's tail if it fails or outlives
        ``timeout`` seconds. ``sample`` is called once while it runs, :data:`SAMPLE_AT`
        seconds in (or at its first poll after exiting, if it ran shorter)."""
        self.runs += 1
        logs = self.workdir / "logs" / f"probe-{self.runs}"
        (logs / "probe").mkdir(parents=True, exist_ok=True)
        pod_id = self._run_pod(f"probe-{self.runs}", QosClass.GUARANTEED, 1000,
                               annotations=dict(case.annotations), logs=logs)
        self._weigh()
        before = interrupts.read()
        started = time.monotonic()
        cid = self.cri.run_container(
            pod_id, "probe", self.lab.image, resources=guaranteed(1, "64Mi"), command=command,
            mounts=[Mount(container_path=MOUNT_POINT, host_path=str(self.probe_dir))])
        status = self.cri.container_status(cid)
        sampled = ""
        while status.state != "CONTAINER_EXITED":
            if sample is not None and not sampled and time.monotonic() - started > SAMPLE_AT:
                sampled = sample()
            if time.monotonic() - started > timeout:
                raise ProbeFailedError(f"the probe ran longer than {timeout:.0f} s ({case.name})")
            time.sleep(0.1)
            status = self.cri.container_status(cid)
        seconds = time.monotonic() - started
        after = interrupts.read()
        lines = cri_log_lines(logs / "probe" / "0.log")
        if status.exit_code != 0:
            tail = "\n".join(lines[-10:])
            raise ProbeFailedError(f"the probe exited {status.exit_code} ({case.name}): "
                                   f"{status.reason} {status.message}\n{tail}")
        self.cri.remove(cid)
        return ProbeOutput(lines=lines, seconds=seconds, irqs_before=before, irqs_after=after,
                           sampled=sampled or (sample() if sample is not None else ""))

    def clear(self) -> None:
        """Every pod stopped and removed (their cgroups too), the QoS tiers' weights put
        back."""
        try:
            self.weights.restore()
        finally:
            self.pods.clear()
            self.lab.cleanup()

    def _run_pod(self, name: str, qos: QosClass, request_millis: int, *,
                 annotations: dict[str, str] | None = None, logs: Path | None = None) -> str:
        spec = _spec(name, qos, annotations=annotations, logs=logs)
        pod_id = self.cri.run_pod(spec)
        self.pods.append(PodWeight(parent=spec.cgroup_parent, qos=qos,
                                   request_millis=request_millis))
        return pod_id

    def _weigh(self) -> None:
        """The kubelet's weights on every pod running and the tiers above them (the pods'
        cgroups exist once their sandboxes run; a tier without pods does not)."""
        skipped = self.weights.apply(kubelet_shares(self.pods, len(online_cpus()) * 1000))
        if missing := sorted(set(skipped) & {pod.parent for pod in self.pods}):
            raise RuntimeError(f"no cgroup to weigh for {', '.join(missing)}")


def _spec(name: str, qos: QosClass, *, annotations: dict[str, str] | None = None,
          logs: Path | None = None) -> PodSpec:
    uid = str(uuid.uuid4())
    return PodSpec(name=f"{name}-{uid[:8]}", namespace=NAMESPACE, uid=uid,
                   cgroup_parent=cgroup_parent(qos, uid), annotations=annotations,
                   log_directory=str(logs) if logs is not None else "")
