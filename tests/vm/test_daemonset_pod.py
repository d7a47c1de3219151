"""The DaemonSet's pod on the production node shape (issue 33): systemd as PID 1,
``containerd.service`` with the systemd cgroup driver, and the plugin inside the pod the
kubelet would run from ``deploy/kubernetes`` (the image ``scripts/build-image`` built), uid 0
with every capability dropped, reaching systemd only through the read-only ``/run/dbus``
mount of the guest's real system bus.

The question the host's pod e2e cannot answer: does systemd accept that caller's unit writes?
systemd authorizes ``SetUnitProperties`` by the caller's uid when the bus daemon cannot vouch
for its capabilities, and the pod's uid is 0: it should. The proof is the plugin's own account
(its ``nri_cpuset_systemd_unit_updates_total`` by outcome, and no warning that it fell back to
the files only), with every scope's ``AllowedCPUs`` equal to what the kernel enforces across a
``daemon-reload``. ``AllowedCPUs`` alone proves nothing: runc's systemd driver sets it too when
the runtime's record follows the plugin's kernel write (the first run of this test passed with
the guest's system bus missing and every write of the plugin's failed ``no-bus``).

Only one plugin may be registered with a containerd at a time: this module runs last in the
shape and takes over the session's ``guest``: its plugin process is stopped (SIGTERM, exit 0)
and the pod's plugin registers with the same containerd, rebuilding its state from what runs
there (the session's ``web/app`` included). A containerd of its own cost the module a start
and an image import under emulation, for nothing the test needs.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cpuset_core.cpuset import CPUSet
from cpuset_lab.daemonset.lab_host import log_messages
from cpuset_lab.daemonset.running import PROBE_HOST, RunningPod, start_pod
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.pod_spec import QosClass
from cpuset_lab.resources import container_resources, guaranteed
from tests.e2e.daemonset_harness import import_daemonset_image, translated, wait_for_message
from tests.vm import kernel, units
from tests.vm.runtime import DRIVER, RESULTS, SCALE, WORK, Guest, run_pod, wait_until

pytestmark = pytest.mark.skipif(DRIVER != "systemd", reason="the systemd shape's question")

SYSTEM_BUS = Path("/run/dbus")


@dataclass(slots=True)
class PodNode:
    guest: Guest
    client: KubeletClient
    running: RunningPod
    ready_seconds: float


@pytest.fixture(scope="module")
def node(guest: Guest) -> Iterator[PodNode]:
    code = guest.plugin.stop()
    assert code == 0, f"the session's plugin exited with {code}\n{guest.plugin.tail()}"
    root = WORK / "daemonset"
    running: RunningPod | None = None
    try:
        image = import_daemonset_image(guest.lab)
        # The node's own system bus, as the manifest mounts it (the lab's default is a
        # directory of the test's: a host without systemd).
        daemonset = translated(guest.lab, root, image, host_paths={"/run/dbus": SYSTEM_BUS})
        running = start_pod(guest.cri, daemonset)
        ready = running.wait_ready(timeout=120 * SCALE)
        yield PodNode(guest=guest, client=guest.cri, running=running, ready_seconds=ready)
    finally:
        if running is not None:
            (RESULTS / "daemonset-pod.log").write_text("\n".join(running.log_lines()) + "\n")
            running.stop()


def unit_updates(node: PodNode) -> dict[str, float]:
    """``nri_cpuset_systemd_unit_updates_total`` by outcome, from the pod's metrics port (host
    network: this guest's loopback)."""
    port = node.running.probe("readiness").port
    with urllib.request.urlopen(f"http://{PROBE_HOST}:{port}/metrics", timeout=10 * SCALE) as r:
        text = r.read().decode()
    counts: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("nri_cpuset_systemd_unit_updates_total{"):
            labels, value = line.rsplit(" ", 1)
            counts[labels.split('outcome="', 1)[1].split('"', 1)[0]] = float(value)
    assert counts, f"no nri_cpuset_systemd_unit_updates_total in the pod's metrics:\n{text}"
    return counts


def test_the_pod_writes_every_scope_through_the_system_bus_with_every_capability_dropped(
        node: PodNode, capsys: pytest.CaptureFixture[str]) -> None:
    client, lab = node.client, node.guest.lab
    status = node.running.status()
    assert status.pid is not None
    with Path(f"/proc/{status.pid}/status").open() as proc:
        fields = dict(line.split(":", 1) for line in proc if ":" in line)
    assert int(fields["CapEff"], 16) == 0, "the plugin's process kept a capability"
    assert fields["Uid"].split()[0] == "0"
    wait_for_message(node.running, "registered with the runtime as 99-nri-cpuset",
                     timeout=30 * SCALE)
    with capsys.disabled():
        print(f"\n[daemonset pod, systemd shape] CreateContainer to /readyz 200: "
              f"{node.ready_seconds:.1f} s (emulated)")

    online = kernel.online()
    pin = CPUSet([online.last()])
    pods = [run_pod(client, "web", QosClass.BURSTABLE),
            run_pod(client, "io", QosClass.BURSTABLE, pins=pin.format()),
            run_pod(client, "db", QosClass.GUARANTEED)]
    try:
        web = client.run_container(pods[0], "app", lab.image,
                                   resources=container_resources(cpu_request="100m"))
        io = client.run_container(pods[1], "app", lab.image,
                                  resources=container_resources(cpu_request="100m"))
        db = client.run_container(pods[2], "app", lab.image, resources=guaranteed(2, "64Mi"))
        # The plugin's own container is a shared one too: its cgroup, its cgroup namespace's
        # root, is one the kernel keeps from it (nsdelegate), and systemd writes it. The
        # session's web/app ran before the pod's plugin did.
        own = node.running.container_id
        shared = [web, own, node.guest.web]
        containers = [("web", web), ("the plugin", own), ("the session's web", node.guest.web),
                      ("io", io), ("db", db)]

        def placed_right() -> bool:
            exclusive = kernel.placement(client, db).cpus
            return (kernel.placement(client, io).cpus == pin and len(exclusive) == 2
                    and not exclusive & pin
                    and all(kernel.placement(client, cid).cpus == online - pin - exclusive
                            for cid in shared))

        def describe() -> str:
            return "\n".join(f"{name}: {kernel.placement(client, cid).cpus}"
                             for name, cid in containers)

        wait_until(placed_right, lambda: f"the pod's placements\n{describe()}", 30 * SCALE)
        wait_until(lambda: not units.allowed_not_enforced(client, containers),
                   lambda: "every scope's AllowedCPUs written through D-Bus\n"
                           + "\n".join(units.allowed_not_enforced(client, containers)),
                   30 * SCALE)
        units.systemctl("daemon-reload")
        # What systemd re-applied is what it accepted from the pod: placements unchanged.
        assert placed_right(), describe()
        assert not units.allowed_not_enforced(client, containers)
        # The plugin's own writes went through the bus and systemd took them.
        counts = unit_updates(node)
        assert counts["set"] >= 1, counts
        assert not {outcome: n for outcome, n in counts.items() if outcome != "set" and n}, counts
        # Nor did the fast path stop at a file of the plugin's own (it did before systemd's
        # write of it counted: "kernel write refused; through the runtime instead").
        fallback = [m for m in log_messages(node.running.log_lines())
                    if "not updated over D-Bus" in m or "kernel write refused" in m]
        assert not fallback, fallback
    finally:
        for pod_id in pods:
            client.stop_pod(pod_id)
            client.remove_pod(pod_id)
