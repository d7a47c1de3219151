"""What differs between the NRI versions the double can be (§0, §4, §7)."""

from __future__ import annotations

from dataclasses import dataclass

from tests.support.nri_runtime.framing import TTRPC_MAX


@dataclass(frozen=True)
class Profile:
    """What differs between NRI versions, as the runtime behaves (§0, §4, §7)."""

    nri: str
    runtime_version: str
    sends_timeouts: bool
    sends_nri_version: bool
    valid_events: int
    chunks_sync: bool
    per_event_rpcs: bool
    checks_name: bool
    syncs_preinstalled: bool
    send_limit: int | None  # ttrpc refuses to send more (None: 1.2.5 does not check)
    keeps_unsynced: bool = False
    """A Synchronize that fails or times out leaves the plugin out of the runtime's list with
    its connection open: no event reaches it again (v0.6.1, §4.1 step 5; v0.12 closes it)."""


PROFILES = {
    "0.6.1": Profile(
        nri="0.6.1", runtime_version="v1.7.24", sends_timeouts=False, sends_nri_version=False,
        valid_events=0x7FF, chunks_sync=False, per_event_rpcs=False, checks_name=False,
        syncs_preinstalled=False, send_limit=None, keeps_unsynced=True),
    "0.8.0": Profile(
        nri="0.8.0", runtime_version="v2.1.4", sends_timeouts=True, sends_nri_version=False,
        valid_events=0x7FF, chunks_sync=True, per_event_rpcs=False, checks_name=False,
        syncs_preinstalled=True, send_limit=TTRPC_MAX),
    "0.12.2": Profile(
        nri="0.12.2", runtime_version="v2.4.0", sends_timeouts=True, sends_nri_version=True,
        valid_events=0x3FFF, chunks_sync=True, per_event_rpcs=True, checks_name=True,
        syncs_preinstalled=True, send_limit=TTRPC_MAX),
}

# v0.12 per-event RPCs (§4.3/§5.2): event -> (method, request carries a container)
PER_EVENT_RPC = {
    1: ("RunPodSandbox", False), 13: ("PostUpdatePodSandbox", False),
    2: ("StopPodSandbox", False), 3: ("RemovePodSandbox", False),
    5: ("PostCreateContainer", True), 6: ("StartContainer", True),
    7: ("PostStartContainer", True), 9: ("PostUpdateContainer", True),
    11: ("RemoveContainer", True),
}
