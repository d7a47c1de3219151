"""The notices port: the decisions the service tells beyond its log and counters, with the
facts a report about one pod needs (which pod, which container; Kubernetes Events are one).

Called on the event loop, inside hooks, after the decision is committed: an implementation
must return at once (queue, never send) and must never raise, since a failure to tell of a
placement must not undo or fail it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from cpuset_core import AdmissionError, ContainerFacts, CPUSet, Plan, PodFacts, Topology
from cpuset_core.ledger import Entry, Ledger
from cpuset_core.verify import Mismatch


class Notices(Protocol):
    """Receives the decisions worth telling about one pod."""

    def admitted(self, pod: PodFacts, container: ContainerFacts, plan: Plan,
                 topology: Topology) -> None:
        """``container`` was created where the committed ``plan`` places it, moving
        ``plan.moves`` (integer containers off the CPUs its pin takes)."""
        ...

    def resized(self, container_id: str, plan: Plan, topology: Topology) -> None:
        """A running container's resize was committed (``plan.base`` holds it before)."""
        ...

    def resize_refused(self, container_id: str, error: AdmissionError) -> None:
        """A running container's resize was refused; nothing changed."""
        ...

    def synchronized(self, pods: Sequence[PodFacts], containers: Sequence[ContainerFacts],
                     ledger: Ledger) -> None:
        """The state was rebuilt from the runtime's report of these pods and containers into
        ``ledger`` (which may keep containers the report does not list: a lagging report)."""
        ...

    def drift_repaired(self, repaired: Sequence[Mismatch]) -> None:
        """A verifier pass shows these containers, found off their placement, back on it."""
        ...

    def gave_back(self, container_id: str, entry: Entry, why: str) -> None:
        """A container not seen to start will not run: ``entry`` (what it held) is released
        on the start rule's ``why``."""
        ...

    def quiet_repaired(self, holders: Mapping[str, CPUSet], what: str,
                       repaired: Sequence[str]) -> None:
        """Files kept quiet for these containers (``holders``: each one's CPUs quiet for
        ``what``) were found changed back and rewritten (``what``: ``irq``, ``idle``,
        ``governor``; ``irqbalance``: a daemon told again)."""
        ...


class _NoNotices:
    """Tells nothing: the default (events off, tests, dry runs)."""

    def admitted(self, pod: PodFacts, container: ContainerFacts, plan: Plan,
                 topology: Topology) -> None:
        pass

    def resized(self, container_id: str, plan: Plan, topology: Topology) -> None:
        pass

    def resize_refused(self, container_id: str, error: AdmissionError) -> None:
        pass

    def synchronized(self, pods: Sequence[PodFacts], containers: Sequence[ContainerFacts],
                     ledger: Ledger) -> None:
        pass

    def drift_repaired(self, repaired: Sequence[Mismatch]) -> None:
        pass

    def gave_back(self, container_id: str, entry: Entry, why: str) -> None:
        pass

    def quiet_repaired(self, holders: Mapping[str, CPUSet], what: str,
                       repaired: Sequence[str]) -> None:
        pass


NO_NOTICES: Notices = _NoNotices()
