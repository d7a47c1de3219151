"""The plugin on a real containerd (1.7 or 2.x) for the e2e tests: `nri-cpuset run` connected to the
lab's NRI socket (the Plugin process and its log; its fixture, ``plugin``, is in conftest.py),
pods driven over CRI like a kubelet, and what the kernel enforces (cgroup cpusets and
/proc/<pid>/status).

This machine has 2 online CPUs, no SMT and one NUMA node, so the scenarios are small; richer
topologies are covered by the unit, model and contract tests.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest

from cpuset_core.cpuset import CPUSet
from cpuset_lab import cgroups, plugin_log
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.pod_spec import PodSpec, QosClass, cgroup_parent
from cpuset_lab.resources import container_resources, guaranteed

ONLINE = cgroups.online_cpus() if Path("/sys/devices/system/cpu/online").exists() else CPUSet()
KEY = "weka.io/cores-ids"
SRC = str(Path(__file__).resolve().parents[2] / "src")


PATIENCE = 120.0
"""How long any wait of the e2e suite lasts before it calls the plugin or the runtime stuck.
A hang guard, never a verdict on speed (issue 46): the suite must pass on a slow, loaded
machine, and how fast something happens is the benchmarks' to measure. A wait that passes
returns as soon as its check holds, so a generous bound costs nothing when things work."""


def wait_until(check: Callable[[], bool], what: str, timeout: float = PATIENCE) -> None:
    """Poll ``check`` until it holds; fail after ``timeout`` seconds (a hang guard)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


P = TypeVar("P", bound="Plugin")


def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``nri-cpuset ARGS`` from this source tree, its output captured as text."""
    return subprocess.run([sys.executable, "-m", "cpuset_cli", *args], capture_output=True,
                          text=True, check=check, timeout=PATIENCE,
                          env={**os.environ, "PYTHONPATH": SRC})


def inspect_state(status: Path) -> dict[str, Any]:
    """The running plugin's state document (``inspect -o json``)."""
    state: dict[str, Any] = json.loads(cli("inspect", "--status-socket", str(status),
                                           "-o", "json").stdout)
    return state


class Plugin:
    """`nri-cpuset run` as a child process, with its log (``args``: more flags for ``run``)."""

    def __init__(self, socket: Path, log: Path, args: tuple[str, ...] = ()) -> None:
        self.socket, self.log, self.args = socket, log, args
        self.status = log.with_name("status.sock")
        self.cri_socket: Path | None = None
        """The lab's CRI socket (``serving`` sets it), unless ``args`` name one."""
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {**os.environ, "PYTHONPATH": SRC}
        env.pop("NRI_PLUGIN_SOCKET", None)
        cri = ([] if self.cri_socket is None or "--cri-socket" in self.args
               else ["--cri-socket", str(self.cri_socket)])
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "cpuset_cli", "run", "--nri-socket", str(self.socket),
                 "--log-level", "debug", "--log-format", "console", "--status-socket",
                 str(self.status), *cri, *self.args],
                stdout=out, stderr=subprocess.STDOUT, env=env)

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_synchronized(self, count: int = 1) -> None:
        wait_until(lambda: plugin_log.synchronized(self.text()) >= count,
                   f"synchronize #{count}\n--- plugin log ---\n{self.text()[-3000:]}")

    def stop(self) -> int:
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=PATIENCE)
        self.process = None
        return code

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait(timeout=PATIENCE)
        self.process = None


@contextmanager
def serving(lab: LabContainerd, running: P) -> Iterator[P]:
    """``running`` started and synchronized; at the end, the lab's pods removed first (so the
    plugin sees their containers go: no leak across tests), then a clean stop (exit code 0).
    The plugin reads the lab's CRI (containers it has not seen start), as on a node."""
    if running.cri_socket is None:
        running.cri_socket = lab.cri_address
    running.start()
    try:
        running.wait_synchronized()
    except BaseException:
        running.kill()  # a plugin left running would answer the next test's events too
        raise
    yield running
    if running.process is not None:
        lab.cleanup()
        assert running.stop() == 0, running.text()[-3000:]


