"""Containers created and not started, as time goes (``cpuset_core.starts``): one holds what it
was given within the plugin's start grace (``Node.grace``), and nothing once the grace has
passed — before the plugin refuses anything for want of room it asks the runtime and gives back
what such a container holds, so an admission must then count it free, and its start watch gives
the CPUs back within ``slack`` after the grace anyway. Close to the grace's end the plugin may
count it either way (its clock starts when containerd created the container, a little before
the soak's): both are allowed there.

Judged on the node's clock (``Node.clock``) at the moment of asking: :func:`judged` for what the
plugin may answer, :func:`expire` and :func:`undecided` when the node settles.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from cpuset_core.cpuset import CPUSet

from .model import CREATED, EXPIRED, Container, Node
from .prediction import Prediction


def age(node: Node, container: Container) -> float:
    """Seconds since ``container``'s CreateContainer returned."""
    return node.clock() - container.created_at


def judged(node: Node, predict: Callable[[], Prediction]) -> Prediction:
    """``predict()`` as the plugin may answer now: a created container whose grace has passed
    holds nothing; one within ``margin`` of its grace's end may hold its CPUs or not."""
    grace = node.grace
    created = node.created()
    ended = [c for c in created if age(node, c) >= grace.seconds]
    near = [c for c in created if grace.seconds - grace.margin <= age(node, c) < grace.seconds]
    with _set_aside(ended):
        held = predict()
        if not near:
            return held
        with _set_aside(near):
            return held.either(predict())


@contextmanager
def _set_aside(containers: Sequence[Container]) -> Iterator[None]:
    """``containers`` hold nothing for the prediction's time."""
    for container in containers:
        container.state = EXPIRED
    try:
        yield
    finally:
        for container in containers:
            container.state = CREATED


def expire(node: Node) -> list[Container]:
    """The created containers whose grace ended ``slack`` ago or more: the plugin has given
    their CPUs back, and they hold nothing from now on (returned)."""
    grace = node.grace
    gone = [c for c in node.created() if age(node, c) >= grace.seconds + grace.slack]
    for container in gone:
        container.state = EXPIRED
    return gone


def undecided(node: Node) -> list[Container]:
    """The created containers the plugin may hold or not now: from ``margin`` before their
    grace's end until ``slack`` after it."""
    grace = node.grace
    return [c for c in node.created()
            if grace.seconds - grace.margin <= age(node, c) < grace.seconds + grace.slack]


def decided_by(node: Node) -> float:
    """When (``Node.clock``) every created container undecided now is decided (0.0: none)."""
    grace = node.grace
    return max((c.created_at + grace.seconds + grace.slack for c in undecided(node)),
               default=0.0)


def owned(document: Mapping[str, Any], container_id: str) -> CPUSet:
    """The exclusive CPUs the plugin's state document says ``container_id`` owns (a mixed
    container's own part: its ``cpus`` are those and the pool)."""
    owners = document.get("exclusive") or {}
    return CPUSet(int(cpu) for cpu, owner in owners.items() if owner == container_id)


def given(document: Mapping[str, Any], container_id: str) -> CPUSet | None:
    """The CPUs the plugin's state document (``inspect -o json``) says ``container_id`` holds
    (None when it does not list it)."""
    for entry in document.get("containers", []):
        if entry.get("id") == container_id:
            return CPUSet.parse(str(entry.get("cpus") or ""), allow_empty=True)
    return None
