"""Quiet CPUs (issue 43) on a real containerd (1.7 or 2.x), read back from /proc/irq and sysfs: a
Guaranteed pod asking in CRI-O's words gets its exclusive CPU without interrupts and without
idle states past polling; both come back when the pod goes, also when the plugin was killed
with -9 while the pod ran and the pod was removed while it was down. How long each pod's CPU
took to become quiet after its start returned is printed (and kept as a junit property).

These tests change the host's interrupt affinities and idle states: whatever they changed is
put back in the fixture's teardown, whether or not the plugin did.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from cpuset_lab import quiet_host
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.quiet_host import CPU, Snapshot
from tests.e2e.plugin_harness import Plugin, needs_two_cpus, wait_until
from tests.e2e.quiet_harness import quiet_on, quiet_pod

pytestmark = [pytest.mark.e2e, needs_two_cpus]
Record = Callable[[str, object], None]


def put_back_by(plugin: Plugin, host: Snapshot) -> None:
    """Wait until every file quiet CPUs may change holds its value of before the test."""
    wait_until(lambda: not quiet_host.differences(host),
               f"the host put back\n{plugin.text()[-3000:]}")


def test_a_quiet_pods_cpu_loses_interrupts_and_idle_states_until_it_goes(
        host: Snapshot, quiet_plugin: Plugin, lab: LabContainerd,
        cri: KubeletClient, record_property: Record) -> None:
    with quiet_pod(cri, lab, quiet_plugin, quiet_host.accepting(host),
                   record=record_property) as cpu:
        other = CPU / f"cpu{1 - cpu if cpu < 2 else 0}/cpuidle/state1/disable"
        if other.exists():
            assert other.read_text().strip() == host[other]  # only its CPU
    put_back_by(quiet_plugin, host)


def test_a_plugin_killed_while_quiet_puts_back_at_its_next_start(
        host: Snapshot, quiet_plugin: Plugin, lab: LabContainerd,
        cri: KubeletClient, record_property: Record) -> None:
    with quiet_pod(cri, lab, quiet_plugin, quiet_host.accepting(host), record=record_property):
        quiet_plugin.kill()
    assert quiet_host.differences(host)  # the pod went while nobody was there to put it back
    quiet_plugin.start()
    quiet_plugin.wait_synchronized(2)
    put_back_by(quiet_plugin, host)


def test_a_restarted_plugin_keeps_a_running_pods_cpu_quiet(
        host: Snapshot, quiet_plugin: Plugin, lab: LabContainerd,
        cri: KubeletClient, record_property: Record) -> None:
    irqs = quiet_host.accepting(host)
    with quiet_pod(cri, lab, quiet_plugin, irqs, record=record_property) as cpu:
        passes = quiet_plugin.text().count("quiet CPUs")
        quiet_plugin.kill()
        quiet_plugin.start()
        quiet_plugin.wait_synchronized(2)
        # The restarted plugin's first pass, after its rebuild: the pod still needs the CPU.
        wait_until(lambda: quiet_plugin.text().count("quiet CPUs") > passes,
                   f"a pass after the restart\n{quiet_plugin.text()[-3000:]}")
        assert quiet_on(cpu, irqs), quiet_plugin.text()[-3000:]
    put_back_by(quiet_plugin, host)
