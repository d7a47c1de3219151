"""The plugin session serving the runtime's events: container and pod lifecycle events, handler
failures, unknown methods, framing of big replies, slow handlers and shutdown.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from cpuset_adapters.nri.handler_port import Event, HandlerError
from cpuset_adapters.nri.proto import nri_pb2 as pb
from cpuset_adapters.nri.session import NriSession
from tests.builders.nri import container, pod
from tests.support.nri_runtime import CallError, RuntimeDouble
from tests.unit.nri.session_harness import DEFAULT_EVENTS, WEB, RecordingHandler, scenario, update

# -- events ----------------------------------------------------------------------------------


def test_create_container_returns_the_adjustment_and_updates(tmp_path: Path) -> None:
    handler = RecordingHandler()
    handler.create_updates = [update("older", "0-1")]

    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        await rt.wait_ready()
        resp = await rt.create_container(WEB, container("new", WEB))
        assert resp is not None
        assert resp.adjust.linux.resources.cpu.cpus == "2-3"
        assert resp.adjust.linux.resources.cpu.mems == "0"
        assert [u.container_id for u in resp.update] == ["older"]

    scenario(tmp_path, body, handler=handler)
    assert ("create", "sb-web", "id-new-0123456789") in handler.calls


def test_a_handler_error_fails_the_creation_and_the_session_goes_on(tmp_path: Path) -> None:
    handler = RecordingHandler()

    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        await rt.wait_ready()
        handler.fail["create"] = HandlerError("not enough CPUs for default/web/app")
        with pytest.raises(CallError) as caught:
            await rt.create_container(WEB, container("a", WEB))
        assert (caught.value.code, caught.value.message) == (
            2, "not enough CPUs for default/web/app")
        handler.fail["create"] = ZeroDivisionError("bug")
        with pytest.raises(CallError) as caught:
            await rt.create_container(WEB, container("b", WEB))
        assert caught.value.code == 13
        del handler.fail["create"]
        assert await rt.create_container(WEB, container("c", WEB)) is not None
        assert len(rt.connections) == 1

    scenario(tmp_path, body, handler=handler)


def test_update_container_passes_the_requested_resources(tmp_path: Path) -> None:
    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        await rt.wait_ready()
        resources = pb.LinuxResources()
        resources.cpu.cpus = "0-7"
        resources.cpu.quota.SetInParent()  # a wrapper holding 0, as containerd sends it
        resp = await rt.update_container(WEB, container("a", WEB), resources)
        assert resp is not None
        assert [(u.container_id, u.linux.resources.cpu.cpus) for u in resp.update] == [
            ("id-a-0123456789", "2-3")]
        handler.fail["update"] = HandlerError("no")
        with pytest.raises(CallError, match="no"):
            await rt.update_container(WEB, container("a", WEB), resources)

    handler = scenario(tmp_path, body)
    assert ("update", "id-a-0123456789", "0-7") in handler.calls


@pytest.mark.parametrize("version", ["0.6.1", "0.12.2"])
def test_stop_and_remove_are_delivered_and_always_answered_ok(tmp_path: Path,
                                                              version: str) -> None:
    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        conn = await rt.wait_ready()
        resp = await rt.stop_container(WEB, container("a", WEB))
        assert resp is not None
        assert [u.container_id for u in resp.update] == ["other"]
        await rt.remove_container(WEB, container("a", WEB))
        handler.fail["stop"] = HandlerError("boom")
        handler.fail["remove"] = RuntimeError("bug")
        resp = await rt.stop_container(WEB, container("b", WEB))  # no CallError: answered OK
        assert resp is not None
        assert list(resp.update) == []
        await rt.remove_container(WEB, container("b", WEB))
        # v0.12 used RemoveContainer itself; it never had to fall back to StateChange
        assert not conn.fell_back_to_state_change

    handler = scenario(tmp_path, body, version=version)
    assert [c for c in handler.calls if c[0] in ("stop", "remove")] == [
        ("stop", "id-a-0123456789"), ("remove", "id-a-0123456789"),
        ("stop", "id-b-0123456789"), ("remove", "id-b-0123456789")]


@pytest.mark.parametrize("version", ["0.6.1", "0.12.2"])
def test_other_subscribed_lifecycle_events_are_acknowledged_and_a_post_start_reaches_the_handler(
        tmp_path: Path, version: str) -> None:
    events = DEFAULT_EVENTS | {Event.RUN_POD_SANDBOX, Event.POST_START_CONTAINER}

    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        conn = await rt.wait_ready()
        await rt.lifecycle_event(Event.RUN_POD_SANDBOX, WEB)
        await rt.lifecycle_event(Event.POST_START_CONTAINER, WEB, container("a", WEB))
        assert not conn.fell_back_to_state_change

    handler = scenario(tmp_path, body, handler=RecordingHandler(events), version=version)
    assert handler.names() == ["configure", "synchronize", "post-start", "disconnect"]


@pytest.mark.parametrize("version", ["0.6.1", "0.12.2"])
def test_a_post_update_reaches_the_handler_and_its_error_is_answered_ok(tmp_path: Path,
                                                                       version: str) -> None:
    handler = RecordingHandler(DEFAULT_EVENTS | {Event.POST_UPDATE_CONTAINER})

    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        conn = await rt.wait_ready()
        await rt.lifecycle_event(Event.POST_UPDATE_CONTAINER, WEB, container("a", WEB))
        handler.fail["post-update"] = HandlerError("boom")
        await rt.lifecycle_event(Event.POST_UPDATE_CONTAINER, WEB, container("b", WEB))
        # v0.12 used PostUpdateContainer itself; it never had to fall back to StateChange
        assert not conn.fell_back_to_state_change

    scenario(tmp_path, body, handler=handler, version=version)
    assert [c for c in handler.calls if c[0] == "post-update"] == [
        ("post-update", "id-a-0123456789"), ("post-update", "id-b-0123456789")]


@pytest.mark.parametrize("version", ["0.6.1", "0.12.2"])
def test_a_start_reaches_the_handler_and_its_refusal_fails_the_start(tmp_path: Path,
                                                                     version: str) -> None:
    handler = RecordingHandler(DEFAULT_EVENTS | {Event.START_CONTAINER})

    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        conn = await rt.wait_ready()
        await rt.lifecycle_event(Event.START_CONTAINER, WEB, container("a", WEB))
        handler.fail["start"] = HandlerError("nri-cpuset: too late")
        with pytest.raises(CallError) as refused:
            await rt.lifecycle_event(Event.START_CONTAINER, WEB, container("b", WEB))
        assert refused.value.message == "nri-cpuset: too late"
        # v0.12 used StartContainer itself; it never had to fall back to StateChange
        assert not conn.fell_back_to_state_change

    scenario(tmp_path, body, handler=handler, version=version)
    assert [c for c in handler.calls if c[0] == "start"] == [
        ("start", "id-a-0123456789"), ("start", "id-b-0123456789")]


@pytest.mark.parametrize("version", ["0.6.1", "0.12.2"])
def test_pod_sandbox_stop_and_removal_reach_the_handler_and_errors_are_answered_ok(
        tmp_path: Path, version: str) -> None:
    events = DEFAULT_EVENTS | {Event.STOP_POD_SANDBOX, Event.REMOVE_POD_SANDBOX}
    handler = RecordingHandler(events)
    handler.fail["pod-removed"] = HandlerError("boom")

    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        conn = await rt.wait_ready()
        await rt.lifecycle_event(Event.STOP_POD_SANDBOX, pod("p"))
        await rt.lifecycle_event(Event.REMOVE_POD_SANDBOX, pod("p"))
        assert not conn.fell_back_to_state_change
        assert await rt.create_container(WEB, container("x", WEB)) is not None  # still served

    scenario(tmp_path, body, handler=handler, version=version)
    assert [c for c in handler.calls if c[0].startswith("pod-")] == [
        ("pod-stopped", "sb-p"), ("pod-removed", "sb-p")]


def test_unknown_methods_and_services_get_unimplemented(tmp_path: Path) -> None:
    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        await rt.wait_ready()
        resp = await rt.call_plugin("ValidateContainerAdjustment")
        assert (resp.status.code, resp.status.message) == (12, "method ValidateContainerAdjustment")
        resp = await rt.call_plugin("Configure", service="nri.pkg.api.v1alpha1.Other")
        assert (resp.status.code, resp.status.message) == (12, "service nri.pkg.api.v1alpha1.Other")
        # a garbage payload for a known method is an invalid argument, not a dead session
        resp = await rt.call_plugin("CreateContainer", b"\x0a\x05ab")
        assert resp.status.code == 3
        assert await rt.create_container(WEB, container("x", WEB)) is not None

    scenario(tmp_path, body)


def test_trace_metadata_from_the_runtime_is_ignored(tmp_path: Path) -> None:
    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        await rt.wait_ready()
        assert await rt.create_container(WEB, container("x", WEB)) is not None

    scenario(tmp_path, body, metadata=[("traceparent", "00-0af7651916cd43dd-b7ad6b71-01")])


def test_a_big_reply_is_framed_so_the_go_reader_accepts_it(tmp_path: Path) -> None:
    handler = RecordingHandler()
    handler.create_updates = [update(f"container-{i:05d}", "0-63") for i in range(2000)]

    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        conn = await rt.wait_ready()
        resp = await rt.create_container(WEB, container("new", WEB))
        assert resp is not None
        assert len(resp.update) == 2000
        assert (1, 4096) in conn.frames_in  # the first frame of the big reply

    scenario(tmp_path, body, handler=handler)  # rt.violations == [] is checked there


def test_slow_handlers_are_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    handler = RecordingHandler()
    handler.delay["create"] = 0.15  # 15 % of a 1 s request timeout

    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        await rt.wait_ready()
        await rt.create_container(WEB, container("x", WEB))

    with caplog.at_level(logging.WARNING, logger="nri_cpuset.nri"):
        scenario(tmp_path, body, handler=handler, request_timeout=1.0)
    [slow] = [r for r in caplog.records if "slow handler" in r.getMessage()]
    assert slow.name == "nri_cpuset.nri"
    assert "on_create_container" in slow.getMessage()
    assert "1000 ms" in slow.getMessage()


def test_shutdown_is_answered_then_the_connection_ends(tmp_path: Path) -> None:
    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        conn = await rt.wait_ready()
        resp = await rt.call_plugin("Shutdown")
        assert resp.status.code == 0
        await rt.wait_closed(conn)
        await rt.wait_ready(count=2)  # an external plugin comes back

    scenario(tmp_path, body)
