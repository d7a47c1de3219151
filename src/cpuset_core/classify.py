"""Classification of a container as annotated, integer or shared.

Decided from runtime-visible fields only:

* **annotated** — the pod's annotations (``PodFacts.annotations``, which NRI sends with every
  container event) carry the pin annotation. Every container of such a pod is annotated.
* **integer** — the pod's QoS class is *Guaranteed* (requests == limits for CPU and memory in
  every container: exactly the kubelet's rule, which NRI does not send directly but encodes in
  the pod's cgroup parent) **and** this container's CPU limit is whole: ``quota > 0``,
  ``period > 0`` and ``quota % period == 0``; it gets ``quota // period`` exclusive CPUs. A
  Guaranteed container *without* quota (lifted by this plugin, decision 44, or a kubelet with
  ``--cpu-cfs-quota=false``) is judged by its ``cpu.shares`` instead: ``N * 1024`` is N CPUs.
* **shared** — everything else, including pods whose cgroup parent is not a kubelet one.

A workload's requests (:mod:`cpuset_core.workload`) then adjust that: a container of a
namespace in ``reserved_namespaces`` or asking ``reserved-cpus`` is shared on the reserved
CPUs (``on_reserved``); an integer one asking ``shared-cpus`` is shared; a Guaranteed one with
a fractional limit of at least one CPU asking ``mixed-cpus`` is integer for the whole part and
runs on the shared pool too (``with_shared``). A pin wins over all of them.

The rule is per container, like the kubelet's static CPU manager: a Guaranteed pod may mix a
2-CPU container (integer) with a 1500m one (shared). The requirements phrase it per pod, but
containers reach the runtime one at a time, so a per-pod rule cannot be decided at admission;
see ``docs/decisions.md``. Init containers follow the same rule.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from cpuset_core.cpuset import EMPTY, CPUSet
from cpuset_core.devices import hint_note, hinted_nodes, hints_wanted
from cpuset_core.errors import CpuListSyntaxError, InvalidAnnotationError, PinNotAllowedError
from cpuset_core.model import ContainerFacts, Kind, PodFacts, label_of, subject_of
from cpuset_core.policy.options import MemoryBinding
from cpuset_core.quiet_request import Quiet, quiet_decision
from cpuset_core.settings import Settings
from cpuset_core.workload import Requests


class QoS(enum.Enum):
    """The kubelet's pod QoS class as read from the cgroup parent."""

    GUARANTEED = "Guaranteed"
    BURSTABLE = "Burstable"
    BEST_EFFORT = "BestEffort"
    UNKNOWN = "Unknown"


@dataclass(frozen=True, slots=True, kw_only=True)
class Classification:
    """The kind of a container, what it asks for, and the facts that decided it."""

    kind: Kind
    reason: str
    pins: CPUSet | None = None
    """For annotated containers: the CPUs the annotation names."""
    request: int = 0
    """For integer containers: how many exclusive CPUs."""
    near: CPUSet = EMPTY
    """The NUMA nodes of its devices (:mod:`cpuset_core.devices`), unless the pod opted out;
    empty: no device hint."""
    bind_memory: bool = False
    """For integer containers: ``cpuset.mems`` follows its CPUs (``[cpus] bind_memory``)."""
    on_reserved: bool = False
    """For shared containers: runs on the reserved CPUs (its namespace, or ``reserved-cpus``)."""
    with_shared: bool = False
    """For integer containers: runs on the shared pool beside its exclusive CPUs
    (``mixed-cpus``)."""
    isolated: bool | None = None
    """For integer containers: exclusive CPUs from the isolated ones only (``True``), never from
    them (``False``), or as ``exclusive_on_isolated`` says (``None``)."""
    quiet: Quiet | None = None
    """For integer and annotated containers: what their CPUs must be beyond the cpuset
    (:mod:`cpuset_core.quiet_request`)."""

    @property
    def label(self) -> str:
        return label_of(self.kind, on_reserved=self.on_reserved, with_shared=self.with_shared)


