"""Facts about pods and containers as the runtime reports them, and the placements we decide.

Vocabulary (used throughout the core):

* **online** — CPUs the kernel can schedule on now.
* **pinned / annotated** — CPUs named by a pod's pin annotation; several annotated containers may
  share them, so they are reference counted.
* **exclusive** — CPUs owned by exactly one integer container.
* **reserved** — pinned ∪ exclusive: CPUs that are not in the shared pool. (Operator-reserved
  system CPUs are a separate setting, ``Settings.system_reserved``.)
* **shared pool** — online − reserved − isolated: where every shared container runs.
* **isolated** — ``isolcpus`` CPUs; the scheduler does not balance onto them, so shared
  containers never use them and exclusive ones only when allowed.
* **orphan sibling** — a free thread whose core-mate is already taken.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from cpuset_core.cpuset import CPUSet
from cpuset_core.devices import DeviceLocality
from cpuset_core.errors import CpuListSyntaxError


class Kind(enum.Enum):
    """How a container's CPUs are decided."""

    ANNOTATED = "annotated"
    INTEGER = "integer"
    SHARED = "shared"


@dataclass(frozen=True, slots=True, kw_only=True)
class PodFacts:
    """What the runtime says about a pod sandbox."""

    sandbox_id: str
    namespace: str
    name: str
    uid: str = ""
    annotations: Mapping[str, str] = field(default_factory=dict)
    cgroup_parent: str = ""
    """The kubelet's cgroup parent: it encodes the pod's QoS class (see ``classify``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ContainerFacts:
    """What the runtime says about a container; resource values are ``None`` when unset."""

    id: str
    sandbox_id: str
    name: str
    cpu_shares: int | None = None
    cpu_quota: int | None = None
    cpu_period: int | None = None
    memory_limit: int | None = None
    cpus: str = ""
    """The container's current ``cpuset.cpus`` as the runtime stores it ("" when unset)."""
    mems: str = ""
    """The container's current ``cpuset.mems`` ("" when unset)."""
    cgroups_path: str = ""
    """Where its cgroup is, as the runtime gives it (OCI ``linux.cgroupsPath``: a path, or the
    systemd driver's ``slice:prefix:name``); "" when unknown. Lets an adapter read what the
    kernel enforces (:mod:`cpuset_core.verify`); decisions never depend on it."""
    hugepages: bool = False
    """Whether it has a hugepage limit (``[cpus] bind_memory = "hugepages"`` binds those)."""
    devices: tuple[DeviceLocality, ...] = ()
    """The devices it was given and where the kernel puts them (read by an adapter): an
    integer container's exclusive CPUs are taken near them (:mod:`cpuset_core.devices`)."""


def parse_reported(text: str) -> CPUSet | None:
    """Parse a cpuset string as the runtime reports it; ``None`` when unset or unreadable
    (a runtime value we cannot read is treated like an unset one: it gets corrected)."""
    try:
        return CPUSet.parse(text) if text.strip() else None
    except CpuListSyntaxError:
        return None


def subject_of(pod: PodFacts | None, container: ContainerFacts) -> str:
    """Return ``namespace/pod/container`` for messages (``?/?/name`` when the pod is unknown)."""
    if pod is None:
        return f"?/?/{container.name}"
    return f"{pod.namespace}/{pod.name}/{container.name}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Placement:
    """Where a container may run. ``mems is None`` means: leave ``cpuset.mems`` as it is."""

    kind: Kind
    cpus: CPUSet
    mems: CPUSet | None = None
    with_shared: bool = False
    """An integer container that also runs on the shared pool (``mixed-cpus``): ``cpus`` is its
    exclusive CPUs and the pool; its CFS quota stays, as for a shared one."""

    @property
    def exclusive_only(self) -> bool:
        """Whether the container runs on CPUs of its own alone (its quota may be lifted)."""
        return self.kind is Kind.INTEGER and not self.with_shared


def label_of(kind: Kind, *, on_reserved: bool = False, with_shared: bool = False) -> str:
    """What operators call a container's kind: ``reserved`` (a shared one on the reserved
    CPUs), ``mixed`` (an integer one also on the shared pool), else the kind's name."""
    if on_reserved and kind is Kind.SHARED:
        return "reserved"
    if with_shared and kind is Kind.INTEGER:
        return "mixed"
    return kind.value


@dataclass(frozen=True, slots=True, kw_only=True)
class ContainerUpdate:
    """A live change of one existing container's cpuset, with what it replaces (for rollback)."""

    container_id: str
    subject: str
    kind: Kind
    cpus: CPUSet
    previous_cpus: CPUSet
    mems: CPUSet | None = None
    previous_mems: CPUSet | None = None
    reason: str = ""

    def __post_init__(self) -> None:
        # A rollback must be able to put mems back; "unset" is written as every memory node.
        if self.mems is not None and self.previous_mems is None:
            raise ValueError(f"update of {self.subject} sets mems {self.mems} without the "
                             f"previous mems (use every memory node for 'unset')")

    def inverse(self) -> ContainerUpdate:
        """Return the update that undoes this one."""
        return ContainerUpdate(container_id=self.container_id, subject=self.subject,
                               kind=self.kind, cpus=self.previous_cpus, previous_cpus=self.cpus,
                               mems=self.previous_mems if self.mems is not None else None,
                               previous_mems=self.mems, reason=f"rollback: {self.reason}")
