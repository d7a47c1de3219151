"""The real runtime inside a VM lab guest, started once per guest: the lab's containerd 1.7
with NRI, ``nri-cpuset run`` connected to it, and pods run over CRI like a kubelet does.

Emulation is slow (a Python start is seconds, containerd's tens of seconds), so the plugin is
started while containerd is still coming up, every wait is scaled by ``NRI_CPUSET_VM_TIME_SCALE``,
and the plugin's state is read in this process through the ``inspect`` command's JSON (the
documented output), never from its log.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from cpuset_adapters.cri.client import CriError
from cpuset_adapters.cri.results import Resources
from cpuset_cli.commands.inspect import inspect
from cpuset_core.cpuset import CPUSet
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.containerd_install import find_installation
from cpuset_lab.containerd_service import ServiceContainerd
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.pod_spec import Device, PodSpec, QosClass, cgroup_parent
from cpuset_lab.resources import container_resources, guaranteed
from tests.vm import kernel

PIN = "weka.io/cores-ids"
SCALE = float(os.environ.get("NRI_CPUSET_VM_TIME_SCALE", "1"))
RESULTS = Path(os.environ.get("NRI_CPUSET_VM_RESULTS", "."))
WORK = Path(os.environ.get("NRI_CPUSET_VM_WORK", "/run/nri-cpuset-vm"))
SRC = Path(__file__).resolve().parents[2] / "src"
DRIVER = os.environ.get("NRI_CPUSET_VM_CGROUP_DRIVER", "cgroupfs")
"""The kubelet's and runc's cgroup driver in this guest (``systemd``: containerd.service)."""


def wait_until(check: Callable[[], bool], what: Callable[[], str] | str,
               timeout: float = 10.0) -> None:
    """Poll ``check`` until it is true; ``timeout`` is in host seconds (scaled here)."""
    deadline = time.monotonic() + timeout * SCALE
    while not check():
        if time.monotonic() > deadline:
            detail = what() if callable(what) else what
            raise AssertionError(f"timed out after {timeout * SCALE:.0f} s waiting for {detail}")
        time.sleep(0.2)


def read_state(status_socket: Path | str) -> dict[str, Any] | None:
    """The state document (``inspect -o json``) of the plugin serving ``status_socket``, or
    None while it cannot answer."""
    result = CliRunner().invoke(inspect, ["--status-socket", str(status_socket), "-o", "json"])
    if result.exit_code != 0:
        return None
    document: dict[str, Any] = json.loads(result.stdout)
    return document


class Plugin:
    """``nri-cpuset run`` as a child process, logging to the results directory."""

    def __init__(self, nri_socket: Path, cri_socket: Path, config: Path, log: Path) -> None:
        self.status = WORK / "status" / "status.sock"
        self.log = log
        self.command = [sys.executable, "-m", "cpuset_cli", "run", "--config", str(config),
                        "--nri-socket", str(nri_socket), "--cri-socket", str(cri_socket),
                        "--status-socket", str(self.status),
                        "--listen", "", "--log-level", "debug", "--log-format", "console"]
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(SRC)}
        env.pop("NRI_PLUGIN_SOCKET", None)
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(self.command, stdout=out,
                                            stderr=subprocess.STDOUT, env=env)

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def tail(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-3000:]
        except OSError:
            return "(no plugin log)"

    def state(self) -> dict[str, Any] | None:
        """The plugin's state document (``inspect -o json``), or None while it cannot answer."""
        return read_state(self.status)

    def wait_synchronized(self, timeout: float) -> dict[str, Any]:
        def synchronized() -> bool:
            assert self.running(), f"the plugin exited\n{self.tail()}"
            state = self.state()
            return state is not None and bool(state["synchronized"])

        wait_until(synchronized, lambda: f"the plugin to synchronize\n{self.tail()}", timeout)
        state = self.state()
        assert state is not None
        return state

    def kill(self) -> None:
        """SIGKILL, as a crash would: no goodbye to containerd."""
        assert self.process is not None
        self.process.kill()
        self.process.wait(timeout=30 * SCALE)
        self.process = None

    def stop(self) -> int:
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=30 * SCALE)
        self.process = None
        return code


