"""Quiet CPUs kept quiet (issue 43) on a real containerd (1.7 or 2.x): an interrupt written back
onto a quiet CPU is moved off again, counted and logged as a repair, and told as a
``QuietCpusRepaired`` Event on the pod (the plugin's Events on, sent to the lab's fake API
server, read back as kubectl reads them); a real irqbalance (Debian's
1.9.2, its own 10 s rounds) is told to leave a quiet pod's CPU alone, keeps off it across two
of its rounds, and gets its own banned set back when the pod goes, also when the plugin was
killed -9 while the pod ran.

How long a pod's CPU takes to become quiet after its start returns is measured and printed
(and kept as a junit property); the assertions wait with the harness's hang guard only.
These tests change the host's interrupts and idle states inside the ``host`` fixture's lock,
and put back whatever they changed.
"""

from __future__ import annotations

import json
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from cpuset_core import CPUSet
from cpuset_lab import irqbalance, quiet_host
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.kube_api import FakeApi, write_kubeconfig
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.quiet_host import Snapshot
from tests.e2e.plugin_harness import (
    PATIENCE,
    Plugin,
    needs_two_cpus,
    serving,
    wait_until,
)
from tests.e2e.quiet_harness import (
    QuietPlugin,
    log_events,
    quiet_on,
    quiet_pod,
)

pytestmark = [pytest.mark.e2e, needs_two_cpus]
needs_irqbalance = pytest.mark.skipif(not irqbalance.installed(),
                                      reason="run `bash scripts/install-irqbalance` first")


@pytest.fixture
def balancer(host: Snapshot, tmp_path: Path) -> Iterator[irqbalance.Running]:
    """A real irqbalance, inside the host's lock, killed before the host is put back."""
    if not irqbalance.installed():
        pytest.skip("run `bash scripts/install-irqbalance` first")
    with irqbalance.running(tmp_path / "irqbalance.log") as daemon:
        wait_until(lambda: daemon.banned() is not None, "irqbalance answering on its socket")
        yield daemon


NODE = "lab-node"


@pytest.fixture
def telling_plugin(host: Snapshot, lab: LabContainerd, cri: KubeletClient, api: FakeApi,
                   tmp_path: Path) -> Iterator[QuietPlugin]:
    """The quiet plugin with Kubernetes Events on, sent to ``api``; stopped cleanly (exit code
    0) before ``host`` is put back."""
    config = tmp_path / "events.toml"
    config.write_text(f'[topology_publisher]\nnode_name = "{NODE}"\n'
                      f'kubeconfig = "{write_kubeconfig(tmp_path / "kubeconfig", api)}"\n'
                      '[events]\nenabled = true\n')
    with serving(lab, QuietPlugin(lab.nri_socket, tmp_path, ("--config", str(config)))) \
            as running:
        yield running


def told(api: FakeApi, reason: str) -> list[dict[str, Any]]:
    """The events of ``reason`` in ``default`` as kubectl reads them from the fake (core/v1:
    ``involvedObject``, ``message``)."""
    url = (f"http://127.0.0.1:{api.port}/api/v1/namespaces/default/events"
           f"?fieldSelector=reason%3D{reason}")
    with urllib.request.urlopen(url, timeout=PATIENCE) as reply:
        items: list[dict[str, Any]] = json.loads(reply.read())["items"]
    return items


def test_an_irq_written_back_onto_a_quiet_cpu_is_moved_off_counted_logged_and_told(  # noqa: PLR0917
        host: Snapshot, telling_plugin: QuietPlugin, api: FakeApi, lab: LabContainerd,
        cri: KubeletClient, record_property: Callable[[str, object], None]) -> None:
    irqs = quiet_host.accepting(host)
    if not irqs:
        pytest.skip("no IRQ here accepts an affinity")
    plugin, uid = telling_plugin, str(uuid.uuid4())
    with quiet_pod(cri, lab, plugin, irqs, record=record_property, uid=uid) as cpu:
        before = {what: plugin.repairs(what) for what in ("irq", "idle")}
        moved = irqs[0]
        moved.write_text(str(cpu))  # a hand (or a driver, or irqbalance) moves it back
        wait_until(lambda: quiet_on(cpu, irqs),
                   f"{moved} moved off CPU {cpu} again\n{plugin.text()[-3000:]}")
        wait_until(lambda: plugin.repairs("irq") > before["irq"], "the repair counted")
        assert {what: plugin.repairs(what) for what in before} == {
            "irq": before["irq"] + 1, "idle": before["idle"]}
        repairs = [e for e in log_events(plugin.text()) if e.get("event") == "quiet CPUs repaired"]
        assert any(str(moved) in str(e.get("files")) and e.get("what") == "irq"
                   for e in repairs), repairs
        wait_until(lambda: bool(told(api, "QuietCpusRepaired")),
                   f"a QuietCpusRepaired event\n{plugin.text()[-3000:]}")
        [event] = told(api, "QuietCpusRepaired")
        involved = event["involvedObject"]
        assert (involved["kind"], involved["namespace"], involved["name"], involved["uid"],
                involved["fieldPath"]) == ("Pod", "default", "dpdk", uid, "spec.containers{app}")
        assert (event["type"], event["reportingComponent"]) == ("Warning", "weka.io/nri-cpuset")
        assert event["message"] == (f"1 irq setting(s) of its quiet CPUs {cpu} found changed "
                                    f"back and rewritten (first: {moved})")
        print(f"told: {event['reason']} on pod/{involved['name']}: {event['message']}")
    wait_until(lambda: not quiet_host.differences(host),
               f"the host put back\n{plugin.text()[-3000:]}")


