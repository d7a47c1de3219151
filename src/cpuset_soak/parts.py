"""What the soak's operations touch, each part by its role: small Protocols that the lab's node
(``node``, ``plugin``, ``kubelet``) and the runner implement and unit tests fake, the model
shared under one lock, and the pace of every wait. An operation's signature names the parts it
uses; ``dispatch`` hands each kind exactly those.

- ``Kubelet``: CRI calls on the lab's containerd, as a kubelet makes them;
- ``Model``: who should own what (``model.Node``), under the lock a burst's workers share;
- ``Recorder``: outcomes for a violation's report, violations, the closing line's counts;
- ``Checks``: the kernel read between operations;
- ``Plugin`` / ``PluginView`` / ``PluginControls``: the plugin as operations see it (with its
  state document), and as faults handle it;
- ``Runtime``: containerd and runc as faults handle them;
- ``Background``: work beside the next operations (the status hammer);
- ``Pace``: how long waits are (an emulated guest's are longer), the plugin's start grace.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

from cpuset_adapters.cri.results import ContainerInfo, Resources

from .model import Grace, Node, Pod

REQUEST_TIMEOUT: Final = 2.0
"""The runtime's NRI request timeout the lab configures (seconds, times the pace's scale)."""
START_GRACE: Final = 10.0
"""The plugin's ``runtime.start_grace`` in the soak (seconds, times the pace's scale): short,
so that walks cross it."""
GRACE_MARGIN: Final = 2.0
"""Seconds (times the scale) before a grace's end when the plugin may count it ended: its
clock starts when containerd created the container, the soak's once CreateContainer returned."""
GRACE_SLACK: Final = 3.0
"""Seconds (times the scale) after a grace's end by which the plugin's start watch (a look
every 0.5 s) has given the CPUs back."""


@dataclass(frozen=True, slots=True)
class Model:
    """The model of the node and the lock that guards it: operations, a burst's workers and
    the runner's checks read and change it from several threads."""

    node: Node
    lock: threading.RLock = field(default_factory=threading.RLock)


@dataclass(frozen=True, slots=True)
class Pace:
    """Every wait ``scale`` times longer (``--time-scale``; an emulated VM lab guest: 8)."""

    scale: float = 1.0

    def seconds(self, seconds: float) -> float:
        return seconds * self.scale

    @property
    def request_timeout(self) -> float:
        """The runtime's NRI request timeout, as the lab configures it."""
        return REQUEST_TIMEOUT * self.scale

    @property
    def start_grace(self) -> int:
        """The plugin's ``runtime.start_grace`` (whole seconds, as its configuration takes)."""
        return max(1, round(START_GRACE * self.scale))

    def grace(self) -> Grace:
        """The start grace as the model judges it."""
        return Grace(seconds=self.start_grace, margin=self.seconds(GRACE_MARGIN),
                     slack=self.seconds(GRACE_SLACK))


@dataclass(frozen=True, slots=True)
class Started:
    """A container the runtime started: its process and where its cgroup is."""

    pid: int
    cgroups_path: str


class Kubelet(Protocol):
    """The soak's kubelet: CRI calls on the lab's containerd. It remembers the pods and
    containers it made (the end checks that none of their cgroups is left)."""

    def run_pod(self, pod: Pod) -> None:
        """Run ``pod``'s sandbox with a fresh uid (its annotation, QoS cgroup parent and
        runtime handler); sets ``pod.uid`` and ``pod.pod_id``. Raises ``CriError``."""
        ...

    def create(self, pod_id: str, name: str, resources: Resources,
               command: list[str] | None = None, *, attempt: int = 0) -> str:
        """CreateContainer in ``pod_id`` (``attempt``: the kubelet's restart count of
        ``name``); its id. A refusal raises ``CriError``."""
        ...

    def start(self, container_id: str) -> Started:
        """StartContainer; a start that fails raises ``CriError``."""
        ...

    def state(self, container_id: str) -> str:
        """``CONTAINER_RUNNING``, ``CONTAINER_EXITED``, ..."""
        ...

    def list_containers(self, pod_id: str | None = None, *,
                        state: str | None = None) -> list[ContainerInfo]: ...

    def stop(self, container_id: str) -> None: ...

    def remove(self, container_id: str) -> None:
        """RemoveContainer (the kubelet's garbage collection of a dead instance)."""
        ...

    def delete_pod(self, pod_id: str) -> None:
        """StopPodSandbox, then RemovePodSandbox."""
        ...

    def update_resources(self, container_id: str, resources: Resources | None = None, *,
                         cpuset_cpus: str = "") -> None: ...


