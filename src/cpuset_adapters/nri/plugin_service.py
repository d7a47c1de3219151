"""The ``Plugin`` service a plugin serves on mux conn 1: decoding each runtime call, asking the
:class:`~cpuset_adapters.nri.handler_port.NriHandler`, and encoding the answer. No I/O: the
session feeds it requests and writes its replies.

The protocol rules it owns (fact sheet §3.5, §4.3-§4.6, §6):

* the subscription mask is exactly the handler's events and never 0, which means "all";
* Synchronize chunks (``more``) are accumulated and each answered ``{more: true}`` with no
  updates; the handler sees everything at once on the last chunk;
* the runtime only logs errors for stop, remove, StateChange and the v0.12 per-event RPCs, but
  stops calling later plugins at the first error, so those are always answered OK — except a
  start (per-event RPC or StateChange), whose error fails the container's start (§6: "NRI
  container start failed", then a StopContainer), which is what a refused start must do;
* every v0.12 per-event RPC is implemented, so the runtime never falls back to StateChange for
  some events and not others; unknown methods and services get UNIMPLEMENTED;
* handler errors become error statuses (HandlerError: UNKNOWN, like a Go plugin's error;
  anything else: INTERNAL, logged with its traceback), never a crash;
* handler calls slower than 10 % of the runtime's request timeout are logged
  (:mod:`~cpuset_adapters.nri.handler_calls`), except a late Synchronize's (its error says);
* every call to a served method is reported to the :class:`Observer` (start, then ``ok`` or
  ``error``), the one place hooks are timed for metrics and ``/healthz``."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from cpuset_adapters.grpc_status import StatusCode
from cpuset_adapters.nri.handler_calls import HandlerFailedError, HandlerTime, invoke
from cpuset_adapters.nri.handler_port import Event, NriHandler, RuntimeInfo
from cpuset_adapters.nri.payload import decode, encode
from cpuset_adapters.nri.proto import nri_pb2 as pb
from cpuset_adapters.nri.subscription import subscription_mask
from cpuset_adapters.nri.ttrpc import RequestEnvelope, RpcError
from cpuset_adapters.nri.ttrpc_server import Reply
from cpuset_service.observer import NO_HOOK_OBSERVER, HookObserver

_logger = logging.getLogger("nri_cpuset.nri")

PLUGIN_SERVICE = "nri.pkg.api.v1alpha1.Plugin"

DEFAULT_REQUEST_TIMEOUT_MS = 2000
"""The runtime's request timeout when Configure does not say (NRI before v0.7.0)."""

LATE_SYNC_FRACTION = 0.9
"""A Synchronize answered after this fraction of the runtime's request timeout is taken as
late. The runtime's deadline started before it sent the first chunk, the plugin's clock when it
arrived: the margin covers the transit, and a needless reconnection only costs a re-sync."""

# v0.12 per-event RPCs that carry nothing the handler acts on: answered OK.
_ACKNOWLEDGED = ("RunPodSandbox", "PostUpdatePodSandbox", "PostCreateContainer")
_LOGGED_ONLY = {"PostStartContainer": "on_post_start_container",
                "PostUpdateContainer": "on_post_update_container",
                "RemoveContainer": "on_remove_container"}
"""Container events whose errors the runtime only logs, by method → handler hook: answered OK
(the runtime stops calling later plugins at an error)."""
_STATE_CHANGES = {Event.POST_START_CONTAINER.value: "PostStartContainer",
                  Event.POST_UPDATE_CONTAINER.value: "PostUpdateContainer",
                  Event.REMOVE_CONTAINER.value: "RemoveContainer"}


@dataclass(eq=False)
class ConnectionState:
    """What the service remembers about one runtime connection."""

    configured: bool = False
    synchronized: bool = False
    request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS
    sync_pods: list[pb.PodSandbox] = field(default_factory=list)
    sync_containers: list[pb.Container] = field(default_factory=list)
    sync_started: float | None = None
    """``time.monotonic()`` when this Synchronize's first chunk arrived."""


