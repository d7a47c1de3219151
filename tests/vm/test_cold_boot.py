"""The cold boot (seed 000 §5): containerd, the plugin and a kubelet stand-in started by one
systemd transaction, as a boot starts them, with the kubelet's pods created the moment CRI
answers. Every container records where the kernel let it run at its first instruction; none
may have run unplaced. Then a reboot: everything killed, the runtime's state gone, the pods
run again by the kubelet, and the plugin's state rebuilt from the runtime.

Both documented installs: ``deploy/systemd``'s ``Type=notify`` unit, ordered before the
kubelet, and the pre-installed launcher in containerd's plugin path. The module runs before
the shape's other modules and leaves no unit, process or file of its own behind.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cpuset_adapters.default_paths import STATUS_SOCKET
from cpuset_core.cpuset import CPUSet
from cpuset_lab.cold_boot import CONTAINERD, KUBELET, PLUGIN, ColdBootNode, PluginMode
from cpuset_lab.containerd_install import find_installation
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.kubelet_standin import first_words
from tests.vm import kernel
from tests.vm.runtime import (
    RESULTS,
    SCALE,
    WORK,
    consistency_problems,
    read_state,
    wait_until,
)

BOOT_TIMEOUT = 60
"""Host seconds (scaled) for a boot: containerd, the plugin and three pods under systemd."""
REGISTRATION_TIMEOUT = 30
"""Host seconds (scaled) containerd gives a pre-installed plugin to register: an emulated
guest imports Python for tens of seconds, and containerd 1.7 does not start at all when a
pre-installed plugin misses it (docs/operations.md)."""


def make_node(mode: PluginMode, pin: CPUSet) -> ColdBootNode:
    manifest = [
        {"name": "io", "uid": str(uuid.uuid4()), "qos": "Burstable", "pins": pin.format()},
        {"name": "db", "uid": str(uuid.uuid4()), "qos": "Guaranteed", "cpus": 2},
        {"name": "web", "uid": str(uuid.uuid4()), "qos": "Burstable"},
    ]
    return ColdBootNode(
        workdir=WORK / f"cold-boot-{mode}", record=RESULTS / f"cold-boot-{mode}", mode=mode,
        manifest=manifest, plugin_config=RESULTS / "plugin.toml",
        installation=find_installation(),
        timeouts={"start_timeout": 40 * SCALE, "request_timeout": f"{max(2, int(SCALE))}s",
                  "registration_timeout": f"{int(REGISTRATION_TIMEOUT * SCALE)}s"})


@dataclass
class Booted:
    """What ``consistency_problems`` reads: the plugin's state and CRI."""

    cri: KubeletClient

    def reachable(self) -> bool:
        return read_state(STATUS_SOCKET) is not None

    def state(self) -> dict[str, Any]:
        document = read_state(STATUS_SOCKET)
        assert document is not None, f"inspect cannot reach the plugin on {STATUS_SOCKET}"
        return document


def first_placements(record: dict[str, Any]) -> dict[str, tuple[CPUSet, CPUSet]]:
    """Pod name → the CPUs and memory nodes its container saw at its first instruction."""
    seen = {}
    for pod in record["pods"]:
        assert not pod["kept"], f"{pod['name']} was not run again: {record}"
        log = Path(pod["log"])
        wait_until(lambda log=log: log.exists() and len(first_words(log)) == 2,
                   f"{pod['name']}'s first words in {log}", 60)
        words = first_words(log)
        seen[pod["name"]] = (CPUSet.parse(words["Cpus_allowed_list"]),
                             CPUSet.parse(words["Mems_allowed_list"]))
    return seen


def first_synchronized(log: Path) -> float:
    """When the plugin's log (console format) first says it is synchronized, in seconds
    since the epoch."""
    for line in log.read_text().splitlines():
        stamp, _, rest = line.partition(" ")
        if " synchronized source=" in f" {rest.split(': ', 1)[-1]}":
            return datetime.datetime.fromisoformat(stamp).timestamp()
    raise AssertionError(f"the plugin never logged a Synchronize\n{log.read_text()[-2000:]}")


