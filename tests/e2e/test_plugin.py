"""The plugin on a real containerd 1.7.24: `nri-cpuset run` connected to the lab's NRI socket,
driven over CRI like a kubelet, checked in the real cgroup cpusets and /proc/<pid>/status.

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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest

from cpuset_adapters import cgroupfs
from cpuset_adapters.cri.client import CriError
from cpuset_core.cpuset import CPUSet
from cpuset_lab import cgroups, plugin_log
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.containerd_install import find_installation
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.pod_spec import PodSpec, QosClass, cgroup_parent
from cpuset_lab.resources import container_resources, guaranteed

pytestmark = pytest.mark.e2e

ONLINE = cgroups.online_cpus() if Path("/sys/devices/system/cpu/online").exists() else CPUSet()
KEY = "weka.io/cores-ids"
SRC = str(Path(__file__).resolve().parents[2] / "src")


def wait_until(check: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


P = TypeVar("P", bound="Plugin")


def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``nri-cpuset ARGS`` from this source tree, its output captured as text."""
    return subprocess.run([sys.executable, "-m", "cpuset_cli", *args], capture_output=True,
                          text=True, check=check, timeout=60,
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
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {**os.environ, "PYTHONPATH": SRC}
        env.pop("NRI_PLUGIN_SOCKET", None)
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "cpuset_cli", "run", "--nri-socket", str(self.socket),
                 "--log-level", "debug", "--log-format", "console", "--status-socket",
                 str(self.status), *self.args],
                stdout=out, stderr=subprocess.STDOUT, env=env)

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_synchronized(self, count: int = 1) -> None:
        wait_until(lambda: plugin_log.synchronized(self.text()) >= count,
                   f"synchronize #{count}\n--- plugin log ---\n{self.text()[-3000:]}")

    def stop(self) -> int:
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=10)
        self.process = None
        return code

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait(timeout=10)
        self.process = None


def released(text: str, container_id: str) -> int:
    """How often the plugin's log says it released ``container_id``."""
    return sum(e.get("id") == container_id[:12] for e in plugin_log.events(text, "release"))


@contextmanager
def serving(lab: LabContainerd, running: P) -> Iterator[P]:
    """``running`` started and synchronized; at the end, the lab's pods removed first (so the
    plugin sees their containers go: no leak across tests), then a clean stop (exit code 0)."""
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


@pytest.fixture
def plugin(lab: LabContainerd, cri: KubeletClient, tmp_path: Path) -> Iterator[Plugin]:
    with serving(lab, Plugin(lab.nri_socket, tmp_path / "plugin.log")) as running:
        yield running


def actual(cri: KubeletClient, cid: str) -> tuple[CPUSet, CPUSet]:
    """The container's CPUs and memory nodes as the kernel enforces them (cgroup and /proc
    must agree)."""
    status = cri.container_status(cid)
    assert status.pid is not None
    assert status.cgroups_path is not None
    cgroup = cgroupfs.container_cpuset(status.cgroups_path)
    affinity = cgroups.process_affinity(status.pid)
    assert cgroup.effective_cpus == affinity.cpus, (cgroup, affinity)
    return affinity.cpus, affinity.mems


def cpus(cri: KubeletClient, cid: str) -> CPUSet:
    return actual(cri, cid)[0]


@contextmanager
def pod(cri: KubeletClient, name: str, qos: QosClass, *, pins: str | None = None,
        namespace: str = "default", runtime_handler: str = "") -> Iterator[str]:
    uid = str(uuid.uuid4())
    annotations = {KEY: pins} if pins is not None else {}
    with cri.pod(PodSpec(name=name, uid=uid, cgroup_parent=cgroup_parent(qos, uid),
                         namespace=namespace, annotations=annotations),
                 runtime_handler=runtime_handler) as pod_id:
        yield pod_id


def shared(cri: KubeletClient, lab: LabContainerd, pod_id: str, name: str = "app") -> str:
    return cri.run_container(pod_id, name, lab.image,
                             resources=container_resources(cpu_request="100m"))


def shared_one(cri: KubeletClient, lab: LabContainerd, pod_id: str, _count: int) -> str:
    return shared(cri, lab, pod_id)


def integer(cri: KubeletClient, lab: LabContainerd, pod_id: str, count: int,
            name: str = "app") -> str:
    return cri.run_container(pod_id, name, lab.image, resources=guaranteed(count, "64Mi"))


needs_two_cpus = pytest.mark.skipif(len(ONLINE) < 2, reason="needs two online CPUs")


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


