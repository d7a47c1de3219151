"""Decision events: one log record per admission, rejection, move, release, resize or update,
written once by the service, as an event name plus fields; the renderer formats them (console
``key=value``, or JSON keys).

The fields (:data:`FIELDS`): ``container`` (``namespace/pod/container``), ``id`` (the first 12
characters of the container id), ``kind``, ``cpus``, ``mems`` (``default`` when left alone) and
``reason``; an event may add its own (``source``, ``updates``, ``previous``, ...).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from cpuset_core import ContainerUpdate, CPUSet, Kind

FIELDS = ("container", "id", "kind", "cpus", "mems", "reason")

log = logging.getLogger("nri_cpuset.decisions")


def short_id(container_id: str) -> str:
    return container_id[:12]


def subjects(updates: Sequence[ContainerUpdate]) -> str:
    """A batch's containers for its one log line: ``ns/pod/container (short id), ...``."""
    return ", ".join(f"{u.subject} ({short_id(u.container_id)})" for u in updates)


def mems_text(mems: CPUSet | None) -> str:
    return "default" if mems is None else str(mems)


def decision(level: int, event: str, *, container: str, container_id: str, kind: Kind | None,
             cpus: CPUSet | None, mems: CPUSet | None, reason: str,
             **more: object) -> None:
    """Log one decision. ``kind`` is ``None`` only when it could not be told (logged as
    ``""``), ``cpus`` ``None`` when nothing was placed (a rejection)."""
    if not log.isEnabledFor(level):
        return
    log.log(level, event, extra={
        "container": container, "id": short_id(container_id),
        "kind": kind.value if kind is not None else "",
        "cpus": str(cpus) if cpus is not None else "",
        "mems": mems_text(mems) if cpus is not None else "",
        "reason": reason, **more})


def updated(update: ContainerUpdate) -> None:
    """One live update that reached, or rides to, the runtime: at debug, one per container
    (whoever sent it logs the batch or the answer)."""
    decision(logging.DEBUG, "update", container=update.subject,
             container_id=update.container_id, kind=update.kind, cpus=update.cpus,
             mems=update.mems, reason=update.reason)