def told_to_leave(daemon: irqbalance.Running, own: CPUSet, cpu: int, plugin: Plugin) -> None:
    wait_until(lambda: (daemon.banned() or CPUSet()) == own | CPUSet([cpu]),
               f"irqbalance told to leave CPU {cpu} alone\n{plugin.text()[-3000:]}")


@contextmanager
def banned_quiet_pod(balancer: irqbalance.Running, plugin: Plugin, lab: LabContainerd,  # noqa: PLR0917
                     cri: KubeletClient, host: Snapshot,
                     record_property: Callable[[str, object], None],
                     ) -> Iterator[tuple[CPUSet, int, list[Path]]]:
    """A quiet pod whose CPU irqbalance was told to leave alone: (irqbalance's own banned set,
    the CPU, the IRQs that accept a write)."""
    own = balancer.banned()
    assert own is not None
    irqs = quiet_host.accepting(host)
    with quiet_pod(cri, lab, plugin, irqs, record=record_property) as cpu:
        told_to_leave(balancer, own, cpu, plugin)
        yield own, cpu, irqs


def own_set_back(daemon: irqbalance.Running, own: CPUSet, plugin: Plugin) -> None:
    wait_until(lambda: daemon.banned() == own,
               f"irqbalance given its own set {own or 'none'} back\n{plugin.text()[-3000:]}")


@needs_irqbalance
def test_a_running_irqbalance_keeps_off_a_quiet_cpu_for_two_rounds_and_gets_its_set_back(  # noqa: PLR0917
        balancer: irqbalance.Running, quiet_plugin: QuietPlugin, lab: LabContainerd,
        cri: KubeletClient, host: Snapshot,
        record_property: Callable[[str, object], None]) -> None:
    with banned_quiet_pod(balancer, quiet_plugin, lab, cri, host,
                          record_property) as (own, cpu, irqs):
        rounds = balancer.rounds()
        loud = 0
        watched = time.monotonic()
        while balancer.rounds() < rounds + 2:  # two of its rounds, each ending in its tree
            assert time.monotonic() - watched < PATIENCE, "irqbalance stopped its rounds"
            loud += not quiet_on(cpu, irqs)
            time.sleep(0.1)
        print(f"irqbalance: {balancer.rounds() - rounds} rounds with CPU {cpu} banned; "
              f"{loud} looks found it not quiet")
        assert quiet_on(cpu, irqs), quiet_plugin.text()[-3000:]
        repaired = quiet_plugin.repairs("irq")
        print(f"irq repairs while irqbalance ran: {repaired:.0f}")
        record_property("irq_repairs_with_irqbalance", repaired)
    own_set_back(balancer, own, quiet_plugin)


@needs_irqbalance
def test_a_plugin_killed_while_quiet_gives_irqbalance_its_set_back_at_its_next_start(  # noqa: PLR0917
        balancer: irqbalance.Running, quiet_plugin: QuietPlugin, lab: LabContainerd,
        cri: KubeletClient, host: Snapshot,
        record_property: Callable[[str, object], None]) -> None:
    with banned_quiet_pod(balancer, quiet_plugin, lab, cri, host,
                          record_property) as (own, _cpu, _irqs):
        quiet_plugin.kill()
    quiet_plugin.start()
    quiet_plugin.wait_synchronized(2)
    own_set_back(balancer, own, quiet_plugin)
