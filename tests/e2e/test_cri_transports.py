"""The daemon's h2 transport and the lab's grpcio one read the same things from the real
containerd: pods, containers, their status (verbose info included) and its errors."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Protocol, TypeVar

import pytest

from cpuset_adapters.cri.client import CriClient, CriError
from cpuset_adapters.cri.grpc_transport import GrpcTransport
from cpuset_adapters.cri.h2_unary import H2UnaryTransport
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.pod_spec import PodSpec, QosClass, cgroup_parent
from cpuset_lab.resources import container_resources
from tests.e2e.plugin_harness import PATIENCE

pytestmark = pytest.mark.e2e


class _HasId(Protocol):
    @property
    def id(self) -> str: ...


T = TypeVar("T", bound=_HasId)


@pytest.fixture
def readers(lab: LabContainerd) -> Iterator[tuple[CriClient, CriClient]]:
    """(h2, grpcio) clients on the lab's CRI socket."""
    address = str(lab.cri_address)
    with (CriClient(address, timeout=10) as h2,
          CriClient(address, timeout=10, transport=GrpcTransport(address)) as grpcio):
        assert isinstance(h2.transport, H2UnaryTransport)
        yield h2, grpcio


def _by_id(items: list[T]) -> list[T]:
    # containerd 2.x lists in no stable order (1.7 happens to).
    return sorted(items, key=lambda item: item.id)


def _exited(cri: KubeletClient, cid: str) -> None:
    deadline = time.monotonic() + PATIENCE
    while cri.container_status(cid).state != "CONTAINER_EXITED":
        assert time.monotonic() < deadline, f"{cid} did not exit"
        time.sleep(0.1)


def test_both_transports_read_the_same_pods_containers_and_status(
        lab: LabContainerd, cri: KubeletClient, readers: tuple[CriClient, CriClient]) -> None:
    h2, grpcio = readers
    uid = str(uuid.uuid4())
    parent = cgroup_parent(QosClass.BURSTABLE, uid)
    with cri.pod(PodSpec(name="transports", uid=uid, cgroup_parent=parent)) as pod:
        running = cri.run_container(pod, "app", lab.image,
                                    resources=container_resources(cpu_request="100m"))
        done = cri.create_container(pod, None, "done", lab.image, command=["/bin/true"])
        cri.start(done)
        _exited(cri, done)

        assert h2.version() == grpcio.version()
        assert _by_id(h2.list_pods()) == _by_id(grpcio.list_pods())
        assert h2.pod_status(pod) == grpcio.pod_status(pod)  # verbose info included
        containers = _by_id(h2.list_containers(pod))
        assert containers == _by_id(grpcio.list_containers(pod))
        assert {c.id for c in containers} == {running, done}
        assert all(c.created_at > 0 for c in containers)
        for cid in (running, done):
            assert h2.container_status(cid) == grpcio.container_status(cid)
        live = h2.container_status(running)
        assert live.running
        assert live.pid is not None
        assert live.cgroups_path == f"{parent}/{running}"
        assert 0 < live.created_at <= live.started_at
        assert live.finished_at == 0
        exited = h2.container_status(done)
        # containerd stamps started_at when its start call returns, which can be after a
        # process as short as /bin/true has already exited: both are set, in either order.
        assert exited.started_at > 0
        assert exited.finished_at > 0
        (only,) = h2.list_containers(pod, state="CONTAINER_RUNNING")
        assert [only] == grpcio.list_containers(pod, state="CONTAINER_RUNNING")
        assert only.id == running


def test_both_transports_report_an_unknown_container_as_not_found(
        readers: tuple[CriClient, CriClient]) -> None:
    errors = []
    for client in readers:
        with pytest.raises(CriError) as caught:
            client.container_status("no-such-container")
        errors.append(caught.value)
    h2, grpcio = errors
    assert (h2.method, h2.code_name) == ("ContainerStatus", "NOT_FOUND")
    assert (h2.method, h2.code, h2.details) == (grpcio.method, grpcio.code, grpcio.details)
    assert "no-such-container" in h2.details