def qos_from_cgroup_parent(cgroup_parent: str) -> QoS:
    """Return the QoS class a kubelet cgroup parent encodes.

    cgroupfs driver: ``/kubepods/pod<uid>``, ``/kubepods/burstable/pod<uid>``,
    ``/kubepods/besteffort/pod<uid>``. systemd driver: ``kubepods-pod<uid>.slice``,
    ``kubepods-burstable-pod<uid>.slice``, ``kubepods-besteffort-pod<uid>.slice`` (alone or under
    their parent slices). Anything else is ``UNKNOWN``.
    """
    parts = [p for p in cgroup_parent.replace("\\", "/").split("/") if p]
    if not parts:
        return QoS.UNKNOWN
    leaf = parts[-1]
    if leaf.endswith(".slice"):
        name = leaf.removesuffix(".slice")
        prefix = next((p for p in _SYSTEMD_PREFIXES if name.startswith(p)), None)
        return _SYSTEMD_PREFIXES[prefix] if prefix else QoS.UNKNOWN
    if not leaf.startswith("pod") or "kubepods" not in parts[:-1]:
        return QoS.UNKNOWN
    return _CGROUPFS_PARENTS.get(parts[-2], QoS.UNKNOWN)


# Longest prefixes first: "kubepods-pod" is a prefix of neither of the others, but order matters
# if a future QoS name were to extend one.
_SYSTEMD_PREFIXES = {
    "kubepods-besteffort-pod": QoS.BEST_EFFORT,
    "kubepods-burstable-pod": QoS.BURSTABLE,
    "kubepods-pod": QoS.GUARANTEED,
}
_CGROUPFS_PARENTS = {
    "besteffort": QoS.BEST_EFFORT,
    "burstable": QoS.BURSTABLE,
    "kubepods": QoS.GUARANTEED,
}


def classify(pod: PodFacts | None, container: ContainerFacts, settings: Settings) -> Classification:
    """Return the container's classification.

    Raises :class:`PinNotAllowedError` when the pod carries the pin annotation (or asks for
    the reserved CPUs) but its namespace may not pin, :class:`InvalidAnnotationError` when the
    annotation is not a valid CPU list, :class:`AnnotationValueError` when one of this
    project's annotations (:mod:`cpuset_core.workload`) is neither true nor false (or a
    quiet-CPU request, :mod:`cpuset_core.quiet_request`, is not understood), and
    :class:`AnnotationConflictError` when two of them contradict each other. Availability of
    the CPUs asked for is the engine's concern, not classification's.
    """
    subject = subject_of(pod, container)
    requests = Requests.of(pod.annotations if pod is not None else {}, container.name, subject)
    decided = _requested(pod, container, settings, _classify(pod, container, settings),
                         requests)
    quiet, said = quiet_decision(pod, container, settings, decided.kind)
    if said:
        decided = replace(decided, quiet=quiet, reason=f"{decided.reason}; {said}")
    near, note = _device_hint(pod, container)
    binding = settings.allocation.bind_memory
    # A mixed container's memory stays unbound: it runs on the shared pool, across nodes.
    bind = decided.kind is Kind.INTEGER and not decided.with_shared and (
        binding is MemoryBinding.EXCLUSIVE
        or (binding is MemoryBinding.HUGEPAGES and container.hugepages))
    if not note and not bind:
        return decided
    return replace(decided, near=near, bind_memory=bind,
                   reason=f"{decided.reason}; {note}" if note else decided.reason)