@needs_two_cpus
def test_restarted_plugin_corrects_containers_created_while_it_was_down(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:
    last = ONLINE.last()
    with pod(cri, "io", QosClass.BURSTABLE, pins=str(last)) as io:
        shared(cri, lab, io, "io")
        plugin.kill()
        with pod(cri, "late", QosClass.BURSTABLE) as late:
            app = shared(cri, lab, late)
            assert cpus(cri, app) == ONLINE  # nobody pinned it
            plugin.start()
            plugin.wait_synchronized(2)
            wait_until(lambda: cpus(cri, app) == ONLINE - CPUSet([last]),
                       "synchronize to move the late shared container off the pin")


@needs_two_cpus
def test_plugin_reconnects_by_itself_when_containerd_restarts(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:
    lab.restart()
    plugin.wait_synchronized(2)
    last = ONLINE.last()
    with pod(cri, "web", QosClass.BURSTABLE) as web:
        app = shared(cri, lab, web)
        with pod(cri, "io", QosClass.BURSTABLE, pins=str(last)) as io:
            pinned = shared(cri, lab, io, "io")
            assert cpus(cri, pinned) == CPUSet([last])
            assert cpus(cri, app) == ONLINE - CPUSet([last])


@needs_two_cpus
def test_inspect_shows_the_live_state_of_the_running_plugin(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:

    last = ONLINE.last()
    with pod(cri, "io", QosClass.BURSTABLE, pins=str(last)) as io, \
            pod(cri, "io2", QosClass.BURSTABLE, pins=str(last)) as io2:
        first = shared(cri, lab, io, "io")
        shared(cri, lab, io2, "io")
        state = inspect_state(plugin.status)
        assert state["pinned"] == {str(last): 2}
        assert state["shared_pool"] == (ONLINE - CPUSet([last])).format()
        assert state["synchronized"] is True
        assert state["drift"] == []
        kinds = {c["id"]: (c["kind"], c["cpus"], c["mems"]) for c in state["containers"]}
        assert kinds[first] == ("annotated", str(last), "0")
        table = cli("inspect", "--status-socket", str(plugin.status))
        assert f"pinned (refcount): {last}×2" in table.stdout


@needs_two_cpus
def test_in_place_resize_grows_shrinks_and_changes_class_live(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:
    """CRI UpdateContainerResources, as a kubelet in-place resize sends it: the plugin answers
    with the container's new cpuset, which containerd applies instead of the kubelet's."""
    with pod(cri, "db", QosClass.GUARANTEED) as db:
        pg = integer(cri, lab, db, 1, "postgres")
        pid = cri.container_status(pg).pid
        cri.update_resources(pg, guaranteed(2, "64Mi"))
        assert cpus(cri, pg) == ONLINE  # grown, keeping its CPU
        cri.update_resources(pg, guaranteed(1, "64Mi"))
        assert cpus(cri, pg) <= ONLINE
        assert len(cpus(cri, pg)) == 1
        with pod(cri, "io", QosClass.BURSTABLE, pins=str(ONLINE.last())) as io:
            shared(cri, lab, io, "io")
            with pytest.raises(CriError) as caught:  # no room to grow past the pin
                cri.update_resources(pg, guaranteed(2, "64Mi"))
            assert "needs 2 exclusive CPU(s)" in caught.value.details
            assert len(cpus(cri, pg)) == 1
        fractional = container_resources(cpu_request="1500m", cpu_limit="1500m",
                                         memory_limit="64Mi")
        cri.update_resources(pg, fractional)
        assert cpus(cri, pg) == ONLINE  # now shared: the whole (free) pool
        assert cri.container_status(pg).pid == pid


@needs_two_cpus
def test_cpus_return_at_stop_and_the_later_remove_releases_nothing_twice(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:
    with pod(cri, "web", QosClass.BURSTABLE) as web:
        app = shared(cri, lab, web)
        with pod(cri, "db", QosClass.GUARANTEED) as db:
            pg = integer(cri, lab, db, 1, "postgres")
            mine = cpus(cri, pg)
            assert cpus(cri, app) == ONLINE - mine
            cri.stop(pg)
            # Released at StopContainer: the pool grows before any removal.
            assert cpus(cri, app) == ONLINE
            releases = released(plugin.text(), pg)
            cri.remove(pg)
            time.sleep(0.2)
            assert released(plugin.text(), pg) == releases == 1
            assert cpus(cri, app) == ONLINE


@needs_two_cpus
def test_a_burst_of_100_containers_ends_with_correct_cpusets_and_bounded_updates(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:
    """100 shared containers created by 8 concurrent clients, a pin admitted and removed in
    the middle, then half of them stopped and removed concurrently: every survivor ends on
    the whole machine again, each container was updated a bounded number of times, and no
    update named a container that was gone."""
    from concurrent.futures import ThreadPoolExecutor

    last = ONLINE.last()
    pods = [cri.run_pod(PodSpec(name=f"burst-{n}", namespace="burst", uid=str(uuid.uuid4()),
                                cgroup_parent=cgroup_parent(QosClass.BURSTABLE,
                                                            str(uuid.uuid4()))))
            for n in range(20)]
    with ThreadPoolExecutor(8) as pool:
        ids = list(pool.map(lambda n: shared(cri, lab, pods[n % 20], f"c{n}"), range(100)))
    with pod(cri, "io", QosClass.BURSTABLE, pins=str(last)) as io:
        shared(cri, lab, io, "io")
        assert all(cpus(cri, cid) == ONLINE - CPUSet([last]) for cid in ids)
        gone, kept = ids[:50], ids[50:]

        def stop_and_remove(cid: str) -> None:
            cri.stop(cid)
            cri.remove(cid)

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(stop_and_remove, gone))
    wait_until(lambda: all(cpus(cri, cid) == ONLINE for cid in kept),
               "every survivor back on the whole machine")
    state = inspect_state(plugin.status)
    stats = state["stats"]
    print(f"burst: {stats}")
    assert {c["id"] for c in state["containers"]} == set(kept)
    assert state["drift"] == []
    # Each container: the pin's shrink and the pin's release, and at most one repair of an
    # update containerd dropped (one aimed at a container being started), which the verifier
    # found and re-sent on a later answer.
    assert stats["max_updates_per_container"] <= 3
    # Counters cover live containers (released ones are forgotten): 50 survivors × 2, plus the
    # repairs.
    assert 50 * 2 <= stats["updates_on_responses"] <= 50 * 3
    assert stats["update_failures"] == 0
    # The pin's release grew exactly the 50 survivors: no update named a removed container.
    releases = [line for line in plugin.text().splitlines()
                if ": release container=default/io/io " in line]
    assert len(releases) == 1
    assert " updates=50" in releases[0]


def test_sigterm_stops_the_plugin_with_exit_code_zero(lab: LabContainerd, tmp_path: Path) -> None:
    running = Plugin(lab.nri_socket, tmp_path / "plugin.log")
    running.start()
    running.wait_synchronized()
    assert running.stop() == 0


@needs_two_cpus
def test_preinstalled_plugin_pins_and_relearns_running_containers_after_a_crash(
        tmp_path: Path) -> None:
    """containerd 1.7 starts the plugin from plugin_path and never synchronizes it; after a
    containerd crash the relaunched plugin reads the running containers over CRI, so a new
    shared container still avoids a pin made before the crash."""
    plugins = tmp_path / "plugins"
    log = tmp_path / "preinstalled.log"
    own = LabContainerd(tmp_path / "lab", installation=find_installation(),
                        nri_plugin_path=plugins)
    cli("install-launcher", "--plugin-dir", str(plugins), "--log-file", str(log),
        "--cri-socket", str(own.cri_address))
    launcher = plugins / "99-nri-cpuset"
    # The runtime gives the plugin no PYTHONPATH: make the source tree importable for it.
    launcher.write_text(launcher.read_text().replace("exec ", f"PYTHONPATH={SRC} exec ", 1))
    try:
        started = time.monotonic()
        own.start()
        startup = time.monotonic() - started
        own.import_image()
        client = own.client()
        last = ONLINE.last()
        with pod(client, "io", QosClass.BURSTABLE, pins=str(last)) as io:
            pinned = shared(client, own, io, "io")
            assert cpus(client, pinned) == CPUSet([last])
            assert "registered with the runtime as 99-nri-cpuset" in log.read_text()

            own.kill()
            own.start()
            wait_until(lambda: log.read_text().count("registered with the runtime") >= 2,
                       "the relaunched plugin to register")
            with pod(client, "web", QosClass.BURSTABLE) as web:
                app = shared(client, own, web)
                wait_until(lambda: cpus(client, app) == ONLINE - CPUSet([last]),
                           f"the pin to be known again\n{log.read_text()[-3000:]}")
            assert any(e["source"] == "CRI inventory"
                       for e in plugin_log.events(log.read_text(), "synchronized"))
            assert cpus(client, pinned) == CPUSet([last])
        print(f"containerd with the pre-installed plugin started in {startup:.2f} s")
    finally:
        own.close()


def test_lab_demo_placements_match_the_dry_run(lab: LabContainerd) -> None:
    """The README's run command: every placement the real runtime enforces equals the dry
    run's, and the bad inputs are rejected with their reasons."""
    from cpuset_adapters.sysfs import SysfsTopologySource
    from cpuset_lab import demo as lab_demo

    lines: list[str] = []
    mismatches = lab_demo.run(SysfsTopologySource().read_topology(), lines.append)
    output = "\n".join(lines)
    assert mismatches == 0, output
    assert "annotation weka.io/cores-ids='0,,1' is invalid" in output
    assert "exit code 0" in output
