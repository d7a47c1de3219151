"""What happened to each live container, oldest first, bounded (``explain`` shows it)."""

from __future__ import annotations

from collections.abc import Iterable

HISTORY_LIMIT = 20
"""Events remembered per container: enough to explain it, bounded for long-lived nodes."""


class History:
    """Per-container event lines."""

    def __init__(self, limit: int = HISTORY_LIMIT) -> None:
        self._limit = limit
        self._events: dict[str, list[str]] = {}

    def remember(self, container_id: str, event: str) -> None:
        events = self._events.setdefault(container_id, [])
        events.append(event)
        del events[:-self._limit]

    def restart(self, container_id: str, event: str) -> None:
        """Forget the container's past (it is created anew) and remember ``event``."""
        self._events.pop(container_id, None)
        self.remember(container_id, event)

    def forget(self, container_id: str) -> None:
        self._events.pop(container_id, None)

    def keep_only(self, container_ids: Iterable[str]) -> None:
        """Drop every container not in ``container_ids`` (a rebuild found them gone)."""
        keep = set(container_ids)
        self._events = {cid: events for cid, events in self._events.items() if cid in keep}

    def __contains__(self, container_id: object) -> bool:
        return container_id in self._events

    def __bool__(self) -> bool:
        return bool(self._events)

    def copy(self) -> dict[str, list[str]]:
        return {cid: list(events) for cid, events in self._events.items()}