def _requested(pod: PodFacts | None, container: ContainerFacts, settings: Settings,
               decided: Classification, requests: Requests) -> Classification:
    """``decided`` with the workload's requests (:mod:`cpuset_core.workload`) applied: the
    reserved CPUs over everything but a pin, then the shared pool instead of exclusive CPUs,
    then exclusive CPUs beside the shared pool."""
    if decided.kind is Kind.ANNOTATED or pod is None:
        return decided
    on_reserved = _on_reserved(pod, container, settings, requests)
    if on_reserved:
        return Classification(kind=Kind.SHARED, on_reserved=True,
                              reason=f"{on_reserved} (else: {decided.reason})")
    shared, mixed = requests.shared, requests.mixed
    if decided.kind is Kind.INTEGER and shared is not None and shared[0]:
        return Classification(kind=Kind.SHARED, reason=f"{decided.reason}, on the shared pool "
                                                       f"by {shared[1]}=true")
    if mixed is not None and mixed[0]:
        decided = _mixed(pod, container, decided, mixed[1])
    return _isolated(pod, container, settings, decided, requests.isolated)


def _isolated(pod: PodFacts, container: ContainerFacts, settings: Settings,
              decided: Classification, isolated: tuple[bool, str] | None) -> Classification:
    """``decided`` with its ``isolated-cpus`` answer: only exclusive CPUs can be isolated ones
    (a shared container there would be stuck on one CPU), and asking for them is gated like a
    pin, since they are kept from everyone else."""
    if isolated is None:
        return decided
    wanted, key = isolated
    if decided.kind is not Kind.INTEGER:
        if not wanted:
            return decided
        return replace(decided, reason=f"{decided.reason} ({key} ignored: no exclusive CPUs)")
    if wanted and not settings.may_pin(pod.namespace):
        raise PinNotAllowedError(subject_of(pod, container), key, pod.namespace,
                                 settings.pin_namespaces)
    return replace(decided, isolated=wanted,
                   reason=f"{decided.reason}; {'isolated CPUs' if wanted else 'no isolated CPU'}"
                          f" by {key}={'true' if wanted else 'false'}")


def _on_reserved(pod: PodFacts, container: ContainerFacts, settings: Settings,
                 requests: Requests) -> str:
    """Why the container runs on the reserved CPUs ("" when it does not). Raises
    :class:`PinNotAllowedError` when it asks from a namespace that may not pin: the reserved
    CPUs are the system's, taken from everyone else like a pin's."""
    reserved = requests.reserved
    if reserved is None:
        if settings.runs_on_reserved(pod.namespace):
            return f"namespace {pod.namespace} runs on the reserved CPUs"
        return ""
    wanted, key = reserved
    if wanted and not settings.may_pin(pod.namespace):
        raise PinNotAllowedError(subject_of(pod, container), key, pod.namespace,
                                 settings.pin_namespaces)
    return f"{key}=true" if wanted else ""


def _mixed(pod: PodFacts, container: ContainerFacts, decided: Classification,
           key: str) -> Classification:
    """A container asking ``mixed-cpus`` (``key``): the whole part of a Guaranteed fractional
    limit as exclusive CPUs beside the shared pool; otherwise as decided, saying why."""
    if decided.kind is Kind.INTEGER:
        return replace(decided, reason=f"{decided.reason} ({key}: whole CPUs are exclusive "
                                       f"only)")
    millis = _guaranteed_millis(pod, container)
    if millis is None or millis < 1000:
        why = ("not a Guaranteed container with a CPU limit" if millis is None
               else f"its limit {millis}m is under one CPU")
        return replace(decided, reason=f"{decided.reason} ({key} ignored: {why})")
    count = millis // 1000
    return Classification(kind=Kind.INTEGER, request=count, with_shared=True,
                          reason=f"Guaranteed pod, {millis}m: {count} exclusive CPU(s) and the "
                                 f"shared pool by {key}=true")


