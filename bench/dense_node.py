"""A dense node for ``bench/dense.py``: many running shared pods on the lab's containerd, and
the kubelet-like operations the benchmark times, with every placement read from the kernel.

Each shared pod has one container (100m request, Burstable), as a kubelet would run it. The
probe pods (a shared, an integer or a pinned container created to be timed) are run and removed
one at a time; CRI RunPodSandbox, CreateContainer and StartContainer are timed apart.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from cpuset_adapters.cgroupfs import CgroupReader
from cpuset_core.cpuset import CPUSet
from cpuset_lab.cgroups import online_cpus
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.pod_spec import PodSpec, QosClass, cgroup_parent
from cpuset_lab.resources import container_resources, guaranteed

PIN_ANNOTATION = "weka.io/cores-ids"
SWEEP = 0.02
"""Seconds between reads of the cgroups a convergence waits for (bounds its error)."""
SETUP_WORKERS = 4
"""Pods run side by side while the node fills (a kubelet runs pod workers in parallel too)."""


def cannot_run_here() -> str | None:
    """Why a dense-node bench cannot run on this machine, or ``None``."""
    if os.geteuid() != 0:
        return "needs root (it runs containerd)"
    if len(online_cpus()) < 2:
        return "needs two online CPUs (a pin must leave a shared pool)"
    return None


@dataclass(frozen=True, slots=True)
class Probe:
    """A pod run to be timed: its sandbox, its container, when CreateContainer was called
    (``perf_counter``) and how many milliseconds it took; RunPodSandbox's and
    StartContainer's milliseconds."""

    pod_id: str
    container_id: str
    called_at: float
    create_ms: float
    runp_ms: float
    start_ms: float


def overlap(cpusets: Mapping[str, CPUSet | None], mine: CPUSet | None) -> int:
    """How many of ``cpusets`` (shared containers' kernel cpusets) overlap ``mine`` (a probe's;
    ``None``: unreadable, taken as no CPU); an unreadable one (``None``) counts as
    overlapping."""
    mine = mine or CPUSet()
    return sum(1 for cpus in cpusets.values() if cpus is None or cpus & mine)


class DenseNode:
    """The lab's containerd filled with ``len(self)`` running shared containers."""

    def __init__(self, lab: LabContainerd) -> None:
        self.lab = lab
        self.cri: KubeletClient = lab.client()
        self.cgroups: dict[str, str] = {}
        """Shared container id → cgroup path."""
        self._reader = CgroupReader()

    def __len__(self) -> int:
        return len(self.cgroups)

    def grow_to(self, count: int) -> None:
        """Run shared pods until ``count`` shared containers run."""
        missing = range(len(self.cgroups), count)
        with ThreadPoolExecutor(SETUP_WORKERS) as pool:
            for cid, path in pool.map(self._run_shared, missing):
                self.cgroups[cid] = path

    def _run_shared(self, n: int) -> tuple[str, str]:
        pod_id = self.cri.run_pod(_spec(f"shared-{n}", QosClass.BURSTABLE))
        cid = self.cri.run_container(pod_id, "app", self.lab.image,
                                     resources=container_resources(cpu_request="100m"))
        path = self.cri.container_status(cid).cgroups_path
        if not path:
            raise RuntimeError(f"containerd reported no cgroup path for {cid}")
        return cid, path

    # -- what the kernel enforces ---------------------------------------------------------------

    def cpusets(self) -> dict[str, CPUSet | None]:
        """Every shared container's ``cpuset.cpus`` as the kernel has it."""
        return {cid: seen.cpus for cid, seen in self._reader.observe_all(self.cgroups).items()}

    def cpus_of(self, container_id: str) -> CPUSet | None:
        """A probe's ``cpuset.cpus`` as the kernel has it."""
        path = self.cri.container_status(container_id).cgroups_path or ""
        return self._reader.observe(path).cpus

    def sharing(self, mine: CPUSet | None) -> int:
        """Shared containers whose kernel cpuset overlaps ``mine`` (a probe's CPUs)."""
        return overlap(self.cpusets(), mine)

    def off(self, expected: CPUSet, among: Iterable[str] | None = None) -> set[str]:
        """The shared containers (of ``among``, default all) not on ``expected``."""
        paths = self.cgroups if among is None else {cid: self.cgroups[cid] for cid in among}
        return {cid for cid, seen in self._reader.observe_all(paths).items()
                if seen.cpus != expected}

    def wait_all_on(self, expected: CPUSet, since: float, *, timeout: float = 180.0) -> float:
        """Seconds from ``since`` (a ``perf_counter``) until every shared container's cgroup
        shows ``expected``; raises ``TimeoutError`` with how many are still off. Sweeps are
        :data:`SWEEP` apart and re-read only the containers still off (a sweep of 500 cgroups
        every few milliseconds would take a CPU from the runtime being measured); a last full
        sweep confirms."""
        deadline = time.perf_counter() + timeout
        off = self.off(expected)
        while True:
            now = time.perf_counter()
            if not off:
                off = self.off(expected)  # nobody went back meanwhile
                if not off:
                    return now - since
            if now > deadline:
                raise TimeoutError(f"{len(off)} of {len(self)} shared containers not on "
                                   f"{expected} after {timeout} s")
            time.sleep(SWEEP)
            off = self.off(expected, off)

    # -- timed operations -----------------------------------------------------------------------

    def create_probe(self, kind: str, pins: CPUSet | None = None) -> Probe:
        """Run a pod with one container of ``kind`` (shared, integer: Guaranteed 1 CPU, or
        pinned to ``pins``), create and start it, timing each of the three calls; it returns as
        soon as the start returned."""
        qos = QosClass.GUARANTEED if kind == "integer" else QosClass.BURSTABLE
        annotations = {PIN_ANNOTATION: pins.format()} if pins is not None else None
        spec = _spec(f"probe-{kind}", qos, annotations)
        resources = (guaranteed(1, "64Mi") if kind == "integer"
                     else container_resources(cpu_request="100m"))
        runp = time.perf_counter()
        pod_id = self.cri.run_pod(spec)
        start = time.perf_counter()
        cid = self.cri.create_container(pod_id, None, "app", self.lab.image, resources=resources)
        created = time.perf_counter()
        self.cri.start(cid)
        started = time.perf_counter()
        return Probe(pod_id, cid, start, (created - start) * 1000, runp_ms=(start - runp) * 1000,
                     start_ms=(started - created) * 1000)

    def remove_probe(self, probe: Probe) -> None:
        """Remove it as a kubelet would: stop the container, remove it, then the pod."""
        self.cri.stop(probe.container_id)
        self.cri.remove(probe.container_id)
        self.cri.stop_pod(probe.pod_id)
        self.cri.remove_pod(probe.pod_id)

    def update_all(self, cpus: CPUSet) -> float:
        """CRI UpdateContainerResources on every shared container, one at a time, as the
        runtime's floor for that many updates; returns the seconds it took."""
        start = time.perf_counter()
        for cid in self.cgroups:
            self.cri.update_resources(cid, cpuset_cpus=cpus.format())
        return time.perf_counter() - start


def _spec(name: str, qos: QosClass, annotations: dict[str, str] | None = None) -> PodSpec:
    uid = str(uuid.uuid4())
    return PodSpec(name=f"{name}-{uid[:8]}", namespace="dense", uid=uid,
                   cgroup_parent=cgroup_parent(qos, uid), annotations=annotations)