class PluginService:
    """Answers the runtime's Plugin-service calls for ``handler``."""

    def __init__(self, handler: NriHandler, observer: HookObserver = NO_HOOK_OBSERVER) -> None:
        self._handler = handler
        self._observer = observer
        self._methods: dict[str, Callable[[ConnectionState, bytes], Reply]] = {
            "Configure": self._configure,
            "Synchronize": self._synchronize,
            "Shutdown": self._shutdown,
            "CreateContainer": self._create_container,
            "UpdateContainer": self._update_container,
            "StopContainer": self._stop_container,
            "StateChange": self._state_change,
            "StartContainer": self._start_container,
            "PostStartContainer": self._post_start_container,
            "PostUpdateContainer": self._post_update_container,
            "RemoveContainer": self._remove_container,
            "StopPodSandbox": self._stop_pod_sandbox,
            "RemovePodSandbox": self._remove_pod_sandbox,
        }
        for method in _ACKNOWLEDGED:
            self._methods[method] = self._acknowledge
        self.last_answer = 0.0
        """``time.monotonic()`` when the last runtime call was answered (0: never)."""

    def handle(self, state: ConnectionState, request: RequestEnvelope) -> Reply:
        """The reply to one request; raises :class:`RpcError` for an undecodable request."""
        if request.service != PLUGIN_SERVICE:
            return Reply.error(StatusCode.UNIMPLEMENTED, f"service {request.service}")
        method = self._methods.get(request.method)
        if method is None:
            _logger.debug("runtime called unknown method %s: UNIMPLEMENTED", request.method)
            return Reply.error(StatusCode.UNIMPLEMENTED, f"method {request.method}")
        # Only served methods are observed: their names are a fixed, low-cardinality set.
        token = self._observer.hook_started(request.method, state.request_timeout_ms)
        reply: Reply | None = None
        try:
            reply = method(state, request.payload)
        finally:
            self.last_answer = time.monotonic()
            ok = reply is not None and reply.code == StatusCode.OK
            self._observer.hook_finished(token, "ok" if ok else "error")
        return reply

    # -- configuration and synchronization --

    def _configure(self, state: ConnectionState, payload: bytes) -> Reply:
        req = decode(pb.ConfigureRequest(), payload)
        info = RuntimeInfo(config=req.config, runtime_name=req.runtime_name,
                           runtime_version=req.runtime_version, nri_version=req.NRI_version,
                           registration_timeout_ms=req.registration_timeout,
                           request_timeout_ms=req.request_timeout)
        if req.request_timeout > 0:
            state.request_timeout_ms = req.request_timeout
        try:
            events = invoke("on_configure", state.request_timeout_ms,
                            lambda: self._configured(info))
            mask = subscription_mask(events)
        except HandlerFailedError as failed:
            _logger.error("Configure refused: %s", failed.message)
            return Reply.error(failed.code, failed.message, close_after=True)
        except ValueError as exc:
            _logger.error("the handler's subscription is invalid: %s", exc)
            return Reply.error(StatusCode.INVALID_ARGUMENT, str(exc), close_after=True)
        state.configured = True
        _logger.info("configured by %s %s (NRI %s); subscribed to %s (mask 0x%x)",
                     info.runtime_name or "runtime", info.runtime_version,
                     info.nri_version or "before v0.12",
                     ", ".join(sorted(e.name for e in events)), mask)
        return Reply(encode(pb.ConfigureResponse(events=mask)))

    def _configured(self, info: RuntimeInfo) -> frozenset[Event]:
        self._handler.on_configure(info)
        return self._handler.subscribed_events()

    def _synchronize(self, state: ConnectionState, payload: bytes) -> Reply:
        req = decode(pb.SynchronizeRequest(), payload)
        if state.sync_started is None:
            state.sync_started = time.monotonic()
        state.sync_pods.extend(req.pods)
        state.sync_containers.extend(req.containers)
        if req.more:
            # An intermediate chunk: anything but {more: true} makes the runtime close us.
            return Reply(encode(pb.SynchronizeResponse(more=True)))
        pods, containers = state.sync_pods, state.sync_containers
        state.sync_pods, state.sync_containers = [], []
        # The handler's time is logged below: a late answer's error line says it too.
        times: list[HandlerTime] = []
        try:
            updates = invoke("on_synchronize", state.request_timeout_ms,
                             lambda: self._handler.on_synchronize(pods, containers),
                             report=times.append)
        except HandlerFailedError as failed:
            # v0.6.1 would keep the connection but never send events: end it and sync anew.
            # One line, with the handler's time when it was slow.
            _logger.error("Synchronize failed: %s%s; dropping the connection", failed.message,
                          times[0].if_slow())
            return Reply.error(failed.code, failed.message, close_after=True)
        [handler_time] = times
        state.synchronized = True  # the service logged the rebuild ("synchronized")
        took_ms = (time.monotonic() - state.sync_started) * 1000.0
        state.sync_started = None
        budget_ms = state.request_timeout_ms
        if took_ms >= LATE_SYNC_FRACTION * budget_ms:
            # Past the runtime's deadline it has dropped this answer and left the plugin out:
            # v0.12 closes the connection, v0.6.1 keeps it open and sends no event again, which
            # would leave every later container unplaced (seen under emulation, 2026-11-29).
            _logger.error("Synchronize answered after %.0f ms, %.0f %% of the runtime's %d ms "
                          "request timeout (%s took %.1f ms): the runtime has left the plugin "
                          "out; dropping the connection to register and be synchronized again",
                          took_ms, 100.0 * took_ms / budget_ms, budget_ms, handler_time.what,
                          handler_time.elapsed_ms)
            return Reply(encode(pb.SynchronizeResponse(update=updates)), close_after=True)
        handler_time.log_if_slow()
        return Reply(encode(pb.SynchronizeResponse(update=updates)))

    def _shutdown(self, _state: ConnectionState, _payload: bytes) -> Reply:
        _logger.info("runtime asked the plugin to shut down")
        return Reply(close_after=True)

    # -- container events --

    def _create_container(self, state: ConnectionState, payload: bytes) -> Reply:
        req = decode(pb.CreateContainerRequest(), payload)
        try:
            adjust, updates = invoke(
                "on_create_container", state.request_timeout_ms,
                lambda: self._handler.on_create_container(req.pod, req.container))
        except HandlerFailedError as failed:
            return Reply.error(failed.code, failed.message)
        response = pb.CreateContainerResponse(update=updates)
        if adjust is not None:
            response.adjust.CopyFrom(adjust)
        return Reply(encode(response))

    def _update_container(self, state: ConnectionState, payload: bytes) -> Reply:
        req = decode(pb.UpdateContainerRequest(), payload)
        try:
            updates = invoke(
                "on_update_container", state.request_timeout_ms,
                lambda: self._handler.on_update_container(req.pod, req.container,
                                                          req.linux_resources))
        except HandlerFailedError as failed:
            return Reply.error(failed.code, failed.message)
        return Reply(encode(pb.UpdateContainerResponse(update=updates)))

    def _stop_container(self, state: ConnectionState, payload: bytes) -> Reply:
        try:
            req = decode(pb.StopContainerRequest(), payload)
            updates = invoke(
                "on_stop_container", state.request_timeout_ms,
                lambda: self._handler.on_stop_container(req.pod, req.container))
        except (HandlerFailedError, RpcError) as exc:
            _logger.warning("StopContainer: %s (answered OK)", exc)
            return Reply(encode(pb.StopContainerResponse()))
        return Reply(encode(pb.StopContainerResponse(update=updates)))

    def _state_change(self, state: ConnectionState, payload: bytes) -> Reply:
        try:
            req = decode(pb.StateChangeEvent(), payload)
        except RpcError as exc:
            _logger.warning("StateChange: %s (answered OK)", exc)
            return Reply()
        event = int(req.event)
        if event == Event.START_CONTAINER.value and req.HasField("container"):
            return self._started(state, req.pod, req.container)
        if event in _STATE_CHANGES and req.HasField("container"):
            self._logged_only(state, _STATE_CHANGES[event], req.pod, req.container)
        elif event in (Event.STOP_POD_SANDBOX.value, Event.REMOVE_POD_SANDBOX.value):
            self._pod_gone(state, req.pod, removed=event == Event.REMOVE_POD_SANDBOX.value)
        return Reply()

    def _start_container(self, state: ConnectionState, payload: bytes) -> Reply:
        req = decode(pb.StartContainerRequest(), payload)
        return self._started(state, req.pod, req.container)

    def _started(self, state: ConnectionState, pod: pb.PodSandbox,
                 container: pb.Container) -> Reply:
        """The one event besides creation and update whose error the runtime acts on: the
        start fails (and the runtime stops the container)."""
        try:
            invoke("on_start_container", state.request_timeout_ms,
                   lambda: self._handler.on_start_container(pod, container))
        except HandlerFailedError as failed:
            return Reply.error(failed.code, failed.message)
        return Reply()

    def _post_start_container(self, state: ConnectionState, payload: bytes) -> Reply:
        req = decode(pb.PostStartContainerRequest(), payload)
        self._logged_only(state, "PostStartContainer", req.pod, req.container)
        return Reply(encode(pb.PostStartContainerResponse()))

    def _post_update_container(self, state: ConnectionState, payload: bytes) -> Reply:
        req = decode(pb.PostUpdateContainerRequest(), payload)
        self._logged_only(state, "PostUpdateContainer", req.pod, req.container)
        return Reply(encode(pb.PostUpdateContainerResponse()))

    def _logged_only(self, state: ConnectionState, event: str, pod: pb.PodSandbox,
                     container: pb.Container) -> None:
        hook = _LOGGED_ONLY[event]
        call = getattr(self._handler, hook)
        try:  # the runtime only logs a post-event's error
            invoke(hook, state.request_timeout_ms, lambda: call(pod, container))
        except HandlerFailedError as failed:
            _logger.warning("%s %s: %s (answered OK)", event, container.id, failed.message)

    def _remove_container(self, state: ConnectionState, payload: bytes) -> Reply:
        try:
            req = decode(pb.RemoveContainerRequest(), payload)
        except RpcError as exc:
            _logger.warning("RemoveContainer: %s (answered OK)", exc)
            return Reply()
        self._logged_only(state, "RemoveContainer", req.pod, req.container)
        return Reply()

    def _stop_pod_sandbox(self, state: ConnectionState, payload: bytes) -> Reply:
        return self._pod_event(state, pb.StopPodSandboxRequest(), payload, removed=False)

    def _remove_pod_sandbox(self, state: ConnectionState, payload: bytes) -> Reply:
        return self._pod_event(state, pb.RemovePodSandboxRequest(), payload, removed=True)

    def _pod_event(self, state: ConnectionState,
                   request: pb.StopPodSandboxRequest | pb.RemovePodSandboxRequest,
                   payload: bytes, *, removed: bool) -> Reply:
        try:
            req = decode(request, payload)
        except RpcError as exc:
            _logger.warning("%s: %s (answered OK)", type(request).__name__, exc)
            return Reply()
        self._pod_gone(state, req.pod, removed=removed)
        return Reply(encode(pb.RemovePodSandboxResponse() if removed
                            else pb.StopPodSandboxResponse()))

    def _pod_gone(self, state: ConnectionState, pod: pb.PodSandbox, *, removed: bool) -> None:
        # The runtime only logs errors here, and stops calling later plugins at the first one.
        try:
            invoke("on_pod_sandbox_gone", state.request_timeout_ms,
                   lambda: self._handler.on_pod_sandbox_gone(pod, removed=removed))
        except HandlerFailedError as failed:
            _logger.warning("pod %s: %s (answered OK)", pod.id, failed.message)

    def _acknowledge(self, _state: ConnectionState, _payload: bytes) -> Reply:
        return Reply()
