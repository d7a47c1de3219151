"""The plugin on a real containerd (1.7 or 2.x), placing containers: registration, shared, pinned
and integer pods checked in the real cgroup cpusets, a live move, and bad input refused.

The lab machine is small (see plugin_harness.py).
"""

from __future__ import annotations

import time

import pytest

from cpuset_adapters.cri.client import CriError
from cpuset_core.cpuset import CPUSet
from cpuset_lab import cgroups
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.pod_spec import QosClass
from tests.e2e.plugin_harness import (
    ONLINE,
    Plugin,
    actual,
    cli,
    cpus,
    integer,
    needs_two_cpus,
    pod,
    shared,
    wait_until,
)

pytestmark = pytest.mark.e2e


def shared_one(cri: KubeletClient, lab: LabContainerd, pod_id: str, _count: int) -> str:
    return shared(cri, lab, pod_id)


def test_plugin_registers_and_synchronizes(plugin: Plugin) -> None:
    log = plugin.text()
    assert "registered with the runtime as 99-nri-cpuset" in log
    assert "configured by containerd" in log


def test_shared_container_runs_on_every_online_cpu(plugin: Plugin, lab: LabContainerd,
                                                   cri: KubeletClient) -> None:
    with pod(cri, "web", QosClass.BURSTABLE) as web:
        cid = shared(cri, lab, web)
        assert cpus(cri, cid) == ONLINE
        assert "kind=shared" in plugin.text()


@needs_two_cpus
def test_pinned_pod_gets_its_cpus_and_memory_node_and_a_running_shared_one_moves_off(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:
    last = ONLINE.last()
    with pod(cri, "web", QosClass.BURSTABLE) as web:
        app = shared(cri, lab, web)
        pid = cri.container_status(app).pid
        with pod(cri, "io", QosClass.BURSTABLE, pins=str(last)) as io:
            pinned = shared(cri, lab, io, "io")
            assert actual(cri, pinned) == (CPUSet([last]), CPUSet([0]))
            assert cpus(cri, app) == ONLINE - CPUSet([last])
            assert cri.container_status(app).pid == pid  # updated live, not restarted
        wait_until(lambda: cpus(cri, app) == ONLINE, "the shared pool to grow back")


@needs_two_cpus
def test_two_pinned_pods_share_cpus_until_the_last_one_goes(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:
    last = ONLINE.last()
    with pod(cri, "web", QosClass.BURSTABLE) as web:
        app = shared(cri, lab, web)
        with pod(cri, "a", QosClass.BURSTABLE, pins=str(last)) as a:
            a_io = shared(cri, lab, a, "io")
            with pod(cri, "b", QosClass.GUARANTEED, pins=str(last)) as b:
                b_io = integer(cri, lab, b, 1, "io")
                assert cpus(cri, a_io) == cpus(cri, b_io) == CPUSet([last])
                assert cpus(cri, app) == ONLINE - CPUSet([last])
            # a still holds the CPU: the pool must not grow yet.
            time.sleep(0.3)
            assert cpus(cri, app) == ONLINE - CPUSet([last])
        wait_until(lambda: cpus(cri, app) == ONLINE, "the pool to grow after the last pin")


@needs_two_cpus
def test_integer_pod_gets_an_exclusive_cpu_and_shared_containers_avoid_it(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:
    with pod(cri, "web", QosClass.BURSTABLE) as web:
        app = shared(cri, lab, web)
        with pod(cri, "db", QosClass.GUARANTEED) as db:
            pg = integer(cri, lab, db, 1, "postgres")
            mine = cpus(cri, pg)
            assert len(mine) == 1
            assert cpus(cri, app) == ONLINE - mine
            assert actual(cri, pg)[1] == cgroups.online_mems()  # mems left alone


@needs_two_cpus
def test_pin_on_an_integer_containers_cpu_moves_it_live(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:
    with pod(cri, "db", QosClass.GUARANTEED) as db:
        pg = integer(cri, lab, db, 1, "postgres")
        taken = cpus(cri, pg)
        pid = cri.container_status(pg).pid
        with pod(cri, "io", QosClass.BURSTABLE, pins=taken.format()) as io:
            pinned = shared(cri, lab, io, "io")
            assert cpus(cri, pinned) == taken
            moved = cpus(cri, pg)
            assert moved.isdisjoint(taken)
            assert len(moved) == 1
            assert cri.container_status(pg).pid == pid
            why = cli("explain", pg, "--status-socket", str(plugin.status)).stdout
            assert f"- moved {taken} -> {moved}: moved off CPUs {taken} pinned by " \
                   f"default/io/io" in why


@pytest.mark.parametrize(("pins", "cpus_asked", "message"), [
    ("0,,1", None, "annotation weka.io/cores-ids='0,,1' is invalid: empty element at position 2"),
    ("7", None, "names CPU(s) 7 that are not online"),
    (None, 3, "needs 3 exclusive CPU(s) but only"),
])
def test_bad_input_fails_creation_with_a_clear_message_and_changes_nothing(  # noqa: PLR0917
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient, pins: str | None,
        cpus_asked: int | None, message: str) -> None:
    if pins == "7" and 7 in ONLINE:
        pytest.skip("CPU 7 is online here")
    with pod(cri, "web", QosClass.BURSTABLE) as web:
        app = shared(cri, lab, web)
        before = actual(cri, app)
        qos = QosClass.GUARANTEED if cpus_asked else QosClass.BURSTABLE
        with pod(cri, "bad", qos, pins=pins) as bad:
            create = integer if cpus_asked else shared_one
            with pytest.raises(CriError) as caught:
                create(cri, lab, bad, cpus_asked or 0)
            assert message in caught.value.details
            assert "nri-cpuset" in caught.value.details
            assert cri.list_containers(bad) == []
        assert actual(cri, app) == before