def check_boot(node: ColdBootNode, record: dict[str, Any], pin: CPUSet) -> list[str]:
    """Every container placed from its first instruction, and the plugin's state, rebuilt or
    fresh, exactly this boot's containers as the kernel enforces them. Returns the summary
    lines written to ``cold-boot.txt``."""
    first = first_placements(record)
    booted = Booted(node.lab.client())
    assert booted.reachable(), f"the plugin does not answer on {STATUS_SOCKET}\n{node.logs()}"
    ids = {pod["name"]: pod["container_id"] for pod in record["pods"]}
    wait_until(lambda: not consistency_problems(booted),
               lambda: "\n".join(consistency_problems(booted)) + node.logs(), 30)
    state = booted.state()
    assert {entry["id"]: entry["subject"].split("/")[1] for entry in state["containers"]} == \
        {cid: name for name, cid in ids.items()}, (state["containers"], node.logs())
    db_cpus = next(CPUSet.parse(e["cpus"]) for e in state["containers"] if e["id"] == ids["db"])
    expected = {"io": (pin, kernel.node_of(pin)),
                "db": (db_cpus, None),
                "web": (kernel.online() - pin - db_cpus, None)}
    assert len(db_cpus) == 2, db_cpus
    assert db_cpus.isdisjoint(pin), db_cpus
    wrong = [f"{name}: first ran on CPUs {cpus} mems {mems}, expected {expected[name]}"
             for name, (cpus, mems) in first.items()
             if cpus != expected[name][0]
             or (expected[name][1] is not None and mems != expected[name][1])]
    assert not wrong, "\n".join(wrong) + "\n" + node.logs()
    began = record["units"][CONTAINERD]["ExecMainStart"]
    lines = [f"{node.mode} boot {node.boots}: containerd started at 0 s"]
    for unit, stamps in record["units"].items():
        lines.append(f"  {unit}: started {stamps['ExecMainStart'] - began:.1f} s, active "
                     f"{(stamps['ActiveEnter'] or began) - began:.1f} s")
    lines.append(f"  CRI answered the stand-in at {record['cri_answered'] - began:.1f} s")
    lines.extend(f"  {pod['name']}: created {pod['created'] - began:.1f} s, started "
                 f"{pod['started'] - began:.1f} s, first ran on {first[pod['name']][0]}"
                 for pod in record["pods"])
    with (RESULTS / "cold-boot.txt").open("a") as out:
        out.write("\n".join(lines) + "\n")
    return lines


def test_the_notify_unit_holds_the_kubelet_until_the_plugin_is_synchronized() -> None:
    pin = CPUSet([kernel.online().last()])
    node = make_node(PluginMode.UNIT, pin)
    try:
        node.install()
        record = node.boot(BOOT_TIMEOUT * SCALE)
        check_boot(node, record, pin)
        units = record["units"]
        # The guarantee: the kubelet's process starts after the plugin said READY=1, which it
        # says after its first Synchronize. Read from the plugin's own log too: with
        # Type=simple the unit is "active" at the fork, seconds before the plugin registers.
        # (The pods' placements alone cannot show the race here: the stand-in's Python takes
        # as long to start under emulation as the plugin's.)
        assert units[KUBELET]["ExecMainStart"] >= units[PLUGIN]["ActiveEnter"], units
        synchronized = first_synchronized(node.plugin_log)
        assert record["kubelet_started_at"] >= synchronized, (
            f"the kubelet started {synchronized - record['kubelet_started_at']:.1f} s before "
            f"the plugin was synchronized\n{node.logs()}")
        with (RESULTS / "cold-boot.txt").open("a") as out:
            out.write(f"  the kubelet started {record['kubelet_started_at'] - synchronized:.2f} s "
                      "after the plugin's first Synchronize\n")
        log = node.plugin_log.read_text()
        assert "told systemd the plugin is ready" in log
        # The shipped unit's sandbox (no capabilities, cgroupfs the only writable tree) must
        # leave the kernel fast path on (decision 29): it once found the cgroup2 root's
        # directory, mode 0555, "not writable" and fell back to the runtime.
        assert "other containers' cpuset updates: kernel first" in log, log[-3000:]
    finally:
        node.remove()


@pytest.fixture(scope="module")
def preinstalled() -> Iterator[tuple[ColdBootNode, CPUSet]]:
    pin = CPUSet([kernel.online().last()])
    node = make_node(PluginMode.PREINSTALLED, pin)
    try:
        node.install()
        yield node, pin
    finally:
        node.remove()


def test_a_cold_boot_with_the_preinstalled_plugin_places_every_pod_from_its_first_instruction(
        preinstalled: tuple[ColdBootNode, CPUSet]) -> None:
    node, pin = preinstalled
    check_boot(node, node.boot(BOOT_TIMEOUT * SCALE), pin)


def test_a_reboot_rebuilds_the_state_and_places_the_pods_again(
        preinstalled: tuple[ColdBootNode, CPUSet]) -> None:
    node, pin = preinstalled
    if node.boots == 0:  # run alone: the first boot first
        node.boot(BOOT_TIMEOUT * SCALE)
    node.power_off()
    record = node.boot(BOOT_TIMEOUT * SCALE)
    # The previous boot's containers are dead in containerd's metadata; only the new ones
    # may be in the plugin's state (check_boot), with their CPUs free to give again.
    check_boot(node, record, pin)
