"""The demo on a real runtime (``python -m cpuset_lab demo``, run by ``scripts/demo``).

Starts the lab's containerd (1.7 or 2.x, installed by ``scripts/install-containerd``) with NRI in
a temporary directory, runs ``nri-cpuset run`` against it, then plays the same
scenario as ``plan --demo`` over CRI, the way a kubelet would, and prints after every step what
the kernel actually enforces for each running container (its cgroup cpuset, and the CPUs and
memory nodes in ``/proc/<pid>/status``). Everything is torn down at the end.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from cpuset_adapters.cri.client import CriError
from cpuset_adapters.cri.results import Resources
from cpuset_cli import demo
from cpuset_core import ContainerFacts, CpusetError, PodFacts, Topology
from cpuset_lab import cgroups, plugin_log
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.containerd_install import Installation
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.pod_spec import PodSpec, QosClass, cgroup_parent


class DemoError(RuntimeError):
    """The demo could not run (the plugin did not come up); the message says why."""


def run(topology: Topology, installation: Installation, echo: Callable[[str], None]) -> int:
    """Play the demo on ``installation``'s containerd; return the number of steps whose outcome
    was not what the dry run predicted (0 on success)."""
    with tempfile.TemporaryDirectory(prefix="nri-cpuset-demo-") as tmp:
        lab = LabContainerd(Path(tmp) / "containerd", installation=installation)
        plugin: subprocess.Popen[bytes] | None = None
        log = Path(tmp) / "plugin.log"
        try:
            version = lab.start()
            lab.import_image()
            echo(f"containerd {version.runtime_version} running with NRI at {lab.nri_socket}")
            plugin = _start_plugin(lab.nri_socket, lab.cri_address, log)
            _wait_for(lambda: plugin_log.synchronized(log.read_text(errors="replace")) > 0, log)
            echo(f"nri-cpuset run: registered and synchronized (pid {plugin.pid})\n")
            return _play(topology, lab, lab.client(), echo)
        finally:
            if plugin is not None:
                lab.cleanup()
                plugin.send_signal(signal.SIGTERM)
                code = plugin.wait(timeout=15)
                echo(f"\nnri-cpuset run stopped (exit code {code})")
            lab.close()


def _start_plugin(socket: Path, cri: Path, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-m", "cpuset_cli", "run", "--nri-socket", str(socket),
             "--cri-socket", str(cri)],
            stdout=out, stderr=subprocess.STDOUT, env={**os.environ})


def _wait_for(check: Callable[[], bool], log: Path, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise DemoError(f"the plugin did not synchronize within {timeout} s; "
                                       f"log:\n{log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.05)


def _play(topology: Topology, lab: LabContainerd, cri: KubeletClient,
          echo: Callable[[str], None]) -> int:
    shadow = _Shadow(topology)
    pods: dict[str, str] = {}
    live: dict[str, tuple[str, str]] = {}  # scenario container id -> (CRI id, label)
    mismatches = 0
    for number, make_step in enumerate(demo.steps(topology, shadow.dry_run), start=1):
        step = make_step()
        if step.action == "remove":
            cid, label = live.pop(step.remove_id)
            cri.stop(cid)
            cri.remove(cid)
            shadow.dry_run.remove_container(step.remove_id)
            echo(f"{number}. remove {label}")
        else:
            assert step.pod is not None
            assert step.container is not None
            label = f"{step.pod.namespace}/{step.pod.name}/{step.container.name}"
            annotation = step.pod.annotations.get("weka.io/cores-ids")
            echo(f"{number}. create {label}" + (f" (weka.io/cores-ids={annotation!r})"
                                               if annotation is not None else ""))
            predicted_ok = shadow.admits(step.pod, step.container)
            try:
                pod_id = pods.get(step.pod.sandbox_id) or _run_pod(cri, step.pod)
                pods[step.pod.sandbox_id] = pod_id
                cid = cri.run_container(pod_id, step.container.name, lab.image,
                                        resources=_resources(step.container))
            except CriError as error:
                echo(f"   rejected by the runtime: {error.details}")
                mismatches += _expect(predicted_ok, admitted=False, echo=echo)
                continue
            mismatches += _expect(predicted_ok, admitted=True, echo=echo)
            shadow.dry_run.create_container(step.pod, step.container)
            live[step.container.id] = (cid, label)
        mismatches += _show(cri, live, shadow, echo)
    echo(f"\n{'every' if not mismatches else 'NOT every'} placement matched the dry run "
         f"({mismatches} mismatch(es))")
    return mismatches


def _expect(predicted_ok: bool, *, admitted: bool, echo: Callable[[str], None]) -> int:
    if predicted_ok == admitted:
        return 0
    echo(f"   MISMATCH: the dry run {'admitted' if predicted_ok else 'rejected'} it")
    return 1


def _run_pod(cri: KubeletClient, pod: PodFacts) -> str:
    qos = QosClass.BURSTABLE if "burstable" in pod.cgroup_parent else QosClass.GUARANTEED
    return cri.run_pod(PodSpec(name=pod.name, namespace=pod.namespace, uid=pod.uid,
                               annotations=dict(pod.annotations),
                               cgroup_parent=cgroup_parent(qos, pod.uid)))


def _resources(container: ContainerFacts) -> Resources:
    return Resources(cpu_quota=container.cpu_quota or 0, cpu_period=container.cpu_period or 0,
                     cpu_shares=container.cpu_shares or 2, memory_limit=64 * 2**20)


def _show(cri: KubeletClient, live: dict[str, tuple[str, str]], shadow: _Shadow,
          echo: Callable[[str], None]) -> int:
    """Print every running container's enforced cpuset; return how many differ from the dry
    run's placement."""
    mismatches = 0
    for scenario_id, (cid, label) in sorted(live.items(), key=lambda item: item[1][1]):
        status = cri.container_status(cid)
        if status.pid is None:
            continue
        affinity = cgroups.process_affinity(status.pid)
        expected = shadow.dry_run.host.containers[scenario_id].cpus
        note = "" if expected == affinity.cpus else f"  MISMATCH: dry run says {expected}"
        mismatches += bool(note)
        echo(f"     {label:<28} cpus {affinity.cpus.format():<12} mems "
             f"{affinity.mems.format():<6} (pid {status.pid}){note}")
    return mismatches


class _Shadow:
    """The dry-run engine on the same topology, kept in step with what the real runtime did:
    the scenario's later steps pick CPUs that earlier ones placed, and every real placement is
    compared with the dry run's."""

    def __init__(self, topology: Topology) -> None:
        from cpuset_adapters.static_topology import StaticTopologySource  # noqa: PLC0415
        from cpuset_cli import bootstrap  # noqa: PLC0415

        self.dry_run = bootstrap.build_dry_run(StaticTopologySource(topology))

    def admits(self, pod: PodFacts, container: ContainerFacts) -> bool:
        try:
            self.dry_run.engine.plan_create(pod, container)
        except CpusetError:
            return False
        return True