def _guaranteed_millis(pod: PodFacts, container: ContainerFacts) -> int | None:
    """The CPU limit of a Guaranteed pod's container in millicores, from its quota or, without
    one, its ``cpu.shares``; ``None`` when it is not Guaranteed or has no limit."""
    if qos_from_cgroup_parent(pod.cgroup_parent) is not QoS.GUARANTEED:
        return None
    quota, period = container.cpu_quota, container.cpu_period
    if quota is not None and period is not None and quota > 0 and period > 0:
        return quota * 1000 // period
    shares = container.cpu_shares
    if not shares or shares <= 2 or shares >= MAX_SHARES:
        return None
    return -(-shares * 1000 // SHARES_PER_CPU)  # the kubelet rounds down to shares: round up


def _device_hint(pod: PodFacts | None, container: ContainerFacts) -> tuple[CPUSet, str]:
    """The container's device hint and what its reason says of it ("" when it has no
    devices). The opt-out annotations are checked whether or not it has devices: a bad value
    is refused the same way wherever it appears."""
    annotations = pod.annotations if pod is not None else {}
    wanted = hints_wanted(annotations, container.name, subject_of(pod, container))
    if not container.devices:
        return EMPTY, ""
    if not wanted:
        return EMPTY, "device hints off by annotation"
    nodes = hinted_nodes(container.devices)
    return nodes, hint_note(container.devices, nodes)


def _classify(pod: PodFacts | None, container: ContainerFacts,
              settings: Settings) -> Classification:
    if pod is not None and settings.pin_annotation in pod.annotations:
        if not settings.may_pin(pod.namespace):
            raise PinNotAllowedError(subject_of(pod, container), settings.pin_annotation,
                                     pod.namespace, settings.pin_namespaces)
        value = pod.annotations[settings.pin_annotation]
        try:
            pins = CPUSet.parse(value)
        except CpuListSyntaxError as exc:
            raise InvalidAnnotationError(subject_of(pod, container), settings.pin_annotation,
                                         value, exc) from exc
        return Classification(kind=Kind.ANNOTATED, pins=pins,
                              reason=f"pod annotation {settings.pin_annotation}={value}")
    qos = qos_from_cgroup_parent(pod.cgroup_parent) if pod is not None else QoS.UNKNOWN
    if qos is not QoS.GUARANTEED:
        why = "pod unknown" if pod is None else f"pod QoS {qos.value}"
        return Classification(kind=Kind.SHARED, reason=why)
    quota, period = container.cpu_quota, container.cpu_period
    if quota is None or period is None or quota <= 0 or period <= 0:
        return _by_shares(container.cpu_shares)
    if quota % period:
        millis = quota * 1000 // period
        return Classification(kind=Kind.SHARED, reason=f"fractional CPU limit {millis}m")
    count = quota // period
    return Classification(kind=Kind.INTEGER, request=count,
                          reason=f"Guaranteed pod, {count} whole CPU(s)")


SHARES_PER_CPU = 1024
"""The kubelet's ``cpu.shares`` per CPU requested (``MilliCPUToShares``: millis * 1024 // 1000)."""
MAX_SHARES = 262_144
"""The kubelet's ceiling on ``cpu.shares``: requests of 256 CPUs and more all give it."""


def _by_shares(shares: int | None) -> Classification:
    """A Guaranteed container without CFS quota, judged by its CPU request. Its quota is absent
    when the plugin lifted it (``cpuset_core.quota``) or the kubelet runs with
    ``--cpu-cfs-quota=false``; its request equals its limit, and the kubelet's shares are
    ``millis * 1024 // 1000``, a multiple of 1024 exactly when ``millis`` is one of 1000 (a
    fraction of a CPU adds between 1 and 1023). Shares at the ceiling no longer say the
    request, and the minimum (2) or none means no request."""
    if not shares or shares % SHARES_PER_CPU or shares >= MAX_SHARES:
        why = "without a CPU limit" if not shares else f"without quota, cpu.shares {shares}"
        return Classification(kind=Kind.SHARED, reason=f"Guaranteed pod {why}")
    count = shares // SHARES_PER_CPU
    return Classification(kind=Kind.INTEGER, request=count,
                          reason=f"Guaranteed pod, {count} whole CPU(s) (by cpu.shares)")
