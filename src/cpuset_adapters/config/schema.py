"""The configuration file's shape: one frozen attrs class per TOML table, defaults built in.

Every key is optional. The schema is shared with other components (deployment, observability):
keys are never renamed, only added.
"""

from __future__ import annotations

from typing import Final

import attrs

from cpuset_adapters import default_paths
from cpuset_adapters.kubernetes.topology_object import POLICIES
from cpuset_core import (
    DEFAULT_PIN_ANNOTATION,
    Alignment,
    AlignmentScope,
    MemoryBinding,
    Spanning,
    Unmet,
)
from cpuset_core.quota import ExclusiveQuota

DEFAULT_PATH: Final = default_paths.CONFIG_FILE

LOG_LEVELS: Final = ("debug", "info", "warning", "error")
LOG_FORMATS: Final = ("json", "console")
SPANNING: Final = tuple(spanning.value for spanning in Spanning)
ALIGNMENTS: Final = tuple(alignment.value for alignment in Alignment)
ALIGNMENT_SCOPES: Final = tuple(scope.value for scope in AlignmentScope)
MEMORY_BINDINGS: Final = tuple(binding.value for binding in MemoryBinding)
EXCLUSIVE_CPU_QUOTA: Final = tuple(quota.value for quota in ExclusiveQuota)
UNMET_REQUESTS: Final = tuple(unmet.value for unmet in Unmet)
DEFAULT_RESERVED_NAMESPACES: Final = ("kube-system",)
"""``cpus.reserved_namespaces`` when unset and ``cpus.reserved`` names CPUs."""
TOPOLOGY_POLICIES: Final = POLICIES
"""``topology_publisher.policy``: what the node declares to a topology-aware scheduler."""


@attrs.frozen(kw_only=True)
class Pinning:
    """``[pinning]``: the pin annotation and who may use it."""

    annotation: str = DEFAULT_PIN_ANNOTATION
    namespaces: tuple[str, ...] = ("*",)
    """Exact namespace names or ``fnmatch`` globs (case-sensitive)."""


@attrs.frozen(kw_only=True)
class Cpus:
    """``[cpus]``: reserved CPUs and the allocator's options (each named as the core's
    ``AllocationOptions`` field it sets)."""

    reserved: str = ""
    """A Linux CPU list; ``""`` reserves nothing."""
    strict_reservation: bool = False
    exclusive_on_isolated: bool = False
    full_physical_cores: bool = False
    numa_spanning: str = "pack"
    keep_free_numa_nodes: bool = False
    alignment: str = "best-effort"
    alignment_scope: str = "container"
    bind_memory: str = "none"
    min_shared_pool: int = 0
    reserved_namespaces: tuple[str, ...] | None = None
    """Namespaces whose pods run on the reserved CPUs (exact names or ``fnmatch`` globs);
    unset: ``["kube-system"]`` when ``reserved`` names CPUs, none otherwise."""
    unmet_requests: str = "best-effort"
    """What a workload request the node cannot meet gets: ``best-effort`` or ``refuse``."""
    exclusive_cpu_quota: str = "unlimited"
    """``unlimited``: containers with exclusive CPUs run without CFS quota (decision 44);
    ``kubelet``: they keep the kubelet's."""


@attrs.frozen(kw_only=True)
class Runtime:
    """``[runtime]``: where the runtime's sockets are, and the kubelet CPU manager guard."""

    nri_socket: str = default_paths.NRI_SOCKET
    cri_socket: str = default_paths.CRI_SOCKET
    status_socket: str = default_paths.STATUS_SOCKET
    """``""`` disables the status socket."""
    allow_static_cpu_manager: bool = False
    kubelet_cpu_manager_state: str = default_paths.KUBELET_CPU_MANAGER_STATE
    cgroup_root: str = default_paths.CGROUP_ROOT
    """Where the host's cgroup tree is (a DaemonSet mounts it elsewhere), for the verifier."""
    verify_period: int = 5
    """Seconds between the verifier's passes over every container's cgroup (besides the pass
    shortly after each burst of events); 0 disables the verifier."""
    start_grace: int = 120
    """Seconds a created container keeps its CPUs before it starts; then they go back and a
    later start is refused (``cpuset_core.starts``). A container whose start failed gives
    them back at once."""
    kernel_updates: bool = True
    """Write other containers' cpusets into their cgroups (under ``cgroup_root``) before
    answering the runtime, whose record follows in the background; ``false``: every update
    goes through the runtime (one runc update each, under its NRI lock)."""
    systemd_units: bool = True
    """With ``kernel_updates``, also set ``AllowedCPUs``/``AllowedMemoryNodes`` of the
    containers that are systemd scopes (cgroup v2), over D-Bus, before their files: what a
    ``daemon-reload`` re-applies is then the new value; ``false``: the files only."""


@attrs.frozen(kw_only=True)
class Observability:
    """``[observability]``: the HTTP listener (metrics, health) and logging."""

    listen: str = "127.0.0.1:9477"
    """``host:port`` for ``/metrics``, ``/healthz`` and ``/readyz``; ``""`` disables."""
    log_level: str = "info"
    log_format: str = "json"


@attrs.frozen(kw_only=True)
class TopologyPublisher:
    """``[topology_publisher]``: the node's NodeResourceTopology object for a topology-aware
    scheduler (off by default)."""

    enabled: bool = False
    node_name: str = ""
    """The node (and object) name; ``""``: the ``NODE_NAME`` environment variable (the
    DaemonSet sets it from the downward API)."""
    kubeconfig: str = ""
    """A kubeconfig file (a lab); ``""``: the pod's service account (in-cluster)."""
    policy: str = "best-effort"
    """``best-effort`` (the rules the plugin enforces) or ``single-numa-node`` (strict: the
    scheduler refuses what does not fit one NUMA node)."""


@attrs.frozen(kw_only=True)
class Events:
    """``[events]``: Kubernetes Events on the pods and the node for what the plugin decided
    (off by default); sent through ``[topology_publisher]``'s credentials and node name."""

    enabled: bool = False
    queue_capacity: int = 1000
    """Events waiting to be sent at most; when full the oldest is dropped (and counted)."""
    shared_pool_interval: int = 60
    """Seconds between two ``SharedPoolChanged`` events on the node at least: the changes in
    between are told as one."""


@attrs.frozen(kw_only=True)
class Config:
    """The whole configuration: what ``nri-cpuset run`` runs with."""

    pinning: Pinning = attrs.field(factory=Pinning)
    cpus: Cpus = attrs.field(factory=Cpus)
    runtime: Runtime = attrs.field(factory=Runtime)
    observability: Observability = attrs.field(factory=Observability)
    topology_publisher: TopologyPublisher = attrs.field(factory=TopologyPublisher)
    events: Events = attrs.field(factory=Events)


# The field types are strings under `from __future__ import annotations`; cattrs needs classes.
attrs.resolve_types(Config)

SECTIONS: Final = tuple(f.name for f in attrs.fields(Config))
"""The tables, in file order."""


def keys() -> tuple[str, ...]:
    """Every dotted key (``"cpus.reserved"``), in file order."""
    return tuple(f"{section.name}.{field.name}"
                 for section in attrs.fields(Config)
                 for field in attrs.fields(section_type(section.name)))


def section_type(name: str) -> type:
    section: type = getattr(attrs.fields(Config), name).type
    return section


def value_at(config: Config, key: str) -> object:
    """The value of dotted ``key`` in ``config``."""
    section, _, name = key.partition(".")
    value: object = getattr(getattr(config, section), name)
    return value
