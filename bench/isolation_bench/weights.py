"""The CPU weights a kubelet gives the cgroups above a container (``kubepods``, the QoS tiers,
each pod), written for the bench's pods and put back after. The lab's runtime leaves those
cgroups at the kernel's default (1024 shares each), under which a BestEffort pod's tier weighs
as much as a Guaranteed pod: the `none` policy the bench compares against would be harsher on
the probe than a kubelet's node is."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cpuset_adapters.cgroupfs import CGROUP_ROOT, cgroup_dir, cgroup_version
from cpuset_adapters.kubelet import MAX_SHARES, MIN_SHARES, cpu_shares
from cpuset_core import QoS

KUBEPODS = "/kubepods"


@dataclass(frozen=True, slots=True, kw_only=True)
class PodWeight:
    """A pod as its weight needs it: its cgroup parent, its QoS class and the sum of its
    containers' CPU requests (millicores)."""

    parent: str
    qos: QoS
    request_millis: int


def kubelet_shares(pods: Sequence[PodWeight], allocatable_millis: int) -> dict[str, int]:
    """cgroup path → ``cpu.shares`` as a kubelet's QoS and pod managers set them: ``kubepods``
    the node's allocatable CPU, the BestEffort tier the minimum, the Burstable tier its pods'
    requests, each pod its containers' requests (a BestEffort pod the minimum). Parents come
    before their children."""
    burstable = sum(p.request_millis for p in pods if p.qos is QoS.BURSTABLE)
    shares = {KUBEPODS: cpu_shares(allocatable_millis),
              f"{KUBEPODS}/besteffort": MIN_SHARES,
              f"{KUBEPODS}/burstable": cpu_shares(burstable)}
    for pod in pods:
        shares[pod.parent] = (MIN_SHARES if pod.qos is QoS.BEST_EFFORT
                              else cpu_shares(pod.request_millis))
    return shares


def shares_to_weight(shares: int) -> int:
    """cgroup v2's ``cpu.weight`` for v1 shares, as runc converts them (2 → 1, 1024 → 39,
    262144 → 10000)."""
    return 1 + (shares - MIN_SHARES) * 9999 // (MAX_SHARES - MIN_SHARES)


class WeightWriter:
    """Writes shares (v1 ``cpu.shares``, v2 ``cpu.weight``) into cgroups that exist, keeping
    each one's first value to put back."""

    def __init__(self, root: Path = CGROUP_ROOT) -> None:
        self.root = root
        self.v2 = cgroup_version(root) == 2
        self._before: dict[Path, str] = {}

    def _file(self, path: str) -> Path:
        return cgroup_dir(path, controller="cpu", root=self.root) / (
            "cpu.weight" if self.v2 else "cpu.shares")

    def apply(self, shares: Mapping[str, int]) -> list[str]:
        """Write ``shares``; returns the paths skipped because their cgroup does not exist."""
        skipped = []
        for path, value in shares.items():
            file = self._file(path)
            if not file.is_file():
                skipped.append(path)
                continue
            self._before.setdefault(file, file.read_text().strip())
            file.write_text(str(shares_to_weight(value) if self.v2 else value))
        return skipped

    def restore(self) -> None:
        """Every value written put back where its cgroup still exists."""
        for file, value in self._before.items():
            if file.is_file():
                file.write_text(value)
        self._before.clear()
