"""Containers that never run hold nothing, on a real containerd driven like the real kubelet.

A Guaranteed container whose command does not exist gets its CPU at creation; its start fails
when containerd cannot create its task, and containerd sends no NRI event for that. The lab's
pod worker (``cpuset_lab.pod_worker``) then does what the kubelet does: it keeps the dead
instance and creates the next attempt beside it after a back-off. Each attempt must fail with
the runtime's own error, never with the plugin's capacity refusal, and the CPU must be back in
the shared pool (read from the kernel). How soon is printed, not asserted: every wait here is a
hang guard (``PATIENCE``), so the verdicts hold on a slow, loaded machine (issue 46).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cpuset_adapters.cri.client import CriError
from cpuset_core.cpuset import CPUSet
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.pod_spec import QosClass
from cpuset_lab.pod_worker import ContainerSpec
from cpuset_lab.resources import container_resources, guaranteed
from tests.e2e.plugin_harness import (
    KEY,
    ONLINE,
    Plugin,
    cpus,
    inspect_state,
    needs_two_cpus,
    pod,
    serving,
    shared,
    wait_until,
)
from tests.e2e.pod_workers import (
    failed_as_the_runtime_says,
    missing_binary,
    sync_until_attempts,
    worker,
)

pytestmark = pytest.mark.e2e

GRACE = 8
"""``runtime.start_grace`` here: long enough that a loaded machine's slow CreateContainer and
StartContainer still fit in it, short enough that a test waits it out."""


@pytest.fixture
def plugin(lab: LabContainerd, cri: KubeletClient, tmp_path: Path) -> Iterator[Plugin]:
    config = tmp_path / "config.toml"
    config.write_text(f'[runtime]\nstart_grace = {GRACE}\n'
                      '[observability]\nlog_format = "console"\nlisten = ""\n')
    with serving(lab, Plugin(lab.nri_socket, tmp_path / "plugin.log",
                             ("--config", str(config)))) as running:
        yield running


def exclusive(plugin: Plugin) -> CPUSet:
    """The CPUs the plugin's ledger holds exclusively (``inspect``)."""
    return CPUSet(int(cpu) for cpu in inspect_state(plugin.status)["exclusive"])


@needs_two_cpus
def test_a_failed_start_gives_its_cpu_back_and_every_attempt_fails_with_the_runtimes_error(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:
    with pod(cri, "web", QosClass.BURSTABLE) as web:
        app = shared(cri, lab, web)
        with worker(cri, lab, "bad", QosClass.GUARANTEED, missing_binary()) as bad:
            bad.sync()
            (first,) = bad.attempts
            assert failed_as_the_runtime_says(first), first
            failed_at = time.monotonic()
            wait_until(lambda: cpus(cri, app) == ONLINE,
                       "the shared container back on every CPU")
            print(f"CPU back in the shared pool {time.monotonic() - failed_at:.2f} s after "
                  f"the failed start")
            assert exclusive(plugin) == CPUSet()
            sync_until_attempts([bad], 3)
            attempts = bad.of("app")
            assert [a.attempt for a in attempts] == list(range(len(attempts)))
            assert all(failed_as_the_runtime_says(a) for a in attempts), attempts
            # The garbage collector keeps the last dead instance; the next is created beside it.
            kept = {c.id for c in cri.list_containers(bad.sandbox_id) if c.name == "app"}
            assert kept == {a.container_id for a in attempts[-2:]}
            wait_until(lambda: cpus(cri, app) == ONLINE and exclusive(plugin) == CPUSet(),
                       "nothing held after the last attempt")
    assert "not running: exited without running: its start failed" in plugin.text()


@needs_two_cpus
def test_two_pods_failing_to_start_on_a_node_with_room_for_one_see_only_the_runtimes_error(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:
    with (pod(cri, "web", QosClass.BURSTABLE) as web,
          worker(cri, lab, "bad-a", QosClass.GUARANTEED, missing_binary()) as a,
          worker(cri, lab, "bad-b", QosClass.GUARANTEED, missing_binary()) as b):
        app = shared(cri, lab, web)
        sync_until_attempts([a, b], 3)  # one kubelet, two pod workers
        attempts = a.of("app") + b.of("app")
        assert all(failed_as_the_runtime_says(x) for x in attempts), attempts
        wait_until(lambda: cpus(cri, app) == ONLINE, "the shared pool back on every CPU")


@needs_two_cpus
def test_a_container_created_and_not_started_within_the_grace_keeps_nothing(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:
    idle = ContainerSpec(name="app", resources=guaranteed(1, "64Mi"), start=False)
    with (pod(cri, "web", QosClass.BURSTABLE) as web,
          worker(cri, lab, "idle", QosClass.GUARANTEED, idle) as never):
        app = shared(cri, lab, web)
        never.sync()
        (created,) = never.attempts
        assert created.error == ""
        assert cpus(cri, app) != ONLINE  # it holds its CPU while it may still start
        wait_until(lambda: cpus(cri, app) == ONLINE, f"its CPU back after the {GRACE} s grace")
        assert exclusive(plugin) == CPUSet()
        with pytest.raises(CriError) as late:
            cri.start(created.container_id)
        assert "start refused: created" in late.value.details
        assert f"not started within the {GRACE} s grace" in late.value.details


@needs_two_cpus
def test_a_container_started_within_the_grace_keeps_its_cpu(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:
    with pod(cri, "web", QosClass.BURSTABLE) as web, pod(cri, "db", QosClass.GUARANTEED) as db:
        app = shared(cri, lab, web)
        pg = cri.create_container(db, None, "pg", lab.image, resources=guaranteed(1, "64Mi"))
        time.sleep(2)  # slow to start, within the grace
        cri.start(pg)
        mine = cpus(cri, pg)
        assert len(mine) == 1
        time.sleep(GRACE + 2)  # past the grace, and past a look of the start watch
        assert cpus(cri, pg) == mine
        assert cpus(cri, app) == ONLINE - mine
        assert exclusive(plugin) == mine


@needs_two_cpus
def test_an_annotation_changed_on_a_running_pod_reaches_the_runtime_only_with_a_new_sandbox(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:
    first, then = ONLINE.first(), ONLINE.last()
    app = ContainerSpec(name="app", resources=container_resources(cpu_request="100m"))
    with worker(cri, lab, "io", QosClass.BURSTABLE, app, pins=str(first)) as io:
        io.sync()
        assert cpus(cri, io.attempts[-1].container_id) == CPUSet([first])
        io.annotate({KEY: str(then)})
        cri.stop(io.attempts[-1].container_id)
        wait_until(lambda: (io.sync() or len(io.attempts)) == 2, "the next attempt")
        assert cpus(cri, io.attempts[-1].container_id) == CPUSet([first])  # the old pin
        cri.stop_pod(io.sandbox_id)  # the sandbox is killed: the worker runs a new one
        io.sync()
        assert io.spec.attempt == 1
        assert cpus(cri, io.attempts[-1].container_id) == CPUSet([then])
