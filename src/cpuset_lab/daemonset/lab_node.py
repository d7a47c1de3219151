"""The lab's side of the translation: the node and paths that stand for the cluster's
(:class:`LabNode`), the manifest values replaced for it (:class:`Override`), and what the
translation learns about the pod as it reads it (:class:`PodFacts`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True, slots=True, kw_only=True)
class LabNode:
    """The lab's side of the translation: its node and the paths that stand for the node's.

    ``host_paths`` maps every ``hostPath.path`` of the manifest to the lab path used instead (an
    unmapped or unused entry is an error: a typo must not fall back to the real host path).
    ``volumes_dir`` is where the lab keeps non-host volumes (``<volumes_dir>/<volume name>``).
    ``node_ip``/``pod_ip`` feed ``status.hostIP``/``status.podIP`` fieldRefs (with host network
    the pod IP is the node IP). ``seccomp_default`` is the kubelet's ``seccompDefault`` setting
    (off by default: a sandbox with no pod seccompProfile runs Unconfined).
    """

    node_name: str
    image: str
    host_paths: Mapping[str, Path]
    volumes_dir: Path
    host_network_override: bool = True
    node_ip: str | None = None
    pod_ip: str | None = None
    pod_uid: str | None = None
    pod_suffix: str | None = None
    cgroup_driver: str = "cgroupfs"
    log_root: Path | None = None
    seccomp_default: bool = False


@dataclass(frozen=True, slots=True)
class Override:
    """A manifest value the lab replaces, with the value used and why."""

    path: str
    manifest: str
    lab: str
    reason: str


@dataclass(slots=True)
class PodFacts:
    """What the translation learns about the pod as it reads it."""

    name: str
    namespace: str
    uid: str
    labels: dict[str, str]
    annotations: dict[str, str]
    node: LabNode
    host_network: bool
    overrides: list[Override] = field(default_factory=list)

    @property
    def pod_ip(self) -> str | None:
        return self.node.node_ip if self.host_network else self.node.pod_ip
