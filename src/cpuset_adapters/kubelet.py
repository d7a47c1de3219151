"""The kubelet's conventions for what it sends a runtime: the CFS period, CPU shares and quota
for a CPU request and limit, and a pod's cgroup parent for its QoS class.

One definition for everything that plays or reads a kubelet: the ``plan --pods`` reader, the
trace simulator, the dry-run demo and the test lab.
"""

from __future__ import annotations

from typing import Final

from cpuset_core import QoS

CFS_PERIOD: Final = 100_000
"""The kubelet's default CFS period (``cpuCFSQuotaPeriod``), in microseconds."""
MIN_SHARES: Final = 2
MAX_SHARES: Final = 262_144
MIN_QUOTA: Final = 1_000
_TIERS: Final = {QoS.GUARANTEED: "", QoS.BURSTABLE: "burstable", QoS.BEST_EFFORT: "besteffort"}


def cpu_shares(request_millis: int | None) -> int:
    """The kubelet's ``MilliCPUToShares``: 1024 per CPU requested, within its bounds."""
    if not request_millis:
        return MIN_SHARES
    return min(MAX_SHARES, max(MIN_SHARES, request_millis * 1024 // 1000))


def cpu_quota(limit_millis: int, period: int = CFS_PERIOD) -> int:
    """The kubelet's ``milliCPUToQuota`` for a set (non-zero) limit."""
    return max(MIN_QUOTA, limit_millis * period // 1000)


def cgroup_parent(qos: QoS, pod_uid: str, *, driver: str = "cgroupfs") -> str:
    """The cgroup parent a kubelet gives a pod's sandbox.

    cgroupfs driver: ``/kubepods/pod<uid>``, ``/kubepods/burstable/pod<uid>``,
    ``/kubepods/besteffort/pod<uid>``. systemd driver: ``kubepods-pod<uid>.slice``,
    ``kubepods-burstable-pod<uid>.slice``, ``kubepods-besteffort-pod<uid>.slice`` with the UID's
    dashes turned into underscores (systemd reserves ``-`` for the slice hierarchy). Raises
    ``ValueError`` for another driver or an unknown QoS class.
    """
    tier = _TIERS.get(qos)
    if tier is None:
        raise ValueError(f"no cgroup parent for QoS class {qos.value}")
    if driver == "cgroupfs":
        return f"/kubepods/{tier}/pod{pod_uid}" if tier else f"/kubepods/pod{pod_uid}"
    if driver == "systemd":
        escaped = pod_uid.replace("-", "_")
        return f"kubepods-{tier}-pod{escaped}.slice" if tier else f"kubepods-pod{escaped}.slice"
    raise ValueError(f"unknown cgroup driver {driver!r} (cgroupfs or systemd)")
