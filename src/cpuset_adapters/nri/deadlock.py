"""NRI before v0.12.1's lock inversion (containerd#13733, decision 51): which runtimes a call of
the plugin's own can deadlock (:func:`locks_are_safe`), and the sign that one has
(:class:`UnansweredRegistrations`: the runtime silent after such a call was dropped)."""

from __future__ import annotations

import logging

_logger = logging.getLogger("nri_cpuset.nri")

WEDGED_AFTER = 3
"""Unanswered registrations in a row, after an unanswered UpdateContainers of the plugin's
own, that make the plugin say the runtime's NRI is most likely deadlocked."""


def locks_are_safe(nri_version: str) -> bool:
    """Whether UpdateContainers may overlap an event on this runtime. NRI before v0.12.1 (all of
    containerd 1.7) holds its adaptation lock across UpdateContainers and takes it to deliver
    events, while containerd holds its own NRI lock across both in the other order: a call that
    overlaps the start of an event can deadlock the two locks for good — dropping the
    connection frees neither, only a containerd restart does (containerd#13733, decision 51;
    fact sheet §6.3). ``nri_version`` is Configure's (``""`` before v0.12)."""
    parts = nri_version.lstrip("v").split(".")
    try:
        version = tuple(int(p.split("-")[0]) for p in parts[:3])
    except ValueError:
        return False
    return len(version) == 3 and version >= (0, 12, 1)


class UnansweredRegistrations:
    """Registrations left unanswered since a call of the plugin's own was dropped unanswered
    (none counted before such a drop, nor after a registration is answered)."""

    def __init__(self) -> None:
        self._since_drop: int | None = None

    def call_dropped(self) -> None:
        """An UpdateContainers call of the plugin's own went unanswered: start counting."""
        self._since_drop = 0

    def answered(self) -> None:
        """A registration was answered: the runtime's NRI is alive."""
        self._since_drop = None

    def unanswered(self) -> None:
        """Say once, plainly, what an operator must do when the runtime's NRI stays silent
        after a call of ours went unanswered: the lock inversion of NRI before v0.12.1 is
        permanent, and no reconnection can free it (decision 51)."""
        if self._since_drop is None:
            return
        self._since_drop += 1
        if self._since_drop == WEDGED_AFTER:
            _logger.error(
                "the runtime has answered no RegisterPlugin (%d tries) since an UpdateContainers "
                "call of the plugin's own went unanswered: its NRI is most likely deadlocked "
                "(NRI before v0.12.1, containerd#13733); no container can start on this node "
                "until the runtime restarts (systemctl restart containerd), and the plugin "
                "reconnects and synchronizes by itself then", WEDGED_AFTER)
