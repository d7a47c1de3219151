"""The soak's CPU hotplug (``cpuset_soak/hotplug.py``, the model's and the walk's part)
and its check that no container the plugin refused exists (``plugin.Rejections``)."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest

from cpuset_core import CPUSet
from cpuset_soak.hotplug import HotplugUnavailable, usable_cpus
from cpuset_soak.invariants import placements
from cpuset_soak.model import INTEGER, PINNED, SHARED, Pod
from cpuset_soak.plugin import Rejections
from cpuset_soak.prediction import UNAVAILABLE
from cpuset_soak.resync import resynchronized
from cpuset_soak.walk import Walk
from tests.unit.soak.soak_fixtures import FOUR, enforced, node_with, pod, running

EIGHT = CPUSet.parse("0-7")


def test_a_cpu_may_go_offline_only_when_integers_fit_a_pool_is_left_and_pins_keep_a_cpu() -> None:
    node = node_with(FOUR, pod("db", running(INTEGER, "a", 2, "2-3")),
                     pod("web", running(SHARED, "s")))
    assert node.may_go_offline(3)  # the integer container moves, one shared CPU is left
    assert not node_with(FOUR, pod("db", running(INTEGER, "a", 2, "2-3")),
                         pod("web", running(SHARED, "s")),
                         pod("io", running(PINNED, "p"), pin="1")).may_go_offline(3)
    lone = node_with(FOUR, pod("io", running(PINNED, "p"), pin="3"))
    assert not lone.may_go_offline(3)  # the pin's last online CPU
    assert node_with(FOUR, pod("io", running(PINNED, "p"), pin="2-3")).may_go_offline(3)
    assert not node_with(CPUSet.parse("0-1")).may_go_offline(1)
    reserved = node_with(FOUR)
    reserved.reserved = CPUSet([3])
    assert not reserved.may_go_offline(3)


def test_a_pin_keeps_its_online_part_and_a_new_pin_on_an_offline_cpu_is_refused() -> None:
    io = pod("io", running(PINNED, "p"), pin="2-3")
    node = node_with(FOUR, io)
    node.went_offline(3)
    assert node.pins() == CPUSet([2])
    prediction = node.predict_pinned(Pod(name="x", namespace="default", qos="Burstable",
                                         annotation="3"))
    assert prediction.reasons == {UNAVAILABLE}
    resynchronized(node)  # a restarted plugin keeps the running pin's online part
    assert io.pin == CPUSet.parse("2-3")
    assert io.containers["p"].kind == PINNED
    node.came_online(3)
    assert node.pins() == CPUSet.parse("2-3")


def test_an_integer_container_on_a_cpu_going_offline_leaves_its_cpus_draining() -> None:
    db = pod("db", running(INTEGER, "a", 2, "2-3"))
    node = node_with(FOUR, db)
    node.went_offline(3)
    assert node.uncertain == 2
    assert node.online == CPUSet.parse("0-2")
    assert db.containers["a"].tampered  # no owner until the plugin has moved it


def test_a_pin_with_an_offline_cpu_is_checked_on_its_online_part_and_its_memory_node() -> None:
    io = pod("io", running(PINNED, "p"), pin="3-4")
    io.containers["p"].cid = "p"
    node = node_with(EIGHT, io)
    node.went_offline(4)

    def nodes_of(cpus: CPUSet) -> CPUSet:
        return CPUSet(0 if cpu < 4 else 1 for cpu in cpus)

    assert placements(node, {"p": enforced("3", "0")}, nodes_of, CPUSet.parse("0-1")) == []
    found = placements(node, {"p": enforced("3", "0-1")}, nodes_of, CPUSet.parse("0-1"))
    assert found == ["io/p (pinned, p): pinned to 3 (mems 0), the kernel enforces 3 (mems 0-1)"]


def test_the_walk_takes_cpus_offline_only_with_hotplug_and_brings_each_back() -> None:
    plain = Walk(7, node_with(EIGHT))
    assert not any(op["kind"].startswith("cpu-") for _ in range(200) for op in plain.step())
    walk = Walk(7, node_with(EIGHT), hotplug=CPUSet.parse("1-7"))
    kinds: dict[int, list[str]] = {}
    for _ in range(200):
        for op in walk.step():
            if op["kind"].startswith("cpu-"):
                assert op["cpu"] != 0
                kinds.setdefault(op["cpu"], []).append(op["kind"])
                if op["kind"] == "cpu-offline":
                    walk.node.went_offline(op["cpu"])
                else:
                    walk.node.came_online(op["cpu"])
    assert kinds
    for seen in kinds.values():  # offline, online, offline, ... never twice the same
        assert all(a != b for a, b in pairwise(seen))
        assert seen[0] == "cpu-offline"


def test_hotplug_is_refused_with_its_reason_where_the_machine_cannot() -> None:
    with pytest.raises(HotplugUnavailable, match="needs cgroup v2, this machine has v1"):
        usable_cpus(EIGHT, cgroup_version=1)
    with pytest.raises(HotplugUnavailable, match="three online CPUs"):
        usable_cpus(CPUSet.parse("0-1"), cgroup_version=2)


def test_hotplug_uses_the_cpus_with_an_online_file_but_cpu_0(tmp_path: Path) -> None:
    for cpu in (0, 1, 2):
        (tmp_path / f"cpu{cpu}").mkdir()
    for cpu in (0, 2):
        (tmp_path / f"cpu{cpu}" / "online").write_text("1\n")
    assert usable_cpus(CPUSet.parse("0-2"), cgroup_version=2, sys_cpu=tmp_path) == CPUSet([2])
    with pytest.raises(HotplugUnavailable, match="no CPU but 0 can go offline"):
        usable_cpus(CPUSet.parse("0-2"), cgroup_version=2, sys_cpu=tmp_path / "none")


def test_rejections_are_read_from_the_plugins_log_as_it_grows(tmp_path: Path) -> None:
    log = tmp_path / "plugin.log"
    record = {"event": "reject", "id": "abcdef012345", "reason": "insufficient-cpus"}
    log.write_text(json.dumps({"event": "admit", "id": "000000000000"}) + "\n")
    rejections = Rejections(log)
    assert not rejections.refused("abcdef0123456789")
    with log.open("a") as out:
        out.write(json.dumps(record) + "\n" + '{"event": "rej')  # the last line half written
    assert rejections.refused("abcdef0123456789")
    assert not rejections.refused("000000000000ffff")


def test_a_walk_without_some_kinds_never_draws_them() -> None:
    walk = Walk(5, node_with(EIGHT), without=frozenset({
        "plugin-kill", "containerd-restart", "plugin-sigstop", "burst", "plugin-kill-mid-burst"}))
    kinds = {op["kind"] for _ in range(300) for op in walk.step()}
    assert not kinds & {"plugin-kill", "containerd-restart", "plugin-sigstop", "burst"}
    assert "create" in kinds
