"""Quiet CPUs from inside the DaemonSet's pod (issue 43), on the lab's containerd: with the
``quiet-cpus`` component (the host's ``/proc/irq`` and ``/sys/devices/system/cpu`` mounted
writable, ``--proc-root /host/proc``) a quiet pod's CPU loses its interrupts, read from the
host's ``/proc/irq``, and its idle bound is carried by the CPU's PM QoS resume latency, read
from the host's sysfs (the pod lacks CAP_SYS_ADMIN, which the kernel's cpuidle ``disable``
store wants, so its states are left as they are); both come back when it goes, also when the
pod's plugin was killed -9 while it ran and it was removed while the plugin was down. Without
the component the quiet pod still runs, the plugin says why it was not quieted, and under
``cpus.unmet_requests = "refuse"`` its creation fails saying so.

Each test runs its own DaemonSet pod while holding the host's quiet-CPU lock, and puts back
whatever differs from before at the end, whether or not the plugin did.

Run: ``bash scripts/test e2e-pod -- -k quiet`` (``e2e-pod-2x``), after ``bash scripts/build-image``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from cpuset_adapters.cri.client import CriError
from cpuset_core.cpuset import CPUSet
from cpuset_lab import quiet_host
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.daemonset import update_configmap
from cpuset_lab.daemonset.running import RunningPod, start_pod
from cpuset_lab.pod_spec import QosClass
from cpuset_lab.quiet_host import CPU, IRQ, Snapshot
from tests.e2e.daemonset_harness import (
    import_daemonset_image,
    port_free,
    translated,
    wait_for_message,
)
from tests.e2e.plugin_harness import cpus, integer, needs_two_cpus, pod, wait_until
from tests.e2e.quiet_harness import QUIET

pytestmark = [pytest.mark.e2e, needs_two_cpus]

COMPONENT_PATHS = {"/proc/irq": Path("/proc/irq"),
                   "/sys/devices/system/cpu": Path("/sys/devices/system/cpu")}
"""The component's host paths: the lab's node is this host."""


@contextmanager
def daemonset_pod(lab: LabContainerd, root: Path, *components: str) -> Iterator[RunningPod]:
    """The DaemonSet's pod with ``components``, ready; deleted at the end."""
    image = import_daemonset_image(lab)
    paths = COMPONENT_PATHS if "quiet-cpus" in components else {}
    daemonset = translated(lab, root, image, host_paths=paths, components=components)
    assert port_free(daemonset), "something already answers on the pod's probe port"
    running = start_pod(lab.client(), daemonset)
    try:
        running.wait_ready()
        yield running
    finally:
        running.stop()
        lab.cleanup()


def irq_read_only(running: RunningPod) -> bool:
    """Whether the pod's container sees ``/proc/irq`` read-only (its mountinfo)."""
    pid = running.status().pid
    assert pid is not None
    for line in Path(f"/proc/{pid}/mountinfo").read_text().splitlines():
        fields = line.split()
        if fields[4] == "/proc/irq":
            return "ro" in fields[5].split(",")
    return False


def log_text(running: RunningPod) -> str:
    return "\n".join(running.log_lines())


def interrupts_off(cpu: int, irqs: list[Path]) -> bool:
    """No IRQ that accepts a write, nor the default affinity, holds ``cpu``."""
    return (all(cpu not in CPUSet.parse(p.read_text().strip()) for p in irqs)
            and cpu not in default_affinity())


def resume_latency(cpu: int) -> Path:
    return CPU / f"cpu{cpu}/power/pm_qos_resume_latency_us"


def pod_quiet(cpu: int, irqs: list[Path]) -> bool:
    """``cpu`` without interrupts and its resume latency bounded to polling (``n/a``: the
    quiet request's ``cpu-c-states.crio.io: disable``, a bound of 0 µs)."""
    return interrupts_off(cpu, irqs) and resume_latency(cpu).read_text().strip() == "n/a"


def default_affinity() -> CPUSet:
    return CPUSet.from_mask(int((IRQ / "default_smp_affinity").read_text().strip()
                                .replace(",", ""), 16))


def needs_pm_qos(host: Snapshot) -> None:
    if not any(path.name == "pm_qos_resume_latency_us" for path in host):
        pytest.skip("this kernel's CPUs have no power/pm_qos_resume_latency_us")


