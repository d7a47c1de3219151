"""Kubernetes Events on the real runtime: the plugin, run with ``[events]`` on, writes its
decisions to the lab's fake API server (which refuses, with 422, what the real one would), and
each event states what the kernel shows: an integer container's exclusive CPUs, the move a pin
causes naming the pin's pod, a resize applied and refused, an out-of-band write the verifier
repaired, and the CPUs a container whose start failed gave back; the shared pool's change is
told on the node. The fake knows the pods run here (as the API server knows a kubelet's), and
the real kubectl, against it, shows the events in ``kubectl describe pod`` and
``kubectl get events`` (``NRI_CPUSET_KUBECTL_DUMP=<file>`` appends what it printed to the file).

Every wait is bounded (``wait_until``); nothing is timed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from cpuset_adapters import cgroupfs
from cpuset_adapters.cri.client import CriError
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.kube_api import FakeApi, write_kubeconfig
from cpuset_lab.kube_pods import PodContainer, pod_object
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.pod_spec import PodSpec, QosClass
from cpuset_lab.resources import guaranteed
from tests.e2e.plugin_harness import (
    KEY,
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
from tests.e2e.pod_workers import missing_binary, worker

pytestmark = pytest.mark.e2e

NODE = "lab-node"


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


needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None,
                                   reason="no kubectl on PATH (Debian's kubectl package has one)")


def guaranteed_container(name: str, image: str, cpus: int) -> PodContainer:
    """What the harness's ``integer`` runs, as the pod's spec says it."""
    quantities = {"cpu": str(cpus), "memory": "64Mi"}
    return PodContainer(name=name, image=image, requests=quantities, limits=quantities)


def shared_container(name: str, image: str) -> PodContainer:
    """What the harness's ``shared`` runs, as the pod's spec says it."""
    return PodContainer(name=name, image=image, requests={"cpu": "100m"})


@contextmanager
def known_pod(cri: KubeletClient, api: FakeApi, name: str, qos: QosClass,
              containers: Sequence[PodContainer], *, pins: str | None = None) -> Iterator[str]:
    """The harness's ``pod``, which the fake API server knows by the same name, namespace and
    uid while it runs, as the API server knows the pods a kubelet runs."""
    uid = str(uuid.uuid4())
    spec = PodSpec(name=name, uid=uid, annotations={KEY: pins} if pins is not None else None)
    api.add_pod(pod_object(spec, node=NODE, qos=qos, containers=containers))
    try:
        with pod(cri, name, qos, pins=pins, uid=uid) as pod_id:
            yield pod_id
    finally:
        api.remove_pod(spec.namespace, name)


def kubectl(tmp_path: Path, *args: str) -> str:
    """What the real kubectl prints against the fake (the plugin's kubeconfig)."""
    done = subprocess.run(["kubectl", "--kubeconfig", str(tmp_path / "kubeconfig"),
                           "--cache-dir", str(tmp_path / "kubectl-cache"), *args],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    if dump := os.environ.get("NRI_CPUSET_KUBECTL_DUMP"):
        with open(dump, "a", encoding="utf-8") as out:
            out.write(f"$ kubectl {' '.join(args)}\n{done.stdout}\n")
    return done.stdout


def described_events(tmp_path: Path, pod_name: str) -> list[list[str]]:
    """The rows of ``kubectl describe pod``'s Events section: Type, Reason, Age, From,
    Message."""
    section = kubectl(tmp_path, "describe", "pod", pod_name).split("\nEvents:\n", 1)[1]
    return table(section)[2:]


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
    with known_pod(cri, api, "web", QosClass.BURSTABLE, [shared_container("app", lab.image)]) \
            as web, known_pod(cri, api, "db", QosClass.GUARANTEED,
                              [guaranteed_container("postgres", lab.image, 1)]) as db:
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
        assert event["regarding"]["uid"] == api.pods["default", "db"]["metadata"]["uid"]
        wait_until(lambda: f"shared pool {ONLINE - mine} (1 CPU), was {ONLINE} (2 CPUs)"
                   in notes(api, NODE, "SharedPoolChanged"), "the pool's change on the node")
    assert not notes(api, "web", "ExclusiveCpusAssigned")  # a shared container: none


@needs_two_cpus
@needs_kubectl
def test_kubectl_describe_pod_shows_the_exclusive_cpus_the_kernel_shows(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient, api: FakeApi,
        tmp_path: Path) -> None:
    with known_pod(cri, api, "db", QosClass.GUARANTEED,
                   [guaranteed_container("postgres", lab.image, 1)]) as db:
        pg = integer(cri, lab, db, 1, "postgres")
        mine = cpus(cri, pg)
        note = one_note(api, "db", "ExclusiveCpusAssigned", plugin)
        [(kind, reason, age, source, message)] = described_events(tmp_path, "db")
        assert (kind, reason, source, message) == (
            "Normal", "ExclusiveCpusAssigned", "weka.io/nri-cpuset", note)
        assert message.startswith(f"exclusive CPUs {mine} (NUMA node 0, ")
        assert re.fullmatch(r"\d+s", age), age


@needs_two_cpus
def test_a_pin_that_moves_an_integer_container_is_told_on_it_naming_the_pins_pod(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient, api: FakeApi) -> None:
    with known_pod(cri, api, "db", QosClass.GUARANTEED,
                   [guaranteed_container("postgres", lab.image, 1)]) as db:
        pg = integer(cri, lab, db, 1, "postgres")
        taken = cpus(cri, pg)
        with known_pod(cri, api, "io", QosClass.BURSTABLE, [shared_container("io", lab.image)],
                       pins=taken.format()) as io:
            shared(cri, lab, io, "io")
            moved = cpus(cri, pg)
            assert moved.isdisjoint(taken)
            note = one_note(api, "db", "MovedForPin", plugin)
            assert note == (f"exclusive CPUs moved from {taken} to {moved}: pod default/io "
                            f"pins {taken}")
            pinned = one_note(api, "io", "PinnedCpusAssigned", plugin)
            assert pinned.startswith(f"pinned CPUs {taken} (not shared with another pod)")


@needs_two_cpus
@needs_kubectl
def test_kubectl_shows_the_move_for_a_pin_in_describe_and_get_events(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient, api: FakeApi,
        tmp_path: Path) -> None:
    with known_pod(cri, api, "db", QosClass.GUARANTEED,
                   [guaranteed_container("postgres", lab.image, 1)]) as db:
        pg = integer(cri, lab, db, 1, "postgres")
        taken = cpus(cri, pg)
        with known_pod(cri, api, "io", QosClass.BURSTABLE, [shared_container("io", lab.image)],
                       pins=taken.format()) as io:
            shared(cri, lab, io, "io")
            moved = cpus(cri, pg)
            note = one_note(api, "db", "MovedForPin", plugin)
            assert note == (f"exclusive CPUs moved from {taken} to {moved}: pod default/io "
                            f"pins {taken}")
            described = described_events(tmp_path, "db")
            assert [(row[0], row[1], row[3], row[4]) for row in described] == [
                ("Normal", "ExclusiveCpusAssigned", "weka.io/nri-cpuset", described[0][4]),
                ("Normal", "MovedForPin", "weka.io/nri-cpuset", note)]
            assert described[0][4].startswith(f"exclusive CPUs {taken} (NUMA node 0, ")
            [header, row] = table(kubectl(tmp_path, "get", "events", "--field-selector",
                                          "reason=MovedForPin"))
            assert header == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
            assert row[1:] == ["Normal", "MovedForPin", "pod/db", note]
            [_, row] = table(kubectl(tmp_path, "get", "events", "-A", "--field-selector",
                                     "reason=MovedForPin"))
            assert (row[0], row[4]) == ("default", "pod/db")
            [header, row] = table(kubectl(tmp_path, "get", "events", "-o", "wide",
                                          "--field-selector", "reason=MovedForPin"))
            assert dict(zip(header, row, strict=True))["SOURCE"] == f"weka.io/nri-cpuset, {NODE}"
            assert row[4] == "spec.containers{postgres}"


def table(printed: str) -> list[list[str]]:
    return [re.split(r" {2,}", line.strip()) for line in printed.strip().splitlines()]


@needs_two_cpus
def test_an_out_of_band_write_repaired_by_the_verifier_is_told_as_drift(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient, api: FakeApi) -> None:
    with known_pod(cri, api, "db", QosClass.GUARANTEED,
                   [guaranteed_container("postgres", lab.image, 1)]) as db:
        pg = integer(cri, lab, db, 1, "postgres")
        mine = cpus(cri, pg)
        path = cri.container_status(pg).cgroups_path
        assert path is not None
        (cgroupfs.cgroup_dir(path) / "cpuset.cpus").write_text(ONLINE.format())
        wait_until(lambda: cpus(cri, pg) == mine, "the verifier to undo the write")
        wait_until(lambda: bool(notes(api, "db", "DriftRepaired")),
                   "the drift event, once a later pass saw it repaired", 15.0)
        [note] = notes(api, "db", "DriftRepaired")
        assert note == (f"the kernel enforced cpuset.cpus {ONLINE} (check: cpus); wrote back "
                        f"cpuset.cpus {mine}")


@needs_two_cpus
def test_a_container_whose_start_failed_is_told_it_gave_its_cpus_back(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient, api: FakeApi) -> None:
    with known_pod(cri, api, "web", QosClass.BURSTABLE, [shared_container("app", lab.image)]) \
            as web, worker(cri, lab, "bad", QosClass.GUARANTEED, missing_binary()) as bad:
        app = shared(cri, lab, web)
        bad.sync()
        (first,) = bad.attempts
        assert first.failed_at == "start"
        wait_until(lambda: cpus(cri, app) == ONLINE, "the CPU back in the shared pool")
        note = one_note(api, "bad", "CpusReleasedNeverStarted", plugin)
        assert note.startswith("gave back integer CPUs "), note
        assert "its start failed" in note
        assert note.endswith("; a later start is refused")


@needs_two_cpus
def test_a_resize_is_told_with_the_cpus_the_kernel_shows_and_a_refused_one_as_a_warning(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient, api: FakeApi) -> None:
    with known_pod(cri, api, "db", QosClass.GUARANTEED,
                   [guaranteed_container("postgres", lab.image, 1)]) as db:
        pg = integer(cri, lab, db, 1, "postgres")
        first = cpus(cri, pg)
        cri.update_resources(pg, guaranteed(2, "64Mi"))
        assert cpus(cri, pg) == ONLINE
        note = one_note(api, "db", "CpusResized", plugin)
        assert note.startswith(f"resized to exclusive CPUs {ONLINE} (NUMA node 0, "), note
        assert note.endswith(f"was on exclusive CPUs {first}"), note
        cri.update_resources(pg, guaranteed(1, "64Mi"))
        with known_pod(cri, api, "io", QosClass.BURSTABLE, [shared_container("io", lab.image)],
                       pins=str(ONLINE.last())) as io:
            shared(cri, lab, io, "io")
            with pytest.raises(CriError):  # no room to grow past the pin
                cri.update_resources(pg, guaranteed(2, "64Mi"))
            refused = one_note(api, "db", "ResizeRefused", plugin)
            assert refused.startswith("resize refused, CPUs unchanged: needs 2 exclusive CPU"), \
                refused
