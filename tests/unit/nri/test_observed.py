"""What the NRI adapter and the placement service report to their observers: hook calls and
their results, admissions by kind/result/reason, response updates and moves, update outcomes."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from cpuset_adapters.nri.handler import CpusetNriHandler
from cpuset_adapters.nri.handler_port import HandlerError
from cpuset_adapters.nri.plugin_service import PLUGIN_SERVICE, ConnectionState, PluginService
from cpuset_adapters.nri.proto import nri_pb2 as pb
from cpuset_adapters.nri.ttrpc import RequestEnvelope
from cpuset_core import ContainerUpdate, CPUSet, CpusetEngine, Kind, UpdateTransactionError
from cpuset_service.observer import (
    NO_HOOK_OBSERVER,
    NO_OBSERVER,
    AdmissionResult,
    BatchOutcome,
    HookObserver,
    HookResult,
    Observer,
)
from cpuset_service.placement import PlacementService
from cpuset_service.staged import apply_staged
from tests.builders.nri import container, pod
from tests.unit.nri.handler_harness import TOPOLOGY


@dataclass
class FakeObserver:
    """Records every report."""

    hooks: list[tuple[str, int]] = field(default_factory=list)
    finished: list[tuple[int, HookResult]] = field(default_factory=list)
    admissions: list[tuple[Kind, AdmissionResult, str]] = field(default_factory=list)
    responses: list[tuple[int, int]] = field(default_factory=list)
    batches: list[tuple[BatchOutcome, int]] = field(default_factory=list)

    def hook_started(self, hook: str, request_timeout_ms: int) -> int:
        self.hooks.append((hook, request_timeout_ms))
        return len(self.hooks)

    def hook_finished(self, token: int, result: HookResult) -> None:
        self.finished.append((token, result))

    def admission(self, kind: Kind, result: AdmissionResult, reason: str) -> None:
        self.admissions.append((kind, result, reason))

    def response_updates(self, container_ids: Sequence[str], moves: int) -> None:
        self.responses.append((len(container_ids), moves))

    def update_batch(self, outcome: BatchOutcome, container_ids: Sequence[str]) -> None:
        self.batches.append((outcome, len(container_ids)))

    def drift(self, repaired: int, unrepaired: int) -> None:
        pass


def observed() -> tuple[CpusetNriHandler, FakeObserver]:
    handler, _, observer = observed_service()
    return handler, observer


def observed_service() -> tuple[CpusetNriHandler, PlacementService, FakeObserver]:
    observer = FakeObserver()
    service = PlacementService(CpusetEngine(TOPOLOGY), observer=observer)
    return CpusetNriHandler(service), service, observer


def test_the_fake_and_the_defaults_satisfy_the_ports() -> None:
    ports: list[Observer] = [FakeObserver(), NO_OBSERVER]
    hooks: list[HookObserver] = [FakeObserver(), NO_HOOK_OBSERVER]
    assert all(p.hook_started("CreateContainer", 2000) >= 0 for p in hooks)
    for port in ports:
        port.drift(0, 0)


def test_admissions_are_reported_with_the_kind_decided() -> None:
    handler, observer = observed()
    web, db, io = pod("web", qos="burstable"), pod("db"), pod("io", qos="burstable", pins="3")
    handler.on_create_container(web, container("app", web))
    handler.on_create_container(db, container("pg", db, cpus=2))
    handler.on_create_container(io, container("io", io))
    assert observer.admissions == [(Kind.SHARED, "admitted", ""),
                                   (Kind.INTEGER, "admitted", ""),
                                   (Kind.ANNOTATED, "admitted", "")]


@pytest.mark.parametrize(("pins", "cpus", "kind", "reason", "annotations"), [
    ("99", None, Kind.ANNOTATED, "cpu-unavailable", {}),
    ("0,,1", None, Kind.ANNOTATED, "invalid-annotation", {}),
    (None, 64, Kind.INTEGER, "insufficient-cpus", {}),
    # A bad workload request asks for what its QoS gives, not for a pin.
    (None, 2, Kind.INTEGER, "invalid-annotation", {"mixed-cpus.nri-cpuset.io/pod": "yes"}),
    (None, None, Kind.SHARED, "invalid-annotation", {"reserved-cpus.nri-cpuset.io/pod": "1"}),
])
def test_a_rejection_is_reported_with_the_kind_asked_and_the_core_reason(
        pins: str | None, cpus: int | None, kind: Kind, reason: str,
        annotations: dict[str, str]) -> None:
    handler, observer = observed()
    bad = pod("bad", qos="guaranteed" if cpus else "burstable", pins=pins,
              annotations=annotations)
    with pytest.raises(HandlerError):
        handler.on_create_container(bad, container("c", bad, cpus=cpus))
    assert observer.admissions == [(kind, "rejected", reason)]


def test_updates_and_moves_on_responses_are_reported() -> None:
    handler, service, observer = observed_service()
    web, db = pod("web", qos="burstable"), pod("db")
    handler.on_create_container(web, container("app", web))
    handler.on_create_container(db, container("pg", db, cpus=1))
    taken = service.placement("id-pg-0123456789")
    assert taken is not None
    io = pod("io", qos="burstable", pins=taken.cpus.format())
    handler.on_create_container(io, container("io", io))
    # the integer shrank the shared one; the pin moved the integer and shrank the shared one
    assert observer.responses == [(1, 0), (2, 1)]


def request(method: str, message: pb.CreateContainerRequest | None = None) -> RequestEnvelope:
    payload = message.SerializeToString() if message is not None else b""
    return RequestEnvelope(PLUGIN_SERVICE, method, payload)


def test_every_served_call_is_timed_under_the_runtime_timeout_with_its_result() -> None:
    handler, observer = observed()
    service = PluginService(handler, observer)
    state = ConnectionState(request_timeout_ms=1500)
    good, bad = pod("web", qos="burstable"), pod("bad", qos="burstable", pins="99")
    service.handle(state, request("CreateContainer", pb.CreateContainerRequest(
        pod=good, container=container("app", good))))
    service.handle(state, request("CreateContainer", pb.CreateContainerRequest(
        pod=bad, container=container("c", bad))))
    service.handle(state, request("NoSuchMethod"))  # not served: not observed
    assert observer.hooks == [("CreateContainer", 1500), ("CreateContainer", 1500)]
    assert observer.finished == [(1, "ok"), (2, "error")]


def test_an_undecodable_request_still_finishes_its_hook_as_an_error() -> None:
    handler, observer = observed()
    service = PluginService(handler, observer)
    with pytest.raises(Exception):  # noqa: B017, PT011 - the service raises RpcError
        service.handle(ConnectionState(), RequestEnvelope(PLUGIN_SERVICE, "CreateContainer",
                                                          b"\xff\xff\xff"))
    assert observer.finished == [(1, "error")]


def shared_update(cid: str, before: str, after: str) -> ContainerUpdate:
    return ContainerUpdate(container_id=cid, subject=f"ns/{cid}/main", kind=Kind.SHARED,
                           cpus=CPUSet.parse(after), previous_cpus=CPUSet.parse(before))


def test_a_staged_transaction_reports_applied_failed_and_rolled_back_calls() -> None:
    observer = FakeObserver()
    calls: list[int] = []

    async def send(batch: Sequence[ContainerUpdate]) -> None:
        calls.append(len(batch))
        if len(calls) == 2:
            raise RuntimeError("NRI update of some containers failed")

    with pytest.raises(UpdateTransactionError):
        asyncio.run(apply_staged(send, [shared_update("grow", "2-3", "0-3"),
                                        shared_update("shrink", "0-7", "6-7")], "x",
                                 observer=observer))
    assert observer.batches == [("applied", 1), ("failed", 1), ("rolled_back", 1),
                                ("rolled_back", 1)]


def test_the_pusher_reports_each_batch_it_sends_and_each_failure() -> None:
    observer = FakeObserver()
    service = PlacementService(CpusetEngine(TOPOLOGY), observer=observer)
    handler = CpusetNriHandler(service)
    pusher = service.pusher
    web = pod("web", qos="burstable")
    handler.on_create_container(web, container("app", web))
    sent: list[int] = []

    async def send(batch: Sequence[ContainerUpdate]) -> None:
        sent.append(len(batch))
        if len(sent) == 1:
            raise RuntimeError("refused")

    async def main() -> None:
        task = asyncio.create_task(pusher.run(send))
        pusher.force(["id-app-0123456789"])
        while len(sent) < 2:
            await asyncio.sleep(0.001)
        await asyncio.sleep(0)
        task.cancel()

    asyncio.run(asyncio.wait_for(main(), 30))  # a bound against hanging, not a timing check
    assert observer.batches == [("failed", 1), ("applied", 1)]