class Recorder(Protocol):
    """Where operations say what happened; safe from several threads."""

    def outcome(self, text: str) -> None:
        """What an operation did, for a violation's report (the last 30 lines)."""
        ...

    def violation(self, text: str) -> None:
        """An invariant broken: the run stops after the operation."""
        ...

    def fault(self, kind: str) -> None:
        """A fault carried out, counted by kind."""
        ...

    def refusal(self, reason: str) -> None:
        """A typed refusal of the plugin, counted by reason."""
        ...

    def counted(self, kind: str) -> None:
        """Counted with the operations, not one: a status read, a container lost with the
        runtime."""
        ...

    def admitted(self, kind: str) -> None:
        """A container the plugin admitted, counted by the model's kind (``model``)."""
        ...


class Checks(Protocol):
    """The kernel, read between operations."""

    def refresh_integers(self) -> None:
        """Where the integer containers run now (the model predicts pins' moves from it)."""
        ...

    def check_always(self) -> None:
        """The always-invariants on a fresh kernel view; what breaks one is a violation."""
        ...


class StatusDocument(Protocol):
    def state(self) -> dict[str, Any]:
        """The plugin's state document, as ``nri-cpuset inspect -o json`` prints it; raises
        ``OSError`` when the plugin does not answer."""
        ...


class Plugin(Protocol):
    """The plugin as pod operations see it."""

    up: bool
    """Whether it answers the runtime now (killed, stopped or reconnecting: not); what the
    runtime does while it does not is corrected later, not judged."""

    def refused(self, container_id: str) -> bool:
        """Whether its log holds a ``reject`` for the container."""
        ...


class PluginView(Plugin, StatusDocument, Protocol):
    """The plugin as operations that read its state document see it."""


class PluginControls(PluginView, Protocol):
    """The plugin as faults handle it."""

    @property
    def status_socket(self) -> Path: ...

    def kill(self) -> None:
        """kill -9; it no longer answers."""
        ...

    def restart(self) -> None:
        """Start it again; returns after its first Synchronize, answering."""
        ...

    def pause(self) -> None:
        """SIGSTOP; it no longer answers."""
        ...

    def resume(self) -> None:
        """SIGCONT (whether it answers again is for the caller to find out)."""
        ...

    def synchronizations(self) -> int:
        """How many Synchronize its log shows, over every process."""
        ...

    def reload(self, namespaces: tuple[str, ...]) -> None:
        """Rewrite its configuration with ``pinning.namespaces`` and SIGHUP it."""
        ...

    def reloads(self) -> int:
        """How many reloads its log shows applied (or found unchanged)."""
        ...


class Runtime(Protocol):
    """containerd and runc as faults handle them."""

    def restart(self) -> None:
        """Restart containerd; returns once the plugin has reconnected."""
        ...

    def refuse_updates(self, container_id: str) -> None:
        """runc (the ``runc-faulty`` handler) refuses the container's updates from now on."""
        ...

    def allow_updates(self, container_id: str) -> None: ...


class Background(Protocol):
    def start(self, work: Callable[[], None]) -> None:
        """Run ``work`` beside the next operations; the node settles after it is done."""
        ...
