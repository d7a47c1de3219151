"""The plugin session against the runtime double: registration and configuration, the
subscription mask, and chunked Synchronize.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from cpuset_adapters.nri.handler_port import Event, HandlerError
from cpuset_adapters.nri.plugin_service import PLUGIN_SERVICE, ConnectionState, PluginService
from cpuset_adapters.nri.proto import nri_pb2 as pb
from cpuset_adapters.nri.session import NriSession
from cpuset_adapters.nri.subscription import subscription_mask
from cpuset_adapters.nri.ttrpc import RequestEnvelope
from tests.builders.nri import container, pod
from tests.support.nri_runtime import RuntimeDouble
from tests.unit.nri.session_harness import WEB, RecordingHandler, scenario, update

# -- registration and configuration ----------------------------------------------------------


@pytest.mark.parametrize(("version", "nri", "timeouts"), [
    ("0.6.1", "", (0, 0)), ("0.8.0", "", (5000, 2000)), ("0.12.2", "v0.12.2", (5000, 2000))])
def test_registers_and_is_configured_by_every_runtime_version(
        tmp_path: Path, version: str, nri: str, timeouts: tuple[int, int]) -> None:
    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        conn = await rt.wait_ready()
        assert (conn.name, conn.index) == ("cpuset", "50")
        assert session.connected
        [info] = handler.infos
        assert info.runtime_name == "containerd"
        assert info.nri_version == nri
        assert (info.registration_timeout_ms, info.request_timeout_ms) == timeouts
        assert info.config == "policy: strict"

    handler = scenario(tmp_path, body, version=version, config="policy: strict")
    assert handler.names() == ["configure", "synchronize", "disconnect"]


def test_configure_is_served_before_the_register_reply_arrives(tmp_path: Path) -> None:
    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        await rt.wait_ready()
        # the double withholds the RegisterPlugin reply until Configure has been answered
        assert handler.connected_at_configure == [False]
        assert session.connected

    scenario(tmp_path, body, configure_before_register_reply=True)


def test_the_mask_is_exactly_the_handlers_events(tmp_path: Path) -> None:
    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        conn = await rt.wait_ready()
        # CREATE 4 -> bit 3, UPDATE 8 -> bit 7, STOP 10 -> bit 9, REMOVE 11 -> bit 10
        assert conn.events == 0x8 | 0x80 | 0x200 | 0x400
        # not subscribed: the runtime never calls StartContainer
        await rt.lifecycle_event(Event.START_CONTAINER, WEB, container("c", WEB))
        assert "start" not in handler.names()

    scenario(tmp_path, body)


def test_subscription_mask_encodes_event_e_as_bit_e_minus_1() -> None:
    assert subscription_mask({Event.CREATE_CONTAINER, Event.STOP_CONTAINER,
                              Event.REMOVE_CONTAINER}) == 0x608
    assert subscription_mask({Event.RUN_POD_SANDBOX}) == 1
    with pytest.raises(ValueError, match="every event"):
        subscription_mask(set())
    with pytest.raises(ValueError, match="VALIDATE_CONTAINER_ADJUSTMENT"):
        subscription_mask({Event.CREATE_CONTAINER, Event.VALIDATE_CONTAINER_ADJUSTMENT})


@pytest.mark.parametrize("events", [frozenset(), frozenset({Event.UPDATE_POD_SANDBOX})])
def test_an_empty_or_unsupported_subscription_is_refused_not_sent_as_all(
        tmp_path: Path, events: frozenset[Event]) -> None:
    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        conn = await rt.wait_registered()
        await rt.wait_closed(conn)  # the plugin refuses Configure and hangs up
        assert not conn.ready.is_set()
        assert conn.events is None  # never subscribed to anything, in particular not to "all"

    scenario(tmp_path, body, handler=RecordingHandler(events))


def test_on_configure_refusing_drops_the_connection(tmp_path: Path) -> None:
    handler = RecordingHandler()
    handler.fail["configure"] = HandlerError("bad config")

    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        conn = await rt.wait_registered()
        await rt.wait_closed(conn)
        assert not conn.ready.is_set()

    scenario(tmp_path, body, handler=handler)


# -- synchronize -----------------------------------------------------------------------------


def test_chunked_synchronize_reaches_the_handler_once_with_everything(tmp_path: Path) -> None:
    pods = [pod(f"p{i}") for i in range(10)]
    containers = [container(f"c{i}", p) for i, p in enumerate(pods)]
    handler = RecordingHandler()
    handler.sync_updates = [update("c1", "4-5")]

    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        conn = await rt.wait_ready()
        assert conn.sync_chunks == 4  # 3 + 3 + 3 + 1 objects of each kind
        assert [(u.container_id, u.linux.resources.cpu.cpus) for u in conn.sync_updates] == [
            ("c1", "4-5")]

    scenario(tmp_path, body, handler=handler, version="0.12.2", pods=pods,
             containers=containers, sync_chunk=3)
    [sync] = [c for c in handler.calls if c[0] == "synchronize"]
    assert sync == ("synchronize", [p.id for p in pods], [c.id for c in containers])


def test_v0_6_1_sends_one_synchronize_even_over_4_mib(tmp_path: Path) -> None:
    big = "x" * 10_000
    containers = [pb.Container(id=f"c{i}", annotations={"blob": big}) for i in range(500)]

    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        conn = await rt.wait_ready()
        assert conn.sync_chunks == 1

    handler = scenario(tmp_path, body, version="0.6.1", containers=containers, sync_chunk=3)
    [sync] = [c for c in handler.calls if c[0] == "synchronize"]
    assert len(sync[2]) == 500


def test_a_failing_synchronize_drops_the_connection_and_syncs_again(tmp_path: Path) -> None:
    handler = RecordingHandler()
    handler.fail["synchronize"] = HandlerError("cannot rebuild")

    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        await rt.wait_registered(count=2)
        del handler.fail["synchronize"]
        await rt.wait_ready()
        assert not rt.connections[0].ready.is_set()

    scenario(tmp_path, body, handler=handler, version="0.6.1")


class _Once(dict[str, float]):
    """A handler delay taken by the first call only."""

    def __getitem__(self, key: str) -> float:
        return self.pop(key)


def test_a_synchronize_answered_too_late_drops_the_connection_and_syncs_again(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # v0.6.1 leaves a plugin whose Synchronize timed out out of its list, its connection open:
    # without the drop no event would ever reach it again.
    handler = RecordingHandler()
    handler.delay = _Once(synchronize=2.2)  # the runtime's 2 s, which v0.6.1 does not send

    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        # The plugin runs in the double's event loop, which the slow handler blocks: whether
        # the double saw the answer late is a race; that the plugin registered again is not.
        await rt.wait_registered(count=2)
        await rt.wait_ready()
        first, second = rt.connections[:2]
        assert first.closed.is_set()  # by the plugin
        assert second.ready.is_set()

    with caplog.at_level(logging.WARNING, logger="nri_cpuset"):
        scenario(tmp_path, body, handler=handler, version="0.6.1")
    assert handler.names().count("synchronize") == 2
    [late] = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert late.startswith("Synchronize answered after ")
    assert "of the runtime's 2000 ms request timeout (on_synchronize took " in late
    assert late.endswith("dropping the connection to register and be synchronized again")
    assert not [r for r in caplog.records if "slow handler" in r.getMessage()]


def synchronize(service: PluginService, state: ConnectionState) -> bool:
    """One whole Synchronize (a single chunk); whether the answer closes the connection."""
    request = RequestEnvelope(PLUGIN_SERVICE, "Synchronize",
                              pb.SynchronizeRequest().SerializeToString())
    return service.handle(state, request).close_after


def test_a_late_synchronize_logs_one_error_saying_how_late_and_what_follows(
        caplog: pytest.LogCaptureFixture) -> None:
    handler = RecordingHandler()
    handler.delay["synchronize"] = 0.12  # 120 % of a 100 ms request timeout
    with caplog.at_level(logging.DEBUG, logger="nri_cpuset.nri"):
        assert synchronize(PluginService(handler), ConnectionState(request_timeout_ms=100))
    [record] = caplog.records
    assert record.levelno == logging.ERROR
    message = record.getMessage()
    assert message.startswith("Synchronize answered after 1")
    assert "of the runtime's 100 ms request timeout (on_synchronize took 1" in message
    assert "dropping the connection to register and be synchronized again" in message


def test_a_slow_synchronize_in_time_is_logged_as_a_slow_handler_and_keeps_the_connection(
        caplog: pytest.LogCaptureFixture) -> None:
    handler = RecordingHandler()
    handler.delay["synchronize"] = 0.15  # 15 % of a 1 s request timeout
    with caplog.at_level(logging.DEBUG, logger="nri_cpuset.nri"):
        assert not synchronize(PluginService(handler), ConnectionState(request_timeout_ms=1000))
    [record] = caplog.records
    assert record.levelno == logging.WARNING
    assert record.getMessage().startswith("slow handler: on_synchronize took 1")


@pytest.mark.parametrize(("delay", "timeout_ms", "took"), [
    # 15 % of a 1 s request timeout at least: its time is said on the one line.
    (0.15, 1000, " (on_synchronize took 1"),
    # Slow only past 6 minutes, however loaded the machine: nothing about its time.
    (0.0, 3_600_000, ""),
])
def test_a_failing_synchronize_logs_one_error_with_the_handlers_time_when_it_was_slow(
        caplog: pytest.LogCaptureFixture, delay: float, timeout_ms: int, took: str) -> None:
    handler = RecordingHandler()
    handler.delay["synchronize"] = delay
    handler.fail["synchronize"] = HandlerError("nri-cpuset: broken")
    with caplog.at_level(logging.DEBUG, logger="nri_cpuset.nri"):
        assert synchronize(PluginService(handler), ConnectionState(request_timeout_ms=timeout_ms))
    [record] = caplog.records
    assert record.levelno == logging.ERROR
    message = record.getMessage()
    assert message.startswith(f"Synchronize failed: nri-cpuset: broken{took}")
    assert message.endswith("; dropping the connection")
    assert (f"of the runtime's {timeout_ms} ms request timeout)" in message) is bool(took)