def run_pod(cri: KubeletClient, name: str, qos: QosClass, *, pins: str | None = None,
            namespace: str = "default", annotations: Mapping[str, str] | None = None) -> str:
    """A pod sandbox as the kubelet of this guest's cgroup driver runs it (``pins``: the
    annotation); its id."""
    uid = str(uuid.uuid4())
    return cri.run_pod(PodSpec(
        name=name, namespace=namespace, uid=uid,
        cgroup_parent=cgroup_parent(qos, uid, driver=DRIVER),
        annotations={**(annotations or {}), **({PIN: pins} if pins is not None else {})}))


@dataclass
class Guest:
    """containerd, the plugin and a session-long shared pod (``web/app``)."""

    lab: LabContainerd
    plugin: Plugin
    cri: KubeletClient
    web: str = ""
    """The shared container every test finds running."""
    started: dict[str, float] = field(default_factory=dict)

    @classmethod
    def start(cls) -> Guest:
        marks = {"start": time.monotonic()}
        kind = ServiceContainerd if DRIVER == "systemd" else LabContainerd
        lab = kind(WORK / "containerd", installation=find_installation(),
                   start_timeout=40 * SCALE, request_timeout=f"{max(2, int(SCALE))}s",
                   registration_timeout=f"{int(5 * SCALE)}s")
        plugin = Plugin(lab.nri_socket, lab.cri_address, RESULTS / "plugin.toml",
                        RESULTS / "plugin.log")
        plugin.start()  # it waits for the NRI socket: its start overlaps containerd's
        lab.start()
        marks["containerd"] = time.monotonic()
        lab.import_image()
        marks["image"] = time.monotonic()
        cri = lab.client()
        cri.timeout = 60 * SCALE
        guest = cls(lab=lab, plugin=plugin, cri=cri)
        plugin.wait_synchronized(30)
        marks["plugin"] = time.monotonic()
        pod = guest.run_pod("web", QosClass.BURSTABLE)
        guest.web = cri.run_container(pod, "app", lab.image,
                                      resources=container_resources(cpu_request="100m"))
        marks["web"] = time.monotonic()
        guest.started = {k: round(v - marks["start"], 1) for k, v in marks.items()}
        return guest

    def run_pod(self, name: str, qos: QosClass, *, pins: str | None = None,
                namespace: str = "default", annotations: Mapping[str, str] | None = None) -> str:
        return run_pod(self.cri, name, qos, pins=pins, namespace=namespace,
                       annotations=annotations)

    def state(self) -> dict[str, Any]:
        """The plugin's state. A read that fails is tried again for up to 30 s (scaled): under
        emulation on this 2-core host the guest stalls (RCU stalls, soft lockups of 20-30 s,
        2026-11-29: twice in a row at a teardown), and one status read then misses its 5 s
        timeout while the plugin itself is fine; a plugin that stays silent still fails."""
        deadline = time.monotonic() + 30 * SCALE
        while (state := self.plugin.state()) is None:
            assert time.monotonic() < deadline, (
                f"inspect cannot reach the plugin\n{self.plugin.tail()}")
            time.sleep(0.5)
        return state

    def close(self) -> None:
        """Remove every pod, stop the plugin (exit code 0 expected) and containerd, and keep
        their logs with the results."""
        try:
            if self.lab.running:
                self.lab.cleanup()
            if self.plugin.running():
                code = self.plugin.stop()
                assert code == 0, f"the plugin exited with {code}\n{self.plugin.tail()}"
        finally:
            self.lab.close()
            if self.lab.config.log_path.exists():
                shutil.copy(self.lab.config.log_path, RESULTS / "containerd.log")