def actual(cri: KubeletClient, cid: str) -> tuple[CPUSet, CPUSet]:
    """The container's CPUs and memory nodes as the kernel enforces them (cgroup and /proc
    must agree; a write landing between the two reads is read again, up to 1 s)."""
    status = cri.container_status(cid)
    assert status.pid is not None
    assert status.cgroups_path is not None
    cgroup, affinity = cgroups.container_view(status.cgroups_path, status.pid)
    assert cgroup.effective_cpus == affinity.cpus, (cgroup, affinity)
    return affinity.cpus, affinity.mems


def cpus(cri: KubeletClient, cid: str) -> CPUSet:
    return actual(cri, cid)[0]


def recorded(cri: KubeletClient, cid: str) -> CPUSet | None:
    """The container's cpuset as the runtime records it: its OCI spec (what a runtime restart
    re-applies), which holds the creation's adjustment and every update since; CRI's
    ``status.resources`` shows only what came through CRI and NRI updates."""
    spec = cri.container_status(cid).info.get("info", {})
    value: Any = spec.get("runtimeSpec", {}) if isinstance(spec, dict) else {}
    for key in ("linux", "resources", "cpu", "cpus"):
        value = value.get(key) if isinstance(value, dict) else None
    return CPUSet.parse(value) if isinstance(value, str) and value else None


def records_follow(plugin: Plugin, lab: LabContainerd, cri: KubeletClient,
                   expected: Mapping[str, CPUSet], *, tries: int = 12) -> None:
    """Until every container's runtime record is its ``expected`` cpuset. On these runtimes
    (NRI before v0.12.1) the plugin makes no call of its own for a record (decision 51): they
    ride on the runtime's answers, so each try runs and removes a shared pod for them to ride
    on. Meanwhile the plugin must list as lagging every container whose record differs."""
    for attempt in range(tries):
        stale = {cid: recorded(cri, cid) for cid, cpus_ in expected.items()
                 if recorded(cri, cid) != cpus_}
        if not stale:
            return
        state = inspect_state(plugin.status)
        lagging = {*state["records_lagging"], *state["pending_updates"]}
        assert set(stale) <= lagging, (
            f"records differ that the plugin does not list as lagging: "
            f"{ {cid[:12]: str(v) for cid, v in stale.items() if cid not in lagging} }")
        with pod(cri, f"rider-{attempt}", QosClass.BURSTABLE) as rider:
            shared(cri, lab, rider, "rider")
    stale = {cid[:12]: str(recorded(cri, cid)) for cid, cpus_ in expected.items()
             if recorded(cri, cid) != cpus_}
    assert not stale, f"records still lag after {tries} pods to ride on: {stale}"


@contextmanager
def pod(cri: KubeletClient, name: str, qos: QosClass, *, pins: str | None = None,
        namespace: str = "default", runtime_handler: str = "",
        annotations: Mapping[str, str] | None = None, uid: str | None = None) -> Iterator[str]:
    uid = uid or str(uuid.uuid4())
    annotations = {**(annotations or {}), **({KEY: pins} if pins is not None else {})}
    with cri.pod(PodSpec(name=name, uid=uid, cgroup_parent=cgroup_parent(qos, uid),
                         namespace=namespace, annotations=annotations),
                 runtime_handler=runtime_handler) as pod_id:
        yield pod_id


def shared(cri: KubeletClient, lab: LabContainerd, pod_id: str, name: str = "app") -> str:
    return cri.run_container(pod_id, name, lab.image,
                             resources=container_resources(cpu_request="100m"))


def integer(cri: KubeletClient, lab: LabContainerd, pod_id: str, count: int,
            name: str = "app") -> str:
    return cri.run_container(pod_id, name, lab.image, resources=guaranteed(count, "64Mi"))


needs_two_cpus = pytest.mark.skipif(len(ONLINE) < 2, reason="needs two online CPUs")
