"""The CFS quota a container's own cgroup runs with (decision 44).

A container with exclusive CPUs is bounded by its cpuset: nothing else runs there, so a CFS
quota of the same size buys nothing and throttles it in bursts (the quota is spent per period
across CPUs, in slices). The kubelet stopped setting it for such containers
(``DisableCPUQuotaWithExclusiveCPUs``, on by default since 1.33), but only through its own CPU
manager, which is off beside this plugin; so the plugin lifts it. Shared and pinned containers
keep the kubelet's quota: they share their CPUs, and the quota is what bounds them; so does a
mixed container (``mixed-cpus``), which runs on the shared pool beside its exclusive CPUs.

The quota is lifted in the kernel only (issue 44, decision 54): the runtime's record keeps the
kubelet's, because the kubelet reports a container's CPU limit from the quota the runtime
reports and keeps the old limit when there is none. Records of older versions (and a kubelet
with ``--cpu-cfs-quota=false``) report no quota: classification then reads the request from
``cpu.shares`` (``classify._by_shares``), so a rebuild still finds the container integer.
"""

from __future__ import annotations

import enum
from typing import Final

from cpuset_core.model import Placement

UNLIMITED: Final = -1
"""The quota value that lifts the limit (OCI ``linux.resources.cpu.quota``; cgroup v1
``cpu.cfs_quota_us`` -1, v2 ``cpu.max`` ``max``)."""


class ExclusiveQuota(enum.Enum):
    """What exclusive containers' own CFS quota is (``[cpus] exclusive_cpu_quota``)."""

    UNLIMITED = "unlimited"
    """Lifted while the container holds exclusive CPUs (the kubelet's behaviour since 1.33)."""
    KUBELET = "kubelet"
    """The kubelet's quota, as earlier versions left it."""


def cpu_quota(placement: Placement, policy: ExclusiveQuota) -> int | None:
    """The quota to give a container placed at ``placement``: :data:`UNLIMITED` for exclusive
    CPUs under :attr:`ExclusiveQuota.UNLIMITED`, else ``None`` (the kubelet's stays, and a
    resize that makes the container shared restores it with the kubelet's new value)."""
    if policy is ExclusiveQuota.UNLIMITED and placement.exclusive_only:
        return UNLIMITED
    return None