def test_with_the_component_a_quiet_pods_cpu_loses_its_irqs_and_deep_idle_until_it_goes(
        host: Snapshot, lab: LabContainerd, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Interrupts are moved from inside the pod, and the idle bound is written to the CPU's
    PM QoS resume latency: the pod lacks CAP_SYS_ADMIN, which the states' ``disable`` wants,
    so those stay as they were."""
    needs_pm_qos(host)
    irqs = quiet_host.accepting(host)
    client = lab.client()
    with daemonset_pod(lab, tmp_path, "quiet-cpus") as running:
        with pod(client, "dpdk", QosClass.GUARANTEED, annotations=QUIET) as dpdk:
            cid = integer(client, lab, dpdk, 1)
            started = time.monotonic()  # the start returned: what the acceptance times from
            (cpu,) = cpus(client, cid)
            wait_until(lambda: pod_quiet(cpu, irqs),
                       f"CPU {cpu} quiet\n{log_text(running)[-3000:]}")
            seconds = time.monotonic() - started
            text = log_text(running)
            assert "quiet CPUs not given" not in text, text[-3000:]
            idle = sorted(CPU.glob(f"cpu{cpu}/cpuidle/state*/disable"))
            assert all(p.read_text().strip() == host[p] for p in idle)
            other = resume_latency(1 - cpu if cpu < 2 else 0)
            assert other.read_text().strip() == host[other]  # only its CPU
        wait_until(lambda: not quiet_host.differences(host),
                   f"the host put back by the pod's plugin\n{log_text(running)[-3000:]}")
    with capsys.disabled():
        print(f"\n[daemonset pod, quiet-cpus, containerd {lab.runtime.name}] CPU {cpu} without "
              f"interrupts and its resume latency n/a {seconds:.2f} s after its container's "
              f"start returned ({len(irqs)} IRQs accept a write)")


def test_with_the_component_a_pods_plugin_killed_while_quiet_puts_back_at_its_restart(
        host: Snapshot, lab: LabContainerd, tmp_path: Path) -> None:
    """The pod's plugin killed -9 while the quiet pod runs, the quiet pod removed while it is
    down: the restarted container (the kubelet's next attempt, same sandbox, same journal
    directory on the host) puts back the interrupts and the resume latency."""
    needs_pm_qos(host)
    irqs = quiet_host.accepting(host)
    client = lab.client()
    with daemonset_pod(lab, tmp_path, "quiet-cpus") as running:
        with pod(client, "dpdk", QosClass.GUARANTEED, annotations=QUIET) as dpdk:
            (cpu,) = cpus(client, integer(client, lab, dpdk, 1))
            wait_until(lambda: pod_quiet(cpu, irqs),
                       f"CPU {cpu} quiet\n{log_text(running)[-3000:]}")
            running.kill()
        assert resume_latency(cpu).read_text().strip() == "n/a"  # nobody there to put it back
        running.restart()
        running.wait_ready()
        wait_until(lambda: not quiet_host.differences(host),
                   f"the host put back by the restarted plugin\n{log_text(running)[-3000:]}")


def test_without_the_component_a_quiet_pod_runs_and_the_plugin_says_why(
        host: Snapshot, lab: LabContainerd, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    client = lab.client()
    with daemonset_pod(lab, tmp_path) as running:
        with pod(client, "dpdk", QosClass.GUARANTEED, annotations=QUIET) as dpdk:
            cid = integer(client, lab, dpdk, 1)
            (cpu,) = cpus(client, cid)
            wait_until(lambda: "quiet CPUs not given (best effort)" in log_text(running),
                       f"the reason in the pod's log\n{log_text(running)[-3000:]}")
            [reason] = [line for line in running.log_lines() if "not given" in line]
            assert (f"idle states: cpuidle of CPU(s) {cpu} is read-only here, and their PM QoS "
                    "resume latency (power/pm_qos_resume_latency_us) is read-only here"
                    in reason), reason
            # The kubelet sends runc its default readonlyPaths (/proc/irq among them); the
            # lab's CRI proto has no such field, and containerd 1.7 was seen to leave this
            # pod's /proc/irq writable, where its plugin then moves the host's interrupts.
            irq_ro = irq_read_only(running)
            if irq_ro:
                assert "interrupts: /proc/irq is read-only here" in reason, reason
            else:
                moved = sorted(str(path) for path in quiet_host.differences(host))
                with capsys.disabled():
                    print(f"\n[daemonset pod without quiet-cpus] /proc/irq writable in the "
                          f"lab's pod (a kubelet makes it read-only): moved {moved[:3]}...")
        wait_until(lambda: not quiet_host.differences(host), "the host put back")
        [volume] = running.pod.config_maps
        config = volume.files["config.toml"]
        update_configmap(volume.directory, {
            "config.toml": config.replace("[cpus]\n", '[cpus]\nunmet_requests = "refuse"\n')})
        wait_for_message(running, 'applied cpus.unmet_requests = "refuse"')
        with pod(client, "dpdk", QosClass.GUARANTEED, annotations=QUIET) as dpdk:
            with pytest.raises(CriError) as caught:
                integer(client, lab, dpdk, 1)
            details = caught.value.details
            assert ("asks for quiet CPUs (irq-load-balancing.crio.io, cpu-c-states.crio.io), "
                    "which this node cannot give: " in details), details
            assert "idle states: cpuidle of CPU(s) " in details, details  # its CPU, read-only
            assert "PM QoS resume latency" in details, details
            assert ("interrupts: /proc/irq is read-only here" in details) is irq_ro, details
    assert not quiet_host.differences(host)