class Pods:
    """One test's pods: run through CRI, all removed at the end of the test."""

    def __init__(self, guest: Guest) -> None:
        self.guest = guest
        self.pods: list[str] = []
        self.names: dict[str, str] = {}
        """container id -> ``pod/container``."""

    def pod(self, name: str, qos: QosClass, *, pins: str | None = None,
            namespace: str = "default", annotations: Mapping[str, str] | None = None) -> str:
        pod_id = self.guest.run_pod(name, qos, pins=pins, namespace=namespace,
                                    annotations=annotations)
        self.pods.append(pod_id)
        return pod_id

    def container(self, pod_id: str, name: str, resources: Resources, *,
                  devices: Sequence[Device] = ()) -> str:
        cid = self.guest.cri.run_container(pod_id, name, self.guest.lab.image,
                                           resources=resources, devices=devices)
        pod_name = self.guest.cri.pod_config(pod_id).metadata.name
        self.names[cid] = f"{pod_name}/{name}"
        return cid

    def integer(self, name: str, cpus: int) -> str:
        """A Guaranteed pod ``name`` with one container asking ``cpus`` whole CPUs."""
        return self.container(self.pod(name, QosClass.GUARANTEED), "app",
                              guaranteed(cpus, "64Mi"))

    def pinned(self, name: str, pins: str) -> str:
        """A Burstable pod ``name`` pinned to ``pins``, with one shared-sized container."""
        return self.container(self.pod(name, QosClass.BURSTABLE, pins=pins), "app",
                              container_resources(cpu_request="100m"))

    def shared(self, name: str) -> str:
        return self.container(self.pod(name, QosClass.BURSTABLE), "app",
                              container_resources(cpu_request="100m"))

    def remove_all(self) -> None:
        """Stop and remove this test's pods, then wait until the plugin holds only the
        session's shared container again."""
        cri = self.guest.cri
        for pod_id in self.pods:
            try:
                cri.stop_pod(pod_id)
                cri.remove_pod(pod_id)
            except CriError:
                continue
        self.pods.clear()
        web = self.guest.web
        wait_until(lambda: [c["id"] for c in self.guest.state()["containers"]] == [web],
                   lambda: f"the plugin to release the test's containers: "
                           f"{self.guest.state()['containers']}", 30)
        wait_until(lambda: kernel.placement(cri, web).cpus == CPUSet.parse(
                       self.guest.state()["shared_pool"]),
                   "the shared pool to be back on the web container", 30)


def consistency_problems(guest: Guest) -> list[str]:
    """What is wrong between the plugin's state and the kernel right now (empty: nothing):

    1. every container runs where the plugin's state says (shared ones on the shared pool),
       with the memory nodes it says for pinned ones;
    2. no CPU is held by two integer containers, or by an integer container and a pin;
    3. the shared pool holds no exclusive or pinned CPU, and no offline one;
    4. the plugin decides with the CPUs the kernel has online.
    """
    state = guest.state()
    pool = CPUSet.parse(state["shared_pool"], allow_empty=True)
    problems = []
    if CPUSet.parse(state["online"]) != kernel.online():
        problems.append(f"the plugin's online CPUs {state['online']} are not the kernel's "
                        f"{kernel.online()}")
    held: dict[int, str] = {}
    pinned = CPUSet()
    for entry in state["containers"]:
        name, kind = entry["subject"], entry["kind"]
        where = kernel.placement(guest.cri, entry["id"])
        wanted = pool if kind == "shared" else CPUSet.parse(entry["cpus"])
        if where.cpus != wanted:
            problems.append(f"{name} ({kind}) runs on {where.cpus}, the plugin says {wanted}")
        if entry["mems"] is not None and where.mems != CPUSet.parse(entry["mems"]):
            problems.append(f"{name} has memory nodes {where.mems}, the plugin says "
                            f"{entry['mems']}")
        if kind == "annotated":
            pinned |= where.cpus
        elif kind == "integer":
            for cpu in where.cpus:
                if cpu in held:
                    problems.append(f"CPU {cpu} is held by {held[cpu]} and {name}")
                held[cpu] = name
    exclusive = CPUSet(held)
    if not exclusive.isdisjoint(pinned):
        problems.append(f"CPU(s) {exclusive & pinned} are both exclusive and pinned")
    if not pool.isdisjoint(exclusive | pinned):
        problems.append(f"the shared pool {pool} holds exclusive or pinned CPU(s) "
                        f"{pool & (exclusive | pinned)}")
    if not pool <= kernel.online():
        problems.append(f"the shared pool {pool} holds offline CPU(s) {pool - kernel.online()}")
    return problems


def wait_consistent(guest: Guest, timeout: float = 20) -> None:
    """Wait until ``consistency_problems`` finds nothing (live updates are asynchronous)."""
    wait_until(lambda: not consistency_problems(guest),
               lambda: "the kernel to enforce the plugin's state:\n  "
                       + "\n  ".join(consistency_problems(guest)), timeout)


@contextmanager
def configured(extra: str) -> Iterator[None]:
    """The guest plugin's configuration with ``extra`` (TOML) appended, by a live reload (the
    file is polled every 2 s), then put back."""
    config = RESULTS / "plugin.toml"
    before = config.read_text()
    config.write_text(before + "\n" + extra)
    time.sleep(3 * SCALE)
    try:
        yield
    finally:
        config.write_text(before)
        time.sleep(3 * SCALE)
