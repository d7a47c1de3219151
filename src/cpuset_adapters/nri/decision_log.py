"""Decision log events: one log record per admission, rejection, move, release or update, whose
message names the container and whose ``extra`` fields carry the same facts for JSON logs.

The fields (:data:`FIELDS`): ``action``, ``container`` (``namespace/pod/container``), ``id``
(the first 12 characters of the container id), ``kind``, ``cpus``, ``mems`` (``default`` when
left alone) and ``reason``.
"""

from __future__ import annotations

import logging

from cpuset_core import CPUSet, Kind

FIELDS = frozenset({"action", "container", "id", "kind", "cpus", "mems", "reason"})


def short_id(container_id: str) -> str:
    return container_id[:12]


def mems_text(mems: CPUSet | None) -> str:
    return "default" if mems is None else str(mems)


def decision(logger: logging.Logger, level: int, message: str, *, action: str, container: str,
             container_id: str, kind: Kind | None, cpus: CPUSet | None, mems: CPUSet | None,
             reason: str) -> None:
    """Log one decision: ``message`` for people, the fields for machines. ``kind`` is ``None``
    only when it could not be told (logged as ``""``), ``cpus`` ``None`` when nothing was
    placed (a rejection)."""
    if not logger.isEnabledFor(level):
        return
    logger.log(level, message, extra={
        "action": action, "container": container, "id": short_id(container_id),
        "kind": kind.value if kind is not None else "",
        "cpus": str(cpus) if cpus is not None else "",
        "mems": mems_text(mems) if cpus is not None else "",
        "reason": reason})
