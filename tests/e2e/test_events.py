"""Kubernetes Events on the real runtime: the plugin, run with ``[events]`` on, writes its
decisions to the lab's fake API server (which refuses, with 422, what the real one would), and
each event states what the kernel shows: an integer container's exclusive CPUs, the move a pin
causes naming the pin's pod, a resize applied and refused, an out-of-band write the verifier
repaired, and the CPUs a container whose start failed gave back; the shared pool's change is
told on the node.

Every wait is bounded (``wait_until``); nothing is timed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cpuset_adapters import cgroupfs
from cpuset_adapters.cri.client import CriError
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.kube_api import FakeApi, serve, write_kubeconfig
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.pod_spec import QosClass
from cpuset_lab.resources import guaranteed
from tests.e2e.plugin_harness import (
    ONLINE,
    Plugin,
    cpus,
    integer,
    needs_two_cpus,
    pod,
    serving,
    shared,
    wait_until,
)
from tests.e2e.test_start_failures import missing_binary, worker

pytestmark = pytest.mark.e2e

NODE = "lab-node"


@pytest.fixture
def api() -> Iterator[FakeApi]:
    with serve() as running:
        yield running


@pytest.fixture
def plugin(lab: LabContainerd, cri: KubeletClient, api: FakeApi,
           tmp_path: Path) -> Iterator[Plugin]:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", api)
    config = tmp_path / "config.toml"
    config.write_text('[runtime]\nverify_period = 1\nstart_grace = 3\n'
                      '[observability]\nlog_format = "console"\nlisten = ""\n'
                      f'[topology_publisher]\nnode_name = "{NODE}"\n'
                      f'kubeconfig = "{kubeconfig}"\n'
                      '[events]\nenabled = true\nshared_pool_interval = 1\n')
    with serving(lab, Plugin(lab.nri_socket, tmp_path / "plugin.log",
                             ("--config", str(config)))) as running:
        # The pool's changes are told against the pool first seen after the synchronize.
        wait_until(lambda: "shared pool first seen" in running.text(), "the pool's baseline")
        yield running


def events(api: FakeApi) -> list[dict[str, Any]]:
    """The events the fake holds now (its server threads add to them meanwhile)."""
    while True:
        try:
            return [dict(event) for event in list(api.events.values())]
        except RuntimeError:  # changed while copied: copy again
            time.sleep(0.01)


def notes(api: FakeApi, regarding: str, reason: str) -> list[str]:
    return sorted(e["note"] for e in events(api)
                  if e["regarding"]["name"] == regarding and e["reason"] == reason)


def one_note(api: FakeApi, regarding: str, reason: str, plugin: Plugin) -> str:
    wait_until(lambda: bool(notes(api, regarding, reason)),
               f"a {reason} event on {regarding}\n--- plugin log ---\n{plugin.text()[-3000:]}")
    [note] = notes(api, regarding, reason)
    return note


@needs_two_cpus
def test_an_integer_container_is_told_the_cpus_the_kernel_shows_and_the_node_its_pool(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient, api: FakeApi) -> None:
    with pod(cri, "web", QosClass.BURSTABLE) as web, pod(cri, "db", QosClass.GUARANTEED) as db:
        shared(cri, lab, web)
        pg = integer(cri, lab, db, 1, "postgres")
        mine = cpus(cri, pg)
        note = one_note(api, "db", "ExclusiveCpusAssigned", plugin)
        assert note.startswith(f"exclusive CPUs {mine} (NUMA node 0, "), note
        assert note.endswith("memory nodes not bound"), note
        [event] = [e for e in events(api) if e["reason"] == "ExclusiveCpusAssigned"]
        assert event["regarding"]["fieldPath"] == "spec.containers{postgres}"
        assert event["regarding"]["namespace"] == event["metadata"]["namespace"] == "default"
        assert event["regarding"]["uid"]
        assert event["reportingInstance"] == NODE
        wait_until(lambda: f"shared pool {ONLINE - mine} (1 CPU), was {ONLINE} (2 CPUs)"
                   in notes(api, NODE, "SharedPoolChanged"), "the pool's change on the node")
    assert not notes(api, "web", "ExclusiveCpusAssigned")  # a shared container: none


@needs_two_cpus
def test_a_pin_that_moves_an_integer_container_is_told_on_it_naming_the_pins_pod(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient, api: FakeApi) -> None:
    with pod(cri, "db", QosClass.GUARANTEED) as db:
        pg = integer(cri, lab, db, 1, "postgres")
        taken = cpus(cri, pg)
        with pod(cri, "io", QosClass.BURSTABLE, pins=taken.format()) as io:
            shared(cri, lab, io, "io")
            moved = cpus(cri, pg)
            assert moved.isdisjoint(taken)
            note = one_note(api, "db", "MovedForPin", plugin)
            assert note == (f"exclusive CPUs moved from {taken} to {moved}: pod default/io "
                            f"pins {taken}")
            pinned = one_note(api, "io", "PinnedCpusAssigned", plugin)
            assert pinned.startswith(f"pinned CPUs {taken} (not shared with another pod)")


@needs_two_cpus
def test_an_out_of_band_write_repaired_by_the_verifier_is_told_as_drift(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient, api: FakeApi) -> None:
    with pod(cri, "db", QosClass.GUARANTEED) as db:
        pg = integer(cri, lab, db, 1, "postgres")
        mine = cpus(cri, pg)
        path = cri.container_status(pg).cgroups_path
        assert path is not None
        (cgroupfs.cgroup_dir(path) / "cpuset.cpus").write_text(ONLINE.format())
        wait_until(lambda: cpus(cri, pg) == mine, "the verifier to undo the write", 15.0)
        wait_until(lambda: bool(notes(api, "db", "DriftRepaired")),
                   "the drift event, once a later pass saw it repaired", 15.0)
        [note] = notes(api, "db", "DriftRepaired")
        assert note == (f"the kernel enforced cpuset.cpus {ONLINE} (check: cpus); wrote back "
                        f"cpuset.cpus {mine}")


@needs_two_cpus
def test_a_container_whose_start_failed_is_told_it_gave_its_cpus_back(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient, api: FakeApi) -> None:
    with pod(cri, "web", QosClass.BURSTABLE) as web, \
            worker(cri, lab, "bad", QosClass.GUARANTEED, missing_binary()) as bad:
        app = shared(cri, lab, web)
        bad.sync()
        (first,) = bad.attempts
        assert first.failed_at == "start"
        wait_until(lambda: cpus(cri, app) == ONLINE, "the CPU back in the shared pool", 10.0)
        note = one_note(api, "bad", "CpusReleasedNeverStarted", plugin)
        assert note.startswith("gave back integer CPUs "), note
        assert "its start failed" in note
        assert note.endswith("; a later start is refused")


@needs_two_cpus
def test_a_resize_is_told_with_the_cpus_the_kernel_shows_and_a_refused_one_as_a_warning(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient, api: FakeApi) -> None:
    with pod(cri, "db", QosClass.GUARANTEED) as db:
        pg = integer(cri, lab, db, 1, "postgres")
        first = cpus(cri, pg)
        cri.update_resources(pg, guaranteed(2, "64Mi"))
        assert cpus(cri, pg) == ONLINE
        note = one_note(api, "db", "CpusResized", plugin)
        assert note.startswith(f"resized to exclusive CPUs {ONLINE} (NUMA node 0, "), note
        assert note.endswith(f"was on exclusive CPUs {first}"), note
        cri.update_resources(pg, guaranteed(1, "64Mi"))
        with pod(cri, "io", QosClass.BURSTABLE, pins=str(ONLINE.last())) as io:
            shared(cri, lab, io, "io")
            with pytest.raises(CriError):  # no room to grow past the pin
                cri.update_resources(pg, guaranteed(2, "64Mi"))
            refused = one_note(api, "db", "ResizeRefused", plugin)
            assert refused.startswith("resize refused, CPUs unchanged: needs 2 exclusive CPU"), \
                refused
