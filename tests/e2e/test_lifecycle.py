"""Lifecycle edges on the real containerd (1.7 or 2.x) (issue 7), driven over CRI like a kubelet.

The kubelet starts init containers one by one, each after the previous one exited, then the
sidecars (restartable init containers, which keep running) and the app containers. Over CRI
that is only an order of CreateContainer / StartContainer calls; NRI sees no init or sidecar
flag, so the plugin's rule rests on that order (docs/allocation.md, "Init containers and
sidecars"). These tests replay it.

This machine has 2 CPUs: to make "the app container lands on its init container's CPU"
distinguishable from "the allocator's first choice", a blocker container holds the first
choice while the init container runs and is gone when the app container is created.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cpuset_core.cpuset import CPUSet
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.machines import THIS_MACHINE_LIKE, write_sysfs_tree
from cpuset_lab.pod_spec import PodSpec, QosClass, cgroup_parent
from cpuset_lab.resources import guaranteed
from tests.e2e.plugin_harness import (
    ONLINE,
    Plugin,
    cpus,
    inspect_state,
    integer,
    needs_two_cpus,
    pod,
    shared,
    wait_until,
)

pytestmark = pytest.mark.e2e


def run_to_completion(running: Plugin, cri: KubeletClient, lab: LabContainerd, pod_id: str,
                      name: str, *, count: int) -> CPUSet:
    """An init container: starts, exits 0; returns the CPUs the plugin gave it (from its
    decision log: an exited container has no process, and CRI reports no cpuset for it)."""
    cid = cri.create_container(pod_id, None, name, lab.image, resources=guaranteed(count, "64Mi"),
                               command=["/bin/true"])
    cri.start(cid)
    wait_until(lambda: cri.container_status(cid).state == "CONTAINER_EXITED",
               f"init container {name} to exit")
    assert cri.container_status(cid).exit_code == 0
    admitted = re.search(rf"admit container=\S+ id={cid[:12]} kind=integer cpus=(\S+)",
                         running.text())
    assert admitted is not None, running.text()[-3000:]
    return CPUSet.parse(admitted.group(1))


@needs_two_cpus
def test_an_app_container_gets_the_cpu_its_completed_init_container_held(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:
    with pod(cri, "blocker", QosClass.GUARANTEED) as blocker:
        held = integer(cri, lab, blocker, 1, "b")
        first_choice = cpus(cri, held)
        with pod(cri, "web", QosClass.GUARANTEED) as web:
            init_cpus = run_to_completion(plugin, cri, lab, web, "init", count=1)
            assert init_cpus == ONLINE - first_choice
            cri.stop(held)
            cri.remove(held)  # the allocator's first choice is free again
            app = integer(cri, lab, web, 1, "app")
            assert cpus(cri, app) == init_cpus
            assert "reuses CPUs its pod's completed container(s) held" in plugin.text()


@needs_two_cpus
def test_a_running_sidecar_keeps_its_cpu_while_the_app_container_gets_the_other(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:
    with pod(cri, "web", QosClass.GUARANTEED) as web:
        init_cpus = run_to_completion(plugin, cri, lab, web, "init", count=1)
        sidecar = integer(cri, lab, web, 1, "sidecar")  # restartable init: keeps running
        assert cpus(cri, sidecar) == init_cpus  # it may take what the completed init left
        app = integer(cri, lab, web, 1, "app")
        assert cpus(cri, app) == ONLINE - init_cpus
        assert cpus(cri, sidecar) == init_cpus
        assert cri.container_status(sidecar).state == "CONTAINER_RUNNING"


@needs_two_cpus
def test_a_pod_removed_between_create_and_start_leaks_nothing(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:
    with pod(cri, "web", QosClass.BURSTABLE) as web:
        app = shared(cri, lab, web)
        uid = "mid-start"
        db = cri.run_pod(PodSpec(name="db", uid=uid,
                                 cgroup_parent=cgroup_parent(QosClass.GUARANTEED, uid)))
        pg = cri.create_container(db, None, "pg", lab.image, resources=guaranteed(1, "64Mi"))
        assert len(cpus(cri, app)) == 1  # the unstarted container already holds its CPU
        assert pg in {c["id"] for c in inspect_state(plugin.status)["containers"]}
        cri.stop_pod(db)
        cri.remove_pod(db)
        wait_until(lambda: cpus(cri, app) == ONLINE, "the shared pool to grow back")
        assert [c["id"] for c in inspect_state(plugin.status)["containers"]] == [app]
    wait_until(lambda: inspect_state(plugin.status)["containers"] == [], "an empty ledger")
    state = inspect_state(plugin.status)
    assert state["exclusive"] == {}
    assert state["shared_pool"] == ONLINE.format()


@needs_two_cpus
def test_a_synchronize_reports_the_drift_it_repaired_and_what_it_could_not(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:
    """Containers created while the plugin was down: a shared one on the pinned CPU is
    repaired; one whose pin names an offline CPU cannot be placed as it asks."""
    last = ONLINE.last()
    offline = max(ONLINE) + 1
    with pod(cri, "io", QosClass.BURSTABLE, pins=str(last)) as io:
        shared(cri, lab, io, "io")
        plugin.kill()
        with pod(cri, "late", QosClass.BURSTABLE) as late, \
                pod(cri, "bad", QosClass.BURSTABLE, pins=str(offline)) as bad:
            app = shared(cri, lab, late)
            stray = shared(cri, lab, bad)
            plugin.start()
            plugin.wait_synchronized(2)
            wait_until(lambda: cpus(cri, app) == ONLINE - CPUSet([last]),
                       "synchronize to move the late shared container off the pin")
            stats = inspect_state(plugin.status)["stats"]
            assert (stats["drift_repaired"], stats["drift_unrepaired"]) == (1, 1), stats
            log = plugin.text()
            assert (f"drift unrepaired container=default/bad/app id={stray[:12]} "
                    "reported=unset") in log
            assert "reason=cpu-unavailable" in log


@needs_two_cpus
def test_containers_follow_the_online_cpus_of_a_fake_sysfs_tree(
        lab: LabContainerd, cri: KubeletClient, tmp_path: Path) -> None:
    """CPU hotplug, as far as this machine allows: the shared pool shrinks and grows back with
    CPU 1; a pin on CPU 1 is reported and runs shared while it is away, and returns with it.

    Taking a real CPU offline is not possible here: the machine is a Firecracker VM that may
    hang on CPU hot-unplug, and it has only two CPUs. So the real plugin runs against the real
    containerd, but reads its topology from a fake sysfs tree whose ``online`` file the test
    rewrites; what the plugin then does to the running containers' real cpusets is checked.
    The kernel itself still runs both CPUs, which is what keeps the containers able to run.
    """
    if CPUSet.parse("0-1") != ONLINE:
        pytest.skip("the fake tree mirrors a machine with CPUs 0-1")
    root = tmp_path / "sys"
    write_sysfs_tree(THIS_MACHINE_LIKE, root)
    online = root / "devices" / "system" / "cpu" / "online"
    running = Plugin(lab.nri_socket, tmp_path / "plugin.log", ("--sysfs-root", str(root)))
    running.start()
    try:
        running.wait_synchronized()
        with pod(cri, "web", QosClass.BURSTABLE) as web:
            app = shared(cri, lab, web)
            assert cpus(cri, app) == ONLINE
            online.write_text("0\n")  # CPU 1 "goes offline": the shared pool shrinks
            wait_until(lambda: cpus(cri, app) == CPUSet([0]),
                       f"the pool to shrink\n{running.text()[-3000:]}")
            assert inspect_state(running.status)["online"] == "0"
            online.write_text("0-1\n")  # back online: the shared pool grows
            wait_until(lambda: cpus(cri, app) == ONLINE, "the shared pool to grow back")
            with pod(cri, "io", QosClass.BURSTABLE, pins="1") as io:
                pinned = shared(cri, lab, io, "io")
                assert (cpus(cri, pinned), cpus(cri, app)) == (CPUSet([1]), CPUSet([0]))
                online.write_text("0\n")  # the pinned CPU goes away: reported, runs shared
                wait_until(lambda: cpus(cri, pinned) == CPUSet([0]),
                           f"the pin to lose CPU 1\n{running.text()[-3000:]}")
                assert "reason=cpu-unavailable" in running.text()
                assert cpus(cri, app) == CPUSet([0])
                assert cri.container_status(app).state == "CONTAINER_RUNNING"
                online.write_text("0-1\n")  # and comes back: so does the pin
                wait_until(lambda: cpus(cri, pinned) == CPUSet([1]), "the pin to come back")
                assert cpus(cri, app) == CPUSet([0])
                state = inspect_state(running.status)
                assert (state["online"], state["shared_pool"]) == ("0-1", "0")
    finally:
        lab.cleanup()
        assert running.stop() == 0, running.text()[-3000:]
